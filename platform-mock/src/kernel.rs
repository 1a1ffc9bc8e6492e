//! Kernels: Rust closures registered by name.
//!
//! A launch runs its kernel when the scheduler completes the launch. The
//! closure receives the launch geometry and one [`KernelArg`] per binding, in
//! binding order, each holding a copy of the binding's bytes. After it
//! returns, the bytes of every binding whose [`Access`] writes are copied back
//! to device memory, in binding order; changes to read-only bindings are
//! discarded. Kernel closures run while the platform is locked: they MUST NOT
//! call the platform.

use std::fmt;
use std::sync::Arc;
use std::vec::Vec;

use streamcore::platform::{Access, DeviceRange, LaunchDims};

/// The body of a simulated kernel.
pub type KernelFn = dyn Fn(&LaunchDims, &mut [KernelArg]) + Send + Sync;

/// One binding as a kernel sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelArg {
    access: Access,
    range: DeviceRange,
    bytes: Vec<u8>,
}

impl KernelArg {
    pub(crate) fn new(access: Access, range: DeviceRange, bytes: Vec<u8>) -> Self {
        Self {
            access,
            range,
            bytes,
        }
    }

    pub(crate) fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    /// How the launch declared the binding.
    pub fn access(&self) -> Access {
        self.access
    }

    /// The device bytes bound.
    pub fn range(&self) -> DeviceRange {
        self.range
    }

    /// The bytes (current device contents when the kernel starts).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The bytes, to write. Only bindings that write are copied back.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.bytes
    }

    /// Number of bytes.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether the binding is empty.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The bytes as little-endian `u32`s (a trailing partial word is ignored).
    pub fn to_u32s(&self) -> Vec<u32> {
        self.bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    }

    /// Writes `values` as little-endian `u32`s from the start, as many as fit.
    pub fn write_u32s(&mut self, values: &[u32]) {
        for (dst, v) in self.bytes.chunks_exact_mut(4).zip(values) {
            dst.copy_from_slice(&v.to_le_bytes());
        }
    }

    /// The bytes as little-endian `f32`s (a trailing partial word is ignored).
    pub fn to_f32s(&self) -> Vec<f32> {
        self.to_u32s().into_iter().map(f32::from_bits).collect()
    }

    /// Writes `values` as little-endian `f32`s from the start, as many as fit.
    pub fn write_f32s(&mut self, values: &[f32]) {
        let words: Vec<u32> = values.iter().map(|v| v.to_bits()).collect();
        self.write_u32s(&words);
    }
}

/// A loaded kernel: its name and the closure registered under it when it
/// was loaded.
#[derive(Clone)]
pub struct MockKernel {
    pub(crate) name: Arc<str>,
    pub(crate) func: Arc<KernelFn>,
    pub(crate) instance: u64,
}

impl MockKernel {
    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl fmt::Debug for MockKernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MockKernel")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use streamcore::platform::PageId;

    #[test]
    fn word_helpers_round_trip() {
        let r = DeviceRange {
            page: PageId(1),
            offset: 0,
            len: 10,
        };
        let mut a = KernelArg::new(Access::Write, r, vec![0; 10]);
        a.write_f32s(&[1.5, -2.0, 9.0]);
        assert_eq!(a.to_f32s(), vec![1.5, -2.0]);
        a.write_u32s(&[7]);
        assert_eq!(a.to_u32s()[0], 7);
        assert_eq!(a.len(), 10);
        assert!(!a.is_empty());
        assert_eq!(a.access(), Access::Write);
        assert_eq!(a.range(), r);
    }
}
