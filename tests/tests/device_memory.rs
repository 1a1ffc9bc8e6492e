//! The device on the mock, which behaves as a real driver does where it
//! matters here: an allocation on any stream while one records a capture
//! invalidates that capture (drivers capture device-wide), memory one
//! stream holds idle is memory another cannot have, and a kernel that
//! faults while it runs loses the device.

use streamcore::device::{Device, DeviceConfig, Launched};
use streamcore::error::Error;
use streamcore::memory::MemoryError;
use streamcore::stream::StreamId;
use streamcore_mock::{MockConfig, MockPlatform};
use streamcore_tests::kernels::{self, bytes, dims, words};

const S0: StreamId = StreamId(0);
const S1: StreamId = StreamId(1);
const MIB: u64 = 1 << 20;

/// The mock plain and with virtual memory, 512 MiB of device memory.
fn devices() -> [(&'static str, Device<MockPlatform>); 2] {
    let config = || MockConfig::default().seed(11).total_memory(512 * MIB);
    let make = |c: MockConfig| {
        let mock = MockPlatform::with_config(c).unwrap();
        kernels::register_mock(&mock);
        Device::new(mock, DeviceConfig::with_streams(2)).unwrap()
    };
    [
        ("plain", make(config())),
        ("virtual memory", make(config().virtual_memory(2 * MIB))),
    ]
}

/// While stream 0 records, an allocation on stream 1 that needs new
/// storage is refused with a typed error and the capture is untouched: it
/// seals, replays and computes; one that a page stream 1 holds serves goes
/// through; once the capture ended, stream 1 grows again. (Before the fix
/// the storage was asked and the driver invalidated the capture.)
#[test]
fn an_allocation_elsewhere_during_a_capture_is_refused_and_the_capture_survives() {
    for (name, d) in devices() {
        let n = 256usize;
        let scale = d.load_kernel(&kernels::SCALE).unwrap();
        let x = d.upload(S0, &bytes(&vec![5; n])).unwrap();
        let y = d.alloc(S0, 4 * n as u64).unwrap();
        // Stream 1 holds a pool page with room for another small buffer.
        let keep = d.alloc(S1, 4096).unwrap();
        d.sync_all().unwrap();
        let run = |k: u64| d.launch(S0, scale, dims(n), &[x.read(), y.write()], &[n as u64, k]);
        d.prepare(S0).unwrap();
        assert_eq!(run(2).unwrap(), Launched::Queued);
        d.begin_capture(S0).unwrap();
        let refused = d.alloc(S1, 64 * MIB);
        assert!(
            matches!(
                refused,
                Err(Error::Memory(MemoryError::CaptureElsewhere { .. }))
            ),
            "{name}: {refused:?}"
        );
        let served = d.alloc(S1, 4096);
        assert!(
            served.is_ok(),
            "{name}: from what stream 1 holds: {served:?}"
        );
        assert_eq!(run(3).unwrap(), Launched::Queued);
        let graph = d.end_capture(S0);
        assert!(
            graph.is_ok(),
            "{name}: the capture survived: {:?}",
            graph.err()
        );
        assert_eq!(d.replay(&graph.unwrap()).unwrap(), Launched::Queued);
        assert_eq!(words(&d.read(S0, &y).unwrap()), vec![15; n], "{name}");
        assert!(d.alloc(S1, 64 * MIB).is_ok(), "{name}: after the capture");
        drop(keep);
    }
}

/// Memory one stream filled and freed serves another stream's request:
/// out of memory gives back the idle pages of every stream before it
/// fails. (Before the fix only the requesting stream's were, and the
/// request failed with stream 0 holding the device idle.)
#[test]
fn out_of_memory_gives_back_every_streams_idle_pages_first() {
    // Buffers of 32 MiB on stream 0 until the device is full.
    let fill = |d: &Device<MockPlatform>| {
        std::iter::from_fn(|| d.alloc(S0, 32 * MIB).ok()).collect::<Vec<_>>()
    };
    for (name, d) in devices() {
        let held = fill(&d);
        assert!(
            held.len() >= 8,
            "{name}: filled with {} buffers",
            held.len()
        );
        drop(held);
        d.sync_all().unwrap();
        let other = d.alloc(S1, 64 * MIB);
        assert!(other.is_ok(), "{name}: {:?}", other.err());
        // And back: stream 1's idle memory serves stream 0.
        drop(other);
        d.sync_all().unwrap();
        let again = fill(&d);
        assert!(
            again.len() >= 8,
            "{name}: stream 0 refilled with {}",
            again.len()
        );
    }
}

/// A mock kernel whose closure panics while it runs is a kernel fault, as
/// a real device's: its outputs are not written, the call that ran it and
/// every later one fail with `DeviceLost`, and dropping the device with
/// more launches of it queued neither panics nor aborts the process.
/// (Before, the panic unwound out of whatever call ran the kernel, and the
/// drop's synchronize ran the next queued one: a panic during a panic.)
#[test]
fn a_kernel_that_panics_loses_the_device_without_aborting() {
    use streamcore::platform::{ErrorKind, LaunchDims};
    let mock = MockPlatform::with_config(MockConfig::default().seed(3)).unwrap();
    mock.register_kernel("overflows", |_, args| {
        // What an arithmetic bug in a test's kernel does in debug builds.
        let x = args[0].to_u32s()[0];
        let y = x.checked_add(u32::MAX).expect("overflow");
        args[0].write_u32s(&[y]);
    });
    let d = Device::new(mock.clone(), DeviceConfig::with_streams(1)).unwrap();
    let k = d
        .load_kernel(&streamcore::platform::KernelSource {
            name: "overflows",
            source: "",
            bindings: 1,
        })
        .unwrap();
    let x = d.upload(S0, &bytes(&[7; 4])).unwrap();
    let lost = |e: &Error<streamcore_mock::MockError>| match e {
        Error::Platform { source, .. } => source.kind() == ErrorKind::DeviceLost,
        Error::Failed { kind, .. } => *kind == ErrorKind::DeviceLost,
        _ => false,
    };
    // The first is queued; once the mock has run it, every call says the
    // device is lost.
    let first = d.launch(S0, k, LaunchDims::linear(1, 4), &[x.read_write()], &[]);
    assert!(first.is_ok(), "{first:?}");
    for _ in 0..3 {
        let r = d.launch(S0, k, LaunchDims::linear(1, 4), &[x.read_write()], &[]);
        assert!(r.as_ref().map_or_else(lost, |_| true), "{r:?}");
    }
    let synced = d.sync(S0);
    assert!(synced.as_ref().is_err_and(lost), "{synced:?}");
    let again = d.read(S0, &x);
    assert!(again.is_err(), "{again:?}");
    drop(d);
    drop(x);
}
