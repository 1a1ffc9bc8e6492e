//! The live pages a platform handed out, so that no safe call can make it
//! touch memory it does not own.
//!
//! Every device storage of a platform (the `hipMalloc` pages, the
//! virtual-memory pages) registers each page it hands out, from its
//! allocation until its `dealloc` (or the storage's drop); host storages do
//! the same for pinned pages. A range a call receives is accepted only when
//! its page id is the start of a live page of the right kind and
//! `offset + len` does not pass the page's end — one hash lookup per range,
//! under a read lock taken once per call.

use std::collections::HashMap;
use std::ffi::c_void;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use streamcore::platform::{Binding, DeviceRange, HostRange, PageId};

use crate::error::HipError;

/// A hasher for page addresses: they are aligned (their low bits are zero),
/// so the bits are mixed (the splitmix64 finalizer) before the table uses
/// the low ones.
#[derive(Default, Clone, Copy)]
struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b) ^ self.0.rotate_left(8));
        }
    }

    fn write_u64(&mut self, mut x: u64) {
        x ^= x >> 30;
        x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x ^= x >> 27;
        x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
        self.0 = x ^ (x >> 31);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A page a captured operation touches: its kind, its start, and the end
/// of the bytes used (offset + length).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct PageUse {
    host: bool,
    page: u64,
    end: u64,
}

impl PageUse {
    /// The use of a device range.
    pub(crate) fn device(range: DeviceRange) -> Self {
        Self {
            host: false,
            page: range.page.0,
            end: range.offset.saturating_add(range.len),
        }
    }

    /// The use of a pinned host range.
    pub(crate) fn host(range: HostRange) -> Self {
        Self {
            host: true,
            page: range.page.0,
            end: range.offset.saturating_add(range.len),
        }
    }
}

/// Sorts `uses` and merges the uses of one page into one (the furthest
/// end), so a graph keeps one entry per page it touches.
pub(crate) fn merge_uses(uses: &mut Vec<PageUse>) {
    uses.sort_unstable();
    uses.dedup_by(|later, kept| {
        let same = later.host == kept.host && later.page == kept.page;
        if same {
            kept.end = kept.end.max(later.end);
        }
        same
    });
}

/// Page start → usable size in bytes.
type PageMap = HashMap<u64, u64, BuildHasherDefault<AddressHasher>>;

/// The live device and pinned host pages of one platform.
#[derive(Debug, Default)]
pub(crate) struct Pages {
    device: RwLock<PageMap>,
    host: RwLock<PageMap>,
}

/// Whether `offset .. offset + len` lies inside a page of `size` bytes.
fn inside(size: u64, offset: u64, len: u64) -> bool {
    offset.checked_add(len).is_some_and(|end| end <= size)
}

fn read(map: &RwLock<PageMap>) -> RwLockReadGuard<'_, PageMap> {
    // Each update is one insert or remove, so a panic elsewhere while the
    // lock was held cannot leave the map half-updated: a poisoned lock is
    // safe to keep using.
    map.read().unwrap_or_else(PoisonError::into_inner)
}

fn write(map: &RwLock<PageMap>) -> RwLockWriteGuard<'_, PageMap> {
    map.write().unwrap_or_else(PoisonError::into_inner)
}

/// Why a range was refused, for the error's detail.
fn refusal(kind: &str, map: &PageMap, page: PageId) -> String {
    if map.contains_key(&page.0) {
        format!("{kind} range outside its page")
    } else {
        format!("{kind} range names no live {kind} page of this platform")
    }
}

impl Pages {
    /// Registers a live device page, or updates its usable size (a page
    /// that grew in place).
    pub(crate) fn device_page_added(&self, address: u64, size: u64) {
        write(&self.device).insert(address, size);
    }

    /// Unregisters a device page: from now on no range may name it.
    pub(crate) fn device_page_removed(&self, address: u64) {
        write(&self.device).remove(&address);
    }

    /// Registers a live pinned host page.
    pub(crate) fn host_page_added(&self, address: u64, size: u64) {
        write(&self.host).insert(address, size);
    }

    /// Unregisters a pinned host page.
    pub(crate) fn host_page_removed(&self, address: u64) {
        write(&self.host).remove(&address);
    }

