//! What a fuzz input means: a [`Program`] of [`Op`]s under a [`Config`],
//! decoded from bytes with `arbitrary`, and encoded back (for seed corpora
//! and regression tests).
//!
//! Every index in an op (stream, buffer, graph) is reduced modulo what
//! exists when the op runs, so every byte string is a valid program.

mod op;
mod profile;

use std::vec::Vec;

use arbitrary::{Arbitrary, Unstructured};

pub use op::{FaultSite, Foreign, Kernel, OP_KINDS, Op, ReadSite};
pub use profile::Profile;

/// The most operations one program runs (the rest of the input is ignored),
/// so every run ends quickly.
pub const MAX_OPS: usize = 192;

/// The most buffer handles the harness holds at once (an `Alloc` beyond it
/// does nothing).
pub const MAX_BUFFERS: usize = 12;

/// The most graph handles the harness holds at once.
pub const MAX_GRAPHS: usize = 6;

/// Buffer sizes an op's `size` byte picks from (`size % 16`): tiny slices,
/// the sliced pools, one size past the sliced pools' largest slice (twice
/// as likely as the rest), and three sizes no reservation can hold: zero,
/// more than any device's memory, and `u64::MAX`.
pub const SIZES: [u64; 16] = [
    4,
    16,
    64,
    200,
    1024,
    4096,
    65_536,
    262_400,
    4,
    64,
    200,
    1024,
    65_536,
    0,
    1 << 40,
    u64::MAX,
];

/// The largest buffer the harness writes or keeps a model of its bytes
/// (larger ones are only ever reservations that must fail).
pub const MAX_MODELED: u64 = 1 << 20;

/// How the device of a run is set up. Every field is a raw byte the driver
/// reduces (see [`Setup`](super::Setup)), so every input is a valid config.
#[derive(Arbitrary, Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Config {
    /// Number of streams the ops use: `1 + streams % max` (the profile's max).
    pub streams: u8,
    /// Seed of the mock's seeded scheduler (and the harness layout, `seed % 3`,
    /// when `layout` picks the harness's own).
    pub seed: u8,
    /// Drop-queue thresholds: `0` the device preset, otherwise at most
    /// `flush % 4 + 1` items (tiny, to flush often).
    pub flush: u8,
    /// The device properties the platform reports (`device % 16`): sane
    /// ones, or zero memory, pages of `u64::MAX` or `2^63` bytes, alignments
    /// of 0, 3 or `2^63`, …; and whether the device storages offer
    /// resizable pages (virtual memory, `device / 16 % 4 == 3`, with sane
    /// properties and layouts).
    pub device: u8,
    /// The pool layout (`layout % 16`): the harness's, the core's presets
    /// for the properties, or adversarial ones (pages of `u64::MAX` bytes,
    /// alignment `2^63`, a one-page budget, caps, …).
    pub layout: u8,
    /// The stream count given to the device (`declared % 16`): mostly the
    /// streams the ops use, else the bound, one past it, zero, `u16::MAX`,
    /// or more than the ops use (their ids then spread up to the last).
    pub declared: u8,
}

/// A run: a config and the operations.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Program {
    /// The device setup.
    pub config: Config,
    /// The operations, in order.
    pub ops: Vec<Op>,
}

impl Program {
    /// Decodes a program from fuzz input: the config, then operations until
    /// the input (or [`MAX_OPS`]) runs out. Never fails: missing bytes read
    /// as zero.
    pub fn decode(data: &[u8]) -> Self {
        let mut u = Unstructured::new(data);
        let config = Config::arbitrary(&mut u).unwrap_or_default();
        let mut ops = Vec::new();
        while !u.is_empty() && ops.len() < MAX_OPS {
            match Op::arbitrary(&mut u) {
                Ok(op) => ops.push(op),
                Err(_) => break,
            }
        }
        Self { config, ops }
    }

    /// Bytes that [`Program::decode`] turns back into this program (the
    /// inverse of `arbitrary`'s derived format: enum tags as little-endian
    /// `u32`s, `u8` fields as one byte each).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let c = self.config;
        out.extend_from_slice(&[c.streams, c.seed, c.flush, c.device, c.layout, c.declared]);
        for op in &self.ops {
            op.encode(&mut out);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_is_the_inverse_of_decode() {
        let mut rng = crate::rng::SplitMix64::new(3);
        for _ in 0..300 {
            let len = rng.below(200) as usize;
            let bytes: Vec<u8> = (0..len).map(|_| rng.below(256) as u8).collect();
            let p = Program::decode(&bytes);
            let again = Program::decode(&p.encode());
            assert_eq!(again, p);
        }
    }
}
