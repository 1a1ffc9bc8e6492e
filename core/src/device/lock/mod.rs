//! The lock a device's host picks.
//!
//! A [`Device`](super::Device) keeps its bookkeeping behind one lock and each
//! stream's driver queue behind a lock of its own; which kind of lock is the
//! host's choice, as embassy-sync's `RawMutex` and `lock_api` make it: a spin
//! lock where nothing can sleep (firmware without an operating system), a
//! parking mutex under `std`, a plain `RefCell` for a single context, or a
//! critical-section lock ([`MaskedLock`]) over the interrupt masking a host
//! writes itself, for devices called from interrupt handlers too.
//!
//! The core forbids `unsafe`, so the trait is over whole mutexes (a safe
//! `new` and a guard), not over raw lock words: [`RawLock`] names a family,
//! [`LockFamilyMutex`] is one mutex of it.
//!
//! Whatever the lock, the device never holds it across a call that blocks
//! (a host synchronization, a kernel compile, an out-of-memory wait), and it
//! holds a stream's lock without the device lock only around one driver
//! submission (and only where the family allows it,
//! [`RawLock::HAND_OVER_HAND`]), so even a spin lock spins for microseconds
//! at most.

use core::ops::DerefMut;

mod masked;

pub use masked::{InterruptMask, MaskedGuard, MaskedLock, MaskedMutex};

/// A family of mutexes: the lock a device uses for its state and its
/// streams. Pick one with `Device<P, L>`; [`DefaultLock`] otherwise.
pub trait RawLock: 'static {
    /// The mutex over a `T`: the device lock, which any thread may wait for.
    type Mutex<T>: LockFamilyMutex<T>;
    /// The mutex over a stream's lane. It is held around one driver
    /// submission at most, and only a thread holding the device lock ever
    /// waits for it (one waiter at a time, for one submission), so it may
    /// spin where [`Mutex`](RawLock::Mutex) parks: its release is then a
    /// plain store instead of an atomic read-modify-write.
    type LaneMutex<T>: LockFamilyMutex<T>;

    /// Whether a guard of this family may be let go while a guard taken
    /// after it is still held (hand over hand). The device does that on a
    /// launch's common path: it lets its lock go before the driver call and
    /// holds only the stream's lane through it. A family whose guards must
    /// drop in the reverse order of taking (each restores the interrupt
    /// state it found, as [`MaskedLock`]'s do) says `false`, and the device
    /// then holds its lock through the call.
    const HAND_OVER_HAND: bool = true;

    /// Runs `f` where no other context of this core can take a lock of
    /// this family: the device's small locks outside its own (the queue a
    /// dropped buffer's id goes to) are taken inside it, so a handle
    /// dropped in an interrupt handler cannot spin on a lock the thread it
    /// interrupted holds. Nothing to do for a family whose contexts are
    /// threads (the default runs `f`); [`MaskedLock`] masks interrupts.
    /// An implementation MUST call `f` exactly once.
    #[inline(always)]
    fn critical<R>(f: impl FnOnce() -> R) -> R {
        f()
    }
}

/// One mutex of a [`RawLock`] family.
pub trait LockFamilyMutex<T> {
    /// Exclusive access to the value; the lock is released when it drops.
    type Guard<'a>: DerefMut<Target = T>
    where
        Self: 'a;

    /// A mutex holding `value`.
    fn new(value: T) -> Self;

    /// Takes the lock, waiting (spinning, parking) as the family does.
    ///
    /// # Panics
    ///
    /// A family MAY panic when the lock is taken again by the context that
    /// holds it (`RefCell` does); the device never does that.
    fn lock(&self) -> Self::Guard<'_>;

    /// The value, without locking (the mutex is not shared).
    fn get_mut(&mut self) -> &mut T;
}

/// A spin lock (`spin::Mutex`): works everywhere, with or without an
/// operating system. The default without the `std` feature.
#[derive(Copy, Clone, Debug, Default)]
pub struct SpinLock;

impl RawLock for SpinLock {
    type Mutex<T> = spin::Mutex<T>;
    type LaneMutex<T> = spin::Mutex<T>;
}

impl<T> LockFamilyMutex<T> for spin::Mutex<T> {
    type Guard<'a>
        = spin::MutexGuard<'a, T>
    where
        Self: 'a;

