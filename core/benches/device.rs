//! The device's own bookkeeping per operation, on the null platform (every
//! platform call returns at once): what `Device` adds on top of a driver.
//! The shapes are those the H200 comparison (`device_vs_hip`) measures:
//! a launch with its info words cached, a two-stream hand-off (the core
//! places the wait), and `Device::alloc` + drop beside the bare
//! `MemoryManager` reserve + free it wraps.
//!
//! `cargo bench -p streamcore --bench device`
//!
//! With `PROFILE=<bench name>` the binary instead runs that bench's body
//! `ITERS` times (default 100 000) in a plain loop, for a profiler:
//! `PROFILE=launch_3_buffers_info_hit valgrind --tool=callgrind target/release/deps/device-*`
//!
//! With `COLD=1` it instead times a pipeline stage's launches with warm
//! caches and with the caches evicted before every launch (an 8 MiB walk,
//! as a driver's own work between two calls evicts the core's lines),
//! side by side. `PROFILE=pipeline_round_64_stages_cold` is the cold loop
//! for cachegrind:
//! `EVICT_KIB=1024 PROFILE=pipeline_round_64_stages_cold ITERS=N valgrind --tool=cachegrind --cache-sim=yes target/release/deps/device-*`
//! (`EVICT_KIB` sets the walk's size: 8 MiB by default);
//! `PROFILE=launch_3_buffers_info_hit_cold` does the same for a lone
//! launch (one stream, its three buffers and info words cached).
//!
//! With `RATIO=1` it instead times `Device::alloc` + drop (default lock and
//! spin lock) against `MemoryManager` reserve + free side by side, rounds
//! interleaved, and prints the medians and the ratios at 1 MiB and 4 KiB.

use std::hint::black_box;

use divan::Bencher;
use streamcore::device::{Buffer, Device, DeviceConfig, KernelId, Launched, RawLock, SpinLock};
use streamcore::memory::{MemoryLayout, MemoryManager};
use streamcore::null::{Null, NullStorage};
use streamcore::platform::{KernelSource, LaunchDims, Platform};
use streamcore::stream::StreamId;

const S0: StreamId = StreamId(0);
const S1: StreamId = StreamId(1);
const MIB: u64 = 1 << 20;

