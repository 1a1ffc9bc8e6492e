//! The harness's kernels: byte-wise bodies registered on the mock, and the
//! same arithmetic for the sequential model. Each launch binds its buffers
//! in argument order, then the info word `k` (read-only, last).

use std::vec::Vec;

use streamcore::platform::{KernelSource, LaunchDims};

use super::program::Kernel;
use crate::{KernelArg, MockPlatform};

/// The kernel's source (the mock looks it up by name).
pub fn source(kernel: Kernel) -> KernelSource<'static> {
    // Bindings: the buffers, then the info buffer.
    let (name, bindings) = match kernel {
        Kernel::Fill => ("fz_fill", 2),
        Kernel::Scale => ("fz_scale", 3),
        Kernel::Add => ("fz_add", 4),
        Kernel::Incr => ("fz_incr", 2),
    };
    KernelSource {
        name,
        source: "",
        bindings,
    }
}

/// Launch geometry (the mock ignores it).
pub const DIMS: LaunchDims = LaunchDims::linear(1, 64);

fn info(args: &[KernelArg]) -> u8 {
    args.last()
        .and_then(|a| a.bytes().first())
        .copied()
        .unwrap_or(0)
}

fn at(bytes: &[u8], i: usize) -> u8 {
    if bytes.is_empty() {
        0
    } else {
        bytes[i % bytes.len()]
    }
}

/// `out` of `kernel` over `inputs` (or the new contents of the in-place
/// buffer for [`Kernel::Incr`], whose input is its own old contents).
pub fn compute(kernel: Kernel, k: u8, inputs: &[&[u8]], out_len: usize) -> Vec<u8> {
    (0..out_len)
        .map(|i| match kernel {
            Kernel::Fill => k,
            Kernel::Scale => at(inputs[0], i).wrapping_mul(3).wrapping_add(k),
            Kernel::Add => at(inputs[0], i)
                .wrapping_add(at(inputs[1], i))
                .wrapping_add(k),
            Kernel::Incr => at(inputs[0], i).wrapping_add(k).wrapping_add(1),
        })
        .collect()
}

/// Registers the four kernels on `mock`.
pub fn register(mock: &MockPlatform) {
    for kernel in [Kernel::Fill, Kernel::Scale, Kernel::Add, Kernel::Incr] {
        mock.register_kernel(source(kernel).name, move |_, args| {
            let k = info(args);
            let n = kernel.inputs();
            let out_index = n;
            let inputs: Vec<Vec<u8>> = if kernel == Kernel::Incr {
                vec![args[0].bytes().to_vec()]
            } else {
                args[..n].iter().map(|a| a.bytes().to_vec()).collect()
            };
            let refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
            let len = args[out_index].len();
            let result = compute(kernel, k, &refs, len);
            args[out_index].bytes_mut().copy_from_slice(&result);
        });
    }
}
