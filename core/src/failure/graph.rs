//! The device-wide store: failure nodes and the claimed ranges of every
//! tainted allocation, with the write scope launches and copies go through.

use alloc::boxed::Box;
use alloc::string::ToString;
use alloc::vec::Vec;
use core::fmt;
use core::num::NonZeroU64;

use super::cause::{Cause, Operation};
use super::claims::{Claims, Seg};
use super::id::{AllocId, FailureId, Operand, Region};
use super::node::{Failure, SkipRecord};
use super::report::{ChainLink, Refused, TaintReport};
use crate::hash::FxHashMap;

/// What [`ErrorGraph::begin`] decided for a launch or copy.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Decision {
    /// No operand carries a claim: run it, then report
    /// [`ErrorGraph::succeeded`] or [`ErrorGraph::failed`].
    Run,
    /// An operand carries a claim of this failure: do not run it. The skip is
    /// already recorded and the outputs already claimed. Inside an open
    /// capture window this dooms the window.
    Skipped(FailureId),
}

/// [`ErrorGraph::taint`] was given a failure the graph no longer holds
/// (pruned) or never minted.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct StaleFailure(pub FailureId);

impl fmt::Display for StaleFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} is not live: no claim carries it any more, or this graph never minted it",
            self.0
        )
    }
}

impl core::error::Error for StaleFailure {}

/// The claims on one allocation.
#[derive(Clone, Debug)]
struct Tainted {
    claims: Claims,
    /// The allocation never got a location: its claim is frozen until freed,
    /// and every operand over it (read or write) blocks the work.
    unbacked: bool,
}

/// The device-wide error-taint graph, generic over the failure's error `E`
/// (the platform's error, or any displayable description).
///
/// Holds only tainted allocations and live failures: a device that never
/// failed holds nothing, and once every tainted allocation is freed the
/// graph is empty again.
///
/// # The write scope
///
/// Every launch or device-side copy goes through
/// [`begin`](Self::begin) with all its operands:
/// - [`Decision::Skipped`]: do not run it (already recorded);
/// - [`Decision::Run`]: run it, then call [`succeeded`](Self::succeeded)
///   (clears the claims on what it wrote) or [`failed`](Self::failed)
///   (claims what it was going to write with a new failure).
///
/// A copy into the device from the host has only a write operand; a read back
/// to the host first asks [`check_read`](Self::check_read).
#[derive(Debug)]
pub struct ErrorGraph<E> {
    failures: FxHashMap<FailureId, Failure<E>>,
    allocs: FxHashMap<AllocId, Tainted>,
    next: NonZeroU64,
}

impl<E> Default for ErrorGraph<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> ErrorGraph<E> {
    /// An empty graph. Allocates nothing until the first failure.
    pub fn new() -> Self {
        Self {
            failures: FxHashMap::default(),
            allocs: FxHashMap::default(),
            next: NonZeroU64::MIN,
        }
    }

    /// Decides whether `op` over `operands` may run.
    ///
    /// It is skipped when an operand it reads carries a claim, or when any
    /// operand lies in an allocation whose reservation failed; the first such
    /// operand (in order, lowest claimed byte) names the failure. A skip is
    /// recorded on that failure (newest [`SKIP_RECORDS_PER_FAILURE`] kept)
    /// and every operand it writes inherits the failure.
    ///
    /// The clean path (no claim) is one hash lookup per operand and
    /// allocates nothing.
    ///
    /// [`SKIP_RECORDS_PER_FAILURE`]: super::SKIP_RECORDS_PER_FAILURE
    pub fn begin(&mut self, op: &Operation, operands: &[Operand]) -> Decision {
        let Some((failure, input)) = self.blocking_claim(operands) else {
            return Decision::Run;
        };
        if let Some(node) = self.failures.get_mut(&failure) {
            node.record_skip(SkipRecord {
                op: op.clone(),
                input,
                outputs: writes(operands).collect(),
            });
        }
        for region in writes(operands) {
            self.assign(region, Some(failure));
        }
        Decision::Skipped(failure)
    }

    /// The work [`begin`](Self::begin) let run succeeded: clears the claims
    /// on exactly the bytes it wrote. Allocates nothing unless a write lands
    /// inside a claim and splits it.
    pub fn succeeded(&mut self, operands: &[Operand]) {
        if self.allocs.is_empty() {
            return;
        }
        for region in writes(operands) {
            self.assign(region, None);
        }
    }

    /// The work failed on the platform: mints a new failure with `cause` and
    /// claims everything it was going to write. Returns the failure (dooms an
    /// open capture window). A failure that writes nothing is pruned at once.
    pub fn failed(&mut self, cause: Cause<E>, operands: &[Operand]) -> FailureId {
        let id = self.mint(cause, writes(operands).collect());
        for region in writes(operands) {
            self.assign(region, Some(id));
        }
        self.prune_if_unclaimed(id);
        id
    }

