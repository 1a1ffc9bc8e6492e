//! Unit tests: one per rule of the drop queue.

use alloc::rc::Rc;
use alloc::vec::Vec;
use core::cell::RefCell;

use super::*;
use crate::platform::DeviceProperties;

/// An item that logs its id when dropped, to prove nothing is dropped or
/// released twice.
#[derive(Debug)]
struct Tracked {
    id: u32,
    drops: Rc<RefCell<Vec<u32>>>,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.drops.borrow_mut().push(self.id);
    }
}

fn tracked(drops: &Rc<RefCell<Vec<u32>>>, id: u32) -> Tracked {
    Tracked {
        id,
        drops: Rc::clone(drops),
    }
}

const POLICY: FlushPolicy = FlushPolicy {
    max_items: 3,
    max_bytes: 100,
};

fn ok_fence(f: u64) -> impl FnOnce() -> Result<u64, &'static str> {
    move || Ok(f)
}

fn passed_upto(done: u64) -> impl FnMut(&u64) -> Result<bool, &'static str> {
    move |f| Ok(*f <= done)
}

fn props(total: u64, integrated: bool) -> DeviceProperties {
    DeviceProperties {
        total_memory: total,
        max_page_size: 1 << 21,
        alignment: 256,
        integrated,
    }
}

#[test]
fn presets_and_device_policy() {
    assert_eq!(FlushPolicy::discrete().max_items, 64);
    assert_eq!(FlushPolicy::integrated().max_items, 16);
    assert!(FlushPolicy::integrated().max_bytes < FlushPolicy::discrete().max_bytes);
    assert_eq!(FlushPolicy::default(), FlushPolicy::discrete());

    let big = 141 << 30;
    assert_eq!(
        FlushPolicy::for_device(&props(big, false)),
        FlushPolicy::discrete()
    );
    assert_eq!(
        FlushPolicy::for_device(&props(big, true)),
        FlushPolicy::integrated()
    );
    // Unknown size keeps the preset.
    assert_eq!(
        FlushPolicy::for_device(&props(0, true)),
        FlushPolicy::integrated()
    );
    // A 1 GiB device holds back at most 4 MiB.
    let small = FlushPolicy::for_device(&props(1 << 30, false));
    assert_eq!(small.max_items, 64);
    assert_eq!(small.max_bytes, 4 << 20);
    // Never below the floor.
    let tiny = FlushPolicy::for_device(&props(1 << 20, true));
    assert_eq!(tiny.max_bytes, FlushPolicy::MIN_BYTES);
}

/// The room a queue takes up front follows its policy: four flushes'
/// worth, between 16 and 256 items.
#[test]
fn a_queue_makes_room_for_four_flushes() {
    assert_eq!(FlushPolicy::discrete().queue_room(), 256);
    assert_eq!(FlushPolicy::integrated().queue_room(), 64);
    let with = |max_items| FlushPolicy {
        max_items,
        max_bytes: 1 << 20,
    };
    assert_eq!(with(0).queue_room(), 16);
    assert_eq!(with(5).queue_room(), 20);
    assert_eq!(with(1000).queue_room(), 256);
    assert_eq!(with(usize::MAX).queue_room(), 256);
}

#[test]
fn push_reports_due_by_count_or_bytes_whichever_first() {
    let mut q: DropQueue<u32, u64> = DropQueue::new(POLICY);
    assert_eq!(q.push(1, 10), Pushed::Staged);
    assert_eq!(q.push(2, 10), Pushed::Staged);
    assert!(!q.is_flush_due());
    assert_eq!(
        q.push(3, 10),
        Pushed::FlushDue,
        "third item reaches max_items"
    );
    assert!(q.is_flush_due());
    assert_eq!(q.push(4, 0), Pushed::FlushDue, "stays due until flushed");
    q.flush_with(ok_fence(1)).unwrap();
    assert!(!q.is_flush_due());

    assert_eq!(q.push(5, 99), Pushed::Staged);
    assert_eq!(q.push(6, 1), Pushed::FlushDue, "100 bytes reach max_bytes");
    assert_eq!(q.staged_len(), 2);
    assert_eq!(q.staged_bytes(), 100);
}

