//! `HipPlatform`: the [`Platform`] over the HIP runtime.

use std::sync::Arc;

use cubecl_hip_sys as hip;
use streamcore::platform::{
    Binding, Capabilities, DeviceProperties, DeviceRange, ErrorKind, GraphCapture, HostRange,
    KernelSource, LaunchDims, Platform,
};

use crate::ballast::Ballast;
use crate::copy;
use crate::device_storage::{HipDeviceStorage, StoragePreference};
use crate::error::{HipError, check};
use crate::event::HipEvent;
use crate::graph::{self, HipGraph};
use crate::host_storage::HipHostStorage;
use crate::kernel::HipKernel;
use crate::properties;
use crate::runtime::EntryPoints;
use crate::shared::Shared;
use crate::storage::HipStorage;
use crate::stream::HipStream;
use crate::vmm;
use crate::vmm_storage::HipVmmStorage;

/// One HIP device as a streamcore [`Platform`].
///
/// Constructing it loads the runtime (`libamdhip64.so` and `libhiprtc.so`
/// from `$ROCM_PATH/lib`, `$HIP_PATH/lib` or the system's library path),
/// initializes it, and reads the device's properties. No runtime, no device
/// or a bad ordinal is an error of kind [`ErrorKind::NotAvailable`].
///
/// # Safety contract
///
/// No safe call makes the platform touch memory it does not own:
/// - every device range (copies, launch bindings) must lie inside a live
///   page of one of this platform's device storages, and every host range
///   inside a live pinned page of one of its host storages — a page leaves
///   the live set at its `dealloc`; anything else is refused with
///   [`ErrorKind::InvalidValue`] before any driver call;
/// - a launch passes exactly the kernel's declared
///   [`KernelSource::bindings`];
/// - a graph replay is refused once a page its recorded work touches is no
///   longer live;
/// - streams, kernels and graphs of another platform (or device) are
///   refused.
///
/// What remains is the kernel's own promise: its source takes the declared
/// pointer parameters and touches only its bindings (see [`crate::kernel`]).
///
/// # Threads and devices
///
/// Every call that needs the device makes it current on the calling thread
/// first; the platform remembers per thread which device it made current,
/// so this costs a thread-local read when nothing changed. Code that calls
/// `hipSetDevice` itself on a thread it shares with a platform calls
/// [`HipPlatform::make_current`] afterwards.
#[derive(Debug)]
pub struct HipPlatform {
    pub(crate) shared: Arc<Shared>,
    properties: DeviceProperties,
    name: String,
    /// The virtual-memory granularity, when the device supports it.
    vmm_granularity: Option<u64>,
    /// Which optional groups of entry points the runtime has (checked once,
    /// when the platform was made).
    pub(crate) entry: EntryPoints,
    storage: StoragePreference,
    /// Memory held so only a given amount stays free (`leave_free`).
    pub(crate) ballast: Vec<Ballast>,
    pub(crate) ballast_bytes: u64,
}

impl HipPlatform {
    /// The platform over device 0.
    pub fn new() -> Result<Self, HipError> {
        Self::with_device(0)
    }

