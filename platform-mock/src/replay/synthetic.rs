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
            b.free_all(live.into_iter().rev());
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
        b.free_all(acts);
    }
    out.push(b.done("syn_growing_cache"));

    // Random sizes and lifetimes: no step structure at all.
    out.push(random_lifetimes(
        "syn_random_lifetimes",
        37,
        4 * KIB,
        64 * MIB,
        20,
    ));

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
        b.free_all(l);
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
        b.free_all(acts);
    }
    b.free_all(base);
    out.push(b.done("syn_huge_transients"));

    out.push(transformer_steps());
    out.push(serving());
    out.push(pinned_fragments());
    // Added with the churn budget, not tuned on: the random workload again
    // with another seed, other sizes and a larger live set; two caches
    // growing by fixed steps at different paces.
    out.push(random_lifetimes(
        "syn_random_lifetimes_b",
        101,
        64 * KIB,
        256 * MIB,
        40,
    ));
    out.push(growing_pair());
    out
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
fn growing_pair() -> (String, Trace) {
    let mut b = Builder::default();
    let mut r = Rng(89);
    let starts = [256 * MIB, 1 << 30];
    let steps = [48 * MIB, 24 * MIB];
    let every = [1, 3];
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
    b.done("syn_growing_pair")
}

/// A PyTorch-like training loop of a 12-layer transformer (hidden 768,
/// 12 heads, batch 8) with dynamic sequence lengths: fp16 weights and fp32
/// optimizer state kept throughout; each step draws a sequence length,
/// saves every layer's activations on the way forward (inputs, q/k/v,
/// attention scores and probabilities, MLP hidden), and on the way back
/// frees them layer by layer while allocating activation gradients
/// (temporary) and weight gradients (kept until the optimizer step), plus
/// small workspace buffers; the optimizer step frees the gradients.
fn transformer_steps() -> (String, Trace) {
    let mut b = Builder::default();
    let mut r = Rng(67);
    const H: u64 = 768;
    const HEADS: u64 = 12;
    const BATCH: u64 = 8;
    const LAYERS: usize = 12;
    // fp16 weights of one layer: qkv 3h², out h², MLP 8h²; biases small.
    let layer_weights = [3 * H * H * 2, H * H * 2, 4 * H * H * 2, 4 * H * H * 2];
    let mut persistent = Vec::new();
    for _ in 0..LAYERS {
        for &w in &layer_weights {
            persistent.push(b.alloc(w, 0));
            persistent.push(b.alloc(w / H, 0)); // bias
            // fp32 master copy, Adam's two moments.
            for _ in 0..3 {
                persistent.push(b.alloc(w * 2, 0));
            }
        }
    }
    let embed = 50_257 * H * 2;
    persistent.push(b.alloc(embed, 0));
    for _ in 0..3 {
        persistent.push(b.alloc(embed * 2, 0));
    }
    for _ in 0..24 {
        let seq = [128, 256, 384, 512][r.below(4) as usize];
        let tokens = BATCH * seq;
        let act = tokens * H * 2;
        let scores = BATCH * HEADS * seq * seq * 2;
        let mut saved: Vec<Vec<u32>> = Vec::new();
        let x0 = b.alloc(act, 0);
        for _ in 0..LAYERS {
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
    b.done("syn_transformer_steps")
}

/// An inference server on two streams: weights on stream 0; requests
/// arrive with random prompt lengths, prefill on stream 0 (temporary
/// activations sized by the prompt), then decode on stream 1 with a KV
/// cache that grows by 64 tokens at a time (a bigger buffer, the old one
/// freed) until the request ends after a random number of tokens.
fn serving() -> (String, Trace) {
    let mut b = Builder::default();
    let mut r = Rng(71);
    let weights: Vec<u32> = (0..40)
        .map(|_| b.alloc(r.size(8 * MIB, 64 * MIB), 0))
        .collect();
    // Per request: (kv slot, tokens so far, tokens to go).
    let mut live: Vec<(u32, u64, u64)> = Vec::new();
    // 160 KiB of KV cache per token (40 layers, 2 x 8 heads x 128 x fp16).
    const PER_TOKEN: u64 = 160 * KIB;
    for _ in 0..3000 {
        if live.len() < 24 && r.below(3) == 0 {
            let prompt = 32 + r.below(2000);
            let acts: Vec<u32> = (0..6).map(|_| b.alloc(prompt * 16 * KIB, 0)).collect();
            let kv = b.alloc((prompt + 64) * PER_TOKEN, 1);
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
                let bigger = b.alloc((tokens + 64) * PER_TOKEN, 1);
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
    b.done("syn_serving")
}

/// Long-lived small buffers pinned between large transient ones: each
/// round allocates large buffers (8-32 MiB) each followed by a small one
/// (64 KiB-1 MiB) that outlives the round, frees the large ones, then asks
/// for buffers larger than any hole left (40-64 MiB); a third of the pins
/// go each round.
fn pinned_fragments() -> (String, Trace) {
    let mut b = Builder::default();
    let mut r = Rng(79);
    let mut pins: Vec<u32> = Vec::new();
    for _ in 0..20 {
        let mut large = Vec::new();
        for _ in 0..24 {
            large.push(b.alloc(r.size(8 * MIB, 32 * MIB), 0));
            pins.push(b.alloc(r.size(64 * KIB, MIB), 0));
        }
        b.free_all(large);
        let big: Vec<u32> = (0..6)
            .map(|_| b.alloc(r.size(40 * MIB, 64 * MIB), 0))
            .collect();
        b.free_all(big);
        let drop = pins.len() / 3;
        for _ in 0..drop {
            let i = r.below(pins.len() as u64) as usize;
            let s = pins.swap_remove(i);
            b.free(s);
        }
    }
    b.free_all(pins);
    b.done("syn_pinned_fragments")
}
