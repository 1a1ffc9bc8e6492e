//! One device shared by several threads: each driving its own stream, a
//! hand-off between two of them, a host synchronization that blocks while
//! other threads work, `with_platform` calling back into the device. Results
//! are right, nothing deadlocks (a stall fails the test after a timeout),
//! and the mock's hazard checker stays silent.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::Duration;

use streamcore::device::{Device, DeviceConfig, Launched};
use streamcore::error::Error;
use streamcore::stream::StreamId;
use streamcore_mock::{MockConfig, MockPlatform};
use streamcore_tests::harness::{Harness, Setup};
use streamcore_tests::kernels::{self, bytes, dims, words};
use streamcore_tests::mock::MockHarness;
use streamcore_tests::paced::Paced;

#[test]
fn threads_share_one_device() {
    let h = MockHarness { seed: 3 };
    let d = Arc::new(h.device(&Setup::streams(4)).unwrap());
    let scale = d.load_kernel(&kernels::SCALE).unwrap();
    let n = 256usize;
    let workers: Vec<_> = (0..4u16)
        .map(|s| {
            let d = Arc::clone(&d);
            thread::spawn(move || {
                let sid = StreamId(s);
                let x = d.upload(sid, &bytes(&vec![u32::from(s) + 1; n])).unwrap();
                let y = d.alloc(sid, 4 * n as u64).unwrap();
                for _ in 0..50 {
                    let r = d.launch(sid, scale, dims(n), &[x.read(), y.write()], &[n as u64, 3]);
                    assert_eq!(r.unwrap(), Launched::Queued);
                }
                words(&d.read(sid, &y).unwrap())
            })
        })
        .collect();
    for (s, w) in workers.into_iter().enumerate() {
        assert_eq!(w.join().unwrap(), vec![3 * (s as u32 + 1); n]);
    }
    // A buffer made on one thread's stream, consumed on another's.
    let a = d.upload(StreamId(1), &bytes(&vec![5; n])).unwrap();
    let consumer = {
        let d = Arc::clone(&d);
        let a = a.clone();
        thread::spawn(move || {
            let out = d.alloc(StreamId(2), 4 * n as u64).unwrap();
            let r = d.launch(
                StreamId(2),
                scale,
                dims(n),
                &[a.read(), out.write()],
                &[n as u64, 2],
            );
            assert_eq!(r.unwrap(), Launched::Queued);
            words(&d.read(StreamId(2), &out).unwrap())
        })
    };
    assert_eq!(consumer.join().unwrap(), vec![10; n]);
    drop(a);
    d.sync_all().unwrap();
    assert_eq!(d.census().buffers, 0);
    h.finish(&d);
}

/// Runs `f` on its own thread and fails the test if it has not returned
/// within `secs` seconds: a deadlock or a stall reads as a failure, not a
/// hang (the stuck thread is left behind).
fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("no answer within {secs} s: stalled"),
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("the thread panicked"),
    }
}

const S0: StreamId = StreamId(0);

type PacedMock = Paced<MockPlatform>;

fn paced(streams: u16) -> (Arc<Device<PacedMock>>, PacedMock) {
    let mock = MockPlatform::with_config(MockConfig::default().seed(11)).unwrap();
    kernels::register_mock(&mock);
    let p = Paced::new(mock);
    let d = Device::new(p.clone(), DeviceConfig::with_streams(streams)).unwrap();
    (Arc::new(d), p)
}

/// `with_platform` holds no lock: its closure may call the device.
#[test]
fn with_platform_may_call_the_device() {
    let h = MockHarness { seed: 1 };
    let d = Arc::new(h.device(&Setup::streams(1)).unwrap());
    let n = {
        let d = Arc::clone(&d);
        within(10, move || {
            d.with_platform(|_| {
                let b = d.upload(StreamId(0), &[1, 2, 3, 4]).unwrap();
                d.read(StreamId(0), &b).unwrap().len()
            })
        })
    };
    assert_eq!(n, 4);
    d.sync_all().unwrap();
    h.finish(&d);
}

