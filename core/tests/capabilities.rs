//! Platform capabilities: a platform without graph capture implements
//! `Platform` with `type Capture = NoGraphs;` and nothing else, runs every
//! non-capture call, and the device refuses the capture calls with a typed
//! `NotSupported` that changes nothing. A platform whose declaration and
//! `capture()` disagree is treated as having no capture.

use streamcore::Error;
use streamcore::device::{Device, DeviceConfig, Launched};
use streamcore::null::{Null, NullError, NullStorage};
use streamcore::platform::{
    Binding, Capabilities, DeviceProperties, DeviceRange, GraphCapture, HostRange, KernelSource,
    LaunchDims, NoGraphs, Platform,
};
use streamcore::stream::{Phase, StreamId};

/// The null platform with its capture switched by two knobs: what it
/// declares, and whether `capture()` hands out its `GraphCapture`.
struct Knobs {
    declared: Capabilities,
    provides_capture: bool,
}

/// A platform without graphs: the null platform's calls, `NoGraphs` capture.
struct Graphless;

macro_rules! delegate_to_null {
    () => {
        type Stream = ();
        type Event = ();
        type Storage = NullStorage;
        type HostStorage = NullStorage;
        type Kernel = ();
        type Error = NullError;

        fn properties(&self) -> DeviceProperties {
            Null.properties()
        }
        fn create_stream(&self) -> Result<(), NullError> {
            Null.create_stream()
        }
        fn device_storage(&self) -> Result<NullStorage, NullError> {
            Null.device_storage()
        }
        fn host_storage(&self) -> Result<NullStorage, NullError> {
            Null.host_storage()
        }
        fn record(&self, s: &mut ()) -> Result<(), NullError> {
            Null.record(s)
        }
        fn wait(&self, s: &mut (), e: &()) -> Result<(), NullError> {
            Null.wait(s, e)
        }
        fn query(&self, e: &()) -> Result<bool, NullError> {
            Null.query(e)
        }
        fn synchronize(&self, e: &()) -> Result<(), NullError> {
            Null.synchronize(e)
        }
        fn copy_to_device(
            &self,
            s: &mut (),
            a: HostRange,
            b: DeviceRange,
        ) -> Result<(), NullError> {
            Null.copy_to_device(s, a, b)
        }
        fn copy_to_host(&self, s: &mut (), a: DeviceRange, b: HostRange) -> Result<(), NullError> {
            Null.copy_to_host(s, a, b)
        }
        fn copy_device(&self, s: &mut (), a: DeviceRange, b: DeviceRange) -> Result<(), NullError> {
            Null.copy_device(s, a, b)
        }
        fn load_kernel(&self, k: &KernelSource<'_>) -> Result<(), NullError> {
            Null.load_kernel(k)
        }
        fn launch(
            &self,
            s: &mut (),
            k: &(),
            d: LaunchDims,
            b: &[Binding],
        ) -> Result<(), NullError> {
            Null.launch(s, k, d, b)
        }
    };
}

impl Platform for Graphless {
    type Capture = NoGraphs;
    delegate_to_null!();
    fn capabilities(&self) -> Capabilities {
        Capabilities::HOST_VISIBLE_DEVICE_MEMORY
    }
}

impl Platform for Knobs {
    type Capture = Self;
    delegate_to_null!();
    fn capabilities(&self) -> Capabilities {
        self.declared
    }
    fn capture(&self) -> Option<&Self> {
        self.provides_capture.then_some(self)
    }
}

impl GraphCapture<Knobs> for Knobs {
    type Graph = ();
    fn begin_capture(&self, s: &mut ()) -> Result<(), NullError> {
        Null.begin_capture(s)
    }
    fn end_capture(&self, s: &mut ()) -> Result<(), NullError> {
        Null.end_capture(s)
    }
    fn launch_graph(&self, s: &mut (), g: &()) -> Result<(), NullError> {
        Null.launch_graph(s, g)
    }
    fn destroy_graph(&self, g: ()) -> Result<(), NullError> {
        Null.destroy_graph(g)
    }
}

const K: KernelSource<'static> = KernelSource {
    name: "k",
    source: "",
    bindings: 3,
};