#[test]
fn flush_seals_staged_items_behind_the_fence() {
    let mut q: DropQueue<u32, u64> = DropQueue::new(POLICY);
    let mut calls = 0;
    let r = q.flush_with(|| {
        calls += 1;
        Ok::<u64, ()>(1)
    });
    assert_eq!(r, Ok(Flushed::Nothing));
    assert_eq!(calls, 0, "no fence is recorded for nothing");

    let _ = q.push(1, 5);
    let _ = q.push(2, 6);
    assert_eq!(
        q.flush_with(ok_fence(9)),
        Ok(Flushed::Sealed {
            items: 2,
            bytes: 11
        })
    );
    assert_eq!(
        (q.staged_len(), q.pending_len(), q.pending_bytes()),
        (0, 2, 11)
    );
    assert_eq!(q.pending_batches(), 1);
    assert_eq!(q.oldest_fence(), Some(&9));
    assert_eq!(q.len(), 2);
}

#[test]
fn reclaim_releases_passed_batches_oldest_first_and_stops_at_first_unpassed() {
    let mut q: DropQueue<u32, u64> = DropQueue::new(POLICY);
    for (fence, items) in [(1, [10, 11]), (2, [20, 21]), (3, [30, 31])] {
        for i in items {
            let _ = q.push(i, 1);
        }
        q.flush_with(ok_fence(fence)).unwrap();
    }
    let mut asked = Vec::new();
    let mut released = Vec::new();
    let n = q
        .reclaim(
            |f: &u64| {
                asked.push(*f);
                // Fence 3 claims to have passed, but 2 has not: in-order
                // streams make that impossible, and 3 is never asked.
                Ok::<_, ()>(*f != 2)
            },
            |i| released.push(i),
        )
        .unwrap();
    assert_eq!(n, 2);
    assert_eq!(released, [10, 11]);
    assert_eq!(asked, [1, 2]);
    assert_eq!(q.pending_batches(), 2);

    let n = q.reclaim(passed_upto(3), |i| released.push(i)).unwrap();
    assert_eq!(n, 4);
    assert_eq!(released, [10, 11, 20, 21, 30, 31]);
    assert!(q.is_empty());
    assert_eq!(q.reclaim(passed_upto(3), |_| ()).unwrap(), 0);
}

#[test]
fn staged_items_are_never_released_by_reclaim_or_drain() {
    let mut q: DropQueue<u32, u64> = DropQueue::new(POLICY);
    let _ = q.push(1, 1);
    let mut released = Vec::new();
    assert_eq!(
        q.reclaim(passed_upto(u64::MAX), |i| released.push(i)),
        Ok(0)
    );
    assert_eq!(q.drain(|_| Ok::<_, ()>(()), |i| released.push(i)), Ok(0));
    assert!(released.is_empty());
    assert_eq!(q.staged_len(), 1);
}

#[test]
fn wait_oldest_and_drain_block_through_the_callers_sync() {
    let mut q: DropQueue<u32, u64> = DropQueue::new(POLICY);
    for f in 1..=3u64 {
        let _ = q.push(f as u32, 1);
        q.flush_with(ok_fence(f)).unwrap();
    }
    let mut synced = Vec::new();
    let mut released = Vec::new();
    let n = q
        .wait_oldest(
            |f: &u64| {
                synced.push(*f);
                Ok::<_, ()>(())
            },
            |i| released.push(i),
        )
        .unwrap();
    assert_eq!((n, &synced[..], &released[..]), (1, &[1][..], &[1][..]));

    let n = q
        .drain(
            |f: &u64| {
                synced.push(*f);
                Ok::<_, ()>(())
            },
            |i| released.push(i),
        )
        .unwrap();
    assert_eq!(n, 2);
    assert_eq!(synced, [1, 2, 3]);
    assert_eq!(released, [1, 2, 3]);
    assert_eq!(q.wait_oldest(|_| Ok::<_, ()>(()), |_| ()), Ok(0));
}

