//! One device shared by threads, on the null platform made driver-like:
//! each launch burns a few microseconds of CPU (what a driver's submission
//! costs; default 3 µs, `LAUNCH_US`), each host synchronization sleeps
//! 20 ms. Prints, for each lock family:
//!
//! 1. launch latency on stream 1 while another thread loops `sync` on
//!    stream 0 (acceptance: worst launch under 1 ms);
//! 2. launches per second of one thread on one stream, and of two threads on
//!    two streams together (acceptance: two threads ≥ 1.3× one);
//!
//! then the same rates on two devices, one per thread, over one driver: the
//! bound on what a lock per stream inside one device could win back.
//!
//! The launch cost is paid outside the device lock (with only the stream's
//! lane held), as a real driver call is; a share of it (`LAUNCH_SERIAL`,
//! default 0.6) under one lock all threads share, as the H200's driver
//! serializes part of every submission (bare `hipModuleLaunchKernel` from
//! two threads on two streams: 1.51-1.65x one thread's rate on four hosts,
//! `device_vs_hip threads`). `LAUNCH_SERIAL=0` is a driver whose launches overlap
//! completely. Each figure is the median of `TRIALS` runs of `SECS` seconds.
//!
//! `cargo bench -p streamcore-tests --bench concurrency`
//! (`SECS=1 TRIALS=5 LAUNCH_US=3 LAUNCH_SERIAL=0.6` are the defaults.)

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use streamcore::device::{
    Buffer, Device, DeviceConfig, KernelId, Launched, ParkingLock, RawLock, SpinLock, StdLock,
};
use streamcore::null::Null;
use streamcore::platform::{KernelSource, LaunchDims};
use streamcore::stream::StreamId;
use streamcore_tests::paced::Paced;

fn env(name: &str, default: f64) -> f64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

struct Setup {
    secs: f64,
    trials: usize,
    launch: Duration,
    /// The share of the launch cost under the driver's lock.
    serial: f64,
}

struct Rig<L: RawLock> {
    d: Arc<Device<Paced<Null>, L>>,
    p: Paced<Null>,
    k: KernelId,
}

impl<L: RawLock> Rig<L>
where
    Device<Paced<Null>, L>: Send + Sync,
{
    fn new(s: &Setup) -> Self {
        Self::on(paced(s))
    }

    /// A device of its own over `p` (a clone shares the driver's lock).
    fn on(p: Paced<Null>) -> Self {
        let d = Device::<_, L>::with_lock(p.clone(), DeviceConfig::with_streams(2)).unwrap();
        let k = d
            .load_kernel(&KernelSource {
                name: "k",
                source: "",
                bindings: 3,
            })
            .unwrap();
        Self {
            d: Arc::new(d),
            p,
            k,
        }
    }

    fn buffers(&self, s: StreamId) -> (Buffer, Buffer) {
        (
            self.d.alloc(s, 4096).unwrap(),
            self.d.alloc(s, 4096).unwrap(),
        )
    }

    /// Launches on `s` until `stop`, timing each; returns the latencies.
    fn launch_until(&self, s: StreamId, stop: &AtomicBool, timed: bool) -> (u64, Vec<Duration>) {
        let (x, y) = self.buffers(s);
        let dims = LaunchDims::linear(4, 256);
        let mut lat = Vec::new();
        let mut n = 0;
        while !stop.load(Ordering::Relaxed) {
            let t = Instant::now();
            let r = self
                .d
                .launch(s, self.k, dims, &[x.read(), y.write()], &[1024]);
            assert_eq!(r.unwrap(), Launched::Queued);
            if timed {
                lat.push(t.elapsed());
            }
            n += 1;
        }
        (n, lat)
    }
}