    fn new(value: T) -> Self {
        spin::Mutex::new(value)
    }

    fn lock(&self) -> spin::MutexGuard<'_, T> {
        spin::Mutex::lock(self)
    }

    fn get_mut(&mut self) -> &mut T {
        spin::Mutex::get_mut(self)
    }
}

/// No lock at all, for a device used from one context only (embassy's
/// `NoopRawMutex`): a `RefCell`, so a device on it is neither `Send` nor
/// `Sync` and the compiler keeps it on its thread.
#[derive(Copy, Clone, Debug, Default)]
pub struct LocalLock;

impl RawLock for LocalLock {
    type Mutex<T> = core::cell::RefCell<T>;
    type LaneMutex<T> = core::cell::RefCell<T>;
}

impl<T> LockFamilyMutex<T> for core::cell::RefCell<T> {
    type Guard<'a>
        = core::cell::RefMut<'a, T>
    where
        Self: 'a;

    fn new(value: T) -> Self {
        core::cell::RefCell::new(value)
    }

    fn lock(&self) -> core::cell::RefMut<'_, T> {
        self.borrow_mut()
    }

    fn get_mut(&mut self) -> &mut T {
        core::cell::RefCell::get_mut(self)
    }
}

/// A parking mutex (`parking_lot::Mutex`): waiting threads sleep instead of
/// spinning, as with [`StdLock`], but the lock is one byte beside the state
/// it guards and taking it reads nothing else: no poison flag, no look at
/// the process's panic count (which `std::sync::Mutex` makes on every lock
/// and unlock, one more cache line on a launch's path). The default with
/// the `std` feature. A caller's panic cannot leave the device's state half
/// changed (no caller code runs under the lock), so there is nothing to
/// poison.
#[cfg(feature = "std")]
#[derive(Copy, Clone, Debug, Default)]
pub struct ParkingLock;

#[cfg(feature = "std")]
impl RawLock for ParkingLock {
    type Mutex<T> = parking_lot::Mutex<T>;
    type LaneMutex<T> = spin::mutex::SpinMutex<T, YieldNow>;
}

#[cfg(feature = "std")]
impl<T> LockFamilyMutex<T> for parking_lot::Mutex<T> {
    type Guard<'a>
        = parking_lot::MutexGuard<'a, T>
    where
        Self: 'a;

    fn new(value: T) -> Self {
        parking_lot::Mutex::new(value)
    }

    fn lock(&self) -> parking_lot::MutexGuard<'_, T> {
        parking_lot::Mutex::lock(self)
    }

    fn get_mut(&mut self) -> &mut T {
        parking_lot::Mutex::get_mut(self)
    }
}

/// The standard library's mutex: waiting threads sleep instead of spinning.
/// A lock poisoned by a panicking thread is taken anyway (the device's
/// state stays consistent across a panic in a caller's code: no caller code
/// runs under the lock).
#[cfg(feature = "std")]
#[derive(Copy, Clone, Debug, Default)]
pub struct StdLock;

#[cfg(feature = "std")]
impl RawLock for StdLock {
    type Mutex<T> = std::sync::Mutex<T>;
    type LaneMutex<T> = spin::mutex::SpinMutex<T, YieldNow>;
}

/// How a lane's waiter waits under `std`: it gives its time slice back
/// between tries (the lane's holder makes one driver submission, which a
/// full driver queue can stretch; the waiter burns no core meanwhile).
#[cfg(feature = "std")]
#[derive(Copy, Clone, Debug, Default)]
pub struct YieldNow;

#[cfg(feature = "std")]
impl spin::relax::RelaxStrategy for YieldNow {
    #[inline]
    fn relax() {
        std::thread::yield_now();
    }
}

#[cfg(feature = "std")]
impl<T> LockFamilyMutex<T> for spin::mutex::SpinMutex<T, YieldNow> {
    type Guard<'a>
        = spin::mutex::SpinMutexGuard<'a, T>
    where
        Self: 'a;

    fn new(value: T) -> Self {
        spin::mutex::SpinMutex::new(value)
    }

