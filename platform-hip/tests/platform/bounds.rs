//! Safe calls cannot make the platform touch memory it does not own: every
//! device range must lie inside a live page of one of the platform's device
//! storages, and a launch must pass exactly the bindings its kernel
//! declared. Refusals come from the platform itself (`Origin::Platform`),
//! before any driver call.

use streamcore::platform::{
    Access, Binding, DeviceRange, ErrorKind, HostStorage, KernelSource, LaunchDims, PageId,
    Platform, PlatformError, Storage,
};
use streamcore_hip::{HipError, Origin};

use crate::common::{drain, host_page, host_range, platform_or_skip, to_words};
use crate::runner::Outcome;

/// Writes 7 into `a[threadIdx.x]`, and 1 into `b[0]` when `b` is not null:
/// a kernel that survives being given too few parameters, so the test can
/// run against a platform that does not check the count.
pub const TWO: KernelSource<'static> = KernelSource {
    name: "two_params",
    source: r#"
extern "C" __global__ void two_params(unsigned int* a, unsigned int* b) {
    a[threadIdx.x] = 7u;
    if (b != 0 && threadIdx.x == 0) { b[0] = 1u; }
}
"#,
    bindings: 2,
};

fn refused(what: &str, result: Result<(), HipError>) {
    match result {
        Ok(()) => panic!("{what}: accepted"),
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::InvalidValue, "{what}: {e}");
            assert_eq!(
                e.origin(),
                Origin::Platform,
                "{what}: must be refused by the platform, not left to the driver: {e}"
            );
        }
    }
}

fn range(page: PageId, offset: u64, len: u64) -> DeviceRange {
    DeviceRange { page, offset, len }
}

pub fn device_ranges_outside_live_device_pages_are_refused() -> Outcome {
    let platform = platform_or_skip()?;
    let mut host = platform.host_storage().unwrap();
    let mut device = platform.device_storage().unwrap();
    let mut stream = platform.create_stream().unwrap();
    let pinned = host_page(&mut host, &[5u8; 4096]);
    let out = host_page(&mut host, &[0u8; 4096]);
    let page = device.alloc(4096).unwrap();
    let whole = range(page, 0, 4096);

    // A pinned host page named as a device range: host memory, reachable by
    // the device, never a device page of this platform.
    refused(
        "host page as copy source",
        platform.copy_to_host(&mut stream, range(pinned, 0, 64), host_range(out, 0, 64)),
    );
    refused(
        "host page as copy destination",
        platform.copy_device(&mut stream, whole.clone_len(64), range(pinned, 0, 64)),
    );
    // Past the page's end (the driver's allocation granularity would let
    // these through).
    refused(
        "range past the page end",
        platform.copy_device(&mut stream, range(page, 0, 64), range(page, 4090, 64)),
    );
    refused(
        "offset past the page end",
        platform.copy_to_host(&mut stream, range(page, 8192, 16), host_range(out, 0, 16)),
    );
    refused(
        "offset + len overflows",
        platform.copy_to_host(
            &mut stream,
            range(page, u64::MAX - 8, 16),
            host_range(out, 0, 16),
        ),
    );
    // Inside a page, but not a page id.
    refused(
        "an address inside a page as page id",
        platform.copy_to_host(
            &mut stream,
            range(PageId(page.0 + 256), 0, 16),
            host_range(out, 0, 16),
        ),
    );
    // A page of another platform instance.
    let other = platform_or_skip()?;
    let mut other_device = other.device_storage().unwrap();
    let foreign = other_device.alloc(4096).unwrap();
    refused(
        "a page of another platform",
        platform.copy_to_host(&mut stream, range(foreign, 0, 16), host_range(out, 0, 16)),
    );
    // A page handed back to the storage (its memory is only released at the
    // next flush, but it is no longer live).
    let gone = device.alloc(4096).unwrap();
    device.dealloc(gone);
    refused(
        "a deallocated page",
        platform.copy_to_host(&mut stream, range(gone, 0, 16), host_range(out, 0, 16)),
    );
    device.flush().unwrap();
    refused(
        "a released page",
        platform.copy_to_host(&mut stream, range(gone, 0, 16), host_range(out, 0, 16)),
    );

    // Launch bindings are checked the same way.
    let kernel = platform.load_kernel(&TWO).unwrap();
    let bind = |r: DeviceRange| Binding {
        range: r,
        access: Access::Write,
    };
    refused(
        "a host page as a binding",
        platform.launch(
            &mut stream,
            &kernel,
            LaunchDims::linear(1, 32),
            &[bind(range(pinned, 0, 128)), bind(range(page, 0, 4))],
        ),
    );
    refused(
        "a binding past the page end",
        platform.launch(
            &mut stream,
            &kernel,
            LaunchDims::linear(1, 32),
            &[bind(range(page, 4064, 128)), bind(range(page, 0, 4))],
        ),
    );

    // Nothing above reached the device: the pinned page is untouched and
    // in-bounds work still runs.
    platform
        .copy_to_host(&mut stream, whole.clone_len(64), host_range(out, 0, 64))
        .unwrap();
    drain(&platform, &mut stream);
    let mut back = [0u8; 4096];
    host.read(pinned, 0, &mut back).unwrap();
    assert!(
        back.iter().all(|&b| b == 5),
        "a refused call wrote host memory"
    );
    drop(other_device);
    Ok(())
}

