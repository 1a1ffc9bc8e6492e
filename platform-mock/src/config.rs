//! How a [`MockPlatform`](crate::MockPlatform) is built.

use std::boxed::Box;
use std::fmt;
use std::vec::Vec;

use streamcore::platform::{DeviceProperties, StorageCosts};

use crate::schedule::{
    EagerScheduler, LazyScheduler, Scheduler, ScriptedScheduler, SeededScheduler,
};

/// Simulated durations, in virtual nanoseconds. The virtual clock advances
/// by a command's cost when the scheduler completes it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct CostModel {
    /// Every kernel launch.
    pub launch_ns: u64,
    /// Fixed part of every copy.
    pub copy_base_ns: u64,
    /// Copy bandwidth, bytes per nanosecond (0 is read as 1).
    pub copy_bytes_per_ns: u64,
    /// An event record or wait.
    pub event_ns: u64,
}

impl Default for CostModel {
    fn default() -> Self {
        Self {
            launch_ns: 4_000,
            copy_base_ns: 2_000,
            copy_bytes_per_ns: 16,
            event_ns: 0,
        }
    }
}

/// The configuration of a simulated device. Build it with the chained
/// setters, starting from [`MockConfig::default`]:
///
/// ```
/// use streamcore_mock::MockConfig;
/// let config = MockConfig::default().seed(7).total_memory(1 << 30).alignment(512);
/// ```
pub struct MockConfig {
    pub(crate) properties: DeviceProperties,
    pub(crate) host_memory: u64,
    pub(crate) scheduler: Box<dyn Scheduler>,
    pub(crate) costs: CostModel,
    pub(crate) report_uninitialized: bool,
    pub(crate) allow_query_during_capture: bool,
    pub(crate) virtual_memory: Option<u64>,
    pub(crate) storage_costs: Option<StorageCosts>,
}

impl fmt::Debug for MockConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MockConfig")
            .field("properties", &self.properties)
            .field("host_memory", &self.host_memory)
            .field("costs", &self.costs)
            .field("report_uninitialized", &self.report_uninitialized)
            .field(
                "allow_query_during_capture",
                &self.allow_query_during_capture,
            )
            .field("virtual_memory", &self.virtual_memory)
            .field("storage_costs", &self.storage_costs)
            .finish_non_exhaustive()
    }
}

/// The default device: 8 GiB, 64 MiB pages, 256-byte alignment, discrete;
/// 8 GiB of pinned host memory; seeded scheduler with seed 0.
impl Default for MockConfig {
    fn default() -> Self {
        Self {
            properties: DeviceProperties {
                total_memory: 8 << 30,
                max_page_size: 64 << 20,
                alignment: 256,
                integrated: false,
            },
            host_memory: 8 << 30,
            scheduler: Box::new(SeededScheduler::new(0)),
            costs: CostModel::default(),
            report_uninitialized: true,
            allow_query_during_capture: false,
            virtual_memory: None,
            storage_costs: None,
        }
    }
}

impl MockConfig {
    /// Device properties, all at once (`alignment` must be a power of two).
    pub fn properties(mut self, p: DeviceProperties) -> Self {
        self.properties = p;
        self
    }

    /// Device storages offer resizable pages (virtual memory) in chunks of
    /// `granularity` bytes (a power of two, at least the alignment): the
    /// memory manager then carves its pages from reservations. Off by
    /// default.
    pub fn virtual_memory(mut self, granularity: u64) -> Self {
        self.virtual_memory = Some(granularity);
        self
    }

    /// What the device storages declare their calls cost
    /// ([`StorageTerms::costs`](streamcore::platform::StorageTerms)): the
    /// memory manager's churn budget weighs a decommit by them. Only
    /// declared: the mock's clock does not charge them.
    ///
    /// By default the storages declare what the real driver's calls cost
    /// on an NVIDIA H200 (the table the driver model replays with,
    /// [`replay::H200`](crate::replay::H200)): with
    /// [`virtual_memory`](Self::virtual_memory) on, the budget binds as
    /// over HIP's virtual-memory storage, so trimming decides on the mock
    /// what it decides on the device. [`StorageCosts::UNKNOWN`] declares
    /// none: the budget never binds and trimming takes every idle chunk it
    /// may.
    pub fn storage_costs(mut self, costs: StorageCosts) -> Self {
        self.storage_costs = Some(costs);
        self
    }

    /// The call costs the device storages declare: the config's, else the
    /// driver model's for the route the storages offer (virtual memory or
    /// plain pages).
    pub(crate) fn declared_storage_costs(&self) -> StorageCosts {
        self.storage_costs.unwrap_or_else(|| {
            let route = if self.virtual_memory.is_some() {
                crate::replay::DriverModel::Vmm
            } else {
                crate::replay::DriverModel::Malloc
            };
            route
                .terms(&crate::replay::H200, self.properties.alignment)
                .costs
        })
    }

    /// Total device memory; allocations past it fail with `OutOfMemory`.
    pub fn total_memory(mut self, bytes: u64) -> Self {
        self.properties.total_memory = bytes;
        self
    }

    /// The page size reported to the core.
    pub fn max_page_size(mut self, bytes: u64) -> Self {
        self.properties.max_page_size = bytes;
        self
    }

    /// Page alignment (a power of two); page sizes are rounded up to it.
    pub fn alignment(mut self, bytes: u64) -> Self {
        self.properties.alignment = bytes;
        self
    }

    /// Whether the device is integrated (an APU).
    pub fn integrated(mut self, integrated: bool) -> Self {
        self.properties.integrated = integrated;
        self
    }

    /// Total pinned host memory.
    pub fn host_memory(mut self, bytes: u64) -> Self {
        self.host_memory = bytes;
        self
    }

    /// The seeded scheduler with this seed (the default, with seed 0).
    pub fn seed(mut self, seed: u64) -> Self {
        self.scheduler = Box::new(SeededScheduler::new(seed));
        self
    }

    /// A scheduler following `script` (see [`ScriptedScheduler`]).
    pub fn scripted(mut self, script: Vec<usize>) -> Self {
        self.scheduler = Box::new(ScriptedScheduler::new(script));
        self
    }

    /// The [`LazyScheduler`]: nothing runs until the host waits.
    pub fn lazy(mut self) -> Self {
        self.scheduler = Box::new(LazyScheduler);
        self
    }

    /// The [`EagerScheduler`]: everything runs as soon as it can.
    pub fn eager(mut self) -> Self {
        self.scheduler = Box::new(EagerScheduler);
        self
    }

    /// Any scheduler.
    pub fn scheduler(mut self, scheduler: Box<dyn Scheduler>) -> Self {
        self.scheduler = scheduler;
        self
    }

    /// Virtual durations of commands.
    pub fn costs(mut self, costs: CostModel) -> Self {
        self.costs = costs;
        self
    }

    /// Whether reads of never-written bytes are hazards (default `true`).
    pub fn report_uninitialized(mut self, on: bool) -> Self {
        self.report_uninitialized = on;
        self
    }

    /// Whether `query` of an event that is not part of a capture is allowed
    /// while a capture is open (CUDA's relaxed capture mode). Default
    /// `false`: like the global capture mode, it fails with
    /// `CaptureUnsupported` and invalidates every open capture.
    pub fn allow_query_during_capture(mut self, on: bool) -> Self {
        self.allow_query_during_capture = on;
        self
    }
}
