//! The live pages a platform handed out, so that no safe call can make it
//! touch memory it does not own.
//!
//! Every device storage of a platform (the `hipMalloc` pages, the
//! virtual-memory pages) registers each page it hands out, from its
//! allocation until its `dealloc` (or the storage's drop); host storages do
//! the same for pinned pages. A range a call receives is accepted only when
//! its page id is the start of a live page of the right kind and
//! `offset + len` does not pass the page's end — one hash lookup per range,
//! under a shared lock taken once per call and held until the driver call
//! has returned (see [`Pages`] for the protocol with the storages).

use std::collections::HashMap;
use std::ffi::c_void;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
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

/// One live page: its usable size, and whether its storage has retired it
/// (handed it back; it is freed at the storage's next flush).
#[derive(Debug)]
struct Entry {
    size: u64,
    retired: AtomicBool,
}

/// Page start → entry.
type PageMap = HashMap<u64, Entry, BuildHasherDefault<AddressHasher>>;

/// The live device and pinned host pages of one platform.
///
/// The protocol between storages and calls:
/// - a storage registers a page once allocated (`*_page_added`);
/// - at `dealloc` it retires it (`*_page_retired`): from then on no range
///   may name it; this takes only a shared lock and never waits for a call;
/// - before freeing retired pages it releases them (`*_pages_released`),
///   which takes the exclusive lock: it waits for every call still between
///   its check and its driver call, so no call queues work on a page after
///   it was freed (the free itself then waits for the queued work).
///
/// Calls hold a [`View`] (a shared lock) from their range checks until the
/// driver call that uses the ranges has returned.
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
    // Each update is one insert, remove or flag store, so a panic elsewhere
    // while the lock was held cannot leave the map half-updated: a poisoned
    // lock is safe to keep using.
    map.read().unwrap_or_else(PoisonError::into_inner)
}

fn write(map: &RwLock<PageMap>) -> RwLockWriteGuard<'_, PageMap> {
    map.write().unwrap_or_else(PoisonError::into_inner)
}

fn add(map: &RwLock<PageMap>, address: u64, size: u64) {
    write(map).insert(
        address,
        Entry {
            size,
            retired: AtomicBool::new(false),
        },
    );
}

fn retire(map: &RwLock<PageMap>, address: u64) {
    if let Some(entry) = read(map).get(&address) {
        entry.retired.store(true, Ordering::Release);
    }
}

fn release(map: &RwLock<PageMap>, addresses: &[u64]) {
    let mut map = write(map);
    for address in addresses {
        map.remove(address);
    }
}

/// The pages of one kind, locked (shared) for as long as the view lives:
/// hold it from the range checks until the driver call that uses the
/// ranges has returned.
pub(crate) struct View<'a> {
    map: RwLockReadGuard<'a, PageMap>,
    kind: &'static str,
}

impl View<'_> {
    /// The size of the live, unretired page starting at `page`.
    #[inline]
    fn live(&self, page: u64) -> Option<u64> {
        self.map
            .get(&page)
            .filter(|e| !e.retired.load(Ordering::Acquire))
            .map(|e| e.size)
    }

    #[cold]
    fn refuse(&self, call: &'static str, page: u64) -> HipError {
        let kind = self.kind;
        let why = match self.map.get(&page) {
            Some(e) if e.retired.load(Ordering::Acquire) => {
                format!("{kind} range names a {kind} page handed back to its storage")
            }
            Some(_) => format!("{kind} range outside its page"),
            None => format!("{kind} range names no live {kind} page of this platform"),
        };
        HipError::invalid(call, &why)
    }

    /// The address of `offset .. offset + len` in page `page`, refused
    /// unless it lies inside a live page.
    #[inline]
    pub(crate) fn address(
        &self,
        call: &'static str,
        page: PageId,
        offset: u64,
        len: u64,
    ) -> Result<u64, HipError> {
        self.inside_page(call, page.0, self.live(page.0), offset, len)
    }

    /// `page + offset` when `offset .. offset + len` lies inside the page,
    /// whose live size is `size` (`None`: not a live page); refused
    /// otherwise.
    #[inline]
    fn inside_page(
        &self,
        call: &'static str,
        page: u64,
        size: Option<u64>,
        offset: u64,
        len: u64,
    ) -> Result<u64, HipError> {
        match size {
            Some(size) if inside(size, offset, len) => Ok(page + offset),
            _ => Err(self.refuse(call, page)),
        }
    }

    /// The device address of every binding, in order, into `out`; refused
    /// unless each lies inside a live page. `out` must be at least as long
    /// as `bindings`.
    #[inline]
    pub(crate) fn bindings(
        &self,
        call: &'static str,
        bindings: &[Binding],
        out: &mut [*mut c_void],
    ) -> Result<(), HipError> {
        // A launch's bindings mostly share a page (the pools carve small
        // buffers out of one): the last page looked up is remembered, so a
        // repeat costs a compare instead of a hash lookup. The view's lock
        // is held throughout, so the remembered size stays the page's.
        let mut last: Option<(u64, Option<u64>)> = None;
        for (slot, b) in out.iter_mut().zip(bindings) {
            let r = b.range;
            let size = match last {
                Some((page, size)) if page == r.page.0 => size,
                _ => {
                    let size = self.live(r.page.0);
                    last = Some((r.page.0, size));
                    size
                }
            };
            *slot = self.inside_page(call, r.page.0, size, r.offset, r.len)? as *mut c_void;
        }
        Ok(())
    }
}

