//! Kernels compiled from source, launched with bindings.

use streamcore::platform::PageId;
use streamcore::platform::{
    Access, Binding, DeviceRange, ErrorKind, HostStorage, KernelSource, LaunchDims, Platform,
    PlatformError, Storage,
};
use streamcore_hip::{HipDeviceStorage, HipHostStorage, HipKernel, HipPlatform, HipStream, Origin};

use crate::common::{drain, host_page, host_range, platform_or_skip, to_words, words};
use crate::runner::Outcome;

/// `out[i] = a[i] + b[i]` for `i < info[0]`; bindings: a, b, out, info.
pub const ADD: KernelSource<'static> = KernelSource {
    name: "add_u32",
    source: r#"
extern "C" __global__ void add_u32(const unsigned int* a, const unsigned int* b,
                                   unsigned int* out, const unsigned int* info) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < info[0]) {
        out[i] = a[i] + b[i];
    }
}
"#,
    bindings: 4,
};

/// Bindings for [`ADD`] over `n` words laid out in one device page:
/// a at 0, b at `n*4`, out at `2*n*4`, info at `3*n*4`.
pub fn add_bindings(page: PageId, n: u64) -> [Binding; 4] {
    let bytes = n * 4;
    let range = |offset, len| DeviceRange { page, offset, len };
    [
        Binding {
            range: range(0, bytes),
            access: Access::Read,
        },
        Binding {
            range: range(bytes, bytes),
            access: Access::Read,
        },
        Binding {
            range: range(2 * bytes, bytes),
            access: Access::Write,
        },
        Binding {
            range: range(3 * bytes, 4),
            access: Access::Read,
        },
    ]
}

/// Launch geometry for [`ADD`] over `n` words.
pub fn add_dims(n: u64) -> LaunchDims {
    LaunchDims::linear(n.div_ceil(256) as u32, 256)
}

/// What an [`ADD`] test starts from, beside the platform: the kernel
/// loaded, pinned host and device storages, a stream, and one device page
/// with room for `n` words each of a, b and out and the info word (laid out
/// as [`add_bindings`] says).
pub struct AddRig {
    /// [`ADD`], loaded.
    pub kernel: HipKernel,
    /// Pinned host pages for staging.
    pub host: HipHostStorage,
    /// The storage `page` lives in (dropping it frees the page).
    pub device: HipDeviceStorage,
    /// The stream the test queues its work on.
    pub stream: HipStream,
    /// The device page of a, b, out and the info word.
    pub page: PageId,
}

impl AddRig {
    /// Loads [`ADD`] on `platform` and allocates the page for `n` words.
    pub fn new(platform: &HipPlatform, n: u64) -> Self {
        let kernel = platform.load_kernel(&ADD).unwrap();
        let host = platform.host_storage().unwrap();
        let mut device = platform.device_storage().unwrap();
        let stream = platform.create_stream().unwrap();
        let page = device.alloc(3 * n * 4 + 256).unwrap();
        Self {
            kernel,
            host,
            device,
            stream,
            page,
        }
    }

    /// Stages `input` (a, b and the info word) in a pinned page and queues
    /// its copy to the start of the device page.
    pub fn upload(&mut self, platform: &HipPlatform, input: &[u8]) {
        let src = host_page(&mut self.host, input);
        let len = input.len() as u64;
        let dst = DeviceRange {
            page: self.page,
            offset: 0,
            len,
        };
        platform
            .copy_to_device(&mut self.stream, host_range(src, 0, len), dst)
            .unwrap();
    }

    /// Copies out (`n` words) back to a fresh pinned page, waits for the
    /// stream, and returns the words.
    pub fn read_out(&mut self, platform: &HipPlatform, n: u64) -> Vec<u32> {
        let bytes = n * 4;
        let out = host_page(&mut self.host, &vec![0u8; bytes as usize]);
        let range = add_bindings(self.page, n)[2].range;
        platform
            .copy_to_host(&mut self.stream, range, host_range(out, 0, bytes))
            .unwrap();
        drain(platform, &mut self.stream);
        let mut back = vec![0u8; bytes as usize];
        self.host.read(out, 0, &mut back).unwrap();
        to_words(&back)
    }
}

