//! The two-stream hand-off's bookkeeping, counted: the pipeline the H200
//! comparison runs (a fill of a stage buffer on stream 1, then its
//! accumulation on stream 0), with the waits, events and info-cache
//! lookups each stage must cost and no more.

use streamcore::device::{Buffer, Device, DeviceConfig, DeviceStats, KernelId, Launched};
use streamcore::null::Null;
use streamcore::platform::{KernelSource, LaunchDims};
use streamcore::stream::StreamId;

const S0: StreamId = StreamId(0);
const S1: StreamId = StreamId(1);
const STAGES: u64 = 8;

struct Pipeline {
    d: Device<Null>,
    fill: KernelId,
    acc: KernelId,
    stages: Vec<Buffer>,
    sum: Buffer,
}

impl Pipeline {
    fn new() -> Self {
        let d = Device::new(Null, DeviceConfig::with_streams(2)).unwrap();
        let kernel = |bindings| {
            d.load_kernel(&KernelSource {
                name: "k",
                source: "",
                bindings,
            })
            .unwrap()
        };
        let (fill, acc) = (kernel(2), kernel(3));
        let stages = (0..STAGES).map(|_| d.alloc(S1, 256).unwrap()).collect();
        let sum = d.alloc(S0, 256).unwrap();
        Self {
            d,
            fill,
            acc,
            stages,
            sum,
        }
    }

    /// One round: each stage's fill has info words of its own (a cache
    /// entry per stage), the accumulation the same words every time.
    fn round(&self) {
        let dims = LaunchDims::linear(1, 64);
        for (k, b) in self.stages.iter().enumerate() {
            let info = [64, k as u64 + 1];
            let r = self.d.launch(S1, self.fill, dims, &[b.write()], &info);
            assert_eq!(r.unwrap(), Launched::Queued);
            let args = [b.read(), self.sum.read_write()];
            let r = self.d.launch(S0, self.acc, dims, &args, &[64]);
            assert_eq!(r.unwrap(), Launched::Queued);
        }
    }

    /// (launches, waits, events recorded, info hits, info misses).
    fn counts(&self) -> (u64, u64, u64, u64, u64) {
        let DeviceStats {
            launches,
            waits,
            events_recorded,
            info_hits,
            info_misses,
            ..
        } = self.d.stats();
        (launches, waits, events_recorded, info_hits, info_misses)
    }
}

#[test]
fn each_stage_costs_one_event_and_one_wait_and_nothing_else() {
    let p = Pipeline::new();
    // Fresh: every accumulation waits for its fill (one event each); no
    // fill waits (nothing used its buffer). The fills' words all miss;
    // the accumulations' words miss once, then hit (the first hit through
    // the cache, the rest through the stream's last-hit memo).
    p.round();
    assert_eq!(p.counts(), (16, 8, 8, 7, 9));

    // Again without a sync: the first fill's buffer was read by stream 0,
    // so that fill waits once for stream 0 (covering every earlier read
    // there); the later fills need no wait of their own. Every lookup hits.
    p.round();
    assert_eq!(p.counts(), (32, 8 + 9, 8 + 9, 7 + 16, 9));

    // After a host sync (which records events of its own) everything is
    // complete: only the hand-offs wait.
    p.d.sync_all().unwrap();
    let (_, _, events, _, _) = p.counts();
    p.round();
    assert_eq!(p.counts(), (48, 17 + 8, events + 8, 23 + 16, 9));
}

#[test]
fn a_write_after_its_own_stream_and_another_waits_for_the_other_only() {
    let p = Pipeline::new();
    let b = &p.stages[0];
    let dims = LaunchDims::linear(1, 64);
    // Used by stream 1 (a write) and stream 0 (a read), then written by
    // stream 1 again: one wait, for stream 0's read.
    let r = p.d.launch(S1, p.fill, dims, &[b.write()], &[64, 1]);
    assert_eq!(r.unwrap(), Launched::Queued);
    let r =
        p.d.launch(S0, p.acc, dims, &[b.read(), p.sum.read_write()], &[64]);
    assert_eq!(r.unwrap(), Launched::Queued);
    assert_eq!(p.counts().1, 1, "the read waits for the write");
    let r = p.d.launch(S1, p.fill, dims, &[b.write()], &[64, 1]);
    assert_eq!(r.unwrap(), Launched::Queued);
    assert_eq!(p.counts().1, 2, "the rewrite waits for the read");
    // Stream 1 again: its own earlier uses need no wait.
    let r = p.d.launch(S1, p.fill, dims, &[b.write()], &[64, 1]);
    assert_eq!(r.unwrap(), Launched::Queued);
    assert_eq!(p.counts().1, 2);
}
