//! Who decides when queued work completes.
//!
//! The simulated device never runs work on its own: work progresses only at
//! *choice points*, and at each one a [`Scheduler`] picks one option.
//!
//! # What a choice is
//!
//! At a choice point the device lists the streams whose head command is
//! *ready* (its stream is not blocked on an event that has not passed yet),
//! in increasing stream id order: `ready[0], ready[1], …`.
//!
//! - An **opportunistic** point ([`ChoicePoint::may_stop`] is `true`) happens
//!   at the start of every call that queues work on a stream that is not
//!   capturing (record, wait, copies, launches, graph launches), of `query`,
//!   of `begin_capture`, and of every pinned host read or write (and
//!   [`MockPlatform::poke`](crate::MockPlatform::poke)). Option `0` means "run nothing more now, let the host
//!   call proceed"; option `i >= 1` means "complete the head command of
//!   stream `ready[i - 1]`", after which another opportunistic point follows.
//!   The device stops asking once nothing is ready.
//! - A **forced** point (`may_stop` is `false`) happens while the host waits
//!   (`synchronize`, [`MockPlatform::step`](crate::MockPlatform::step),
//!   [`MockPlatform::run_until_idle`](crate::MockPlatform::run_until_idle),
//!   the implicit device synchronization of a storage `flush`): option `i`
//!   completes the head of `ready[i]`.
//!
//! So [`ChoicePoint::options`] is `ready.len() + 1` at an opportunistic point
//! and `ready.len()` at a forced one, and never `0` (no point is raised when
//! there is nothing to choose). A scheduler's answer outside `0..options` is
//! reduced modulo `options`.
//!
//! Every point and the answer taken are appended to the choice trace
//! ([`MockPlatform::choice_trace`](crate::MockPlatform::choice_trace)), which
//! is what the [`Explorer`] uses to enumerate every interleaving of a program.

mod explore;

pub use explore::Explorer;

use std::boxed::Box;
use std::fmt;
use std::vec::Vec;

use crate::rng::SplitMix64;

/// One decision the device asks its scheduler for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChoicePoint<'a> {
    /// Whether option `0` means "run nothing more now" (opportunistic point).
    pub may_stop: bool,
    /// Stream ids whose head command can complete, in increasing order.
    pub ready: &'a [u32],
}

impl ChoicePoint<'_> {
    /// The number of options at this point (always at least 1).
    pub fn options(&self) -> usize {
        self.ready.len() + usize::from(self.may_stop)
    }

    /// The stream an option runs, or `None` for the "stop" option.
    pub fn stream_of(&self, option: usize) -> Option<u32> {
        if self.may_stop {
            option
                .checked_sub(1)
                .and_then(|i| self.ready.get(i).copied())
        } else {
            self.ready.get(option).copied()
        }
    }
}

/// One entry of the choice trace: how many options there were, and which
/// one was taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ChoiceRecord {
    /// Options available (see [`ChoicePoint::options`]).
    pub options: usize,
    /// The option taken (already reduced into `0..options`).
    pub chosen: usize,
    /// Whether the point was opportunistic (option 0 = stop).
    pub may_stop: bool,
}

