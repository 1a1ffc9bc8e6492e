//! Streams: the capture lifecycle, the stream pool, multi-stream sync and
//! cross-stream pins.

pub mod capture;
pub mod pins;
pub mod pool;
pub mod sync;

pub use capture::{CacheMode, CaptureError, CaptureState, DoomReason, Phase};
pub use pins::CrossPins;
pub use pool::{StreamId, StreamPool};
pub use sync::{Cursor, MAX_TRACKED_STREAMS, SyncTable, WaitPlan, WriteMark};