fn main() {
    if let Ok(name) = std::env::var("PROFILE") {
        let iters = std::env::var("ITERS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(100_000);
        profile(&name, iters);
        return;
    }
    if std::env::var_os("RATIO").is_some() {
        alloc_ratios();
        return;
    }
    if std::env::var_os("COLD").is_some() {
        cold_ratio();
        return;
    }
    divan::main();
}

/// A device on the default lock (`ParkingLock` when anything in the build
/// enables the `std` feature, as the workspace's other crates do).
fn device() -> Device<Null> {
    Device::new(Null, DeviceConfig::with_streams(2)).unwrap()
}

/// A kernel taking `bindings` bindings (the info buffer included).
fn kernel<L: RawLock>(d: &Device<Null, L>, bindings: usize) -> KernelId {
    d.load_kernel(&KernelSource {
        name: "k",
        source: "",
        bindings,
    })
    .unwrap()
}

/// One launch over three buffers, its info words served by the cache.
struct Launch<L: RawLock> {
    d: Device<Null, L>,
    k: KernelId,
    bufs: [Buffer; 3],
}

impl<L: RawLock> Launch<L> {
    fn new() -> Self {
        let d = Device::<_, L>::with_lock(Null, DeviceConfig::with_streams(2)).unwrap();
        let k = kernel(&d, 4);
        let bufs = [0; 3].map(|_| d.alloc(S0, 4096).unwrap());
        Self { d, k, bufs }
    }

    fn run(&self) {
        let b = &self.bufs;
        let r = self.d.launch(
            S0,
            self.k,
            LaunchDims::linear(4, 256),
            &[b[0].read(), b[1].read(), b[2].write()],
            black_box(&[1024, 7]),
        );
        assert_eq!(r.unwrap(), Launched::Queued);
    }
}

/// A producer launch on stream 1 and a consumer launch on stream 0: the
/// consumer needs one event wait each time (the two-stream pipeline).
struct Handoff {
    d: Device<Null>,
    k1: KernelId,
    k2: KernelId,
    a: Buffer,
    c: Buffer,
}

impl Handoff {
    fn new() -> Self {
        let d = device();
        let (k1, k2) = (kernel(&d, 2), kernel(&d, 3));
        let a = d.alloc(S1, 4096).unwrap();
        let c = d.alloc(S0, 4096).unwrap();
        Self { d, k1, k2, a, c }
    }

    fn run(&self) {
        let dims = LaunchDims::linear(4, 256);
        let r = self.d.launch(S1, self.k1, dims, &[self.a.write()], &[1024]);
        assert_eq!(r.unwrap(), Launched::Queued);
        let r = self
            .d
            .launch(S0, self.k2, dims, &[self.a.read(), self.c.write()], &[1024]);
        assert_eq!(r.unwrap(), Launched::Queued);
    }
}

#[path = "../tests/support/pipeline.rs"]
mod pipeline;

/// Stages per pipeline round.
const STAGES: usize = 64;

/// The H200 comparison's two-stream pipeline (`pipeline::Pipeline`: per
/// stage a fill on stream 1 whose info words name the stage, then an
/// accumulation on stream 0 with the wait the core places), 64 stages of
/// 4 KiB, after one warm round.
fn pipeline() -> pipeline::Pipeline {
    let p = pipeline::Pipeline::new(STAGES, 4096);
    round(&p);
    p
}

/// One round: every stage, then `sync_all`.
fn round(p: &pipeline::Pipeline) {
    p.run();
    p.d.sync_all().unwrap();
}

/// Bytes the cold variant walks between two launches: more than this
/// machine's and the H200 host's L2 (2 MiB a core), as a driver's own work
/// between two calls (~4 µs of its code and data) evicts the core's lines.
/// `EVICT_KIB` overrides it (cachegrind counts L1 misses the same with any
/// walk well past L1, and runs a smaller one much faster).
fn evict_bytes() -> usize {
    std::env::var("EVICT_KIB")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .map_or(8 << 20, |k| k << 10)
}

/// Touches every 64-byte line of `buf` once (a read and a write), so what
/// the core touched before is out of L1 and L2 when it runs next.
#[inline(never)]
fn evict_caches(buf: &mut [u8]) {
    for i in (0..buf.len()).step_by(64) {
        buf[i] = black_box(buf[i].wrapping_add(1));
    }
}

/// One round with the caches evicted before every launch, then `sync_all`.
fn round_cold(p: &pipeline::Pipeline, buf: &mut [u8]) {
    p.run_with(|| evict_caches(buf));
    p.d.sync_all().unwrap();
}

/// Nanoseconds per stage of one round's launches alone, the caches evicted
/// (`cold`) or not before each: each launch is timed from the end of what
/// ran before it (the eviction, or nothing) to the start of what runs
/// after it, so the eviction itself never counts.
fn stage_ns(p: &pipeline::Pipeline, buf: &mut [u8], cold: bool) -> f64 {
    let mut total = std::time::Duration::ZERO;
    let mut since: Option<std::time::Instant> = None;
    p.run_with(|| {
        if let Some(t) = since.take() {
            total += t.elapsed();
        }
        if cold {
            evict_caches(buf);
        }
        since = Some(std::time::Instant::now());
    });
    if let Some(t) = since {
        total += t.elapsed();
    }
    p.d.sync_all().unwrap();
    total.as_nanos() as f64 / STAGES as f64
}

/// The pipeline's launches per stage with warm caches and with the caches
/// evicted before every launch, rounds interleaved; medians and the ratio.
fn cold_ratio() {
    const ROUNDS: usize = 31;
    let p = pipeline();
    let mut buf = vec![0u8; evict_bytes()];
    let (mut hot, mut cold) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        hot.push(stage_ns(&p, &mut buf, false));
        cold.push(stage_ns(&p, &mut buf, true));
    }
    let (h, c) = (median(&mut hot), median(&mut cold));
    println!(
        "pipeline stage (2 launches + hand-off), {ROUNDS} rounds of {STAGES} stages, median ns/stage: \
         warm {h:.0}  caches evicted before each launch {c:.0} ({:.2}x)",
        c / h
    );
}

