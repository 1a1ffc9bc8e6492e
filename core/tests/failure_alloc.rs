//! The success path of a launch (claim check, run, clear) makes no heap
//! allocation, proven with a counting global allocator.
//!
//! Counting is per thread, so other tests running in parallel threads of
//! this binary cannot disturb the count.

use streamcore::failure::{
    AllocId, Cause, Decision, ErrorGraph, KernelName, Operand, Operation, Region,
};

#[path = "support/counting_alloc.rs"]
mod counting_alloc;
use counting_alloc::allocations;

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

/// One launch through the write scope, the way the device layer runs it.
fn clean_launch(g: &mut ErrorGraph<Boom>, op: &Operation, operands: &[Operand]) {
    assert_eq!(g.begin(op, operands), Decision::Run);
    g.succeeded(operands);
}

#[test]
fn success_path_allocates_nothing() {
    let kernel = Operation::Launch(KernelName::new("saxpy"));

    // The counter works: an allocation is seen.
    assert!(allocations(|| drop(std::hint::black_box(vec![1u8; 16]))) >= 1);

    // 1. An empty graph: nothing was ever tainted.
    let mut g: ErrorGraph<Boom> = ErrorGraph::new();
    let ops = [
        Operand::read(region(1, 0, 256)),
        Operand::read(region(2, 0, 256)),
        Operand::write(region(3, 0, 256)),
    ];
    assert_eq!(allocations(|| clean_launch(&mut g, &kernel, &ops)), 0);

    // 2. Other allocations are tainted (some with many claims): a launch over
    //    clean ones is still a lookup miss per operand.
    for a in 100..164 {
        g.failed(
            Cause::new(kernel.clone(), Boom),
            &[Operand::write(region(a, 0, 64))],
        );
    }
    for i in 0..8 {
        g.written(region(100, i * 8, 4)); // alloc 100 now has 8 claimed runs
    }
    assert_eq!(g.claims(AllocId(100)).count(), 8);
    assert_eq!(
        allocations(|| {
            for _ in 0..1000 {
                clean_launch(&mut g, &kernel, &ops);
            }
        }),
        0
    );

    // 3. An allocation with claims elsewhere in it: reading and writing its
    //    unclaimed bytes is a hit, a binary search, and nothing else.
    let beside = [
        Operand::read(region(100, 0, 4)),
        Operand::read_write(region(101, 64, 64)),
        Operand::write(region(100, 8, 4)),
    ];
    assert_eq!(
        allocations(|| {
            for _ in 0..1000 {
                clean_launch(&mut g, &kernel, &beside);
            }
        }),
        0
    );

    // 4. A successful write that ends a claim (inline, one range) frees
    //    without allocating.
    let overwrite = [Operand::write(region(102, 0, 64))];
    assert_eq!(allocations(|| clean_launch(&mut g, &kernel, &overwrite)), 0);
    assert_eq!(g.failure(region(102, 0, 64)), None);

    // 5. ... and so does one that ends the claims of a many-run allocation
    //    (the run list shrinks; shrinking never allocates).
    let wipe = [Operand::write(region(100, 0, 64))];
    assert_eq!(allocations(|| clean_launch(&mut g, &kernel, &wipe)), 0);
    assert_eq!(g.claims(AllocId(100)).count(), 0);

    // 6. One claim over one range is stored inline: claiming a fresh
    //    allocation with a live failure (the maps have room after warm-up)
    //    allocates nothing, and neither does clearing it. A second, disjoint
    //    claim on the same allocation is what needs a run list.
    let f = g.failure(region(103, 0, 64)).expect("alloc 103 is claimed");
    let fresh = region(102, 0, 64);
    assert_eq!(allocations(|| g.taint(fresh, f).unwrap()), 0);
    assert_eq!(allocations(|| clean_launch(&mut g, &kernel, &overwrite)), 0);
    assert_eq!(allocations(|| g.taint(fresh, f).unwrap()), 0);
    assert!(allocations(|| g.taint(region(102, 128, 8), f).unwrap()) >= 1);
    assert_eq!(g.claims(AllocId(102)).count(), 2);
}
