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
        let dev = device_with_lock::<L>(2)?;
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

    /// One round: submitted, then both streams synced. Returns the
    /// nanoseconds from `t` to the end of the submission.
    fn round(&self, t: Instant) -> R<f64> {
        self.submit()?;
        let submitted = ns(t);
        self.dev.sync_all().map_err(e("sync_all"))?;
        Ok(submitted)
    }

    /// Checks the accumulator after `rounds` rounds, then lets the buffers go.
    fn finish(self, rounds: u32, what: &str) -> R<()> {
        check(
            what,
            &words(&self.dev.read(S0, &self.acc).map_err(e("read"))?),
            accumulated(rounds),
        )?;
        let Self {
            dev, stages, acc, ..
        } = self;
        drop((stages, acc));
        dev.sync_all().map_err(e("sync_all"))
    }
}

/// The same pipeline with an event and a wait per stage placed by hand,
/// on two streams of its own.
struct BarePipe {
    fill: RawKernel,
    acc_k: RawKernel,
    s0: RawStream,
    s1: RawStream,
    bufs: Vec<RawBuffer>,
    events: Vec<RawEvent>,
    acc: RawBuffer,
    fill_info: RawBuffer,
    acc_info: RawBuffer,
}

impl BarePipe {
    fn new() -> R<Self> {
        let fill = RawKernel::load(FILL.source, FILL.name)?;
        let acc_k = RawKernel::load(ACC.source, ACC.name)?;
        let (s0, s1) = (RawStream::new()?, RawStream::new()?);
        let mut bufs = Vec::with_capacity(STAGES);
        let mut events = Vec::with_capacity(STAGES);
        for _ in 0..STAGES {
            bufs.push(RawBuffer::new(4 * N)?);
            events.push(RawEvent::new()?);
        }
        let acc = RawBuffer::new(4 * N)?;
        acc.upload(&s0, &bytes(&[0; N]))?;
        let infos: Vec<u64> = (0..STAGES).flat_map(|k| [N as u64, k as u64 + 1]).collect();
        let fill_info = RawBuffer::new(8 * infos.len())?;
        fill_info.upload(&s1, &words64(&infos))?;
        let acc_info = RawBuffer::new(8)?;
        acc_info.upload(&s0, &words64(&[N as u64]))?;
        Ok(Self {
            fill,
            acc_k,
            s0,
            s1,
            bufs,
            events,
            acc,
            fill_info,
            acc_info,
        })
    }

    /// Submits one round: each stage's fill on stream 1, an event recorded
    /// after it, stream 0 waiting for that event, then the accumulation.
    fn submit(&self) -> R<()> {
        for (k, (buf, ev)) in self.bufs.iter().zip(&self.events).enumerate() {
            self.fill.launch(
                &self.s1,
                BLOCKS,
                &[buf.address, self.fill_info.address + 16 * k as u64],
            )?;
            ev.record(&self.s1)?;
            self.s0.wait(ev)?;
            self.acc_k.launch(
                &self.s0,
                BLOCKS,
                &[buf.address, self.acc.address, self.acc_info.address],
            )?;
        }
        Ok(())
    }

    fn sync(&self) -> R<()> {
        self.s0.sync()?;
        self.s1.sync()
    }

    /// Checks the accumulator after `rounds` rounds.
    fn finish(&self, rounds: u32, what: &str) -> R<()> {
        check(
            what,
            &words(&self.acc.download(&self.s0)?),
            accumulated(rounds),
        )
    }
}

/// The same pipeline through `HipPlatform` alone, no `Device`: its
/// launches over pages of its own device storage, and an event per stage
/// recorded and waited on through the platform (its idle-event cache, its
/// range checks), as the core's wait placement calls them. What the
/// platform's share of a stage is, beside the bare calls.
struct PlatformPipe {
    platform: HipPlatform,
    fill: <HipPlatform as Platform>::Kernel,
    acc_k: <HipPlatform as Platform>::Kernel,
    s0: <HipPlatform as Platform>::Stream,
    s1: <HipPlatform as Platform>::Stream,
    /// Per stage: the fill's bindings (stage buffer, its info words).
    fills: Vec<[Binding; 2]>,
    /// Per stage: the accumulation's bindings (stage buffer, acc, info).
    accs: Vec<[Binding; 3]>,
    acc: DeviceRange,
    /// Keeps the pages alive (and frees them on drop).
    _storage: <HipPlatform as Platform>::Storage,
}

