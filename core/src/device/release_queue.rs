//! The queue dropped handles push their ids on, and the allocation the
//! user handles of one buffer share. A drop never takes the device lock:
//! the device drains the queue at its next call.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::any::TypeId;
use core::fmt;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};

use super::buffer::BufferId;
use super::handle::GraphId;
use super::lock::RawLock;

/// What dropped handles left for the device, behind the queue's lock, and
/// the queue's handle allocations no buffer holds.
#[derive(Debug, Default)]
pub(crate) struct Releases {
    /// The device the queue serves; 0 (no device has that id): closed.
    device: u64,
    pub(crate) buffers: Vec<BufferId>,
    pub(crate) graphs: Vec<GraphId>,
    /// Handle allocations of this queue no buffer holds, for the slot
    /// indices its device adds (or, once it is gone, the next device's).
    spare: Vec<&'static HandleShare>,
    /// Once closed: allocations still held by handles that outlived the
    /// device. The queue serves another device only when none is left.
    outstanding: usize,
}

/// The mailbox of a closed queue: every drop takes the locked path.
const CLOSED: u32 = u32::MAX;

/// The queue handles push their ids on when dropped. A released buffer
/// usually goes through the mailbox: one atomic word holding its slot index
/// (a buffer's slot stays taken until the device processed its release, so
/// the index names it), claimed with one compare-and-swap and emptied by the
/// device with a plain load and store. When the mailbox is taken the id goes
/// to the queue behind its own small lock (graphs always do). A drop never
/// takes the device lock; the device reads both without locking, so an
/// operation with nothing to release touches no shared lock.
///
/// A queue, and the handle allocations it hands its device's buffer table
/// (one per slot index, see [`HandleShare`]), live as long as the program:
/// handles reach them by `'static` references, which count nothing, so
/// issuing a handle and dropping it change no reference count. Nothing is
/// lost: when its device goes away the queue is closed, takes back every
/// allocation no handle holds, and waits for the handles that outlived the
/// device (each gives its allocation back when dropped, the mailbox closed
/// to it); once the last is back the queue, with its allocations, goes to
/// a pool the next device takes it from. The memory kept is what the
/// devices alive at once needed at their peak. A queue is never shared by
/// two devices and never serves a new one while an old handle could still
/// reach its mailbox.
///
/// Its locks (the queue's, and the pool of idle queues) are taken inside
/// the device's lock family's critical section ([`RawLock::critical`]): a
/// handle dropped by an interrupt handler must not spin on a lock the
/// thread it interrupted holds.
#[derive(Debug)]
pub(crate) struct ReleaseQueue {
    /// A released buffer's slot index + 1; 0: empty; [`CLOSED`].
    mailbox: AtomicU32,
    /// Whether `queue` may hold ids.
    pending: AtomicBool,
    queue: spin::Mutex<Releases>,
    /// The lock family of the devices it serves (an idle queue serves
    /// only a device of the same family).
    family: Family,
}

/// A lock family's critical section, as a plain function: runs its
/// argument inside [`RawLock::critical`].
type Critical = fn(&mut dyn FnMut());

/// A lock family as a release queue knows it: its type, which says whether
/// two devices share a family, and its critical section. Two function
/// pointers to the same instance of a generic function need not be equal
/// (each codegen unit or crate that instantiates it may have its own copy),
/// so the pool matches families by type, never by pointer.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Family {
    id: TypeId,
    critical: Critical,
}

/// Lock family `L`.
pub(crate) fn family_of<L: RawLock>() -> Family {
    fn run<L: RawLock>(f: &mut dyn FnMut()) {
        L::critical(f)
    }
    Family {
        id: TypeId::of::<L>(),
        critical: run::<L>,
    }
}

/// Runs `f` once, inside `critical`. A family's critical section that did
/// not call its argument (a broken contract) leaves `f` to run bare rather
/// than lose what it does; one that called it twice runs it once.
fn in_critical(critical: Critical, f: impl FnOnce()) {
    let mut f = Some(f);
    critical(&mut || {
        if let Some(f) = f.take() {
            f();
        }
    });
    if let Some(f) = f.take() {
        f();
    }
}

/// Shelves of the idle pool, each behind its own lock.
const SHELVES: usize = 4;

