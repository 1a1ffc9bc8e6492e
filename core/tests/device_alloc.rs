//! The device's steady-state launch loop — launches on live buffers with
//! info-cache hits, deferred frees flushed behind fences and reclaimed by
//! polling — makes no heap allocation once warm. Proven with a counting
//! global allocator over a platform that itself never allocates.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::fmt;

use streamcore::device::{Device, DeviceConfig, Launched};
use streamcore::platform::{
    Binding, DeviceProperties, DeviceRange, ErrorKind, HostRange, HostStorage, KernelSource,
    LaunchDims, PageId, Platform, PlatformError, Storage,
};
use streamcore::stream::StreamId;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

struct Counting;

// SAFETY: forwards to the system allocator unchanged; only counts calls made
// on the current thread while counting is switched on.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.with(|c| c.get()) {
            ALLOCS.with(|a| a.set(a.get() + 1));
        }
        // SAFETY: same layout contract as our caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new: usize) -> *mut u8 {
        if COUNTING.with(|c| c.get()) {
            ALLOCS.with(|a| a.set(a.get() + 1));
        }
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.realloc(ptr, layout, new) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn count<R>(f: impl FnOnce() -> R) -> (R, u64) {
    ALLOCS.with(|a| a.set(0));
    COUNTING.with(|c| c.set(true));
    let r = f();
    COUNTING.with(|c| c.set(false));
    (r, ALLOCS.with(|a| a.get()))
}

/// A platform that completes everything at once and allocates nothing.
#[derive(Default)]
struct Null;

#[derive(Debug)]
struct NullError;

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

#[derive(Default)]
struct NullStorage {
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
    type Graph = ();
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

#[test]
fn warm_launch_loop_allocates_nothing() {
    let d = Device::new(Null, DeviceConfig::with_streams(2)).unwrap();
    let k = d
        .load_kernel(&KernelSource {
            name: "k",
            source: "",
        })
        .unwrap();
    let (s0, s1) = (StreamId(0), StreamId(1));
    let a = d.alloc(s1, 4096).unwrap();
    let b = d.alloc(s0, 4096).unwrap();
    let c = d.alloc(s0, 4096).unwrap();
    let dims = LaunchDims::linear(16, 256);
    let round = |i: u64| {
        // Producer on stream 1, consumers on stream 0: a cross-stream wait
        // per round, info-cache hits, and polling that reclaims.
        assert_eq!(
            d.launch(s1, k, dims, &[a.write()], &[1024, i % 4]).unwrap(),
            Launched::Queued
        );
        assert_eq!(
            d.launch(s0, k, dims, &[a.read(), b.write()], &[1024])
                .unwrap(),
            Launched::Queued
        );
        assert_eq!(
            d.launch(s0, k, dims, &[b.read(), c.write()], &[1024, 3])
                .unwrap(),
            Launched::Queued
        );
        d.poll().unwrap();
    };
    for i in 0..64 {
        round(i);
    }
    let ((), allocs) = count(|| {
        for i in 0..2000 {
            round(i);
        }
    });
    assert_eq!(allocs, 0, "allocations in the warm launch loop");
    let s = d.stats();
    assert!(
        s.waits >= 2000,
        "each round hands a buffer across streams: {s:?}"
    );
    assert!(s.info_hits >= 6000, "{s:?}");
}

#[test]
fn device_is_shareable_between_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Device<Null>>();
    assert_send_sync::<streamcore::device::Buffer>();
    assert_send_sync::<streamcore::device::Graph>();
}
