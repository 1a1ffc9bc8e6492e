//! The core's standalone parts under adversarial use: the stream tables
//! (a regression of what an audit of their public API found), and property
//! tests with deterministic seeds for the info cache, the failure graph and
//! the drop queues — random sequences with capture calls in the wrong
//! state, unknown graphs, regions reaching past `u64::MAX`, closures that
//! fail — checking that nothing panics, every value handed in comes back
//! exactly once, and nothing is left once everything is released.

use std::collections::BTreeSet;

use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use streamcore::drop_queue::{BoundedDropQueue, DropQueue, FlushPolicy};
use streamcore::failure::{AllocId, Cause, ErrorGraph, KernelName, Operand, Operation, Region};
use streamcore::info_cache::{CacheMode, CachePolicy, GraphId, InfoCache};
use streamcore::stream::{
    CrossPins, MAX_TRACKED_STREAMS, StreamId, SyncTable, WaitPlan, WriteMark,
};

fn config(seed: u64) -> ProptestConfig {
    ProptestConfig {
        cases: 600,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

// ----- regressions -----

/// The stream tables took their stream count as given: `SyncTable::new(n)`
/// computed `n * (n + 2)` cells (an overflow for a large `n`: a panic in a
/// debug build, and on a 32-bit target from `n = 65536` a table too small
/// for its own indices in a release build), and `WaitPlan`/`CrossPins`
/// allocated per stream. Stream ids are `u16` and a device has at most
/// `MAX_STREAMS`: the tables now track at most that many, and a stream past
/// them is an `UnknownStream` error.
#[test]
fn stream_tables_clamp_a_stream_count_past_any_device() {
    for n in [
        usize::MAX,
        usize::MAX / 2 + 1,
        65_536,
        MAX_TRACKED_STREAMS + 1,
    ] {
        let mut t = SyncTable::new(n);
        assert_eq!(t.streams(), MAX_TRACKED_STREAMS);
        t.grow(n);
        assert_eq!(t.streams(), MAX_TRACKED_STREAMS);
        let last = StreamId(MAX_TRACKED_STREAMS as u16 - 1);
        let past = StreamId(MAX_TRACKED_STREAMS as u16);
        assert_eq!(t.submit(last), Ok(1));
        assert!(t.submit(past).is_err());
        let mut plan = WaitPlan::new(n);
        plan.grow(n);
        let mark = WriteMark {
            stream: last,
            cursor: 1,
        };
        t.plan(StreamId(0), [mark], &mut plan).unwrap();
        assert_eq!(plan.waits().collect::<Vec<_>>(), [(last, 1)]);
        let past_mark = WriteMark {
            stream: past,
            cursor: 1,
        };
        assert!(t.plan(StreamId(0), [past_mark], &mut plan).is_err());
        let mut pins: CrossPins<u8> = CrossPins::new(n);
        pins.grow(n);
        pins.pin(last, 1, 7).unwrap();
        assert!(pins.pin(past, 1, 7).is_err());
        assert_eq!(pins.total(), 1);
    }
    // Below the bound, as asked.
    let mut t = SyncTable::new(3);
    assert_eq!(t.streams(), 3);
    t.grow(5);
    assert_eq!(t.streams(), 5);
}

// ----- the info cache -----

#[derive(Clone, Debug)]
enum CacheOp {
    Get(Vec<u64>),
    Insert(Vec<u64>),
    Mode(bool),
    Commit(u64),
    Discard,
    Release(u64),
    Clear,
    Policy(usize, u64),
    Peek(Vec<u64>),
}

fn words() -> impl Strategy<Value = Vec<u64>> {
    prop::collection::vec(0u64..3, 0..6)
}

fn cache_op() -> impl Strategy<Value = CacheOp> {
    let extreme_entries = prop_oneof![Just(0usize), Just(1), Just(3), Just(usize::MAX)];
    let extreme_bytes = prop_oneof![Just(0u64), Just(8), Just(40), Just(u64::MAX)];
    prop_oneof![
        4 => words().prop_map(CacheOp::Get),
        6 => words().prop_map(CacheOp::Insert),
        1 => any::<bool>().prop_map(CacheOp::Mode),
        1 => (0u64..4).prop_map(CacheOp::Commit),
        1 => Just(CacheOp::Discard),
        1 => (0u64..4).prop_map(CacheOp::Release),
        1 => Just(CacheOp::Clear),
        1 => (extreme_entries, extreme_bytes).prop_map(|(e, b)| CacheOp::Policy(e, b)),
        1 => words().prop_map(CacheOp::Peek),
    ]
}

proptest! {
    #![proptest_config(config(0xcac4e))]

    #[test]
    fn the_info_cache_hands_every_value_back_once(
        ops in prop::collection::vec(cache_op(), 1..100),
        entries in 0usize..5,
    ) {
        let mut c: InfoCache<u32> = InfoCache::with_capacity(CachePolicy::new(entries, 64), entries);
        let mut held: BTreeSet<u32> = BTreeSet::new();
        let mut next = 0;
        for op in ops {
            let mut back = Vec::new();
            let evict = |v| back.push(v);
            match op {
                CacheOp::Get(w) => {
                    let _ = c.get(&w);
                }
                CacheOp::Insert(w) => {
                    next += 1;
                    match c.insert(&w, next, evict) {
                        Ok(_) => {
                            held.insert(next);
                        }
                        Err(e) => prop_assert_eq!(e.into_value(), next),
                    }
                }
                CacheOp::Mode(capture) => {
                    let mode = if capture { CacheMode::Capture } else { CacheMode::Normal };
                    c.set_mode(mode, evict);
                }
                CacheOp::Commit(g) => {
                    let _ = c.capture_commit(GraphId(g), evict);
                }
                CacheOp::Discard => {
                    let _ = c.capture_discard(evict);
                }
                CacheOp::Release(g) => {
                    let _ = c.graph_release(GraphId(g), evict);
                }
                CacheOp::Clear => {
                    c.clear_unpinned(evict);
                }
                CacheOp::Policy(e, b) => c.set_policy(CachePolicy::new(e, b), evict),
                CacheOp::Peek(w) => {
                    let _ = (c.peek(&w), c.contains(&w), c.pin_count(&w));
                }
            }
            for v in back {
                prop_assert!(held.remove(&v), "value {} handed back twice or never held", v);
            }
            prop_assert_eq!(c.len(), held.len());
            if c.mode() == CacheMode::Normal {
                let p = c.policy();
                prop_assert!(c.lru_len() <= p.max_entries && c.lru_bytes() <= p.max_bytes);
            }
        }
        let mut back = Vec::new();
        let _ = c.capture_discard(|v| back.push(v));
        for g in 0..4 {
            let _ = c.graph_release(GraphId(g), |v| back.push(v));
        }
        c.clear_unpinned(|v| back.push(v));
        for v in back {
            prop_assert!(held.remove(&v));
        }
        prop_assert!(held.is_empty() && c.is_empty() && c.bytes() == 0);
        prop_assert_eq!(c.graph_count(), 0);
    }
}

// ----- the failure graph -----

type Spec = (u64, u64, u64, u8);

#[derive(Clone, Debug)]
enum TaintOp {
    Begin(Vec<Spec>),
    Succeeded(Vec<Spec>),
    Failed(Vec<Spec>),
    ReservationFailed(u64, u64),
    Taint(u64, u64, u64, usize),
    Written(u64, u64, u64),
    Free(u64),
    Read(u64, u64, u64),
}

fn offset() -> impl Strategy<Value = u64> {
    prop_oneof![4 => 0u64..64, 1 => Just(u64::MAX), 1 => Just(u64::MAX - 1), 1 => Just(1 << 63)]
}

fn specs() -> impl Strategy<Value = Vec<Spec>> {
    prop::collection::vec((0u64..4, offset(), offset(), 0u8..3), 0..4)
}

fn taint_op() -> impl Strategy<Value = TaintOp> {
    prop_oneof![
        4 => specs().prop_map(TaintOp::Begin),
        3 => specs().prop_map(TaintOp::Succeeded),
        3 => specs().prop_map(TaintOp::Failed),
        1 => (0u64..4, offset()).prop_map(|(a, b)| TaintOp::ReservationFailed(a, b)),
        2 => (0u64..4, offset(), offset(), 0usize..20)
            .prop_map(|(a, o, l, f)| TaintOp::Taint(a, o, l, f)),
        2 => (0u64..4, offset(), offset()).prop_map(|(a, o, l)| TaintOp::Written(a, o, l)),
        2 => (0u64..4).prop_map(TaintOp::Free),
        3 => (0u64..4, offset(), offset()).prop_map(|(a, o, l)| TaintOp::Read(a, o, l)),
    ]
}

fn operands(specs: &[Spec]) -> Vec<Operand> {
    specs
        .iter()
        .map(|&(a, o, l, access)| {
            let r = Region::new(AllocId(a), o, l);
            match access {
                0 => Operand::read(r),
                1 => Operand::write(r),
                _ => Operand::read_write(r),
            }
        })
        .collect()
}

proptest! {
    #![proptest_config(config(0xfa11))]

    #[test]
    fn the_failure_graph_keeps_maximal_claims_and_prunes_to_empty(
        ops in prop::collection::vec(taint_op(), 1..60),
    ) {
        let mut g: ErrorGraph<String> = ErrorGraph::new();
        let mut minted = Vec::new();
        let op = Operation::Launch(KernelName::new("k"));
        for step in ops {
            match step {
                TaintOp::Begin(s) => {
                    let _ = g.begin(&op, &operands(&s));
                }
                TaintOp::Succeeded(s) => g.succeeded(&operands(&s)),
                TaintOp::Failed(s) => {
                    minted.push(g.failed(Cause::new(op.clone(), "failed".into()), &operands(&s)));
                }
                TaintOp::ReservationFailed(a, bytes) => {
                    minted.push(g.reservation_failed(AllocId(a), bytes, "refused".into()));
                }
                TaintOp::Taint(a, o, l, f) => {
                    if let Some(&f) = minted.get(f) {
                        let _ = g.taint(Region::new(AllocId(a), o, l), f);
                    }
                }
                TaintOp::Written(a, o, l) => g.written(Region::new(AllocId(a), o, l)),
                TaintOp::Free(a) => g.free(AllocId(a)),
                TaintOp::Read(a, o, l) => {
                    let r = Region::new(AllocId(a), o, l);
                    if let Err(report) = g.check_read(r) {
                        let _ = report.to_string();
                        prop_assert!(g.failure(r).is_some());
                    }
                }
            }
            for a in 0..4 {
                let mut last: Option<(Region, _)> = None;
                for (r, f) in g.claims(AllocId(a)) {
                    prop_assert!(!r.is_empty());
                    prop_assert!(g.get(f).is_some(), "a claim of a pruned failure");
                    if let Some((p, pf)) = last {
                        prop_assert!(r.offset >= p.end(), "claims overlap");
                        prop_assert!(r.offset > p.end() || f != pf, "claims not maximal");
                    }
                    last = Some((r, f));
                }
            }
            for &f in &minted {
                if let Some(node) = g.get(f) {
                    prop_assert!(node.claims() >= 1);
                }
            }
        }
        for a in 0..4 {
            g.free(AllocId(a));
        }
        prop_assert!(g.is_empty(), "{} failures outlive every claim", g.failure_count());
    }
}

// ----- the drop queues -----

proptest! {
    #![proptest_config(config(0xd40b))]

    #[test]
    fn drop_queues_release_every_item_once_whatever_their_closures_do(
        ops in prop::collection::vec((0u8..8, any::<u64>(), any::<bool>()), 1..100),
    ) {
        let policy = FlushPolicy { max_items: 3, max_bytes: 1 << 20 };
        let mut q: DropQueue<u32, u64> = DropQueue::new(policy);
        let never = FlushPolicy { max_items: 0, max_bytes: u64::MAX };
        let mut b: BoundedDropQueue<u32, u64, 4, 2> = BoundedDropQueue::new(never);
        let mut next = 0;
        let mut held: BTreeSet<u32> = BTreeSet::new();
        let mut back: Vec<u32> = Vec::new();
        let (mut fence, mut done) = (0u64, 0u64);
        for (kind, v, fail) in ops {
            let release = |x| back.push(x);
            match kind {
                0 | 1 => {
                    next += 2;
                    let _ = q.push(next, v);
                    held.insert(next);
                    if b.push(next + 1, v).is_ok() {
                        held.insert(next + 1);
                    }
                }
                2 => {
                    fence += 1;
                    let record = || if fail { Err(()) } else { Ok(fence) };
                    let _ = q.flush_with(record);
                    let _ = b.flush_with(record);
                }
                3 => {
                    done = done.max(v % (fence + 1));
                    let passed = |f: &u64| if fail { Err(()) } else { Ok(*f <= done) };
                    let mut release = release;
                    let _ = q.reclaim(passed, &mut release);
                    let _ = b.reclaim(passed, &mut release);
                }
                4 => {
                    let sync = |_: &u64| if fail { Err(()) } else { Ok(()) };
                    let mut release = release;
                    let _ = q.wait_oldest(sync, &mut release);
                    let _ = b.wait_oldest(sync, &mut release);
                }
                5 => {
                    let _ = q.set_recording(fail);
                    let _ = b.set_recording(fail);
                }
                6 => {
                    let sync = |_: &u64| if fail { Err(()) } else { Ok(()) };
                    let mut release = release;
                    let _ = q.drain(sync, &mut release);
                    let _ = b.drain(sync, &mut release);
                }
                _ => {
                    q.set_policy(FlushPolicy { max_items: v as usize, max_bytes: v });
                    let _ = q.flush(v);
                    let _ = b.flush(v);
                }
            }
            for x in back.drain(..) {
                prop_assert!(held.remove(&x), "item {} released twice or never held", x);
            }
            prop_assert_eq!(q.len() + b.len(), held.len());
        }
        q.set_recording(false);
        b.set_recording(false);
        let _ = q.flush(u64::MAX);
        let _ = b.flush(u64::MAX);
        let ok = |_: &u64| Ok::<(), ()>(());
        let _ = q.drain(ok, |x| back.push(x));
        let _ = b.drain(ok, |x| back.push(x));
        for x in back {
            prop_assert!(held.remove(&x));
        }
        prop_assert!(held.is_empty() && q.is_empty() && b.is_empty());
    }
}
