//! Info-cache errors.

use core::fmt;

use super::GraphId;

/// An insert that did not happen; the value is handed back untouched and
/// nothing in the cache changed.
#[derive(Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum InsertError<V> {
    /// An entry with the same words is cached already (look up first).
    AlreadyCached(V),
    /// Outside a capture, the entry alone exceeds the policy (or the policy
    /// keeps no entry): use the buffer uncached.
    TooLarge(V),
    /// The cache holds `u32::MAX - 1` entries, its index limit.
    Full(V),
}

impl<V> InsertError<V> {
    /// The value that was not inserted.
    pub fn into_value(self) -> V {
        match self {
            InsertError::AlreadyCached(v) | InsertError::TooLarge(v) | InsertError::Full(v) => v,
        }
    }
}

impl<V> fmt::Display for InsertError<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InsertError::AlreadyCached(_) => write!(f, "info words are cached already"),
            InsertError::TooLarge(_) => {
                write!(f, "info entry exceeds the cache policy on its own")
            }
            InsertError::Full(_) => write!(f, "info cache index is exhausted"),
        }
    }
}

impl<V: fmt::Debug> core::error::Error for InsertError<V> {}

/// A rejected capture-window or graph-pin call; nothing changed.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PinError {
    /// `capture_commit` or `capture_discard` outside [`CacheMode::Capture`](super::CacheMode::Capture).
    NotCapturing,
    /// `capture_commit` with the id of a graph that is still live.
    GraphExists(GraphId),
    /// `graph_release` of a graph that holds no pins here.
    UnknownGraph(GraphId),
}

impl fmt::Display for PinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PinError::NotCapturing => write!(f, "the info cache is not in capture mode"),
            PinError::GraphExists(g) => write!(f, "graph {} already holds pins", g.0),
            PinError::UnknownGraph(g) => write!(f, "graph {} holds no pins", g.0),
        }
    }
}

impl core::error::Error for PinError {}
