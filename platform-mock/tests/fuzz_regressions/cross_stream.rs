//! Streams that use each other's buffers, or work while another stream
//! records.

use super::*;

/// Freeing buffers in another order than their last cross-stream uses
/// pinned them with decreasing cursors: a debug assertion in `CrossPins`
/// fired (and release builds released the earlier pin late).
#[test]
fn frees_out_of_cross_stream_use_order() {
    run(Program {
        config: cfg(1),
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

/// `cleanup` (or a pool trim) on one stream released pages while another
/// stream recorded a capture: the driver's global capture mode refuses the
/// release, the call failed and the other stream's capture was invalidated.
/// Pools now hold storage flushes while any stream records.
#[test]
fn releasing_pages_while_another_stream_records() {
    run(Program {
        config: cfg(1),
        ops: vec![
            Op::Alloc { stream: 1, size: 5 },
            Op::Free { buf: 0 },
            Op::SyncAll,
            Op::Alloc { stream: 0, size: 0 },
            Op::Prepare { stream: 0 },
            fill(0, 0, 1),
            Op::Begin { stream: 0 },
            Op::Cleanup,
            fill(0, 0, 1),
            Op::End { stream: 0 },
            Op::Replay { graph: 0 },
            Op::Read { stream: 1, buf: 0 },
        ],
    });
}

/// A launch on stream 0 reading what stream 1 wrote before stream 1 began
/// recording: the wait's event was recorded on stream 1 *inside* its
/// capture, which no other stream can wait on (the launch failed and the
/// capture was invalidated). Waits on a recording producer now use an event
/// recorded just before its capture began.
#[test]
fn consumer_waits_on_a_producer_that_is_recording() {
    run(Program {
        config: cfg(1),
        ops: vec![
            Op::Alloc { stream: 0, size: 1 },
            Op::Alloc { stream: 1, size: 1 },
            Op::launch(1, Kernel::Fill, 0, 0, 1, 2),
            Op::Prepare { stream: 1 },
            Op::Begin { stream: 1 },
            Op::launch(0, Kernel::Scale, 1, 1, 0, 1),
            Op::End { stream: 1 },
            Op::Read { stream: 0, buf: 0 },
        ],
    });
}
