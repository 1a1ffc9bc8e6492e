//! The kernels' Rust bodies, for the mock platform.

use streamcore_mock::{KernelArg, MockPlatform};

use crate::{ADD, FILL, FLAKY, SCALE};

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
