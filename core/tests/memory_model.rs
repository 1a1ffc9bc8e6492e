//! Model-based property test: random reserve / free / cursor / cleanup /
//! install / capture / persistent sequences against a naive model (a list of
//! live slices and the capture phase), checking after every step:
//! - no two live slices overlap,
//! - every live slice lies inside a live storage page,
//! - the bytes reserved equal the sum of the storage's live pages, and the
//!   pending bytes its released-but-unflushed pages,
//! - the report adds up (slices, bytes in use, pages),
//! - handles of freed slices are stale, cursors are what was set,
//! - inside a capture the storage is never asked for a page.
//!
//! The same sequences run over a storage with resizable pages, where pages
//! are carved from reservations: then every live slice lies in committed
//! chunks, nothing is committed inside a capture and nothing decommitted
//! while a capture window is open (the test storage itself panics on a
//! commit over a committed chunk, a decommit of no earlier commit, or a
//! reservation given back with chunks in it).
//!
//! A third run frees in stream order (`free_ordered`): every reserve is
//! "touched" by a command at the next stream cursor, frees name that cursor,
//! the stream completes commands as the test says (or when the manager asks
//! it to wait), and the test storage panics on a decommit of bytes a
//! command still queued touches; installing a layout while such memory
//! waits is refused.

mod memory_support;

use core::num::NonZeroU64;

use std::cell::RefCell;
use std::rc::Rc;

use memory_support::{KIB, MIB, QueuedWork, TestStorage, layout};
use proptest::prelude::*;
use streamcore::memory::{
    LayoutPreset, MemoryError, MemoryLayout, MemoryManager, MemoryPolicy, SliceHandle,
};
use streamcore::platform::{DeviceProperties, DeviceRange};
use streamcore::stream::capture::Phase;

#[derive(Clone, Debug)]
enum Op {
    Reserve(u64),
    Free(usize),
    SetCursor(usize, u64),
    Unpin(usize),
    Cleanup,
    Install(u8),
    Prepare,
    Begin,
    End,
    Abort,
    Persistent(bool),
    /// Stream order only: reserve, waiting for the stream when asked if
    /// the flag says it can.
    ReserveOrdered(u64, bool),
    /// Stream order only: free in stream order.
    FreeOrdered(usize),
    /// Stream order only: the stream completes this many more commands.
    Progress(u64),
}

fn size() -> impl Strategy<Value = u64> {
    prop_oneof![
        1u64..=KIB,
        (KIB + 1)..=64 * KIB,
        (64 * KIB + 1)..=4 * MIB,
        Just(MIB),
        Just(2 * MIB),
        (16 * MIB + 1)..=20 * MIB,
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        10 => size().prop_map(Op::Reserve),
        8 => any::<usize>().prop_map(Op::Free),
        2 => (any::<usize>(), any::<u64>()).prop_map(|(i, c)| Op::SetCursor(i, c)),
        1 => any::<usize>().prop_map(Op::Unpin),
        1 => Just(Op::Cleanup),
        1 => (0u8..4).prop_map(Op::Install),
        1 => Just(Op::Prepare),
        1 => Just(Op::Begin),
        1 => Just(Op::End),
        1 => Just(Op::Abort),
        1 => any::<bool>().prop_map(Op::Persistent),
    ]
}

fn ordered_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (size(), any::<bool>()).prop_map(|(s, w)| Op::ReserveOrdered(s, w)),
        4 => size().prop_map(Op::Reserve),
        6 => any::<usize>().prop_map(Op::FreeOrdered),
        2 => any::<usize>().prop_map(Op::Free),
        3 => (0u64..6).prop_map(Op::Progress),
        1 => Just(Op::Cleanup),
        1 => (0u8..4).prop_map(Op::Install),
        1 => Just(Op::Prepare),
        1 => Just(Op::Begin),
        1 => Just(Op::End),
        1 => Just(Op::Abort),
    ]
}

fn layouts(i: u8) -> MemoryLayout {
    let props = DeviceProperties {
        total_memory: 1 << 34,
        max_page_size: 16 * MIB,
        alignment: 256,
        integrated: false,
    };
    match i {
        0 => layout(MemoryPolicy::default()),
        1 => layout(MemoryPolicy {
            trim_before_grow: false,
            release_idle_after: NonZeroU64::new(5),
            fit_slack_shift: 2,
            ..MemoryPolicy::default()
        }),
        2 => MemoryLayout::preset(LayoutPreset::Sliced, &props),
        _ => MemoryLayout::preset(LayoutPreset::ExclusivePages, &props),
    }
}