    /// The reservation of `bytes` for `alloc` failed with `error`: the
    /// buffer has no location. Its bytes `[0, bytes)` are claimed by a new
    /// failure and stay claimed until [`free`](Self::free): no write clears
    /// them, and any launch or copy with an operand over them is skipped.
    ///
    /// `alloc` should be fresh; claims it still held are released first. A
    /// zero-byte reservation claims byte 0 all the same (a buffer of no
    /// bytes still carries the failure that says why it has no memory).
    pub fn reservation_failed(&mut self, alloc: AllocId, bytes: u64, error: E) -> FailureId {
        self.free(alloc);
        let region = Region::new(alloc, 0, bytes.max(1));
        let id = self.mint(
            Cause::new(Operation::Reserve { bytes }, error),
            Box::new([region]),
        );
        self.assign(region, Some(id));
        if let Some(t) = self.allocs.get_mut(&alloc) {
            t.unbacked = true;
        }
        self.prune_if_unclaimed(id);
        id
    }

    /// Sets the claim on `region` to `failure` (set, not add): those bytes now
    /// belong to it and other failures' claims on them end. No-op on an
    /// allocation whose reservation failed, and on an empty region.
    pub fn taint(&mut self, region: Region, failure: FailureId) -> Result<(), StaleFailure> {
        if !self.failures.contains_key(&failure) {
            return Err(StaleFailure(failure));
        }
        self.assign(region, Some(failure));
        Ok(())
    }

    /// Work that succeeded wrote `region`: clears the claims on exactly those
    /// bytes (a write inside a claim splits it). No-op on an allocation whose
    /// reservation failed.
    pub fn written(&mut self, region: Region) {
        self.assign(region, None);
    }

    /// Whether any byte of `region` is claimed, and by which failure (the
    /// one claiming the lowest such byte).
    pub fn failure(&self, region: Region) -> Option<FailureId> {
        self.first_claim(region).map(|(f, _)| f)
    }

    /// Whether `alloc`'s reservation failed (and it is not freed yet).
    pub fn is_unbacked(&self, alloc: AllocId) -> bool {
        self.allocs.get(&alloc).is_some_and(|t| t.unbacked)
    }

    /// `alloc` is freed: releases its claims, pruning failures no claim
    /// carries any more.
    pub fn free(&mut self, alloc: AllocId) {
        if let Some(t) = self.allocs.remove(&alloc) {
            for seg in t.claims.as_slice() {
                release(&mut self.failures, seg.failure);
            }
        }
    }

    /// A read of `region` back to the host: refused with a report walking
    /// from the read to the root failure when any byte is claimed (boxed:
    /// the error path allocates, the clean one is a lookup).
    pub fn check_read(&self, region: Region) -> Result<(), Box<TaintReport>>
    where
        E: fmt::Display,
    {
        if region.is_empty() {
            return Ok(());
        }
        let Some(t) = self.allocs.get(&region.alloc) else {
            return Ok(());
        };
        let segs = t.claims.overlapping(region.offset, region.end());
        let Some(first) = segs.first() else {
            return Ok(());
        };
        let failure = first.failure;
        let claimed = clip(region, first);
        let mut others: Vec<FailureId> = segs
            .iter()
            .map(|s| s.failure)
            .filter(|&f| f != failure)
            .collect();
        others.sort_unstable();
        others.dedup();

        let mut chain = Vec::new();
        let mut at = claimed;
        let (root, reached_root, dropped) = match self.failures.get(&failure) {
            Some(node) => {
                // Walk back in time: each step takes the newest record, older
                // than the last one taken, that would have written the bytes.
                // A buffer whose reservation failed is its own origin: no
                // write ever changed its claim.
                let records = node.skip_records();
                let mut cursor = records.len();
                let unbacked_root = |at: &Region| {
                    self.is_unbacked(at.alloc) && node.stopped().iter().any(|o| o.overlaps(at))
                };
                while let Some(j) = (0..cursor).rev().find(|&j| {
                    !unbacked_root(&at) && records[j].outputs.iter().any(|o| o.overlaps(&at))
                }) {
                    let r = &records[j];
                    chain.push(ChainLink {
                        output: at,
                        op: r.op.clone(),
                        input: r.input,
                    });
                    at = r.input;
                    cursor = j;
                }
                let reached = node.stopped().iter().any(|o| o.overlaps(&at));
                (node.cause().to_string(), reached, node.dropped_skips())
            }
            // Unreachable while the refcounts hold; say so rather than panic.
            None => (
                "unknown (the failure is not in the graph)".to_string(),
                false,
                0,
            ),
        };
        Err(Box::new(TaintReport {
            refused: Refused::Read,
            read: region,
            claimed,
            failure,
            chain,
            origin: at,
            root,
            reached_root,
            dropped,
            others,
        }))
    }

