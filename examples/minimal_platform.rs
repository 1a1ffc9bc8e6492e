//! The smallest real platform: a firmware-style command queue without
//! graphs, and a `Device` running a small pipeline on it.
//!
//! Run it with `cargo run --example minimal_platform`.
//!
//! A platform gives the core streams, events, memory, copies and kernels
//! (the `Platform` trait), and declares what else it can do
//! (`Capabilities`). This one has no graph capture: it writes
//! `type Capture = NoGraphs;` and nothing else about capture, and the device
//! answers every capture call with `Error::NotSupported`.
//!
//! The queue runs each command when it is submitted (a command engine that
//! completes before it returns), so an event is just a sequence number that
//! has always passed. A real queue that runs work later keeps the same shape:
//! `record` notes how far the stream's submissions go, `query` compares that
//! with how far the engine got, `synchronize` waits for it.
//!
//! Memory is one table of pages shared by the device storage, the host
//! storage and the queue; every range is checked against it, so a bad range
//! is an error, never a touch of memory the platform does not own.

use std::cell::RefCell;
use std::fmt;
use std::rc::Rc;

use streamcore::Error;
use streamcore::device::{Device, DeviceConfig, Launched};
use streamcore::memory::{MemoryLayout, MemoryPolicy, PoolSpec};
use streamcore::platform::{
    Binding, Capabilities, DeviceProperties, DeviceRange, ErrorKind, HostRange, HostStorage,
    KernelSource, LaunchDims, NoGraphs, PageId, Platform, PlatformError, Storage,
};
use streamcore::stream::StreamId;

// ---------------------------------------------------------------- errors --

/// What the queue can refuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FwError {
    /// The memory budget is spent.
    OutOfMemory,
    /// A range outside every live page, or a binding count that does not
    /// match the kernel.
    BadArgument(&'static str),
    /// No built-in kernel has that name.
    UnknownKernel,
}

impl fmt::Display for FwError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FwError::OutOfMemory => f.write_str("out of device memory"),
            FwError::BadArgument(why) => write!(f, "bad argument: {why}"),
            FwError::UnknownKernel => f.write_str("no built-in kernel of that name"),
        }
    }
}

impl PlatformError for FwError {
    fn kind(&self) -> ErrorKind {
        match self {
            FwError::OutOfMemory => ErrorKind::OutOfMemory,
            FwError::BadArgument(_) => ErrorKind::InvalidValue,
            FwError::UnknownKernel => ErrorKind::Kernel,
        }
    }
}

// ---------------------------------------------------------------- memory --

/// Which storage a page came from: kernels and copies check it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    Device,
    Host,
}

/// Every page, host pages included, by id (`PageId(i + 1)`); `None` once
/// released.
#[derive(Default)]
struct Pages {
    pages: Vec<Option<(Side, Vec<u8>)>>,
    bytes: u64,
    budget: u64,
}

impl Pages {
    /// The live page `id` of `side`.
    fn page_mut(&mut self, side: Side, id: PageId) -> Result<&mut Vec<u8>, FwError> {
        match self.pages.get_mut((id.0 as usize).wrapping_sub(1)) {
            Some(Some((s, bytes))) if *s == side => Ok(bytes),
            _ => Err(FwError::BadArgument("no live page of that storage")),
        }
    }

    /// `len` bytes at `offset` of the live page `id` of `side`.
    fn bytes(
        &mut self,
        side: Side,
        id: PageId,
        offset: u64,
        len: u64,
    ) -> Result<&mut [u8], FwError> {
        let page = self.page_mut(side, id)?;
        let end = offset.checked_add(len).filter(|&e| e <= page.len() as u64);
        end.map(|e| &mut page[offset as usize..e as usize])
            .ok_or(FwError::BadArgument("range outside its page"))
    }

    /// Copies between two ranges of equal length, both checked first.
    fn copy(
        &mut self,
        from: (Side, PageId, u64),
        to: (Side, PageId, u64),
        (from_len, len): (u64, u64),
    ) -> Result<(), FwError> {
        if from_len != len {
            return Err(FwError::BadArgument("copy ranges of different lengths"));
        }
        let bytes = self.bytes(from.0, from.1, from.2, len)?.to_vec();
        self.bytes(to.0, to.1, to.2, len)?.copy_from_slice(&bytes);
        Ok(())
    }
}

