//! Exhaustive enumeration of a program's interleavings, depth first.

use std::vec::Vec;

use super::ChoiceRecord;

/// Enumerates every sequence of scheduler choices of a deterministic program,
/// one run at a time.
///
/// Each run uses a [`ScriptedScheduler`](super::ScriptedScheduler) fed with
/// [`Explorer::next_script`]; past the script's end it answers `0`. After the
/// run, hand the platform's choice trace to [`Explorer::record`]; the
/// explorer then backtracks to the deepest choice that still has an untried
/// option. The program must make the same platform calls for the same
/// choices (no outside randomness), otherwise the enumeration is meaningless.
///
/// ```
/// use streamcore_mock::schedule::Explorer;
/// let mut explorer = Explorer::new();
/// let mut runs = 0;
/// while let Some(script) = explorer.next_script() {
///     // build a MockPlatform with `MockConfig::default().scripted(script)`,
///     // run the program, then:
///     # let trace: Vec<streamcore_mock::schedule::ChoiceRecord> = Vec::new();
///     explorer.record(&trace);
///     runs += 1;
/// }
/// assert_eq!(runs, 1); // an empty trace has exactly one interleaving
/// ```
#[derive(Clone, Debug)]
pub struct Explorer {
    next: Option<Vec<usize>>,
    pending: bool,
    runs: u64,
}

impl Default for Explorer {
    fn default() -> Self {
        Self::new()
    }
}

impl Explorer {
    /// An explorer whose first run takes option `0` everywhere.
    pub fn new() -> Self {
        Self {
            next: Some(Vec::new()),
            pending: false,
            runs: 0,
        }
    }

    /// The script for the next run, or `None` when every interleaving has
    /// been run (or the previous script's trace was never recorded).
    pub fn next_script(&mut self) -> Option<Vec<usize>> {
        if self.pending {
            return None;
        }
        let s = self.next.take()?;
        self.pending = true;
        Some(s)
    }

    /// Records the choice trace of the run that used the last script.
    pub fn record(&mut self, trace: &[ChoiceRecord]) {
        self.pending = false;
        self.runs = self.runs.saturating_add(1);
        self.next = trace
            .iter()
            .rposition(|r| r.chosen + 1 < r.options)
            .map(|i| {
                let mut s: Vec<usize> = trace[..i].iter().map(|r| r.chosen).collect();
                s.push(trace[i].chosen + 1);
                s
            });
    }

    /// How many runs have been recorded.
    pub fn runs(&self) -> u64 {
        self.runs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake program: two binary choices then, if both were 1, a ternary
    /// one. Leaves: 00, 01, 10, 110, 111, 112 = 6.
    fn run(script: &[usize]) -> Vec<ChoiceRecord> {
        let mut trace = Vec::new();
        let pick = |options: usize, trace: &mut Vec<ChoiceRecord>| {
            let c = script.get(trace.len()).copied().unwrap_or(0) % options;
            trace.push(ChoiceRecord {
                options,
                chosen: c,
                may_stop: false,
            });
            c
        };
        let a = pick(2, &mut trace);
        let b = pick(2, &mut trace);
        if a == 1 && b == 1 {
            pick(3, &mut trace);
        }
        trace
    }

    #[test]
    fn enumerates_every_leaf_once() {
        let mut ex = Explorer::new();
        let mut leaves = Vec::new();
        while let Some(s) = ex.next_script() {
            let t = run(&s);
            leaves.push(t.iter().map(|r| r.chosen).collect::<Vec<_>>());
            ex.record(&t);
        }
        assert_eq!(
            leaves,
            vec![
                vec![0, 0],
                vec![0, 1],
                vec![1, 0],
                vec![1, 1, 0],
                vec![1, 1, 1],
                vec![1, 1, 2]
            ]
        );
        assert_eq!(ex.runs(), 6);
    }

    #[test]
    fn unrecorded_run_stops_the_enumeration() {
        let mut ex = Explorer::new();
        assert!(ex.next_script().is_some());
        assert!(ex.next_script().is_none());
    }
}