    /// The live failure `id`, or `None` once it has been pruned.
    pub fn get(&self, id: FailureId) -> Option<&Failure<E>> {
        self.failures.get(&id)
    }

    /// The claimed runs of `alloc`, sorted by offset, disjoint and maximal
    /// (touching runs never carry the same failure).
    pub fn claims(&self, alloc: AllocId) -> impl Iterator<Item = (Region, FailureId)> + '_ {
        self.allocs
            .get(&alloc)
            .map(|t| t.claims.as_slice())
            .unwrap_or(&[])
            .iter()
            .map(move |s| (Region::span(alloc, s.start, s.end), s.failure))
    }

    /// How many failures are live (carried by at least one claim).
    pub fn failure_count(&self) -> usize {
        self.failures.len()
    }

    /// How many allocations carry at least one claim.
    pub fn tainted_allocs(&self) -> usize {
        self.allocs.len()
    }

    /// Whether the graph holds no failure and no claim.
    pub fn is_empty(&self) -> bool {
        self.failures.is_empty() && self.allocs.is_empty()
    }

    /// The first claimed bytes among the operands that block the work.
    fn blocking_claim(&self, operands: &[Operand]) -> Option<(FailureId, Region)> {
        if self.allocs.is_empty() {
            return None;
        }
        operands.iter().find_map(|o| {
            let t = self.allocs.get(&o.region.alloc)?;
            if !(o.access.reads() || t.unbacked) {
                return None;
            }
            let seg = t.claims.first_overlap(o.region.offset, o.region.end())?;
            Some((seg.failure, clip(o.region, seg)))
        })
    }

    fn first_claim(&self, region: Region) -> Option<(FailureId, Region)> {
        let t = self.allocs.get(&region.alloc)?;
        let seg = t.claims.first_overlap(region.offset, region.end())?;
        Some((seg.failure, clip(region, seg)))
    }

    fn mint(&mut self, cause: Cause<E>, stopped: Box<[Region]>) -> FailureId {
        let id = FailureId::from_raw(self.next);
        // Saturates after 2^64 - 1 failures: centuries at one per nanosecond.
        self.next = self.next.saturating_add(1);
        self.failures.insert(id, Failure::new(cause, stopped));
        id
    }

    fn prune_if_unclaimed(&mut self, id: FailureId) {
        if self.failures.get(&id).is_some_and(|n| n.claims() == 0) {
            self.failures.remove(&id);
        }
    }

    /// Sets `region` to `value` (`None` clears), keeping refcounts exact:
    /// the new pieces are retained before the replaced segments are
    /// released, so a failure present in both never touches zero.
    /// `value` MUST be live.
    fn assign(&mut self, region: Region, value: Option<FailureId>) {
        if region.is_empty() {
            return;
        }
        let (start, end) = (region.offset, region.end());
        let Some(t) = self.allocs.get_mut(&region.alloc) else {
            if let Some(failure) = value {
                if let Some(node) = self.failures.get_mut(&failure) {
                    node.retain();
                    self.allocs.insert(
                        region.alloc,
                        Tainted {
                            claims: Claims::One(Seg {
                                start,
                                end,
                                failure,
                            }),
                            unbacked: false,
                        },
                    );
                }
            }
            return;
        };
        if t.unbacked {
            return;
        }
        let Some(plan) = t.claims.plan(start, end, value) else {
            return;
        };
        for p in &plan.pieces {
            if let Some(node) = self.failures.get_mut(&p.failure) {
                node.retain();
            }
        }
        for old in &t.claims.as_slice()[plan.lo..plan.hi] {
            release(&mut self.failures, old.failure);
        }
        if !t.claims.apply(plan) {
            self.allocs.remove(&region.alloc);
        }
    }
}

/// The regions an operation writes (non-empty ones).
fn writes(operands: &[Operand]) -> impl Iterator<Item = Region> + '_ {
    operands
        .iter()
        .filter(|o| o.access.writes() && !o.region.is_empty())
        .map(|o| o.region)
}

/// The bytes of `region` inside `seg`.
fn clip(region: Region, seg: &Seg) -> Region {
    Region::span(
        region.alloc,
        seg.start.max(region.offset),
        seg.end.min(region.end()),
    )
}

/// Drops one claim of `id`, pruning the node when none is left.
fn release<E>(failures: &mut FxHashMap<FailureId, Failure<E>>, id: FailureId) {
    if failures.get_mut(&id).is_some_and(Failure::release) {
        failures.remove(&id);
    }
}
