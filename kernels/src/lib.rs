//! # streamcore-kernels
//!
//! A few element-wise `u32` kernels shared by the demo (`streamcore demo`),
//! the scenario suite (`streamcore-tests`) and the examples: each has HIP
//! source, compiled by a real device's platform (hiprtc), and a Rust body
//! for the mock platform ([`register_mock`]).
//!
//! Every kernel takes its info words as the last binding: `info[0]` is the
//! element count, `info[1]` the kernel's scalar. Binding ABI: one pointer
//! per binding, in order.
//!
//! | kernel | does | bindings |
//! |---|---|---|
//! | [`FILL`] | `out[i] = info[1]` | `out`, info |
//! | [`ADD`] | `out[i] = a[i] + b[i]` | `a`, `b`, `out`, info |
//! | [`SCALE`] | `out[i] = x[i] * info[1]` | `x`, `out`, info |
//! | [`FLAKY`] | as [`SCALE`], under a name fault injection can target | `x`, `out`, info |
//!
//! Helpers: [`dims`] (launch geometry for `n` elements), [`bytes`] and
//! [`words`] (`u32`s to little-endian bytes and back).

mod mock;

pub use mock::register_mock;

use streamcore::platform::{KernelSource, LaunchDims};

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

/// The scale kernel `out[i] = x[i] * info[1]` under the entry point `$name`
/// (a string literal): its [`KernelSource`].
macro_rules! scale_kernel {
    ($name:literal) => {
        KernelSource {
            name: $name,
            source: concat!(
                r#"extern "C" __global__ void "#,
                $name,
                r#"(const unsigned int* x, unsigned int* out, const unsigned long long* info) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < info[0]) out[i] = x[i] * (unsigned int)info[1];
}"#
            ),
            bindings: 3,
        }
    };
}

/// `out[i] = x[i] * info[1]`.
pub const SCALE: KernelSource<'static> = scale_kernel!("sc_scale");

/// Like [`SCALE`], under another name: the kernel fault injection fails.
pub const FLAKY: KernelSource<'static> = scale_kernel!("sc_flaky");

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

#[cfg(test)]
mod tests {
    use super::*;
    use streamcore::device::{Device, DeviceConfig, Launched};
    use streamcore::stream::StreamId;
    use streamcore_mock::MockPlatform;

    #[test]
    fn bytes_and_words_round_trip() {
        let w = [0, 1, 0xdead_beef, u32::MAX];
        assert_eq!(bytes(&w).len(), 16);
        assert_eq!(words(&bytes(&w)), w);
        assert_eq!(
            words(&[1, 0, 0, 0, 9]),
            [1],
            "a trailing partial word is dropped"
        );
    }

    #[test]
    fn dims_cover_every_element() {
        for n in [0, 1, 255, 256, 257, 4096] {
            let d = dims(n);
            assert!(u64::from(d.grid[0]) * u64::from(d.block[0]) >= n as u64);
        }
    }

    #[test]
    fn the_mock_bodies_do_what_the_table_says() {
        let mock = MockPlatform::new();
        register_mock(&mock);
        let device = Device::new(mock, DeviceConfig::with_streams(1)).unwrap();
        let s = StreamId(0);
        let n = 300;
        let x: Vec<u32> = (0..n as u32).collect();
        let a = device.upload(s, &bytes(&x)).unwrap();
        let out = |d: &Device<MockPlatform>| d.alloc(s, 4 * n as u64).unwrap();
        let (f, sum, scaled, flaky) = (out(&device), out(&device), out(&device), out(&device));
        let n64 = n as u64;
        let launches = [
            (FILL, vec![f.write()], vec![n64, 7]),
            (ADD, vec![a.read(), f.read(), sum.write()], vec![n64]),
            (SCALE, vec![a.read(), scaled.write()], vec![n64, 3]),
            (FLAKY, vec![a.read(), flaky.write()], vec![n64, 3]),
        ];
        for (kernel, args, info) in launches {
            let id = device.load_kernel(&kernel).unwrap();
            let launched = device.launch(s, id, dims(n), &args, &info);
            assert_eq!(launched.unwrap(), Launched::Queued, "{}", kernel.name);
        }
        let read = |b| words(&device.read(s, b).unwrap());
        assert_eq!(read(&f), vec![7; n]);
        assert_eq!(read(&sum), x.iter().map(|v| v + 7).collect::<Vec<_>>());
        let tripled: Vec<u32> = x.iter().map(|v| v * 3).collect();
        assert_eq!(read(&scaled), tripled);
        assert_eq!(read(&flaky), tripled);
    }
}
