//! A failure node: its cause, what it stopped, the launches it caused to be
//! skipped, and how many claims still carry it.

use alloc::boxed::Box;
use alloc::collections::VecDeque;

use super::cause::{Cause, Operation};
use super::id::Region;

/// How many skip records a failure keeps (the newest); older ones are dropped
/// and counted.
pub const SKIP_RECORDS_PER_FAILURE: usize = 16;

/// A launch or copy that was skipped because an input carried a claim.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SkipRecord {
    /// What was not run.
    pub op: Operation,
    /// The claimed bytes of the first claimed operand (the reason for the skip).
    pub input: Region,
    /// What it would have produced: every region it was going to write.
    pub outputs: Box<[Region]>,
}

/// One failure of the device, as the graph keeps it while any claim carries it.
#[derive(Debug)]
pub struct Failure<E> {
    cause: Cause<E>,
    stopped: Box<[Region]>,
    skips: VecDeque<SkipRecord>,
    dropped: u64,
    claims: usize,
}

impl<E> Failure<E> {
    pub(crate) fn new(cause: Cause<E>, stopped: Box<[Region]>) -> Self {
        Self {
            cause,
            stopped,
            skips: VecDeque::new(),
            dropped: 0,
            claims: 0,
        }
    }

    /// The operation that failed and the platform's answer.
    pub fn cause(&self) -> &Cause<E> {
        &self.cause
    }

    /// The regions the failed operation was going to write.
    pub fn stopped(&self) -> &[Region] {
        &self.stopped
    }

    /// The newest skip records, oldest first, at most
    /// [`SKIP_RECORDS_PER_FAILURE`].
    pub fn skips(&self) -> impl DoubleEndedIterator<Item = &SkipRecord> + ExactSizeIterator {
        self.skips.iter()
    }

    /// How many skip records were dropped by the cap.
    pub fn dropped_skips(&self) -> u64 {
        self.dropped
    }

    /// The refcount: how many claimed runs (maximal ranges of one allocation)
    /// carry this failure. Always at least 1 for a failure the graph holds.
    pub fn claims(&self) -> usize {
        self.claims
    }

    pub(crate) fn record_skip(&mut self, record: SkipRecord) {
        if self.skips.len() == SKIP_RECORDS_PER_FAILURE {
            self.skips.pop_front();
            self.dropped = self.dropped.saturating_add(1);
        }
        self.skips.push_back(record);
    }

    pub(crate) fn skip_records(&self) -> &VecDeque<SkipRecord> {
        &self.skips
    }

    pub(crate) fn retain(&mut self) {
        self.claims += 1;
    }

    /// Drops one claim; `true` when none is left (prune the node).
    pub(crate) fn release(&mut self) -> bool {
        self.claims = self.claims.saturating_sub(1);
        self.claims == 0
    }
}
