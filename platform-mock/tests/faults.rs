//! Fault injection through the wrapper, one kind at a time.

mod common;

use common::*;
use streamcore::platform::{
    ErrorKind, GraphCapture, HostStorage, LaunchDims, Platform, PlatformError, Storage,
};
use streamcore_mock::fault::{Effect, FaultError, FaultInjector, FaultPlan, Site, Trigger};
use streamcore_mock::{MockConfig, MockPlatform};

fn wrapped(plan: FaultPlan) -> FaultInjector<MockPlatform> {
    let mock = MockPlatform::with_config(MockConfig::default().seed(1)).unwrap();
    register_kernels(&mock);
    FaultInjector::new(mock, plan)
}

#[test]
fn the_nth_allocation_runs_out_of_memory_and_changes_nothing() {
    let f = wrapped(FaultPlan::new().fail_nth_alloc(2));
    let mut dev = f.device_storage().unwrap();
    let a = dev.alloc(64).unwrap();
    let err = dev.alloc(64).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::OutOfMemory);
    assert!(matches!(
        err,
        FaultError::Injected {
            site: Site::DeviceAlloc,
            ..
        }
    ));
    let c = dev.alloc(64).unwrap();
    assert!(c.0 > a.0);
    assert_eq!(
        f.inner().counters().allocs,
        2,
        "the failed one never reached the device"
    );
    let inj = f.injected();
    assert_eq!(inj.len(), 1);
    assert_eq!(inj[0].effect, Effect::Fail(ErrorKind::OutOfMemory));
    // Host allocations count separately.
    let mut host = f.host_storage().unwrap();
    host.alloc(8).unwrap();
    host.alloc(8).unwrap();
}

#[test]
fn a_failing_kernel_reports_at_launch_and_writes_nothing() {
    let f = wrapped(FaultPlan::new().fail_kernel("fill"));
    let mut s = f.create_stream().unwrap();
    let mut dev = f.device_storage().unwrap();
    let p = dev.alloc(16).unwrap();
    let buf = dr(p, 0, 16);
    f.inner().poke(buf, &bytes_of(&[5; 4])).unwrap();
    let fill = kernel(&f, "fill");
    let err = f
        .launch(&mut s, &fill, fill_dims(9), &[write(buf)])
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Kernel);
    // Other kernels still run.
    let inc = kernel(&f, "inc");
    f.launch(&mut s, &inc, LaunchDims::linear(1, 4), &[read_write(buf)])
        .unwrap();
    let e = f.record(&mut s).unwrap();
    f.synchronize(&e).unwrap();
    assert_eq!(
        words_of(&f.inner().peek(buf).unwrap()),
        vec![6; 4],
        "fill wrote nothing"
    );
    assert_eq!(f.inner().counters().launches, 1);
    assert_eq!(f.injected()[0].kernel.as_deref(), Some("fill"));
    f.inner().assert_no_hazards();
}

#[test]
fn failing_events_and_copies() {
    let plan = FaultPlan::new()
        .fail_nth(Site::Record, 2, ErrorKind::Other)
        .fail_nth(Site::Wait, 1, ErrorKind::Other)
        .fail_nth(Site::Query, 1, ErrorKind::Other)
        .fail_nth(Site::Synchronize, 1, ErrorKind::Other)
        .fail_nth(Site::CopyToHost, 1, ErrorKind::Other);
    let f = wrapped(plan);
    let mut s0 = f.create_stream().unwrap();
    let mut s1 = f.create_stream().unwrap();
    let mut dev = f.device_storage().unwrap();
    let mut host = f.host_storage().unwrap();
    let p = dev.alloc(4).unwrap();
    let h = host.alloc(4).unwrap();
    host.write(h, 0, &[1, 2, 3, 4]).unwrap();
    f.copy_to_device(&mut s0, hr(h, 0, 4), dr(p, 0, 4)).unwrap();
    let e = f.record(&mut s0).unwrap();
    assert_eq!(f.record(&mut s0).unwrap_err().kind(), ErrorKind::Other);
    assert!(f.wait(&mut s1, &e).is_err());
    assert!(f.query(&e).is_err());
    assert!(f.synchronize(&e).is_err());
    f.synchronize(&e).unwrap(); // only the first one fails
    host.write(h, 0, &[0; 4]).unwrap();
    assert!(f.copy_to_host(&mut s0, dr(p, 0, 4), hr(h, 0, 4)).is_err());
    f.inner().run_until_idle();
    assert_eq!(
        f.inner().peek_host(hr(h, 0, 4)).unwrap(),
        vec![0; 4],
        "the failed copy moved nothing"
    );
    let c = f.inner().counters();
    assert_eq!(
        (c.records, c.waits, c.queries, c.syncs, c.copies_to_host),
        (1, 0, 0, 1, 0)
    );
    assert_eq!(f.injected().len(), 5);
}

