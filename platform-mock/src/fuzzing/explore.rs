//! Exhaustive small-scope exploration: every program over an alphabet of
//! ops up to a length, each under every interleaving the mock's scheduler
//! can produce for it, checked by the same oracle as the fuzz targets.
//!
//! Each program starts from a fixed setup (run eagerly, not explored); the
//! choice points of its ops are enumerated depth first by an
//! [`Explorer`]; the teardown runs with the explorer's default answers.
//! A program with an op that did nothing in every interleaving (a free
//! with no buffer left, a replay with no graph) makes the same calls as the
//! program without that op, so its extensions are skipped as redundant.

use std::boxed::Box;
use std::collections::BTreeSet;
use std::vec::Vec;

use super::driver::{Driver, Outcome, Violation};
use super::program::{Config, Kernel, Op, Program};
use crate::schedule::{EagerScheduler, Explorer, ScriptedScheduler};

/// What an exploration covered.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExploreReport {
    /// Programs run (every length from 0 to the bound).
    pub sequences: u64,
    /// Programs not extended because an op of theirs did nothing.
    pub pruned: u64,
    /// Runs: the sum over programs of their interleavings.
    pub interleavings: u64,
    /// The most interleavings one program had.
    pub max_interleavings: u64,
    /// Coverage features seen.
    pub features: BTreeSet<u32>,
    /// The programs with the most interleavings (at most five, most first).
    pub widest: Vec<(u64, Vec<Op>)>,
}

/// A counterexample: the program, the scheduler script, the violation.
#[derive(Clone, Debug)]
pub struct Counterexample {
    /// The setup and ops.
    pub program: Program,
    /// How many leading ops of `program` are setup.
    pub setup: usize,
    /// The scheduler's answers at the ops' choice points.
    pub script: Vec<usize>,
    /// What the oracle found.
    pub violation: Violation,
    /// Programs and interleavings run before this one (how long it took to
    /// find).
    pub after: (u64, u64),
}

/// The scope of an exploration.
#[derive(Clone, Debug)]
pub struct Scope {
    /// The device config (streams).
    pub config: Config,
    /// Ops run first, eagerly, not explored.
    pub setup: Vec<Op>,
    /// The ops programs are made of.
    pub alphabet: Vec<Op>,
    /// The longest program.
    pub max_len: usize,
}

impl Scope {
    /// Two streams, two buffers (`b0` on stream 0, `b1` on stream 1, both
    /// written, the info words cached), and an alphabet of cross-stream launches, a free, a host
    /// read, the capture transitions on stream 0, replay, graph release and
    /// an injected launch fault.
    pub fn two_streams(max_len: usize) -> Self {
        Self {
            config: Config {
                streams: 1,
                ..Config::default()
            },
            setup: vec![
                Op::Alloc { stream: 0, size: 1 },
                Op::Alloc { stream: 1, size: 1 },
                Op::write(0, 0, 1),
                Op::write(1, 1, 2),
                // Warm both streams' info caches with the alphabet's words,
                // so launches queue no info upload (fewer commands, fewer
                // interleavings, same behaviour otherwise).
                Op::launch(0, Kernel::Incr, 0, 0, 0, 1),
                Op::launch(1, Kernel::Incr, 1, 1, 1, 2),
                Op::SyncAll,
            ],
            alphabet: vec![
                // Stream 0 reads b0 and writes b1 (owned by stream 1).
                Op::launch(0, Kernel::Scale, 0, 0, 1, 1),
                // Stream 1 updates the first live buffer in place.
                Op::launch(1, Kernel::Incr, 0, 0, 0, 2),
                Op::Free { buf: 0 },
                Op::Read { stream: 1, buf: 1 },
                Op::Prepare { stream: 0 },
                Op::Begin { stream: 0 },
                Op::End { stream: 0 },
                Op::Replay { graph: 0 },
                Op::DropGraph { graph: 0 },
                Op::Fault {
                    site: super::FaultSite::Launch,
                },
            ],
            max_len,
        }
    }
}

impl Scope {
    /// The setup of [`Scope::two_streams`] with an alphabet for capture and
    /// free orderings: a launch on stream 0 that reads `b0` and writes `b1`
    /// (owned by stream 1), a free, prepare/begin/end on stream 0, replay,
    /// graph release and an injected launch fault.
    pub fn capture_orderings(max_len: usize) -> Self {
        let base = Self::two_streams(max_len);
        Self {
            alphabet: vec![
                base.alphabet[0],
                Op::Free { buf: 0 },
                Op::Prepare { stream: 0 },
                Op::Begin { stream: 0 },
                Op::End { stream: 0 },
                Op::Replay { graph: 0 },
                Op::DropGraph { graph: 0 },
                Op::Fault {
                    site: super::FaultSite::Launch,
                },
            ],
            ..base
        }
    }
}

