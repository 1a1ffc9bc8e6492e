//! The buffer table's tests.

use super::*;
use crate::device::SpinLock;
use crate::device::release_queue::{ReleaseQueue, family_of};
use crate::platform::PageId;

fn placed(o: u64) -> Location<u32> {
    Location::Placed {
        handle: o as u32,
        range: DeviceRange {
            page: PageId(1),
            offset: o,
            len: 8,
        },
    }
}

#[test]
fn stale_ids_are_rejected_after_reuse() {
    // A queue no device here uses.
    let q = ReleaseQueue::open(u64::MAX, family_of::<SpinLock>());
    let mut t = BufferTable::new(2);
    let a = t.insert(8, StreamId(0), placed(0), u64::MAX, q).unwrap();
    assert_eq!(t.live(), 1);
    t.set_uses(a.id(), &[0, 7]);
    t.remove(a.id()).unwrap();
    assert_eq!(t.get(a.id()).unwrap_err(), StaleBuffer(a.id()));
    assert_eq!(t.remove(a.id()).unwrap_err(), StaleBuffer(a.id()));
    let b = t.insert(8, StreamId(1), placed(8), u64::MAX, q).unwrap();
    assert_ne!(a.id(), b.id());
    assert_ne!(a.id().as_u64(), b.id().as_u64());
    assert_eq!(t.get(b.id()).unwrap().owner, StreamId(1));
    assert_eq!(
        t.get(b.id()).unwrap().last_use(),
        [0, 0],
        "a reused row starts clean"
    );
    assert_eq!(t.live(), 1);
    drop((a, b));
    let (shares, live) = t.shares();
    q.close(shares, live);
}

#[test]
fn growing_keeps_every_row() {
    // A queue no device here uses.
    let q = ReleaseQueue::open(u64::MAX, family_of::<SpinLock>());
    let mut t = BufferTable::new(0);
    t.grow(2);
    let a = t.insert(8, StreamId(0), placed(0), u64::MAX, q).unwrap();
    let b = t.insert(8, StreamId(1), placed(8), u64::MAX, q).unwrap();
    t.set_uses(a.id(), &[1, 2]);
    t.set_uses(b.id(), &[3, 4]);
    t.grow(3);
    assert_eq!(t.get(a.id()).unwrap().last_use(), [1, 2, 0]);
    assert_eq!(t.get(b.id()).unwrap().last_use(), [3, 4, 0]);
    t.remove(a.id()).unwrap();
    let c = t.insert(8, StreamId(2), placed(16), u64::MAX, q).unwrap();
    assert_eq!(t.get(c.id()).unwrap().last_use(), [0, 0, 0]);
    assert_eq!(t.get(b.id()).unwrap().last_use(), [3, 4, 0]);
    drop((a, b, c));
    let (shares, live) = t.shares();
    q.close(shares, live);
}