    // Always inlined: on a launch's path the lane's lock is then one
    // compare-and-swap in line, not a call.
    #[inline(always)]
    fn lock(&self) -> spin::mutex::SpinMutexGuard<'_, T> {
        spin::mutex::SpinMutex::lock(self)
    }

    fn get_mut(&mut self) -> &mut T {
        spin::mutex::SpinMutex::get_mut(self)
    }
}

#[cfg(feature = "std")]
impl<T> LockFamilyMutex<T> for std::sync::Mutex<T> {
    type Guard<'a>
        = std::sync::MutexGuard<'a, T>
    where
        Self: 'a;

    fn new(value: T) -> Self {
        std::sync::Mutex::new(value)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, T> {
        std::sync::Mutex::lock(self).unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn get_mut(&mut self) -> &mut T {
        std::sync::Mutex::get_mut(self).unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The lock `Device<P>` uses: [`ParkingLock`] with the `std` feature,
/// [`SpinLock`] without.
#[cfg(feature = "std")]
pub type DefaultLock = ParkingLock;

/// The lock `Device<P>` uses: `ParkingLock` with the `std` feature,
/// [`SpinLock`] without.
#[cfg(not(feature = "std"))]
pub type DefaultLock = SpinLock;

#[cfg(test)]
mod tests {
    use super::*;

    fn bump<L: RawLock>() -> u32 {
        let mut m = <L::Mutex<u32> as LockFamilyMutex<u32>>::new(1);
        *m.lock() += 1;
        *m.get_mut() += 1;
        let g = m.lock();
        *g
    }

    #[test]
    fn every_family_locks_and_gives_access() {
        assert_eq!(bump::<SpinLock>(), 3);
        assert_eq!(bump::<LocalLock>(), 3);
        #[cfg(feature = "std")]
        assert_eq!(bump::<StdLock>(), 3);
        #[cfg(feature = "std")]
        assert_eq!(bump::<ParkingLock>(), 3);
        assert_eq!(bump_lane::<SpinLock>(), 3);
        assert_eq!(bump_lane::<LocalLock>(), 3);
        #[cfg(feature = "std")]
        assert_eq!(bump_lane::<StdLock>(), 3);
        #[cfg(feature = "std")]
        assert_eq!(bump_lane::<ParkingLock>(), 3);
    }

    fn bump_lane<L: RawLock>() -> u32 {
        let mut m = <L::LaneMutex<u32> as LockFamilyMutex<u32>>::new(1);
        *m.lock() += 1;
        *m.get_mut() += 1;
        let g = m.lock();
        *g
    }

    /// The parking lock's waiter sleeps until the holder lets go, then gets
    /// it; a thread that panics holding it leaves it free and unpoisoned.
    #[cfg(feature = "std")]
    #[test]
    fn the_parking_lock_waits_for_its_holder_and_survives_a_panic() {
        let m = <<ParkingLock as RawLock>::Mutex<u32> as LockFamilyMutex<u32>>::new(0);
        let g = m.lock();
        std::thread::scope(|s| {
            let waiter = s.spawn(|| {
                *m.lock() += 1;
            });
            std::thread::sleep(std::time::Duration::from_millis(5));
            assert!(!waiter.is_finished(), "the lock is held");
            drop(g);
            waiter.join().unwrap();
        });
        let panicked = std::thread::scope(|s| {
            s.spawn(|| {
                let mut g = m.lock();
                *g += 1;
                panic!("a caller's panic while holding the lock");
            })
            .join()
            .is_err()
        });
        assert!(panicked);
        assert_eq!(*m.lock(), 2, "taken again after the panic, its value kept");
    }

    /// Under `std` a lane's waiter gets the lane once its holder lets go.
    #[cfg(feature = "std")]
    #[test]
    fn a_lane_waiter_gets_the_lane_after_its_holder() {
        let m = <<StdLock as RawLock>::LaneMutex<u32> as LockFamilyMutex<u32>>::new(0);
        let g = m.lock();
        std::thread::scope(|s| {
            let waiter = s.spawn(|| {
                *m.lock() += 1;
            });
            std::thread::sleep(std::time::Duration::from_millis(5));
            assert!(!waiter.is_finished(), "the lane is held");
            drop(g);
            waiter.join().unwrap();
        });
        assert_eq!(*m.lock(), 1);
    }
}