    /// The device address of `range`, refused unless it lies inside a live
    /// device page.
    pub(crate) fn device_address(
        &self,
        call: &'static str,
        range: DeviceRange,
    ) -> Result<u64, HipError> {
        let map = read(&self.device);
        match map.get(&range.page.0) {
            Some(&size) if inside(size, range.offset, range.len) => Ok(range.page.0 + range.offset),
            _ => Err(HipError::invalid(
                call,
                &refusal("device", &map, range.page),
            )),
        }
    }

    /// The host address of `range`, refused unless it lies inside a live
    /// pinned host page.
    pub(crate) fn host_address(
        &self,
        call: &'static str,
        range: HostRange,
    ) -> Result<u64, HipError> {
        let map = read(&self.host);
        match map.get(&range.page.0) {
            Some(&size) if inside(size, range.offset, range.len) => Ok(range.page.0 + range.offset),
            _ => Err(HipError::invalid(call, &refusal("host", &map, range.page))),
        }
    }

    /// Whether every use lies inside a live page of its kind (the pages a
    /// graph's replay touches).
    pub(crate) fn all_live(&self, uses: &[PageUse]) -> bool {
        let (device, host) = (read(&self.device), read(&self.host));
        uses.iter().all(|u| {
            let map = if u.host { &host } else { &device };
            map.get(&u.page).is_some_and(|&size| u.end <= size)
        })
    }

    /// The device address of every binding, in order, into `out` (one lock
    /// for all of them); refused unless each lies inside a live device page.
    /// `out` must be at least as long as `bindings`.
    pub(crate) fn binding_addresses(
        &self,
        call: &'static str,
        bindings: &[Binding],
        out: &mut [*mut c_void],
    ) -> Result<(), HipError> {
        let map = read(&self.device);
        for (slot, b) in out.iter_mut().zip(bindings) {
            let r = b.range;
            match map.get(&r.page.0) {
                Some(&size) if inside(size, r.offset, r.len) => {
                    *slot = (r.page.0 + r.offset) as *mut c_void;
                }
                _ => return Err(HipError::invalid(call, &refusal("device", &map, r.page))),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use streamcore::platform::{Access, PlatformError};

    const SLOT: u64 = 0x1_0000;
    const BASE: u64 = 0x7f00_0000_0000;

    #[derive(Clone, Debug)]
    enum Op {
        Add {
            host: bool,
            slot: u64,
            size: u64,
        },
        Remove {
            host: bool,
            slot: u64,
        },
        Query {
            host: bool,
            page: u64,
            offset: u64,
            len: u64,
        },
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
                SLOT + 1,
                u64::MAX - 1,
                u64::MAX,
            ]),
            0..=SLOT + 1,
        ]
    }

