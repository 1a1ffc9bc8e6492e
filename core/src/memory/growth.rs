//! Which large pages are a growing buffer's steps.
//!
//! A buffer that grows (a cache, a batch of growing sequence length)
//! allocates its next, larger page and then frees the one before. With
//! `MemoryPolicy::large_page_space`, large pages are carved best fit from
//! the space all pages share; a growing buffer's next step there lands
//! wherever it fits and commits itself whole, while trimming gives back
//! the granules the step before left. A growing buffer's steps are better
//! served by reservations of their own (see [`large`](super::large)),
//! where each step commits only its growth.
//!
//! This tracker tells them apart from what the manager sees: a large page
//! freed while the large page carved just before it (at most
//! [`STEP_WINDOW`] reserves earlier) is larger is a step, and the larger
//! page one step deeper than it. Once a live page is [`OWN_DEPTH`] steps
//! deep, a new large page larger than it is taken for its next step. The
//! tracker holds at most [`STEP_SLOTS`] live steps (bounded memory; a
//! step found while all are taken is not tracked). Their table is
//! allocated with the first step found, not with the manager: a device
//! whose pages never reach the large-page size (every firmware target's)
//! pays a few words for it, not the table (BENCHMARKS.md section 5 has
//! what that saves on the firmware images). If that one allocation
//! fails, the step is not tracked, as when the table is full.

use alloc::vec::Vec;

use super::bounded::push_bounded;

/// Live growth steps tracked at once.
pub(super) const STEP_SLOTS: usize = 16;

/// How deep a live step must be before a larger new page counts as the
/// next step: one step alone is often a transient replaced by a larger
/// one (a network's activations at a new resolution), two in a row are a
/// buffer growing.
pub(super) const OWN_DEPTH: u32 = 2;

/// The most reserves between a larger page's carving and the smaller
/// page's free for the pair to be a growth step (a buffer copies its
/// contents between the two: nothing else is allocated in between).
pub(super) const STEP_WINDOW: u64 = 1;

/// A large page: where it lives and its size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct LargePage {
    /// Its lane and its block in that lane's engine.
    pub lane: u8,
    pub block: u32,
    /// Its bytes.
    pub size: u64,
}

/// A live page found to be a growth step, and how many steps deep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Step {
    page: LargePage,
    depth: u32,
}

/// The growth steps among the live large pages of one manager.
#[derive(Clone, Debug, Default)]
pub(super) struct GrowthSteps {
    /// The large page carved last, and the reserve count then.
    last: Option<(u64, LargePage)>,
    /// The live steps, at most [`STEP_SLOTS`]; room for all of them is
    /// taken with the first (so a warm manager allocates nothing here).
    steps: Vec<Step>,
}

impl GrowthSteps {
    /// A large page was carved when the manager had served `stamp`
    /// reserves.
    pub(super) fn carved(&mut self, stamp: u64, page: LargePage) {
        self.last = Some((stamp, page));
    }

    /// A large page was freed when the manager had served `stamp`
    /// reserves: it stops being tracked, and the page carved last becomes
    /// one step deeper than it if that page is larger, another page, and
    /// was carved at most [`STEP_WINDOW`] reserves before.
    pub(super) fn freed(&mut self, stamp: u64, page: LargePage) {
        let mut depth = 0;
        let same = |s: &Step| s.page.lane == page.lane && s.page.block == page.block;
        if let Some(i) = self.steps.iter().position(same) {
            depth = self.steps.swap_remove(i).depth;
        }
        let Some((at, next)) = self.last else {
            return;
        };
        let other = next.lane != page.lane || next.block != page.block;
        if next.size > page.size && stamp.saturating_sub(at) <= STEP_WINDOW && other {
            let depth = depth.saturating_add(1);
            // Already a step (of another page freed in the window): the
            // deeper count stands.
            if let Some(s) = self.steps.iter_mut().find(|s| s.page == next) {
                s.depth = s.depth.max(depth);
            } else {
                push_bounded(&mut self.steps, STEP_SLOTS, Step { page: next, depth });
            }
        }
    }

