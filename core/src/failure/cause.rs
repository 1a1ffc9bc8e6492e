//! What failed: the operation and the platform's error.

use alloc::sync::Arc;
use core::fmt;

use crate::stream::StreamId;

/// A kernel's name, shared cheaply: cloning it bumps a refcount and never
/// allocates. Build it once when the kernel is loaded.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct KernelName(Arc<str>);

impl KernelName {
    /// Copies `name` once into a shared buffer.
    pub fn new(name: &str) -> Self {
        Self(Arc::from(name))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<&str> for KernelName {
    fn from(name: &str) -> Self {
        Self::new(name)
    }
}

impl fmt::Display for KernelName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// An operation that writes device bytes: what a failure stopped, or what a
/// skip record says was not run.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Operation {
    /// A kernel launch.
    Launch(KernelName),
    /// A copy from pinned host memory to the device.
    CopyToDevice,
    /// A copy from the device to pinned host memory.
    CopyToHost,
    /// A copy from device to device.
    CopyDevice,
    /// A buffer's reservation; when it fails the buffer never gets a location.
    Reserve {
        /// The bytes that were requested.
        bytes: u64,
    },
    /// A replay of a captured graph (what its launches write).
    Replay {
        /// The graph's number (`GraphId`'s).
        graph: u64,
    },
    /// A capture window the driver refused: what its launches would have
    /// written.
    Capture(StreamId),
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Operation::Launch(k) => write!(f, "launch of kernel `{k}`"),
            Operation::CopyToDevice => f.write_str("copy from host to device"),
            Operation::CopyToHost => f.write_str("copy from device to host"),
            Operation::CopyDevice => f.write_str("device-to-device copy"),
            Operation::Reserve { bytes } => write!(f, "reservation of {bytes} bytes"),
            Operation::Replay { graph } => write!(f, "replay of graph #{graph}"),
            Operation::Capture(s) => write!(f, "capture window on {s}"),
        }
    }
}

/// Why a failure happened: the operation and what the platform answered.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Cause<E> {
    /// The operation that failed.
    pub op: Operation,
    /// The platform's error (or any displayable description).
    pub error: E,
}

impl<E> Cause<E> {
    /// `op` failed with `error`.
    pub const fn new(op: Operation, error: E) -> Self {
        Self { op, error }
    }
}

impl<E: fmt::Display> fmt::Display for Cause<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed: {}", self.op, self.error)
    }
}
