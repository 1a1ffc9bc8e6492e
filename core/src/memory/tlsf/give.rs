//! Giving a carved block back: coalescing it with its free neighbours and
//! listing the merged block (anew, or in place of the list head it grows
//! from).

use super::SlicedEngine;
use super::classes::{NIL, mapping};

impl SlicedEngine {
    /// Returns a carved block, coalescing it with free neighbours.
    pub fn give(&mut self, i: u32) {
        if self.best_fit {
            self.give_in_place(i);
        } else {
            self.give_relisted(i);
        }
    }

    /// `give`: the merged block is listed anew.
    fn give_relisted(&mut self, i: u32) {
        let mut i = i;
        let next = self.blocks[i as usize].next_phys;
        if next != NIL && self.blocks[next as usize].free {
            self.remove_free(next);
            self.absorb_next(i);
            self.drop_block(next);
        }
        let prev = self.blocks[i as usize].prev_phys;
        if prev != NIL && self.blocks[prev as usize].free {
            self.remove_free(prev);
            self.absorb_next(prev);
            self.drop_block(i);
            i = prev;
        }
        self.insert_free(i);
    }

    /// `give` for the best-fit engines (reservations, where one large free
    /// block heads its class): a merged block that stays in the class of
    /// the list head it grows from keeps that place, as listing it anew
    /// would leave it.
    fn give_in_place(&mut self, i: u32) {
        let mut i = i;
        let next = self.blocks[i as usize].next_phys;
        // Whether block `i` already holds its final place in the lists.
        let mut listed = false;
        if next != NIL && self.blocks[next as usize].free {
            self.absorb_next(i);
            // `take_head` reads the sizes: the merged block's is set, the
            // absorbed one's is still its own.
            listed = self.take_head(next, i);
            if !listed {
                self.remove_free(next);
            }
            self.drop_block(next);
        }
        let prev = self.blocks[i as usize].prev_phys;
        if prev != NIL && self.blocks[prev as usize].free {
            if listed {
                self.remove_free(i);
            }
            let old = self.blocks[prev as usize].size;
            let grown = old + self.blocks[i as usize].size;
            let class = mapping(old >> self.shift);
            // A head that stays in its class keeps its place, as removing
            // and listing it again would leave it.
            listed =
                self.heads.get(class.0, class.1) == prev && mapping(grown >> self.shift) == class;
            if !listed {
                self.remove_free(prev);
            }
            self.absorb_next(prev);
            self.drop_block(i);
            i = prev;
        }
        if !listed {
            self.insert_free(i);
        }
    }

    /// If free block `old` heads its list and (not yet listed) block `new`
    /// maps to the same class, puts `new` in its place; whether it did.
    /// The lists end up as removing `old` and listing `new` would leave
    /// them, for less work.
    pub(super) fn take_head(&mut self, old: u32, new: u32) -> bool {
        let (fl, sl) = mapping(self.blocks[old as usize].size >> self.shift);
        if self.heads.get(fl, sl) != old
            || mapping(self.blocks[new as usize].size >> self.shift) != (fl, sl)
        {
            return false;
        }
        self.heads.replace(fl, sl, new);
        let after = self.blocks[old as usize].free_next;
        self.blocks[old as usize].free = false;
        if after != NIL {
            self.blocks[after as usize].free_prev = new;
        }
        let n = &mut self.blocks[new as usize];
        n.free = true;
        n.free_prev = NIL;
        n.free_next = after;
        true
    }

    /// Merges the block physically after block `i` into it (sizes and
    /// physical links; the lists and the absorbed entry are the caller's).
    fn absorb_next(&mut self, i: u32) {
        let next = self.blocks[i as usize].next_phys;
        let n = self.blocks[next as usize];
        let b = &mut self.blocks[i as usize];
        b.size += n.size;
        b.next_phys = n.next_phys;
        if n.next_phys != NIL {
            self.blocks[n.next_phys as usize].prev_phys = i;
        }
    }
}
