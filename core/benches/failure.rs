//! Cost of the error-taint write scope per launch: the clean path (no claim
//! on any operand) and the tainted paths (skip, failure, recovery), plus the
//! read report.
//!
//! `cargo bench -p streamcore --bench failure`
#![allow(
    missing_docs,
    reason = "criterion_group! generates an undocumented public function"
)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use streamcore::failure::{
    AllocId, Cause, Decision, ErrorGraph, KernelName, Operand, Operation, Region,
};

#[derive(Debug)]
struct Boom;

impl std::fmt::Display for Boom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("boom")
    }
}

fn region(alloc: u64, offset: u64, len: u64) -> Region {
    Region::new(AllocId(alloc), offset, len)
}

/// A read, a read, a write: a typical binary kernel.
fn three(a: u64, b: u64, out: u64) -> [Operand; 3] {
    [
        Operand::read(region(a, 0, 4096)),
        Operand::read(region(b, 0, 4096)),
        Operand::write(region(out, 0, 4096)),
    ]
}

/// A graph with `n` tainted allocations (ids from 1_000_000) and one
/// allocation (id 500) carrying 64 claimed runs.
fn tainted_graph(kernel: &Operation, n: u64) -> ErrorGraph<Boom> {
    let mut g = ErrorGraph::new();
    for a in 0..n {
        g.failed(
            Cause::new(kernel.clone(), Boom),
            &[Operand::write(region(1_000_000 + a, 0, 4096))],
        );
    }
    g.failed(
        Cause::new(kernel.clone(), Boom),
        &[Operand::write(region(500, 0, 8192))],
    );
    for i in 0..64 {
        g.written(region(500, i * 128, 64));
    }
    g
}

fn write_scope(c: &mut Criterion) {
    let kernel = Operation::Launch(KernelName::new("saxpy"));
    let mut group = c.benchmark_group("failure");
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(50);

    // Clean path: begin (one lookup per operand) + succeeded.
    let mut empty: ErrorGraph<Boom> = ErrorGraph::new();
    let ops = three(1, 2, 3);
    group.bench_function("clean/empty_graph", |b| {
        b.iter(|| {
            let d = empty.begin(&kernel, black_box(&ops));
            empty.succeeded(black_box(&ops));
            d
        })
    });

    let mut busy = tainted_graph(&kernel, 1000);
    group.bench_function("clean/1000_tainted_elsewhere", |b| {
        b.iter(|| {
            let d = busy.begin(&kernel, black_box(&ops));
            busy.succeeded(black_box(&ops));
            d
        })
    });

    // Operands inside an allocation with 64 claimed runs, on unclaimed bytes:
    // a hit and a binary search each.
    let beside = [
        Operand::read(region(500, 0, 64)),
        Operand::read(region(500, 4096, 64)),
        Operand::write(region(500, 8064, 64)),
    ];
    assert_eq!(busy.begin(&kernel, &beside), Decision::Run);
    group.bench_function("clean/beside_64_claims", |b| {
        b.iter(|| {
            let d = busy.begin(&kernel, black_box(&beside));
            busy.succeeded(black_box(&beside));
            d
        })
    });

    // Tainted path: the input is claimed, the launch is skipped and recorded
    // (the ring is full: one record dropped per skip), the output inherits.
    let mut g = tainted_graph(&kernel, 1000);
    let skip = three(1_000_000, 2, 3);
    group.bench_function("tainted/skip", |b| {
        b.iter(|| black_box(g.begin(&kernel, black_box(&skip))))
    });

    // Skip, then a successful rewrite of the output ends the inherited claim.
    let rewrite = [Operand::write(region(3, 0, 4096))];
    group.bench_function("tainted/skip_then_rewrite", |b| {
        b.iter(|| {
            let d = g.begin(&kernel, black_box(&skip));
            g.begin(&kernel, &rewrite);
            g.succeeded(black_box(&rewrite));
            d
        })
    });

    // A launch that fails on the platform: new failure over its output,
    // pruned when the output is rewritten.
    group.bench_function("tainted/fail_then_rewrite", |b| {
        b.iter(|| {
            let f = g.failed(Cause::new(kernel.clone(), Boom), black_box(&ops));
            g.succeeded(black_box(&ops));
            f
        })
    });

    // The error path of a read: the report walking C <- B <- A.
    let mut chain: ErrorGraph<Boom> = ErrorGraph::new();
    let k = |n: &str| Operation::Launch(KernelName::new(n));
    chain.failed(
        Cause::new(k("A"), Boom),
        &[Operand::write(region(1, 0, 64))],
    );
    chain.begin(
        &k("B"),
        &[
            Operand::read(region(1, 0, 64)),
            Operand::write(region(2, 0, 64)),
        ],
    );
    chain.begin(
        &k("C"),
        &[
            Operand::read(region(2, 0, 64)),
            Operand::write(region(3, 0, 64)),
        ],
    );
    group.bench_function("read/report_chain_of_3", |b| {
        b.iter(|| black_box(chain.check_read(black_box(region(3, 0, 64)))).is_err())
    });
    group.bench_function("read/clean", |b| {
        b.iter(|| black_box(chain.check_read(black_box(region(4, 0, 64)))).is_ok())
    });

    group.finish();
}

criterion_group!(benches, write_scope);
criterion_main!(benches);
