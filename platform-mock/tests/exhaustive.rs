//! Exhaustive small-scope exploration: every program over a small alphabet
//! (two streams, two buffers, cross-stream launches, a free, a host read,
//! the capture transitions, replay, graph release, an injected fault) up to
//! a length, under every interleaving the mock's scheduler can produce,
//! checked by the fuzz targets' oracle.
//!
//! `STREAMCORE_EXHAUSTIVE_LEN` raises the length (the default keeps the test
//! well under a minute in a debug build).

use std::time::Instant;

use streamcore_mock::fuzzing::explore::{Scope, explore};

#[test]
fn every_small_program_under_every_interleaving() {
    let len = std::env::var("STREAMCORE_EXHAUSTIVE_LEN")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4);
    let scope = Scope::two_streams(len);
    let start = Instant::now();
    let report = match explore(&scope) {
        Ok(r) => r,
        Err(c) => panic!(
            "{}\nops after setup: {:?}\nscheduler script: {:?}",
            c.violation,
            &c.program.ops[c.setup..],
            c.script
        ),
    };
    eprintln!(
        "exhaustive: length <= {len}, alphabet {}: {} programs ({} not extended: an op did nothing), {} interleavings (at most {} for one program), {} features, {:.1?}",
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
    assert!(report.sequences > 100, "{report:?}");
    assert!(report.interleavings > report.sequences, "{report:?}");
}
