//! Helpers shared by the mock's integration tests.
#![allow(dead_code, unreachable_pub)]

use streamcore::platform::{
    Access, Binding, DeviceRange, HostRange, HostStorage, KernelSource, LaunchDims, PageId,
    Platform, Storage,
};
use streamcore_mock::{
    MockConfig, MockHostStorage, MockKernel, MockPlatform, MockStorage, MockStream,
};

/// A device, one device storage, one host storage.
pub struct Rig {
    pub mock: MockPlatform,
    pub dev: MockStorage,
    pub host: MockHostStorage,
}

pub fn rig(config: MockConfig) -> Rig {
    let mock = MockPlatform::with_config(config).expect("valid config");
    register_kernels(&mock);
    let dev = mock.device_storage().unwrap();
    let host = mock.host_storage().unwrap();
    Rig { mock, dev, host }
}

pub fn dr(page: PageId, offset: u64, len: u64) -> DeviceRange {
    DeviceRange { page, offset, len }
}

pub fn hr(page: PageId, offset: u64, len: u64) -> HostRange {
    HostRange { page, offset, len }
}

pub fn bytes_of(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

pub fn words_of(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Kernels: `add(a: R, b: R, out: W)`, `inc(x: RW)`, `fill(out: W)` with
/// the value `dims.grid[1]`, `copy(src: R, dst: W)`.
pub fn register_kernels(mock: &MockPlatform) {
    mock.register_kernel("add", |_, args| {
        let a = args[0].to_u32s();
        let b = args[1].to_u32s();
        let sum: Vec<u32> = a.iter().zip(&b).map(|(x, y)| x.wrapping_add(*y)).collect();
        args[2].write_u32s(&sum);
    });
    mock.register_kernel("inc", |_, args| {
        let x: Vec<u32> = args[0].to_u32s().iter().map(|v| v + 1).collect();
        args[0].write_u32s(&x);
    });
    mock.register_kernel("fill", |dims, args| {
        let n = args[0].len() / 4;
        args[0].write_u32s(&vec![dims.grid[1]; n]);
    });
    mock.register_kernel("copy", |_, args| {
        let src = args[0].bytes().to_vec();
        args[1].bytes_mut().copy_from_slice(&src);
    });
}

pub fn kernel<P: Platform>(p: &P, name: &str) -> P::Kernel {
    // The mock does not check binding counts; 0 declares nothing.
    p.load_kernel(&KernelSource {
        name,
        source: "",
        bindings: 0,
    })
    .unwrap_or_else(|_| panic!("kernel {name} loads"))
}

pub fn fill_dims(value: u32) -> LaunchDims {
    LaunchDims {
        grid: [1, value, 1],
        block: [64, 1, 1],
        shared_mem_bytes: 0,
    }
}

pub fn read(range: DeviceRange) -> Binding {
    Binding {
        range,
        access: Access::Read,
    }
}

pub fn write(range: DeviceRange) -> Binding {
    Binding {
        range,
        access: Access::Write,
    }
}

pub fn read_write(range: DeviceRange) -> Binding {
    Binding {
        range,
        access: Access::ReadWrite,
    }
}

impl Rig {
    pub fn stream(&self) -> MockStream {
        self.mock.create_stream().unwrap()
    }

    pub fn kernel(&self, name: &str) -> MockKernel {
        kernel(&self.mock, name)
    }

    /// A device buffer of `words` u32s.
    pub fn buffer(&mut self, words: u64) -> DeviceRange {
        let p = self.dev.alloc(words * 4).unwrap();
        dr(p, 0, words * 4)
    }

    /// Uploads `data` into a new device buffer on `s` (host bytes stay
    /// alive in a new pinned page).
    pub fn upload(&mut self, s: &mut MockStream, data: &[u32]) -> DeviceRange {
        let bytes = bytes_of(data);
        let len = bytes.len() as u64;
        let h = self.host.alloc(len).unwrap();
        self.host.write(h, 0, &bytes).unwrap();
        let d = self.buffer(data.len() as u64);
        self.mock.copy_to_device(s, hr(h, 0, len), d).unwrap();
        d
    }

    /// Copies `range` back on `s`, synchronizes, and returns the words.
    pub fn download(&mut self, s: &mut MockStream, range: DeviceRange) -> Vec<u32> {
        let h = self.host.alloc(range.len).unwrap();
        self.mock
            .copy_to_host(s, range, hr(h, 0, range.len))
            .unwrap();
        let e = self.mock.record(s).unwrap();
        self.mock.synchronize(&e).unwrap();
        let mut out = vec![0u8; range.len as usize];
        self.host.read(h, 0, &mut out).unwrap();
        words_of(&out)
    }

    /// Launches `fill(value)` over `range` on `s`.
    pub fn fill(&self, s: &mut MockStream, range: DeviceRange, value: u32) {
        let k = self.kernel("fill");
        self.mock
            .launch(s, &k, fill_dims(value), &[write(range)])
            .unwrap();
    }
}
