//! Streams: the capture lifecycle, the stream pool and multi-stream sync.

pub mod capture;