type Shared = Rc<RefCell<Pages>>;

/// A storage: pages from the shared table. Released pages are kept until
/// `flush`, as the contract asks (queued work may still use them).
struct FwStorage {
    pages: Shared,
    side: Side,
    released: Vec<PageId>,
}

impl Storage for FwStorage {
    type Error = FwError;

    fn alignment(&self) -> u64 {
        16
    }

    fn alloc(&mut self, size: u64) -> Result<PageId, FwError> {
        let mut p = self.pages.borrow_mut();
        if p.bytes + size > p.budget {
            return Err(FwError::OutOfMemory);
        }
        p.bytes += size;
        p.pages.push(Some((self.side, vec![0; size as usize])));
        Ok(PageId(p.pages.len() as u64))
    }

    fn dealloc(&mut self, page: PageId) {
        self.released.push(page);
    }

    fn flush(&mut self) -> Result<(), FwError> {
        let mut p = self.pages.borrow_mut();
        for page in self.released.drain(..) {
            let slot = p.pages.get_mut((page.0 as usize).wrapping_sub(1));
            if let Some((_, bytes)) = slot.and_then(Option::take) {
                p.bytes -= bytes.len() as u64;
            }
        }
        Ok(())
    }
}

impl HostStorage for FwStorage {
    fn write(&mut self, page: PageId, offset: u64, data: &[u8]) -> Result<(), FwError> {
        let mut p = self.pages.borrow_mut();
        p.bytes(Side::Host, page, offset, data.len() as u64)?
            .copy_from_slice(data);
        Ok(())
    }

    fn read(&self, page: PageId, offset: u64, out: &mut [u8]) -> Result<(), FwError> {
        let mut p = self.pages.borrow_mut();
        out.copy_from_slice(p.bytes(Side::Host, page, offset, out.len() as u64)?);
        Ok(())
    }
}

// --------------------------------------------------------------- kernels --

/// The kernels built into the firmware, found by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kernel {
    /// `out[i] = a[i] + b[i]` over `u32` words; bindings: a, b, out.
    Add,
    /// `x[i] *= info[0]` over `u32` words; bindings: x, then the info words.
    Scale,
}

impl Kernel {
    fn bindings(self) -> usize {
        match self {
            Kernel::Add => 3,
            Kernel::Scale => 2,
        }
    }

    /// Runs the kernel over `b` (already checked to be `self.bindings()`
    /// long); every range is checked against the live device pages.
    fn run(self, pages: &mut Pages, b: &[Binding]) -> Result<(), FwError> {
        let read = |pages: &mut Pages, b: &Binding| {
            let r = b.range;
            pages
                .bytes(Side::Device, r.page, r.offset, r.len)
                .map(|b| b.to_vec())
        };
        let out: Vec<u32> = match self {
            Kernel::Add => {
                let (x, y) = (words(&read(pages, &b[0])?), words(&read(pages, &b[1])?));
                x.iter().zip(&y).map(|(x, y)| x.wrapping_add(*y)).collect()
            }
            Kernel::Scale => {
                let info = read(pages, &b[1])?;
                let factor = info
                    .get(..8)
                    .and_then(|w| w.try_into().ok())
                    .map(u64::from_le_bytes)
                    .ok_or(FwError::BadArgument("`scale` needs one info word"))?
                    as u32;
                words(&read(pages, &b[0])?)
                    .iter()
                    .map(|x| x.wrapping_mul(factor))
                    .collect()
            }
        };
        let target = if self == Kernel::Add { &b[2] } else { &b[0] };
        let r = target.range;
        let bytes = pages.bytes(Side::Device, r.page, r.offset, r.len)?;
        for (chunk, word) in bytes.chunks_exact_mut(4).zip(out) {
            chunk.copy_from_slice(&word.to_le_bytes());
        }
        Ok(())
    }
}

// -------------------------------------------------------------- platform --

/// The command queue. Streams and events are sequence numbers.
struct Firmware {
    pages: Shared,
}

impl Firmware {
    fn new(budget: u64) -> Self {
        let pages = Pages {
            budget,
            ..Pages::default()
        };
        Self {
            pages: Rc::new(RefCell::new(pages)),
        }
    }

    fn storage(&self, side: Side) -> FwStorage {
        FwStorage {
            pages: self.pages.clone(),
            side,
            released: Vec::new(),
        }
    }
}

