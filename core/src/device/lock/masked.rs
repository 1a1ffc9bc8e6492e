//! The critical-section lock: interrupts masked on this core while the lock
//! is held, a spin lock against the other cores.
//!
//! On firmware an interrupt handler may call the device (a doorbell that
//! submits work, a timer that polls). Under a plain [`SpinLock`](super::SpinLock)
//! that deadlocks the moment the handler interrupts the thread that holds
//! the lock: the handler spins on a lock whose holder cannot run until the
//! handler returns. [`MaskedLock`] masks interrupts first (the host says
//! how, through [`InterruptMask`]), so nothing that could take the lock runs
//! on this core while it is held; the spin lock underneath serves
//! multi-core hosts, where another core's holder always makes progress. It
//! is embassy-sync's `CriticalSectionRawMutex` without the `critical-section`
//! crate: the core forbids `unsafe`, so the masking the host writes (a
//! `cpsid i`, a `csrrci mstatus`) stays in the host's crate.
//!
//! The device never holds its lock across a call that blocks (rule 8), so
//! interrupts stay masked for one piece of bookkeeping at a time, never for
//! a wait on the GPU: the firmware images run a timer interrupt that calls
//! the device while thread mode waits on it, and count the ticks kept and
//! time the masks (BENCHMARKS.md section 5).

use core::marker::PhantomData;
use core::ops::{Deref, DerefMut};

use super::{LockFamilyMutex, RawLock};

/// How a host masks and restores interrupts on the current core: the one
/// piece of a [`MaskedLock`] only the host can write.
///
/// Implementations MUST guarantee: between [`mask`](InterruptMask::mask)
/// and the matching [`restore`](InterruptMask::restore), no code that may
/// take a lock of the same [`MaskedLock`] runs on this core (no interrupt
/// handler, no other task preempts); `restore` puts back exactly the state
/// `mask` saved, so nested pairs (a device lock, then a stream's lane lock
/// inside it) leave interrupts masked until the outermost pair ends.
pub trait InterruptMask: 'static {
    /// What [`mask`](InterruptMask::mask) saved (say, the old PRIMASK).
    type Saved;

    /// Masks interrupts on this core and returns what was there before.
    fn mask() -> Self::Saved;

    /// Puts back what [`mask`](InterruptMask::mask) returned.
    fn restore(saved: Self::Saved);
}

/// The critical-section lock family: a device on `MaskedLock<M>` may be
/// called from interrupt handlers as well as from thread mode. See the
/// module docs.
pub struct MaskedLock<M: InterruptMask>(PhantomData<fn() -> M>);

impl<M: InterruptMask> RawLock for MaskedLock<M> {
    type Mutex<T> = MaskedMutex<M, T>;
    type LaneMutex<T> = MaskedMutex<M, T>;

    /// Each guard restores the state it found: let go out of order, the
    /// first guard would unmask interrupts while the second is held.
    const HAND_OVER_HAND: bool = false;

    fn critical<R>(f: impl FnOnce() -> R) -> R {
        let _unmask = Unmask::<M> {
            saved: Some(M::mask()),
        };
        f()
    }
}

/// One mutex of [`MaskedLock`]: a spin lock taken with interrupts masked.
pub struct MaskedMutex<M: InterruptMask, T> {
    inner: spin::Mutex<T>,
    mask: PhantomData<fn() -> M>,
}

/// Restores the interrupt state when dropped. In a [`MaskedGuard`] it is
/// declared after the spin guard, so the lock is released before an
/// interrupt can arrive (fields drop in declaration order).
struct Unmask<M: InterruptMask> {
    saved: Option<M::Saved>,
}

impl<M: InterruptMask> Drop for Unmask<M> {
    fn drop(&mut self) {
        if let Some(saved) = self.saved.take() {
            M::restore(saved);
        }
    }
}

/// The guard of a [`MaskedMutex`]: the value, with interrupts masked until
/// it drops.
pub struct MaskedGuard<'a, M: InterruptMask, T> {
    // Declaration order is drop order: unlock, then unmask.
    guard: spin::MutexGuard<'a, T>,
    _unmask: Unmask<M>,
}

