//! Model-based property test of the error-taint graph against a naive
//! reference: a byte-by-byte map from offset to failure, per allocation.
//!
//! After every step the graph's claimed runs, refcounts, live failures and
//! unbacked flags must equal what the byte map implies; once every
//! allocation is freed the graph must be empty.

use std::collections::BTreeMap;

use proptest::prelude::*;
use streamcore::failure::{
    AllocId, Cause, Decision, ErrorGraph, FailureId, KernelName, Operand, Operation, Region,
    StaleFailure,
};

const ALLOCS: u64 = 4;
const SIZE: u64 = 48;

#[derive(Clone, Debug, PartialEq)]
struct Boom(u32);

impl std::fmt::Display for Boom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "boom {}", self.0)
    }
}

#[derive(Clone, Debug)]
struct R {
    alloc: u64,
    start: u64,
    len: u64,
}

impl R {
    fn region(&self) -> Region {
        Region::new(AllocId(self.alloc), self.start, self.len)
    }
}

#[derive(Clone, Debug)]
enum Op {
    /// A write that failed on the platform: a new failure over `r`.
    Fail(R),
    /// `taint(r, live[pick])`, or a stale id when `stale`.
    Taint {
        r: R,
        pick: usize,
        stale: bool,
    },
    Written(R),
    Query(R),
    Read(R),
    Free(u64),
    ReserveFail {
        alloc: u64,
        bytes: u64,
    },
    /// A launch over the operands (access 0 read, 1 write, 2 read-write) that
    /// succeeds or fails if it runs.
    Launch {
        operands: Vec<(R, u8)>,
        ok: bool,
    },
}

fn region() -> impl Strategy<Value = R> {
    (0..ALLOCS, 0..SIZE, 0..=SIZE).prop_map(|(alloc, start, len)| R {
        alloc,
        start,
        len: len.min(SIZE - start),
    })
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => region().prop_map(Op::Fail),
        3 => (region(), any::<usize>(), prop::bool::weighted(0.15))
            .prop_map(|(r, pick, stale)| Op::Taint { r, pick, stale }),
        3 => region().prop_map(Op::Written),
        2 => region().prop_map(Op::Query),
        2 => region().prop_map(Op::Read),
        1 => (0..ALLOCS).prop_map(Op::Free),
        1 => (0..ALLOCS, 0..=SIZE).prop_map(|(alloc, bytes)| Op::ReserveFail { alloc, bytes }),
        4 => (prop::collection::vec((region(), 0u8..3), 1..4), prop::bool::weighted(0.8))
            .prop_map(|(operands, ok)| Op::Launch { operands, ok }),
    ]
}

/// The naive reference.
struct Model {
    bytes: Vec<[Option<FailureId>; SIZE as usize]>,
    unbacked: Vec<bool>,
    minted: Vec<FailureId>,
}

impl Model {
    fn new() -> Self {
        Self {
            bytes: vec![[None; SIZE as usize]; ALLOCS as usize],
            unbacked: vec![false; ALLOCS as usize],
            minted: Vec::new(),
        }
    }

    fn mint(&mut self, id: FailureId) {
        if let Some(last) = self.minted.last() {
            assert!(
                id > *last,
                "ids are minted once, increasing: {id:?} after {last:?}"
            );
        }
        self.minted.push(id);
    }

    fn set(&mut self, r: &R, v: Option<FailureId>) {
        if self.unbacked[r.alloc as usize] {
            return;
        }
        for b in r.start..r.start + r.len {
            self.bytes[r.alloc as usize][b as usize] = v;
        }
    }

    fn first(&self, r: &R) -> Option<(u64, FailureId)> {
        (r.start..r.start + r.len)
            .find_map(|b| self.bytes[r.alloc as usize][b as usize].map(|f| (b, f)))
    }

    /// The claimed bytes of the first claim in `r`, clipped to `r`.
    fn first_run(&self, r: &R) -> Option<(Region, FailureId)> {
        let (b, f) = self.first(r)?;
        let mut e = b;
        while e < r.start + r.len && self.bytes[r.alloc as usize][e as usize] == Some(f) {
            e += 1;
        }
        Some((Region::new(AllocId(r.alloc), b, e - b), f))
    }