/// The paced driver of the setup.
fn paced(s: &Setup) -> Paced<Null> {
    let p = Paced::new(Null);
    p.set_launch_cost(s.launch);
    p.set_launch_serial_share(s.serial);
    p.set_sync_cost(Duration::from_millis(20));
    p
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// The `q` quantile of `sorted`; `or` when there is none (no launch went
/// through at all).
fn quantile(sorted: &[Duration], q: f64, or: Duration) -> Duration {
    match sorted.len() {
        0 => or,
        n => sorted[((n - 1) as f64 * q) as usize],
    }
}

/// Launch latency on stream 1 while another thread loops 20 ms syncs of
/// stream 0. Returns (launches, median, p99.9, worst, syncs) of the trial
/// with the median worst latency.
fn latency<L: RawLock>(s: &Setup) -> (u64, Duration, Duration, Duration, u64)
where
    Device<Paced<Null>, L>: Send + Sync,
{
    let mut trials = Vec::new();
    for _ in 0..s.trials {
        let rig = Rig::<L>::new(s);
        let stop = Arc::new(AtomicBool::new(false));
        // Something queued on stream 0 to sync.
        let (a, b) = rig.buffers(StreamId(0));
        let syncer = {
            let (d, stop, k) = (Arc::clone(&rig.d), Arc::clone(&stop), rig.k);
            thread::spawn(move || {
                let dims = LaunchDims::linear(4, 256);
                while !stop.load(Ordering::Relaxed) {
                    let r = d.launch(StreamId(0), k, dims, &[a.read(), b.write()], &[1024]);
                    assert_eq!(r.unwrap(), Launched::Queued);
                    d.sync(StreamId(0)).unwrap();
                }
            })
        };
        // Let the syncer reach its first wait.
        while rig.p.syncs() == 0 {
            thread::yield_now();
        }
        let timer = stop_after(s.secs, &stop);
        let (n, mut lat) = rig.launch_until(StreamId(1), &stop, true);
        timer.join().unwrap();
        syncer.join().unwrap();
        lat.sort();
        // No launch at all: the whole trial was one wait.
        let all = Duration::from_secs_f64(s.secs);
        trials.push((
            n,
            quantile(&lat, 0.5, all),
            quantile(&lat, 0.999, all),
            quantile(&lat, 1.0, all),
            rig.p.syncs(),
        ));
    }
    trials.sort_by_key(|t| t.3);
    trials[trials.len() / 2]
}

/// Launches per second: one thread on stream 0, then two threads on
/// streams 0 and 1 together. Returns the medians (one, two).
fn scaling<L: RawLock>(s: &Setup) -> (f64, f64)
where
    Device<Paced<Null>, L>: Send + Sync,
{
    one_and_two(s, |threads| {
        let rig = Arc::new(Rig::<L>::new(s));
        rate(s, threads, |t, stop| {
            let rig = Arc::clone(&rig);
            thread::spawn(move || rig.launch_until(StreamId(t), &stop, false).0)
        })
    })
}

/// Two threads' launches per second on one shared device of the default
/// lock and on two devices over one driver, thread `t` on device `t`:
/// nothing of the core shared between the threads, the most any finer
/// locking inside one device (a lock per stream) could reach. The two run
/// in turn within each trial. Returns the medians (shared, split, shared
/// over split).
fn shared_and_split(s: &Setup) -> (f64, f64, f64) {
    let two_threads = |rigs: Vec<Arc<Rig<ParkingLock>>>| {
        rate(s, 2, |t, stop| {
            let rig = Arc::clone(&rigs[usize::from(t) % rigs.len()]);
            thread::spawn(move || rig.launch_until(StreamId(t), &stop, false).0)
        })
    };
    let (mut shared, mut split, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..s.trials {
        let one = two_threads(vec![Arc::new(Rig::new(s))]);
        let p = paced(s);
        let two = two_threads(vec![Arc::new(Rig::on(p.clone())), Arc::new(Rig::on(p))]);
        shared.push(one);
        split.push(two);
        ratio.push(one / two);
    }
    (median(shared), median(split), median(ratio))
}

/// What this machine and the paced driver allow, without a device: threads
/// that only burn the launch cost (its serial share under the driver's
/// lock), one then two. Returns (one, two) iterations per second.
fn ceiling(s: &Setup) -> (f64, f64) {
    one_and_two(s, |threads| {
        let p = Paced::new(Null);
        p.set_launch_cost(s.launch);
        p.set_launch_serial_share(s.serial);
        rate(s, threads, |_, stop| {
            let p = p.clone();
            thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    p.burn_launch_cost();
                    n += 1;
                }
                n
            })
        })
    })
}

/// A thread that raises `stop` after `secs` seconds.
fn stop_after(secs: f64, stop: &Arc<AtomicBool>) -> thread::JoinHandle<()> {
    let stop = Arc::clone(stop);
    thread::spawn(move || {
        thread::sleep(Duration::from_secs_f64(secs));
        stop.store(true, Ordering::Relaxed);
    })
}

