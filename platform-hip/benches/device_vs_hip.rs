//! streamcore's `Device` over real HIP against bare HIP calls, side by side
//! in one run:
//!
//! 1. per-launch cost of a small kernel: bare `hipModuleLaunchKernel`,
//!    `HipPlatform::launch` (the platform alone), `Device::launch` (info words
//!    served by the info cache);
//! 2. reserve + free at 1 MiB and 4 KiB: streamcore's `MemoryManager` over
//!    `HipStorage`, `Device::alloc` + drop (on the default lock and on the
//!    spin lock), `hipMalloc` + `hipFree`, `hipMallocAsync` + `hipFreeAsync`;
//! 3. a 100-kernel chain: launched eagerly through the `Device`, replayed as
//!    a captured graph, and launched by bare calls;
//! 4. a two-stream pipeline: the waits and events the `Device` inserted
//!    against the minimum (one per cross-stream hand-off), and its time
//!    against hand-placed events (whole rounds, and submission alone), on
//!    the default lock and on the spin lock;
//! 5. the building blocks of the launch and wait path, per call (events,
//!    waits, queries, the current-device calls), and the host's own: an
//!    uncontended atomic add, a lock + unlock of each lock family.
//!
//! It ends with the budget ratios (launch, pipeline, alloc at 1 MiB and at
//! 4 KiB) and their targets. Section names as arguments run only those sections.
//!
//! Timing: many operations per round, one synchronization per round, the
//! variants interleaved round by round; the table gives the median over
//! rounds (and the fastest round). Every result is checked on the host.
//! Without a HIP runtime or device it prints `SKIPPED: no HIP runtime` and
//! exits 0.

mod raw;

use std::hint::black_box;
use std::process::ExitCode;
use std::time::Instant;

use raw::{R, RawBuffer, RawEvent, RawKernel, RawStream};
use streamcore::device::{
    Buffer, Device, DeviceConfig, DeviceStats, KernelId, Launched, LockFamilyMutex, RawLock,
    SpinLock, StdLock,
};
use streamcore::memory::{MemoryLayout, MemoryManager};
use streamcore::platform::{
    Access, Binding, DeviceRange, ErrorKind, KernelSource, LaunchDims, Platform, PlatformError,
    Storage,
};
use streamcore::stream::StreamId;
use streamcore_hip::HipPlatform;

const S0: StreamId = StreamId(0);
const S1: StreamId = StreamId(1);
/// Elements of every kernel's buffers (`u32`), and its launch width.
const N: usize = 1024;
const BLOCKS: u32 = (N / 256) as u32;

const ADD: KernelSource<'static> = KernelSource {
    name: "sb_add",
    source: r#"extern "C" __global__ void sb_add(const unsigned int* a, const unsigned int* b, unsigned int* out, const unsigned long long* info) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < info[0]) out[i] = a[i] + b[i];
}"#,
    bindings: 4,
};

const INC: KernelSource<'static> = KernelSource {
    name: "sb_inc",
    source: r#"extern "C" __global__ void sb_inc(unsigned int* x, const unsigned long long* info) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < info[0]) x[i] += 1u;
}"#,
    bindings: 2,
};

const FILL: KernelSource<'static> = KernelSource {
    name: "sb_fill",
    source: r#"extern "C" __global__ void sb_fill(unsigned int* out, const unsigned long long* info) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < info[0]) out[i] = (unsigned int)info[1];
}"#,
    bindings: 2,
};

const ACC: KernelSource<'static> = KernelSource {
    name: "sb_acc",
    source: r#"extern "C" __global__ void sb_acc(const unsigned int* x, unsigned int* acc, const unsigned long long* info) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < info[0]) acc[i] += x[i];
}"#,
    bindings: 3,
};

fn dims() -> LaunchDims {
    LaunchDims::linear(BLOCKS, 256)
}

fn bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

