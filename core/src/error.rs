//! The core's top-level error: every fallible operation of the core returns
//! it (or a module's own error that converts into it).

use core::fmt;

use crate::stream::capture::CaptureError;

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
}

impl<E> Error<E> {
    /// Wraps a platform error with the name of the operation.
    pub fn platform(op: &'static str, source: E) -> Self {
        Error::Platform { op, source }
    }
}

impl<E> From<CaptureError> for Error<E> {
    fn from(e: CaptureError) -> Self {
        Error::Capture(e)
    }
}

impl<E: fmt::Display> fmt::Display for Error<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Platform { op, source } => write!(f, "platform call `{op}` failed: {source}"),
            Error::Capture(e) => write!(f, "capture: {e}"),
        }
    }
}

impl<E: fmt::Debug + fmt::Display> core::error::Error for Error<E> {}
