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
    fn free_all(&mut self, slots: impl IntoIterator<Item = u32>) {
        for slot in slots {
            self.free(slot);
        }
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

/// Phases whose sizes do not overlap (`(lo, hi, count)` each), four steps
/// each, around a persistent set of 40 buffers of 1-32 MiB.
fn three_phases(name: &str, seed: u64, phases: [(u64, u64, usize); 3]) -> (String, Trace) {
    let mut b = Builder::default();
    let mut r = Rng(seed);
    let _weights: Vec<u32> = (0..40).map(|_| b.alloc(r.size(MIB, 32 * MIB), 0)).collect();
    for (lo, hi, n) in phases {
        for _ in 0..4 {
            let live: Vec<u32> = (0..n).map(|_| b.alloc(r.size(lo, hi), 0)).collect();
            b.free_all(live.into_iter().rev());
        }
    }
    b.done(name)
}

/// A cache that grows by `1 / grow` a step for 120 steps (new buffer, old
/// one freed), with 30 transient activations of 256 KiB up to `act_hi`
/// around it.
fn growing_cache(name: &str, seed: u64, start: u64, grow: u64, act_hi: u64) -> (String, Trace) {
    let mut b = Builder::default();
    let mut r = Rng(seed);
    let mut cache = b.alloc(start, 0);
    let mut size = start;
    for _ in 0..120 {
        let acts: Vec<u32> = (0..30)
            .map(|_| b.alloc(r.size(256 * KIB, act_hi), 0))
            .collect();
        size += size / grow;
        let bigger = b.alloc(size.next_multiple_of(512), 0);
        b.free(cache);
        cache = bigger;
        b.free_all(acts);
    }
    b.done(name)
}

/// Three streams, each its own size mix, interleaved; each keeps its
/// `keep` newest buffers.
fn three_streams(name: &str, seed: u64, mixes: [(u64, u64); 3], keep: usize) -> (String, Trace) {
    let mut b = Builder::default();
    let mut r = Rng(seed);
    let mut live: Vec<Vec<u32>> = vec![Vec::new(); 3];
    for step in 0..3000u64 {
        let s = (step % 3) as u32;
        let (lo, hi) = mixes[s as usize];
        live[s as usize].push(b.alloc(r.size(lo, hi), s));
        if live[s as usize].len() > keep {
            let old = live[s as usize].remove(0);
            b.free(old);
        }
    }
    for l in live {
        b.free_all(l);
    }
    b.done(name)
}

/// A steady working set (`(count, lo, hi)`) with transient activations
/// each of 60 steps and, every `every` steps, one huge transient.
fn huge_transients(
    name: &str,
    seed: u64,
    (n_base, base_lo, base_hi): (usize, u64, u64),
    (n_acts, act_lo, act_hi): (usize, u64, u64),
    (every, huge_lo, huge_hi): (u64, u64, u64),
) -> (String, Trace) {
    let mut b = Builder::default();
    let mut r = Rng(seed);
    let base: Vec<u32> = (0..n_base)
        .map(|_| b.alloc(r.size(base_lo, base_hi), 0))
        .collect();
    for step in 0..60 {
        let acts: Vec<u32> = (0..n_acts)
            .map(|_| b.alloc(r.size(act_lo, act_hi), 0))
            .collect();
        if step % every == every - 1 {
            let huge = b.alloc(r.size(huge_lo, huge_hi), 0);
            b.free(huge);
        }
        b.free_all(acts);
    }
    b.free_all(base);
    b.done(name)
}

/// Random sizes (log-uniform in `lo..hi`) and lifetimes: after at least
/// `floor` live buffers, each step frees a random one or allocates.
fn random_lifetimes(name: &str, seed: u64, lo: u64, hi: u64, floor: usize) -> (String, Trace) {
    let mut b = Builder::default();
    let mut r = Rng(seed);
    let mut live: Vec<u32> = Vec::new();
    for _ in 0..10_000 {
        if live.len() > floor && r.below(100) < 50 {
            let i = r.below(live.len() as u64) as usize;
            let s = live.swap_remove(i);
            b.free(s);
        } else {
            live.push(b.alloc(r.size(lo, hi), 0));
        }
    }
    b.free_all(live);
    b.done(name)
}

/// Two caches growing by fixed steps (a new, larger buffer, then the old
/// one freed), one by 48 MiB every step from 256 MiB, the other by 24 MiB
/// every third step from 1 GiB, each restarting from its first size when
/// it passes 3 GiB (a new sequence), with a few transient buffers of
/// random sizes between the steps.
fn growing_pair(
    name: &str,
    seed: u64,
    starts: [u64; 2],
    steps: [u64; 2],
    every: [u64; 2],
) -> (String, Trace) {
    let mut b = Builder::default();
    let mut r = Rng(seed);
    let mut size = starts;
    let mut cache = [b.alloc(size[0], 0), b.alloc(size[1], 0)];
    for step in 0..240u64 {
        let acts: Vec<u32> = (0..6).map(|_| b.alloc(r.size(MIB, 96 * MIB), 0)).collect();
        for k in 0..2 {
            if step % every[k] != 0 {
                continue;
            }
            size[k] += steps[k];
            if size[k] > 3 << 30 {
                size[k] = starts[k];
            }
            let next = b.alloc(size[k], 0);
            b.free(cache[k]);
            cache[k] = next;
        }
        b.free_all(acts);
    }
    b.free_all(cache);
    b.done(name)
}

/// A PyTorch-like training loop of a 12-layer transformer (hidden 768,
/// 12 heads, batch 8) with dynamic sequence lengths: fp16 weights and fp32
/// optimizer state kept throughout; each step draws a sequence length,
/// saves every layer's activations on the way forward (inputs, q/k/v,
/// attention scores and probabilities, MLP hidden), and on the way back
/// frees them layer by layer while allocating activation gradients
/// (temporary) and weight gradients (kept until the optimizer step), plus
/// small workspace buffers; the optimizer step frees the gradients.
fn transformer_steps(
    name: &str,
    seed: u64,
    [h, heads, batch, layers]: [u64; 4],
) -> (String, Trace) {
    let mut b = Builder::default();
    let mut r = Rng(seed);
    // fp16 weights of one layer: qkv 3h², out h², MLP 8h²; biases small.
    let layer_weights = [3 * h * h * 2, h * h * 2, 4 * h * h * 2, 4 * h * h * 2];
    let mut persistent = Vec::new();
    for _ in 0..layers {
        for &w in &layer_weights {
            persistent.push(b.alloc(w, 0));
            persistent.push(b.alloc(w / h, 0)); // bias
            // fp32 master copy, Adam's two moments.
            for _ in 0..3 {
                persistent.push(b.alloc(w * 2, 0));
            }
        }
    }
    let embed = 50_257 * h * 2;
    persistent.push(b.alloc(embed, 0));
    for _ in 0..3 {
        persistent.push(b.alloc(embed * 2, 0));
    }
    for _ in 0..24 {
        let seq = [128, 256, 384, 512][r.below(4) as usize];
        let tokens = batch * seq;
        let act = tokens * h * 2;
        let scores = batch * heads * seq * seq * 2;
        let mut saved: Vec<Vec<u32>> = Vec::new();
        let x0 = b.alloc(act, 0);
        for _ in 0..layers {
            // Layer norm out, q/k/v, scores, probabilities, attention out.
            let mut keep = vec![
                b.alloc(act, 0),
                b.alloc(3 * act, 0),
                b.alloc(scores, 0),
                b.alloc(scores, 0),
                b.alloc(act, 0),
            ];
            let ws = b.alloc(r.size(4 * KIB, 2 * MIB), 0);
            b.free(ws);
            keep.push(b.alloc(4 * act, 0)); // MLP hidden
            keep.push(b.alloc(4 * act, 0)); // activation out
            keep.push(b.alloc(act, 0)); // residual
            saved.push(keep);
        }
        let logits = b.alloc(tokens * 50_257 * 2, 0);
        let loss_grad = b.alloc(tokens * 50_257 * 2, 0);
        b.free(logits);
        let mut grads = Vec::new();
        let mut upstream = b.alloc(act, 0);
        b.free(loss_grad);
        for keep in saved.into_iter().rev() {
            for &w in &layer_weights {
                grads.push(b.alloc(w, 0));
            }
            let t1 = b.alloc(4 * act, 0);
            let t2 = b.alloc(scores, 0);
            let next = b.alloc(act, 0);
            b.free(t2);
            b.free(t1);
            b.free(upstream);
            upstream = next;
            b.free_all(keep.into_iter().rev());
        }
        b.free(upstream);
        b.free(x0);
        grads.push(b.alloc(embed, 0));
        // The optimizer step, layer by layer, with a small temporary each.
        for g in grads {
            let t = b.alloc(r.size(KIB, 64 * KIB), 0);
            b.free(t);
            b.free(g);
        }
    }
    b.free_all(persistent);
    b.done(name)
}

/// An inference server on two streams: weights on stream 0; requests
/// arrive with random prompt lengths, prefill on stream 0 (temporary
/// activations sized by the prompt), then decode on stream 1 with a KV
/// cache that grows by 64 tokens at a time (a bigger buffer, the old one
/// freed) until the request ends after a random number of tokens.
fn serving(name: &str, seed: u64, max_live: usize, per_token: u64) -> (String, Trace) {
    let mut b = Builder::default();
    let mut r = Rng(seed);
    let weights: Vec<u32> = (0..40)
        .map(|_| b.alloc(r.size(8 * MIB, 64 * MIB), 0))
        .collect();
    // Per request: (kv slot, tokens so far, tokens to go).
    let mut live: Vec<(u32, u64, u64)> = Vec::new();
    for _ in 0..3000 {
        if live.len() < max_live && r.below(3) == 0 {
            let prompt = 32 + r.below(2000);
            let acts: Vec<u32> = (0..6).map(|_| b.alloc(prompt * 16 * KIB, 0)).collect();
            let kv = b.alloc((prompt + 64) * per_token, 1);
            b.free_all(acts);
            live.push((kv, prompt, 16 + r.below(1000)));
        }
        // One decode step for every live request.
        let mut i = 0;
        while i < live.len() {
            let (kv, tokens, left) = live[i];
            let scratch = b.alloc(r.size(64 * KIB, 4 * MIB), 1);
            b.free(scratch);
            if left <= 8 {
                b.free(kv);
                live.swap_remove(i);
                continue;
            }
            let tokens = tokens + 8;
            let kv = if tokens % 64 < 8 {
                let bigger = b.alloc((tokens + 64) * per_token, 1);
                b.free(kv);
                bigger
            } else {
                kv
            };
            live[i] = (kv, tokens, left - 8);
            i += 1;
        }
    }
    for (kv, _, _) in live {
        b.free(kv);
    }
    b.free_all(weights);
    b.done(name)
}

/// Long-lived small buffers pinned between large transient ones: each
/// round allocates large buffers (8-32 MiB) each followed by a small one
/// (64 KiB-1 MiB) that outlives the round, frees the large ones, then asks
/// for buffers larger than any hole left (40-64 MiB); a third of the pins
/// go each round.
fn pinned_fragments(
    name: &str,
    seed: u64,
    (large_lo, large_hi): (u64, u64),
    (big_lo, big_hi): (u64, u64),
) -> (String, Trace) {
    let mut b = Builder::default();
    let mut r = Rng(seed);
    let mut pins: Vec<u32> = Vec::new();
    for _ in 0..20 {
        let mut large = Vec::new();
        for _ in 0..24 {
            large.push(b.alloc(r.size(large_lo, large_hi), 0));
            pins.push(b.alloc(r.size(64 * KIB, MIB), 0));
        }
        b.free_all(large);
        let big: Vec<u32> = (0..6).map(|_| b.alloc(r.size(big_lo, big_hi), 0)).collect();
        b.free_all(big);
        let drop = pins.len() / 3;
        for _ in 0..drop {
            let i = r.below(pins.len() as u64) as usize;
            let s = pins.swap_remove(i);
            b.free(s);
        }
    }
    b.free_all(pins);
    b.done(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks a trace's events make sense (every slot allocated once, every
    /// free names a live slot) and returns its peak live bytes.
    fn peak_live(trace: &Trace) -> u64 {
        let mut sizes: Vec<Option<u64>> = vec![None; trace.slots as usize];
        let (mut live, mut peak) = (0u64, 0u64);
        for e in &trace.events {
            match *e {
                TraceEvent::Alloc { slot, size, stream } => {
                    assert!(stream < trace.streams);
                    assert!(size > 0 && size % 512 == 0, "size {size}");
                    assert!(sizes[slot as usize].replace(size).is_none());
                    live += size;
                    peak = peak.max(live);
                }
                TraceEvent::Free { slot } => {
                    let size = sizes[slot as usize].take();
                    assert!(size.is_some(), "a free of a slot not live");
                    live -= size.unwrap_or(0);
                }
            }
        }
        peak
    }

    #[test]
    fn a_fresh_set_is_the_ten_families_drawn_from_its_seed() {
        let seen = workloads();
        let a = fresh(20_261_201);
        assert_eq!(a.len(), seen.len());
        for ((sn, _), (fname, ft)) in seen.iter().zip(&a) {
            assert_eq!(
                fname.strip_prefix("fresh20261201_"),
                sn.strip_prefix("syn_"),
                "the same family, in order"
            );
            assert_eq!(ft.header.workload, *fname);
            let peak = peak_live(ft);
            assert!(
                (1 << 20..=40 << 30).contains(&peak),
                "{fname}: peak live {peak} B must fit one GPU with room"
            );
        }
        // The same seed, the same events; another seed, other events and
        // other shapes.
        let again = fresh(20_261_201);
        assert!(a.iter().zip(&again).all(|(x, y)| x.1.events == y.1.events));
        let b = fresh(20_261_202);
        for ((an, at), (bn, bt)) in a.iter().zip(&b) {
            assert_ne!(an, bn);
            assert_ne!(at.events, bt.events, "{an}");
            assert_ne!(peak_live(at), peak_live(bt), "{an}: other sizes");
        }
    }

    #[test]
    fn fresh_sets_of_many_seeds_are_valid_traces() {
        for seed in 0..24 {
            for (name, trace) in fresh(seed) {
                let peak = peak_live(&trace);
                assert!(peak <= 40 << 30, "{name}: peak live {peak} B");
            }
        }
    }
}