    fn runs(&self, alloc: u64) -> Vec<(Region, FailureId)> {
        let mut out: Vec<(Region, FailureId)> = Vec::new();
        for (b, v) in self.bytes[alloc as usize].iter().enumerate() {
            let Some(f) = *v else { continue };
            match out.last_mut() {
                Some((r, g)) if *g == f && r.end() == b as u64 => r.len += 1,
                _ => out.push((Region::new(AllocId(alloc), b as u64, 1), f)),
            }
        }
        out
    }

    fn live(&self) -> BTreeMap<FailureId, usize> {
        let mut m = BTreeMap::new();
        for a in 0..ALLOCS {
            for (_, f) in self.runs(a) {
                *m.entry(f).or_insert(0) += 1;
            }
        }
        m
    }
}

fn check(graph: &ErrorGraph<Boom>, model: &Model) {
    let mut tainted = 0;
    for a in 0..ALLOCS {
        let got: Vec<_> = graph.claims(AllocId(a)).collect();
        let want = model.runs(a);
        assert_eq!(got, want, "claims of alloc {a}");
        tainted += usize::from(!want.is_empty());
        assert_eq!(
            graph.is_unbacked(AllocId(a)),
            model.unbacked[a as usize],
            "unbacked flag of alloc {a}"
        );
    }
    assert_eq!(graph.tainted_allocs(), tainted);
    let live = model.live();
    assert_eq!(graph.failure_count(), live.len(), "live failures");
    for (id, runs) in &live {
        let node = graph
            .get(*id)
            .expect("a failure carried by a claim is live");
        assert_eq!(node.claims(), *runs, "refcount of {id}");
    }
    for id in &model.minted {
        if !live.contains_key(id) {
            assert!(
                graph.get(*id).is_none(),
                "{id} carried by no claim is pruned"
            );
        }
    }
}