/// A stream: how many commands were submitted to it.
struct FwStream {
    submitted: u64,
}

impl Platform for Firmware {
    type Stream = FwStream;
    /// The submission count at `record`; the queue has always run that far.
    type Event = u64;
    type Storage = FwStorage;
    type HostStorage = FwStorage;
    type Kernel = Kernel;
    type Error = FwError;
    // No graphs: the whole of what this platform says about capture.
    type Capture = NoGraphs;

    fn properties(&self) -> DeviceProperties {
        DeviceProperties {
            total_memory: self.pages.borrow().budget,
            max_page_size: 64 << 10,
            alignment: 16,
            // Host and device share the RAM: tighter deferred-free thresholds.
            integrated: true,
        }
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::HOST_VISIBLE_DEVICE_MEMORY
    }

    fn create_stream(&self) -> Result<FwStream, FwError> {
        Ok(FwStream { submitted: 0 })
    }

    fn device_storage(&self) -> Result<FwStorage, FwError> {
        Ok(self.storage(Side::Device))
    }

    fn host_storage(&self) -> Result<FwStorage, FwError> {
        Ok(self.storage(Side::Host))
    }

    fn record(&self, stream: &mut FwStream) -> Result<u64, FwError> {
        Ok(stream.submitted)
    }

    fn wait(&self, _: &mut FwStream, _: &u64) -> Result<(), FwError> {
        Ok(()) // every event has passed: nothing to order
    }

    fn query(&self, _: &u64) -> Result<bool, FwError> {
        Ok(true)
    }

    fn synchronize(&self, _: &u64) -> Result<(), FwError> {
        Ok(())
    }

    fn copy_to_device(
        &self,
        stream: &mut FwStream,
        src: HostRange,
        dst: DeviceRange,
    ) -> Result<(), FwError> {
        let (from, to) = (
            (Side::Host, src.page, src.offset),
            (Side::Device, dst.page, dst.offset),
        );
        self.pages.borrow_mut().copy(from, to, (src.len, dst.len))?;
        stream.submitted += 1;
        Ok(())
    }

    fn copy_to_host(
        &self,
        stream: &mut FwStream,
        src: DeviceRange,
        dst: HostRange,
    ) -> Result<(), FwError> {
        let (from, to) = (
            (Side::Device, src.page, src.offset),
            (Side::Host, dst.page, dst.offset),
        );
        self.pages.borrow_mut().copy(from, to, (src.len, dst.len))?;
        stream.submitted += 1;
        Ok(())
    }

    fn copy_device(
        &self,
        stream: &mut FwStream,
        src: DeviceRange,
        dst: DeviceRange,
    ) -> Result<(), FwError> {
        let (from, to) = (
            (Side::Device, src.page, src.offset),
            (Side::Device, dst.page, dst.offset),
        );
        self.pages.borrow_mut().copy(from, to, (src.len, dst.len))?;
        stream.submitted += 1;
        Ok(())
    }

    fn load_kernel(&self, source: &KernelSource<'_>) -> Result<Kernel, FwError> {
        let kernel = match source.name {
            "add" => Kernel::Add,
            "scale" => Kernel::Scale,
            _ => return Err(FwError::UnknownKernel),
        };
        if source.bindings != kernel.bindings() {
            return Err(FwError::BadArgument("declared binding count"));
        }
        Ok(kernel)
    }

    fn launch(
        &self,
        stream: &mut FwStream,
        kernel: &Kernel,
        _dims: LaunchDims,
        bindings: &[Binding],
    ) -> Result<(), FwError> {
        if bindings.len() != kernel.bindings() {
            return Err(FwError::BadArgument("binding count"));
        }
        kernel.run(&mut self.pages.borrow_mut(), bindings)?;
        stream.submitted += 1;
        Ok(())
    }
}

// --------------------------------------------------------------- example --

fn words(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks_exact(4)
        .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        .collect()
}

fn bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

