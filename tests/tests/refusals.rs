//! Work the device refuses, on the mock: what the refusal claims, what the
//! error names, and layouts refused where they are given. Each test failed
//! before its fix.

use streamcore::device::{Device, DeviceConfig, Launched};
use streamcore::error::Error;
use streamcore::memory::{LayoutError, MemoryError, MemoryLayout, MemoryPolicy, PoolSpec};
use streamcore::platform::{ErrorKind, Platform};
use streamcore::stream::StreamId;
use streamcore_mock::fault::{Effect, FaultInjector, FaultPlan, Rule, Site, Trigger};
use streamcore_mock::{MockConfig, MockPlatform};
use streamcore_tests::kernels::{self, bytes, dims, words};

const S0: StreamId = StreamId(0);
const S1: StreamId = StreamId(1);

type Mock = FaultInjector<MockPlatform>;

fn mock() -> Mock {
    let m = MockPlatform::with_config(MockConfig::default().seed(7)).unwrap();
    kernels::register_mock(&m);
    FaultInjector::new(m, FaultPlan::new())
}

fn device(streams: u16) -> Device<Mock> {
    Device::new(mock(), DeviceConfig::with_streams(streams)).unwrap()
}

fn fail_next(d: &Device<Mock>, site: Site) {
    d.with_platform(|p| {
        p.add_rule(Rule {
            site,
            trigger: Trigger::Nth(1),
            effect: Effect::Fail(ErrorKind::Other),
        })
    });
}

fn assert_no_hazards(d: &Device<Mock>) {
    d.with_platform(|p| p.inner().assert_no_hazards());
}

/// One pool whose pages are twice the device's memory.
fn oversized(total: u64) -> MemoryLayout {
    MemoryLayout::new(
        &[PoolSpec::small(2 * total, 1 << 10)],
        256,
        MemoryPolicy::default(),
    )
    .unwrap()
}

fn is_too_large<E>(r: &Result<(), Error<E>>) -> bool {
    matches!(
        r,
        Err(Error::Memory(MemoryError::Layout(
            LayoutError::PageLargerThanDevice { .. }
        )))
    )
}

/// A layout whose pages exceed the device is refused where it is given,
/// with the typed error, not accepted and then answered by a false "out of
/// memory" on an empty device at the first allocation.
#[test]
fn a_layout_whose_pages_exceed_the_device_is_refused_where_it_is_given() {
    let m = mock();
    let total = m.properties().total_memory;
    let made = Device::new(m, DeviceConfig::with_streams(1).layout(oversized(total)));
    assert!(is_too_large(&made.map(|_| ())));

    let d = device(1);
    let before = d.alloc(S0, 16).unwrap();
    let installed = d.install_pools(oversized(total));
    assert!(is_too_large(&installed), "{installed:?}");
    // Nothing changed: the held buffer and new allocations are served.
    drop(before);
    d.sync_all().unwrap();
    let after = d.alloc(S0, 16).unwrap();
    drop(after);
    d.sync_all().unwrap();
    // A layout that fits is still taken.
    let fits = MemoryLayout::new(
        &[PoolSpec::small(total / 4, 1 << 10)],
        256,
        MemoryPolicy::default(),
    )
    .unwrap();
    d.install_pools(fits).unwrap();
    assert!(d.alloc(S0, 16).is_ok());
}

/// A call refused during a capture names the call the user made, not the
/// step inside it (`sync_all` refused at one stream's sync).
#[test]
fn a_refusal_during_a_capture_names_the_call() {
    let d = device(2);
    let fill = d.load_kernel(&kernels::FILL).unwrap();
    let a = d.alloc(S0, 64).unwrap();
    d.prepare(S0).unwrap();
    assert_eq!(
        d.launch(S0, fill, dims(16), &[a.write()], &[16, 1])
            .unwrap(),
        Launched::Queued
    );
    d.begin_capture(S0).unwrap();
    match d.sync_all() {
        Err(e @ Error::NotWhileCapturing { op: "sync_all" }) => {
            assert!(e.to_string().contains("`sync_all`"), "{e}");
        }
        other => panic!("sync_all during a capture: {other:?}"),
    }
    assert!(matches!(
        d.sync(S0),
        Err(Error::NotWhileCapturing { op: "sync" })
    ));
    d.abort_capture(S0).unwrap();
}

/// A launch in a capture window that needs a wait on an event from outside
/// the capture is refused at that wait (the window is doomed): what it
/// would have written is claimed, so a read reports the refusal instead of
/// returning the warm-up's bytes; rewriting clears it.
#[test]
fn a_launch_refused_at_its_wait_in_a_window_claims_its_output() {
    let d = device(2);
    let scale = d.load_kernel(&kernels::SCALE).unwrap();
    let n = 16;
    let x = d.upload(S1, &bytes(&vec![2; n])).unwrap();
    let y = d.alloc(S0, 4 * n as u64).unwrap();
    d.sync_all().unwrap();
    d.prepare(S0).unwrap();
    let run =
        |d: &Device<Mock>| d.launch(S0, scale, dims(n), &[x.read(), y.write()], &[n as u64, 3]);
    assert_eq!(run(&d).unwrap(), Launched::Queued); // y = 6
    d.write(S1, &x, &bytes(&vec![4; n])).unwrap(); // after the warm-up
    d.begin_capture(S0).unwrap();
    assert!(matches!(run(&d), Err(Error::Platform { op: "wait", .. })));
    assert!(d.end_capture(S0).is_err());
    let f = d
        .failure_of(&y)
        .expect("the refused launch's output is claimed");
    match d.read(S0, &y) {
        Err(Error::Tainted(r)) => {
            assert_eq!(r.failure, f);
            assert!(r.root.contains("launch of kernel `sc_scale`"), "{r}");
        }
        other => panic!(
            "read of a refused launch's output: {:?}",
            other.map(|v| words(&v))
        ),
    }
    // The input was not written by the refused launch: it reads as before.
    assert_eq!(d.failure_of(&x), None);
    d.sync_all().unwrap();
    assert_eq!(run(&d).unwrap(), Launched::Queued);
    assert_eq!(words(&d.read(S0, &y).unwrap()), vec![12; n]);
    drop((x, y));
    d.sync_all().unwrap();
    assert_eq!(d.census().failures, 0);
    assert_no_hazards(&d);
}