fn words(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn words64(words: &[u64]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// Per-round figures of one variant, in nanoseconds per operation.
#[derive(Default)]
struct Samples(Vec<f64>);

impl Samples {
    fn push(&mut self, total_ns: f64, ops: usize) {
        self.0.push(total_ns / ops as f64);
    }
    fn median(&self) -> f64 {
        let mut v = self.0.clone();
        v.sort_by(f64::total_cmp);
        match v.len() {
            0 => f64::NAN,
            n if n % 2 == 1 => v[n / 2],
            n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
        }
    }
    fn min(&self) -> f64 {
        self.0.iter().copied().fold(f64::INFINITY, f64::min)
    }
}

fn ns(since: Instant) -> f64 {
    since.elapsed().as_nanos() as f64
}

fn e<E: std::fmt::Display>(what: &'static str) -> impl Fn(E) -> String {
    move |err| format!("{what}: {err}")
}

fn queued<E: std::fmt::Display>(r: Result<Launched, E>) -> R<()> {
    match r {
        Ok(Launched::Queued) => Ok(()),
        Ok(Launched::Skipped(f)) => Err(format!("launch skipped over failure {f:?}")),
        Err(err) => Err(format!("launch: {err}")),
    }
}

fn check(what: &str, got: &[u32], want: u32) -> R<()> {
    match got.iter().position(|&w| w != want) {
        None => Ok(()),
        Some(i) => Err(format!(
            "{what}: element {i} is {}, expected {want}",
            got[i]
        )),
    }
}

fn row(name: &str, a: &Samples, b: Option<&Samples>, unit: &str) {
    match b {
        Some(b) => println!(
            "  {name:<44} {:>10.0} {:>10.0} {:>12.0} {:>10.0}  {unit}",
            a.median(),
            a.min(),
            b.median(),
            b.min()
        ),
        None => println!(
            "  {name:<44} {:>10.0} {:>10.0}  {unit}",
            a.median(),
            a.min()
        ),
    }
}

fn ratio(name: &str, num: f64, den: f64) {
    println!("  {name:<44} {:>10.3}", num / den);
}

/// Section 1: per-launch cost. Returns Device/bare (submit, median).
fn launches(dev: &Device<HipPlatform>) -> R<f64> {
    const BATCH: usize = 256;
    const ROUNDS: usize = 200;
    let a_words: Vec<u32> = (0..N as u32).collect();
    let b_words: Vec<u32> = (0..N as u32).map(|x| 3 * x + 7).collect();
    let info = [N as u64];

    // streamcore Device.
    let add = dev.load_kernel(&ADD).map_err(e("load sb_add"))?;
    let a = dev.upload(S0, &bytes(&a_words)).map_err(e("upload"))?;
    let b = dev.upload(S0, &bytes(&b_words)).map_err(e("upload"))?;
    let out = dev.alloc(S0, 4 * N as u64).map_err(e("alloc"))?;
    let dev_launch = || -> R<()> {
        queued(dev.launch(S0, add, dims(), &[a.read(), b.read(), out.write()], &info))
    };

    // Bare HIP: own module, stream and buffers.
    let rk = RawKernel::load(ADD.source, ADD.name)?;
    let rs = RawStream::new()?;
    let (ra, rb) = (RawBuffer::new(4 * N)?, RawBuffer::new(4 * N)?);
    let (rout, rinfo) = (RawBuffer::new(4 * N)?, RawBuffer::new(8)?);
    ra.upload(&rs, &bytes(&a_words))?;
    rb.upload(&rs, &bytes(&b_words))?;
    rinfo.upload(&rs, &words64(&info))?;
    let pointers = [ra.address, rb.address, rout.address, rinfo.address];

    // The platform alone: HipPlatform::launch over pages of its own device
    // storage (it refuses ranges outside them), copied from the bare ones.
    let platform = HipPlatform::new().map_err(e("HipPlatform::new"))?;
    let pk = platform.load_kernel(&ADD).map_err(e("load sb_add"))?;
    let mut ps = platform.create_stream().map_err(e("create_stream"))?;
    let mut pstorage = platform.device_storage().map_err(e("device_storage"))?;
    let mut page_like = |buf: &RawBuffer, access| -> R<Binding> {
        let page = pstorage
            .alloc(buf.bytes as u64)
            .map_err(e("HipStorage::alloc"))?;
        raw::copy_device(page.0, buf.address, buf.bytes, &rs)?;
        let range = DeviceRange {
            page,
            offset: 0,
            len: buf.bytes as u64,
        };
        Ok(Binding { range, access })
    };
    let bindings = [
        page_like(&ra, Access::Read)?,
        page_like(&rb, Access::Read)?,
        page_like(&rout, Access::Write)?,
        page_like(&rinfo, Access::Read)?,
    ];

    let stats0 = dev.stats();
    // [bare, platform, device] x [submit, submit + sync]
    let mut sub: [Samples; 3] = Default::default();
    let mut tot: [Samples; 3] = Default::default();
    for round in 0..=ROUNDS {
        for slot in 0..3 {
            let which = (round + slot) % 3;
            let t = Instant::now();
            let submitted = match which {
                0 => {
                    for _ in 0..BATCH {
                        rk.launch(&rs, BLOCKS, &pointers)?;
                    }
                    let s = ns(t);
                    rs.sync()?;
                    s
                }
                1 => {
                    for _ in 0..BATCH {
                        platform
                            .launch(&mut ps, &pk, dims(), &bindings)
                            .map_err(e("HipPlatform::launch"))?;
                    }
                    let s = ns(t);
                    ps.synchronize().map_err(e("synchronize"))?;
                    s
                }
                _ => {
                    for _ in 0..BATCH {
                        dev_launch()?;
                    }
                    let s = ns(t);
                    dev.sync(S0).map_err(e("Device::sync"))?;
                    s
                }
            };
            let total = ns(t);
            // Round 0 is the warm-up.
            if round > 0 {
                sub[which].push(submitted, BATCH);
                tot[which].push(total, BATCH);
            }
        }
    }
    let stats1 = dev.stats();
    let want: Vec<u32> = (0..N).map(|i| a_words[i] + b_words[i]).collect();
    if words(&dev.read(S0, &out).map_err(e("read"))?) != want {
        return Err("Device launches computed a wrong sum".into());
    }
    if words(&rout.download(&rs)?) != want {
        return Err("bare launches computed a wrong sum".into());
    }
    let launched = stats1.launches - stats0.launches;
    let hits = stats1.info_hits - stats0.info_hits;
    let misses = stats1.info_misses - stats0.info_misses;

    println!(
        "\n1. Per-launch cost: sb_add over {N} u32 ({BLOCKS}x256 threads, 3 buffers + info), \
         {BATCH} launches then one stream sync, {ROUNDS} rounds"
    );
    println!(
        "  {:<44} {:>10} {:>10} {:>12} {:>10}",
        "", "submit med", "submit min", "+sync med", "+sync min"
    );
    row(
        "bare hipModuleLaunchKernel",
        &sub[0],
        Some(&tot[0]),
        "ns/launch",
    );
    row(
        "HipPlatform::launch (platform only)",
        &sub[1],
        Some(&tot[1]),
        "ns/launch",
    );
    row(
        "Device::launch (info-cache hit)",
        &sub[2],
        Some(&tot[2]),
        "ns/launch",
    );
    println!(
        "  Device/bare ratio: submit {:.3} (median), {:.3} (fastest); with sync {:.3} (median)",
        sub[2].median() / sub[0].median(),
        sub[2].min() / sub[0].min(),
        tot[2].median() / tot[0].median()
    );
    println!(
        "  Device launches counted: {launched}, info-cache hits {hits}, misses {misses}; \
         results checked: ok"
    );
    Ok(sub[2].median() / sub[0].median())
}

/// Section 2: reserve + free. Returns Device::alloc+drop / MemoryManager
/// reserve+free at 1 MiB and at 4 KiB (medians).
fn allocations(dev: &Device<HipPlatform>) -> R<(f64, f64)> {
    const OPS: usize = 256;
    const ROUNDS: usize = 40;
    let platform = HipPlatform::new().map_err(e("HipPlatform::new"))?;
    let storage = platform.device_storage().map_err(e("device_storage"))?;
    let mut pool = MemoryManager::new(storage, MemoryLayout::for_device(&platform.properties()));
    let rs = RawStream::new()?;
    // The same device on the spin lock (the default without `std`): how
    // much of the pair is the lock family.
    let spin = Device::<_, SpinLock>::with_lock(
        HipPlatform::new().map_err(e("HipPlatform::new"))?,
        DeviceConfig::with_streams(1),
    )
    .map_err(e("Device::with_lock"))?;

    println!(
        "\n2. Reserve + free, {OPS} pairs per round, {ROUNDS} rounds \
         (async: one stream sync per round, included)"
    );
    println!("  {:<44} {:>10} {:>10}", "", "median", "fastest");
    let mut ratios = (f64::NAN, f64::NAN);
    for size in [1usize << 20, 4096] {
        let mut s: [Samples; 5] = Default::default();
        for round in 0..=ROUNDS {
            for slot in 0..5 {
                let which = (round + slot) % 5;
                let t = Instant::now();
                match which {
                    0 => {
                        for _ in 0..OPS {
                            let (h, range) = pool
                                .reserve(size as u64)
                                .map_err(|err| format!("MemoryManager::reserve: {err:?}"))?;
                            black_box(range);
                            pool.free(h)
                                .map_err(|err| format!("MemoryManager::free: {err:?}"))?;
                        }
                    }
                    1 => {
                        for _ in 0..OPS {
                            let b = dev.alloc(S0, size as u64).map_err(e("Device::alloc"))?;
                            drop(black_box(b));
                        }
                    }
                    2 => {
                        for _ in 0..OPS {
                            let p = raw::malloc(size)?;
                            raw::free(black_box(p))?;
                        }
                    }
                    4 => {
                        for _ in 0..OPS {
                            let b = spin.alloc(S0, size as u64).map_err(e("Device::alloc"))?;
                            drop(black_box(b));
                        }
                    }
                    _ => {
                        for _ in 0..OPS {
                            let p = raw::malloc_async(size, &rs)?;
                            raw::free_async(black_box(p), &rs)?;
                        }
                        rs.sync()?;
                    }
                }
                if round > 0 {
                    s[which].push(ns(t), OPS);
                }
            }
        }
        let label = if size >= 1 << 20 {
            format!("{} MiB", size >> 20)
        } else {
            format!("{} KiB", size >> 10)
        };
        println!("  at {label}:");
        row(
            "MemoryManager<HipStorage> reserve+free",
            &s[0],
            None,
            "ns/pair",
        );
        row("Device::alloc + drop", &s[1], None, "ns/pair");
        row("Device::alloc + drop (SpinLock)", &s[4], None, "ns/pair");
        row("hipMalloc + hipFree", &s[2], None, "ns/pair");
        row("hipMallocAsync + hipFreeAsync", &s[3], None, "ns/pair");
        ratio(
            "hipMalloc+hipFree / MemoryManager",
            s[2].median(),
            s[0].median(),
        );
        ratio(
            "hipMallocAsync+hipFreeAsync / MemoryManager",
            s[3].median(),
            s[0].median(),
        );
        ratio(
            "hipMallocAsync+hipFreeAsync / Device",
            s[3].median(),
            s[1].median(),
        );
        ratio(
            "Device::alloc+drop / MemoryManager",
            s[1].median(),
            s[0].median(),
        );
        ratio(
            "Device::alloc+drop (SpinLock) / MemoryManager",
            s[4].median(),
            s[0].median(),
        );
        let r = s[1].median() / s[0].median();
        if size == 1 << 20 {
            ratios.0 = r;
        } else {
            ratios.1 = r;
        }
    }
    dev.sync_all().map_err(e("sync_all"))?;
    spin.sync_all().map_err(e("sync_all"))?;
    Ok(ratios)
}

/// Section 3: a 100-kernel chain, eager and as a replayed graph.
fn chain(dev: &Device<HipPlatform>) -> R<()> {
    const KERNELS: usize = 100;
    const CHAINS: usize = 10;
    const ROUNDS: usize = 40;
    let inc = dev.load_kernel(&INC).map_err(e("load sb_inc"))?;
    let x = dev.alloc(S0, 4 * N as u64).map_err(e("alloc"))?;
    dev.write(S0, &x, &bytes(&[0; N])).map_err(e("write"))?;
    let info = [N as u64];
    let run_chain = || -> R<()> {
        for _ in 0..KERNELS {
            queued(dev.launch(S0, inc, dims(), &[x.read_write()], &info))?;
        }
        Ok(())
    };
    let mut chains_run = 0u32;

    // Capture: warm-up, then record.
    dev.prepare(S0).map_err(e("prepare"))?;
    run_chain()?;
    chains_run += 1;
    dev.begin_capture(S0).map_err(e("begin_capture"))?;
    run_chain()?;
    let graph = dev.end_capture(S0).map_err(e("end_capture"))?;

    let rk = RawKernel::load(INC.source, INC.name)?;
    let rs = RawStream::new()?;
    let (rx, rinfo) = (RawBuffer::new(4 * N)?, RawBuffer::new(8)?);
    rx.upload(&rs, &bytes(&[0; N]))?;
    rinfo.upload(&rs, &words64(&info))?;
    let mut raw_chains = 0u32;

    let mut s = [Samples::default(), Samples::default(), Samples::default()];
    for round in 0..=ROUNDS {
        for slot in 0..3 {
            let which = (round + slot) % 3;
            let t = Instant::now();
            match which {
                0 => {
                    for _ in 0..CHAINS {
                        run_chain()?;
                    }
                    dev.sync(S0).map_err(e("sync"))?;
                }
                1 => {
                    for _ in 0..CHAINS {
                        queued(dev.replay(&graph))?;
                    }
                    dev.sync(S0).map_err(e("sync"))?;
                }
                _ => {
                    for _ in 0..CHAINS * KERNELS {
                        rk.launch(&rs, BLOCKS, &[rx.address, rinfo.address])?;
                    }
                    rs.sync()?;
                    raw_chains += CHAINS as u32;
                }
            }
            if which != 2 {
                chains_run += CHAINS as u32;
            }
            if round > 0 {
                s[which].push(ns(t), CHAINS);
            }
        }
    }
    let got = words(&dev.read(S0, &x).map_err(e("read"))?);
    check("Device chain", &got, chains_run * KERNELS as u32)?;
    check(
        "bare chain",
        &words(&rx.download(&rs)?),
        raw_chains * KERNELS as u32,
    )?;
    let stats = dev.stats();
    drop(graph);
    dev.sync_all().map_err(e("sync_all"))?;

    println!(
        "\n3. A chain of {KERNELS} sb_inc launches over one buffer of {N} u32, \
         {CHAINS} chains then one sync, {ROUNDS} rounds"
    );
    println!("  {:<44} {:>10} {:>10}", "", "median", "fastest");
    row("Device, eager launches", &s[0], None, "ns/chain");
    row("Device, captured graph replayed", &s[1], None, "ns/chain");
    row("bare hipModuleLaunchKernel, eager", &s[2], None, "ns/chain");
    ratio("eager / graph (Device)", s[0].median(), s[1].median());
    ratio("bare eager / graph (Device)", s[2].median(), s[1].median());
    println!(
        "  graphs sealed {}, replays {}; results checked: ok",
        stats.graphs_sealed, stats.graph_replays
    );
    Ok(())
}

/// Section 4: a two-stream pipeline. Returns Device / bare (median).
/// Stages per pipeline round.
const STAGES: usize = 64;

/// A device set up for the pipeline: its two kernels, one stage buffer per
/// stage (owned by stream 1) and the accumulator (stream 0).
struct PipeDevice<L: RawLock> {
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
        let fill = dev.load_kernel(&FILL).map_err(e("load sb_fill"))?;
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

fn pipeline() -> R<f64> {
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
    for round in 0..=ROUNDS {
        for slot in 0..3 {
            let which = (round + slot) % 3;
            let t = Instant::now();
            match which {
                0 => {
                    let before: DeviceStats = dev.dev.stats();
                    dev.submit()?;
                    let looped = dev.dev.stats();
                    if round > 0 {
                        submit[0].push(ns(t), STAGES);
                    }
                    dev.dev.sync_all().map_err(e("sync_all"))?;
                    let synced = dev.dev.stats();
                    if round > 0 {
                        waits.push(looped.waits - before.waits);
                        events_in_loop.push(looped.events_recorded - before.events_recorded);
                        events_in_sync.push(synced.events_recorded - looped.events_recorded);
                    }
                }
                2 => {
                    spin.submit()?;
                    if round > 0 {
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
                    if round > 0 {
                        submit[1].push(ns(t), STAGES);
                    }
                    rs0.sync()?;
                    rs1.sync()?;
                }
            }
            rounds_run[which] += 1;
            if round > 0 {
                s[which].push(ns(t), STAGES);
            }
        }
    }
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
        "\n4. Two-stream pipeline: {STAGES} stages (sb_fill on stream 1 -> sb_acc on stream 0), \
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

/// Section 5: what the building blocks cost, per call, through the same
/// loader as everything above (profiling data for the launch and wait path).
fn primitives() -> R<()> {
    const OPS: usize = 1000;
    const ROUNDS: usize = 30;
    let platform = HipPlatform::new().map_err(e("HipPlatform::new"))?;
    let mut ps = platform.create_stream().map_err(e("create_stream"))?;
    let rs = RawStream::new()?;
    let reused = RawEvent::new()?;
    reused.record(&rs)?;
    rs.sync()?;
    let passed = platform.record(&mut ps).map_err(e("record"))?;
    platform.synchronize(&passed).map_err(e("synchronize"))?;
    let names = [
        "hipGetDevice",
        "hipSetDevice (same device)",
        "hipEventCreate + hipEventRecord + hipEventDestroy",
        "hipEventRecord (event reused)",
        "hipStreamWaitEvent",
        "hipEventQuery (passed event)",
        "HipPlatform::record + drop",
        "HipPlatform::wait",
        "HipPlatform::query",
        "host: AtomicUsize::fetch_add (uncontended)",
        "host: StdLock mutex lock + unlock",
        "host: SpinLock mutex lock + unlock",
    ];
    let counter = std::sync::atomic::AtomicUsize::new(0);
    let std_mutex = <<StdLock as RawLock>::Mutex<u64> as LockFamilyMutex<u64>>::new(0);
    let spin_mutex = <<SpinLock as RawLock>::Mutex<u64> as LockFamilyMutex<u64>>::new(0);
    let mut s: Vec<Samples> = names.iter().map(|_| Samples::default()).collect();
    for round in 0..=ROUNDS {
        for slot in 0..names.len() {
            let which = (round + slot) % names.len();
            let t = Instant::now();
            for _ in 0..OPS {
                match which {
                    0 => raw::get_device().map(drop)?,
                    1 => raw::set_device(platform.device_ordinal())?,
                    2 => {
                        let ev = RawEvent::new()?;
                        ev.record(&rs)?;
                        drop(black_box(ev));
                    }
                    3 => reused.record(&rs)?,
                    4 => rs.wait(&reused)?,
                    5 => {
                        black_box(reused.query()?);
                    }
                    6 => {
                        let ev = platform.record(&mut ps).map_err(e("record"))?;
                        drop(black_box(ev));
                    }
                    7 => platform.wait(&mut ps, &passed).map_err(e("wait"))?,
                    8 => {
                        black_box(platform.query(&passed).map_err(e("query"))?);
                    }
                    9 => {
                        black_box(
                            black_box(&counter).fetch_add(1, std::sync::atomic::Ordering::Relaxed),
                        );
                    }
                    10 => *LockFamilyMutex::lock(black_box(&std_mutex)) += 1,
                    _ => *LockFamilyMutex::lock(black_box(&spin_mutex)) += 1,
                }
            }
            if round > 0 {
                s[which].push(ns(t), OPS);
            }
            rs.sync()?;
            ps.synchronize().map_err(e("synchronize"))?;
        }
    }
    println!("\n5. Building blocks, {OPS} calls per round, {ROUNDS} rounds");
    println!("  {:<52} {:>10} {:>10}", "", "median", "fastest");
    for (name, samples) in names.iter().zip(&s) {
        println!(
            "  {name:<52} {:>10.0} {:>10.0}  ns/call",
            samples.median(),
            samples.min()
        );
    }
    Ok(())
}

/// The three figures the launch-path budget is judged by, with targets.
#[derive(Default)]
struct Budget {
    launch: Option<f64>,
    pipeline: Option<f64>,
    alloc: Option<(f64, f64)>,
}

impl Budget {
    fn print(&self) {
        println!("\nbudget (medians, this run):");
        let line = |name: &str, value: Option<f64>, target: f64| match value {
            Some(v) => println!(
                "  {name:<58} {v:>7.3}  target <= {target:.2}  {}",
                if v <= target { "met" } else { "MISSED" }
            ),
            None => println!("  {name:<58}     n/a  (section not run or failed)"),
        };
        line(
            "Device::launch / bare hipModuleLaunchKernel",
            self.launch,
            1.05,
        );
        line(
            "two-stream pipeline: Device / hand-placed events",
            self.pipeline,
            1.05,
        );
        line(
            "Device::alloc+drop / MemoryManager reserve+free (1 MiB)",
            self.alloc.map(|a| a.0),
            2.0,
        );
        line(
            "Device::alloc+drop / MemoryManager reserve+free (4 KiB)",
            self.alloc.map(|a| a.1),
            2.0,
        );
    }
}

const SECTIONS: [&str; 5] = ["launches", "allocations", "pipeline", "chain", "primitives"];

fn run() -> R<bool> {
    // Section names on the command line run only those (flags such as
    // `--bench` are ignored).
    let wanted: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    if let Some(bad) = wanted.iter().find(|w| !SECTIONS.contains(&w.as_str())) {
        return Err(format!(
            "unknown section {bad}; sections: {}",
            SECTIONS.join(", ")
        ));
    }
    let platform = match HipPlatform::new() {
        Ok(p) => p,
        Err(err) if err.kind() == ErrorKind::NotAvailable => {
            println!("SKIPPED: no HIP runtime ({err})");
            return Ok(false);
        }
        Err(err) => return Err(format!("HipPlatform::new: {err}")),
    };
    let props = platform.properties();
    println!(
        "streamcore Device vs bare HIP on {} ({} MiB), release build",
        platform.device_name(),
        props.total_memory >> 20
    );
    let dev = Device::new(platform, DeviceConfig::with_streams(1)).map_err(e("Device::new"))?;
    let budget = std::cell::RefCell::new(Budget::default());
    // Each section runs even when an earlier one failed; the run fails at
    // the end if any did.
    let sections: [(&str, &dyn Fn() -> R<()>); 5] = [
        ("launches", &|| {
            budget.borrow_mut().launch = Some(launches(&dev)?);
            Ok(())
        }),
        ("allocations", &|| {
            budget.borrow_mut().alloc = Some(allocations(&dev)?);
            Ok(())
        }),
        ("pipeline", &|| {
            budget.borrow_mut().pipeline = Some(pipeline()?);
            Ok(())
        }),
        ("chain", &|| chain(&dev)),
        ("primitives", &primitives),
    ];
    let mut failed = Vec::new();
    for (name, section) in sections {
        if !wanted.is_empty() && !wanted.iter().any(|w| w == name) {
            continue;
        }
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(section));
        let err = match outcome {
            Ok(Ok(())) => continue,
            Ok(Err(err)) => err,
            Err(_) => String::from("panicked"),
        };
        println!("\nsection {name} FAILED: {err}");
        failed.push(name);
    }
    dev.sync_all().map_err(e("sync_all"))?;
    budget.borrow().print();
    if failed.is_empty() {
        println!("\nall sections ran; every result checked");
        Ok(true)
    } else {
        Err(format!("sections failed: {}", failed.join(", ")))
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(_) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("bench failed: {err}");
            ExitCode::FAILURE
        }
    }
}
