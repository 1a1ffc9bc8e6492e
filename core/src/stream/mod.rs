//! Streams: the capture lifecycle, the stream pool and multi-stream sync.

pub mod capture;
pub mod pool;
pub mod sync;

pub use capture::{CacheMode, CaptureError, CaptureState, DoomReason, Phase};
pub use pool::{StreamId, StreamPool};
pub use sync::{CrossPins, Cursor, SyncTable, WaitPlan, WriteMark};
