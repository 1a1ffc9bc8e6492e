//! The mock's hazard reports name a device's streams as the device does:
//! the device creates its platform streams lazily, in the order the
//! program first uses them, and a report about `StreamId(2)` says
//! `stream 2` even when that stream was the platform's first.

use streamcore::device::{Device, DeviceConfig, Launched};
use streamcore::stream::StreamId;
use streamcore_mock::{Agent, HazardKind, MockConfig, MockPlatform};
use streamcore_tests::kernels::{self, dims};

const N: usize = 64;

#[test]
fn hazards_name_the_devices_stream_numbers() {
    let mock = MockPlatform::with_config(MockConfig::default().seed(7)).unwrap();
    kernels::register_mock(&mock);
    let d = Device::new(mock, DeviceConfig::with_streams(3)).unwrap();
    let scale = d.load_kernel(&kernels::SCALE).unwrap();
    // Streams first used in the order 2, 0: each reads bytes nothing wrote.
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
    let hazards = d.with_platform(|p| p.hazards());
    let named: Vec<Agent> = hazards
        .iter()
        .filter(|h| h.kind == HazardKind::UninitializedRead)
        .map(|h| h.current.agent)
        .collect();
    assert_eq!(
        named,
        vec![Agent::Stream(2), Agent::Stream(0)],
        "{hazards:?}"
    );
    let text = format!("{}", hazards[0]);
    assert!(text.contains("on stream 2"), "{text}");
    // `take_hazards` names them the same way.
    let taken = d.with_platform(|p| p.take_hazards());
    assert_eq!(taken, hazards);
}
