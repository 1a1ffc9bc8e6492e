//! Section 4: the two-stream pipeline, waits placed by the core against hand-placed events.

use crate::common::*;

/// Stages per pipeline round.
pub(crate) const STAGES: usize = 64;

/// A device set up for the pipeline: its two kernels, one stage buffer per
/// stage (owned by stream 1) and the accumulator (stream 0).
pub(crate) struct PipeDevice<L: RawLock> {
    dev: Device<HipPlatform, L>,
    fill: KernelId,
    acc_k: KernelId,
    stages: Vec<Buffer>,
    acc: Buffer,
}

impl<L: RawLock> PipeDevice<L> {
    fn new() -> R<Self> {
        let platform = HipPlatform::new().map_err(e("HipPlatform::new"))?;
        let dev = Device::<_, L>::with_lock(platform, DeviceConfig::with_streams(2))
            .map_err(e("Device::new"))?;
        let fill = dev.load_kernel(&FILL).map_err(e("load sc_fill"))?;
        let acc_k = dev.load_kernel(&ACC).map_err(e("load sb_acc"))?;
        let mut stages = Vec::with_capacity(STAGES);
        for _ in 0..STAGES {
            stages.push(dev.alloc(S1, 4 * N as u64).map_err(e("alloc"))?);
        }
        let acc = dev.alloc(S0, 4 * N as u64).map_err(e("alloc"))?;
        dev.write(S0, &acc, &bytes(&[0; N])).map_err(e("write"))?;
        dev.sync_all().map_err(e("sync_all"))?;
        Ok(Self {
            dev,
            fill,
            acc_k,
            stages,
            acc,
        })
    }

    /// Submits one round: each stage's fill on stream 1, then its
    /// accumulation on stream 0 (the core places the wait).
    fn submit(&self) -> R<()> {
        for (k, buf) in self.stages.iter().enumerate() {
            queued(self.dev.launch(
                S1,
                self.fill,
                dims(),
                &[buf.write()],
                &[N as u64, k as u64 + 1],
            ))?;
            queued(self.dev.launch(
                S0,
                self.acc_k,
                dims(),
                &[buf.read(), self.acc.read_write()],
                &[N as u64],
            ))?;
        }
        Ok(())
    }

    /// Checks the accumulator after `rounds` rounds, then lets the buffers go.
    fn finish(self, rounds: u32, what: &str) -> R<()> {
        let per_round = (STAGES * (STAGES + 1) / 2) as u32;
        check(
            what,
            &words(&self.dev.read(S0, &self.acc).map_err(e("read"))?),
            rounds * per_round,
        )?;
        let Self {
            dev, stages, acc, ..
        } = self;
        drop((stages, acc));
        dev.sync_all().map_err(e("sync_all"))
    }
}

