//! CI without a fuzzer: replays every committed corpus input of every fuzz
//! target (`fuzz/corpus/<target>/`) through the same harness and oracle.

use std::path::PathBuf;

use streamcore_mock::fuzzing::{Profile, Program, corpus, run};

#[test]
fn every_committed_corpus_input_passes_the_oracle() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus");
    let mut total = 0;
    let mut steps = 0;
    for (name, profile) in Profile::TARGETS {
        let inputs = corpus::read_dir(&root.join(name)).unwrap();
        assert!(!inputs.is_empty(), "no committed corpus for {name}");
        for (path, bytes) in &inputs {
            let program = profile.shape(Program::decode(bytes));
            match run(&program) {
                Ok(r) => steps += r.steps,
                Err(v) => panic!("{}: {v}\n{program:?}", path.display()),
            }
        }
        eprintln!("{name}: {} inputs replayed", inputs.len());
        total += inputs.len();
    }
    eprintln!("{total} corpus inputs, {steps} ops replayed");
}

/// Every target's profile is a filter of the full op space: a corpus input
/// of one target also runs under the others (cross-pollination stays valid).
#[test]
fn profiles_only_filter_and_bound() {
    for (_, profile) in Profile::TARGETS {
        for p in corpus::scenarios() {
            let shaped = profile.shape(p.clone());
            assert!(shaped.ops.iter().all(|op| profile.admits(op)));
            assert!(shaped.ops.len() <= p.ops.len());
            assert!(shaped.config.streams < profile.max_streams());
        }
    }
}