impl Pages {
    /// Registers a live device page, or updates its usable size (a page
    /// that grew in place).
    pub(crate) fn device_page_added(&self, address: u64, size: u64) {
        add(&self.device, address, size);
    }

    /// Retires a device page (at its `dealloc`): no range may name it from
    /// now on. Never waits for a call in flight.
    pub(crate) fn device_page_retired(&self, address: u64) {
        retire(&self.device, address);
    }

    /// Forgets device pages about to be freed; waits for the calls still
    /// between their range checks and their driver calls.
    pub(crate) fn device_pages_released(&self, addresses: &[u64]) {
        release(&self.device, addresses);
    }

    /// Registers a live pinned host page.
    pub(crate) fn host_page_added(&self, address: u64, size: u64) {
        add(&self.host, address, size);
    }

    /// Retires a pinned host page (at its `dealloc`).
    pub(crate) fn host_page_retired(&self, address: u64) {
        retire(&self.host, address);
    }

    /// Forgets pinned host pages about to be freed (see
    /// [`Pages::device_pages_released`]).
    pub(crate) fn host_pages_released(&self, addresses: &[u64]) {
        release(&self.host, addresses);
    }

    /// The device pages, locked shared while the view lives.
    #[inline]
    pub(crate) fn device(&self) -> View<'_> {
        View {
            map: read(&self.device),
            kind: "device",
        }
    }

    /// The pinned host pages, locked shared while the view lives. Take it
    /// after [`Pages::device`] when a call needs both.
    #[inline]
    pub(crate) fn host(&self) -> View<'_> {
        View {
            map: read(&self.host),
            kind: "host",
        }
    }
}