    /// A page id: a slot's start, or an address near one.
    fn page() -> impl Strategy<Value = u64> {
        (
            0..9u64,
            prop::sample::select(vec![0u64, 0, 0, 1, 256, SLOT - 1]),
        )
            .prop_map(|(slot, delta)| BASE + slot * SLOT + delta)
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (any::<bool>(), 0..8u64, edge()).prop_map(|(host, slot, size)| Op::Add {
                host,
                slot,
                size: size.clamp(1, SLOT)
            }),
            (any::<bool>(), 0..8u64).prop_map(|(host, slot)| Op::Remove { host, slot }),
            (any::<bool>(), page(), edge(), edge()).prop_map(|(host, page, offset, len)| {
                Op::Query {
                    host,
                    page,
                    offset,
                    len,
                }
            }),
        ]
    }

    proptest! {
        /// The registry accepts a range exactly when a linear scan of the
        /// live pages of that kind finds its page id with the range inside
        /// (device and host pages never answer for each other), and hands
        /// back the page's address plus the offset.
        #[test]
        fn registry_matches_a_linear_scan(ops in proptest::collection::vec(op(), 1..64)) {
            let pages = Pages::default();
            let mut model: Vec<(bool, u64, u64)> = Vec::new();
            for op in ops {
                match op {
                    Op::Add { host, slot, size } => {
                        let start = BASE + slot * SLOT;
                        model.retain(|&(h, s, _)| !(h == host && s == start));
                        model.push((host, start, size));
                        if host {
                            pages.host_page_added(start, size);
                        } else {
                            pages.device_page_added(start, size);
                        }
                    }
                    Op::Remove { host, slot } => {
                        let start = BASE + slot * SLOT;
                        model.retain(|&(h, s, _)| !(h == host && s == start));
                        if host {
                            pages.host_page_removed(start);
                        } else {
                            pages.device_page_removed(start);
                        }
                    }
                    Op::Query { host, page, offset, len } => {
                        let expected = model.iter().any(|&(h, s, size)| {
                            h == host && s == page
                                && offset.checked_add(len).is_some_and(|end| end <= size)
                        });
                        let got = if host {
                            pages.host_address("q", HostRange { page: PageId(page), offset, len })
                        } else {
                            pages.device_address("q", DeviceRange { page: PageId(page), offset, len })
                        };
                        prop_assert_eq!(got.is_ok(), expected);
                        if let Ok(address) = got {
                            prop_assert_eq!(address, page + offset);
                        }
                        if !host {
                            let binding = Binding {
                                range: DeviceRange { page: PageId(page), offset, len },
                                access: Access::Read,
                            };
                            let mut out = [std::ptr::null_mut(); 1];
                            let checked = pages.binding_addresses("q", &[binding], &mut out);
                            prop_assert_eq!(checked.is_ok(), expected);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn one_bad_binding_refuses_the_whole_launch() {
        let pages = Pages::default();
        pages.device_page_added(BASE, 4096);
        pages.host_page_added(BASE + SLOT, 4096);
        let at = |page, offset, len| Binding {
            range: DeviceRange {
                page: PageId(page),
                offset,
                len,
            },
            access: Access::Write,
        };
        let mut out = [std::ptr::null_mut(); 3];
        pages
            .binding_addresses("launch", &[at(BASE, 0, 64), at(BASE, 4032, 64)], &mut out)
            .unwrap();
        assert_eq!(out[1] as u64, BASE + 4032);
        for bad in [
            at(BASE, 4033, 64),
            at(BASE + SLOT, 0, 64),
            at(BASE + 256, 0, 1),
        ] {
            let err = pages
                .binding_addresses("launch", &[at(BASE, 0, 64), bad], &mut out)
                .unwrap_err();
            assert_eq!(err.kind(), streamcore::platform::ErrorKind::InvalidValue);
        }
        let err = pages
            .device_address(
                "copy",
                DeviceRange {
                    page: PageId(BASE + SLOT),
                    offset: 0,
                    len: 1,
                },
            )
            .unwrap_err();
        assert!(err.to_string().contains("no live device page"), "{err}");
        let err = pages
            .device_address(
                "copy",
                DeviceRange {
                    page: PageId(BASE),
                    offset: 4096,
                    len: 1,
                },
            )
            .unwrap_err();
        assert!(err.to_string().contains("outside its page"), "{err}");
    }

    #[test]
    fn graph_uses_are_merged_and_checked_per_page() {
        let pages = Pages::default();
        pages.device_page_added(BASE, 4096);
        pages.host_page_added(BASE + SLOT, 4096);
        let d = |offset, len| {
            PageUse::device(DeviceRange {
                page: PageId(BASE),
                offset,
                len,
            })
        };
        let h = PageUse::host(HostRange {
            page: PageId(BASE + SLOT),
            offset: 0,
            len: 4096,
        });
        let mut uses = vec![d(0, 64), h, d(4000, 96), d(128, 8), h];
        merge_uses(&mut uses);
        assert_eq!(uses.len(), 2, "{uses:?}");
        assert!(uses.contains(&d(0, 4096)), "furthest end kept: {uses:?}");
        assert!(pages.all_live(&uses));
        // A host page is never a device page, and a page gone is gone.
        let as_device = PageUse::device(DeviceRange {
            page: PageId(BASE + SLOT),
            offset: 0,
            len: 1,
        });
        assert!(!pages.all_live(&[as_device]));
        pages.host_page_removed(BASE + SLOT);
        assert!(!pages.all_live(&uses));
        pages.host_page_added(BASE + SLOT, 16);
        assert!(!pages.all_live(&uses), "back, but smaller than the use");
    }

    #[test]
    fn aligned_addresses_spread_over_the_table() {
        // 256-aligned page starts must not all land in one bucket group:
        // the mixed hash's low bits differ.
        let low: std::collections::HashSet<u64> = (0..64u64)
            .map(|i| {
                let mut h = AddressHasher::default();
                h.write_u64(BASE + i * 256);
                h.finish() & 63
            })
            .collect();
        assert!(low.len() > 32, "{} distinct low bit patterns", low.len());
    }
}
