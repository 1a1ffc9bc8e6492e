//! A device over a platform whose properties sit at the edge of `u64`: a
//! typed answer for everything, never a panic.

use streamcore::device::{Device, DeviceConfig};
use streamcore::memory::{LayoutError, MemoryLayout};
use streamcore::stream::StreamId;
use streamcore_mock::{MockConfig, MockPlatform};

/// A platform reporting a largest page of `u64::MAX` used to panic
/// `Device::new` (debug) while it rounded the pools' pages.
#[test]
fn a_largest_page_of_u64_max_gives_a_working_device() {
    let config = MockConfig::default()
        .total_memory(1 << 30)
        .max_page_size(u64::MAX);
    let mock = MockPlatform::with_config(config).unwrap();
    let device = Device::new(mock, DeviceConfig::default()).unwrap();
    let s = StreamId(0);
    let a = device.upload(s, &[7u8; 3000]).unwrap();
    let b = device.alloc(s, 40 << 20).unwrap();
    assert_eq!(device.read(s, &a).unwrap(), vec![7u8; 3000]);
    drop(b);
    assert!(
        device.alloc(s, 2 << 30).is_err(),
        "past the device's memory"
    );
}

/// An alignment of 2^63 has no layout: `try_for_device` says so, the
/// infallible default falls back to 256, and a device over such a platform
/// is refused at construction with a typed error (it could allocate
/// nothing).
#[test]
fn an_alignment_of_2_pow_63_is_a_typed_error() {
    use streamcore::platform::Platform;
    let config = MockConfig::default().alignment(1 << 63);
    let mock = MockPlatform::with_config(config).unwrap();
    let props = mock.properties();
    assert_eq!(
        MemoryLayout::try_for_device(&props),
        Err(LayoutError::BadAlignment { alignment: 1 << 63 })
    );
    assert_eq!(MemoryLayout::for_device(&props).alignment(), 256);
    let Err(e) = Device::new(mock, DeviceConfig::default()) else {
        panic!("a device over pages aligned to 2^63 was built");
    };
    assert!(format!("{e}").contains("alignment"), "{e}");
}

/// The default pools scale with the device's memory: a device of a few
/// hundred KiB with two streams serves both streams, the staging pool and a
/// quarter of its memory in one buffer (its pools' pages used to be 1 MiB
/// whatever the device, so a 256 KiB device could allocate nothing).
#[test]
fn a_small_device_serves_every_stream_with_the_default_layout() {
    for vm in [false, true] {
        for total in [256u64 << 10, 1 << 20] {
            let mut config = MockConfig::default().total_memory(total).host_memory(total);
            if vm {
                config = config.virtual_memory(16 << 10);
            }
            let mock = MockPlatform::with_config(config).unwrap();
            let device = Device::new(mock, DeviceConfig::with_streams(2)).unwrap();
            let a = device.upload(StreamId(0), &[7u8; 16]).unwrap();
            let b = device.alloc(StreamId(1), 100).unwrap();
            let c = device.alloc(StreamId(0), total / 4).unwrap();
            assert_eq!(device.read(StreamId(0), &a).unwrap(), vec![7u8; 16]);
            drop((a, b, c));
            assert!(
                device.alloc(StreamId(0), 2 * total).is_err(),
                "past the device's memory"
            );
        }
    }
}