fn main() {
    // 4 MiB of shared RAM, two streams. The streams' pools are sized for a
    // small device: 4 KiB pages carved into slices up to 1 KiB, larger
    // requests in pages of their own (the default layout assumes a GPU and
    // starts at 1 MiB pages). The staging pool follows this layout too.
    let layout = MemoryLayout::new(
        &[
            PoolSpec::small(4 << 10, 1 << 10),
            PoolSpec::exclusive(64 << 10),
        ],
        16,
        MemoryPolicy::default(),
    )
    .expect("a valid layout");
    let config = DeviceConfig::with_streams(2).layout(layout);
    let device =
        Device::new(Firmware::new(4 << 20), config).expect("a device over the command queue");
    println!("capabilities: {:?}", device.capabilities());

    let add = device
        .load_kernel(&KernelSource {
            name: "add",
            source: "",
            bindings: 3,
        })
        .expect("built-in kernel `add`");
    let scale = device
        .load_kernel(&KernelSource {
            name: "scale",
            source: "",
            bindings: 2,
        })
        .expect("built-in kernel `scale`");

    // Inputs on two streams; the sum on stream 0 waits for stream 1's upload.
    let (s0, s1) = (StreamId(0), StreamId(1));
    let a = device.upload(s1, &bytes(&[1, 2, 3, 4])).expect("upload a");
    let b = device
        .upload(s0, &bytes(&[10, 20, 30, 40]))
        .expect("upload b");
    let sum = device.alloc(s0, 16).expect("alloc sum");
    let dims = LaunchDims::linear(1, 4);
    let ran = device
        .launch(s0, add, dims, &[a.read(), b.read(), sum.write()], &[])
        .expect("launch add");
    assert_eq!(ran, Launched::Queued);
    // `x *= 3`, the factor passed as an info word (bound last, read-only).
    let ran = device
        .launch(s0, scale, dims, &[sum.read_write()], &[3])
        .expect("launch scale");
    assert_eq!(ran, Launched::Queued);

    let out = words(&device.read(s0, &sum).expect("read sum"));
    println!("(a + b) * 3 = {out:?}");
    assert_eq!(out, [33, 66, 99, 132]);
    println!(
        "cross-stream waits placed by the core: {}",
        device.stats().waits
    );
    assert_eq!(device.stats().waits, 1);

    // Capture: refused with a typed error, nothing changed.
    match device.prepare(s0) {
        Err(e @ Error::NotSupported { needs, .. }) => {
            assert_eq!(needs, Capabilities::GRAPH_CAPTURE);
            println!("capture: {e}");
        }
        other => panic!("capture on a platform without graphs: {other:?}"),
    }

    drop((a, b, sum));
    device.sync_all().expect("sync");
    let census = device.census();
    assert_eq!(census.buffers, 0);
    println!("all buffers released: {census:?}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs() {
        main();
    }

    /// A bad range or binding count is the platform's typed error, never a
    /// touch of memory it does not own, and nothing refused is submitted.
    #[test]
    fn bad_ranges_and_binding_counts_are_refused() {
        let fw = Firmware::new(1 << 10);
        let mut host = fw.host_storage().unwrap();
        let mut dev = fw.device_storage().unwrap();
        let h = host.alloc(16).unwrap();
        let d = dev.alloc(16).unwrap();
        let mut stream = fw.create_stream().unwrap();
        let host4 = HostRange {
            page: h,
            offset: 0,
            len: 4,
        };
        let dev_range = |page, offset| DeviceRange {
            page,
            offset,
            len: 4,
        };
        let refused =
            |r: Result<(), FwError>| assert_eq!(r.unwrap_err().kind(), ErrorKind::InvalidValue);
        // No such page; past the page's end; a host page as a device range.
        refused(fw.copy_to_device(&mut stream, host4, dev_range(PageId(99), 0)));
        refused(fw.copy_to_device(&mut stream, host4, dev_range(d, 14)));
        refused(fw.copy_to_device(&mut stream, host4, dev_range(h, 0)));
        refused(host.write(h, 14, &[0; 4]));
        // A launch with too few bindings.
        let add = fw
            .load_kernel(&KernelSource {
                name: "add",
                source: "",
                bindings: 3,
            })
            .unwrap();
        let binding = Binding {
            range: dev_range(d, 0),
            access: streamcore::platform::Access::Read,
        };
        refused(fw.launch(&mut stream, &add, LaunchDims::linear(1, 1), &[binding]));
        assert_eq!(stream.submitted, 0);
        // The same copy in range goes through.
        fw.copy_to_device(&mut stream, host4, dev_range(d, 12))
            .unwrap();
        assert_eq!(stream.submitted, 1);
    }
}
