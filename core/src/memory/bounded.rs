//! Tables a manager fills only on some workloads (the growth steps of
//! large pages, the chunks trimmed by choice), bounded in length and
//! allocated when first needed: a manager that never needs one holds an
//! empty `Vec`, and one that does takes room for all of it at once, so a
//! warm manager allocates nothing more for it.

use alloc::vec::Vec;

/// Pushes `item` onto `table`, which holds at most `most` items, taking
/// room for all `most` with the first; whether it was pushed. Not when
/// the table is full, nor when that room could not be had: the tables are
/// hints, and an allocation failure drops the hint, never the manager.
pub(super) fn push_bounded<T>(table: &mut Vec<T>, most: usize, item: T) -> bool {
    if table.len() >= most {
        return false;
    }
    if table.capacity() == table.len() && table.try_reserve_exact(most - table.len()).is_err() {
        return false;
    }
    table.push(item);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Room for the whole table with the first item, none before it, and
    /// nothing past the bound.
    #[test]
    fn the_room_is_taken_whole_with_the_first_item() {
        let mut t: Vec<u32> = Vec::new();
        assert_eq!(t.capacity(), 0);
        assert!(push_bounded(&mut t, 4, 1));
        assert_eq!(t.capacity(), 4);
        for i in 2..=4 {
            assert!(push_bounded(&mut t, 4, i));
        }
        assert!(!push_bounded(&mut t, 4, 5), "full");
        assert_eq!((t.as_slice(), t.capacity()), (&[1, 2, 3, 4][..], 4));
        // Room that cannot be had: the item is dropped, nothing panics.
        let mut huge: Vec<u64> = Vec::new();
        assert!(!push_bounded(&mut huge, usize::MAX, 7));
        assert!(huge.is_empty());
    }
}
