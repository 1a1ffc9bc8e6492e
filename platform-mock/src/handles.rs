//! The handles the platform hands out: streams, events, graphs.

use std::fmt;
use std::sync::{Arc, Mutex, Weak};

use crate::device::State;
use crate::device::command::Command;

/// A simulated stream: a FIFO of commands.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct MockStream {
    pub(crate) id: u32,
    pub(crate) instance: u64,
}

impl MockStream {
    /// The stream's id (0, 1, … in creation order), as in the event log.
    pub fn id(&self) -> u32 {
        self.id
    }
}

/// A simulated event. Dropping it releases it; the device forgets it once
/// no queued wait needs it.
pub struct MockEvent {
    pub(crate) id: u64,
    pub(crate) instance: u64,
    pub(crate) shared: Weak<Mutex<State>>,
}

impl MockEvent {
    /// The event's id, as in the event log.
    pub fn id(&self) -> u64 {
        self.id
    }
}

impl fmt::Debug for MockEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MockEvent").field("id", &self.id).finish()
    }
}

impl Drop for MockEvent {
    fn drop(&mut self) {
        if let Some(shared) = self.shared.upgrade() {
            let mut st = shared.lock().unwrap_or_else(|e| e.into_inner());
            st.event_dropped(self.id);
        }
    }
}

/// A sealed capture: the commands recorded, against fixed addresses.
pub struct MockGraph {
    pub(crate) id: u64,
    pub(crate) instance: u64,
    pub(crate) commands: Arc<[Command]>,
}

impl MockGraph {
    /// The graph's id, as in the event log.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Number of commands one replay queues.
    pub fn len(&self) -> usize {
        self.commands.len()
    }

    /// Whether the graph is empty.
    pub fn is_empty(&self) -> bool {
        self.commands.is_empty()
    }
}

impl fmt::Debug for MockGraph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MockGraph")
            .field("id", &self.id)
            .field("commands", &self.commands.len())
            .finish()
    }
}