#[derive(Clone, Debug)]
struct Live {
    handle: SliceHandle,
    range: DeviceRange,
    owned: bool,
    /// Reserved inside the capture (pinned at end).
    in_capture: bool,
    /// Reserved in the warm-up (retained until begin / abort).
    in_prepare: bool,
    /// Graphs pinning it (one per `end_capture` that handed it out).
    pins: u8,
    cursor: u64,
    /// The stream cursor of the command that touched it (stream order).
    touched: u64,
}

impl Live {
    fn alive(&self) -> bool {
        self.owned || self.in_capture || self.in_prepare || self.pins > 0
    }
}

fn check(
    m: &MemoryManager<TestStorage>,
    live: &[Live],
    dead: &[SliceHandle],
) -> Result<(), TestCaseError> {
    let s = m.storage();
    // Overlap and containment.
    let mut ranges: Vec<DeviceRange> = live.iter().map(|l| l.range).collect();
    ranges.sort_by_key(|r| (r.page, r.offset));
    for w in ranges.windows(2) {
        if w[0].page == w[1].page {
            prop_assert!(
                w[0].offset + w[0].len <= w[1].offset,
                "overlap {:?} {:?}",
                w[0],
                w[1]
            );
        }
    }
    for r in &ranges {
        if s.resizable.is_some() && s.ranges.contains_key(&r.page.0) {
            prop_assert!(
                s.is_committed(r.page.0, r.offset, r.len),
                "slice {:?} not committed",
                r
            );
            prop_assert_eq!(r.offset % 256, 0);
            continue;
        }
        let page = s.live.get(&r.page.0);
        prop_assert!(page.is_some(), "slice {:?} on a page that is not live", r);
        prop_assert!(
            r.offset + r.len <= *page.unwrap(),
            "slice {:?} beyond its page",
            r
        );
        prop_assert_eq!(r.offset % 256, 0);
    }
    // Bytes.
    let report = m.report();
    let t = report.total();
    if s.resizable.is_none() {
        prop_assert_eq!(t.reserved, s.live_bytes());
        prop_assert_eq!(t.pages as usize, s.live.len());
    }
    prop_assert_eq!(report.pending_release, s.pending_bytes());
    prop_assert_eq!(m.held_bytes(), s.held());
    prop_assert_eq!(t.slices as usize, live.len());
    prop_assert_eq!(t.in_use, live.iter().map(|l| l.range.len).sum::<u64>());
    prop_assert!(t.in_use + t.padding + t.idle_bytes <= t.reserved);
    for p in &report.pools {
        prop_assert!(p.idle_pages <= p.pages && p.idle_bytes <= p.reserved);
    }
    // Handles.
    for l in live {
        prop_assert_eq!(m.range(l.handle).unwrap(), l.range);
        prop_assert_eq!(m.cursor(l.handle).unwrap(), l.cursor);
    }
    for &h in dead.iter().rev().take(8) {
        {
            let ok = matches!(m.range(h), Err(MemoryError::StaleHandle(_)));
            prop_assert!(ok, "unexpected result")
        };
    }
    Ok(())
}

#[derive(Clone, Copy)]
enum Kind {
    Abort,
    End,
    Other,
}

/// The storage's granule for a run over resizable pages (`None`: whole
/// pages). Small granules make the commit pieces small, so memory reached
/// ahead of a page spans pieces of its own.
fn granule() -> impl Strategy<Value = Option<u64>> {
    prop_oneof![Just(Some(64 * KIB)), Just(Some(4 * KIB))]
}

fn run(ops: Vec<Op>, first_layout: u8, resizable: Option<u64>) -> Result<(), TestCaseError> {
    run_with(ops, first_layout, resizable, false)
}