/// Runs `threads` workers (`spawn(index, stop)`) for the setup's seconds,
/// then stops them. Returns their summed count per second.
fn rate(
    s: &Setup,
    threads: u16,
    spawn: impl Fn(u16, Arc<AtomicBool>) -> thread::JoinHandle<u64>,
) -> f64 {
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..threads).map(|t| spawn(t, Arc::clone(&stop))).collect();
    let t0 = Instant::now();
    thread::sleep(Duration::from_secs_f64(s.secs));
    stop.store(true, Ordering::Relaxed);
    let n: u64 = workers.into_iter().map(|w| w.join().unwrap()).sum();
    n as f64 / t0.elapsed().as_secs_f64()
}

/// The medians over the setup's trials of `run(1)` and `run(2)`.
fn one_and_two(s: &Setup, run: impl Fn(u16) -> f64) -> (f64, f64) {
    let one = median((0..s.trials).map(|_| run(1)).collect());
    let two = median((0..s.trials).map(|_| run(2)).collect());
    (one, two)
}

/// Worst launch latency with no other thread at all: the machine's own
/// noise (preemption by other processes), the floor under figure 1.
fn quiet_worst<L: RawLock>(s: &Setup) -> Duration
where
    Device<Paced<Null>, L>: Send + Sync,
{
    let worst = (0..s.trials).map(|_| {
        let rig = Rig::<L>::new(s);
        let stop = Arc::new(AtomicBool::new(false));
        let timer = stop_after(s.secs, &stop);
        let (_, lat) = rig.launch_until(StreamId(1), &stop, true);
        timer.join().unwrap();
        lat.into_iter().max().unwrap_or_default().as_secs_f64()
    });
    Duration::from_secs_f64(median(worst.collect()))
}

fn report<L: RawLock>(name: &str, s: &Setup)
where
    Device<Paced<Null>, L>: Send + Sync,
{
    let quiet = quiet_worst::<L>(s);
    println!(
        "{name:>9}  worst launch with no other thread (machine noise): {:.3} ms",
        quiet.as_secs_f64() * 1e3
    );
    let (n, p50, p999, worst, syncs) = latency::<L>(s);
    println!(
        "{name:>9}  latency on stream 1 during 20 ms syncs of stream 0: {n} launches, \
         median {:.1} µs, p99.9 {:.1} µs, worst {:.3} ms ({syncs} syncs) -> {}",
        p50.as_secs_f64() * 1e6,
        p999.as_secs_f64() * 1e6,
        worst.as_secs_f64() * 1e3,
        if worst < Duration::from_millis(1) {
            "under 1 ms: ok"
        } else {
            "1 ms or more: MISSED"
        }
    );
    let (one, two) = scaling::<L>(s);
    println!(
        "{name:>9}  launches/s: one thread {:.0}, two threads on two streams {:.0}: {:.2}x -> {}",
        one,
        two,
        two / one,
        if two >= 1.3 * one {
            "at least 1.3x: ok"
        } else {
            "below 1.3x: MISSED"
        }
    );
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is taken.
    let s = Setup {
        secs: env("SECS", 1.0),
        trials: env("TRIALS", 5.0) as usize,
        launch: Duration::from_secs_f64(env("LAUNCH_US", 3.0) * 1e-6),
        serial: env("LAUNCH_SERIAL", 0.6).clamp(0.0, 1.0),
    };
    println!(
        "concurrency: null platform, launch {:.1} µs of CPU ({:.0} % of it under the driver's \
         lock), synchronize 20 ms; median of {} trials of {} s; {} CPUs",
        s.launch.as_secs_f64() * 1e6,
        s.serial * 100.0,
        s.trials,
        s.secs,
        thread::available_parallelism().map_or(0, |n| n.get())
    );
    let (one, two) = ceiling(&s);
    println!(
        "  machine  threads only burning the launch cost (its serial share under the driver's \
         lock): one {one:.0}/s, two {two:.0}/s: {:.2}x (the most any lock can show here)",
        two / one
    );
    report::<ParkingLock>("ParkingLock (the default)", &s);
    report::<StdLock>("StdLock", &s);
    report::<SpinLock>("SpinLock", &s);
    let (shared, split, ratio) = shared_and_split(&s);
    println!(
        "    split  two threads, one device each over one driver (nothing of the core shared): \
         {split:.0}/s; on one shared device {shared:.0}/s: {ratio:.3} of it (the most a lock per \
         stream could win back is the rest)"
    );
}
