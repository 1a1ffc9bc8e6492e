//! The two-stream hand-off's bookkeeping, counted: the pipeline the H200
//! comparison runs (a fill of a stage buffer on stream 1, then its
//! accumulation on stream 0), with the waits, events and info-cache
//! lookups each stage must cost and no more.

use streamcore::device::{DeviceStats, Launched};
use streamcore::platform::LaunchDims;

#[path = "support/pipeline.rs"]
mod pipeline;

use pipeline::{CONSUMER as S0, PRODUCER as S1, Pipeline};

const STAGES: usize = 8;

fn pipeline() -> Pipeline {
    Pipeline::new(STAGES, 256)
}

/// (launches, waits, events recorded, info hits, info misses).
fn counts(p: &Pipeline) -> (u64, u64, u64, u64, u64) {
    let DeviceStats {
        launches,
        waits,
        events_recorded,
        info_hits,
        info_misses,
        ..
    } = p.d.stats();
    (launches, waits, events_recorded, info_hits, info_misses)
}

#[test]
fn each_stage_costs_one_event_and_one_wait_and_nothing_else() {
    let p = pipeline();
    // Fresh: every accumulation waits for its fill (one event each); no
    // fill waits (nothing used its buffer). The fills' words all miss;
    // the accumulations' words miss once, then hit (the first hit through
    // the cache, the rest through the stream's last-hit memo).
    p.run();
    assert_eq!(counts(&p), (16, 8, 8, 7, 9));

    // Again without a sync: the first fill's buffer was read by stream 0,
    // so that fill waits once for stream 0 (covering every earlier read
    // there); the later fills need no wait of their own. Every lookup hits.
    p.run();
    assert_eq!(counts(&p), (32, 8 + 9, 8 + 9, 7 + 16, 9));

    // After a host sync (which records events of its own) everything is
    // complete: only the hand-offs wait.
    p.d.sync_all().unwrap();
    let (_, _, events, _, _) = counts(&p);
    p.run();
    assert_eq!(counts(&p), (48, 17 + 8, events + 8, 23 + 16, 9));
}

#[test]
fn a_write_after_its_own_stream_and_another_waits_for_the_other_only() {
    let p = pipeline();
    let b = &p.stages[0];
    let dims = LaunchDims::linear(1, 64);
    // Used by stream 1 (a write) and stream 0 (a read), then written by
    // stream 1 again: one wait, for stream 0's read.
    let r = p.d.launch(S1, p.fill, dims, &[b.write()], &[64, 1]);
    assert_eq!(r.unwrap(), Launched::Queued);
    let r =
        p.d.launch(S0, p.acc, dims, &[b.read(), p.sum.read_write()], &[64]);
    assert_eq!(r.unwrap(), Launched::Queued);
    assert_eq!(counts(&p).1, 1, "the read waits for the write");
    let r = p.d.launch(S1, p.fill, dims, &[b.write()], &[64, 1]);
    assert_eq!(r.unwrap(), Launched::Queued);
    assert_eq!(counts(&p).1, 2, "the rewrite waits for the read");
    // Stream 1 again: its own earlier uses need no wait.
    let r = p.d.launch(S1, p.fill, dims, &[b.write()], &[64, 1]);
    assert_eq!(r.unwrap(), Launched::Queued);
    assert_eq!(counts(&p).1, 2);
}
