//! Issue 14 item 3: handles of another device, used on this one.

use super::*;

/// Issue 14 item 3: a kernel id of another device launched here ran this
/// device's kernel with the same index.
#[test]
fn a_kernel_id_of_another_device_is_refused() {
    run(Program {
        config: cfg(0),
        ops: vec![
            Op::Alloc { stream: 0, size: 2 },
            Op::write(0, 0, 1),
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
        config: cfg(0),
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
