//! The mock's error: a classification plus a human-readable message.

use std::fmt;

use streamcore::platform::{ErrorKind, PlatformError};

/// An error returned by the mock platform or its storages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MockError {
    kind: ErrorKind,
    message: String,
}

impl MockError {
    /// An error of `kind` with a message saying what went wrong.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    /// A bad argument.
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidValue, message)
    }

    /// The classification.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl PlatformError for MockError {
    fn kind(&self) -> ErrorKind {
        self.kind
    }
}

impl fmt::Display for MockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "mock device error ({:?}): {}", self.kind, self.message)
    }
}

impl std::error::Error for MockError {}
