//! Regression tests of the device on the mock (real bytes, the hazard
//! checker, fault injection): each failed before its fix.

use streamcore::device::{Device, DeviceConfig, Launched};
use streamcore::error::Error;
use streamcore::platform::ErrorKind;
use streamcore::stream::{CaptureError, DoomReason, StreamId};
use streamcore_mock::fault::{Effect, FaultInjector, FaultPlan, Rule, Site, Trigger};
use streamcore_mock::{MockConfig, MockPlatform};
use streamcore_tests::kernels::{self, bytes, dims, words};

const S0: StreamId = StreamId(0);
const S1: StreamId = StreamId(1);

type Mock = FaultInjector<MockPlatform>;

fn device(streams: u16) -> Device<Mock> {
    let mock = MockPlatform::with_config(MockConfig::default().seed(7)).unwrap();
    kernels::register_mock(&mock);
    Device::new(
        FaultInjector::new(mock, FaultPlan::new()),
        DeviceConfig::with_streams(streams),
    )
    .unwrap()
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

/// A device of 1 MiB (pages of up to 64 KiB, 256 KiB of pinned host
/// memory) with a layout sized for it: a small pool and exclusive pages.
fn small_device() -> Device<Mock> {
    use streamcore::memory::{MemoryLayout, MemoryPolicy, PoolSpec};
    let config = MockConfig::default()
        .seed(7)
        .total_memory(1 << 20)
        .max_page_size(64 << 10)
        .host_memory(256 << 10);
    let mock = MockPlatform::with_config(config).unwrap();
    kernels::register_mock(&mock);
    let layout = MemoryLayout::new(
        &[
            PoolSpec::small(4 << 10, 1 << 10),
            PoolSpec::exclusive(64 << 10),
        ],
        256,
        MemoryPolicy::default(),
    )
    .unwrap();
    Device::new(
        FaultInjector::new(mock, FaultPlan::new()),
        DeviceConfig::with_streams(1).layout(layout),
    )
    .unwrap()
}

/// Issue 14 item 1: a read whose host synchronization fails must not free
/// its staging slice while the copy into it may still be queued — the next
/// upload would reuse it and the queued copy overwrite it.
#[test]
fn a_read_whose_sync_fails_keeps_its_staging_until_a_fence() {
    let d = device(1);
    let n = 64;
    let a = d.upload(S0, &bytes(&vec![1; n])).unwrap();
    d.sync_all().unwrap();
    fail_next(&d, Site::Synchronize);
    assert!(matches!(
        d.read(S0, &a),
        Err(Error::Platform {
            op: "synchronize",
            ..
        })
    ));
    let b = d.upload(S0, &bytes(&vec![2; n])).unwrap();
    assert_eq!(words(&d.read(S0, &b).unwrap()), vec![2; n]);
    assert_eq!(words(&d.read(S0, &a).unwrap()), vec![1; n]);
    drop((a, b));
    d.sync_all().unwrap();
    assert_eq!(d.census().deferred, 0, "the staging slice came back");
    assert_no_hazards(&d);
}

/// Issue 14 item 1, second half: the event recorded after the copy fails.
#[test]
fn a_read_whose_event_record_fails_keeps_its_staging_until_a_fence() {
    let d = device(1);
    let n = 64;
    let a = d.upload(S0, &bytes(&vec![3; n])).unwrap();
    d.sync_all().unwrap();
    fail_next(&d, Site::Record);
    assert!(matches!(
        d.read(S0, &a),
        Err(Error::Platform { op: "record", .. })
    ));
    let b = d.upload(S0, &bytes(&vec![4; n])).unwrap();
    assert_eq!(words(&d.read(S0, &b).unwrap()), vec![4; n]);
    assert_eq!(words(&d.read(S0, &a).unwrap()), vec![3; n]);
    drop((a, b));
    d.sync_all().unwrap();
    assert_eq!(d.census().deferred, 0);
    assert_no_hazards(&d);
}

/// Issue 14 item 2, a refusal that is not a failure: work asked for inside
/// the window failed on the platform (dooming it), so nothing the window
/// recorded ran — its outputs are claimed by a new failure naming the
/// refusal, not left holding the warm-up's bytes.
#[test]
fn a_window_refused_for_a_platform_error_claims_its_outputs() {
    let d = device(1);
    let scale = d.load_kernel(&kernels::SCALE).unwrap();
    let n = 64;
    let x = d.upload(S0, &bytes(&vec![1; n])).unwrap();
    let y = d.alloc(S0, 4 * n as u64).unwrap();
    let z = d.alloc(S0, 4 * n as u64).unwrap();
    let info = [n as u64, 5];
    d.prepare(S0).unwrap();
    let run = |d: &Device<Mock>| d.launch(S0, scale, dims(n), &[x.read(), y.write()], &info);
    assert_eq!(run(&d).unwrap(), Launched::Queued);
    d.write(S0, &z, &bytes(&vec![9; n])).unwrap();
    d.begin_capture(S0).unwrap();
    assert_eq!(run(&d).unwrap(), Launched::Queued);
    // The write's staging copy into pinned memory fails: the window dooms.
    fail_next(&d, Site::HostWrite);
    assert!(d.write(S0, &z, &bytes(&vec![7; n])).is_err());
    assert!(matches!(
        d.end_capture(S0),
        Err(Error::Capture(CaptureError::Doomed(
            DoomReason::Platform { .. }
        )))
    ));
    let failure = d.failure_of(&y).expect("the window's output is claimed");
    match d.read(S0, &y) {
        Err(Error::Tainted(r)) => {
            assert_eq!(r.failure, failure);
            assert!(r.root.contains("capture window on stream 0"), "{r}");
        }
        other => panic!("read of a refused window's output: {other:?}"),
    }
    // `z`'s write failed before it was queued: the bytes it would have
    // written are claimed by a failure of their own, naming the copy, so
    // a read reports it instead of the 9s from before.
    let fz = d
        .failure_of(&z)
        .expect("the refused write's bytes are claimed");
    assert_ne!(fz, failure);
    match d.read(S0, &z) {
        Err(Error::Tainted(r)) => {
            assert_eq!(r.failure, fz);
            assert!(r.root.contains("copy from host to device"), "{r}");
        }
        other => panic!("read of a refused write's bytes: {other:?}"),
    }
    // Rewriting clears the claims.
    assert_eq!(run(&d).unwrap(), Launched::Queued);
    assert_eq!(words(&d.read(S0, &y).unwrap()), vec![5; n]);
    d.write(S0, &z, &bytes(&vec![7; n])).unwrap();
    assert_eq!(words(&d.read(S0, &z).unwrap()), vec![7; n]);
    drop((x, y, z));
    d.sync_all().unwrap();
    assert_eq!(d.census().failures, 0);
    assert_no_hazards(&d);
}

/// Issue 14 item 9: the error of a dropped graph's deferred destroy is not
/// charged to the next, unrelated call; it is counted and kept for the user.
#[test]
fn a_failed_graph_destroy_is_reported_where_the_user_looks() {
    let d = device(2);
    let fill = d.load_kernel(&kernels::FILL).unwrap();
    let n = 16;
    let out = d.alloc(S0, 4 * n as u64).unwrap();
    d.prepare(S0).unwrap();
    let run = |d: &Device<Mock>| d.launch(S0, fill, dims(n), &[out.write()], &[n as u64, 3]);
    assert_eq!(run(&d).unwrap(), Launched::Queued);
    d.begin_capture(S0).unwrap();
    assert_eq!(run(&d).unwrap(), Launched::Queued);
    let g = d.end_capture(S0).unwrap();
    fail_next(&d, Site::DestroyGraph);
    drop(g);
    let other = d.alloc(S1, 256).expect("an unrelated allocation succeeds");
    assert_eq!(d.stats().release_errors, 1);
    match d.take_release_error() {
        Some(Error::Platform {
            op: "destroy_graph",
            ..
        }) => {}
        other => panic!("expected the destroy_graph error, got {other:?}"),
    }
    assert!(d.take_release_error().is_none(), "taken once");
    drop((out, other));
    d.sync_all().unwrap();
    assert_eq!(d.census().graphs, 0);
    assert_no_hazards(&d);
}

/// Issue 14 item 11: a launch's info words reach pinned memory in one host
/// write, not one per word.
#[test]
fn info_words_are_staged_with_one_host_write() {
    let d = device(1);
    let fill = d.load_kernel(&kernels::FILL).unwrap();
    let n = 16;
    let out = d.alloc(S0, 4 * n as u64).unwrap();
    let mut info = vec![0u64; 4096];
    info[0] = n as u64;
    info[1] = 6;
    let writes = |d: &Device<Mock>| d.with_platform(|p| p.inner().counters().host_writes);
    let before = writes(&d);
    assert_eq!(
        d.launch(S0, fill, dims(n), &[out.write()], &info).unwrap(),
        Launched::Queued
    );
    assert_eq!(writes(&d) - before, 1, "one host write for 4096 info words");
    assert_eq!(words(&d.read(S0, &out).unwrap()), vec![6; n]);
    drop(out);
    d.sync_all().unwrap();
    assert_no_hazards(&d);
}

/// The staging pool follows the configured layout: a small device sized
/// with a small layout uploads and reads 16 bytes (the staging pool used
/// the default GPU layout — 1 MiB pages and up — whatever the config said,
/// and ran out of pinned memory).
#[test]
fn a_small_device_stages_through_its_own_layout() {
    let d = small_device();
    let b = d.upload(S0, &[7u8; 16]).unwrap();
    assert_eq!(d.read(S0, &b).unwrap(), [7u8; 16]);
    drop(b);
    d.sync_all().unwrap();
    assert_no_hazards(&d);
}

/// A launch whose info words miss the cache takes device memory for them:
/// buffers the user dropped are given back first, as an allocation gives
/// them back (the launch's common path leaves dropped handles to the next
/// operation that takes memory; an info upload is one).
#[test]
fn an_info_upload_takes_back_dropped_buffers_first() {
    let d = small_device();
    let fill = d.load_kernel(&kernels::FILL).unwrap();
    let n = 16;
    let out = d.alloc(S0, 4 * n as u64).unwrap();
    // The device full of buffers no work ever used, then all dropped.
    let mut full = Vec::new();
    let err = loop {
        match d.alloc(S0, 64 << 10) {
            Ok(b) => full.push(b),
            Err(e) => break e,
        }
    };
    assert!(
        matches!(
            err,
            Error::Memory(streamcore::memory::MemoryError::OutOfMemory { .. })
        ),
        "{err}"
    );
    assert!(full.len() >= 8, "{} buffers", full.len());
    drop(full);
    // Info words past the small pool's slices: their upload takes a page
    // of the device's memory.
    let mut info = vec![0u64; 8000];
    info[0] = n as u64;
    info[1] = 9;
    assert_eq!(
        d.launch(S0, fill, dims(n), &[out.write()], &info).unwrap(),
        Launched::Queued
    );
    assert_eq!(words(&d.read(S0, &out).unwrap()), vec![9; n]);
    drop(out);
    d.sync_all().unwrap();
    assert_no_hazards(&d);
}

/// `install_pools` after a buffer was read on another stream and dropped:
/// the caller holds nothing, so the swap goes through the first time. One
/// pass of syncs in stream order left the free that stream 1's use pinned
/// on stream 0 (already synced), and the swap was refused for its bytes.
#[test]
fn install_pools_settles_frees_pinned_across_streams() {
    use streamcore::memory::{LayoutPreset, MemoryLayout};
    let d = device(2);
    let scale = d.load_kernel(&kernels::SCALE).unwrap();
    let n = 16usize;
    {
        let x = d.upload(S0, &bytes(&vec![1; n])).unwrap();
        let y = d.alloc(S1, 4 * n as u64).unwrap();
        let r = d.launch(S1, scale, dims(n), &[x.read(), y.write()], &[n as u64, 2]);
        assert_eq!(r.unwrap(), Launched::Queued);
    }
    let layout = MemoryLayout::preset(LayoutPreset::Sliced, &d.properties());
    d.install_pools(layout).unwrap();
    d.sync_all().unwrap();
    assert_no_hazards(&d);
}

/// A host write into a buffer whose reservation failed is refused with a
/// report that names the write (it said "read of").
#[test]
fn a_write_into_a_buffer_without_memory_is_reported_as_a_write() {
    use streamcore::failure::Refused;
    let mock = MockPlatform::with_config(MockConfig::default().total_memory(1 << 20)).unwrap();
    let d = Device::new(mock, DeviceConfig::with_streams(1)).unwrap();
    let e = d.empty(S0, 2 << 20).unwrap();
    let r = d.write(S0, &e, &vec![0u8; 2 << 20]);
    let Err(Error::Tainted(report)) = r else {
        panic!("{r:?}");
    };
    assert_eq!(report.refused, Refused::Write);
    let text = report.to_string();
    assert!(text.starts_with("write into "), "{text}");
    assert!(text.contains("has no memory"), "{text}");
    let r = d.read(S0, &e);
    let Err(Error::Tainted(report)) = r else {
        panic!("{r:?}");
    };
    assert_eq!(report.refused, Refused::Read);
    assert!(report.to_string().starts_with("read of "));
}
