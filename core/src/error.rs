//! The core's top-level error: every fallible operation of the device API
//! returns it. Module errors convert into it.

use alloc::boxed::Box;
use alloc::string::String;
use core::fmt;

use crate::device::{BufferId, ConfigError, GraphId, KernelId, StaleBuffer};
use crate::failure::{FailureId, TaintReport};
use crate::memory::MemoryError;
use crate::platform::{Capabilities, ErrorKind};
use crate::stream::capture::CaptureError;
use crate::stream::pool::StreamOutOfRange;
use crate::stream::sync::UnknownStream;

/// An error of the core, generic over the platform's error `E`.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error<E> {
    /// A platform call failed.
    Platform {
        /// The operation the core was doing (e.g. `"record"`).
        op: &'static str,
        /// What the platform answered.
        source: E,
    },
    /// A capture lifecycle call was out of order or the window was doomed.
    Capture(CaptureError),
    /// The stream's memory manager refused (out of memory, bad size, layout
    /// in use, allocation inside a capture).
    Memory(MemoryError<E>),
    /// A launch or copy failed on the platform: its outputs are now claimed
    /// by `failure`; work that does not read them keeps running.
    Failed {
        /// What failed (`"launch"`, `"copy_to_device"`, …).
        op: &'static str,
        /// The failure that now claims the bytes the work would have written.
        failure: FailureId,
        /// The platform's classification.
        kind: ErrorKind,
        /// The platform's message.
        message: String,
    },
    /// A read of bytes a failure claims: the report walks back to the root.
    Tainted(Box<TaintReport>),
    /// The buffer was freed or belongs to another device.
    StaleBuffer(BufferId),
    /// No such stream.
    Stream(StreamOutOfRange),
    /// No kernel with this id was loaded on this device.
    UnknownKernel(KernelId),
    /// The graph belongs to another device or was released.
    UnknownGraph(GraphId),
    /// The operation needs a host synchronization or a storage allocation,
    /// which a stream that is being captured does not allow.
    NotWhileCapturing {
        /// The operation.
        op: &'static str,
    },
    /// A bad argument (size mismatch, empty data, …).
    InvalidArgument(&'static str),
    /// The device configuration cannot be built.
    Config(ConfigError),
    /// `sync_all` could not release every deferred free: other threads kept
    /// queuing work (what had completed was released all the same).
    NotSettled {
        /// Items still held by drop queues.
        deferred: usize,
        /// Frees still pinned by other streams' uses.
        cross_pins: usize,
    },
    /// The platform lacks a capability the operation needs (e.g. graph
    /// capture on a firmware command queue); nothing was changed.
    NotSupported {
        /// The operation.
        op: &'static str,
        /// The capabilities it needs that the platform does not declare.
        needs: Capabilities,
    },
}

impl<E> Error<E> {
    /// Wraps a platform error with the name of the operation.
    pub fn platform(op: &'static str, source: E) -> Self {
        Error::Platform { op, source }
    }

    /// The same error, a refusal during a capture naming `op`, the call the
    /// user made, instead of the step inside it that was refused (a
    /// `sync_all` refused at one stream's sync says `sync_all`).
    pub(crate) fn in_call(self, op: &'static str) -> Self {
        match self {
            Error::NotWhileCapturing { .. } => Error::NotWhileCapturing { op },
            e => e,
        }
    }
}

impl<E> From<CaptureError> for Error<E> {
    fn from(e: CaptureError) -> Self {
        Error::Capture(e)
    }
}

impl<E> From<MemoryError<E>> for Error<E> {
    fn from(e: MemoryError<E>) -> Self {
        match e {
            MemoryError::Capture(c) => Error::Capture(c),
            other => Error::Memory(other),
        }
    }
}

impl<E> From<Box<TaintReport>> for Error<E> {
    fn from(r: Box<TaintReport>) -> Self {
        Error::Tainted(r)
    }
}

impl<E> From<StaleBuffer> for Error<E> {
    fn from(e: StaleBuffer) -> Self {
        Error::StaleBuffer(e.0)
    }
}

impl<E> From<ConfigError> for Error<E> {
    fn from(e: ConfigError) -> Self {
        Error::Config(e)
    }
}

impl<E> From<StreamOutOfRange> for Error<E> {
    fn from(e: StreamOutOfRange) -> Self {
        Error::Stream(e)
    }
}

impl<E> From<UnknownStream> for Error<E> {
    /// The device checks stream ids against its pool first, so this only
    /// happens for a bookkeeping table sized differently from the pool.
    fn from(_: UnknownStream) -> Self {
        Error::InvalidArgument("stream id outside the device's sync table")
    }
}

impl<E: fmt::Display> fmt::Display for Error<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Platform { op, source } => write!(f, "platform call `{op}` failed: {source}"),
            Error::Capture(e) => write!(f, "capture: {e}"),
            Error::Memory(e) => write!(f, "memory: {e}"),
            Error::Failed {
                op,
                failure,
                kind,
                message,
            } => write!(
                f,
                "{op} failed ({kind:?}: {message}); its outputs are claimed by {failure}"
            ),
            Error::Tainted(r) => write!(f, "{r}"),
            Error::StaleBuffer(b) => write!(f, "{b} was freed or belongs to another device"),
            Error::Stream(e) => write!(f, "{e}"),
            Error::UnknownKernel(k) => write!(f, "{k} was not loaded on this device"),
            Error::UnknownGraph(g) => write!(f, "graph #{} is not live on this device", g.0),
            Error::NotWhileCapturing { op } => write!(
                f,
                "`{op}` needs a host synchronization or allocation, which a capturing stream does not allow"
            ),
            Error::InvalidArgument(why) => write!(f, "invalid argument: {why}"),
            Error::Config(e) => write!(f, "device configuration: {e}"),
            Error::NotSettled {
                deferred,
                cross_pins,
            } => write!(
                f,
                "sync_all could not settle while work kept coming: {deferred} deferred frees \
                 and {cross_pins} cross-stream pins left"
            ),
            Error::NotSupported { op, needs } => {
                write!(f, "`{op}` is not supported: the platform lacks")?;
                for name in needs.names() {
                    write!(f, " {name}")?;
                }
                Ok(())
            }
        }
    }
}

impl<E: fmt::Debug + fmt::Display> core::error::Error for Error<E> {}
