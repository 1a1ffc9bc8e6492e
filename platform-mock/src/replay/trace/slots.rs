//! Slot numbers for a trace's allocations: dense, and reused once freed, so
//! a replay's table of live allocations is as long as the most allocations
//! live at once, not as long as the trace.

use std::vec::Vec;

/// Hands out slot numbers: the most recently freed one first, else the next
/// unused one. The numbering depends only on the order of allocs and frees,
/// so the loader and the synthetic workloads number the same events alike
/// (a written trace loads back as the same events).
#[derive(Clone, Debug, Default)]
pub(crate) struct SlotNumbers {
    /// The slots handed out so far (the next unused one).
    next: u32,
    /// Freed slots, the last freed on top.
    freed: Vec<u32>,
}

impl SlotNumbers {
    /// A slot for a new allocation; `None` once `u32::MAX` slots are live
    /// (no number is left for another).
    pub(crate) fn take(&mut self) -> Option<u32> {
        if let Some(slot) = self.freed.pop() {
            return Some(slot);
        }
        let slot = self.next;
        self.next = self.next.checked_add(1)?;
        Some(slot)
    }

    /// Gives `slot` back for a later allocation. Where the memory to
    /// remember it cannot be had, the slot is simply not reused: the
    /// numbering stays right (no live slot is handed out twice), only less
    /// dense.
    pub(crate) fn free(&mut self, slot: u32) {
        if self.freed.try_reserve(1).is_ok() {
            self.freed.push(slot);
        }
    }

    /// How many slots were handed out: every slot is below this.
    pub(crate) fn count(&self) -> u32 {
        self.next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against a naive model (the lowest number never handed out, or the
    /// last one freed), over a seeded mix of allocs and frees: every live
    /// slot is distinct, and the count is the most live at once.
    #[test]
    fn numbers_match_a_naive_model_and_stay_dense() {
        let mut numbers = SlotNumbers::default();
        let mut model_freed: Vec<u32> = Vec::new();
        let mut model_next = 0u32;
        let mut live: Vec<u32> = Vec::new();
        let mut most_live = 0usize;
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if live.is_empty() || x % 5 < 3 {
                let want = model_freed.pop().unwrap_or_else(|| {
                    model_next += 1;
                    model_next - 1
                });
                let got = numbers.take().unwrap();
                assert_eq!(got, want);
                assert!(!live.contains(&got), "slot {got} handed out twice");
                live.push(got);
                most_live = most_live.max(live.len());
            } else {
                let slot = live.swap_remove((x >> 8) as usize % live.len());
                numbers.free(slot);
                model_freed.push(slot);
            }
        }
        assert_eq!(numbers.count() as usize, most_live);
    }

    /// Past `u32::MAX` slots live at once there is no number left: `None`,
    /// not a wrapped number already in use.
    #[test]
    fn no_number_past_the_last() {
        let mut numbers = SlotNumbers {
            next: u32::MAX - 1,
            freed: Vec::new(),
        };
        assert_eq!(numbers.take(), Some(u32::MAX - 1));
        assert_eq!(numbers.take(), None);
        numbers.free(3);
        assert_eq!(numbers.take(), Some(3));
    }
}