    /// Whether a new large page of `bytes` is taken for a growing buffer's
    /// next step: a live page at least [`OWN_DEPTH`] steps deep is smaller.
    pub(super) fn is_next_step(&self, bytes: u64) -> bool {
        self.steps
            .iter()
            .any(|s| s.page.size < bytes && s.depth >= OWN_DEPTH)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    fn page(lane: u8, block: u32, size: u64) -> LargePage {
        LargePage { lane, block, size }
    }

    /// A buffer growing 1 -> 2 -> 3 -> 4 (each step carved, then the one
    /// before freed): the third step is found once two live steps stand
    /// behind it.
    #[test]
    fn a_buffer_growing_two_steps_deep_is_found() {
        let mut g = GrowthSteps::default();
        g.carved(0, page(0, 1, 100));
        assert!(!g.is_next_step(200));
        g.carved(1, page(0, 2, 200));
        g.freed(1, page(0, 1, 100));
        assert!(!g.is_next_step(300), "one step deep: not yet");
        g.carved(2, page(0, 3, 300));
        g.freed(2, page(0, 2, 200));
        assert!(g.is_next_step(400), "two steps deep");
        assert!(!g.is_next_step(300), "not larger than the live step");
        // The step freed with nothing larger after it ends the chain.
        g.freed(5, page(0, 3, 300));
        assert!(!g.is_next_step(400));
    }

    /// A smaller page freed two reserves after the larger one was carved
    /// (the first step, between pages whose blocks have the same number in
    /// two lanes, counted and then dropped with its page), a page freed
    /// right after its own carving, or a carved page smaller than the one
    /// freed: no step left.
    #[test]
    fn pairs_that_are_not_steps_are_not_counted() {
        let mut g = GrowthSteps::default();
        g.carved(0, page(1, 1, 100));
        g.carved(1, page(0, 1, 200));
        g.freed(1, page(1, 1, 100));
        g.carved(5, page(0, 2, 300));
        g.freed(7, page(0, 1, 200)); // 2 reserves later: outside the window
        assert!(!g.is_next_step(400));
        let mut g = GrowthSteps::default();
        g.carved(0, page(0, 1, 300));
        g.freed(0, page(0, 1, 300)); // the page carved last, freed itself
        g.carved(1, page(0, 2, 100));
        g.freed(1, page(0, 3, 200)); // the carved one is smaller
        assert_eq!(g.steps.len(), 0);
        assert_eq!(g.steps.capacity(), 0, "no step found: no table allocated");
    }

    /// Against a naive model (a list of every live page with its depth)
    /// over pseudo-random carve and free sequences: the same answers, and
    /// never more than [`STEP_SLOTS`] steps held.
    #[test]
    fn matches_a_naive_model() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..200 {
            let mut g = GrowthSteps::default();
            // The model: (page, depth) of every step, unbounded.
            let mut model: Vec<(LargePage, u32)> = Vec::new();
            let mut last: Option<(u64, LargePage)> = None;
            let mut live: Vec<LargePage> = Vec::new();
            let mut stamp = 0;
            for b in 0..120u32 {
                stamp += next() % 3;
                if live.is_empty() || next() % 2 == 0 {
                    let p = page((next() % 2) as u8, b, 1 + next() % 8);
                    g.carved(stamp, p);
                    last = Some((stamp, p));
                    live.push(p);
                } else {
                    let p = live.swap_remove((next() % live.len() as u64) as usize);
                    g.freed(stamp, p);
                    let depth = model
                        .iter()
                        .position(|(q, _)| *q == p)
                        .map_or(0, |i| model.remove(i).1);
                    if let Some((at, n)) = last {
                        if n.size > p.size && stamp - at <= STEP_WINDOW && n != p {
                            let room = model.len() < STEP_SLOTS;
                            match model.iter_mut().find(|(q, _)| *q == n) {
                                Some((_, d)) => *d = (*d).max(depth + 1),
                                None if room => model.push((n, depth + 1)),
                                None => {}
                            }
                        }
                    }
                }
                assert!(g.steps.capacity() <= STEP_SLOTS.max(g.steps.len()));
                let mut held: Vec<_> = g.steps.iter().map(|s| (s.page.block, s.depth)).collect();
                let mut want: Vec<_> = model.iter().map(|(p, d)| (p.block, *d)).collect();
                held.sort_unstable();
                want.sort_unstable();
                assert_eq!(held, want);
                for bytes in 1..10 {
                    let want = model.iter().any(|(p, d)| p.size < bytes && *d >= OWN_DEPTH);
                    assert_eq!(g.is_next_step(bytes), want, "{bytes}");
                }
            }
        }
    }
}
