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
            ..Config::default()
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

fn cfg(streams: u8) -> Config {
    Config {
        streams,
        seed: 0,
        flush: 0,
        ..Config::default()
    }
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
            Op::Launch {
                stream: 0,
                kernel: fuzzing::Kernel::Fill,
                a: 0,
                b: 0,
                out: 0,
                k: 1,
            },
            Op::Begin { stream: 0 },
            Op::Cleanup,
            Op::Launch {
                stream: 0,
                kernel: fuzzing::Kernel::Fill,
                a: 0,
                b: 0,
                out: 0,
                k: 1,
            },
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
            Op::Launch {
                stream: 1,
                kernel: fuzzing::Kernel::Fill,
                a: 0,
                b: 0,
                out: 1,
                k: 2,
            },
            Op::Prepare { stream: 1 },
            Op::Begin { stream: 1 },
            Op::Launch {
                stream: 0,
                kernel: fuzzing::Kernel::Scale,
                a: 1,
                b: 1,
                out: 0,
                k: 1,
            },
            Op::End { stream: 1 },
            Op::Read { stream: 0, buf: 0 },
        ],
    });
}

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
            Op::Launch {
                stream: 0,
                kernel: fuzzing::Kernel::Fill,
                a: 0,
                b: 0,
                out: 0,
                k: 1,
            },
            Op::Begin { stream: 0 },
            Op::Fault {
                site: fuzzing::FaultSite::CopyToDevice,
            },
            Op::Launch {
                stream: 0,
                kernel: fuzzing::Kernel::Fill,
                a: 0,
                b: 0,
                out: 0,
                k: 2,
            },
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
    let fill = |k| Op::Launch {
        stream: 0,
        kernel: fuzzing::Kernel::Fill,
        a: 0,
        b: 0,
        out: 0,
        k,
    };
    run(Program {
        config: cfg(0),
        ops: vec![
            Op::Alloc { stream: 0, size: 2 },
            Op::Prepare { stream: 0 },
            fill(1),
            Op::Begin { stream: 0 },
            fill(3),
            Op::End { stream: 0 },
            fill(3),
            Op::Read { stream: 0, buf: 0 },
            Op::Replay { graph: 0 },
            Op::DropGraph { graph: 0 },
            fill(3),
            Op::Read { stream: 0, buf: 0 },
        ],
    });
}