impl PlatformPipe {
    fn new() -> R<Self> {
        let platform = HipPlatform::new().map_err(e("HipPlatform::new"))?;
        let fill = platform.load_kernel(&FILL).map_err(e("load sc_fill"))?;
        let acc_k = platform.load_kernel(&ACC).map_err(e("load sb_acc"))?;
        let s0 = platform.create_stream().map_err(e("create_stream"))?;
        let s1 = platform.create_stream().map_err(e("create_stream"))?;
        let mut storage = platform.device_storage().map_err(e("device_storage"))?;
        let staging = RawStream::new()?;
        // A page of `bytes`, filled from `data` when given.
        let mut page = |bytes: usize, data: Option<&[u8]>| -> R<DeviceRange> {
            let id = storage
                .alloc(bytes as u64)
                .map_err(e("HipStorage::alloc"))?;
            if let Some(data) = data {
                let src = RawBuffer::new(bytes)?;
                src.upload(&staging, data)?;
                raw::copy_device(id.0, src.address, bytes, &staging)?;
            }
            Ok(DeviceRange {
                page: id,
                offset: 0,
                len: bytes as u64,
            })
        };
        let acc = page(4 * N, Some(&bytes(&[0; N])))?;
        let acc_info = page(8, Some(&words64(&[N as u64])))?;
        let mut fills = Vec::with_capacity(STAGES);
        let mut accs = Vec::with_capacity(STAGES);
        for k in 0..STAGES {
            let buf = page(4 * N, None)?;
            let info = page(16, Some(&words64(&[N as u64, k as u64 + 1])))?;
            let b = |range, access| Binding { range, access };
            fills.push([b(buf, Access::Write), b(info, Access::Read)]);
            accs.push([
                b(buf, Access::Read),
                b(acc, Access::ReadWrite),
                b(acc_info, Access::Read),
            ]);
        }
        Ok(Self {
            platform,
            fill,
            acc_k,
            s0,
            s1,
            fills,
            accs,
            acc,
            _storage: storage,
        })
    }

    /// Submits one round: per stage the fill on stream 1, an event recorded
    /// there and waited on by stream 0, the accumulation on stream 0.
    fn submit(&mut self) -> R<()> {
        let p = &self.platform;
        for (fill, acc) in self.fills.iter().zip(&self.accs) {
            p.launch(&mut self.s1, &self.fill, dims(), fill)
                .map_err(e("HipPlatform::launch"))?;
            let ev = p.record(&mut self.s1).map_err(e("HipPlatform::record"))?;
            p.wait(&mut self.s0, &ev).map_err(e("HipPlatform::wait"))?;
            p.launch(&mut self.s0, &self.acc_k, dims(), acc)
                .map_err(e("HipPlatform::launch"))?;
        }
        Ok(())
    }

    fn sync(&self) -> R<()> {
        self.s0.synchronize().map_err(e("synchronize"))?;
        self.s1.synchronize().map_err(e("synchronize"))
    }

    /// Checks the accumulator after `rounds` rounds (each ended with
    /// [`sync`](Self::sync)).
    fn finish(&self, rounds: u32, what: &str) -> R<()> {
        let out = RawBuffer::new(4 * N)?;
        let staging = RawStream::new()?;
        raw::copy_device(out.address, self.acc.page.0, 4 * N, &staging)?;
        check(what, &words(&out.download(&staging)?), accumulated(rounds))
    }
}

/// What the accumulator holds after `rounds` rounds: each round adds
/// every stage's number, 1 to `STAGES`.
fn accumulated(rounds: u32) -> u32 {
    rounds * (STAGES * (STAGES + 1) / 2) as u32
}

