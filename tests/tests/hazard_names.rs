//! The mock's hazard reports name a device's streams as the device does:
//! the device creates its platform streams lazily, in the order the
//! program first uses them, and a report about `StreamId(2)` says
//! `stream 2` even when that stream was the platform's first — also
//! through a platform that wraps the mock (the fault injector).

use streamcore::device::{Device, DeviceConfig, Launched};
use streamcore::platform::Platform;
use streamcore::stream::StreamId;
use streamcore_mock::fault::{FaultInjector, FaultPlan};
use streamcore_mock::{Agent, Hazard, HazardKind, LogOp, MockConfig, MockPlatform};
use streamcore_tests::kernels::{self, dims};

const N: usize = 64;

fn mock() -> MockPlatform {
    let mock = MockPlatform::with_config(MockConfig::default().seed(7)).unwrap();
    kernels::register_mock(&mock);
    mock
}

/// A device over `platform` whose streams 2, then 0, each launch once
/// (reading bytes nothing wrote) and sync: the platform creates its stream
/// 0 for `StreamId(2)` and its stream 1 for `StreamId(0)`.
fn first_use_2_then_0<P: Platform>(platform: P) -> Device<P>
where
    P::Error: std::fmt::Debug,
{
    let d = Device::new(platform, DeviceConfig::with_streams(3)).unwrap();
    let scale = d.load_kernel(&kernels::SCALE).unwrap();
    for s in [StreamId(2), StreamId(0)] {
        let src = d.alloc(s, (N * 4) as u64).unwrap();
        let dst = d.alloc(s, (N * 4) as u64).unwrap();
        let r = d.launch(
            s,
            scale,
            dims(N),
            &[src.read(), dst.write()],
            &[N as u64, 3],
        );
        assert_eq!(r.unwrap(), Launched::Queued);
        d.sync(s).unwrap();
    }
    d
}

/// Streams first used in the order 2, 0 (`first_use_2_then_0`); checks
/// what the hazards (`hazards`, then `take`) name.
fn check<P: Platform>(
    platform: P,
    hazards: impl Fn(&P) -> Vec<Hazard>,
    take: impl Fn(&P) -> Vec<Hazard>,
) where
    P::Error: std::fmt::Debug,
{
    let d = first_use_2_then_0(platform);
    let found = d.with_platform(&hazards);
    let named: Vec<Agent> = found
        .iter()
        .filter(|h| h.kind == HazardKind::UninitializedRead)
        .map(|h| h.current.agent)
        .collect();
    assert_eq!(named, vec![Agent::Stream(2), Agent::Stream(0)], "{found:?}");
    let text = format!("{}", found[0]);
    assert!(text.contains("on stream 2"), "{text}");
    // `take_hazards` names them the same way.
    let taken = d.with_platform(&take);
    assert_eq!(taken, found);
}

#[test]
fn hazards_name_the_devices_stream_numbers() {
    check(mock(), MockPlatform::hazards, MockPlatform::take_hazards);
}

#[test]
fn the_event_log_names_them_through_device_stream() {
    let d = first_use_2_then_0(mock());
    let (log, names) = d.with_platform(|m| {
        let log = m.event_log();
        let names: Vec<Option<StreamId>> = (0..4).map(|s| m.device_stream(s)).collect();
        (log, names)
    });
    assert_eq!(
        names,
        vec![Some(StreamId(2)), Some(StreamId(0)), None, None],
        "two streams created, in first-use order"
    );
    let launched: Vec<u32> = log
        .iter()
        .filter(|e| matches!(e.what, LogOp::Launch { .. }))
        .map(|e| e.stream)
        .collect();
    assert_eq!(launched, vec![0, 1], "{log:?}");
    // A stream made by `create_stream` itself has no device number.
    let direct = d.with_platform(|m| {
        let s = m.create_stream().unwrap();
        m.device_stream(s.id())
    });
    assert_eq!(direct, None);
}

#[test]
fn through_the_fault_injector_too() {
    check(
        FaultInjector::new(mock(), FaultPlan::new()),
        |f| f.inner().hazards(),
        |f| f.inner().take_hazards(),
    );
}