#[test]
fn record_error_keeps_items_staged_and_drops_nothing() {
    let drops = Rc::new(RefCell::new(Vec::new()));
    let mut q: DropQueue<Tracked, u64> = DropQueue::new(POLICY);
    let _ = q.push(tracked(&drops, 1), 8);
    let _ = q.push(tracked(&drops, 2), 8);
    let r = q.flush_with(|| Err::<u64, _>("device lost"));
    assert_eq!(r, Err(DropQueueError::Fence("device lost")));
    assert!(drops.borrow().is_empty());
    assert_eq!(
        (q.staged_len(), q.staged_bytes(), q.pending_len()),
        (2, 16, 0)
    );

    // The retry seals them and they are released exactly once.
    q.flush_with(ok_fence(1)).unwrap();
    let mut out = Vec::new();
    q.reclaim(passed_upto(1), |t| out.push(t)).unwrap();
    assert!(
        drops.borrow().is_empty(),
        "release takes ownership; no drop"
    );
    let ids: Vec<u32> = out.iter().map(|t| t.id).collect();
    assert_eq!(ids, [1, 2]);
    drop(out);
    assert_eq!(*drops.borrow(), [1, 2]);
}

#[test]
fn query_and_sync_errors_lose_no_item() {
    let drops = Rc::new(RefCell::new(Vec::new()));
    let mut q: DropQueue<Tracked, u64> = DropQueue::new(POLICY);
    for f in 1..=3u32 {
        let _ = q.push(tracked(&drops, f), 1);
        q.flush_with(ok_fence(u64::from(f))).unwrap();
    }
    let mut out = Vec::new();
    let r = q.reclaim(
        |f: &u64| {
            if *f == 2 {
                Err("query failed")
            } else {
                Ok(true)
            }
        },
        |t| out.push(t.id),
    );
    assert_eq!(r, Err(DropQueueError::Fence("query failed")));
    assert_eq!(out, [1], "the batch before the error stays released");
    assert_eq!((q.pending_batches(), q.oldest_fence()), (2, Some(&2)));

    let r = q.drain(
        |f: &u64| if *f == 3 { Err("sync failed") } else { Ok(()) },
        |t| out.push(t.id),
    );
    assert_eq!(r, Err(DropQueueError::Fence("sync failed")));
    assert_eq!(out, [1, 2]);
    let r = q.wait_oldest(|_| Err("sync failed"), |t| out.push(t.id));
    assert_eq!(r, Err(DropQueueError::Fence("sync failed")));
    assert_eq!(q.pending_len(), 1);
    // Only the released items were dropped (by the release closure).
    assert_eq!(*drops.borrow(), [1, 2]);

    q.drain(|_| Ok::<_, ()>(()), |t| out.push(t.id)).unwrap();
    assert_eq!(out, [1, 2, 3]);
    assert_eq!(*drops.borrow(), [1, 2, 3]);
}

#[test]
fn dropping_the_queue_drops_each_held_item_once() {
    let drops = Rc::new(RefCell::new(Vec::new()));
    {
        let mut q: DropQueue<Tracked, u64> = DropQueue::new(POLICY);
        let _ = q.push(tracked(&drops, 1), 1);
        q.flush_with(ok_fence(1)).unwrap();
        let _ = q.push(tracked(&drops, 2), 1);
        assert!(drops.borrow().is_empty());
    }
    assert_eq!(*drops.borrow(), [1, 2]);
}

