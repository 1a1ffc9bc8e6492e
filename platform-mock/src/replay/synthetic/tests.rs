//! The synthetic sets' tests.

use super::*;

/// Checks a trace's events make sense (every slot allocated once, every
/// free names a live slot) and returns its peak live bytes.
fn peak_live(trace: &Trace) -> u64 {
    let mut sizes: Vec<Option<u64>> = vec![None; trace.slots as usize];
    let (mut live, mut peak) = (0u64, 0u64);
    for e in &trace.events {
        match *e {
            TraceEvent::Alloc { slot, size, stream } => {
                assert!(stream < trace.streams);
                assert!(size > 0 && size % 512 == 0, "size {size}");
                assert!(sizes[slot as usize].replace(size).is_none());
                live += size;
                peak = peak.max(live);
            }
            TraceEvent::Free { slot } => {
                let size = sizes[slot as usize].take();
                assert!(size.is_some(), "a free of a slot not live");
                live -= size.unwrap_or(0);
            }
        }
    }
    peak
}

#[test]
fn a_fresh_set_is_the_ten_families_drawn_from_its_seed() {
    let seen = workloads();
    let a = fresh(20_261_201);
    assert_eq!(a.len(), seen.len());
    for ((sn, _), (fname, ft)) in seen.iter().zip(&a) {
        assert_eq!(
            fname.strip_prefix("fresh20261201_"),
            sn.strip_prefix("syn_"),
            "the same family, in order"
        );
        assert_eq!(ft.header.workload, *fname);
        let peak = peak_live(ft);
        assert!(
            (1 << 20..=40 << 30).contains(&peak),
            "{fname}: peak live {peak} B must fit one GPU with room"
        );
    }
    // The same seed, the same events; another seed, other events and
    // other shapes.
    let again = fresh(20_261_201);
    assert!(a.iter().zip(&again).all(|(x, y)| x.1.events == y.1.events));
    let b = fresh(20_261_202);
    for ((an, at), (bn, bt)) in a.iter().zip(&b) {
        assert_ne!(an, bn);
        assert_ne!(at.events, bt.events, "{an}");
        assert_ne!(peak_live(at), peak_live(bt), "{an}: other sizes");
    }
}

#[test]
fn fresh_sets_of_many_seeds_are_valid_traces() {
    for seed in 0..24 {
        for (name, trace) in fresh(seed) {
            let peak = peak_live(&trace);
            assert!(peak <= 40 << 30, "{name}: peak live {peak} B");
        }
    }
}