impl Scope {
    /// The setup of [`Scope::two_streams`] under the tiniest flush threshold
    /// (every free is fenced at once), with an alphabet for frees racing
    /// cross-stream uses: an in-place launch on stream 1 of the first live
    /// buffer (`b0`, owned by stream 0), a free of it, an allocation on
    /// stream 0 (of `b0`'s size: it may get `b0`'s bytes back), and a fill
    /// of the newest buffer on stream 0.
    pub fn cross_stream_frees(max_len: usize) -> Self {
        let base = Self::two_streams(max_len);
        Self {
            config: Config {
                flush: 4,
                ..base.config
            },
            alphabet: vec![
                base.alphabet[1],
                Op::Free { buf: 0 },
                Op::Alloc { stream: 0, size: 1 },
                Op::launch(0, Kernel::Fill, 0, 0, 255, 1),
            ],
            ..base
        }
    }
}

impl Scope {
    /// The setup of [`Scope::two_streams`] with an alphabet for reads whose
    /// platform calls fail (issue 14's stale-bytes case): a read of `b0` on
    /// stream 0 whose host synchronization fails, reads of `b0` on stream 1
    /// whose event record or cross-stream wait fails, an in-place launch on
    /// stream 0 of `b0` (so the next read on stream 1 must wait), an upload
    /// to `b1` on stream 1 (it reuses staging bytes), a read of `b1`, and a
    /// free of `b0`.
    pub fn read_faults(max_len: usize) -> Self {
        use super::ReadSite;
        let base = Self::two_streams(max_len);
        let read_fault = |stream, site| Op::ReadFault {
            stream,
            buf: 0,
            site,
        };
        Self {
            alphabet: vec![
                read_fault(0, ReadSite::Synchronize),
                read_fault(1, ReadSite::Record),
                read_fault(1, ReadSite::Wait),
                Op::launch(0, Kernel::Incr, 0, 0, 0, 1),
                Op::write(1, 1, 9),
                Op::Read { stream: 1, buf: 1 },
                Op::Free { buf: 0 },
            ],
            ..base
        }
    }
}

/// Runs every program of `scope` under every interleaving; stops at the
/// first violation.
pub fn explore(scope: &Scope) -> Result<ExploreReport, Box<Counterexample>> {
    let mut report = ExploreReport::default();
    let mut prefix = Vec::new();
    walk(scope, &mut prefix, &mut report)?;
    Ok(report)
}

fn walk(
    scope: &Scope,
    ops: &mut Vec<Op>,
    report: &mut ExploreReport,
) -> Result<(), Box<Counterexample>> {
    let redundant = run_all(scope, ops, report)?;
    report.sequences += 1;
    if ops.len() == scope.max_len {
        return Ok(());
    }
    if redundant {
        report.pruned += 1;
        return Ok(());
    }
    for op in &scope.alphabet {
        ops.push(*op);
        walk(scope, ops, report)?;
        ops.pop();
    }
    Ok(())
}

/// Runs `ops` under every interleaving. Returns whether some op did nothing
/// in every one of them.
fn run_all(
    scope: &Scope,
    ops: &[Op],
    report: &mut ExploreReport,
) -> Result<bool, Box<Counterexample>> {
    let mut program = Program {
        config: scope.config,
        ops: scope.setup.clone(),
    };
    program.ops.extend_from_slice(ops);
    let mut explorer = Explorer::new();
    let mut idle_everywhere = vec![true; ops.len()];
    let mut runs = 0u64;
    while let Some(script) = explorer.next_script() {
        let fail = |violation: Violation, script: &[usize]| {
            Box::new(Counterexample {
                program: program.clone(),
                setup: scope.setup.len(),
                script: script.to_vec(),
                violation,
                after: (report.sequences, report.interleavings + runs),
            })
        };
        let (trace, idle) = run_one(scope, &program, &script, &mut report.features)
            .map_err(|v| fail(v, &script))?;
        for (i, n) in idle.iter().enumerate() {
            idle_everywhere[i] &= *n;
        }
        explorer.record(&trace);
        runs += 1;
    }
    report.interleavings += runs;
    report.max_interleavings = report.max_interleavings.max(runs);
    report.widest.push((runs, ops.to_vec()));
    report.widest.sort_by_key(|w| core::cmp::Reverse(w.0));
    report.widest.truncate(5);
    Ok(idle_everywhere.iter().any(|x| *x))
}

fn run_one(
    scope: &Scope,
    program: &Program,
    script: &[usize],
    features: &mut BTreeSet<u32>,
) -> Result<(Vec<crate::schedule::ChoiceRecord>, Vec<bool>), Violation> {
    let mut d = Driver::new(program, Some(Box::new(EagerScheduler)))?.ok_or_else(|| Violation {
        step: None,
        op: None,
        message: "the device refused the scope's config".into(),
    })?;
    let setup = scope.setup.len();
    for (i, op) in program.ops[..setup].iter().enumerate() {
        d.step(i, *op)?;
    }
    d.mock()
        .set_scheduler(Box::new(ScriptedScheduler::new(script.to_vec())));
    d.mock().take_choice_trace();
    let mut idle = Vec::new();
    for (i, op) in program.ops[setup..].iter().enumerate() {
        d.step(setup + i, *op)?;
        idle.push(d.last_outcome == Some(Outcome::Nothing));
    }
    let trace = d.mock().choice_trace();
    d.finish()?;
    features.extend(d.features.iter().copied());
    Ok((trace, idle))
}