/// `DeviceRange` with another length, same page and offset.
trait CloneLen {
    fn clone_len(&self, len: u64) -> DeviceRange;
}

impl CloneLen for DeviceRange {
    fn clone_len(&self, len: u64) -> DeviceRange {
        DeviceRange { len, ..*self }
    }
}

pub fn launches_pass_exactly_the_declared_bindings() -> Outcome {
    let platform = platform_or_skip()?;
    let mut host = platform.host_storage().unwrap();
    let mut device = platform.device_storage().unwrap();
    let mut stream = platform.create_stream().unwrap();
    let kernel = platform.load_kernel(&TWO).unwrap();
    let a = device.alloc(4096).unwrap();
    let b = device.alloc(4096).unwrap();
    let bind = |page| Binding {
        range: range(page, 0, 128),
        access: Access::Write,
    };
    let dims = LaunchDims::linear(1, 32);
    // Too few: the kernel's second parameter would be a null pointer.
    refused(
        "one binding for two parameters",
        platform.launch(&mut stream, &kernel, dims, &[bind(a)]),
    );
    refused(
        "no binding for two parameters",
        platform.launch(&mut stream, &kernel, dims, &[]),
    );
    refused(
        "three bindings for two parameters",
        platform.launch(&mut stream, &kernel, dims, &[bind(a), bind(b), bind(b)]),
    );
    // Exactly two runs.
    platform
        .launch(&mut stream, &kernel, dims, &[bind(a), bind(b)])
        .unwrap();
    let out = host_page(&mut host, &[0u8; 128]);
    platform
        .copy_to_host(&mut stream, range(a, 0, 128), host_range(out, 0, 128))
        .unwrap();
    drain(&platform, &mut stream);
    let mut back = [0u8; 128];
    host.read(out, 0, &mut back).unwrap();
    assert_eq!(to_words(&back), vec![7u32; 32]);
    Ok(())
}

/// Ten parameters: `p[k][threadIdx.x] = k + 1`.
const TEN: KernelSource<'static> = KernelSource {
    name: "ten_params",
    source: r#"
extern "C" __global__ void ten_params(unsigned int* p0, unsigned int* p1, unsigned int* p2,
    unsigned int* p3, unsigned int* p4, unsigned int* p5, unsigned int* p6, unsigned int* p7,
    unsigned int* p8, unsigned int* p9) {
    unsigned int* p[10] = {p0, p1, p2, p3, p4, p5, p6, p7, p8, p9};
    for (int k = 0; k < 10; ++k) { p[k][threadIdx.x] = (unsigned int)k + 1u; }
}
"#,
    bindings: 10,
};

pub fn a_launch_with_many_bindings_passes_each_in_order() -> Outcome {
    let platform = platform_or_skip()?;
    let mut host = platform.host_storage().unwrap();
    let mut device = platform.device_storage().unwrap();
    let mut stream = platform.create_stream().unwrap();
    let kernel = platform.load_kernel(&TEN).unwrap();
    let page = device.alloc(10 * 256).unwrap();
    let bindings: Vec<Binding> = (0..10)
        .map(|k| Binding {
            range: range(page, 256 * k, 128),
            access: Access::Write,
        })
        .collect();
    platform
        .launch(&mut stream, &kernel, LaunchDims::linear(1, 32), &bindings)
        .unwrap();
    let out = host_page(&mut host, &[0u8; 10 * 256]);
    platform
        .copy_to_host(
            &mut stream,
            range(page, 0, 10 * 256),
            host_range(out, 0, 10 * 256),
        )
        .unwrap();
    drain(&platform, &mut stream);
    let mut back = vec![0u8; 10 * 256];
    host.read(out, 0, &mut back).unwrap();
    for k in 0..10 {
        let words = to_words(&back[256 * k..256 * k + 128]);
        assert_eq!(words, vec![k as u32 + 1; 32], "binding {k}");
    }
    Ok(())
}
