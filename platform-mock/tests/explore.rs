//! Exhaustive exploration of every interleaving of small programs.

mod common;

use std::collections::BTreeSet;

use common::*;
use streamcore::platform::Platform;
use streamcore_mock::schedule::Explorer;
use streamcore_mock::{HazardKind, MockConfig};

/// Stream 0 fills a buffer with 7, stream 1 copies it out; returns the
/// value seen and the hazards.
fn program(
    script: Vec<usize>,
    synced: bool,
) -> (
    u32,
    Vec<HazardKind>,
    Vec<streamcore_mock::schedule::ChoiceRecord>,
) {
    let mut r = rig(MockConfig::default()
        .scripted(script)
        .report_uninitialized(false));
    let mut s0 = r.stream();
    let mut s1 = r.stream();
    let buf = r.buffer(1);
    let out = r.buffer(1);
    r.fill(&mut s0, buf, 7);
    if synced {
        let e = r.mock.record(&mut s0).unwrap();
        r.mock.wait(&mut s1, &e).unwrap();
    }
    r.mock.copy_device(&mut s1, buf, out).unwrap();
    r.mock.run_until_idle();
    let seen = words_of(&r.mock.peek(out).unwrap())[0];
    let kinds = r.mock.hazards().iter().map(|h| h.kind).collect();
    (seen, kinds, r.mock.choice_trace())
}

fn explore(synced: bool) -> (u64, BTreeSet<u32>, BTreeSet<Vec<HazardKind>>) {
    let mut ex = Explorer::new();
    let mut values = BTreeSet::new();
    let mut hazards = BTreeSet::new();
    while let Some(script) = ex.next_script() {
        let (v, h, trace) = program(script, synced);
        values.insert(v);
        hazards.insert(h);
        ex.record(&trace);
        assert!(ex.runs() < 10_000, "exploration must terminate");
    }
    (ex.runs(), values, hazards)
}

#[test]
fn every_interleaving_of_a_race_is_enumerated_and_flagged() {
    let (runs, values, hazards) = explore(false);
    eprintln!("racy program: {runs} interleavings");
    assert!(runs >= 3, "{runs}");
    assert_eq!(
        values,
        [0, 7].into_iter().collect(),
        "both outcomes are reachable"
    );
    assert_eq!(hazards, [vec![HazardKind::WriteRead]].into_iter().collect());
}

#[test]
fn every_interleaving_of_the_synchronized_program_is_correct_and_clean() {
    let (runs, values, hazards) = explore(true);
    assert!(runs >= 3, "{runs}");
    assert_eq!(values, [7].into_iter().collect());
    assert_eq!(hazards, [vec![]].into_iter().collect());
}

#[test]
fn a_replayed_script_reproduces_the_run() {
    let (v1, _, trace) = program(vec![0, 2, 1], false);
    let script: Vec<usize> = trace.iter().map(|c| c.chosen).collect();
    let (v2, _, trace2) = program(script, false);
    assert_eq!(v1, v2);
    assert_eq!(trace, trace2);
}