fn run(ops: Vec<Op>) {
    let mut graph: ErrorGraph<Boom> = ErrorGraph::new();
    let mut model = Model::new();
    let kernel = Operation::Launch(KernelName::new("k"));
    for (step, op) in ops.into_iter().enumerate() {
        match op {
            Op::Fail(r) => {
                let cause = Cause::new(Operation::CopyToDevice, Boom(step as u32));
                let id = graph.failed(cause, &[Operand::write(r.region())]);
                model.mint(id);
                model.set(&r, Some(id));
            }
            Op::Taint { r, pick, stale } => {
                let live: Vec<_> = model.live().into_keys().collect();
                let dead: Vec<_> = model
                    .minted
                    .iter()
                    .copied()
                    .filter(|id| !live.contains(id))
                    .collect();
                if (stale || live.is_empty()) && !dead.is_empty() {
                    let id = dead[pick % dead.len()];
                    assert_eq!(graph.taint(r.region(), id), Err(StaleFailure(id)));
                } else if !live.is_empty() {
                    let id = live[pick % live.len()];
                    assert_eq!(graph.taint(r.region(), id), Ok(()));
                    model.set(&r, Some(id));
                }
            }
            Op::Written(r) => {
                graph.written(r.region());
                model.set(&r, None);
            }
            Op::Query(r) => {
                assert_eq!(graph.failure(r.region()), model.first(&r).map(|(_, f)| f));
            }
            Op::Read(r) => match (graph.check_read(r.region()), model.first_run(&r)) {
                (Ok(()), None) => {}
                (Err(report), Some((claimed, f))) => {
                    assert_eq!(report.read, r.region());
                    assert_eq!(report.failure, f);
                    assert_eq!(report.claimed, claimed);
                    let mut others: Vec<_> = (r.start..r.start + r.len)
                        .filter_map(|b| model.bytes[r.alloc as usize][b as usize])
                        .filter(|&g| g != f)
                        .collect();
                    others.sort();
                    others.dedup();
                    assert_eq!(report.others, others);
                    let text = report.to_string();
                    assert!(text.contains(&f.to_string()), "{text}");
                }
                (got, want) => panic!("check_read {r:?}: got {got:?}, model {want:?}"),
            },
            Op::Free(a) => {
                graph.free(AllocId(a));
                model.bytes[a as usize] = [None; SIZE as usize];
                model.unbacked[a as usize] = false;
            }
            Op::ReserveFail { alloc, bytes } => {
                let id = graph.reservation_failed(AllocId(alloc), bytes, Boom(step as u32));
                model.mint(id);
                model.bytes[alloc as usize] = [None; SIZE as usize];
                model.unbacked[alloc as usize] = false;
                // A zero-byte reservation claims byte 0 all the same.
                let r = R {
                    alloc,
                    start: 0,
                    len: bytes.max(1),
                };
                model.set(&r, Some(id));
                model.unbacked[alloc as usize] = true;
            }
            Op::Launch { operands, ok } => {
                let ops: Vec<Operand> = operands
                    .iter()
                    .map(|(r, a)| match a {
                        0 => Operand::read(r.region()),
                        1 => Operand::write(r.region()),
                        _ => Operand::read_write(r.region()),
                    })
                    .collect();
                let blocking = operands.iter().zip(&ops).find_map(|((r, _), o)| {
                    if o.access.reads() || model.unbacked[r.alloc as usize] {
                        model.first_run(r)
                    } else {
                        None
                    }
                });
                let writes: Vec<&R> = operands
                    .iter()
                    .zip(&ops)
                    .filter(|(_, o)| o.access.writes())
                    .map(|((r, _), _)| r)
                    .collect();
                match (graph.begin(&kernel, &ops), blocking) {
                    (Decision::Skipped(f), Some((input, g))) => {
                        assert_eq!(f, g);
                        let rec = graph.get(f).unwrap().skips().last().unwrap().clone();
                        assert_eq!(rec.op, kernel);
                        assert_eq!(rec.input, input);
                        let outs: Vec<Region> = writes
                            .iter()
                            .map(|r| r.region())
                            .filter(|r| !r.is_empty())
                            .collect();
                        assert_eq!(&*rec.outputs, outs.as_slice());
                        for r in &writes {
                            model.set(r, Some(f));
                        }
                    }
                    (Decision::Run, None) if ok => {
                        graph.succeeded(&ops);
                        for r in &writes {
                            model.set(r, None);
                        }
                    }
                    (Decision::Run, None) => {
                        let id = graph.failed(Cause::new(kernel.clone(), Boom(0)), &ops);
                        model.mint(id);
                        for r in &writes {
                            model.set(r, Some(id));
                        }
                    }
                    (got, want) => panic!("begin {operands:?}: got {got:?}, model {want:?}"),
                }
            }
        }
        check(&graph, &model);
    }
    for a in 0..ALLOCS {
        graph.free(AllocId(a));
    }
    assert!(
        graph.is_empty(),
        "every allocation freed: the graph holds nothing"
    );
    assert_eq!(graph.failure_count(), 0);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn graph_matches_byte_map(ops in prop::collection::vec(op(), 1..80)) {
        run(ops);
    }
}

/// The model test must be able to fail: a deliberately wrong model (a write
/// that clears one byte too many) is caught.
#[test]
fn model_check_detects_a_wrong_claim() {
    let mut graph: ErrorGraph<Boom> = ErrorGraph::new();
    let mut model = Model::new();
    let r = R {
        alloc: 0,
        start: 0,
        len: 10,
    };
    let id = graph.failed(
        Cause::new(Operation::CopyDevice, Boom(1)),
        &[Operand::write(r.region())],
    );
    model.mint(id);
    model.set(&r, Some(id));
    graph.written(Region::new(AllocId(0), 4, 2));
    model.set(
        &R {
            alloc: 0,
            start: 4,
            len: 3,
        },
        None,
    );
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&graph, &model)));
    assert!(caught.is_err());
}
