//! The claimed byte ranges of one allocation: sorted, disjoint, maximal
//! segments, each pointing at a failure.
//!
//! Maximal means two touching segments never carry the same failure (they
//! are merged), so the segments are exactly the runs a byte-by-byte map would
//! show, and each failure's refcount is the number of its runs.
//!
//! One segment is stored inline (no heap); two or more live in a sorted `Vec`.
//! A change is planned first ([`Claims::plan`]: which segments go, which
//! pieces come) so the graph can adjust refcounts, then applied.

use alloc::vec::Vec;

use super::id::FailureId;

/// One claimed run `[start, end)`, `start < end`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Seg {
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) failure: FailureId,
}

/// The claimed segments of one allocation (never empty while stored).
#[derive(Clone, Debug)]
pub(crate) enum Claims {
    /// Exactly one segment, inline.
    One(Seg),
    /// Two or more sorted, disjoint, maximal segments.
    Many(Vec<Seg>),
}

/// A planned assignment of `[start, end)`: segments `lo..hi` are replaced by
/// `pieces` (at most a left remainder, the new claim, a right remainder).
#[derive(Debug)]
pub(crate) struct Plan {
    pub(crate) lo: usize,
    pub(crate) hi: usize,
    pub(crate) pieces: heapless::Vec<Seg, 3>,
}

impl Claims {
    /// The segments, sorted by offset.
    pub(crate) fn as_slice(&self) -> &[Seg] {
        match self {
            Claims::One(s) => core::slice::from_ref(s),
            Claims::Many(v) => v,
        }
    }

    /// The first (lowest) segment sharing a byte with `[start, end)`.
    pub(crate) fn first_overlap(&self, start: u64, end: u64) -> Option<&Seg> {
        if start >= end {
            return None;
        }
        let segs = self.as_slice();
        let i = segs.partition_point(|g| g.end <= start);
        segs.get(i).filter(|g| g.start < end)
    }

    /// The segments sharing a byte with `[start, end)`, in order.
    pub(crate) fn overlapping(&self, start: u64, end: u64) -> &[Seg] {
        if start >= end {
            return &[];
        }
        let segs = self.as_slice();
        let lo = segs.partition_point(|g| g.end <= start);
        let hi = segs.partition_point(|g| g.start < end);
        &segs[lo..hi.max(lo)]
    }

    /// Plans setting `[start, end)` (non-empty) to `value` (`None` clears).
    /// `None` when the change would change nothing observable.
    pub(crate) fn plan(&self, start: u64, end: u64, value: Option<FailureId>) -> Option<Plan> {
        let segs = self.as_slice();
        // Segments overlapping or touching the range: touching ones may merge.
        let lo = segs.partition_point(|g| g.end < start);
        let hi = segs.partition_point(|g| g.start <= end);
        let affected = &segs[lo..hi];
        match value {
            None if !affected.iter().any(|g| g.start < end && g.end > start) => return None,
            Some(f)
                if affected
                    .iter()
                    .any(|g| g.failure == f && g.start <= start && g.end >= end) =>
            {
                return None;
            }
            _ => {}
        }
        let mut pieces = heapless::Vec::new();
        if let Some(first) = affected.first().filter(|g| g.start < start) {
            push_merged(
                &mut pieces,
                first.start,
                first.end.min(start),
                first.failure,
            );
        }
        if let Some(f) = value {
            push_merged(&mut pieces, start, end, f);
        }
        if let Some(last) = affected.last().filter(|g| g.end > end) {
            push_merged(&mut pieces, last.start.max(end), last.end, last.failure);
        }
        Some(Plan { lo, hi, pieces })
    }

    /// Applies a plan made by [`Claims::plan`] on this very value. Returns
    /// `false` when no segment is left (the caller drops the entry).
    pub(crate) fn apply(&mut self, plan: Plan) -> bool {
        match self {
            Claims::Many(v) => {
                v.splice(plan.lo..plan.hi, plan.pieces);
                match v.len() {
                    0 => false,
                    1 => {
                        *self = Claims::One(v[0]);
                        true
                    }
                    _ => true,
                }
            }
            Claims::One(seg) => {
                let old = *seg;
                let mut out: heapless::Vec<Seg, 4> = heapless::Vec::new();
                // `lo..hi` lies within `0..1`: the old segment stays unless
                // replaced, before the pieces when they go after it (`lo == 1`).
                let keep = plan.lo == plan.hi;
                let old_first = keep && plan.lo == 1;
                if old_first {
                    let _ = out.push(old);
                }
                for p in plan.pieces {
                    let _ = out.push(p);
                }
                if keep && !old_first {
                    let _ = out.push(old);
                }
                match out.as_slice() {
                    [] => false,
                    [one] => {
                        *self = Claims::One(*one);
                        true
                    }
                    many => {
                        *self = Claims::Many(many.to_vec());
                        true
                    }
                }
            }
        }
    }
}

