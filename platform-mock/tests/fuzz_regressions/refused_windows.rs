//! Issue 14 item 2: windows refused at `end_capture` claim what their
//! recorded launches would have written.

use super::*;

/// Issue 14 item 2: a window refused at `end_capture` because a launch in
/// it failed left the buffers its recorded launches would have written
/// with their bytes from before the window, unclaimed. They are claimed by
/// the failure that doomed the window; rewriting clears it.
#[test]
fn a_window_refused_for_a_failure_claims_its_outputs() {
    run(Program {
        config: cfg(0),
        ops: vec![
            Op::Alloc { stream: 0, size: 2 },
            Op::Alloc { stream: 0, size: 2 },
            Op::write(0, 0, 1),
            Op::write(0, 1, 2),
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
            Op::write(0, 0, 3),
            Op::Read { stream: 0, buf: 0 },
        ],
    });
}

/// Issue 14 item 2, a window doomed by an allocation inside the capture.
#[test]
fn a_window_refused_for_an_allocation_claims_its_outputs() {
    run(Program {
        config: cfg(0),
        ops: vec![
            Op::Alloc { stream: 0, size: 2 },
            Op::write(0, 0, 1),
            Op::Prepare { stream: 0 },
            fill(0, 0, 1),
            Op::Begin { stream: 0 },
            fill(0, 0, 1),
            Op::Alloc { stream: 0, size: 7 },
            Op::End { stream: 0 },
            Op::Read { stream: 0, buf: 0 },
            Op::write(0, 0, 3),
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
        config: cfg(0),
        ops: vec![
            Op::Alloc { stream: 0, size: 2 },
            Op::write(0, 0, 1),
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
