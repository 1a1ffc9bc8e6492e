//! Capture windows: work asked for inside one, the info words it uploads,
//! and the slices a graph pins.

use super::*;

/// A launch inside a capture whose info-word upload failed on the platform
/// was not queued, yet `end_capture` sealed the window into a graph missing
/// it. A platform failure of work asked for inside a window now dooms it.
#[test]
fn failed_info_upload_inside_a_capture_dooms_it() {
    run(Program {
        config: cfg(0),
        ops: vec![
            Op::Alloc { stream: 0, size: 0 },
            Op::Prepare { stream: 0 },
            fill(0, 0, 1),
            Op::Begin { stream: 0 },
            Op::Fault {
                site: fuzzing::FaultSite::CopyToDevice,
            },
            fill(0, 0, 2),
            Op::End { stream: 0 },
            Op::Read { stream: 0, buf: 0 },
        ],
    });
}

/// Info words first uploaded inside a capture: the upload is recorded into
/// the graph, not run, yet the info cache kept the entry and served its
/// never-written bytes to the next eager launch with the same words (a fill
/// wrote zeros instead of 3). Recorded uploads are no longer cached.
#[test]
fn info_words_first_uploaded_inside_a_capture() {
    run(Program {
        config: cfg(0),
        ops: vec![
            Op::Alloc { stream: 0, size: 2 },
            Op::Prepare { stream: 0 },
            fill(0, 0, 1),
            Op::Begin { stream: 0 },
            fill(0, 0, 3),
            Op::End { stream: 0 },
            fill(0, 0, 3),
            Op::Read { stream: 0, buf: 0 },
            Op::Replay { graph: 0 },
            Op::DropGraph { graph: 0 },
            fill(0, 0, 3),
            Op::Read { stream: 0, buf: 0 },
        ],
    });
}

/// A launch inside a capture whose info words missed the cache, and whose
/// cross-stream wait then failed: the error path returned before handing
/// back the uncached info slice, which leaked (8 bytes live after teardown).
#[test]
fn failed_wait_after_an_uncached_info_upload_leaks_nothing() {
    run(Program {
        config: cfg(1),
        ops: vec![
            Op::Alloc { stream: 0, size: 1 },
            Op::Alloc { stream: 1, size: 1 },
            fill(0, 0, 1),
            Op::Prepare { stream: 1 },
            fill(1, 1, 0),
            Op::Begin { stream: 1 },
            Op::launch(1, Kernel::Scale, 0, 0, 1, 2),
            Op::End { stream: 1 },
        ],
    });
}

/// Releasing a graph unpinned the slices its capture reserved at once, while
/// replays of it were still queued: an info slice uploaded inside the
/// capture (only the pin held it) went back to the pool, a new buffer got its
/// bytes, and another stream's launch on that buffer raced the queued
/// replay (found by `drop_queue` in its 10-minute run). Graph pins are now
/// released through the drop queue, after the stream's next fence.
#[test]
fn releasing_a_graph_with_queued_replays_keeps_its_slices() {
    // The fuzzer's input, minimized.
    run(Program {
        config: Config {
            streams: 2,
            seed: 144,
            flush: 92,
            ..Config::default()
        },
        ops: vec![
            Op::Alloc { stream: 0, size: 0 },
            Op::Alloc { stream: 1, size: 0 },
            Op::Alloc {
                stream: 1,
                size: 27,
            },
            Op::Alloc {
                stream: 0,
                size: 64,
            },
            Op::Read { stream: 0, buf: 1 },
            Op::Prepare { stream: 0 },
            Op::Begin { stream: 0 },
            Op::launch(0, Kernel::Incr, 1, 1, 1, 0),
            Op::End { stream: 0 },
            Op::Replay { graph: 161 },
            Op::DropGraph { graph: 134 },
            Op::Alloc {
                stream: 0,
                size: 216,
            },
            Op::Alloc { stream: 0, size: 0 },
            Op::Alloc { stream: 1, size: 2 },
            Op::CrossUse {
                stream: 211,
                buf: 193,
                k: 240,
            },
        ],
    });
}
