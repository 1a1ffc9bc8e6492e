//! What every section of `device_vs_hip` shares: the kernels, the streams,
//! the sample statistics and the table printing, and the imports.

pub(crate) use std::hint::black_box;
pub(crate) use std::time::Instant;

pub(crate) use crate::raw::{self, R, RawBuffer, RawEvent, RawKernel, RawStream};
pub(crate) use streamcore::device::{
    Buffer, Device, DeviceConfig, DeviceStats, KernelId, Launched, LocalLock, LockFamilyMutex,
    ParkingLock, RawLock, SpinLock, StdLock,
};
pub(crate) use streamcore::memory::{MemoryLayout, MemoryManager};
pub(crate) use streamcore::platform::{
    Access, Binding, DeviceRange, KernelSource, LaunchDims, Platform, Storage,
};
pub(crate) use streamcore::stream::StreamId;
pub(crate) use streamcore_hip::HipPlatform;

pub(crate) const S0: StreamId = StreamId(0);
pub(crate) const S1: StreamId = StreamId(1);
/// Elements of every kernel's buffers (`u32`), and its launch width.
pub(crate) const N: usize = 1024;
pub(crate) const BLOCKS: u32 = (N / 256) as u32;

pub(crate) const INC: KernelSource<'static> = KernelSource {
    name: "sb_inc",
    source: r#"extern "C" __global__ void sb_inc(unsigned int* x, const unsigned long long* info) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < info[0]) x[i] += 1u;
}"#,
    bindings: 2,
};

/// `out[i] = a[i] + b[i]` and `out[i] = info[1]`: the project's shared
/// kernels (`streamcore-kernels`), as the demo and the scenario suite run them.
pub(crate) use streamcore_kernels::{ADD, FILL};

pub(crate) const ACC: KernelSource<'static> = KernelSource {
    name: "sb_acc",
    source: r#"extern "C" __global__ void sb_acc(const unsigned int* x, unsigned int* acc, const unsigned long long* info) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < info[0]) acc[i] += x[i];
}"#,
    bindings: 3,
};

/// A `Device` on lock family `L` with `streams` streams, over a platform
/// of its own.
pub(crate) fn device_with_lock<L: RawLock>(streams: u16) -> R<Device<HipPlatform, L>> {
    let platform = HipPlatform::new().map_err(e("HipPlatform::new"))?;
    Device::<_, L>::with_lock(platform, DeviceConfig::with_streams(streams))
        .map_err(e("Device::with_lock"))
}

pub(crate) fn dims() -> LaunchDims {
    streamcore_kernels::dims(N)
}

pub(crate) fn bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

pub(crate) fn words(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

pub(crate) fn words64(words: &[u64]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// Per-round figures of one variant, in nanoseconds per operation.
#[derive(Default)]
pub(crate) struct Samples(Vec<f64>);

impl Samples {
    pub(crate) fn push(&mut self, total_ns: f64, ops: usize) {
        self.0.push(total_ns / ops as f64);
    }
    pub(crate) fn median(&self) -> f64 {
        let mut v = self.0.clone();
        v.sort_by(f64::total_cmp);
        match v.len() {
            0 => f64::NAN,
            n if n % 2 == 1 => v[n / 2],
            n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
        }
    }
    /// Both sets of samples as one.
    pub(crate) fn joined(&self, other: &Samples) -> Samples {
        Samples(self.0.iter().chain(&other.0).copied().collect())
    }
    pub(crate) fn min(&self) -> f64 {
        self.0.iter().copied().fold(f64::INFINITY, f64::min)
    }
}

pub(crate) fn ns(since: Instant) -> f64 {
    since.elapsed().as_nanos() as f64
}

pub(crate) fn e<E: std::fmt::Display>(what: &'static str) -> impl Fn(E) -> String {
    move |err| format!("{what}: {err}")
}

pub(crate) fn queued<E: std::fmt::Display>(r: Result<Launched, E>) -> R<()> {
    match r {
        Ok(Launched::Queued) => Ok(()),
        Ok(Launched::Skipped(f)) => Err(format!("launch skipped over failure {f:?}")),
        Err(err) => Err(format!("launch: {err}")),
    }
}

pub(crate) fn check(what: &str, got: &[u32], want: u32) -> R<()> {
    match got.iter().position(|&w| w != want) {
        None => Ok(()),
        Some(i) => Err(format!(
            "{what}: element {i} is {}, expected {want}",
            got[i]
        )),
    }
}

pub(crate) fn row(name: &str, a: &Samples, b: Option<&Samples>, unit: &str) {
    match b {
        Some(b) => println!(
            "  {name:<44} {:>10.0} {:>10.0} {:>12.0} {:>10.0}  {unit}",
            a.median(),
            a.min(),
            b.median(),
            b.min()
        ),
        None => println!(
            "  {name:<44} {:>10.0} {:>10.0}  {unit}",
            a.median(),
            a.min()
        ),
    }
}

pub(crate) fn ratio(name: &str, num: f64, den: f64) {
    println!("  {name:<44} {:>10.3}", num / den);
}

/// Runs `variants` variants round-robin: one warm-up round, then `rounds`
/// counted ones, each starting with the next variant (none always runs
/// first). Calls `f(which, counted)`; `counted` is false in the warm-up.
pub(crate) fn interleaved(
    rounds: usize,
    variants: usize,
    mut f: impl FnMut(usize, bool) -> R<()>,
) -> R<()> {
    for round in 0..=rounds {
        for slot in 0..variants {
            f((round + slot) % variants, round > 0)?;
        }
    }
    Ok(())
}
