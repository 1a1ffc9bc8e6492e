//! Exhaustive small-scope exploration: every program over a small alphabet
//! of ops on two streams and two buffers up to a length, under every
//! interleaving the mock's scheduler can produce, checked by the fuzz
//! targets' oracle. Three scopes:
//!
//! - `two_streams`: cross-stream launches, a free, a host read, the capture
//!   transitions, replay, graph release, an injected fault (length <= 3);
//! - `capture_orderings`: one cross-stream launch, a free, the capture
//!   transitions, replay, graph release, an injected fault (length <= 5);
//! - `cross_stream_frees`: a cross-stream use, a free, an allocation that
//!   may get the freed bytes back, a launch on it (length <= 4);
//! - `read_faults`: reads whose synchronize, record or wait fails, a launch
//!   the next read must wait for, an upload reusing staging bytes, a read, a
//!   free (length <= 3).
//!
//! `STREAMCORE_EXHAUSTIVE_LEN` (two_streams),
//! `STREAMCORE_EXHAUSTIVE_CAPTURE_LEN`, `STREAMCORE_EXHAUSTIVE_FREES_LEN` and
//! `STREAMCORE_EXHAUSTIVE_READS_LEN` raise the lengths (the defaults keep
//! the test well under a minute in a debug build).

use std::time::Instant;

use streamcore_mock::fuzzing::explore::{Scope, explore};

fn len(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn check(name: &str, scope: Scope, min_programs: u64) {
    let start = Instant::now();
    let report = match explore(&scope) {
        Ok(r) => r,
        Err(c) => panic!(
            "{name}: {}\nops after setup: {:?}\nscheduler script: {:?}\nfound after {} programs and {} interleavings, {:.1?}",
            c.violation,
            &c.program.ops[c.setup..],
            c.script,
            c.after.0,
            c.after.1,
            start.elapsed()
        ),
    };
    eprintln!(
        "exhaustive {name}: length <= {}, alphabet of {}: {} programs ({} not extended: an op did nothing), {} interleavings (at most {} for one program), {} features, {:.1?}",
        scope.max_len,
        scope.alphabet.len(),
        report.sequences,
        report.pruned,
        report.interleavings,
        report.max_interleavings,
        report.features.len(),
        start.elapsed()
    );
    for (n, ops) in &report.widest {
        eprintln!("  {n} interleavings: {ops:?}");
    }
    assert!(report.sequences >= min_programs, "{name}: {report:?}");
    assert!(
        report.interleavings >= report.sequences,
        "{name}: {report:?}"
    );
}

#[test]
fn two_streams_every_program_under_every_interleaving() {
    check(
        "two_streams",
        Scope::two_streams(len("STREAMCORE_EXHAUSTIVE_LEN", 3)),
        500,
    );
}

#[test]
fn capture_orderings_every_program_under_every_interleaving() {
    check(
        "capture_orderings",
        Scope::capture_orderings(len("STREAMCORE_EXHAUSTIVE_CAPTURE_LEN", 5)),
        5000,
    );
}

#[test]
fn cross_stream_frees_every_program_under_every_interleaving() {
    check(
        "cross_stream_frees",
        Scope::cross_stream_frees(len("STREAMCORE_EXHAUSTIVE_FREES_LEN", 4)),
        300,
    );
}

#[test]
fn read_faults_every_program_under_every_interleaving() {
    check(
        "read_faults",
        Scope::read_faults(len("STREAMCORE_EXHAUSTIVE_READS_LEN", 3)),
        300,
    );
}
