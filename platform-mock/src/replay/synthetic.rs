//! Synthetic allocation traces: workloads of other shapes than the
//! recorded ones, generated deterministically (a seeded xorshift), so a
//! policy can be judged on traces it was not tuned on.
//!
//! [`workloads`] lists them by name; `cargo run --release -p
//! streamcore-mock --example memory_model` prints what the driver model
//! predicts for each, and a test holds those figures.

use std::string::{String, ToString};
use std::vec;
use std::vec::Vec;

use super::trace::{Trace, TraceEvent};

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;

/// A small deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    /// Log-uniform in `lo..hi`, rounded to 512 bytes as PyTorch's blocks.
    fn size(&mut self, lo: u64, hi: u64) -> u64 {
        let (a, b) = ((lo as f64).ln(), (hi as f64).ln());
        let x = a + (b - a) * (self.below(1 << 20) as f64 / (1 << 20) as f64);
        (x.exp() as u64).next_multiple_of(512).max(512)
    }
}

/// Builds a trace from alloc/free calls.
#[derive(Default)]
struct Builder {
    events: Vec<TraceEvent>,
    slots: u32,
    streams: u32,
}

impl Builder {
    fn alloc(&mut self, size: u64, stream: u32) -> u32 {
        let slot = self.slots;
        self.slots += 1;
        self.streams = self.streams.max(stream + 1);
        self.events.push(TraceEvent::Alloc { slot, size, stream });
        slot
    }
    fn free(&mut self, slot: u32) {
        self.events.push(TraceEvent::Free { slot });
    }
    fn done(self, name: &str) -> (String, Trace) {
        let mut t = Trace {
            events: self.events,
            slots: self.slots,
            streams: self.streams,
            ..Trace::default()
        };
        t.header.workload = name.to_string();
        (name.to_string(), t)
    }
}

/// Workloads of other shapes than the recorded ones.
pub fn workloads() -> Vec<(String, Trace)> {
    let mut out = Vec::new();

    // Three phases whose sizes do not overlap, four steps each, a persistent
    // set kept throughout.
    let mut b = Builder::default();
    let mut r = Rng(11);
    let _weights: Vec<u32> = (0..40).map(|_| b.alloc(r.size(MIB, 32 * MIB), 0)).collect();
    for (lo, hi, n) in [
        (MIB, 8 * MIB, 200),
        (20 * MIB, 80 * MIB, 40),
        (64 * KIB, 2 * MIB, 800),
    ] {
        for _ in 0..4 {
            let live: Vec<u32> = (0..n).map(|_| b.alloc(r.size(lo, hi), 0)).collect();
            for s in live.into_iter().rev() {
                b.free(s);
            }
        }
    }
    out.push(b.done("syn_three_phases"));

    // A cache that grows 3% a step (new buffer, old one freed), with
    // transient activations around it.
    let mut b = Builder::default();
    let mut r = Rng(23);
    let mut cache = b.alloc(64 * MIB, 0);
    let mut size = 64 * MIB;
    for _ in 0..120 {
        let acts: Vec<u32> = (0..30)
            .map(|_| b.alloc(r.size(256 * KIB, 16 * MIB), 0))
            .collect();
        size += size / 32;
        let bigger = b.alloc(size.next_multiple_of(512), 0);
        b.free(cache);
        cache = bigger;
        for s in acts {
            b.free(s);
        }
    }
    out.push(b.done("syn_growing_cache"));

    // Random sizes and lifetimes: no step structure at all.
    let mut b = Builder::default();
    let mut r = Rng(37);
    let mut live: Vec<u32> = Vec::new();
    for _ in 0..10_000 {
        if live.len() > 20 && r.below(100) < 50 {
            let i = r.below(live.len() as u64) as usize;
            let s = live.swap_remove(i);
            b.free(s);
        } else {
            live.push(b.alloc(r.size(4 * KIB, 64 * MIB), 0));
        }
    }
    for s in live {
        b.free(s);
    }
    out.push(b.done("syn_random_lifetimes"));

    // Three streams, each its own size mix, interleaved.
    let mut b = Builder::default();
    let mut r = Rng(41);
    let mut live: Vec<Vec<u32>> = vec![Vec::new(); 3];
    for step in 0..3000u64 {
        let s = (step % 3) as u32;
        let (lo, hi) = [(KIB, 256 * KIB), (MIB, 16 * MIB), (32 * MIB, 128 * MIB)][s as usize];
        live[s as usize].push(b.alloc(r.size(lo, hi), s));
        if live[s as usize].len() > 8 {
            let old = live[s as usize].remove(0);
            b.free(old);
        }
    }
    for l in live {
        for s in l {
            b.free(s);
        }
    }
    out.push(b.done("syn_three_streams"));

    // A steady working set with rare huge transients.
    let mut b = Builder::default();
    let mut r = Rng(53);
    let base: Vec<u32> = (0..100)
        .map(|_| b.alloc(r.size(MIB, 24 * MIB), 0))
        .collect();
    for step in 0..60 {
        let acts: Vec<u32> = (0..40)
            .map(|_| b.alloc(r.size(512 * KIB, 8 * MIB), 0))
            .collect();
        if step % 10 == 9 {
            let huge = b.alloc(r.size(512 * MIB, 1 << 30), 0);
            b.free(huge);
        }
        for s in acts {
            b.free(s);
        }
    }
    for s in base {
        b.free(s);
    }
    out.push(b.done("syn_huge_transients"));
    out
}
