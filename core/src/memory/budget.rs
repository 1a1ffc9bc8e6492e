//! What a manager may spend on driver calls it chooses to make: decommits
//! that keep the bytes held near the live peak (trimming) or that guard
//! against stranded memory, and the adaptive guard itself.
//!
//! A commit the live data needs is always made. A decommit is a choice: it
//! buys bytes, and costs its own call plus, when the memory is needed
//! again, a commit. On workloads of irregular sizes those round trips can
//! cost far more than the workload's own allocations do (the driver's pool
//! keeps its memory instead). So the choices draw on a budget that every
//! reserve fills by a fixed part and a part per MiB requested (see
//! [`ChurnBudget`]); a decommit is charged what the storage says it and the
//! commit it sets up cost ([`StorageTerms::costs`](crate::platform::StorageTerms)),
//! and is made only while the budget covers it. Over any stretch of a run,
//! what these calls cost stays below what its reserves earned. When the
//! budget is spent, a commit passes the trim limit instead: the limit rises
//! with what is held, so the manager settles at a level it can afford.
//!
//! The level it settles at has a cap (`MemoryPolicy::idle_cap_shift`):
//! once a large part of the live peak sits idle in committed chunks and a
//! commit would pass the live peak by more than 1/16 of it,
//! trimming takes idle chunks back even where the budget does not cover
//! them (and charges them). A budget spent early would otherwise keep the
//! memory of a phase long gone and let the next one grow on top of it.
//!
//! A storage that declares no costs charges nothing: the budget never
//! binds. Explicit [`cleanup`](super::MemoryManager::cleanup), periodic
//! release and the out-of-memory retry are never limited.

use super::manager::MemoryManager;
use super::rounding::shr;
use crate::platform::Storage;

/// The idle cap binds only on a commit that would hold more than the live
/// peak plus `peak >> OVER_PEAK_SHIFT` (1/16 of it).
const OVER_PEAK_SHIFT: u32 = 4;

/// How much estimated driver time a manager may spend on calls it chooses
/// to make (decommits to trim or to guard against stranded memory), earned
/// by its reserves: `per_reserve_ns` per reserve plus `per_mib_ns` per MiB
/// requested. [`ChurnBudget::UNLIMITED`] never binds.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct ChurnBudget {
    /// Nanoseconds earned by every reserve.
    pub per_reserve_ns: u64,
    /// Nanoseconds earned per MiB a reserve asks for.
    pub per_mib_ns: u64,
}

impl ChurnBudget {
    /// No limit: every decommit the policy wants is made.
    pub const UNLIMITED: ChurnBudget = ChurnBudget {
        per_reserve_ns: u64::MAX,
        per_mib_ns: u64::MAX,
    };

    /// Nothing earned: no decommit by choice (over a storage that declares
    /// its costs).
    pub const NONE: ChurnBudget = ChurnBudget {
        per_reserve_ns: 0,
        per_mib_ns: 0,
    };
}

impl<S: Storage> MemoryManager<S> {
    /// Nanoseconds of the budget left now.
    pub(super) fn churn_left(&self) -> u64 {
        let b = self.layout.policy().churn_budget;
        let earned = self
            .books
            .reserves
            .saturating_mul(b.per_reserve_ns)
            .saturating_add((self.books.requested >> 20).saturating_mul(b.per_mib_ns));
        earned.saturating_sub(self.books.churn_spent)
    }

    /// What a decommit of `bytes` is charged: its own cost and that of
    /// committing the bytes again.
    pub(super) fn churn_cost(&self, bytes: u64) -> u64 {
        let c = &self.terms.costs;
        c.decommit.of(bytes).saturating_add(c.commit.of(bytes))
    }

    /// Whether the budget covers a decommit of `bytes`.
    pub(super) fn affords(&self, bytes: u64) -> bool {
        self.churn_cost(bytes) <= self.churn_left()
    }

    /// Whether a commit that would leave `holding` bytes held passes the
    /// idle cap (`MemoryPolicy::idle_cap_shift`): trimming for it then
    /// takes idle chunks the budget does not cover.
    pub(super) fn over_idle_cap(&self, holding: u64) -> bool {
        let shift = self.layout.policy().idle_cap_shift;
        if shift >= 64 {
            return false;
        }
        let peak = self.books.peak_live;
        holding > peak.saturating_add(shr(peak, OVER_PEAK_SHIFT))
            && self.idle_committed_bytes() > shr(peak, shift)
    }

    /// Charges a decommit of `bytes` made by choice.
    pub(super) fn charge(&mut self, bytes: u64) {
        let cost = self.churn_cost(bytes);
        self.books.churn_spent = self.books.churn_spent.saturating_add(cost);
    }
}