fn assert_not_supported<T: core::fmt::Debug>(r: Result<T, Error<NullError>>, op: &str) {
    match r {
        Err(Error::NotSupported { op: got, needs }) => {
            assert_eq!(got, op);
            assert_eq!(needs, Capabilities::GRAPH_CAPTURE);
        }
        other => panic!("{op}: expected NotSupported, got {other:?}"),
    }
}

/// Every capture entry point refuses; nothing about the stream changes.
fn capture_calls_refused<P: Platform<Error = NullError>>(device: &Device<P>) {
    let s = StreamId(0);
    let before = device.stats();
    assert_not_supported(device.prepare(s), "prepare");
    assert_not_supported(device.begin_capture(s), "begin_capture");
    assert_not_supported(device.end_capture(s), "end_capture");
    assert_not_supported(device.abort_capture(s), "abort_capture");
    assert_eq!(device.capture_phase(s), Phase::NoCapture);
    assert_eq!(device.stats(), before);
    assert!(!device.capabilities().contains(Capabilities::GRAPH_CAPTURE));
}

#[test]
fn graphless_platform_runs_a_pipeline_and_refuses_capture() {
    let device = Device::new(Graphless, DeviceConfig::with_streams(2)).unwrap();
    assert_eq!(
        device.capabilities(),
        Capabilities::HOST_VISIBLE_DEVICE_MEMORY
    );
    let k = device.load_kernel(&K).unwrap();
    let (s0, s1) = (StreamId(0), StreamId(1));
    let a = device.upload(s1, &[1, 2, 3, 4]).unwrap();
    let b = device.alloc(s0, 4).unwrap();
    let ran = device
        .launch(
            s0,
            k,
            LaunchDims::linear(1, 4),
            &[a.read(), b.write()],
            &[4],
        )
        .unwrap();
    assert_eq!(ran, Launched::Queued);
    assert_eq!(
        device.stats().waits,
        1,
        "the hand-off across streams waits once"
    );
    assert_eq!(device.read(s0, &b).unwrap().len(), 4);

    capture_calls_refused(&device);

    // A graph sealed on a device with capture is refused for the missing
    // capability first, not looked up.
    let other = Device::new(Null, DeviceConfig::with_streams(1)).unwrap();
    other.prepare(s0).unwrap();
    other.begin_capture(s0).unwrap();
    let g = other.end_capture(s0).unwrap();
    assert_not_supported(device.replay(&g), "replay");

    // The device still works after the refusals, and releases everything.
    let ran = device
        .launch(
            s0,
            k,
            LaunchDims::linear(1, 4),
            &[b.read(), a.write()],
            &[4],
        )
        .unwrap();
    assert_eq!(ran, Launched::Queued);
    drop((a, b));
    device.sync_all().unwrap();
    assert_eq!(device.census().buffers, 0);
}

#[test]
fn not_supported_names_the_operation_and_capability() {
    let device = Device::new(Graphless, DeviceConfig::with_streams(1)).unwrap();
    let e = device.prepare(StreamId(0)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "`prepare` is not supported: the platform lacks GRAPH_CAPTURE"
    );
}

#[test]
fn declaration_and_capture_must_agree() {
    for (declared, provides_capture) in [
        (Capabilities::GRAPH_CAPTURE, false),
        (Capabilities::empty(), true),
        (Capabilities::TIMING, true),
    ] {
        let device = Device::new(
            Knobs {
                declared,
                provides_capture,
            },
            DeviceConfig::with_streams(1),
        )
        .unwrap();
        capture_calls_refused(&device);
    }
    let both = Device::new(
        Knobs {
            declared: Capabilities::GRAPH_CAPTURE | Capabilities::TIMING,
            provides_capture: true,
        },
        DeviceConfig::with_streams(1),
    )
    .unwrap();
    assert_eq!(
        both.capabilities(),
        Capabilities::GRAPH_CAPTURE | Capabilities::TIMING
    );
    let s = StreamId(0);
    both.prepare(s).unwrap();
    both.begin_capture(s).unwrap();
    let g = both.end_capture(s).unwrap();
    assert_eq!(both.replay(&g).unwrap(), Launched::Queued);
}

#[test]
fn null_and_its_capture_agree() {
    assert!(Null.capabilities().contains(Capabilities::GRAPH_CAPTURE));
    assert!(Null.capture().is_some());
    let device = Device::new(Null, DeviceConfig::with_streams(1)).unwrap();
    assert_eq!(device.capabilities(), Capabilities::GRAPH_CAPTURE);
}
