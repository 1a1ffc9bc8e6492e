//! The suite's kernels: element-wise `u32` work over buffers, each with HIP
//! source (for real devices) and a Rust body (for the mock). Every kernel
//! takes its info words as the last binding: `info[0]` is the element count.
//! Binding ABI: one pointer per binding, in order.

use streamcore::platform::{KernelSource, LaunchDims};
use streamcore_mock::{KernelArg, MockPlatform};

/// `out[i] = info[1]` (fill with a constant).
pub const FILL: KernelSource<'static> = KernelSource {
    name: "sc_fill",
    source: r#"extern "C" __global__ void sc_fill(unsigned int* out, const unsigned long long* info) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < info[0]) out[i] = (unsigned int)info[1];
}"#,
    bindings: 2,
};

/// `out[i] = a[i] + b[i]`.
pub const ADD: KernelSource<'static> = KernelSource {
    name: "sc_add",
    source: r#"extern "C" __global__ void sc_add(const unsigned int* a, const unsigned int* b, unsigned int* out, const unsigned long long* info) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < info[0]) out[i] = a[i] + b[i];
}"#,
    bindings: 4,
};

/// `out[i] = x[i] * info[1]`.
pub const SCALE: KernelSource<'static> = KernelSource {
    name: "sc_scale",
    source: r#"extern "C" __global__ void sc_scale(const unsigned int* x, unsigned int* out, const unsigned long long* info) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < info[0]) out[i] = x[i] * (unsigned int)info[1];
}"#,
    bindings: 3,
};

/// Like [`SCALE`], under another name: the kernel fault injection fails.
pub const FLAKY: KernelSource<'static> = KernelSource {
    name: "sc_flaky",
    source: r#"extern "C" __global__ void sc_flaky(const unsigned int* x, unsigned int* out, const unsigned long long* info) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < info[0]) out[i] = x[i] * (unsigned int)info[1];
}"#,
    bindings: 3,
};

/// Every kernel of the suite.
pub const ALL: [KernelSource<'static>; 4] = [FILL, ADD, SCALE, FLAKY];

/// Launch geometry for `n` elements.
pub fn dims(n: usize) -> LaunchDims {
    LaunchDims::linear(n.div_ceil(256).max(1) as u32, 256)
}

/// `u32`s as little-endian bytes.
pub fn bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// Little-endian bytes as `u32`s.
pub fn words(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn info(args: &[KernelArg]) -> (usize, u64) {
    let w = args.last().map(|a| a.bytes()).unwrap_or(&[]);
    let word = |i: usize| {
        w.get(i * 8..i * 8 + 8)
            .map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
    };
    (word(0) as usize, word(1))
}

fn get(a: &KernelArg, i: usize) -> u32 {
    a.bytes()
        .get(i * 4..i * 4 + 4)
        .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

fn set(a: &mut KernelArg, i: usize, v: u32) {
    if let Some(b) = a.bytes_mut().get_mut(i * 4..i * 4 + 4) {
        b.copy_from_slice(&v.to_le_bytes());
    }
}

/// Registers the Rust bodies of every kernel on a mock.
pub fn register_mock(mock: &MockPlatform) {
    mock.register_kernel(FILL.name, |_, args| {
        let (n, v) = info(args);
        for i in 0..n {
            set(&mut args[0], i, v as u32);
        }
    });
    mock.register_kernel(ADD.name, |_, args| {
        let (n, _) = info(args);
        for i in 0..n {
            let v = get(&args[0], i).wrapping_add(get(&args[1], i));
            set(&mut args[2], i, v);
        }
    });
    for name in [SCALE.name, FLAKY.name] {
        mock.register_kernel(name, |_, args| {
            let (n, f) = info(args);
            for i in 0..n {
                let v = get(&args[0], i).wrapping_mul(f as u32);
                set(&mut args[1], i, v);
            }
        });
    }
}