/// While one thread is blocked in a host synchronization of stream 0,
/// another thread's launches on stream 1 go through (the device lock is
/// not held across the wait).
#[test]
fn a_blocked_sync_does_not_stall_launches_on_other_streams() {
    let (d, p) = paced(2);
    let scale = d.load_kernel(&kernels::SCALE).unwrap();
    let n = 64usize;
    let x = d.upload(StreamId(1), &bytes(&vec![2; n])).unwrap();
    let y = d.alloc(StreamId(1), 4 * n as u64).unwrap();
    let z = d.upload(StreamId(0), &bytes(&vec![1; n])).unwrap();
    d.sync_all().unwrap();
    let (in_sync, entered) = mpsc::channel::<()>();
    let (go, launched) = mpsc::channel::<()>();
    let launched = Mutex::new(launched);
    let in_sync = Mutex::new(in_sync);
    p.set_sync_hook(Some(Box::new(move || {
        let _ = in_sync.lock().unwrap().send(());
        // Blocks this synchronize until the other thread's launches are in.
        let _ = launched
            .lock()
            .unwrap()
            .recv_timeout(Duration::from_secs(20));
    })));
    let syncer = {
        let d = Arc::clone(&d);
        thread::spawn(move || d.sync(StreamId(0)))
    };
    entered
        .recv_timeout(Duration::from_secs(10))
        .expect("the sync reached the platform");
    {
        let d = Arc::clone(&d);
        let (x, y) = (x.clone(), y.clone());
        within(10, move || {
            for _ in 0..100 {
                let r = d.launch(
                    StreamId(1),
                    scale,
                    dims(n),
                    &[x.read(), y.write()],
                    &[n as u64, 3],
                );
                assert_eq!(r.unwrap(), Launched::Queued);
            }
        });
    }
    go.send(()).unwrap();
    syncer.join().unwrap().unwrap();
    p.set_sync_hook(None);
    assert_eq!(words(&d.read(StreamId(1), &y).unwrap()), vec![6; n]);
    assert_eq!(words(&d.read(StreamId(0), &z).unwrap()), vec![1; n]);
    drop((x, y, z));
    d.sync_all().unwrap();
    d.with_platform(|p| p.inner().assert_no_hazards());
}

/// `sync_all` says so when it cannot settle because work keeps coming
/// (here: each host synchronization frees another buffer another stream is
/// still using), and settles once it stops.
#[test]
fn sync_all_reports_when_work_keeps_it_from_settling() {
    let (d, p) = paced(2);
    let scale = d.load_kernel(&kernels::SCALE).unwrap();
    let n = 16usize;
    let out = d.alloc(StreamId(0), 4 * n as u64).unwrap();
    {
        let d = Arc::clone(&d);
        let out = out.clone();
        let left = AtomicU32::new(50);
        p.set_sync_hook(Some(Box::new(move || {
            if left.load(Ordering::Relaxed) == 0 {
                return;
            }
            left.fetch_sub(1, Ordering::Relaxed);
            // Made on stream 1, read on stream 0, dropped: a free pinned
            // until stream 0's use completes.
            let b = d.upload(StreamId(1), &bytes(&vec![1; n])).unwrap();
            let r = d.launch(
                StreamId(0),
                scale,
                dims(n),
                &[b.read(), out.write()],
                &[n as u64, 2],
            );
            assert_eq!(r.unwrap(), Launched::Queued);
        })));
    }
    let r = {
        let d = Arc::clone(&d);
        within(20, move || d.sync_all())
    };
    assert!(
        matches!(r, Err(Error::NotSettled { .. })),
        "work kept coming: {r:?}"
    );
    // The hook holds a clone of the device: dropping it breaks the cycle.
    p.set_sync_hook(None);
    d.sync_all().unwrap();
    let c = d.census();
    assert_eq!((c.deferred, c.cross_pins), (0, 0), "{c:?}");
    assert_eq!(words(&d.read(StreamId(0), &out).unwrap()), vec![2; n]);
    drop(out);
    d.sync_all().unwrap();
    d.with_platform(|p| p.inner().assert_no_hazards());
}

