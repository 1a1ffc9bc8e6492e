//! Synthetic allocation traces: workloads of other shapes than the
//! recorded ones, generated deterministically (a seeded xorshift), so a
//! policy can be judged on traces it was not tuned on.
//!
//! [`workloads`] lists them by name; `cargo run --release -p
//! streamcore-mock --example memory_model` prints what the driver model
//! predicts for each, and a test holds those figures. [`held_out`] is the
//! same ten families with other seeds and shapes, kept for checking a
//! change chosen on the first set (`memory_model --held-out`), and
//! [`fresh`] draws the same families' parameters from any seed, for a set
//! nobody has seen (`memory_model --seed N`).

use std::string::{String, ToString};
use std::vec;
use std::vec::Vec;

use super::trace::{SlotNumbers, Trace, TraceEvent};

mod families;
#[cfg(test)]
mod tests;

use families::{
    growing_cache, growing_pair, huge_transients, pinned_fragments, random_lifetimes, serving,
    three_phases, three_streams, transformer_steps,
};

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
    /// Numbered as the loader numbers them, so a written workload loads
    /// back as the same events.
    slots: SlotNumbers,
    streams: u32,
}

impl Builder {
    fn alloc(&mut self, size: u64, stream: u32) -> u32 {
        let slot = self
            .slots
            .take()
            .expect("a synthetic workload has far fewer than u32::MAX allocations live");
        self.streams = self.streams.max(stream + 1);
        self.events.push(TraceEvent::Alloc { slot, size, stream });
        slot
    }
    fn free(&mut self, slot: u32) {
        self.slots.free(slot);
        self.events.push(TraceEvent::Free { slot });
    }
    fn free_all(&mut self, slots: impl IntoIterator<Item = u32>) {
        for slot in slots {
            self.free(slot);
        }
    }
    fn done(self, name: &str) -> (String, Trace) {
        let mut t = Trace {
            events: self.events,
            slots: self.slots.count(),
            streams: self.streams,
            ..Trace::default()
        };
        t.header.workload = name.to_string();
        (name.to_string(), t)
    }
}

/// Workloads of other shapes than the recorded ones.
pub fn workloads() -> Vec<(String, Trace)> {
    vec![
        // Three phases whose sizes do not overlap, four steps each, a
        // persistent set kept throughout.
        three_phases(
            "syn_three_phases",
            11,
            [
                (MIB, 8 * MIB, 200),
                (20 * MIB, 80 * MIB, 40),
                (64 * KIB, 2 * MIB, 800),
            ],
        ),
        // A cache that grows 3% a step (new buffer, old one freed), with
        // transient activations around it.
        growing_cache("syn_growing_cache", 23, 64 * MIB, 32, 16 * MIB),
        // Random sizes and lifetimes: no step structure at all.
        random_lifetimes("syn_random_lifetimes", 37, 4 * KIB, 64 * MIB, 20),
        // Three streams, each its own size mix, interleaved.
        three_streams(
            "syn_three_streams",
            41,
            [(KIB, 256 * KIB), (MIB, 16 * MIB), (32 * MIB, 128 * MIB)],
            8,
        ),
        // A steady working set with rare huge transients.
        huge_transients(
            "syn_huge_transients",
            53,
            (100, MIB, 24 * MIB),
            (40, 512 * KIB, 8 * MIB),
            (10, 512 * MIB, 1 << 30),
        ),
        transformer_steps("syn_transformer_steps", 67, [768, 12, 8, 12]),
        // 160 KiB of KV cache per token (40 layers, 2 x 8 heads x 128 x fp16).
        serving("syn_serving", 71, 24, 160 * KIB),
        pinned_fragments(
            "syn_pinned_fragments",
            79,
            (8 * MIB, 32 * MIB),
            (40 * MIB, 64 * MIB),
        ),
        // Added with the churn budget, not tuned on: the random workload
        // again with another seed, other sizes and a larger live set; two
        // caches growing by fixed steps at different paces.
        random_lifetimes("syn_random_lifetimes_b", 101, 64 * KIB, 256 * MIB, 40),
        growing_pair(
            "syn_growing_pair",
            89,
            [256 * MIB, 1 << 30],
            [48 * MIB, 24 * MIB],
            [1, 3],
        ),
    ]
}

/// A held-out set: the same ten families as [`workloads`] with other seeds
/// and other shapes (sizes, counts, paces), written after the policy's
/// defaults were chosen and never tuned on. A change judged on
/// [`workloads`] is checked here before it is kept.
pub fn held_out() -> Vec<(String, Trace)> {
    vec![
        three_phases(
            "held_three_phases",
            13,
            [
                (2 * MIB, 12 * MIB, 150),
                (16 * MIB, 96 * MIB, 30),
                (32 * KIB, MIB, 1000),
            ],
        ),
        growing_cache("held_growing_cache", 29, 96 * MIB, 24, 24 * MIB),
        random_lifetimes("held_random_lifetimes", 202, 16 * KIB, 128 * MIB, 30),
        three_streams(
            "held_three_streams",
            43,
            [
                (4 * KIB, 512 * KIB),
                (2 * MIB, 24 * MIB),
                (24 * MIB, 96 * MIB),
            ],
            10,
        ),
        huge_transients(
            "held_huge_transients",
            97,
            (80, 2 * MIB, 32 * MIB),
            (30, MIB, 12 * MIB),
            (8, 384 * MIB, 3 << 29),
        ),
        transformer_steps("held_transformer_steps", 61, [1024, 16, 4, 8]),
        serving("held_serving", 173, 32, 128 * KIB),
        pinned_fragments(
            "held_pinned_fragments",
            131,
            (12 * MIB, 48 * MIB),
            (56 * MIB, 96 * MIB),
        ),
        random_lifetimes("held_random_lifetimes_b", 307, 256 * KIB, 512 * MIB, 24),
        growing_pair(
            "held_growing_pair",
            97,
            [512 * MIB, 768 * MIB],
            [32 * MIB, 16 * MIB],
            [1, 2],
        ),
    ]
}