/// Closed queues every handle came back to, for the next devices: the
/// pool, in [`SHELVES`] shelves locked apart. A context that finds a shelf
/// held tries the next, so one context holding a shelf (a thread an
/// interrupt handler preempted, or another thread making or dropping a
/// device at the same moment) never keeps a queue out of the pool; only
/// all of them held at once does.
static IDLE_QUEUES: [spin::Mutex<Vec<&'static ReleaseQueue>>; SHELVES] =
    [const { spin::Mutex::new(Vec::new()) }; SHELVES];

/// Queues retired while other contexts held every shelf (kept out of it).
static UNPOOLED: AtomicUsize = AtomicUsize::new(0);

/// Release queues that could not go back to the idle pool because other
/// contexts held every shelf at that moment (interrupt handlers that
/// preempted threads inside the pool, threads making or dropping devices
/// in the same few instructions): each keeps its few allocations unused,
/// out of reach. Zero unless [`SHELVES`] contexts are in the pool at once.
#[cfg(test)]
pub(crate) fn unpooled_queues() -> usize {
    UNPOOLED.load(Ordering::Relaxed)
}

/// Taken by the tests that hold shelves of the idle pool, so that one
/// test's held shelves never meet another's expectations.
#[cfg(test)]
pub(crate) static POOL_TESTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The first `shelves` shelves of the idle pool, held by a test to play
/// preempted contexts.
#[cfg(test)]
pub(crate) fn hold_idle_pool(
    shelves: usize,
) -> alloc::vec::Vec<spin::MutexGuard<'static, Vec<&'static ReleaseQueue>>> {
    IDLE_QUEUES.iter().take(shelves).map(|s| s.lock()).collect()
}

impl ReleaseQueue {
    /// A queue serving device `device` (a non-zero id no other device ever
    /// has), of lock family `family`: an idle one of the same family, with
    /// the allocations it kept, or a new one.
    pub(crate) fn open(device: u64, family: Family) -> &'static Self {
        let mut idle = None;
        in_critical(family.critical, || {
            // Never waited for: the pool is shared by every lock family, and
            // a family that masks nothing may hold a shelf in a context an
            // interrupt handler preempted. A held shelf is passed over; none
            // with a queue of the family: a new queue, as when the pool is
            // empty.
            for shelf in &IDLE_QUEUES {
                let Some(mut queues) = shelf.try_lock() else {
                    continue;
                };
                let same = queues.iter().rposition(|q| q.family.id == family.id);
                if let Some(i) = same {
                    idle = Some(queues.swap_remove(i));
                    return;
                }
            }
        });
        let queue: &'static Self = match idle {
            Some(q) => q,
            None => Box::leak(Box::new(Self {
                mailbox: AtomicU32::new(0),
                pending: AtomicBool::new(false),
                queue: spin::Mutex::default(),
                family,
            })),
        };
        queue.locked(|q| {
            q.device = device;
            q.outstanding = 0;
            q.buffers.clear();
            q.graphs.clear();
            queue.mailbox.store(0, Ordering::Relaxed);
            queue.pending.store(false, Ordering::Relaxed);
        });
        queue
    }

    /// Runs `f` on the lists, the queue's lock held inside its critical
    /// section.
    #[inline]
    fn locked(&self, f: impl FnOnce(&mut Releases)) {
        in_critical(self.family.critical, || f(&mut self.queue.lock()));
    }

    /// Gives the queue, closed and with every handle back, to the idle pool:
    /// to the first shelf no other context holds. The pool is never waited
    /// for (see `open`): when other contexts hold every shelf, the queue is
    /// not pooled — its allocations stay with it, unused, the one thing a
    /// preempted pool costs (counted in `UNPOOLED`).
    fn retire(&'static self) {
        in_critical(self.family.critical, || {
            for shelf in &IDLE_QUEUES {
                if let Some(mut queues) = shelf.try_lock() {
                    queues.push(self);
                    return;
                }
            }
            UNPOOLED.fetch_add(1, Ordering::Relaxed);
        });
    }

    /// A handle allocation of this queue, for a new slot index of its
    /// device's buffer table: a spare one, or a new one.
    #[cold]
    pub(crate) fn share(&'static self) -> &'static HandleShare {
        let mut spare = None;
        self.locked(|q| spare = q.spare.pop());
        spare.unwrap_or_else(|| {
            Box::leak(Box::new(HandleShare {
                users: AtomicUsize::new(0),
                releases: self,
            }))
        })
    }

    /// Closes the queue as its device goes away. `shares` are the
    /// allocations of the device's slot indices; `live(i)` says whether
    /// index `i` holds a live buffer. A live buffer whose release is not
    /// queued may still have user handles: its allocation stays out until
    /// the last one drops. Every other allocation is taken back, and what
    /// was queued is dropped.
    pub(crate) fn close(
        &'static self,
        shares: &[&'static HandleShare],
        live: impl Fn(u32) -> bool,
    ) {
        let mut idle = false;
        self.locked(|q| {
            q.device = 0;
            let word = self.mailbox.swap(CLOSED, Ordering::Acquire);
            let mut held: Vec<bool> = (0..shares.len()).map(|i| live(i as u32)).collect();
            let mailbox = (word != 0 && word != CLOSED).then(|| word - 1);
            for index in q.buffers.iter().map(|id| id.index()).chain(mailbox) {
                if let Some(h) = held.get_mut(index as usize) {
                    *h = false;
                }
            }
            q.buffers.clear();
            q.graphs.clear();
            self.pending.store(false, Ordering::Relaxed);
            let mut outstanding = 0;
            for (&share, &held) in shares.iter().zip(&held) {
                if held {
                    outstanding += 1;
                } else {
                    q.spare.push(share);
                }
            }
            q.outstanding = outstanding;
            idle = outstanding == 0;
        });
        if idle {
            self.retire();
        }
    }

    /// Queues graph `id` of device `device` for release (ignored once the
    /// queue serves another device or none).
    pub(super) fn push_graph(&self, device: u64, id: GraphId) {
        self.push(device, |q| q.graphs.push(id));
    }

    /// Runs `f` on the lists when the queue serves device `device`.
    fn push(&self, device: u64, f: impl FnOnce(&mut Releases)) {
        self.locked(|q| {
            if q.device == device {
                f(q);
                self.pending.store(true, Ordering::Release);
            }
        });
    }

    /// Queues the release of buffer `id` of device `device`, whose handles
    /// shared `share`: in the mailbox when it is empty.
    #[inline]
    pub(super) fn push_buffer(
        &'static self,
        device: u64,
        id: BufferId,
        share: &'static HandleShare,
    ) {
        // At most 2^32 - 2 (the table refuses index u32::MAX): no overflow.
        let word = id.index().wrapping_add(1);
        if word == 0
            || word == CLOSED
            || self
                .mailbox
                .compare_exchange(0, word, Ordering::Release, Ordering::Relaxed)
                .is_err()
        {
            self.push_buffer_locked(device, id, share);
        }
    }

    /// [`push_buffer`](Self::push_buffer) when the mailbox is taken or
    /// closed: the id is queued, or, when the device is gone, `share` comes
    /// back to the queue (the last one back makes the queue idle).
    #[cold]
    fn push_buffer_locked(&'static self, device: u64, id: BufferId, share: &'static HandleShare) {
        let mut idle = false;
        self.locked(|q| {
            if q.device == device {
                q.buffers.push(id);
                self.pending.store(true, Ordering::Release);
                return;
            }
            // The device is gone: the queue, closed, counts this handle's
            // allocation as out (it serves no other device before it is
            // back). Any other state would be a miscount: the allocation
            // then stays out rather than risk serving two buffers.
            if q.device != 0 || q.outstanding == 0 {
                return;
            }
            q.spare.push(share);
            q.outstanding -= 1;
            idle = q.outstanding == 0;
        });
        if idle {
            self.retire();
        }
    }

    /// Whether ids may be waiting (cheap; no lock).
    #[inline]
    pub(crate) fn is_pending(&self) -> bool {
        self.mailbox.load(Ordering::Acquire) != 0 || self.pending.load(Ordering::Acquire)
    }

    /// Whether the locked queue may hold ids (cheap; no lock).
    #[inline]
    pub(crate) fn is_queued(&self) -> bool {
        self.pending.load(Ordering::Acquire)
    }

    /// Empties the mailbox: the slot index of the buffer released there.
    /// Only the device calls it, under its lock (one taker at a time), so a
    /// load and a store suffice: between them no drop can fill it.
    #[inline]
    pub(crate) fn take_mailbox(&self) -> Option<u32> {
        let word = self.mailbox.load(Ordering::Acquire);
        if word == 0 {
            return None;
        }
        self.mailbox.store(0, Ordering::Relaxed);
        Some(word - 1)
    }

    /// Moves the queued ids to the end of `buffers` and `graphs` (every
    /// vector keeps its capacity). Returns whether anything was queued.
    pub(crate) fn take(&self, buffers: &mut Vec<BufferId>, graphs: &mut Vec<GraphId>) -> bool {
        if !self.pending.load(Ordering::Acquire) {
            return false;
        }
        let mut any = false;
        self.locked(|q| {
            self.pending.store(false, Ordering::Relaxed);
            any = !(q.buffers.is_empty() && q.graphs.is_empty());
            // Element by element: usually one or two ids.
            for &id in &q.buffers {
                buffers.push(id);
            }
            q.buffers.clear();
            for &g in &q.graphs {
                graphs.push(g);
            }
            q.graphs.clear();
        });
        any
    }

    /// The device it serves (0: closed) and the allocations handles that
    /// outlived a closed queue's device still hold (tests).
    #[cfg(test)]
    pub(crate) fn state(&self) -> (u64, usize) {
        let mut state = (0, 0);
        self.locked(|q| state = (q.device, q.outstanding));
        state
    }

    /// Whether no buffer id is queued (the mailbox included).
    pub(crate) fn no_buffers(&self) -> bool {
        if self.mailbox.load(Ordering::Acquire) != 0 {
            return false;
        }
        let mut empty = false;
        self.locked(|q| empty = q.buffers.is_empty());
        empty
    }
}

/// What the user handles of one buffer share: how many are alive, and the
/// queue the last one to drop pushes the buffer's id on. The allocation
/// belongs to a slot index of the buffer table and serves every buffer that
/// index holds: once a buffer is released no user handle of it is left, so
/// the next buffer there starts the count again. It lives as long as its
/// queue (see [`ReleaseQueue`]), so handles hold it by reference: a warm
/// `alloc` + drop allocates nothing and counts no reference.
pub(crate) struct HandleShare {
    /// User handles (`Buffer` values) alive; the last one to drop queues
    /// the id for release.
    pub(super) users: AtomicUsize,
    pub(super) releases: &'static ReleaseQueue,
}

impl fmt::Debug for HandleShare {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Not the queue: it lists its spare allocations.
        f.debug_struct("HandleShare")
            .field("users", &self.users)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(f: &mut dyn FnMut()) {
        f()
    }

    /// Family `T` (a marker no other test uses) with section `critical`.
    fn family<T: 'static>(critical: Critical) -> Family {
        Family {
            id: TypeId::of::<T>(),
            critical,
        }
    }

    /// Whether a queue of family `first`, retired, is the one the next
    /// device of family `next` gets (`meanwhile` runs between the two).
    /// The pool is shared with the other tests, whose devices hold a shelf
    /// for a few instructions: tried up to 100 times, true if once.
    fn comes_back(
        first: Family,
        next: Family,
        mut meanwhile: impl FnMut(&'static ReleaseQueue),
    ) -> bool {
        (0..100).any(|_| {
            let q = ReleaseQueue::open(u64::MAX - 1, first);
            q.close(&[], |_| false);
            meanwhile(q);
            let again = ReleaseQueue::open(u64::MAX - 2, next);
            again.close(&[], |_| false);
            core::ptr::eq(again, q)
        })
    }

    /// An idle queue goes to the next device of its lock family even when
    /// that device's copy of the family's critical section is another
    /// function (two codegen units or crates that each instantiated it; an
    /// interpreter that gives every pointer its own address). The pool
    /// compared the pointers: every such device took a new queue, and the
    /// idle ones were never used again — memory growing with each device
    /// made.
    #[test]
    fn an_idle_queue_serves_its_family_whatever_the_critical_sections_address() {
        struct Marker;
        struct Other;
        fn copy(f: &mut dyn FnMut()) {
            plain(f)
        }
        let _serial = POOL_TESTS.lock();
        let reused = comes_back(family::<Marker>(plain), family::<Marker>(copy), |q| {
            // Another family with the same section gets a queue of its own.
            let foreign = ReleaseQueue::open(u64::MAX - 3, family::<Other>(plain));
            foreign.close(&[], |_| false);
            assert!(!core::ptr::eq(foreign, q), "a queue served another family");
        });
        assert!(reused, "the idle queue was never given to its own family");
    }

    /// A shelf of the idle pool held by another context (a thread an
    /// interrupt handler preempted, or one making a device at the same
    /// moment) keeps no queue out of the pool: the queue goes to another
    /// shelf, and the next device of its family finds it there. With one
    /// lock for the whole pool, every device dropped while it was held left
    /// its queue out for good.
    #[test]
    fn a_held_shelf_keeps_no_queue_out_of_the_pool() {
        struct Marker;
        let _serial = POOL_TESTS.lock();
        let held = hold_idle_pool(1);
        let reused = comes_back(family::<Marker>(plain), family::<Marker>(plain), |_| {});
        drop(held);
        assert!(
            reused,
            "with one shelf held, the queue never went back to the pool"
        );
    }
}