    /// The platform over the device with HIP ordinal `device`.
    pub fn with_device(device: i32) -> Result<Self, HipError> {
        // Every entry point the platform may call resolved before the
        // first call: the bindings abort the process on a missing one.
        let entry = crate::runtime::entry_points()?;
        if !hip::is_available() {
            return Err(HipError::not_loaded(
                "libamdhip64 and libhiprtc opened for the check, but not for the bindings",
            ));
        }
        // SAFETY: the runtime is loaded; flags must be 0.
        check("hipInit", unsafe { hip::hipInit(0) })?;
        let mut count = 0i32;
        // SAFETY: `count` is a valid out-pointer.
        check("hipGetDeviceCount", unsafe {
            hip::hipGetDeviceCount(&mut count)
        })?;
        if count <= 0 {
            return Err(HipError::platform(
                "hipGetDeviceCount",
                ErrorKind::NotAvailable,
                Some(hip::hipError_t_hipErrorNoDevice),
                "hipErrorNoDevice",
                "the runtime reports no device",
            ));
        }
        if !(0..count).contains(&device) {
            return Err(HipError::platform(
                "hipSetDevice",
                ErrorKind::NotAvailable,
                Some(hip::hipError_t_hipErrorInvalidDevice),
                "hipErrorInvalidDevice",
                "no device with that ordinal",
            ));
        }
        let shared = Arc::new(Shared::new(device));
        crate::shared::set_current(device)?;
        let properties = properties::read(&shared)?;
        let name = properties::device_name(&shared)?;
        // A probe that fails says the calls cannot be used: `hipMalloc`.
        let vmm_granularity = if entry.virtual_memory {
            vmm::probe(&shared).ok().flatten()
        } else {
            None
        };
        Ok(Self {
            shared,
            properties,
            name,
            vmm_granularity,
            entry,
            storage: StoragePreference::Auto,
            ballast: Vec::new(),
            ballast_bytes: 0,
        })
    }

    /// Chooses which storage [`Platform::device_storage`] hands out.
    pub fn with_storage(mut self, preference: StoragePreference) -> Self {
        self.storage = preference;
        self
    }

    /// The granularity of the driver's virtual memory (bytes), or `None`
    /// when the device or runtime does not support it.
    pub fn vmm_granularity(&self) -> Option<u64> {
        self.vmm_granularity
    }

    /// A storage over the driver's virtual memory; an error of kind
    /// [`ErrorKind::NotAvailable`] where the device does not support it.
    pub fn vmm_storage(&self) -> Result<HipVmmStorage, HipError> {
        match self.vmm_granularity {
            Some(g) => Ok(HipVmmStorage::new(
                &self.shared,
                g,
                self.properties.total_memory,
            )),
            None => Err(HipError::platform(
                "hipMemGetAllocationGranularity",
                ErrorKind::NotAvailable,
                Some(hip::hipError_t_hipErrorNotSupported),
                "hipErrorNotSupported",
                "the device or runtime has no virtual-memory support",
            )),
        }
    }

    /// A storage over `hipMalloc` / `hipFree`.
    pub fn malloc_storage(&self) -> HipStorage {
        HipStorage::new(&self.shared)
    }

    /// The device's name as the runtime reports it.
    pub fn device_name(&self) -> &str {
        &self.name
    }

    /// The HIP ordinal of the device.
    pub fn device_ordinal(&self) -> i32 {
        self.shared.device
    }

    /// Makes this platform's device current on the calling thread
    /// (`hipSetDevice`), also when the platform believes it already is: for
    /// threads where other code changed the current device.
    pub fn make_current(&self) -> Result<(), HipError> {
        crate::shared::set_current(self.shared.device)
    }

    /// Whether any stream of this platform is capturing now.
    pub fn is_capturing(&self) -> bool {
        self.shared.capturing()
    }

    /// Whether its device storages are the virtual-memory ones (the
    /// preference is [`StoragePreference::Auto`] and the device supports
    /// virtual memory); what [`Capabilities::VIRTUAL_MEMORY`] declares.
    pub fn uses_virtual_memory(&self) -> bool {
        self.vmm_chunk().is_some()
    }

    /// The chunk granularity of the virtual-memory storage, when the device
    /// storages are that one.
    fn vmm_chunk(&self) -> Option<u64> {
        match self.storage {
            StoragePreference::Auto => self.vmm_granularity,
            StoragePreference::Malloc => None,
        }
    }
}

impl Platform for HipPlatform {
    type Stream = HipStream;
    type Event = HipEvent;
    type Storage = HipDeviceStorage;
    type HostStorage = HipHostStorage;
    type Capture = Self;
    type Kernel = HipKernel;
    type Error = HipError;

    fn properties(&self) -> DeviceProperties {
        self.properties
    }