#[test]
fn recording_defers_fenced_flushes_and_reports_them_owed() {
    let mut q: DropQueue<u32, u64> = DropQueue::new(POLICY);
    let _ = q.push(1, 1);
    q.flush_with(ok_fence(1)).unwrap();

    assert!(!q.set_recording(true));
    assert!(q.is_recording());
    assert_eq!(q.push(2, 1), Pushed::Staged);
    assert_eq!(q.push(3, 1), Pushed::Staged);
    assert!(!q.flush_owed());
    assert_eq!(q.push(4, 1), Pushed::FlushOwed, "due while recording");
    assert!(q.flush_owed());

    // No fence is recorded, polled or waited on while recording.
    let mut recorded = false;
    let r = q.flush_with(|| {
        recorded = true;
        Ok::<u64, ()>(2)
    });
    assert_eq!(r, Ok(Flushed::Deferred));
    assert!(!recorded);
    let mut polled = false;
    let r = q.reclaim(
        |_| {
            polled = true;
            Ok::<_, ()>(true)
        },
        |_| (),
    );
    assert_eq!(r, Ok(0));
    assert!(!polled);
    let mut synced = false;
    let mut sync = |_: &u64| {
        synced = true;
        Ok::<_, ()>(())
    };
    assert_eq!(q.drain(&mut sync, |_| ()), Err(DropQueueError::Recording));
    assert_eq!(
        q.wait_oldest(&mut sync, |_| ()),
        Err(DropQueueError::Recording)
    );
    assert!(!synced);
    assert_eq!((q.staged_len(), q.pending_len()), (3, 1));

    // After the capture the owed flush runs.
    assert!(q.set_recording(false), "the flush is owed after end");
    assert_eq!(q.push(5, 1), Pushed::FlushDue);
    assert_eq!(
        q.flush_with(ok_fence(2)),
        Ok(Flushed::Sealed { items: 4, bytes: 4 })
    );
    assert!(!q.flush_owed());
    let mut out = Vec::new();
    q.reclaim(passed_upto(2), |i| out.push(i)).unwrap();
    assert_eq!(out, [1, 2, 3, 4, 5]);
}

#[test]
fn a_flush_asked_for_while_recording_is_owed_even_below_thresholds() {
    let mut q: DropQueue<u32, u64> = DropQueue::new(POLICY);
    q.set_recording(true);
    let _ = q.push(1, 1);
    assert_eq!(q.flush_with(ok_fence(1)), Ok(Flushed::Deferred));
    assert!(q.flush_owed());
    assert_eq!(
        q.push(2, 1),
        Pushed::FlushOwed,
        "an owed flush keeps being reported"
    );
    assert!(q.set_recording(false));
    assert!(q.is_flush_due());
    assert_eq!(q.push(3, 1), Pushed::FlushDue);
    q.flush_with(ok_fence(1)).unwrap();
    assert!(!q.flush_owed());
}

#[test]
fn owed_flush_survives_a_failed_record_after_the_capture() {
    let mut q: DropQueue<u32, u64> = DropQueue::new(POLICY);
    q.set_recording(true);
    let _ = q.push(1, 1);
    let _ = q.flush_with(ok_fence(1));
    q.set_recording(false);
    assert_eq!(
        q.flush_with(|| Err::<u64, _>("busy")),
        Err(DropQueueError::Fence("busy"))
    );
    assert!(q.flush_owed());
    assert_eq!(q.staged_len(), 1);
}

#[test]
fn bounded_queue_returns_the_item_when_full() {
    let mut q: BoundedDropQueue<u32, u64, 3, 2> = BoundedDropQueue::new(POLICY);
    assert_eq!(q.push(1, 1), Ok(Pushed::Staged));
    assert_eq!(q.push(2, 1), Ok(Pushed::Staged));
    q.flush_with(ok_fence(1)).unwrap();
    assert_eq!(q.push(3, 1), Ok(Pushed::Staged));
    assert!(q.is_full());
    assert_eq!(q.push(4, 7), Err(QueueFull { item: 4, bytes: 7 }));
    assert_eq!((q.staged_len(), q.staged_bytes(), q.len()), (1, 1, 3));

    // Make room: the non-blocking path first, then the blocking one.
    assert_eq!(q.reclaim(passed_upto(0), |_| ()), Ok(0));
    assert!(q.is_full());
    let mut out = Vec::new();
    assert_eq!(q.wait_oldest(|_| Ok::<_, ()>(()), |i| out.push(i)), Ok(2));
    assert_eq!(out, [1, 2]);
    assert_eq!(q.push(4, 7), Ok(Pushed::Staged));
}

