//! A total map from the bytes `0..len` to values, stored as maximal runs of
//! equal values (adjacent runs always differ).

use std::collections::BTreeMap;

/// Byte range → value, as coalesced runs. Every byte of `0..len` has a value.
#[derive(Clone, Debug)]
pub(crate) struct RangeMap<V> {
    len: u64,
    /// Run start → (run end, value). Runs tile `0..len` exactly.
    runs: BTreeMap<u64, (u64, V)>,
}

impl<V: Clone + PartialEq> RangeMap<V> {
    /// `0..len` all mapped to `value`.
    pub(crate) fn new(len: u64, value: V) -> Self {
        let mut runs = BTreeMap::new();
        if len > 0 {
            runs.insert(0, (len, value));
        }
        Self { len, runs }
    }

    /// Number of runs (for tests and size checks).
    #[cfg(test)]
    pub(crate) fn run_count(&self) -> usize {
        self.runs.len()
    }

    /// Visits the runs overlapping `start..end`, clipped to it.
    pub(crate) fn for_each(&self, start: u64, end: u64, mut f: impl FnMut(u64, u64, &V)) {
        let end = end.min(self.len);
        if start >= end {
            return;
        }
        // The run containing `start` begins at or before it.
        let first = self
            .runs
            .range(..=start)
            .next_back()
            .map(|(s, _)| *s)
            .unwrap_or(0);
        for (&s, (e, v)) in self.runs.range(first..end) {
            let (a, b) = (s.max(start), (*e).min(end));
            if a < b {
                f(a, b, v);
            }
        }
    }

    /// Ensures a run boundary at `at` (no-op at `0`, `len`, or an existing
    /// boundary).
    fn split(&mut self, at: u64) {
        if at == 0 || at >= self.len {
            return;
        }
        let Some((&s, &(e, ref v))) = self.runs.range(..=at).next_back() else {
            return;
        };
        if s == at || e <= at {
            return;
        }
        let v = v.clone();
        if let Some(run) = self.runs.get_mut(&s) {
            run.0 = at;
        }
        self.runs.insert(at, (e, v));
    }

    /// Applies `f` to the value of every byte in `start..end`.
    pub(crate) fn update(&mut self, start: u64, end: u64, mut f: impl FnMut(&mut V)) {
        let end = end.min(self.len);
        if start >= end {
            return;
        }
        self.split(start);
        self.split(end);
        for (_, (_, v)) in self.runs.range_mut(start..end) {
            f(v);
        }
        self.coalesce(start, end);
    }

    /// Maps every byte of `start..end` to `value`.
    pub(crate) fn set(&mut self, start: u64, end: u64, value: V) {
        let end = end.min(self.len);
        if start >= end {
            return;
        }
        self.split(start);
        self.split(end);
        let inside: std::vec::Vec<u64> = self.runs.range(start..end).map(|(s, _)| *s).collect();
        for s in inside {
            self.runs.remove(&s);
        }
        self.runs.insert(start, (end, value));
        self.coalesce(start, end);
    }

    /// Merges equal neighbours among the runs touching `start..end` and the
    /// runs just outside it.
    fn coalesce(&mut self, start: u64, end: u64) {
        let from = self
            .runs
            .range(..start)
            .next_back()
            .map(|(s, _)| *s)
            .unwrap_or(start);
        let mut cursor = from;
        loop {
            let Some((&s, &(e, _))) = self.runs.range(cursor..).next() else {
                return;
            };
            if s > end {
                return;
            }
            let Some((&ns, _)) = self.runs.range(e..).next() else {
                return;
            };
            let equal = match (self.runs.get(&s), self.runs.get(&ns)) {
                (Some((_, a)), Some((_, b))) => a == b,
                _ => false,
            };
            if equal {
                if let Some((ne, _)) = self.runs.remove(&ns) {
                    if let Some(run) = self.runs.get_mut(&s) {
                        run.0 = ne;
                    }
                }
                // Stay on `s`: it may now equal its new neighbour too.
            } else {
                cursor = ns;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::vec::Vec;

    #[derive(Clone, Debug)]
    enum Op {
        Set(u64, u64, u8),
        Add(u64, u64, u8),
    }

    fn op(len: u64) -> impl Strategy<Value = Op> {
        let r = (0..=len + 2, 0..=len + 2);
        prop_oneof![
            (r.clone(), 0u8..3).prop_map(|((a, b), v)| Op::Set(a, b, v)),
            (r, 0u8..2).prop_map(|((a, b), v)| Op::Add(a, b, v)),
        ]
    }

    fn snapshot(m: &RangeMap<u8>, len: u64) -> Vec<u8> {
        let mut out = vec![255u8; len as usize];
        m.for_each(0, len, |a, b, v| {
            for x in &mut out[a as usize..b as usize] {
                *x = *v;
            }
        });
        out
    }

    fn check_invariants(m: &RangeMap<u8>, len: u64) {
        let mut expect = 0;
        let mut prev: Option<u8> = None;
        for (&s, &(e, v)) in &m.runs {
            assert_eq!(s, expect, "runs must tile the range");
            assert!(e > s, "runs are non-empty");
            assert_ne!(prev, Some(v), "adjacent runs must differ");
            prev = Some(v);
            expect = e;
        }
        assert_eq!(expect, len);
    }

    proptest! {
        #[test]
        fn matches_a_byte_array(len in 0u64..40, ops in proptest::collection::vec(op(40), 0..40)) {
            let mut m = RangeMap::new(len, 0u8);
            let mut model = vec![0u8; len as usize];
            for o in ops {
                match o {
                    Op::Set(a, b, v) => {
                        m.set(a, b, v);
                        for i in a..b.min(len) { model[i as usize] = v; }
                    }
                    Op::Add(a, b, v) => {
                        m.update(a, b, |x| *x = x.wrapping_add(v));
                        for i in a..b.min(len) { model[i as usize] = model[i as usize].wrapping_add(v); }
                    }
                }
                check_invariants(&m, len);
                prop_assert_eq!(snapshot(&m, len), model.clone());
            }
            // Clipped iteration visits exactly the asked bytes.
            let (a, b) = (len / 3, len - len / 4);
            let mut visited = 0;
            m.for_each(a, b, |s, e, _| { assert!(s >= a && e <= b); visited += e - s; });
            prop_assert_eq!(visited, b.saturating_sub(a));
        }
    }

    #[test]
    fn coalesces_back_to_one_run() {
        let mut m = RangeMap::new(100, 0u8);
        m.set(10, 20, 1);
        m.set(30, 40, 1);
        assert_eq!(m.run_count(), 5);
        m.set(0, 100, 2);
        assert_eq!(m.run_count(), 1);
        m.set(50, 60, 3);
        m.set(50, 60, 2);
        assert_eq!(m.run_count(), 1);
    }
}
