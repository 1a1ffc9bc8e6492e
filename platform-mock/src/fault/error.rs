//! The error of a wrapped platform: an injected fault, or the inner error.

use std::fmt;

use streamcore::platform::{ErrorKind, PlatformError};

use super::plan::Site;

/// An error from a [`FaultInjector`](super::FaultInjector).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FaultError<E> {
    /// A fault the plan injected; the call did nothing.
    Injected {
        /// The call that failed.
        site: Site,
        /// Its index among all calls through the injector (1-based).
        call: u64,
        /// The kind reported.
        kind: ErrorKind,
    },
    /// The device was lost earlier (or by this call).
    DeviceLost {
        /// The call that failed.
        site: Site,
        /// Its index among all calls through the injector (1-based).
        call: u64,
    },
    /// The wrapped platform offers no graph capture (any more): its
    /// [`Platform::capture`](streamcore::platform::Platform::capture)
    /// answered `None` where it had answered `Some`.
    NotSupported {
        /// The call that failed.
        site: Site,
    },
    /// The wrapped platform's own error.
    Platform(E),
}

impl<E: PlatformError> PlatformError for FaultError<E> {
    fn kind(&self) -> ErrorKind {
        match self {
            FaultError::Injected { kind, .. } => *kind,
            FaultError::DeviceLost { .. } => ErrorKind::DeviceLost,
            FaultError::NotSupported { .. } => ErrorKind::NotSupported,
            FaultError::Platform(e) => e.kind(),
        }
    }
}

impl<E: fmt::Display> fmt::Display for FaultError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FaultError::Injected { site, call, kind } => {
                write!(f, "injected {kind:?} fault at call #{call} ({site:?})")
            }
            FaultError::DeviceLost { site, call } => {
                write!(f, "device lost (call #{call}, {site:?})")
            }
            FaultError::NotSupported { site } => {
                write!(f, "the wrapped platform has no graph capture ({site:?})")
            }
            FaultError::Platform(e) => write!(f, "{e}"),
        }
    }
}

impl<E: fmt::Debug + fmt::Display> std::error::Error for FaultError<E> {}