/// Appends `[start, end)` of `failure`, merging with the previous piece when
/// they touch and carry the same failure.
fn push_merged(pieces: &mut heapless::Vec<Seg, 3>, start: u64, end: u64, failure: FailureId) {
    if let Some(last) = pieces.last_mut() {
        if last.failure == failure && last.end == start {
            last.end = end;
            return;
        }
    }
    // At most three pieces are ever pushed (left, new, right).
    let _ = pieces.push(Seg {
        start,
        end,
        failure,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::num::NonZeroU64;

    fn f(n: u64) -> FailureId {
        FailureId::from_raw(NonZeroU64::new(n).unwrap())
    }
    fn seg(start: u64, end: u64, n: u64) -> Seg {
        Seg {
            start,
            end,
            failure: f(n),
        }
    }
    fn set(c: &mut Option<Claims>, start: u64, end: u64, v: Option<u64>) {
        let v = v.map(f);
        match c {
            None => {
                if let Some(failure) = v {
                    *c = Some(Claims::One(Seg {
                        start,
                        end,
                        failure,
                    }));
                }
            }
            Some(claims) => {
                if let Some(p) = claims.plan(start, end, v) {
                    if !claims.apply(p) {
                        *c = None;
                    }
                }
            }
        }
    }
    fn segs(c: &Option<Claims>) -> Vec<Seg> {
        c.as_ref()
            .map(|c| c.as_slice().to_vec())
            .unwrap_or_default()
    }

    #[test]
    fn partial_write_splits_and_rewrite_merges() {
        let mut c = None;
        set(&mut c, 0, 100, Some(1));
        assert!(matches!(c, Some(Claims::One(_))));
        set(&mut c, 40, 60, None);
        assert_eq!(segs(&c), [seg(0, 40, 1), seg(60, 100, 1)]);
        set(&mut c, 40, 60, Some(1));
        assert_eq!(segs(&c), [seg(0, 100, 1)]);
        assert!(matches!(c, Some(Claims::One(_))), "back to inline");
        set(&mut c, 0, 100, None);
        assert!(c.is_none());
    }

    #[test]
    fn touching_left_and_right_pieces_survive_and_other_failures_stay_apart() {
        let mut c = None;
        set(&mut c, 10, 20, Some(1));
        set(&mut c, 20, 30, Some(2));
        set(&mut c, 0, 10, Some(3));
        assert_eq!(segs(&c), [seg(0, 10, 3), seg(10, 20, 1), seg(20, 30, 2)]);
        set(&mut c, 5, 25, Some(2));
        assert_eq!(segs(&c), [seg(0, 5, 3), seg(5, 30, 2)]);
        assert_eq!(
            c.as_ref().unwrap().first_overlap(5, 6),
            Some(&seg(5, 30, 2))
        );
        assert_eq!(c.as_ref().unwrap().first_overlap(30, 40), None);
        assert_eq!(c.as_ref().unwrap().overlapping(4, 6).len(), 2);
        assert_eq!(c.as_ref().unwrap().overlapping(30, 31).len(), 0);
        assert_eq!(c.as_ref().unwrap().first_overlap(7, 7), None, "empty range");
        assert_eq!(
            c.as_ref().unwrap().overlapping(7, 7).len(),
            0,
            "empty range"
        );
    }

    #[test]
    fn no_op_plans_are_refused() {
        let c = Claims::One(seg(10, 20, 1));
        assert!(
            c.plan(20, 30, None).is_none(),
            "touching clear changes nothing"
        );
        assert!(c.plan(12, 18, Some(f(1))).is_none(), "same claim inside");
        assert!(c.plan(12, 18, Some(f(2))).is_some());
    }
}