#[test]
fn bounded_queue_joins_the_newest_batch_when_batches_are_full() {
    let mut q: BoundedDropQueue<u32, u64, 8, 2> = BoundedDropQueue::new(POLICY);
    for f in 1..=3u64 {
        let _ = q.push(f as u32, 10).unwrap();
        q.flush_with(ok_fence(f)).unwrap();
    }
    assert_eq!(q.pending_batches(), 2);
    assert_eq!(q.pending_bytes(), 30);
    let mut out = Vec::new();
    // Fence 2 passed, but item 2 now waits for fence 3: late, never early.
    q.reclaim(passed_upto(2), |i| out.push(i)).unwrap();
    assert_eq!(out, [1]);
    q.reclaim(passed_upto(3), |i| out.push(i)).unwrap();
    assert_eq!(out, [1, 2, 3]);
    assert_eq!(q.pending_bytes(), 0);
}

#[test]
fn growable_queue_reuses_its_buffers() {
    let mut q: DropQueue<u32, u64> = DropQueue::with_capacity(POLICY, 8, 4);
    let cap = q.capacity();
    assert!(cap.0 >= 8 && cap.1 >= 4);
    for round in 0..100u64 {
        for i in 0..3 {
            let _ = q.push(i, 1);
        }
        q.flush_with(ok_fence(round)).unwrap();
        q.reclaim(passed_upto(round), |_| ()).unwrap();
    }
    assert_eq!(q.capacity(), cap);
    q.reserve(100, 0);
    assert!(q.capacity().0 >= 100);
}

#[test]
fn policy_can_be_replaced() {
    let mut q: DropQueue<u32, u64> = DropQueue::default();
    assert_eq!(q.policy(), FlushPolicy::discrete());
    let _ = q.push(1, 1);
    q.set_policy(FlushPolicy {
        max_items: 1,
        max_bytes: u64::MAX,
    });
    assert!(q.is_flush_due());
    let b: BoundedDropQueue<u32, u64, 4, 1> = BoundedDropQueue::default();
    assert_eq!(b.policy(), FlushPolicy::discrete());
}

#[test]
fn errors_display_readably() {
    let e: DropQueueError<&str> = DropQueueError::Fence("lost");
    assert!(alloc::format!("{e}").contains("lost"));
    let e: DropQueueError<&str> = DropQueueError::Recording;
    assert!(alloc::format!("{e}").contains("capture"));
    let e = QueueFull {
        item: 1u8,
        bytes: 42,
    };
    assert!(alloc::format!("{e}").contains("42 bytes"));
}

#[test]
fn flush_with_a_ready_fence() {
    let mut q: DropQueue<u32, u64> = DropQueue::new(POLICY);
    assert_eq!(q.flush(1), Flushed::Nothing);
    let _ = q.push(1, 4);
    q.set_recording(true);
    assert_eq!(q.flush(2), Flushed::Deferred);
    assert!(q.flush_owed());
    q.set_recording(false);
    assert_eq!(q.flush(3), Flushed::Sealed { items: 1, bytes: 4 });
    assert_eq!(q.oldest_fence(), Some(&3));
    let mut b: BoundedDropQueue<u32, u64, 2, 1> = BoundedDropQueue::new(POLICY);
    let _ = b.push(1, 1).unwrap();
    assert_eq!(b.flush(1), Flushed::Sealed { items: 1, bytes: 1 });
}

/// Room is a hint: one the allocator cannot grant leaves the queue empty
/// and working (never a panic or an abort), and `try_reserve` says so.
#[test]
fn an_impossible_capacity_is_a_hint_not_a_panic() {
    let mut q =
        DropQueue::<u32, u64>::with_capacity(FlushPolicy::default(), usize::MAX, usize::MAX);
    assert!(q.try_reserve(usize::MAX, 0).is_err());
    assert!(q.try_reserve(0, usize::MAX).is_err());
    assert!(q.try_reserve(4, 2).is_ok());
    let _ = q.push(1, 8);
    assert_eq!(q.len(), 1);
}