/// The bare pool `Device::alloc` wraps, with the device's default layout.
fn manager() -> MemoryManager<NullStorage> {
    MemoryManager::new(
        NullStorage::default(),
        MemoryLayout::for_device(&Null.properties()),
    )
}

fn manager_pair(m: &mut MemoryManager<NullStorage>, size: u64) {
    let (h, range) = m.reserve(size).unwrap();
    black_box(range);
    m.free(h).unwrap();
}

fn alloc_drop<L: RawLock>(d: &Device<Null, L>, size: u64) {
    drop(black_box(d.alloc(S0, size).unwrap()));
}

/// One launch with three buffers and its info words served by the cache.
#[divan::bench]
fn launch_3_buffers_info_hit(b: Bencher<'_, '_>) {
    let l = Launch::<streamcore::device::DefaultLock>::new();
    b.bench_local(|| l.run());
}

/// The same on the spin lock (the default without `std`).
#[divan::bench]
fn launch_3_buffers_info_hit_spinlock(b: Bencher<'_, '_>) {
    let l = Launch::<SpinLock>::new();
    b.bench_local(|| l.run());
}

/// The two-stream hand-off: two launches and the wait the core places.
#[divan::bench]
fn cross_stream_handoff(b: Bencher<'_, '_>) {
    let h = Handoff::new();
    b.bench_local(|| h.run());
}

/// One pipeline round (64 stages and the round's `sync_all`).
#[divan::bench]
fn pipeline_round_64_stages(b: Bencher<'_, '_>) {
    let p = pipeline();
    b.bench_local(|| round(&p));
}

/// `Device::alloc` of 1 MiB, then dropping the handle (freed at the next call).
#[divan::bench]
fn alloc_drop_1mib(b: Bencher<'_, '_>) {
    let d = device();
    b.bench_local(|| alloc_drop(&d, MIB));
}

/// The same on the spin lock.
#[divan::bench]
fn alloc_drop_1mib_spinlock(b: Bencher<'_, '_>) {
    let d = Device::<_, SpinLock>::with_lock(Null, DeviceConfig::with_streams(2)).unwrap();
    b.bench_local(|| alloc_drop(&d, MIB));
}

/// The bare `MemoryManager` reserve + free of 1 MiB it is compared with.
#[divan::bench]
fn manager_reserve_free_1mib(b: Bencher<'_, '_>) {
    let mut m = manager();
    b.bench_local(|| manager_pair(&mut m, MIB));
}

/// `Device::alloc` of 4 KiB, then dropping the handle.
#[divan::bench]
fn alloc_drop_4kib(b: Bencher<'_, '_>) {
    let d = device();
    b.bench_local(|| alloc_drop(&d, 4096));
}

/// The bare `MemoryManager` reserve + free of 4 KiB.
#[divan::bench]
fn manager_reserve_free_4kib(b: Bencher<'_, '_>) {
    let mut m = manager();
    b.bench_local(|| manager_pair(&mut m, 4096));
}

/// `alloc` of 1 MiB, dropping the handle after a launch used it, and
/// polling the deferred free.
#[divan::bench]
fn alloc_use_drop_poll_1mib(b: Bencher<'_, '_>) {
    let d = device();
    let k = kernel(&d, 1);
    b.bench_local(|| alloc_use_drop_poll(&d, k));
}

fn alloc_use_drop_poll(d: &Device<Null>, k: KernelId) {
    let buf = d.alloc(S0, MIB).unwrap();
    let r = d.launch(S0, k, LaunchDims::linear(1, 1), &[buf.write()], &[]);
    assert_eq!(r.unwrap(), Launched::Queued);
    drop(black_box(buf));
    d.poll().unwrap();
}

