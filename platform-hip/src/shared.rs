//! State shared by a platform and everything it hands out: the device
//! ordinal, the live pages every range is checked against, and the
//! bookkeeping that lets a host synchronization during a capture fail (and
//! doom that capture) the way drivers do.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use cubecl_hip_sys as hip;

use crate::error::{HipError, check};
use crate::pages::Pages;

thread_local! {
    /// The device this crate last made current on this thread (-1: none).
    static CURRENT: Cell<i32> = const { Cell::new(-1) };
}

/// Makes `device` the calling thread's current device, calling
/// `hipSetDevice` only when this crate did not already make it current on
/// this thread. Every entry point that needs the device calls it: HIP
/// creates events, streams and allocations on the current device, and a
/// thread starts on device 0.
#[inline]
pub(crate) fn ensure_current(device: i32) -> Result<(), HipError> {
    if CURRENT.get() == device {
        return Ok(());
    }
    set_current(device)
}

/// Calls `hipSetDevice` and remembers the answer for this thread.
#[cold]
pub(crate) fn set_current(device: i32) -> Result<(), HipError> {
    // Forget first: if the call fails, the thread's device is unknown.
    CURRENT.set(-1);
    // SAFETY: `hipSetDevice` takes the ordinal by value; the runtime was
    // loaded by the platform's constructor, which also checked the ordinal.
    check("hipSetDevice", unsafe { hip::hipSetDevice(device) })?;
    CURRENT.set(device);
    Ok(())
}

/// Shared by [`crate::HipPlatform`] and its streams and storages.
#[derive(Debug)]
pub(crate) struct Shared {
    /// The HIP device ordinal.
    pub(crate) device: i32,
    /// Streams of this platform now capturing.
    captures: AtomicUsize,
    /// Bumped each time an operation dooms every open capture.
    doom_epoch: AtomicU64,
    /// Live device and pinned host pages of every storage of this platform:
    /// copies and launches refuse ranges outside them. Every storage
    /// registers, retires and releases its pages here (see [`Pages`] for
    /// the protocol).
    pub(crate) pages: Pages,
}

impl Shared {
    pub(crate) fn new(device: i32) -> Self {
        Self {
            device,
            captures: AtomicUsize::new(0),
            doom_epoch: AtomicU64::new(0),
            pages: Pages::default(),
        }
    }

    /// Makes this platform's device current on the calling thread (cheap
    /// when it already is).
    #[inline]
    pub(crate) fn make_current(&self) -> Result<(), HipError> {
        ensure_current(self.device)
    }

    /// A capture began; returns the doom epoch it started under.
    pub(crate) fn capture_begun(&self) -> u64 {
        self.captures.fetch_add(1, Ordering::SeqCst);
        self.doom_epoch.load(Ordering::SeqCst)
    }

    /// A capture ended (sealed, failed or abandoned).
    pub(crate) fn capture_ended(&self) {
        self.captures.fetch_sub(1, Ordering::SeqCst);
    }

    /// Whether any stream of this platform is capturing.
    pub(crate) fn capturing(&self) -> bool {
        self.captures.load(Ordering::SeqCst) > 0
    }

    /// Dooms every capture now open.
    pub(crate) fn doom_open_captures(&self) {
        self.doom_epoch.fetch_add(1, Ordering::SeqCst);
    }

    /// Whether a capture that began under `epoch` has been doomed since.
    pub(crate) fn doomed_since(&self, epoch: u64) -> bool {
        self.doom_epoch.load(Ordering::SeqCst) != epoch
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captures_are_counted_and_doomed_by_epoch() {
        let shared = Shared::new(0);
        assert!(!shared.capturing());
        let first = shared.capture_begun();
        assert!(shared.capturing());
        assert!(!shared.doomed_since(first));
        shared.doom_open_captures();
        assert!(shared.doomed_since(first));
        let second = shared.capture_begun();
        assert!(
            !shared.doomed_since(second),
            "a doom before it began does not count"
        );
        shared.capture_ended();
        shared.capture_ended();
        assert!(!shared.capturing());
    }

    #[test]
    fn the_current_device_is_remembered_per_thread() -> Result<(), HipError> {
        // No runtime is needed: a remembered device answers without a call.
        CURRENT.set(3);
        ensure_current(3)?;
        let other = std::thread::spawn(|| CURRENT.get()).join().ok();
        assert_eq!(other, Some(-1), "a fresh thread has made nothing current");
        CURRENT.set(-1);
        Ok(())
    }
}