pub fn kernel_from_source_adds_two_buffers() -> Outcome {
    let platform = platform_or_skip()?;
    let n: u64 = (1 << 20) + 3; // not a multiple of the block size
    let mut rig = AddRig::new(&platform, n);

    let mut input = words(n as usize, |i| i);
    input.extend(words(n as usize, |i| 3 * i + 7));
    input.extend(words(n as usize, |_| 0xdead_beef));
    input.extend((n as u32).to_le_bytes());
    rig.upload(&platform, &input);
    let bindings = add_bindings(rig.page, n);
    platform
        .launch(&mut rig.stream, &rig.kernel, add_dims(n), &bindings)
        .unwrap();
    let sums = rig.read_out(&platform, n);
    for (i, &s) in sums.iter().enumerate() {
        assert_eq!(s, 4 * i as u32 + 7, "word {i}");
    }
    Ok(())
}

pub fn compile_errors_are_typed_with_the_log() -> Outcome {
    let platform = platform_or_skip()?;
    let broken = KernelSource {
        name: "broken",
        source: "extern \"C\" __global__ void broken(int* p) { p[0] = undeclared_thing; }",
        bindings: 1,
    };
    let err = load_err(&platform, &broken);
    assert_eq!(err.kind(), ErrorKind::Kernel, "{err}");
    assert_eq!(err.origin(), Origin::Hiprtc);
    assert_eq!(err.call(), "hiprtcCompileProgram");
    assert_eq!(err.name(), "HIPRTC_ERROR_COMPILATION");
    let log = err.detail().unwrap_or_default();
    assert!(
        log.contains("undeclared_thing"),
        "log should name the culprit: {log}"
    );
    Ok(())
}

pub fn a_missing_entry_point_is_typed() -> Outcome {
    let platform = platform_or_skip()?;
    let wrong_name = KernelSource {
        name: "not_there",
        source: ADD.source,
        bindings: 4,
    };
    let err = load_err(&platform, &wrong_name);
    assert_eq!(err.kind(), ErrorKind::Kernel, "{err}");
    assert_eq!(err.call(), "hipModuleGetFunction");
    assert_eq!(err.origin(), Origin::Hip);
    Ok(())
}

pub fn too_many_bindings_are_refused() -> Outcome {
    let platform = platform_or_skip()?;
    let kernel = platform.load_kernel(&ADD).unwrap();
    let mut stream = platform.create_stream().unwrap();
    let mut device = platform.device_storage().unwrap();
    let page = device.alloc(4096).unwrap();
    let one = Binding {
        range: DeviceRange {
            page,
            offset: 0,
            len: 4,
        },
        access: Access::Read,
    };
    let many = vec![one; streamcore_hip::MAX_BINDINGS + 1];
    let err = platform
        .launch(&mut stream, &kernel, add_dims(1), &many)
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidValue);
    Ok(())
}

fn load_err(platform: &HipPlatform, source: &KernelSource<'_>) -> streamcore_hip::HipError {
    match platform.load_kernel(source) {
        Ok(_) => panic!("kernel {} should not load", source.name),
        Err(e) => e,
    }
}

pub fn an_oversized_block_is_a_recoverable_launch_failure() -> Outcome {
    // More threads per block than any device allows: the driver refuses the
    // launch as HIP does (invalid configuration) and the context keeps
    // working — the real kernel failure the scenario suite uses.
    let platform = platform_or_skip()?;
    let n: u64 = 4096;
    let mut rig = AddRig::new(&platform, n);
    let mut input = words(n as usize, |i| i);
    input.extend(words(n as usize, |i| 2 * i));
    input.extend(words(n as usize, |_| 0));
    input.extend((n as u32).to_le_bytes());
    rig.upload(&platform, &input);
    let bindings = add_bindings(rig.page, n);
    let oversized = LaunchDims {
        grid: [2, 1, 1],
        block: [2048, 1, 1],
        shared_mem_bytes: 0,
    };
    let err = platform
        .launch(&mut rig.stream, &rig.kernel, oversized, &bindings)
        .unwrap_err();
    assert_eq!(err.call(), "hipModuleLaunchKernel", "{err}");
    assert_eq!(err.origin(), Origin::Hip, "{err}");
    assert_eq!(err.name(), "hipErrorInvalidConfiguration", "{err}");
    // Not sticky: the same kernel runs, and the stream works on.
    platform
        .launch(&mut rig.stream, &rig.kernel, add_dims(n), &bindings)
        .unwrap();
    let sums = rig.read_out(&platform, n);
    assert!(sums.iter().enumerate().all(|(i, &s)| s == 3 * i as u32));
    Ok(())
}
