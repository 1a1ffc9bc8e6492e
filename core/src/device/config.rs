//! How a device is set up.

use core::fmt;

use crate::drop_queue::FlushPolicy;
use crate::info_cache::CachePolicy;
use crate::memory::MemoryLayout;

/// How a device is set up.
#[derive(Clone, Debug)]
pub struct DeviceConfig {
    /// Number of streams (ids `0..streams`), created lazily; at least one,
    /// at most [`MAX_STREAMS`].
    pub streams: u16,
    /// Pool layout of every stream; `None`: chosen from the device's properties.
    pub layout: Option<MemoryLayout>,
    /// Pool layout of the pinned-host staging pool; `None`: `layout` when
    /// that is set (a device sized for small memory stages small too),
    /// otherwise chosen from the device's properties.
    pub staging_layout: Option<MemoryLayout>,
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
            staging_layout: None,
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

    /// Sets the pool layout of every stream (and of the staging pool,
    /// unless [`staging_layout`](Self::staging_layout) sets its own).
    pub fn layout(mut self, layout: MemoryLayout) -> Self {
        self.layout = Some(layout);
        self
    }

    /// Sets the pool layout of the pinned-host staging pool.
    pub fn staging_layout(mut self, layout: MemoryLayout) -> Self {
        self.staging_layout = Some(layout);
        self
    }
}

/// The most streams a device can have. Tables indexed by stream grow with
/// the streams in use (the sync table with their square), so the bound is
/// what keeps a device's worst-case bookkeeping small: 256 streams in use
/// cost half a MiB of sync table, and every buffer 2 KiB of use marks.
pub const MAX_STREAMS: u16 = 256;

/// A [`DeviceConfig`] no device can be built from.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConfigError {
    /// `streams` is 0.
    NoStreams,
    /// `streams` is above [`MAX_STREAMS`].
    TooManyStreams {
        /// The streams asked for.
        requested: u16,
        /// [`MAX_STREAMS`].
        max: u16,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::NoStreams => f.write_str("a device needs at least one stream"),
            ConfigError::TooManyStreams { requested, max } => write!(
                f,
                "{requested} streams asked for; a device has at most {max}"
            ),
        }
    }
}

impl core::error::Error for ConfigError {}

impl DeviceConfig {
    /// Whether a device can be built from this config.
    pub fn check(&self) -> Result<(), ConfigError> {
        match self.streams {
            0 => Err(ConfigError::NoStreams),
            n if n > MAX_STREAMS => Err(ConfigError::TooManyStreams {
                requested: n,
                max: MAX_STREAMS,
            }),
            _ => Ok(()),
        }
    }
}
