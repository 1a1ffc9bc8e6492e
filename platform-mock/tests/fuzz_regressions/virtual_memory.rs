//! Reservations over the mock's virtual memory.

/// Found by the harness over the mock's virtual memory: with a platform
/// reporting pages of `2^63` bytes, the sliced preset's largest pool carves
/// pages of `MAX_PAGE_SIZE` from reservations, and a reservation of 1 TiB on
/// a 1 GiB device was placed with only 1 MiB committed (without virtual
/// memory the same request is a typed out-of-memory error).
#[test]
fn a_slice_larger_than_the_memory_is_never_placed_uncommitted() {
    use streamcore::device::{Device, DeviceConfig};
    use streamcore::memory::{LayoutPreset, MemoryLayout};
    use streamcore::platform::DeviceProperties;
    use streamcore::stream::StreamId;
    use streamcore_mock::fault::{FaultInjector, FaultPlan};
    use streamcore_mock::{MemoryKind, MockConfig, MockPlatform};

    let mock = MockPlatform::with_config(
        MockConfig::default()
            .total_memory(1 << 30)
            .virtual_memory(64 << 10),
    )
    .unwrap();
    let props = DeviceProperties {
        total_memory: 1 << 30,
        max_page_size: 1 << 63,
        alignment: 1 << 63,
        integrated: false,
    };
    let platform = FaultInjector::new(mock.clone(), FaultPlan::new());
    platform.report_properties(Some(props));
    let layout = MemoryLayout::preset(LayoutPreset::Sliced, &props);
    let device = Device::new(platform, DeviceConfig::with_streams(1).layout(layout)).unwrap();
    match device.alloc(StreamId(0), 1 << 40) {
        Err(e) => assert!(
            matches!(e, streamcore::error::Error::Memory(_)),
            "a typed memory error: {e}"
        ),
        Ok(b) => panic!(
            "1 TiB placed at {:?} on a 1 GiB device ({} bytes committed)",
            device.range_of(&b),
            mock.memory_used(MemoryKind::Device)
        ),
    }
}