/// Nanoseconds per pair of `pairs` runs of `f`.
fn per_pair(pairs: u32, mut f: impl FnMut()) -> f64 {
    let t = std::time::Instant::now();
    (0..pairs).for_each(|_| f());
    t.elapsed().as_nanos() as f64 / f64::from(pairs)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// `Device::alloc` + drop against `MemoryManager` reserve + free, rounds of
/// each interleaved so drift hits all three alike.
fn alloc_ratios() {
    const PAIRS: u32 = 1000;
    const ROUNDS: usize = 301;
    let d = device();
    let spin = Device::<_, SpinLock>::with_lock(Null, DeviceConfig::with_streams(2)).unwrap();
    let mut m = manager();
    println!("alloc+drop vs reserve+free, {ROUNDS} rounds of {PAIRS} pairs (median ns/pair)");
    for (label, size) in [("1 MiB", MIB), ("4 KiB", 4096)] {
        let mut t: [Vec<f64>; 3] = Default::default();
        for _ in 0..ROUNDS {
            t[0].push(per_pair(PAIRS, || manager_pair(&mut m, size)));
            t[1].push(per_pair(PAIRS, || alloc_drop(&d, size)));
            t[2].push(per_pair(PAIRS, || alloc_drop(&spin, size)));
        }
        let [m0, d0, s0] = t.map(|mut v| median(&mut v));
        println!(
            "{label}: manager {m0:.1}  device {d0:.1} ({:.3}x)  spin {s0:.1} ({:.3}x)",
            d0 / m0,
            s0 / m0
        );
    }
}

/// The loop a profiler runs for `name`.
fn profile(name: &str, iters: u64) {
    match name {
        "launch_3_buffers_info_hit" => {
            let l = Launch::<streamcore::device::DefaultLock>::new();
            (0..iters).for_each(|_| l.run());
        }
        // One launch at a time with the caches evicted before each (as
        // the pipeline's cold profile): a launch's own cold lines.
        "launch_3_buffers_info_hit_cold" => {
            let l = Launch::<streamcore::device::DefaultLock>::new();
            let mut buf = vec![0u8; evict_bytes()];
            (0..iters).for_each(|_| {
                evict_caches(&mut buf);
                l.run();
            });
        }
        "launch_3_buffers_info_hit_spinlock" => {
            let l = Launch::<SpinLock>::new();
            (0..iters).for_each(|_| l.run());
        }
        "cross_stream_handoff" => {
            let h = Handoff::new();
            (0..iters).for_each(|_| h.run());
        }
        "alloc_drop_1mib" => {
            let d = device();
            (0..iters).for_each(|_| alloc_drop(&d, MIB));
        }
        "alloc_drop_1mib_spinlock" => {
            let d = Device::<_, SpinLock>::with_lock(Null, DeviceConfig::with_streams(2)).unwrap();
            (0..iters).for_each(|_| alloc_drop(&d, MIB));
        }
        "manager_reserve_free_1mib" => {
            let mut m = manager();
            (0..iters).for_each(|_| manager_pair(&mut m, MIB));
        }
        "alloc_drop_4kib" => {
            let d = device();
            (0..iters).for_each(|_| alloc_drop(&d, 4096));
        }
        "manager_reserve_free_4kib" => {
            let mut m = manager();
            (0..iters).for_each(|_| manager_pair(&mut m, 4096));
        }
        "alloc_use_drop_poll_1mib" => {
            let d = device();
            let k = kernel(&d, 1);
            (0..iters).for_each(|_| alloc_use_drop_poll(&d, k));
        }
        // ITERS counts stages here (rounds of STAGES).
        "pipeline_round_64_stages" => {
            let p = pipeline();
            (0..iters / STAGES as u64).for_each(|_| round(&p));
        }
        // The same with the caches evicted before every launch; for
        // cachegrind's miss counts (the eviction's own misses are in
        // `evict_caches`: leave them out).
        "pipeline_round_64_stages_cold" => {
            let p = pipeline();
            let mut buf = vec![0u8; evict_bytes()];
            (0..iters / STAGES as u64).for_each(|_| round_cold(&p, &mut buf));
        }
        other => panic!("no profile named {other}"),
    }
}
