//! The error-taint graph: a failure is recorded on exactly the bytes it left
//! unwritten, and everything that does not depend on those bytes keeps
//! running.
//!
//! A GPU error is usually sticky and device-wide: one failed launch poisons
//! every result after it and nobody can say which results are wrong. Here a
//! failed launch, copy or reservation instead *claims* the byte ranges it was
//! going to write with a fresh [`FailureId`]:
//!
//! - a launch or copy whose inputs carry a claim is skipped, its outputs
//!   inherit the failure, and the failure records the skip
//!   ([`ErrorGraph::begin`] answers [`Decision::Skipped`]);
//! - work that succeeds clears the claims on exactly the bytes it wrote
//!   ([`ErrorGraph::succeeded`]); a partial write splits a claim;
//! - a read of claimed bytes fails with a [`TaintReport`] that walks from the
//!   read back to the root failure through every skipped launch
//!   ([`ErrorGraph::check_read`]);
//! - buffers whose reservation failed are claimed as a whole and stay claimed
//!   until freed ([`ErrorGraph::reservation_failed`]), so work over them can
//!   never silently do nothing.
//!
//! Allocations are named by device-wide [`AllocId`]s, so a failure on one
//! stream taints a buffer owned by another stream exactly like its own. The
//! [`FailureId`] returned by the write scope is what dooms an open capture
//! window (`DoomReason::from(id)`).
//!
//! Failure nodes are refcounted by the claims that carry them and pruned when
//! none is left: the graph leaks only if the program leaks allocations.
//!
//! ```
//! use streamcore::failure::{
//!     AllocId, Cause, Decision, ErrorGraph, KernelName, Operand, Operation, Region,
//! };
//!
//! let mut graph: ErrorGraph<&str> = ErrorGraph::new();
//! let (a, b) = (Region::new(AllocId(1), 0, 64), Region::new(AllocId(2), 0, 64));
//! let produce = Operation::Launch(KernelName::new("produce"));
//! let consume = Operation::Launch(KernelName::new("consume"));
//!
//! // `produce` runs and fails on the platform: `a` is claimed.
//! assert_eq!(graph.begin(&produce, &[Operand::write(a)]), Decision::Run);
//! let failure = graph.failed(Cause::new(produce, "illegal address"), &[Operand::write(a)]);
//!
//! // `consume` reads `a`: skipped, and `b` inherits the claim.
//! let ops = [Operand::read(a), Operand::write(b)];
//! assert_eq!(graph.begin(&consume, &ops), Decision::Skipped(failure));
//!
//! // Reading `b` back names the chain: b <- consume <- produce.
//! let report = graph.check_read(b).unwrap_err();
//! assert!(report.to_string().contains("kernel `consume` skipped"));
//! assert!(report.to_string().contains("kernel `produce` failed: illegal address"));
//!
//! // Freeing the buffers prunes the failure.
//! graph.free(AllocId(1));
//! graph.free(AllocId(2));
//! assert!(graph.is_empty());
//! ```
//!
//! Costs: the clean path (no claim on any operand) is one hash-map miss per
//! operand and allocates nothing; an allocation with one claimed range holds
//! no heap memory of its own; claimed paths are `O(log n + k)` in the claimed
//! ranges `n` of the allocation and the ranges `k` a write replaces.

mod cause;
mod claims;
mod graph;
mod id;
mod node;
mod report;

pub use cause::{Cause, KernelName, Operation};
pub use graph::{Decision, ErrorGraph, StaleFailure};
pub use id::{AllocId, FailureId, Operand, Region};
pub use node::{Failure, SKIP_RECORDS_PER_FAILURE, SkipRecord};
pub use report::{ChainLink, Refused, TaintReport};