/// A fresh set: the same ten families with every parameter drawn from
/// `seed` (sizes, counts, paces and the families' own seeds), over ranges
/// that span [`workloads`] and [`held_out`]. Nothing was tuned on it: a
/// seed picked when a change is judged (the date of the run, say) gives
/// workloads no choice of the policy can have seen. Names are
/// `fresh<seed>_<family>`.
pub fn fresh(seed: u64) -> Vec<(String, Trace)> {
    // xorshift needs a non-zero state; mix the seed so nearby seeds differ.
    let mut r = Rng((seed ^ 0x9e37_79b9_7f4a_7c15).wrapping_mul(0xbf58_476d_1ce4_e5b9) | 1);
    let name = |family: &str| std::format!("fresh{seed}_{family}");
    // A uniform integer in `lo..=hi`.
    let pick = |r: &mut Rng, lo: u64, hi: u64| lo + r.below(hi - lo + 1);
    let seeds = |r: &mut Rng| r.next() | 1;
    vec![
        three_phases(
            &name("three_phases"),
            seeds(&mut r),
            [
                {
                    let lo = r.size(MIB, 2 * MIB);
                    (lo, lo * pick(&mut r, 4, 8), pick(&mut r, 120, 240) as usize)
                },
                {
                    let lo = r.size(12 * MIB, 24 * MIB);
                    (lo, lo * pick(&mut r, 4, 6), pick(&mut r, 24, 48) as usize)
                },
                (
                    r.size(24 * KIB, 96 * KIB),
                    r.size(MIB, 2 * MIB),
                    pick(&mut r, 600, 1200) as usize,
                ),
            ],
        ),
        growing_cache(
            &name("growing_cache"),
            seeds(&mut r),
            // At most 96 MiB x (1 + 1/24)^120, 13 GiB, at the end.
            r.size(48 * MIB, 96 * MIB),
            pick(&mut r, 24, 40),
            r.size(12 * MIB, 32 * MIB),
        ),
        random_lifetimes(
            &name("random_lifetimes"),
            seeds(&mut r),
            r.size(4 * KIB, 32 * KIB),
            r.size(48 * MIB, 160 * MIB),
            pick(&mut r, 16, 40) as usize,
        ),
        three_streams(
            &name("three_streams"),
            seeds(&mut r),
            [
                (r.size(KIB, 8 * KIB), r.size(192 * KIB, 768 * KIB)),
                (r.size(MIB, 3 * MIB), r.size(12 * MIB, 32 * MIB)),
                (r.size(16 * MIB, 40 * MIB), r.size(80 * MIB, 160 * MIB)),
            ],
            pick(&mut r, 6, 12) as usize,
        ),
        huge_transients(
            &name("huge_transients"),
            seeds(&mut r),
            (
                pick(&mut r, 60, 120) as usize,
                r.size(MIB, 3 * MIB),
                r.size(16 * MIB, 40 * MIB),
            ),
            (
                pick(&mut r, 20, 50) as usize,
                r.size(256 * KIB, MIB),
                r.size(6 * MIB, 16 * MIB),
            ),
            {
                let lo = r.size(256 * MIB, 512 * MIB);
                (pick(&mut r, 6, 12), lo, lo * pick(&mut r, 2, 3))
            },
        ),
        transformer_steps(
            &name("transformer_steps"),
            seeds(&mut r),
            [
                [512, 768, 1024][r.below(3) as usize],
                [8, 12, 16][r.below(3) as usize],
                [4, 8][r.below(2) as usize],
                pick(&mut r, 6, 12),
            ],
        ),
        serving(
            &name("serving"),
            seeds(&mut r),
            pick(&mut r, 20, 40) as usize,
            pick(&mut r, 3, 6) * 32 * KIB,
        ),
        pinned_fragments(
            &name("pinned_fragments"),
            seeds(&mut r),
            {
                let lo = r.size(6 * MIB, 16 * MIB);
                (lo, lo * pick(&mut r, 3, 5))
            },
            {
                let lo = r.size(36 * MIB, 64 * MIB);
                (lo, lo * 3 / 2 + r.below(lo / 2))
            },
        ),
        random_lifetimes(
            &name("random_lifetimes_b"),
            seeds(&mut r),
            r.size(64 * KIB, 512 * KIB),
            r.size(192 * MIB, 512 * MIB),
            pick(&mut r, 20, 40) as usize,
        ),
        growing_pair(
            &name("growing_pair"),
            seeds(&mut r),
            [r.size(256 * MIB, 512 * MIB), r.size(640 * MIB, 1 << 30)],
            [r.size(24 * MIB, 48 * MIB), r.size(12 * MIB, 32 * MIB)],
            [1, pick(&mut r, 2, 3)],
        ),
    ]
}