/// A launch the platform refuses after the device lock was let go (the
/// call made holding only the stream's lane) goes back for the lock to
/// claim its outputs. It must let the lane go first: another thread may
/// hold the device lock meanwhile and wait for that lane (its own launch
/// on the stream), and the two would wait for each other forever.
#[test]
fn a_launch_refused_outside_the_lock_lets_its_lane_go_before_relocking() {
    use streamcore_mock::fault::{Effect, FaultInjector, FaultPlan, Rule, Site, Trigger};
    let mock = MockPlatform::with_config(MockConfig::default().seed(5)).unwrap();
    kernels::register_mock(&mock);
    let faults = FaultInjector::new(mock, FaultPlan::new());
    faults.add_rule(Rule {
        site: Site::Launch,
        trigger: Trigger::Nth(1),
        effect: Effect::Fail(streamcore::platform::ErrorKind::Other),
    });
    let p = Paced::new(faults);
    let d = Arc::new(Device::new(p.clone(), DeviceConfig::with_streams(1)).unwrap());
    let scale = d.load_kernel(&kernels::SCALE).unwrap();
    let n = 64usize;
    let x = d.upload(S0, &bytes(&vec![2; n])).unwrap();
    let (y, z) = (
        d.alloc(S0, 4 * n as u64).unwrap(),
        d.alloc(S0, 4 * n as u64).unwrap(),
    );
    d.sync_all().unwrap();
    // The first launch's platform call takes 50 ms, then fails; the second
    // thread launches on the same stream meanwhile.
    p.set_launch_cost(Duration::from_millis(50));
    let first = {
        let (d, x, y) = (Arc::clone(&d), x.clone(), y.clone());
        thread::spawn(move || d.launch(S0, scale, dims(n), &[x.read(), y.write()], &[n as u64, 3]))
    };
    thread::sleep(Duration::from_millis(10));
    let second = {
        let (d, x, z) = (Arc::clone(&d), x.clone(), z.clone());
        within(10, move || {
            d.launch(S0, scale, dims(n), &[x.read(), z.write()], &[n as u64, 5])
        })
    };
    let first = within(10, move || first.join().unwrap());
    assert!(
        matches!(first, Err(Error::Failed { op: "launch", .. })),
        "{first:?}"
    );
    assert!(second.is_ok(), "{second:?}");
    p.set_launch_cost(Duration::ZERO);
    assert_eq!(words(&d.read(S0, &z).unwrap()), vec![10; n]);
    drop((x, y, z));
    d.sync_all().unwrap();
}

std::thread_local! {
    /// This thread's simulated interrupt mask, for [`ThreadMask`].
    static MASKED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// This thread's masks so far.
    static MASKS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// An interrupt mask over a thread-local flag: the host side of a
/// [`MaskedLock`](streamcore::device::MaskedLock), observable by a test.
struct ThreadMask;

impl streamcore::device::InterruptMask for ThreadMask {
    type Saved = bool;
    fn mask() -> bool {
        MASKS.with(|n| n.set(n.get() + 1));
        MASKED.with(|m| m.replace(true))
    }
    fn restore(saved: bool) {
        MASKED.with(|m| m.set(saved));
    }
}

/// On the critical-section lock, every host synchronization the device
/// makes (a read, a stream's sync, `sync_all`, the sync before an
/// allocation that waits for frees) runs with interrupts unmasked: the
/// device never masks them across a wait on the GPU, only around its
/// bookkeeping.
#[test]
fn the_masked_lock_never_waits_with_interrupts_masked() {
    use streamcore::device::MaskedLock;
    let mock = MockPlatform::with_config(MockConfig::default().seed(7)).unwrap();
    kernels::register_mock(&mock);
    let p = Paced::new(mock);
    let d =
        Device::<_, MaskedLock<ThreadMask>>::with_lock(p.clone(), DeviceConfig::with_streams(2))
            .unwrap();
    let (syncs, masked_syncs) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0)));
    {
        let (syncs, masked_syncs) = (Arc::clone(&syncs), Arc::clone(&masked_syncs));
        p.set_sync_hook(Some(Box::new(move || {
            syncs.fetch_add(1, Ordering::Relaxed);
            if MASKED.with(std::cell::Cell::get) {
                masked_syncs.fetch_add(1, Ordering::Relaxed);
            }
        })));
    }
    let masks_before = MASKS.with(std::cell::Cell::get);
    let scale = d.load_kernel(&kernels::SCALE).unwrap();
    let n = 64usize;
    let x = d.upload(StreamId(1), &bytes(&vec![2; n])).unwrap();
    let y = d.alloc(StreamId(0), 4 * n as u64).unwrap();
    let r = d.launch(S0, scale, dims(n), &[x.read(), y.write()], &[n as u64, 3]);
    assert_eq!(r.unwrap(), Launched::Queued);
    assert_eq!(words(&d.read(S0, &y).unwrap()), vec![6; n]);
    d.sync(StreamId(1)).unwrap();
    drop((x, y));
    d.sync_all().unwrap();
    assert!(
        MASKS.with(std::cell::Cell::get) > masks_before,
        "the device took its lock through the mask"
    );
    assert!(!MASKED.with(std::cell::Cell::get), "unmasked between calls");
    assert!(
        syncs.load(Ordering::Relaxed) >= 3,
        "the platform was waited on"
    );
    assert_eq!(
        masked_syncs.load(Ordering::Relaxed),
        0,
        "a wait on the GPU made with interrupts masked"
    );
    p.set_sync_hook(None);
    d.with_platform(|p| p.inner().assert_no_hazards());
}

