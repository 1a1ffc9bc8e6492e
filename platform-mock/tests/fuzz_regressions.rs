//! Programs the fuzzers or the exhaustive exploration found violating the
//! oracle, kept as regression tests (each failed before its fix).

use streamcore_mock::fuzzing::{self, Config, Op, Program};

fn run(p: Program) {
    if let Err(v) = fuzzing::run(&p) {
        panic!("{v}\n{p:?}");
    }
}

/// Freeing buffers in another order than their last cross-stream uses
/// pinned them with decreasing cursors: a debug assertion in `CrossPins`
/// fired (and release builds released the earlier pin late).
#[test]
fn frees_out_of_cross_stream_use_order() {
    run(Program {
        config: Config {
            streams: 1,
            seed: 0,
            flush: 0,
        },
        ops: vec![
            Op::Alloc { stream: 0, size: 0 },
            Op::Alloc { stream: 0, size: 0 },
            Op::CrossUse {
                stream: 0,
                buf: 1,
                k: 0,
            },
            Op::CrossUse {
                stream: 0,
                buf: 0,
                k: 0,
            },
            Op::Free { buf: 0 },
            Op::Free { buf: 0 },
            Op::SyncAll,
        ],
    });
}
