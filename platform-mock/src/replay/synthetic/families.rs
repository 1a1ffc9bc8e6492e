//! The ten workload families, each a generator of one trace from a seed
//! and its shape's parameters.

use std::string::String;
use std::vec::Vec;

use super::{Builder, KIB, MIB, Rng};
use crate::replay::trace::Trace;

/// Phases whose sizes do not overlap (`(lo, hi, count)` each), four steps
/// each, around a persistent set of 40 buffers of 1-32 MiB.
pub(super) fn three_phases(
    name: &str,
    seed: u64,
    phases: [(u64, u64, usize); 3],
) -> (String, Trace) {
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
pub(super) fn growing_cache(
    name: &str,
    seed: u64,
    start: u64,
    grow: u64,
    act_hi: u64,
) -> (String, Trace) {
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
pub(super) fn three_streams(
    name: &str,
    seed: u64,
    mixes: [(u64, u64); 3],
    keep: usize,
) -> (String, Trace) {
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
pub(super) fn huge_transients(
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
pub(super) fn random_lifetimes(
    name: &str,
    seed: u64,
    lo: u64,
    hi: u64,
    floor: usize,
) -> (String, Trace) {
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
pub(super) fn growing_pair(
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
pub(super) fn transformer_steps(
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
pub(super) fn serving(name: &str, seed: u64, max_live: usize, per_token: u64) -> (String, Trace) {
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
pub(super) fn pinned_fragments(
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