/// Section 4: a two-stream pipeline. Returns Device / bare (median).
pub(crate) fn pipeline() -> R<f64> {
    const ROUNDS: usize = 40;
    // The device on the default lock (what `Device::new` gives), and the
    // same on the spin lock.
    let dev = PipeDevice::<streamcore::device::DefaultLock>::new()?;
    let spin = PipeDevice::<SpinLock>::new()?;

    // Bare: two streams, an event per stage placed by hand.
    let rfill = RawKernel::load(FILL.source, FILL.name)?;
    let racc_k = RawKernel::load(ACC.source, ACC.name)?;
    let (rs0, rs1) = (RawStream::new()?, RawStream::new()?);
    let mut rbufs = Vec::with_capacity(STAGES);
    let mut events = Vec::with_capacity(STAGES);
    for _ in 0..STAGES {
        rbufs.push(RawBuffer::new(4 * N)?);
        events.push(RawEvent::new()?);
    }
    let racc = RawBuffer::new(4 * N)?;
    racc.upload(&rs0, &bytes(&[0; N]))?;
    let fill_info: Vec<u64> = (0..STAGES).flat_map(|k| [N as u64, k as u64 + 1]).collect();
    let rfill_info = RawBuffer::new(8 * fill_info.len())?;
    rfill_info.upload(&rs1, &words64(&fill_info))?;
    let racc_info = RawBuffer::new(8)?;
    racc_info.upload(&rs0, &words64(&[N as u64]))?;

    // [Device, bare, Device on SpinLock]
    let mut s: [Samples; 3] = Default::default();
    // The same rounds split: submission (launches, waits, events) and the
    // round's end (the syncs).
    let mut submit: [Samples; 3] = Default::default();
    let (mut waits, mut events_in_loop, mut events_in_sync) = (Vec::new(), Vec::new(), Vec::new());
    let mut rounds_run = [0u32; 3];
    interleaved(ROUNDS, 3, |which, counted| {
        let t = Instant::now();
        match which {
            0 => {
                let before: DeviceStats = dev.dev.stats();
                dev.submit()?;
                let looped = dev.dev.stats();
                if counted {
                    submit[0].push(ns(t), STAGES);
                }
                dev.dev.sync_all().map_err(e("sync_all"))?;
                let synced = dev.dev.stats();
                if counted {
                    waits.push(looped.waits - before.waits);
                    events_in_loop.push(looped.events_recorded - before.events_recorded);
                    events_in_sync.push(synced.events_recorded - looped.events_recorded);
                }
            }
            2 => {
                spin.submit()?;
                if counted {
                    submit[2].push(ns(t), STAGES);
                }
                spin.dev.sync_all().map_err(e("sync_all"))?;
            }
            _ => {
                for (k, (buf, ev)) in rbufs.iter().zip(&events).enumerate() {
                    rfill.launch(
                        &rs1,
                        BLOCKS,
                        &[buf.address, rfill_info.address + 16 * k as u64],
                    )?;
                    ev.record(&rs1)?;
                    rs0.wait(ev)?;
                    racc_k.launch(
                        &rs0,
                        BLOCKS,
                        &[buf.address, racc.address, racc_info.address],
                    )?;
                }
                if counted {
                    submit[1].push(ns(t), STAGES);
                }
                rs0.sync()?;
                rs1.sync()?;
            }
        }
        rounds_run[which] += 1;
        if counted {
            s[which].push(ns(t), STAGES);
        }
        Ok(())
    })?;
    dev.finish(rounds_run[0], "Device pipeline")?;
    spin.finish(rounds_run[2], "Device (SpinLock) pipeline")?;
    let per_round = (STAGES * (STAGES + 1) / 2) as u32;
    check(
        "bare pipeline",
        &words(&racc.download(&rs0)?),
        rounds_run[1] * per_round,
    )?;

    let span = |v: &[u64]| {
        let lo = v.iter().min().copied().unwrap_or(0);
        let hi = v.iter().max().copied().unwrap_or(0);
        if lo == hi {
            format!("{lo}")
        } else {
            format!("{lo}..{hi}")
        }
    };
    println!(
        "\n4. Two-stream pipeline: {STAGES} stages (sc_fill on stream 1 -> sb_acc on stream 0), \
         one sync of both streams per round, {ROUNDS} rounds"
    );
    println!("  {:<44} {:>10} {:>10}", "", "median", "fastest");
    row("Device (waits placed by the core)", &s[0], None, "ns/stage");
    row(
        "bare (an event + wait per stage by hand)",
        &s[1],
        None,
        "ns/stage",
    );
    row("Device on SpinLock", &s[2], None, "ns/stage");
    ratio("Device / bare", s[0].median(), s[1].median());
    ratio("Device (SpinLock) / bare", s[2].median(), s[1].median());
    row(
        "  of which submission, Device",
        &submit[0],
        None,
        "ns/stage",
    );
    row("  of which submission, bare", &submit[1], None, "ns/stage");
    row(
        "  of which submission, Device (SpinLock)",
        &submit[2],
        None,
        "ns/stage",
    );
    ratio(
        "  submission: Device / bare",
        submit[0].median(),
        submit[1].median(),
    );
    println!(
        "  per round: cross-stream hand-offs {STAGES} (minimum waits {STAGES}, minimum events {STAGES})"
    );
    println!(
        "  per round, Device: waits {}, events recorded while launching {}, events recorded by sync_all {}",
        span(&waits),
        span(&events_in_loop),
        span(&events_in_sync)
    );
    println!("  results checked: ok");
    Ok(s[0].median() / s[1].median())
}
