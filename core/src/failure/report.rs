//! The answer to a read of claimed bytes: the chain from the read back to the
//! root failure.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use super::cause::Operation;
use super::id::{FailureId, Region};
use super::node::SKIP_RECORDS_PER_FAILURE;

/// One skipped launch or copy on the way from a read to its root failure.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChainLink {
    /// The bytes being traced, which this skipped work would have written.
    pub output: Region,
    /// What was skipped.
    pub op: Operation,
    /// Its claimed input: the next bytes to trace.
    pub input: Region,
}

/// What a [`TaintReport`] refused.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refused {
    /// A read back to the host: some of its bytes are claimed.
    Read,
    /// A host write into a buffer that has no memory: its reservation
    /// failed, and the failure claims it whole.
    Write,
}

/// A read (device to host) refused because some of its bytes are claimed,
/// or a write into a buffer whose reservation failed.
///
/// Its `Display` is a readable multi-line walk from the refused operation
/// back to the root failure, naming every skipped launch.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaintReport {
    /// What was refused.
    pub refused: Refused,
    /// The refused read's (or write's) bytes.
    pub read: Region,
    /// Its first claimed bytes (lowest offset), where the walk starts.
    pub claimed: Region,
    /// The failure claiming them.
    pub failure: FailureId,
    /// The skipped work, from the read back toward the root failure.
    pub chain: Vec<ChainLink>,
    /// The bytes where the walk ended: written by the root failure's
    /// operation when `reached_root`.
    pub origin: Region,
    /// The root failure's cause, rendered (operation and platform error).
    pub root: String,
    /// Whether the walk connected to what the root failure stopped; `false`
    /// when the linking records were dropped by the cap or the bytes were
    /// tainted directly.
    pub reached_root: bool,
    /// How many skip records of the failure were dropped by the cap.
    pub dropped: u64,
    /// Other failures claiming bytes of this read, ascending.
    pub others: Vec<FailureId>,
}

impl fmt::Display for TaintReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.refused {
            Refused::Read => writeln!(
                f,
                "read of {} refused: {} were never written because of {}",
                self.read, self.claimed, self.failure
            )?,
            Refused::Write => writeln!(
                f,
                "write into {} refused: the buffer has no memory; {} are claimed by {}",
                self.read, self.claimed, self.failure
            )?,
        }
        for link in &self.chain {
            writeln!(
                f,
                "  {} <- {} skipped: its input {} was claimed",
                link.output, link.op, link.input
            )?;
        }
        if self.reached_root {
            write!(f, "  {} <- {}: {}", self.origin, self.failure, self.root)?;
        } else {
            write!(
                f,
                "  {} <- no surviving record links these bytes to {}, whose cause is: {}",
                self.origin, self.failure, self.root
            )?;
        }
        if self.dropped > 0 {
            write!(
                f,
                "\n  {} older skip record(s) of {} dropped by the cap of {}",
                self.dropped, self.failure, SKIP_RECORDS_PER_FAILURE
            )?;
        }
        if !self.others.is_empty() {
            f.write_str("\n  also claimed in this read:")?;
            for (i, other) in self.others.iter().enumerate() {
                let sep = if i == 0 { " " } else { ", " };
                write!(f, "{sep}{other}")?;
            }
        }
        Ok(())
    }
}

impl core::error::Error for TaintReport {}