impl<M: InterruptMask, T> Deref for MaskedGuard<'_, M, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.guard
    }
}

impl<M: InterruptMask, T> DerefMut for MaskedGuard<'_, M, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.guard
    }
}

impl<M: InterruptMask, T> LockFamilyMutex<T> for MaskedMutex<M, T> {
    type Guard<'a>
        = MaskedGuard<'a, M, T>
    where
        Self: 'a;

    fn new(value: T) -> Self {
        Self {
            inner: spin::Mutex::new(value),
            mask: PhantomData,
        }
    }

    fn lock(&self) -> MaskedGuard<'_, M, T> {
        // Masked before spinning: once this core holds the lock, nothing on
        // it can interrupt the holder and spin on the same lock.
        let unmask = Unmask {
            saved: Some(M::mask()),
        };
        MaskedGuard {
            guard: self.inner.lock(),
            _unmask: unmask,
        }
    }

    fn get_mut(&mut self) -> &mut T {
        self.inner.get_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::cell::Cell;

    std::thread_local! {
        /// This thread's simulated interrupt mask: the depth of masking and
        /// every transition, for the test to read.
        static MASKED: Cell<bool> = const { Cell::new(false) };
        static MASKS: Cell<u32> = const { Cell::new(0) };
    }

    /// A mask over a thread-local flag: `mask` saves and sets it.
    struct Flag;

    impl InterruptMask for Flag {
        type Saved = bool;
        fn mask() -> bool {
            MASKS.with(|n| n.set(n.get() + 1));
            MASKED.with(|m| m.replace(true))
        }
        fn restore(saved: bool) {
            MASKED.with(|m| m.set(saved));
        }
    }

    fn masked() -> bool {
        MASKED.with(Cell::get)
    }

    type M<T> = <MaskedLock<Flag> as RawLock>::Mutex<T>;
    type Lane<T> = <MaskedLock<Flag> as RawLock>::LaneMutex<T>;

    #[test]
    fn masked_while_held_and_restored_in_nesting_order() {
        let outer = M::new(1u32);
        let lane = Lane::new(10u32);
        assert!(!masked());
        {
            let mut a = outer.lock();
            assert!(masked(), "masked while the device lock is held");
            *a += 1;
            {
                let mut b = lane.lock();
                *b += 1;
                assert!(masked());
            }
            assert!(
                masked(),
                "the inner guard restored the outer's mask, not none"
            );
            // The lane's lock is free again although interrupts stay masked.
            assert_eq!(*lane.lock(), 11);
        }
        assert!(!masked(), "unmasked once the outermost guard dropped");
        assert_eq!(*outer.lock(), 2);
        assert_eq!(MASKS.with(Cell::get), 4, "one mask per lock taken");
    }

    #[test]
    fn the_lock_is_free_before_interrupts_come_back() {
        // An "interrupt" that arrives the moment the mask is restored may
        // take the same lock: it must find it free.
        std::thread_local! {
            static FOUND_FREE: Cell<Option<bool>> = const { Cell::new(None) };
        }
        struct Probe;
        static LOCK: std::sync::OnceLock<&'static MaskedMutex<Probe, u32>> =
            std::sync::OnceLock::new();
        impl InterruptMask for Probe {
            type Saved = ();
            fn mask() {}
            fn restore(_: ()) {
                let free = LOCK.get().is_some_and(|m| !m.inner.is_locked());
                FOUND_FREE.with(|f| f.set(Some(free)));
            }
        }
        let m: &'static MaskedMutex<Probe, u32> =
            std::boxed::Box::leak(std::boxed::Box::new(MaskedMutex::new(5)));
        assert!(LOCK.set(m).is_ok());
        *m.lock() += 1;
        assert_eq!(
            FOUND_FREE.with(Cell::get),
            Some(true),
            "the spin lock was released before interrupts were restored"
        );
        assert_eq!(*m.lock(), 6);
    }
}