/// Outside a capture: a launch refused at its cross-stream wait or at its
/// info words' upload claims its output like a launch the platform call
/// refused; a later launch reading that output is skipped with the claim,
/// and nothing reads bytes no work wrote (the mock's hazard checker).
#[test]
fn a_launch_refused_before_it_is_queued_claims_its_output() {
    for site in [Site::Wait, Site::HostWrite, Site::CopyToDevice] {
        let d = device(2);
        let scale = d.load_kernel(&kernels::SCALE).unwrap();
        let n = 16;
        let x = d.upload(S1, &bytes(&vec![2; n])).unwrap();
        let y = d.alloc(S0, 4 * n as u64).unwrap(); // never written
        let z = d.alloc(S0, 4 * n as u64).unwrap();
        if !matches!(site, Site::Wait) {
            // Nothing to wait for: the info words' upload is what fails
            // (words never seen before).
            d.sync_all().unwrap();
        }
        let name = format!("{site:?}");
        fail_next(&d, site);
        let r = d.launch(S0, scale, dims(n), &[x.read(), y.write()], &[n as u64, 77]);
        let site = name;
        assert!(r.is_err(), "{site:?}: {r:?}");
        let f = d
            .failure_of(&y)
            .unwrap_or_else(|| panic!("{site:?}: the refused launch's output is unclaimed"));
        assert!(matches!(d.read(S0, &y), Err(Error::Tainted(r)) if r.failure == f));
        // Work reading it is skipped with the claim, and passes it on.
        assert_eq!(
            d.launch(S0, scale, dims(n), &[y.read(), z.write()], &[n as u64, 1])
                .unwrap(),
            Launched::Skipped(f)
        );
        assert_eq!(d.failure_of(&z), Some(f));
        drop((x, y, z));
        d.sync_all().unwrap();
        assert_eq!(d.census().failures, 0, "{site:?}");
        assert_no_hazards(&d);
    }
}

/// A replay refused at its wait claims the graph's outputs.
#[test]
fn a_replay_refused_at_its_wait_claims_the_graphs_outputs() {
    let d = device(2);
    let scale = d.load_kernel(&kernels::SCALE).unwrap();
    let n = 16;
    let x = d.upload(S0, &bytes(&vec![2; n])).unwrap();
    let y = d.alloc(S0, 4 * n as u64).unwrap();
    let run =
        |d: &Device<Mock>| d.launch(S0, scale, dims(n), &[x.read(), y.write()], &[n as u64, 3]);
    d.prepare(S0).unwrap();
    assert_eq!(run(&d).unwrap(), Launched::Queued);
    d.begin_capture(S0).unwrap();
    assert_eq!(run(&d).unwrap(), Launched::Queued);
    let g = d.end_capture(S0).unwrap();
    // Another stream writes the graph's input: the replay must wait on it.
    d.write(S1, &x, &bytes(&vec![5; n])).unwrap();
    fail_next(&d, Site::Wait);
    assert!(matches!(
        d.replay(&g),
        Err(Error::Platform { op: "wait", .. })
    ));
    let f = d
        .failure_of(&y)
        .expect("the refused replay's output is claimed");
    match d.read(S0, &y) {
        Err(Error::Tainted(r)) => {
            assert_eq!(r.failure, f);
            assert!(r.root.contains("replay of graph #"), "{r}");
        }
        other => panic!("read of a refused replay's output: {other:?}"),
    }
    assert_eq!(d.replay(&g).unwrap(), Launched::Queued);
    assert_eq!(words(&d.read(S0, &y).unwrap()), vec![15; n]);
    drop((g, x, y));
    d.sync_all().unwrap();
    assert_no_hazards(&d);
}

/// A failed replay's report names the replay, not a kernel called
/// `graph #1`.
#[test]
fn a_failed_replay_is_reported_as_a_replay() {
    let d = device(1);
    let fill = d.load_kernel(&kernels::FILL).unwrap();
    let y = d.alloc(S0, 64).unwrap();
    d.prepare(S0).unwrap();
    assert_eq!(
        d.launch(S0, fill, dims(16), &[y.write()], &[16, 1])
            .unwrap(),
        Launched::Queued
    );
    d.begin_capture(S0).unwrap();
    assert_eq!(
        d.launch(S0, fill, dims(16), &[y.write()], &[16, 1])
            .unwrap(),
        Launched::Queued
    );
    let g = d.end_capture(S0).unwrap();
    fail_next(&d, Site::LaunchGraph);
    assert!(matches!(d.replay(&g), Err(Error::Failed { .. })));
    match d.read(S0, &y) {
        Err(Error::Tainted(r)) => {
            assert!(
                r.root.contains(&format!("replay of graph #{}", g.id().0)),
                "{r}"
            );
            assert!(!r.root.contains("kernel"), "{r}");
        }
        other => panic!("read after a failed replay: {other:?}"),
    }
}