fn run_with(
    ops: Vec<Op>,
    first_layout: u8,
    resizable: Option<u64>,
    ordered: bool,
) -> Result<(), TestCaseError> {
    let mut storage = match resizable {
        Some(granule) => TestStorage::resizable(granule, 64 * MIB),
        None => TestStorage::new(),
    };
    let queue = Rc::new(RefCell::new(QueuedWork::default()));
    if ordered {
        storage.queue = Some(queue.clone());
    }
    // The stream: commands submitted so far (one touch per reserve).
    let mut submitted = 0u64;
    let mut waits = 0u64;
    let mut m = MemoryManager::new(storage, layouts(first_layout));
    let mut live: Vec<Live> = Vec::new();
    let mut dead: Vec<SliceHandle> = Vec::new();
    let mut phase = Phase::NoCapture;
    let mut persistent = 0u32;
    for op in ops {
        let op_kind = match op {
            Op::Abort => Kind::Abort,
            Op::End => Kind::End,
            _ => Kind::Other,
        };
        let allocs_before = m.storage().alloc_calls + m.storage().commit_calls;
        let decommits_before = m.storage().decommit_calls;
        match op {
            Op::Reserve(_) | Op::ReserveOrdered(..) => {
                let (size, r) = match op {
                    Op::ReserveOrdered(size, can) => {
                        let q = queue.clone();
                        let mut wait = |cursor: u64| -> Option<u64> {
                            if !can {
                                return None;
                            }
                            // The stream runs until `cursor` (never past what
                            // was submitted: the manager asks for no more).
                            assert!(cursor <= submitted, "wait for {cursor} > {submitted}");
                            q.borrow_mut().complete(cursor);
                            waits += 1;
                            Some(cursor)
                        };
                        (size, m.reserve_ordered(size, &mut wait))
                    }
                    Op::Reserve(size) => (size, m.reserve(size)),
                    _ => unreachable!(),
                };
                match r {
                    Ok((handle, range)) => {
                        prop_assert_eq!(range.len, size);
                        submitted += 1;
                        live.push(Live {
                            handle,
                            range,
                            owned: true,
                            in_capture: phase == Phase::Capture,
                            in_prepare: phase == Phase::Prepare,
                            pins: 0,
                            cursor: 0,
                            touched: submitted,
                        });
                    }
                    Err(MemoryError::AllocationInCapture { .. }) => {
                        prop_assert_eq!(phase, Phase::Capture);
                    }
                    Err(e) => prop_assert!(false, "unexpected {e}"),
                }
                prop_assert_eq!(m.waits(), waits);
            }
            Op::FreeOrdered(i) => {
                if live.is_empty() {
                    continue;
                }
                let i = i % live.len();
                let l = &live[i];
                let r = m.free_ordered(l.handle, l.touched);
                if l.owned {
                    prop_assert!(r.is_ok());
                    // The command that touched it may still be queued.
                    queue.borrow_mut().touches.push((
                        l.range.page.0,
                        l.range.offset,
                        l.range.len,
                        l.touched,
                    ));
                    live[i].owned = false;
                    // Captured work may touch it on every replay: the
                    // window keeps it and the graph gets it.
                    live[i].in_capture |= phase == Phase::Capture;
                } else {
                    let ok = matches!(r, Err(MemoryError::AlreadyFreed(_)));
                    prop_assert!(ok, "unexpected result");
                }
            }
            Op::Progress(n) => {
                let mut q = queue.borrow_mut();
                let to = (q.completed + n).min(submitted);
                q.complete(to);
                m.complete(to);
                prop_assert_eq!(m.completed(), to.max(m.completed()));
            }
            Op::Free(i) => {
                if live.is_empty() {
                    continue;
                }
                let i = i % live.len();
                if ordered && live[i].owned {
                    // A plain free promises the slice's work is done: the
                    // caller synchronized the stream first.
                    let to = live[i].touched.max(queue.borrow().completed);
                    queue.borrow_mut().complete(to);
                    m.complete(to);
                }
                let r = m.free(live[i].handle);
                if live[i].owned {
                    prop_assert!(r.is_ok());
                    live[i].owned = false;
                    live[i].in_capture |= phase == Phase::Capture;
                } else {
                    {
                        let ok = matches!(r, Err(MemoryError::AlreadyFreed(_)));
                        prop_assert!(ok, "unexpected result")
                    };
                }
            }
            Op::SetCursor(i, c) => {
                if live.is_empty() {
                    continue;
                }
                let i = i % live.len();
                m.set_cursor(live[i].handle, c).unwrap();
                live[i].cursor = c;
            }
            Op::Unpin(i) => {
                if live.is_empty() {
                    continue;
                }
                let i = i % live.len();
                let r = m.unpin(live[i].handle);
                if live[i].pins > 0 {
                    prop_assert!(r.is_ok());
                    live[i].pins -= 1;
                } else {
                    {
                        let ok = matches!(r, Err(MemoryError::NotPinned(_)));
                        prop_assert!(ok, "unexpected result")
                    };
                }
            }
            Op::Cleanup => {
                let r = m.cleanup();
                if phase == Phase::NoCapture {
                    prop_assert!(r.is_ok());
                    let t = m.report().total();
                    prop_assert_eq!(t.idle_pages, 0);
                    prop_assert_eq!(m.storage().pending_bytes(), 0);
                    // Nothing live and nothing queued: nothing held, every
                    // byte and every reservation back with the storage
                    // (memory reached ahead of a page included).
                    if live.is_empty() && m.reuse_cursor() <= m.completed() {
                        prop_assert_eq!(
                            (m.held_bytes(), m.storage().committed(), m.address_space()),
                            (0, 0, 0),
                            "cleanup kept memory with nothing live: {:?}",
                            m.storage().ranges
                        );
                    }
                } else {
                    {
                        let ok = matches!(r, Err(MemoryError::WindowOpen { .. }));
                        prop_assert!(ok, "{:?}", r)
                    };
                }
            }
            Op::Install(i) => {
                let in_use: u64 = live.iter().map(|l| l.range.len).sum();
                let r = m.install(layouts(i));
                let waiting = m.reuse_cursor() > m.completed();
                match (phase, in_use) {
                    (Phase::NoCapture, 0) if resizable.is_some() && waiting && r.is_err() => {
                        // Memory freed in stream order still waits.
                        let ok = matches!(r, Err(MemoryError::InUse { bytes: 0 }));
                        prop_assert!(ok, "unexpected {r:?}");
                        prop_assert!(m.awaiting().is_some());
                    }
                    (Phase::NoCapture, 0) => {
                        prop_assert!(r.is_ok(), "{r:?}");
                        prop_assert_eq!(m.storage().live_bytes(), 0);
                        prop_assert_eq!(m.storage().committed(), 0);
                        prop_assert!(m.storage().ranges.is_empty());
                    }
                    (Phase::NoCapture, b) => {
                        {
                            let ok = matches!(r, Err(MemoryError::InUse { bytes }) if bytes == b);
                            prop_assert!(ok, "unexpected result")
                        };
                    }
                    _ => {
                        let ok = matches!(r, Err(MemoryError::WindowOpen { .. }));
                        prop_assert!(ok, "unexpected result")
                    }
                }
            }
            Op::Prepare => {
                let r = m.prepare();
                prop_assert_eq!(r.is_ok(), phase == Phase::NoCapture);
                if r.is_ok() {
                    phase = Phase::Prepare;
                }
            }
            Op::Begin => {
                let r = m.begin_capture();
                prop_assert_eq!(r.is_ok(), phase == Phase::Prepare);
                if r.is_ok() {
                    phase = Phase::Capture;
                    live.iter_mut().for_each(|l| l.in_prepare = false);
                }
            }
            Op::End => {
                let mut got = Vec::new();
                let r = m.end_capture(|s| got.push(s.handle));
                prop_assert_eq!(r.is_ok(), phase == Phase::Capture);
                if r.is_ok() {
                    phase = Phase::NoCapture;
                    let mut want: Vec<SliceHandle> = live
                        .iter()
                        .filter(|l| l.in_capture)
                        .map(|l| l.handle)
                        .collect();
                    want.sort();
                    got.sort();
                    prop_assert_eq!(got, want);
                    for l in live.iter_mut().filter(|l| l.in_capture) {
                        l.in_capture = false;
                        l.pins += 1;
                    }
                }
            }
            Op::Abort => {
                let r = m.abort_capture();
                prop_assert_eq!(r.is_ok(), phase != Phase::NoCapture);
                if r.is_ok() {
                    phase = Phase::NoCapture;
                    live.iter_mut().for_each(|l| {
                        l.in_prepare = false;
                        l.in_capture = false;
                    });
                }
            }
            Op::Persistent(open) => {
                if open {
                    m.begin_persistent();
                    persistent += 1;
                } else {
                    let r = m.end_persistent();
                    prop_assert_eq!(r.is_ok(), persistent > 0);
                    persistent = persistent.saturating_sub(1);
                }
            }
        }
        if phase == Phase::Capture {
            prop_assert_eq!(
                m.storage().alloc_calls + m.storage().commit_calls,
                allocs_before,
                "storage asked inside a capture"
            );
        }
        if phase != Phase::NoCapture && !matches!(op_kind, Kind::Abort | Kind::End) {
            prop_assert_eq!(
                m.storage().decommit_calls,
                decommits_before,
                "decommit while a capture window was open"
            );
        }
        prop_assert_eq!(m.phase(), phase);
        let (gone, kept): (Vec<Live>, Vec<Live>) = live.into_iter().partition(|l| !l.alive());
        dead.extend(gone.iter().map(|l| l.handle));
        live = kept;
        check(&m, &live, &dead)?;
    }
    Ok(())
}

proptest! {
    // 256 cases, or as many as `PROPTEST_CASES` asks for (a long run).
    #![proptest_config(ProptestConfig::default())]

    #[test]
    fn manager_matches_the_model(ops in proptest::collection::vec(op(), 1..160), first in 0u8..4) {
        run(ops, first, None)?;
    }

    #[test]
    fn frees_in_stream_order_never_decommit_queued_bytes(
        ops in proptest::collection::vec(ordered_op(), 1..200),
        first in 0u8..4,
        resizable in proptest::option::weighted(0.8, granule()),
    ) {
        run_with(ops, first, resizable.flatten(), true)?;
    }

    #[test]
    fn manager_over_resizable_pages_matches_the_model(
        ops in proptest::collection::vec(op(), 1..160),
        first in 0u8..4,
        granule in granule(),
    ) {
        run(ops, first, granule)?;
    }
}