/// Section 4: a two-stream pipeline. Returns Device / bare (median).
///
/// Seven variants take turns round by round (the order rotating): the Device
/// on its default lock, the bare pipeline, the Device on the spin lock, the
/// bare pipeline again on a second pair of streams, a second Device on its
/// default lock, and the two below. Each pipeline has a pair of streams of
/// its own, and pairs of streams differ a little (the driver maps them to its
/// hardware queues), so each side of the budget ratio pools two pipelines on
/// two pairs: "bare" the two bare ones, "Device" the two default-lock
/// devices. The two bare pipelines do the same work, and so do the two
/// devices: their ratios are the bench's own resolution, printed beside the
/// budget. The last two split a stage's cost (not part of the budget): a
/// Device on `LocalLock` (no atomic lock words: what the locks cost) and the
/// platform alone (the same calls through `HipPlatform`, no core: what the
/// platform's own checks cost).
pub(crate) fn pipeline() -> R<f64> {
    const ROUNDS: usize = 120;
    // Two devices on the default lock (what `Device::new` gives), each on
    // its own pair of streams, and one on the spin lock.
    let dev = PipeDevice::<streamcore::device::DefaultLock>::new()?;
    let dev_b = PipeDevice::<streamcore::device::DefaultLock>::new()?;
    let spin = PipeDevice::<SpinLock>::new()?;
    let bare = [BarePipe::new()?, BarePipe::new()?];
    let local = PipeDevice::<LocalLock>::new()?;
    let mut alone = PlatformPipe::new()?;

    // [Device A, bare A, Device on SpinLock, bare B, Device B, Device on
    // LocalLock, the platform alone]
    let mut s: [Samples; 7] = Default::default();
    // The same rounds split: submission (launches, waits, events) and the
    // round's end (the syncs).
    let mut submit: [Samples; 7] = Default::default();
    let (mut waits, mut events_in_loop, mut events_in_sync) = (Vec::new(), Vec::new(), Vec::new());
    let mut rounds_run = [0u32; 7];
    interleaved(ROUNDS, 7, |which, counted| {
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
            2 | 4 | 5 => {
                let submitted = match which {
                    2 => spin.round(t)?,
                    4 => dev_b.round(t)?,
                    _ => local.round(t)?,
                };
                if counted {
                    submit[which].push(submitted, STAGES);
                }
            }
            6 => {
                alone.submit()?;
                if counted {
                    submit[which].push(ns(t), STAGES);
                }
                alone.sync()?;
            }
            _ => {
                let b = &bare[which / 2];
                b.submit()?;
                if counted {
                    submit[which].push(ns(t), STAGES);
                }
                b.sync()?;
            }
        }
        rounds_run[which] += 1;
        if counted {
            s[which].push(ns(t), STAGES);
        }
        Ok(())
    })?;
    dev.finish(rounds_run[0], "Device pipeline")?;
    dev_b.finish(rounds_run[4], "Device pipeline (second streams)")?;
    spin.finish(rounds_run[2], "Device (SpinLock) pipeline")?;
    local.finish(rounds_run[5], "Device (LocalLock) pipeline")?;
    alone.finish(rounds_run[6], "platform-alone pipeline")?;
    bare[0].finish(rounds_run[1], "bare pipeline")?;
    bare[1].finish(rounds_run[3], "bare pipeline (second streams)")?;
    let bare_all = s[1].joined(&s[3]);
    let bare_submit = submit[1].joined(&submit[3]);
    let dev_all = s[0].joined(&s[4]);
    let dev_submit = submit[0].joined(&submit[4]);

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
         one sync of both streams per round, {ROUNDS} rounds per variant"
    );
    println!("  {:<44} {:>10} {:>10}", "", "median", "fastest");
    row(
        "Device (waits placed by the core)",
        &dev_all,
        None,
        "ns/stage",
    );
    row("  Device, first pair of streams", &s[0], None, "ns/stage");
    row("  Device, second pair of streams", &s[4], None, "ns/stage");
    row(
        "bare (an event + wait per stage by hand)",
        &bare_all,
        None,
        "ns/stage",
    );
    row("  bare, first pair of streams", &s[1], None, "ns/stage");
    row("  bare, second pair of streams", &s[3], None, "ns/stage");
    row("Device on SpinLock", &s[2], None, "ns/stage");
    row(
        "Device on LocalLock (no lock atomics)",
        &s[5],
        None,
        "ns/stage",
    );
    row("HipPlatform alone (no core)", &s[6], None, "ns/stage");
    ratio("Device / bare", dev_all.median(), bare_all.median());
    ratio("Device (SpinLock) / bare", s[2].median(), bare_all.median());
    ratio(
        "Device (LocalLock) / bare",
        s[5].median(),
        bare_all.median(),
    );
    ratio("HipPlatform alone / bare", s[6].median(), bare_all.median());
    println!(
        "  a stage's added ns (medians): the platform's own {:.0}, the core's locks {:.0}, \
         the core's bookkeeping {:.0}",
        s[6].median() - bare_all.median(),
        dev_all.median() - s[5].median(),
        s[5].median() - s[6].median()
    );
    ratio(
        "bare (first) / bare (second): the bench's resolution",
        s[1].median(),
        s[3].median(),
    );
    ratio(
        "Device (first) / Device (second): the same, for the Device",
        s[0].median(),
        s[4].median(),
    );
    row(
        "  of which submission, Device",
        &dev_submit,
        None,
        "ns/stage",
    );
    row(
        "  of which submission, bare",
        &bare_submit,
        None,
        "ns/stage",
    );
    row(
        "  of which submission, Device (SpinLock)",
        &submit[2],
        None,
        "ns/stage",
    );
    row(
        "  of which submission, Device (LocalLock)",
        &submit[5],
        None,
        "ns/stage",
    );
    row(
        "  of which submission, HipPlatform alone",
        &submit[6],
        None,
        "ns/stage",
    );
    ratio(
        "  submission: Device / bare",
        dev_submit.median(),
        bare_submit.median(),
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
    Ok(dev_all.median() / bare_all.median())
}
