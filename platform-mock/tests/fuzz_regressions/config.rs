//! Issue 14 items 4 to 6: odd sizes, layouts, page sizes and stream counts
//! are typed errors, and the bounds themselves work.

use super::*;

/// Issue 14 item 4: `empty(stream, 0)` gave a buffer nothing claimed
/// (reading it said "buffer has no memory", not the reservation report).
#[test]
fn an_empty_buffer_of_zero_bytes_is_claimed() {
    run(Program {
        config: cfg(0),
        ops: vec![
            Op::Empty {
                stream: 0,
                size: 13,
            },
            Op::Read { stream: 0, buf: 0 },
            fill(0, 0, 1),
        ],
    });
}

/// Issue 14 item 5: a layout whose pages are `u64::MAX` bytes passed
/// `MemoryLayout::new` and overflowed in the manager (debug) or reached
/// `unreachable!` in `reserve` (release).
#[test]
fn a_layout_of_u64_max_pages_is_a_typed_error() {
    for layout in [6, 7] {
        run(Program {
            config: Config {
                layout,
                ..Config::default()
            },
            ops: vec![
                Op::Alloc { stream: 0, size: 7 },
                Op::Alloc { stream: 0, size: 0 },
            ],
        });
    }
}

/// Issue 14 item 5: a platform reporting pages of `u64::MAX` (or `2^63`)
/// bytes panicked `Device::new` in debug builds.
#[test]
fn odd_page_sizes_of_the_platform_are_typed_errors() {
    for device in [11, 12] {
        run(Program {
            config: Config {
                device,
                ..Config::default()
            },
            ops: vec![
                Op::Alloc { stream: 0, size: 2 },
                Op::Read { stream: 0, buf: 0 },
            ],
        });
    }
}

/// Issue 14 item 6: a stream count past the bound was accepted (and
/// `u16::MAX` streams aborted the process allocating streams² words).
#[test]
fn stream_counts_past_the_bound_are_refused() {
    for declared in [12, 13, 14] {
        run(Program {
            config: Config {
                declared,
                ..Config::default()
            },
            ops: vec![],
        });
    }
}

/// Issue 14 item 6: the bound itself works, the ops using its last stream.
#[test]
fn the_stream_bound_itself_works() {
    run(Program {
        config: Config {
            streams: 1,
            declared: 10,
            ..Config::default()
        },
        ops: vec![
            Op::Alloc { stream: 1, size: 2 },
            fill(1, 0, 1),
            Op::CrossUse {
                stream: 0,
                buf: 0,
                k: 1,
            },
            Op::Read { stream: 0, buf: 0 },
            Op::SyncAll,
        ],
    });
}