/// Whether every use lies inside a live page of its kind (the pages a
/// graph's replay touches).
pub(crate) fn all_live(device: &View<'_>, host: &View<'_>, uses: &[PageUse]) -> bool {
    uses.iter().all(|u| {
        let view = if u.host { host } else { device };
        view.live(u.page).is_some_and(|size| u.end <= size)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use streamcore::platform::{Access, PlatformError};

    const SLOT: u64 = 0x1_0000;
    /// Where the test pages start: an address a host pointer can hold
    /// (the pages hand their addresses out as pointers).
    const BASE: u64 = if usize::BITS >= 64 {
        0x7f00_0000_0000
    } else {
        0x4000_0000
    };

    #[derive(Clone, Debug)]
    enum Op {
        Add {
            host: bool,
            slot: u64,
            size: u64,
        },
        Retire {
            host: bool,
            slot: u64,
        },
        Release {
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
            (any::<bool>(), 0..8u64).prop_map(|(host, slot)| Op::Retire { host, slot }),
            (any::<bool>(), 0..8u64).prop_map(|(host, slot)| Op::Release { host, slot }),
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
        /// live, unretired pages of that kind finds its page id with the
        /// range inside (device and host pages never answer for each
        /// other), and hands back the page's address plus the offset.
        #[test]
        fn registry_matches_a_linear_scan(ops in proptest::collection::vec(op(), 1..64)) {
            let pages = Pages::default();
            // (host, start, size, retired)
            let mut model: Vec<(bool, u64, u64, bool)> = Vec::new();
            for op in ops {
                match op {
                    Op::Add { host, slot, size } => {
                        let start = BASE + slot * SLOT;
                        model.retain(|&(h, s, _, _)| !(h == host && s == start));
                        model.push((host, start, size, false));
                        if host {
                            pages.host_page_added(start, size);
                        } else {
                            pages.device_page_added(start, size);
                        }
                    }
                    Op::Retire { host, slot } => {
                        let start = BASE + slot * SLOT;
                        for m in model.iter_mut().filter(|m| m.0 == host && m.1 == start) {
                            m.3 = true;
                        }
                        if host {
                            pages.host_page_retired(start);
                        } else {
                            pages.device_page_retired(start);
                        }
                    }
                    Op::Release { host, slot } => {
                        let start = BASE + slot * SLOT;
                        model.retain(|&(h, s, _, _)| !(h == host && s == start));
                        if host {
                            pages.host_pages_released(&[start]);
                        } else {
                            pages.device_pages_released(&[start]);
                        }
                    }
                    Op::Query { host, page, offset, len } => {
                        let expected = model.iter().any(|&(h, s, size, retired)| {
                            h == host && s == page && !retired
                                && offset.checked_add(len).is_some_and(|end| end <= size)
                        });
                        let view = if host { pages.host() } else { pages.device() };
                        let got = view.address("q", PageId(page), offset, len);
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
                            let checked = view.bindings("q", &[binding], &mut out);
                            prop_assert_eq!(checked.is_ok(), expected);
                            // The same page twice: the second is served by
                            // the remembered lookup, and must agree.
                            let whole = Binding {
                                range: DeviceRange { page: PageId(page), offset: 0, len: 1 },
                                access: Access::Read,
                            };
                            let whole_ok = model.iter().any(|&(h, s, size, retired)| {
                                !h && s == page && !retired && size >= 1
                            });
                            let mut out = [std::ptr::null_mut(); 2];
                            let checked = view.bindings("q", &[whole, binding], &mut out);
                            prop_assert_eq!(checked.is_ok(), expected && whole_ok);
                            if checked.is_ok() {
                                prop_assert_eq!(out[1] as u64, page + offset);
                            }
                        }
                    }
                }
            }
        }
    }

    fn at(page: u64, offset: u64, len: u64) -> Binding {
        Binding {
            range: DeviceRange {
                page: PageId(page),
                offset,
                len,
            },
            access: Access::Write,
        }
    }

    #[test]
    fn one_bad_binding_refuses_the_whole_launch() -> Result<(), HipError> {
        let pages = Pages::default();
        pages.device_page_added(BASE, 4096);
        pages.host_page_added(BASE + SLOT, 4096);
        let mut out = [std::ptr::null_mut(); 3];
        let view = pages.device();
        view.bindings("launch", &[at(BASE, 0, 64), at(BASE, 4032, 64)], &mut out)?;
        assert_eq!(out[1] as u64, BASE + 4032);
        for bad in [
            at(BASE, 4033, 64),
            at(BASE + SLOT, 0, 64),
            at(BASE + 256, 0, 1),
        ] {
            let err = view
                .bindings("launch", &[at(BASE, 0, 64), bad], &mut out)
                .unwrap_err();
            assert_eq!(err.kind(), streamcore::platform::ErrorKind::InvalidValue);
        }
        let err = view.address("copy", PageId(BASE + SLOT), 0, 1).unwrap_err();
        assert!(err.to_string().contains("no live device page"), "{err}");
        let err = view.address("copy", PageId(BASE), 4096, 1).unwrap_err();
        assert!(err.to_string().contains("outside its page"), "{err}");
        drop(view);
        pages.device_page_retired(BASE);
        let err = pages
            .device()
            .address("copy", PageId(BASE), 0, 1)
            .unwrap_err();
        assert!(err.to_string().contains("handed back"), "{err}");
        Ok(())
    }

    #[test]
    fn release_waits_for_a_call_between_check_and_driver_call() -> Result<(), HipError> {
        use std::sync::atomic::AtomicU8;
        use std::time::Duration;
        let pages = Pages::default();
        pages.device_page_added(BASE, 4096);
        // 0: checking, 1: checked (view held), 2: "driver call" returned,
        // 3: released.
        let step = AtomicU8::new(0);
        std::thread::scope(|s| -> Result<(), HipError> {
            let view = pages.device();
            view.address("launch", PageId(BASE), 0, 64)?;
            step.store(1, Ordering::SeqCst);
            s.spawn(|| {
                // The storage's dealloc then flush: retiring never waits,
                // releasing waits for the view.
                pages.device_page_retired(BASE);
                pages.device_pages_released(&[BASE]);
                assert_eq!(
                    step.load(Ordering::SeqCst),
                    2,
                    "released while a call held the page"
                );
                step.store(3, Ordering::SeqCst);
            });
            std::thread::sleep(Duration::from_millis(50));
            assert_eq!(step.load(Ordering::SeqCst), 1);
            step.store(2, Ordering::SeqCst);
            drop(view);
            Ok(())
        })?;
        assert_eq!(step.load(Ordering::SeqCst), 3);
        assert!(
            pages
                .device()
                .address("launch", PageId(BASE), 0, 64)
                .is_err()
        );
        Ok(())
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
        let live = |uses: &[PageUse]| all_live(&pages.device(), &pages.host(), uses);
        assert!(live(&uses));
        // A host page is never a device page, and a page gone is gone.
        let as_device = PageUse::device(DeviceRange {
            page: PageId(BASE + SLOT),
            offset: 0,
            len: 1,
        });
        assert!(!live(&[as_device]));
        pages.host_page_retired(BASE + SLOT);
        assert!(!live(&uses));
        pages.host_pages_released(&[BASE + SLOT]);
        pages.host_page_added(BASE + SLOT, 16);
        assert!(!live(&uses), "back, but smaller than the use");
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
