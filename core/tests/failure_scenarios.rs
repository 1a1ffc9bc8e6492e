//! Scenario tests of the error-taint graph: propagation chains, recovery by
//! overwriting, several failures over one buffer, cross-stream taint,
//! reservation failures, the skip-record cap and capture dooming.

use streamcore::failure::{
    AllocId, Cause, Decision, ErrorGraph, FailureId, KernelName, Operand, Operation, Region,
    SKIP_RECORDS_PER_FAILURE, StaleFailure,
};
use streamcore::stream::capture::{CaptureError, CaptureState, DoomReason};

#[derive(Clone, Debug, PartialEq)]
struct Boom(&'static str);

impl std::fmt::Display for Boom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

type Graph = ErrorGraph<Boom>;

fn launch(name: &str) -> Operation {
    Operation::Launch(KernelName::new(name))
}

fn whole(alloc: u64) -> Region {
    Region::new(AllocId(alloc), 0, 64)
}

/// Runs `op` the way a device layer would: ask, run (the platform answers
/// `outcome`), report. Returns the failure it produced or inherited.
fn submit(
    g: &mut Graph,
    op: &Operation,
    operands: &[Operand],
    outcome: Result<(), Boom>,
) -> Option<FailureId> {
    match g.begin(op, operands) {
        Decision::Skipped(f) => Some(f),
        Decision::Run => match outcome {
            Ok(()) => {
                g.succeeded(operands);
                None
            }
            Err(e) => Some(g.failed(Cause::new(op.clone(), e), operands)),
        },
    }
}

fn kernels(report: &streamcore::failure::TaintReport) -> Vec<String> {
    report
        .chain
        .iter()
        .map(|l| match &l.op {
            Operation::Launch(k) => k.as_str().to_owned(),
            other => other.to_string(),
        })
        .collect()
}

/// A fails → B skipped → C skipped; reading C names C ← B ← A.
fn chain_a_b_c(g: &mut Graph) -> FailureId {
    let (a, b, c) = (whole(1), whole(2), whole(3));
    let fa = submit(
        g,
        &launch("A"),
        &[Operand::write(a)],
        Err(Boom("launch timed out")),
    )
    .expect("A fails");
    let skip_b = g.begin(&launch("B"), &[Operand::read(a), Operand::write(b)]);
    assert_eq!(skip_b, Decision::Skipped(fa));
    let skip_c = g.begin(&launch("C"), &[Operand::read(b), Operand::write(c)]);
    assert_eq!(skip_c, Decision::Skipped(fa));
    fa
}

#[test]
fn read_walks_back_through_skipped_launches_to_the_root() {
    let mut g = Graph::new();
    let fa = chain_a_b_c(&mut g);
    let report = g.check_read(whole(3)).unwrap_err();
    assert_eq!(report.failure, fa);
    assert_eq!(kernels(&report), ["C", "B"]);
    assert_eq!(report.chain[0].output, whole(3));
    assert_eq!(report.chain[0].input, whole(2));
    assert_eq!(report.chain[1].output, whole(2));
    assert_eq!(report.chain[1].input, whole(1));
    assert_eq!(report.origin, whole(1));
    assert!(report.reached_root);
    assert_eq!(report.root, "launch of kernel `A` failed: launch timed out");
    assert_eq!(report.dropped, 0);

    let text = report.to_string();
    let at = |needle: &str| {
        text.find(needle)
            .unwrap_or_else(|| panic!("{needle:?} missing from:\n{text}"))
    };
    assert!(at("read of alloc #3 bytes [0, 64) refused") < at("kernel `C` skipped"));
    assert!(at("kernel `C` skipped") < at("kernel `B` skipped"));
    assert!(at("kernel `B` skipped") < at("kernel `A` failed: launch timed out"));
    assert!(
        !text.contains("older skip record(s)"),
        "none dropped: {text}"
    );
    assert!(text.lines().count() >= 4, "{text}");
    // It is an error that can travel as one.
    let boxed: Box<dyn std::error::Error> = report;
    assert!(boxed.to_string().contains("failure #1"));

    // Reading B names B ← A only; reading A names A directly.
    let report = g.check_read(whole(2)).unwrap_err();
    assert_eq!(kernels(&report), ["B"]);
    let report = g.check_read(whole(1)).unwrap_err();
    assert!(report.chain.is_empty() && report.reached_root);
}

#[test]
fn overwriting_b_lets_launches_reading_b_run_again() {
    let mut g = Graph::new();
    let fa = chain_a_b_c(&mut g);
    assert_eq!(g.get(fa).unwrap().claims(), 3, "A, B and C carry it");

    // Fresh data uploaded into B: the claim on B ends.
    let upload = submit(
        &mut g,
        &Operation::CopyToDevice,
        &[Operand::write(whole(2))],
        Ok(()),
    );
    assert_eq!(upload, None);
    assert_eq!(g.failure(whole(2)), None);
    assert_eq!(g.get(fa).unwrap().claims(), 2);
    g.check_read(whole(2)).expect("B was rewritten");

    // C again, reading B: it runs and clears C.
    let c_again = g.begin(
        &launch("C"),
        &[Operand::read(whole(2)), Operand::write(whole(3))],
    );
    assert_eq!(c_again, Decision::Run);
    g.succeeded(&[Operand::read(whole(2)), Operand::write(whole(3))]);
    g.check_read(whole(3)).expect("C recomputed from good B");

    // A stays claimed until rewritten or freed; then the failure is gone.
    assert_eq!(g.failure(whole(1)), Some(fa));
    g.free(AllocId(1));
    assert!(g.get(fa).is_none(), "pruned once no allocation carries it");
    assert!(g.is_empty());
}

#[test]
fn two_failures_over_one_buffer() {
    let mut g = Graph::new();
    let x = AllocId(7);
    let f1 = submit(
        &mut g,
        &launch("left"),
        &[Operand::write(Region::new(x, 0, 60))],
        Err(Boom("fault 1")),
    )
    .unwrap();
    let f2 = submit(
        &mut g,
        &Operation::CopyDevice,
        &[Operand::write(Region::new(x, 40, 60))],
        Err(Boom("fault 2")),
    )
    .unwrap();
    assert_ne!(f1, f2);
    // Set, not add: the second failure owns [40, 100).
    let claims: Vec<_> = g.claims(x).collect();
    assert_eq!(
        claims,
        [(Region::new(x, 0, 40), f1), (Region::new(x, 40, 60), f2)]
    );
    assert_eq!(g.failure(Region::new(x, 10, 5)), Some(f1));
    assert_eq!(g.failure(Region::new(x, 50, 5)), Some(f2));
    assert_eq!(g.failure(Region::new(x, 100, 5)), None);

    let report = g.check_read(Region::new(x, 30, 40)).unwrap_err();
    assert_eq!(report.failure, f1);
    assert_eq!(report.claimed, Region::new(x, 30, 10));
    assert_eq!(report.others, [f2]);
    assert!(
        report
            .to_string()
            .contains("also claimed in this read: failure #2")
    );
    assert!(report.root.contains("fault 1"));

    // A read of f2's bytes reports f2's root.
    let report = g.check_read(Region::new(x, 70, 4)).unwrap_err();
    assert_eq!(report.failure, f2);
    assert_eq!(report.root, "device-to-device copy failed: fault 2");

    // Rewriting f1's bytes ends f1 entirely; f2 is untouched.
    g.written(Region::new(x, 0, 40));
    assert!(g.get(f1).is_none());
    assert_eq!(g.get(f2).unwrap().claims(), 1);
}

#[test]
fn partial_write_splits_a_claim() {
    let mut g = Graph::new();
    let x = AllocId(1);
    let f = g.failed(
        Cause::new(launch("k"), Boom("x")),
        &[Operand::write(Region::new(x, 0, 100))],
    );
    g.written(Region::new(x, 40, 20));
    assert_eq!(
        g.claims(x).collect::<Vec<_>>(),
        [(Region::new(x, 0, 40), f), (Region::new(x, 60, 40), f)]
    );
    assert_eq!(g.get(f).unwrap().claims(), 2);
    g.check_read(Region::new(x, 40, 20))
        .expect("rewritten bytes read");
    let report = g.check_read(Region::new(x, 30, 20)).unwrap_err();
    assert_eq!(report.claimed, Region::new(x, 30, 10));
    // The root's outputs still cover the bytes: the walk reaches it.
    assert!(report.reached_root);
}

/// Allocations are device-wide ids: a launch on one stream taints a slice of
/// a buffer another stream owns, exactly like its own.
#[test]
fn failure_on_one_stream_taints_a_slice_owned_by_another() {
    struct Stream {
        owns: Vec<AllocId>,
    }
    let mut g = Graph::new();
    let s1 = Stream {
        owns: vec![AllocId(10)],
    };
    let s2 = Stream {
        owns: vec![AllocId(20)],
    };
    let shared = s2.owns[0];
    // Stream 1 runs a kernel reading its own buffer and writing bytes
    // [16, 32) of stream 2's buffer; it fails.
    let f = submit(
        &mut g,
        &launch("producer"),
        &[
            Operand::read(Region::new(s1.owns[0], 0, 64)),
            Operand::write(Region::new(shared, 16, 16)),
        ],
        Err(Boom("illegal address")),
    )
    .unwrap();
    // Stream 1's own input is untouched.
    g.check_read(Region::new(s1.owns[0], 0, 64)).unwrap();
    // Stream 2: work over the untouched bytes of its buffer runs ...
    let head = [
        Operand::read(Region::new(shared, 0, 16)),
        Operand::write(Region::new(AllocId(21), 0, 16)),
    ];
    assert_eq!(g.begin(&launch("consumer"), &head), Decision::Run);
    g.succeeded(&head);
    g.check_read(Region::new(AllocId(21), 0, 16)).unwrap();
    // ... work over the claimed slice is skipped, and its read names the
    // failure from stream 1.
    let tail = [
        Operand::read(Region::new(shared, 0, 32)),
        Operand::write(Region::new(AllocId(22), 0, 32)),
    ];
    assert_eq!(g.begin(&launch("consumer"), &tail), Decision::Skipped(f));
    let report = g.check_read(Region::new(AllocId(22), 0, 32)).unwrap_err();
    assert_eq!(kernels(&report), ["consumer"]);
    assert_eq!(report.chain[0].input, Region::new(shared, 16, 16));
    assert!(report.root.contains("`producer` failed: illegal address"));
}

#[test]
fn unrelated_work_runs_and_reads_normally_after_a_failure() {
    let mut g = Graph::new();
    submit(
        &mut g,
        &launch("bad"),
        &[Operand::write(whole(1))],
        Err(Boom("x")),
    )
    .unwrap();
    // Many launches over other buffers keep running: nothing is sticky.
    for i in 0..100u64 {
        let ops = [
            Operand::read(whole(100 + i)),
            Operand::read_write(whole(200 + i)),
        ];
        assert_eq!(submit(&mut g, &launch("good"), &ops, Ok(())), None);
        g.check_read(whole(200 + i)).unwrap();
    }
    assert_eq!(g.tainted_allocs(), 1);
}

#[test]
fn a_write_only_launch_over_a_claim_runs_and_clears_it() {
    let mut g = Graph::new();
    let f = submit(
        &mut g,
        &launch("bad"),
        &[Operand::write(whole(1))],
        Err(Boom("x")),
    )
    .unwrap();
    // Writing (not reading) claimed bytes is how a program recovers.
    assert_eq!(
        g.begin(&launch("fill"), &[Operand::write(whole(1))]),
        Decision::Run
    );
    g.succeeded(&[Operand::write(whole(1))]);
    assert!(g.get(f).is_none() && g.is_empty());
    // Read-write of claimed bytes is a read: skipped, the claim stays.
    let f = submit(
        &mut g,
        &launch("bad"),
        &[Operand::write(whole(1))],
        Err(Boom("x")),
    )
    .unwrap();
    assert_eq!(
        g.begin(&launch("inc"), &[Operand::read_write(whole(1))]),
        Decision::Skipped(f)
    );
    let report = g.check_read(whole(1)).unwrap_err();
    assert_eq!(kernels(&report), ["inc"]);
    assert!(report.reached_root);
}

#[test]
fn failed_copy_claims_its_destination() {
    let mut g = Graph::new();
    let dst = Region::new(AllocId(5), 128, 64);
    let f = submit(
        &mut g,
        &Operation::CopyToDevice,
        &[Operand::write(dst)],
        Err(Boom("dma")),
    )
    .unwrap();
    assert_eq!(
        g.failure(whole(5)),
        None,
        "bytes outside the copy are clean"
    );
    assert_eq!(g.failure(dst), Some(f));
    assert_eq!(g.get(f).unwrap().stopped(), [dst]);
    let report = g.check_read(dst).unwrap_err();
    assert_eq!(report.root, "copy from host to device failed: dma");
}

#[test]
fn skip_of_a_skip_walks_a_cycle_once() {
    // A claims X; B reads X writes Y; C reads Y writes X. Reading X walks
    // C then B then A, never looping.
    let mut g = Graph::new();
    let (x, y) = (whole(1), whole(2));
    let fa = submit(&mut g, &launch("A"), &[Operand::write(x)], Err(Boom("x"))).unwrap();
    assert_eq!(
        g.begin(&launch("B"), &[Operand::read(x), Operand::write(y)]),
        Decision::Skipped(fa)
    );
    assert_eq!(
        g.begin(&launch("C"), &[Operand::read(y), Operand::write(x)]),
        Decision::Skipped(fa)
    );
    let report = g.check_read(x).unwrap_err();
    assert_eq!(kernels(&report), ["C", "B"]);
    assert!(report.reached_root);
}

#[test]
fn skip_records_are_capped_to_the_newest_and_the_report_counts_the_dropped() {
    let mut g = Graph::new();
    let root = whole(1);
    let f = submit(
        &mut g,
        &launch("root"),
        &[Operand::write(root)],
        Err(Boom("x")),
    )
    .unwrap();
    let total = SKIP_RECORDS_PER_FAILURE + 4;
    for i in 0..total as u64 {
        let name = format!("k{i}");
        let ops = [Operand::read(root), Operand::write(whole(100 + i))];
        assert_eq!(g.begin(&launch(&name), &ops), Decision::Skipped(f));
    }
    let node = g.get(f).unwrap();
    assert_eq!(node.skips().len(), SKIP_RECORDS_PER_FAILURE);
    assert_eq!(node.dropped_skips(), 4);
    assert_eq!(node.skips().next().unwrap().op, launch("k4"), "oldest kept");
    assert_eq!(node.claims(), 1 + total, "each output is one claim");

    // The newest output still links to the root.
    let newest = g.check_read(whole(100 + total as u64 - 1)).unwrap_err();
    assert!(newest.reached_root);
    assert_eq!(newest.dropped, 4);
    assert!(newest.to_string().contains("4 older skip record(s)"));

    // The oldest output's record was dropped: the report says so.
    let oldest = g.check_read(whole(100)).unwrap_err();
    assert!(!oldest.reached_root);
    assert!(oldest.chain.is_empty());
    let text = oldest.to_string();
    assert!(text.contains("no surviving record"), "{text}");
    assert!(text.contains("4 older skip record(s)"), "{text}");
}

#[test]
fn a_buffer_whose_reservation_failed_blocks_every_launch_over_it() {
    let mut g = Graph::new();
    let u = AllocId(9);
    let f = g.reservation_failed(u, 64, Boom("out of memory"));
    assert!(g.is_unbacked(u));
    // Even a write-only launch cannot run: the buffer has no location.
    let out = [Operand::write(whole(9))];
    assert_eq!(g.begin(&launch("fill"), &out), Decision::Skipped(f));
    let ops = [Operand::read(whole(9)), Operand::write(whole(2))];
    assert_eq!(g.begin(&launch("use"), &ops), Decision::Skipped(f));
    // Nothing clears the claim of an unbacked buffer.
    g.written(whole(9));
    g.succeeded(&out);
    assert_eq!(g.failure(whole(9)), Some(f));
    let report = g.check_read(whole(2)).unwrap_err();
    assert_eq!(kernels(&report), ["use"]);
    assert_eq!(report.root, "reservation of 64 bytes failed: out of memory");
    // Freeing the buffer ends its claim; the output of `use` keeps it.
    g.free(u);
    assert!(!g.is_unbacked(u));
    assert_eq!(g.get(f).unwrap().claims(), 1);
    g.free(AllocId(2));
    assert!(g.is_empty());
}

#[test]
fn a_failure_or_skip_in_an_open_window_dooms_the_capture() {
    let mut g = Graph::new();
    let mut capture = CaptureState::new();
    let f = submit(
        &mut g,
        &launch("A"),
        &[Operand::write(whole(1))],
        Err(Boom("x")),
    )
    .unwrap();
    capture.prepare().unwrap();
    capture.begin().unwrap();
    // Clean work inside the window does not doom it.
    assert_eq!(
        submit(&mut g, &launch("ok"), &[Operand::write(whole(3))], Ok(())),
        None
    );
    assert_eq!(capture.doomed(), None);
    // A skip does.
    let Decision::Skipped(skipped) = g.begin(
        &launch("B"),
        &[Operand::read(whole(1)), Operand::write(whole(2))],
    ) else {
        panic!("B reads a claimed buffer");
    };
    assert!(capture.doom(skipped.into()));
    assert_eq!(
        capture.end(),
        Err(CaptureError::Doomed(DoomReason::Failure(f.get())))
    );
}

#[test]
fn ids_are_never_reused_and_stale_ids_are_refused() {
    let mut g = Graph::new();
    let f1 = g.failed(
        Cause::new(launch("a"), Boom("x")),
        &[Operand::write(whole(1))],
    );
    g.free(AllocId(1));
    assert!(g.get(f1).is_none());
    assert_eq!(g.taint(whole(2), f1), Err(StaleFailure(f1)));
    assert!(g.is_empty(), "a stale taint changes nothing");
    let f2 = g.failed(
        Cause::new(launch("b"), Boom("y")),
        &[Operand::write(whole(1))],
    );
    assert!(f2 > f1);
    // A failure that writes nothing is pruned at once.
    let f3 = g.failed(
        Cause::new(launch("c"), Boom("z")),
        &[Operand::read(whole(1))],
    );
    assert!(f3 > f2 && g.get(f3).is_none());
    assert_eq!(std::mem::size_of::<Option<FailureId>>(), 8);
    assert!(StaleFailure(f1).to_string().contains("failure #1"));
}