/// A launch inside a capture whose info words missed the cache, and whose
/// cross-stream wait then failed: the error path returned before handing
/// back the uncached info slice, which leaked (8 bytes live after teardown).
#[test]
fn failed_wait_after_an_uncached_info_upload_leaks_nothing() {
    let launch = |stream, kernel, a, out, k| Op::Launch {
        stream,
        kernel,
        a,
        b: a,
        out,
        k,
    };
    run(Program {
        config: cfg(1),
        ops: vec![
            Op::Alloc { stream: 0, size: 1 },
            Op::Alloc { stream: 1, size: 1 },
            launch(0, fuzzing::Kernel::Fill, 0, 0, 1),
            Op::Prepare { stream: 1 },
            launch(1, fuzzing::Kernel::Fill, 1, 1, 0),
            Op::Begin { stream: 1 },
            launch(1, fuzzing::Kernel::Scale, 0, 1, 2),
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
    let launch = Op::Launch {
        stream: 0,
        kernel: fuzzing::Kernel::Incr,
        a: 1,
        b: 1,
        out: 1,
        k: 0,
    };
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
            launch,
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

// ---- Issue 14: found by the widened harness, each failing before its fix ----

fn cfg14(streams: u8) -> Config {
    Config {
        streams,
        ..Config::default()
    }
}

fn write(stream: u8, buf: u8, fill: u8) -> Op {
    Op::Write { stream, buf, fill }
}

fn fill(stream: u8, out: u8, k: u8) -> Op {
    Op::Launch {
        stream,
        kernel: fuzzing::Kernel::Fill,
        a: out,
        b: out,
        out,
        k,
    }
}

/// Issue 14 item 1: a read whose host synchronization fails freed its
/// staging slice while the copy back was still queued; the next upload
/// reused the slice and the queued copy overwrote it (the mock reports
/// `HostWritePending`; a later read returns the first buffer's bytes).
#[test]
fn a_read_whose_synchronize_fails_keeps_its_staging_bytes() {
    run(Program {
        config: cfg14(0),
        ops: vec![
            Op::Alloc { stream: 0, size: 2 },
            Op::Alloc { stream: 0, size: 2 },
            write(0, 0, 1),
            Op::ReadFault {
                stream: 0,
                buf: 0,
                site: fuzzing::ReadSite::Synchronize,
            },
            write(0, 1, 2),
            Op::Read { stream: 0, buf: 1 },
        ],
    });
}

/// Issue 14 item 1, the same through a failing event record inside the read.
#[test]
fn a_read_whose_record_fails_keeps_its_staging_bytes() {
    run(Program {
        config: cfg14(0),
        ops: vec![
            Op::Alloc { stream: 0, size: 2 },
            Op::Alloc { stream: 0, size: 2 },
            write(0, 0, 1),
            Op::ReadFault {
                stream: 0,
                buf: 0,
                site: fuzzing::ReadSite::Record,
            },
            write(0, 1, 2),
            Op::Read { stream: 0, buf: 1 },
        ],
    });
}

/// Issue 14 item 2: a window refused at `end_capture` because a launch in
/// it failed left the buffers its recorded launches would have written
/// with their bytes from before the window, unclaimed. They are claimed by
/// the failure that doomed the window; rewriting clears it.
#[test]
fn a_window_refused_for_a_failure_claims_its_outputs() {
    run(Program {
        config: cfg14(0),
        ops: vec![
            Op::Alloc { stream: 0, size: 2 },
            Op::Alloc { stream: 0, size: 2 },
            write(0, 0, 1),
            write(0, 1, 2),
            Op::Prepare { stream: 0 },
            fill(0, 0, 1),
            fill(0, 1, 2),
            Op::Begin { stream: 0 },
            fill(0, 0, 1),
            Op::Fault {
                site: fuzzing::FaultSite::Launch,
            },
            fill(0, 1, 2),
            Op::End { stream: 0 },
            Op::Read { stream: 0, buf: 0 },
            write(0, 0, 3),
            Op::Read { stream: 0, buf: 0 },
        ],
    });
}

/// Issue 14 item 2, a window doomed by an allocation inside the capture.
#[test]
fn a_window_refused_for_an_allocation_claims_its_outputs() {
    run(Program {
        config: cfg14(0),
        ops: vec![
            Op::Alloc { stream: 0, size: 2 },
            write(0, 0, 1),
            Op::Prepare { stream: 0 },
            fill(0, 0, 1),
            Op::Begin { stream: 0 },
            fill(0, 0, 1),
            Op::Alloc { stream: 0, size: 7 },
            Op::End { stream: 0 },
            Op::Read { stream: 0, buf: 0 },
            write(0, 0, 3),
            Op::Read { stream: 0, buf: 0 },
        ],
    });
}

/// Issue 14 item 2 and the fault injector: an `end_capture` the platform
/// fails (the platform still stops capturing) refuses the window and claims
/// what its recorded launches would have written.
#[test]
fn a_window_whose_end_capture_fails_claims_its_outputs() {
    run(Program {
        config: cfg14(0),
        ops: vec![
            Op::Alloc { stream: 0, size: 2 },
            write(0, 0, 1),
            Op::Prepare { stream: 0 },
            fill(0, 0, 1),
            Op::Begin { stream: 0 },
            fill(0, 0, 1),
            Op::Fault {
                site: fuzzing::FaultSite::EndCapture,
            },
            Op::End { stream: 0 },
            Op::Read { stream: 0, buf: 0 },
            Op::Prepare { stream: 0 },
            Op::Begin { stream: 0 },
            fill(0, 0, 2),
            Op::End { stream: 0 },
            Op::Replay { graph: 0 },
            Op::Read { stream: 0, buf: 0 },
        ],
    });
}

/// Issue 14 item 3: a kernel id of another device launched here ran this
/// device's kernel with the same index.
#[test]
fn a_kernel_id_of_another_device_is_refused() {
    run(Program {
        config: cfg14(0),
        ops: vec![
            Op::Alloc { stream: 0, size: 2 },
            write(0, 0, 1),
            Op::Foreign {
                what: fuzzing::Foreign::Kernel,
                stream: 0,
                buf: 0,
            },
            Op::Read { stream: 0, buf: 0 },
        ],
    });
}

/// Issue 14 item 3: `failure_of` skipped the device check: a healthy buffer
/// of another device, asked here, named one of this device's failures.
#[test]
fn failure_of_another_devices_buffer_is_none() {
    run(Program {
        config: cfg14(0),
        ops: vec![
            Op::Alloc { stream: 0, size: 2 },
            Op::Empty {
                stream: 0,
                size: 14,
            },
            Op::Foreign {
                what: fuzzing::Foreign::Query,
                stream: 0,
                buf: 0,
            },
        ],
    });
}

/// Issue 14 item 4: `empty(stream, 0)` gave a buffer nothing claimed
/// (reading it said "buffer has no memory", not the reservation report).
#[test]
fn an_empty_buffer_of_zero_bytes_is_claimed() {
    run(Program {
        config: cfg14(0),
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

/// Found by the harness over the mock's virtual memory: with a platform
/// reporting pages of `2^63` bytes, the sliced preset's largest pool carves
/// pages of `MAX_PAGE_SIZE` from reservations, and a reservation of 1 TiB on
/// a 1 GiB device was placed with only 1 MiB committed (without virtual
/// memory the same request is a typed out-of-memory error).
#[test]
fn a_slice_larger_than_the_memory_is_never_placed_uncommitted() {
    use streamcore::device::{Device, DeviceConfig};
    use streamcore::memory::{LayoutPreset, MemoryLayout};
    use streamcore::platform::DeviceProperties;
    use streamcore::stream::StreamId;
    use streamcore_mock::fault::{FaultInjector, FaultPlan};
    use streamcore_mock::{MemoryKind, MockConfig, MockPlatform};

    let mock = MockPlatform::with_config(
        MockConfig::default()
            .total_memory(1 << 30)
            .virtual_memory(64 << 10),
    )
    .unwrap();
    let props = DeviceProperties {
        total_memory: 1 << 30,
        max_page_size: 1 << 63,
        alignment: 1 << 63,
        integrated: false,
    };
    let platform = FaultInjector::new(mock.clone(), FaultPlan::new());
    platform.report_properties(Some(props));
    let layout = MemoryLayout::preset(LayoutPreset::Sliced, &props);
    let device = Device::new(platform, DeviceConfig::with_streams(1).layout(layout)).unwrap();
    match device.alloc(StreamId(0), 1 << 40) {
        Err(e) => assert!(
            matches!(e, streamcore::error::Error::Memory(_)),
            "a typed memory error: {e}"
        ),
        Ok(b) => panic!(
            "1 TiB placed at {:?} on a 1 GiB device ({} bytes committed)",
            device.range_of(&b),
            mock.memory_used(MemoryKind::Device)
        ),
    }
}
