//! Reads whose synchronization fails part-way.

use super::*;

/// Issue 14 item 1: a read failing at `site` (a call after its copy back
/// was queued) must keep its staging slice until the copy has run. The
/// program writes two buffers through the same staging pool and reads the
/// second back.
fn a_read_failing_at_keeps_its_staging_bytes(site: fuzzing::ReadSite) {
    run(Program {
        config: cfg(0),
        ops: vec![
            Op::Alloc { stream: 0, size: 2 },
            Op::Alloc { stream: 0, size: 2 },
            Op::write(0, 0, 1),
            Op::ReadFault {
                stream: 0,
                buf: 0,
                site,
            },
            Op::write(0, 1, 2),
            Op::Read { stream: 0, buf: 1 },
        ],
    });
}

/// Issue 14 item 1: a read whose host synchronization fails freed its
/// staging slice while the copy back was still queued; the next upload
/// reused the slice and the queued copy overwrote it (the mock reports
/// `HostWritePending`; a later read returns the first buffer's bytes).
#[test]
fn a_read_whose_synchronize_fails_keeps_its_staging_bytes() {
    a_read_failing_at_keeps_its_staging_bytes(fuzzing::ReadSite::Synchronize);
}

/// Issue 14 item 1, the same through a failing event record inside the read.
#[test]
fn a_read_whose_record_fails_keeps_its_staging_bytes() {
    a_read_failing_at_keeps_its_staging_bytes(fuzzing::ReadSite::Record);
}
