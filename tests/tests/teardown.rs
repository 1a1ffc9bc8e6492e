//! A device that is dropped gives every byte back to its platform: device
//! and host memory alike, whatever its buffers still held, over plain and
//! virtual-memory storages — the mock's storages free nothing on their own
//! when dropped, as a firmware allocator would not.

use streamcore::device::{Device, DeviceConfig};
use streamcore::platform::LaunchDims;
use streamcore::stream::StreamId;
use streamcore_mock::{MemoryKind, MockConfig, MockPlatform};

const MIB: u64 = 1 << 20;

fn platforms() -> [(&'static str, MockPlatform); 2] {
    let config = || MockConfig::default().seed(5).total_memory(1 << 30);
    [
        ("plain", MockPlatform::with_config(config()).unwrap()),
        (
            "virtual memory",
            MockPlatform::with_config(config().virtual_memory(2 * MIB)).unwrap(),
        ),
    ]
}

fn used(m: &MockPlatform) -> (u64, u64) {
    (
        m.memory_used(MemoryKind::Device),
        m.memory_used(MemoryKind::Host),
    )
}

/// Buffers of every size class, a copy out, a launch across two streams,
/// one handle that outlives the device, nothing synced or cleaned up by
/// hand: once the device is dropped, nothing is in use on the platform.
#[test]
fn a_dropped_device_leaves_no_memory_in_use() {
    for (name, mock) in platforms() {
        streamcore_kernels::register_mock(&mock);
        let d = Device::new(mock.clone(), DeviceConfig::with_streams(2)).unwrap();
        let (s0, s1) = (StreamId(0), StreamId(1));
        let scale = d.load_kernel(&streamcore_kernels::SCALE).unwrap();
        let x = d.upload(s1, &streamcore_kernels::bytes(&[3; 256])).unwrap();
        let y = d.alloc(s0, 1024).unwrap();
        let big = d.alloc(s0, 64 * MIB).unwrap();
        let small = d.alloc(s1, 16).unwrap();
        let r = d.launch(
            s0,
            scale,
            LaunchDims::linear(1, 256),
            &[x.read(), y.write()],
            &[256, 2],
        );
        assert!(r.is_ok(), "{name}: {r:?}");
        assert_eq!(
            streamcore_kernels::words(&d.read(s0, &y).unwrap()),
            vec![6; 256]
        );
        drop((x, big));
        let (dev, host) = used(&mock);
        assert!(dev >= 64 * MIB && host > 0, "{name}: in use while alive");
        drop(d);
        assert_eq!(used(&mock), (0, 0), "{name}: in use after the drop");
        // The handles that outlived the device give nothing back twice.
        drop((y, small));
        assert_eq!(used(&mock), (0, 0), "{name}: after the last handles");
    }
}

/// Devices made and dropped one after another on one platform, each
/// taking a quarter of its memory, never run it out.
#[test]
fn devices_made_and_dropped_in_turn_never_run_out() {
    for (name, mock) in platforms() {
        for i in 0..40 {
            let d = Device::new(mock.clone(), DeviceConfig::with_streams(1)).unwrap();
            let b = d.alloc(StreamId(0), 256 * MIB);
            assert!(b.is_ok(), "{name}: device {i}: {:?}", b.err());
        }
        assert_eq!(used(&mock), (0, 0), "{name}");
    }
}
