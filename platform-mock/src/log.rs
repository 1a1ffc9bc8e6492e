//! The event log: every completed command, in completion order.

use std::sync::Arc;

use streamcore::platform::{DeviceRange, HostRange, LaunchDims};

/// What a completed command did.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LogOp {
    /// Pinned host → device copy.
    CopyToDevice {
        /// Source bytes.
        src: HostRange,
        /// Destination bytes.
        dst: DeviceRange,
    },
    /// Device → pinned host copy.
    CopyToHost {
        /// Source bytes.
        src: DeviceRange,
        /// Destination bytes.
        dst: HostRange,
    },
    /// Device → device copy.
    CopyDevice {
        /// Source bytes.
        src: DeviceRange,
        /// Destination bytes.
        dst: DeviceRange,
    },
    /// A kernel ran.
    Launch {
        /// Its name.
        kernel: Arc<str>,
        /// Its geometry.
        dims: LaunchDims,
    },
    /// An event passed.
    Record {
        /// The event's id.
        event: u64,
    },
    /// A wait on an event was satisfied.
    Wait {
        /// The event's id.
        event: u64,
    },
}

/// One completed command.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LogEntry {
    /// Virtual time at completion, in simulated nanoseconds.
    pub time: u64,
    /// The stream it ran on, by its order of creation on the platform (a
    /// device creates its streams when first used; hazard reports use the
    /// device's numbers instead, and
    /// [`MockPlatform::device_stream`](crate::MockPlatform::device_stream)
    /// turns this one into the device's).
    pub stream: u32,
    /// Its op index (as in hazard reports).
    pub op: u64,
    /// The graph it was replayed from, if any.
    pub graph: Option<u64>,
    /// What it did.
    pub what: LogOp,
    /// FNV-1a digest of the bytes it wrote (0 when it wrote none), so two
    /// logs are equal only if the data is too.
    pub digest: u64,
}

/// FNV-1a over `bytes`, continuing from `h` (start with [`FNV_START`]).
pub(crate) fn fnv1a(mut h: u64, bytes: &[u8]) -> u64 {
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// FNV-1a's offset basis.
pub(crate) const FNV_START: u64 = 0xcbf2_9ce4_8422_2325;