/// Picks one option at each choice point. See the [module docs](self) for
/// what the options mean.
pub trait Scheduler: Send {
    /// Returns an option in `0..point.options()` (other values are reduced
    /// modulo the number of options).
    fn choose(&mut self, point: &ChoicePoint<'_>) -> usize;
}

/// Uniformly random choices from a seed: the default.
#[derive(Clone, Debug)]
pub struct SeededScheduler {
    rng: SplitMix64,
}

impl SeededScheduler {
    /// A scheduler whose choices follow `seed`.
    pub fn new(seed: u64) -> Self {
        Self {
            rng: SplitMix64::new(seed),
        }
    }
}

impl Scheduler for SeededScheduler {
    fn choose(&mut self, point: &ChoicePoint<'_>) -> usize {
        self.rng.below(point.options() as u64) as usize
    }
}

/// Follows an explicit list of choices, then always answers `0` (stop at an
/// opportunistic point, lowest ready stream at a forced one).
#[derive(Clone, Debug, Default)]
pub struct ScriptedScheduler {
    script: Vec<usize>,
    next: usize,
}

impl ScriptedScheduler {
    /// A scheduler that answers `script[0]`, `script[1]`, … in order.
    pub fn new(script: Vec<usize>) -> Self {
        Self { script, next: 0 }
    }
}

impl Scheduler for ScriptedScheduler {
    fn choose(&mut self, _point: &ChoicePoint<'_>) -> usize {
        let c = self.script.get(self.next).copied().unwrap_or(0);
        self.next = self.next.saturating_add(1);
        c
    }
}

/// Never runs work until the host waits for it; at forced points runs the
/// lowest ready stream. The laziest (and most adversarial for code that
/// forgets to wait) schedule.
#[derive(Clone, Copy, Debug, Default)]
pub struct LazyScheduler;

impl Scheduler for LazyScheduler {
    fn choose(&mut self, _point: &ChoicePoint<'_>) -> usize {
        0
    }
}

/// Runs every ready command as soon as it can, lowest stream first: work
/// completes eagerly, as on an idle, infinitely fast device.
#[derive(Clone, Copy, Debug, Default)]
pub struct EagerScheduler;

impl Scheduler for EagerScheduler {
    fn choose(&mut self, point: &ChoicePoint<'_>) -> usize {
        usize::from(point.may_stop)
    }
}

/// A scheduler made from a closure.
pub struct FnScheduler<F>(pub F);

impl<F> fmt::Debug for FnScheduler<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FnScheduler(..)")
    }
}

impl<F> Scheduler for FnScheduler<F>
where
    F: FnMut(&ChoicePoint<'_>) -> usize + Send,
{
    fn choose(&mut self, point: &ChoicePoint<'_>) -> usize {
        (self.0)(point)
    }
}

/// Shorthand constructors for the boxed schedulers the config takes.
pub fn seeded(seed: u64) -> Box<dyn Scheduler> {
    Box::new(SeededScheduler::new(seed))
}

/// A boxed [`ScriptedScheduler`].
pub fn scripted(script: Vec<usize>) -> Box<dyn Scheduler> {
    Box::new(ScriptedScheduler::new(script))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_and_stream_mapping() {
        let ready = [1u32, 4];
        let opp = ChoicePoint {
            may_stop: true,
            ready: &ready,
        };
        assert_eq!(opp.options(), 3);
        assert_eq!(opp.stream_of(0), None);
        assert_eq!(opp.stream_of(1), Some(1));
        assert_eq!(opp.stream_of(2), Some(4));
        assert_eq!(opp.stream_of(3), None);
        let forced = ChoicePoint {
            may_stop: false,
            ready: &ready,
        };
        assert_eq!(forced.options(), 2);
        assert_eq!(forced.stream_of(0), Some(1));
        assert_eq!(forced.stream_of(1), Some(4));
    }

    #[test]
    fn scripted_then_zero() {
        let ready = [0u32];
        let p = ChoicePoint {
            may_stop: true,
            ready: &ready,
        };
        let mut s = ScriptedScheduler::new(vec![1, 1]);
        assert_eq!(s.choose(&p), 1);
        assert_eq!(s.choose(&p), 1);
        assert_eq!(s.choose(&p), 0);
    }

    #[test]
    fn seeded_in_range() {
        let ready = [0u32, 1, 2];
        let p = ChoicePoint {
            may_stop: true,
            ready: &ready,
        };
        let mut s = SeededScheduler::new(9);
        let mut seen = [false; 4];
        for _ in 0..200 {
            let c = s.choose(&p);
            assert!(c < 4);
            seen[c] = true;
        }
        assert!(seen.iter().all(|x| *x));
    }
}
