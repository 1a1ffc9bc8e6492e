//! A platform that does nothing: every call succeeds at once, events have
//! always passed, storage hands out page ids with no bytes behind them, and
//! nothing allocates. It measures the core's own bookkeeping (benches, the
//! counting-allocator tests) and lets a `no_std` build exercise the whole
//! device API.

use core::fmt;

use crate::platform::{
    Binding, Capabilities, DeviceProperties, DeviceRange, ErrorKind, GraphCapture, HostRange,
    HostStorage, KernelSource, LaunchDims, PageId, Platform, PlatformError, Storage,
};

/// A platform that completes everything at once, holds no bytes and never
/// allocates.
#[derive(Default, Debug, Clone, Copy)]
pub struct Null;

/// The null platform's error (it never fails; the type exists for the trait).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NullError;

impl fmt::Display for NullError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("null platform error")
    }
}

impl PlatformError for NullError {
    fn kind(&self) -> ErrorKind {
        ErrorKind::Other
    }
}

/// Page ids counting up; no bytes behind them.
#[derive(Default, Debug)]
pub struct NullStorage {
    next: u64,
}

impl Storage for NullStorage {
    type Error = NullError;
    fn alignment(&self) -> u64 {
        256
    }
    fn alloc(&mut self, _size: u64) -> Result<PageId, NullError> {
        self.next += 1;
        Ok(PageId(self.next))
    }
    fn dealloc(&mut self, _page: PageId) {}
    fn flush(&mut self) -> Result<(), NullError> {
        Ok(())
    }
}

impl HostStorage for NullStorage {
    fn write(&mut self, _: PageId, _: u64, _: &[u8]) -> Result<(), NullError> {
        Ok(())
    }
    fn read(&self, _: PageId, _: u64, _: &mut [u8]) -> Result<(), NullError> {
        Ok(())
    }
}

impl Platform for Null {
    type Stream = ();
    type Event = ();
    type Storage = NullStorage;
    type HostStorage = NullStorage;
    type Capture = Self;
    type Kernel = ();
    type Error = NullError;

    fn properties(&self) -> DeviceProperties {
        DeviceProperties {
            total_memory: 1 << 34,
            max_page_size: 64 << 20,
            alignment: 256,
            integrated: false,
        }
    }
    /// Graphs, so the no_std proof can run the whole capture lifecycle.
    fn capabilities(&self) -> Capabilities {
        Capabilities::GRAPH_CAPTURE
    }
    fn capture(&self) -> Option<&Self> {
        Some(self)
    }
    fn create_stream(&self) -> Result<(), NullError> {
        Ok(())
    }
    fn device_storage(&self) -> Result<NullStorage, NullError> {
        Ok(NullStorage::default())
    }
    fn host_storage(&self) -> Result<NullStorage, NullError> {
        Ok(NullStorage::default())
    }
    fn record(&self, _: &mut ()) -> Result<(), NullError> {
        Ok(())
    }
    fn wait(&self, _: &mut (), _: &()) -> Result<(), NullError> {
        Ok(())
    }
    fn query(&self, _: &()) -> Result<bool, NullError> {
        Ok(true)
    }
    fn synchronize(&self, _: &()) -> Result<(), NullError> {
        Ok(())
    }
    fn copy_to_device(&self, _: &mut (), _: HostRange, _: DeviceRange) -> Result<(), NullError> {
        Ok(())
    }
    fn copy_to_host(&self, _: &mut (), _: DeviceRange, _: HostRange) -> Result<(), NullError> {
        Ok(())
    }
    fn copy_device(&self, _: &mut (), _: DeviceRange, _: DeviceRange) -> Result<(), NullError> {
        Ok(())
    }
    fn load_kernel(&self, _: &KernelSource<'_>) -> Result<(), NullError> {
        Ok(())
    }
    fn launch(&self, _: &mut (), _: &(), _: LaunchDims, _: &[Binding]) -> Result<(), NullError> {
        Ok(())
    }
}

impl GraphCapture<Null> for Null {
    type Graph = ();
    fn begin_capture(&self, _: &mut ()) -> Result<(), NullError> {
        Ok(())
    }
    fn end_capture(&self, _: &mut ()) -> Result<(), NullError> {
        Ok(())
    }
    fn launch_graph(&self, _: &mut (), _: &()) -> Result<(), NullError> {
        Ok(())
    }
    fn destroy_graph(&self, _: ()) -> Result<(), NullError> {
        Ok(())
    }
}