#[test]
fn a_lost_device_fails_every_later_call() {
    let f = wrapped(FaultPlan::new().lose_device_at(6));
    let mut s = f.create_stream().unwrap(); // 1
    let mut dev = f.device_storage().unwrap(); // 2
    let mut host = f.host_storage().unwrap(); // 3
    let p = dev.alloc(16).unwrap(); // 4
    let h = host.alloc(16).unwrap(); // 5
    let lost = f.record(&mut s).unwrap_err(); // 6
    assert_eq!(lost.kind(), ErrorKind::DeviceLost);
    assert!(f.is_lost());
    let fill = f.inner().load_kernel(&streamcore::platform::KernelSource {
        name: "fill",
        source: "",
        bindings: 1,
    });
    assert!(fill.is_ok(), "the inner platform is untouched");
    let results = [
        f.create_stream().map(|_| ()).unwrap_err().kind(),
        dev.alloc(1).map(|_| ()).unwrap_err().kind(),
        dev.flush().unwrap_err().kind(),
        host.write(h, 0, &[1]).unwrap_err().kind(),
        host.read(h, 0, &mut [0]).unwrap_err().kind(),
        f.copy_device(&mut s, dr(p, 0, 8), dr(p, 8, 8))
            .unwrap_err()
            .kind(),
        f.begin_capture(&mut s).unwrap_err().kind(),
        f.load_kernel(&streamcore::platform::KernelSource {
            name: "fill",
            source: "",
            bindings: 1,
        })
        .map(|_| ())
        .unwrap_err()
        .kind(),
    ];
    assert!(
        results.iter().all(|k| *k == ErrorKind::DeviceLost),
        "{results:?}"
    );
    dev.dealloc(p); // cannot fail, reaches nothing
    assert_eq!(f.inner().counters().deallocs, 0);
    assert_eq!(f.injected().len(), 1);
    assert_eq!(f.calls(), 14);

    let by_hand = wrapped(FaultPlan::new());
    by_hand.lose_device();
    assert_eq!(
        by_hand.create_stream().unwrap_err().kind(),
        ErrorKind::DeviceLost
    );
}

fn random_run(seed: u64, per_million: u32) -> Vec<u64> {
    let f = wrapped(FaultPlan::seeded(seed).random(
        Site::DeviceAlloc,
        per_million,
        ErrorKind::OutOfMemory,
    ));
    let mut dev = f.device_storage().unwrap();
    for _ in 0..200 {
        let _ = dev.alloc(256);
    }
    f.injected().iter().map(|i| i.call).collect()
}

#[test]
fn seeded_random_faults_are_reproducible() {
    let a = random_run(7, 200_000);
    assert_eq!(a, random_run(7, 200_000));
    assert_ne!(a, random_run(8, 200_000));
    assert!(a.len() > 10 && a.len() < 80, "about 20%: {}", a.len());
    assert!(random_run(7, 0).is_empty());
    assert_eq!(random_run(7, 1_000_000).len(), 200);
}

#[test]
fn triggers_count_only_matching_calls_and_the_first_firing_rule_wins() {
    let plan = FaultPlan::new()
        .rule(
            Site::Launch,
            Trigger::From(3),
            Effect::Fail(ErrorKind::Kernel),
        )
        .rule(
            Site::Kernel("inc".into()),
            Trigger::Nth(1),
            Effect::Fail(ErrorKind::InvalidValue),
        )
        .rule(Site::Any, Trigger::Nth(1000), Effect::LoseDevice);
    let f = wrapped(plan);
    let mut dev = f.device_storage().unwrap();
    let p = dev.alloc(4).unwrap();
    let inc = kernel(&f, "inc");
    let fill = kernel(&f, "fill");
    let mut s = f.create_stream().unwrap();
    let mut launch = |k| f.launch(&mut s, k, fill_dims(1), &[read_write(dr(p, 0, 4))]);
    assert_eq!(launch(&fill).map_err(|e| e.kind()), Ok(()));
    assert_eq!(
        launch(&inc).map_err(|e| e.kind()),
        Err(ErrorKind::InvalidValue)
    );
    assert_eq!(launch(&fill).map_err(|e| e.kind()), Err(ErrorKind::Kernel));
    assert_eq!(launch(&inc).map_err(|e| e.kind()), Err(ErrorKind::Kernel));
}

#[test]
fn the_wrapper_is_a_platform_for_generic_code() {
    fn round_trip<P: Platform>(p: &P) -> Vec<u8> {
        let mut s = p.create_stream().ok().unwrap();
        let mut dev = p.device_storage().ok().unwrap();
        let mut host = p.host_storage().ok().unwrap();
        let d = dev.alloc(4).ok().unwrap();
        let h = host.alloc(4).ok().unwrap();
        host.write(h, 0, &[4, 3, 2, 1]).ok().unwrap();
        p.copy_to_device(&mut s, hr(h, 0, 4), dr(d, 0, 4))
            .ok()
            .unwrap();
        let h2 = host.alloc(4).ok().unwrap();
        p.copy_to_host(&mut s, dr(d, 0, 4), hr(h2, 0, 4))
            .ok()
            .unwrap();
        let e = p.record(&mut s).ok().unwrap();
        p.synchronize(&e).ok().unwrap();
        let mut out = vec![0; 4];
        host.read(h2, 0, &mut out).ok().unwrap();
        out
    }
    let f = wrapped(FaultPlan::new());
    assert_eq!(round_trip(&f), vec![4, 3, 2, 1]);
    assert_eq!(round_trip(f.inner()), vec![4, 3, 2, 1]);
    f.inner().assert_no_hazards();
}
