//! Generates the fuzz targets' seed corpora and checks them: every input
//! passes the oracle, and together they reach the behaviour each target
//! exists for. With `STREAMCORE_WRITE_CORPUS=1` the corpora are (re)written
//! under `fuzz/corpus/<target>/`.

use std::collections::BTreeSet;
use std::path::PathBuf;

use streamcore_mock::fuzzing::{self, Op, Outcome, Profile, Program, corpus};

fn corpus_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus")
}

fn feature(op: u32, outcome: Outcome) -> u32 {
    op << 8 | outcome as u32
}

#[test]
fn scenarios_pass_the_oracle() {
    for (i, p) in corpus::scenarios().iter().enumerate() {
        if let Err(v) = fuzzing::run(p) {
            panic!("scenario {i}: {v}\n{p:?}");
        }
    }
}

#[test]
fn generated_corpora_pass_and_cover_their_targets() {
    let write = std::env::var("STREAMCORE_WRITE_CORPUS").is_ok_and(|v| v == "1");
    let candidates = if write { 4000 } else { 300 };
    for (name, profile) in Profile::TARGETS {
        let inputs = corpus::generate(profile, candidates, 0x5eed)
            .unwrap_or_else(|(bytes, v)| panic!("{name}: {v}\ninput: {bytes:?}"));
        let mut features = BTreeSet::new();
        for bytes in &inputs {
            let p = profile.shape(Program::decode(bytes));
            features.extend(fuzzing::run(&p).unwrap().features);
        }
        eprintln!(
            "{name}: {} inputs, {} features",
            inputs.len(),
            features.len()
        );
        let foreign = Op::Foreign {
            what: fuzzing::Foreign::Query,
            stream: 0,
            buf: 0,
        };
        let must = |op: Op, o: Outcome| {
            assert!(
                features.contains(&feature(op.kind_index(), o)),
                "{name}: no input reaches {op:?} -> {o:?}"
            )
        };
        must(Op::Read { stream: 0, buf: 0 }, Outcome::Done);
        must(Op::Free { buf: 0 }, Outcome::Done);
        // Reads whose platform calls fail, in every target.
        must(
            Op::ReadFault {
                stream: 0,
                buf: 0,
                site: fuzzing::ReadSite::Synchronize,
            },
            Outcome::Failed,
        );
        // Adversarial configs (refused, and accepted but not strict), pages
        // carved from reservations, trimming settled on round trips, the
        // driver's costs declared and the idle cap acting on them.
        for fact in [
            fuzzing::SETUP_FACT,
            fuzzing::SETUP_FACT | 3,
            fuzzing::SETUP_FACT | 5,
            fuzzing::SETUP_FACT | 6,
            fuzzing::SETUP_FACT | 7,
            fuzzing::SETUP_FACT | 8,
        ] {
            assert!(
                features.contains(&fact),
                "{name}: no input reaches setup fact {fact:#x}"
            );
        }
        match profile {
            Profile::CaptureFreeOrderings => {
                must(Op::End { stream: 0 }, Outcome::Done);
                must(Op::End { stream: 0 }, Outcome::Refused);
                must(foreign, Outcome::Refused);
                must(Op::Replay { graph: 0 }, Outcome::Done);
                must(Op::DropGraph { graph: 0 }, Outcome::Done);
            }
            Profile::TaintPropagation => {
                must(Op::Read { stream: 0, buf: 0 }, Outcome::Tainted);
                must(Op::End { stream: 0 }, Outcome::Refused);
                must(foreign, Outcome::Refused);
                must(
                    Op::Launch {
                        stream: 0,
                        kernel: fuzzing::Kernel::Fill,
                        a: 0,
                        b: 0,
                        out: 0,
                        k: 0,
                    },
                    Outcome::Skipped,
                );
                must(
                    Op::Launch {
                        stream: 0,
                        kernel: fuzzing::Kernel::Fill,
                        a: 0,
                        b: 0,
                        out: 0,
                        k: 0,
                    },
                    Outcome::Failed,
                );
            }
            Profile::MultiStreamSync => must(
                Op::CrossUse {
                    stream: 0,
                    buf: 0,
                    k: 0,
                },
                Outcome::Done,
            ),
            Profile::DropQueue => must(Op::Poll, Outcome::Done),
            Profile::All => {}
        }
        if write {
            let dir = corpus_root().join(name);
            std::fs::create_dir_all(&dir).unwrap();
            for old in corpus::read_dir(&dir).unwrap() {
                std::fs::remove_file(old.0).unwrap();
            }
            for bytes in &inputs {
                std::fs::write(dir.join(corpus::file_name(bytes)), bytes).unwrap();
            }
        }
    }
}
