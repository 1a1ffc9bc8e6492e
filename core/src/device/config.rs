//! How a device is set up.

use crate::drop_queue::FlushPolicy;
use crate::info_cache::CachePolicy;
use crate::memory::MemoryLayout;

/// How a device is set up.
#[derive(Clone, Debug)]
pub struct DeviceConfig {
    /// Number of streams (ids `0..streams`), created lazily.
    pub streams: u16,
    /// Pool layout of every stream; `None`: chosen from the device's properties.
    pub layout: Option<MemoryLayout>,
    /// Drop-queue flush thresholds; `None`: the preset for the device kind
    /// (discrete or integrated).
    pub flush: Option<FlushPolicy>,
    /// Info-cache bounds, per stream.
    pub info_cache: CachePolicy,
}

impl Default for DeviceConfig {
    fn default() -> Self {
        Self {
            streams: 4,
            layout: None,
            flush: None,
            info_cache: CachePolicy::default(),
        }
    }
}

impl DeviceConfig {
    /// A config of `streams` streams, the rest default.
    pub fn with_streams(streams: u16) -> Self {
        Self {
            streams,
            ..Self::default()
        }
    }

    /// Sets explicit drop-queue thresholds.
    pub fn flush_policy(mut self, flush: FlushPolicy) -> Self {
        self.flush = Some(flush);
        self
    }

    /// Sets the pool layout of every stream.
    pub fn layout(mut self, layout: MemoryLayout) -> Self {
        self.layout = Some(layout);
        self
    }
}