#[test]
fn uses_move_from_the_slots_to_rows_past_near_streams() {
    // A queue no device here uses.
    let q = ReleaseQueue::open(u64::MAX, family_of::<SpinLock>());
    let mut t = BufferTable::new(2);
    let a = t.insert(8, StreamId(0), placed(0), u64::MAX, q).unwrap();
    let b = t.insert(8, StreamId(1), placed(8), u64::MAX, q).unwrap();
    let c = t.insert(8, StreamId(1), placed(16), u64::MAX, q).unwrap();
    t.get_mut(a.id()).unwrap().mark_use(StreamId(1), 5, true);
    t.set_uses(b.id(), &[3, 4]);
    t.remove(c.id()).unwrap();
    t.grow(NEAR_STREAMS);
    assert_eq!(t.get(a.id()).unwrap().last_use(), [0, 5, 0, 0]);
    t.get_mut(a.id()).unwrap().mark_use(StreamId(3), 9, false);
    t.grow(NEAR_STREAMS + 2);
    let six = [0, 5, 0, 9, 0, 0];
    assert_eq!(t.get(a.id()).unwrap().last_use(), six);
    assert_eq!(t.get_mut(a.id()).unwrap().last_use(), six);
    assert_eq!(t.get(b.id()).unwrap().last_use(), [3, 4, 0, 0, 0, 0]);
    // Marks go to the rows now; a stream's own use needs no other.
    t.get_mut(b.id()).unwrap().mark_use(StreamId(5), 11, true);
    assert_eq!(t.get(b.id()).unwrap().last_use(), [3, 4, 0, 0, 0, 11]);
    assert!(!t.get_mut(b.id()).unwrap().used_only_by(StreamId(5)));
    // Idle only once every stream's use is complete; the row comes
    // back clean for the index's next buffer.
    assert!(t.remove_if_idle(b.id(), &[3, 4, 0, 0, 0, 10]).is_none());
    assert!(t.remove_if_idle(b.id(), &[3, 4, 0, 0, 0, 11]).is_some());
    let d = t.insert(8, StreamId(0), placed(24), u64::MAX, q).unwrap();
    let e = t.insert(8, StreamId(0), placed(32), u64::MAX, q).unwrap();
    assert_eq!(t.get(d.id()).unwrap().last_use(), [0; 6]);
    assert_eq!(t.get(e.id()).unwrap().last_use(), [0; 6]);
    assert_eq!(t.get(a.id()).unwrap().last_use(), six);
    drop((a, b, c, d, e));
    let (shares, live) = t.shares();
    q.close(shares, live);
}

#[test]
fn a_buffer_used_by_one_stream_is_idle_once_that_use_completes() {
    let q = ReleaseQueue::open(u64::MAX, family_of::<SpinLock>());
    let mut t = BufferTable::new(2);
    let a = t.insert(8, StreamId(0), placed(0), u64::MAX, q).unwrap();
    t.get_mut(a.id()).unwrap().mark_use(StreamId(1), 4, false);
    assert!(t.get_mut(a.id()).unwrap().used_only_by(StreamId(1)));
    assert!(t.remove_if_idle(a.id(), &[9, 3]).is_none());
    assert_eq!(t.remove_if_idle(a.id(), &[0, 4]).map(|r| r.2), Some(8));
    let b = t.insert(8, StreamId(0), placed(0), u64::MAX, q).unwrap();
    assert_eq!(t.get(b.id()).unwrap().last_use(), [0, 0]);
    drop((a, b));
    let (shares, live) = t.shares();
    q.close(shares, live);
}

/// What a launch on a device of at most two streams reads and writes of a
/// slot (users, where the bytes are, the last write, the first two
/// streams' uses) lies in the first line of its arena entry, after the
/// generation; the entry is two whole lines.
#[test]
fn a_launchs_part_of_a_slot_shares_the_generations_line() {
    use crate::arena::{LineAligned, entry_layout};
    use crate::memory::SliceHandle;
    use core::mem::{offset_of, size_of};
    type Slot = BufferSlot<SliceHandle>;
    let (value, entry, align) = entry_layout::<Slot, LineAligned>();
    assert_eq!((entry, align), (128, 64));
    // No tag before the slot: `Option` keeps its tag in a niche.
    assert_eq!(size_of::<Option<Slot>>(), size_of::<Slot>());
    let end_of = |offset: usize, len: usize| value + offset + len;
    for (what, end) in [
        ("users", end_of(offset_of!(Slot, users), 2)),
        ("writer", end_of(offset_of!(Slot, writer), 2)),
        ("placed", end_of(offset_of!(Slot, placed), 2)),
        (
            "range",
            end_of(offset_of!(Slot, range), size_of::<DeviceRange>()),
        ),
        ("written", end_of(offset_of!(Slot, written), 8)),
        ("near[..2]", end_of(offset_of!(Slot, near), 16)),
    ] {
        assert!(end <= 64, "{what} ends at {end}");
    }
}
