//! State shared by a platform and everything it hands out: the device
//! ordinal, and the bookkeeping that lets a host synchronization during a
//! capture fail (and doom that capture) the way drivers do.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use cubecl_hip_sys as hip;

use crate::error::{HipError, check};

/// Shared by [`crate::HipPlatform`] and its streams and storages.
#[derive(Debug)]
pub(crate) struct Shared {
    /// The HIP device ordinal.
    pub(crate) device: i32,
    /// Streams of this platform now capturing.
    captures: AtomicUsize,
    /// Bumped each time an operation dooms every open capture.
    doom_epoch: AtomicU64,
    /// Live pinned host pages of every host storage of this platform
    /// (address → size), so copies can refuse host ranges outside them.
    host_pages: Mutex<BTreeMap<u64, u64>>,
}

impl Shared {
    pub(crate) fn new(device: i32) -> Self {
        Self {
            device,
            captures: AtomicUsize::new(0),
            doom_epoch: AtomicU64::new(0),
            host_pages: Mutex::new(BTreeMap::new()),
        }
    }

    /// Makes this platform's device current on the calling thread.
    pub(crate) fn make_current(&self) -> Result<(), HipError> {
        // SAFETY: `hipSetDevice` takes the ordinal by value; the runtime was
        // loaded by the platform's constructor, which also checked the
        // ordinal.
        check("hipSetDevice", unsafe { hip::hipSetDevice(self.device) })
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

    /// Registers a live pinned host page.
    pub(crate) fn host_page_added(&self, address: u64, size: u64) {
        self.host_pages().insert(address, size);
    }

    /// Unregisters a pinned host page about to be freed.
    pub(crate) fn host_page_removed(&self, address: u64) {
        self.host_pages().remove(&address);
    }

    /// Whether `address .. address + len` lies inside one live pinned page.
    pub(crate) fn host_range_is_live(&self, address: u64, len: u64) -> bool {
        let pages = self.host_pages();
        match pages.range(..=address).next_back() {
            Some((&start, &size)) => address
                .checked_add(len)
                .is_some_and(|end| end <= start + size),
            None => false,
        }
    }

    fn host_pages(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, u64>> {
        // A panic while holding the lock cannot leave the map half-updated
        // (each update is one insert or remove), so a poisoned lock is safe
        // to keep using.
        self.host_pages
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