/// On the critical-section lock, a buffer dropped outside any device call
/// whose id goes to the release queue (the mailbox holds another's) takes
/// the queue's lock inside the mask: an interrupt handler dropping a
/// buffer meanwhile cannot spin on a lock the interrupted thread holds.
#[test]
fn the_masked_lock_masks_a_drop_that_takes_the_release_queue() {
    use streamcore::device::MaskedLock;
    let mock = MockPlatform::with_config(MockConfig::default().seed(9)).unwrap();
    let d = Device::<_, MaskedLock<ThreadMask>>::with_lock(mock, DeviceConfig::with_streams(1))
        .unwrap();
    let (a, b) = (d.alloc(S0, 64).unwrap(), d.alloc(S0, 64).unwrap());
    let before = MASKS.with(std::cell::Cell::get);
    drop(a); // the mailbox: one atomic word, no lock
    drop(b); // the queue, behind its lock
    assert!(
        MASKS.with(std::cell::Cell::get) > before,
        "the queue's lock was taken without masking"
    );
    assert!(!MASKED.with(std::cell::Cell::get));
    d.sync_all().unwrap();
    assert_eq!(d.census().buffers, 0, "both releases were processed");
}

/// On the critical-section lock the device keeps its lock through a
/// launch's driver call (no hand over hand): launches on the common path
/// go through, a refused one is booked as failed under the lock it still
/// holds (taking it again would deadlock), and interrupts are unmasked
/// after every call.
#[test]
fn the_masked_lock_launches_and_books_a_refusal_without_hand_over_hand() {
    // On a thread of its own: a deadlock fails the test instead of hanging it.
    within(20, || {
        use streamcore::device::MaskedLock;
        use streamcore_mock::fault::{Effect, FaultInjector, FaultPlan, Rule, Site, Trigger};
        let mock = MockPlatform::with_config(MockConfig::default().seed(13)).unwrap();
        kernels::register_mock(&mock);
        let faults = FaultInjector::new(mock, FaultPlan::new());
        let d =
            Device::<_, MaskedLock<ThreadMask>>::with_lock(faults, DeviceConfig::with_streams(1))
                .unwrap();
        let scale = d.load_kernel(&kernels::SCALE).unwrap();
        let n = 32usize;
        let x = d.upload(S0, &bytes(&vec![2; n])).unwrap();
        let y = d.alloc(S0, 4 * n as u64).unwrap();
        for _ in 0..4 {
            let r = d.launch(S0, scale, dims(n), &[x.read(), y.write()], &[n as u64, 3]);
            assert_eq!(r.unwrap(), Launched::Queued);
            assert!(
                !MASKED.with(std::cell::Cell::get),
                "unmasked after a launch"
            );
        }
        d.with_platform(|p| {
            p.add_rule(Rule {
                site: Site::Launch,
                trigger: Trigger::Nth(1),
                effect: Effect::Fail(streamcore::platform::ErrorKind::Other),
            })
        });
        // The same info words as before, cached: the launch takes the
        // common path, whose driver call is made after the bookkeeping.
        let r = d.launch(S0, scale, dims(n), &[x.read(), y.write()], &[n as u64, 3]);
        assert!(
            matches!(r, Err(Error::Failed { op: "launch", .. })),
            "{r:?}"
        );
        assert!(
            !MASKED.with(std::cell::Cell::get),
            "unmasked after a refusal"
        );
        assert!(
            matches!(d.read(S0, &y), Err(Error::Tainted(_))),
            "the refused launch's output is claimed"
        );
        let r = d.launch(S0, scale, dims(n), &[x.read(), y.write()], &[n as u64, 3]);
        assert_eq!(r.unwrap(), Launched::Queued, "a rewrite clears the claim");
        assert_eq!(words(&d.read(S0, &y).unwrap()), vec![6; n]);
        drop((x, y));
        d.sync_all().unwrap();
        assert_eq!(d.census().buffers, 0);
    });
}