    /// Graphs (stream capture) and hiprtc compilation; host-visible device
    /// memory on an integrated GPU; virtual memory when the device storage
    /// is the virtual-memory one (see [`device_storage`](Self::device_storage)).
    /// Events are created without timing.
    fn capabilities(&self) -> Capabilities {
        let mut caps = Capabilities::RUNTIME_COMPILATION;
        if self.entry.graphs {
            caps |= Capabilities::GRAPH_CAPTURE;
        }
        if self.properties.integrated {
            caps |= Capabilities::HOST_VISIBLE_DEVICE_MEMORY;
        }
        if self.uses_virtual_memory() {
            caps |= Capabilities::VIRTUAL_MEMORY;
        }
        caps
    }

    fn capture(&self) -> Option<&Self> {
        self.entry.graphs.then_some(self)
    }

    fn create_stream(&self) -> Result<HipStream, HipError> {
        HipStream::create(&self.shared)
    }

    /// Virtual memory where the device supports it (and the preference is
    /// [`StoragePreference::Auto`]), else `hipMalloc`.
    fn device_storage(&self) -> Result<HipDeviceStorage, HipError> {
        Ok(match self.vmm_chunk() {
            Some(g) => HipDeviceStorage::Vmm(HipVmmStorage::new(
                &self.shared,
                g,
                self.properties.total_memory,
            )),
            None => HipDeviceStorage::Malloc(HipStorage::new(&self.shared)),
        })
    }

    fn host_storage(&self) -> Result<HipHostStorage, HipError> {
        Ok(HipHostStorage::new(&self.shared))
    }

    fn record(&self, stream: &mut HipStream) -> Result<HipEvent, HipError> {
        HipEvent::record(&self.shared, stream)
    }

    fn wait(&self, stream: &mut HipStream, event: &HipEvent) -> Result<(), HipError> {
        event.wait_on(&self.shared, stream)
    }

    fn query(&self, event: &HipEvent) -> Result<bool, HipError> {
        event.query()
    }

    fn synchronize(&self, event: &HipEvent) -> Result<(), HipError> {
        event.synchronize(&self.shared)
    }

    fn copy_to_device(
        &self,
        stream: &mut HipStream,
        src: HostRange,
        dst: DeviceRange,
    ) -> Result<(), HipError> {
        copy::to_device(&self.shared, stream, src, dst)
    }

    fn copy_to_host(
        &self,
        stream: &mut HipStream,
        src: DeviceRange,
        dst: HostRange,
    ) -> Result<(), HipError> {
        copy::to_host(&self.shared, stream, src, dst)
    }

    fn copy_device(
        &self,
        stream: &mut HipStream,
        src: DeviceRange,
        dst: DeviceRange,
    ) -> Result<(), HipError> {
        copy::device_to_device(&self.shared, stream, src, dst)
    }

    fn load_kernel(&self, source: &KernelSource<'_>) -> Result<HipKernel, HipError> {
        HipKernel::load(&self.shared, source)
    }

    fn launch(
        &self,
        stream: &mut HipStream,
        kernel: &HipKernel,
        dims: LaunchDims,
        bindings: &[Binding],
    ) -> Result<(), HipError> {
        kernel.launch(&self.shared, stream, dims, bindings)
    }
}

impl GraphCapture<HipPlatform> for HipPlatform {
    type Graph = HipGraph;

    fn begin_capture(&self, stream: &mut HipStream) -> Result<(), HipError> {
        graph::begin(&self.shared, stream)
    }

    fn end_capture(&self, stream: &mut HipStream) -> Result<HipGraph, HipError> {
        graph::end(&self.shared, stream)
    }

    fn launch_graph(&self, stream: &mut HipStream, graph: &HipGraph) -> Result<(), HipError> {
        graph.launch(&self.shared, stream)
    }

    fn destroy_graph(&self, graph: HipGraph) -> Result<(), HipError> {
        graph.destroy()
    }
}
