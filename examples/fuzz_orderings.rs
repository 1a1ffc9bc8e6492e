//! Fuzzing your own capture and free orderings, on the fuzzing harness of
//! `streamcore-mock` (feature `fuzzing`).
//!
//! ```sh
//! cargo run --example fuzz_orderings                 # exhaustive to length 3, 300 random orders (~20 s)
//! FUZZ_ORDERINGS_LEN=4 FUZZ_ORDERINGS_RUNS=5000 cargo run --release --example fuzz_orderings
//! ```
//!
//! Your pipeline's lifecycle is written in the harness's op language: a
//! setup (the buffers your code starts with) and an alphabet (what your code
//! may do next, in any order: write a new input, capture, replay, free the
//! input and allocate another, release the graph, poll, read). The harness
//! runs each program on a device over the mock and checks, after every
//! step, a sequential model of it: the hazard checker is silent, every read
//! returns the model's bytes (or the failure the model expects), every
//! capture transition is accepted or refused as the model says, the pools'
//! accounting adds up, and after teardown nothing is left.
//!
//! Two ways to search the orders:
//! - [`explore`]: every program up to a length, each under every
//!   interleaving the mock's scheduler can produce;
//! - [`fuzz_one`]: the fuzz target, bytes to one program (the first byte
//!   seeds the scheduler). Under cargo-fuzz, a target of three lines:
//!
//!   ```ignore
//!   #![no_main]
//!   libfuzzer_sys::fuzz_target!(|data: &[u8]| my_crate::fuzz_one(data));
//!   ```
//!
//!   Here, `main` feeds it random inputs from a fixed seed.

use streamcore_mock::fuzzing::explore::{Scope, explore};
use streamcore_mock::fuzzing::{self, Config, FaultSite, Kernel, Op, Program};
use streamcore_mock::rng::SplitMix64;

/// Two streams (`streams: 1` is one more than 1), scheduler seed 0, the
/// device's flush thresholds, sane device properties, the harness's pool
/// layout, and a device declared with the streams the ops use.
const CONFIG: Config = Config {
    streams: 1,
    seed: 0,
    flush: 0,
    device: 0,
    layout: 0,
    declared: 0,
};

/// What your code starts with: the weights `b0` on stream 0 and an input
/// `b1` on stream 1 (the producer), both written, one eager run of the
/// computation (which also caches its info words: later launches queue no
/// upload, so there are fewer interleavings to try), then synced. Buffer
/// numbers in ops are positions among the live buffers.
fn setup() -> Vec<Op> {
    vec![
        Op::Alloc { stream: 0, size: 1 },
        Op::Alloc { stream: 1, size: 1 },
        Op::write(0, 0, 1),
        Op::write(1, 1, 2),
        COMPUTE,
        Op::SyncAll,
    ]
}

/// Stream 0 computes from the input into the weights' buffer (eager, or
/// recorded when a capture is open).
const COMPUTE: Op = Op::Launch {
    stream: 0,
    kernel: Kernel::Add,
    a: 0,
    b: 1,
    out: 0,
    k: 1,
};

/// What your code may do next, in any order.
fn alphabet() -> Vec<Op> {
    vec![
        // The producer writes a new input.
        Op::write(1, 1, 3),
        COMPUTE,
        // The capture lifecycle on stream 0, and the graph's use.
        Op::Prepare { stream: 0 },
        Op::Begin { stream: 0 },
        Op::End { stream: 0 },
        Op::Replay { graph: 0 },
        Op::DropGraph { graph: 0 },
        // Free the input (the newest live buffer), allocate another.
        Op::Free { buf: 1 },
        Op::Alloc { stream: 1, size: 1 },
        // Release what completed; read the result back.
        Op::Poll,
        Op::Read { stream: 0, buf: 0 },
        // Your kernels can fail: the next launch does.
        Op::Fault {
            site: FaultSite::Launch,
        },
    ]
}

/// The fuzz target: the first byte seeds the mock's scheduler, every other
/// byte picks the next op of [`alphabet`] (at most 64). Panics with the
/// violation and the program to reproduce it.
fn fuzz_one(data: &[u8]) {
    let Some((&seed, picks)) = data.split_first() else {
        return;
    };
    let alphabet = alphabet();
    let mut ops = setup();
    ops.extend(
        picks
            .iter()
            .take(64)
            .map(|&b| alphabet[usize::from(b) % alphabet.len()]),
    );
    let program = Program {
        config: Config { seed, ..CONFIG },
        ops,
    };
    if let Err(violation) = fuzzing::run(&program) {
        panic!("{violation}\nprogram: {program:?}");
    }
}

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let len = env_or("FUZZ_ORDERINGS_LEN", 3) as usize;
    let runs = env_or("FUZZ_ORDERINGS_RUNS", 300);
    search(len, runs);
}

/// The exhaustive search up to `len` ops, then `runs` random orders.
fn search(len: usize, runs: u64) {
    // Every program of your alphabet up to `len` ops, under every
    // interleaving.
    let scope = Scope {
        config: CONFIG,
        setup: setup(),
        alphabet: alphabet(),
        max_len: len,
    };
    let report = match explore(&scope) {
        Ok(report) => report,
        Err(found) => panic!(
            "ordering {:?} (scheduler script {:?}) breaks: {}",
            &found.program.ops[found.setup..],
            found.script,
            found.violation
        ),
    };
    println!(
        "exhaustive, up to {len} ops of {}: {} programs, {} interleavings (at most {} for one), none broke the model",
        scope.alphabet.len(),
        report.sequences,
        report.interleavings,
        report.max_interleavings
    );
    if let Some((n, ops)) = report.widest.first() {
        println!("  the most interleavings ({n}): {ops:?}");
    }

    // Random orders through the fuzz target, from a fixed seed.
    let mut rng = SplitMix64::new(2024);
    for _ in 0..runs {
        let len = 1 + rng.below(33) as usize;
        let data: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
        fuzz_one(&data);
    }
    println!("random: {runs} orders of up to 32 ops through the fuzz target, none broke the model");
}

#[test]
fn runs() {
    // Shorter than `main`'s default (about 20 s in a debug build): length 2
    // under every interleaving, and 100 random orders.
    search(2, 100);
}

#[test]
fn the_target_takes_any_bytes() {
    for data in [&[][..], &[7], &[0, 255, 3, 3, 3, 1, 2, 4, 5, 6]] {
        fuzz_one(data);
    }
}
