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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SLOT: u64 = 0x1_0000;
    const BASE: u64 = 0x7f00_0000_0000;

    #[derive(Clone, Debug)]
    enum Op {
        Add { slot: u64, size: u64 },
        Remove { slot: u64 },
        Query { address: u64, len: u64 },
    }

    /// Sizes, offsets and lengths near the interesting boundaries, so a
    /// range ending exactly at a page's end (or one byte past) is common.
    fn edge() -> impl Strategy<Value = u64> {
        prop_oneof![
            prop::sample::select(vec![
                0,
                1,
                15,
                16,
                17,
                4095,
                4096,
                4097,
                SLOT - 1,
                SLOT,
                SLOT + 1
            ]),
            0..=SLOT + 1,
        ]
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0..8u64, edge()).prop_map(|(slot, size)| Op::Add {
                slot,
                size: size.clamp(1, SLOT)
            }),
            (0..8u64).prop_map(|slot| Op::Remove { slot }),
            (0..9u64, edge(), edge()).prop_map(|(slot, offset, len)| Op::Query {
                address: BASE + slot * SLOT + offset,
                len,
            }),
            Just(Op::Query {
                address: u64::MAX - 1,
                len: 4
            }),
        ]
    }

    proptest! {
        /// The registry answers "inside one live page" exactly as a linear
        /// scan over the live pages does (pages never overlap, as from an
        /// allocator).
        #[test]
        fn host_page_registry_matches_a_linear_scan(ops in proptest::collection::vec(op(), 1..64)) {
            let shared = Shared::new(0);
            let mut model: Vec<(u64, u64)> = Vec::new();
            for op in ops {
                match op {
                    Op::Add { slot, size } => {
                        let start = BASE + slot * SLOT;
                        if !model.iter().any(|&(s, _)| s == start) {
                            shared.host_page_added(start, size);
                            model.push((start, size));
                        }
                    }
                    Op::Remove { slot } => {
                        let start = BASE + slot * SLOT;
                        shared.host_page_removed(start);
                        model.retain(|&(s, _)| s != start);
                    }
                    Op::Query { address, len } => {
                        let expected = model.iter().any(|&(s, size)| {
                            address >= s && address.checked_add(len).is_some_and(|end| end <= s + size)
                        });
                        prop_assert_eq!(shared.host_range_is_live(address, len), expected);
                    }
                }
            }
        }
    }

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
}
