//! Vector clocks: what each agent (the host, each stream) is known to have
//! finished.

use std::vec::Vec;

use super::Agent;

/// One counter per agent; missing entries read as `0`.
///
/// Agent `a`'s own entry counts the operations it has issued; entry `b` of
/// `a`'s clock is the last operation of `b` that `a` is ordered after.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct VectorClock(Vec<u64>);

impl VectorClock {
    /// The entry of `agent`.
    pub(crate) fn get(&self, agent: Agent) -> u64 {
        self.0.get(agent.index()).copied().unwrap_or(0)
    }

    /// Advances `agent`'s own entry and returns the new value (its epoch).
    pub(crate) fn tick(&mut self, agent: Agent) -> u64 {
        let i = agent.index();
        if self.0.len() <= i {
            self.0.resize(i + 1, 0);
        }
        self.0[i] += 1;
        self.0[i]
    }

    /// Entry-wise maximum with `other`.
    pub(crate) fn join(&mut self, other: &VectorClock) {
        if self.0.len() < other.0.len() {
            self.0.resize(other.0.len(), 0);
        }
        for (a, b) in self.0.iter_mut().zip(other.0.iter()) {
            *a = (*a).max(*b);
        }
    }

    /// Whether the operation `epoch` of `agent` happens before this clock.
    pub(crate) fn covers(&self, agent: Agent, epoch: u64) -> bool {
        self.get(agent) >= epoch
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_join_covers() {
        let mut a = VectorClock::default();
        let mut b = VectorClock::default();
        let ea = a.tick(Agent::Stream(0));
        let eb = b.tick(Agent::Stream(3));
        assert_eq!((ea, eb), (1, 1));
        assert!(!a.covers(Agent::Stream(3), eb));
        a.join(&b);
        assert!(a.covers(Agent::Stream(3), eb));
        assert!(a.covers(Agent::Stream(0), ea));
        assert!(!a.covers(Agent::Stream(0), ea + 1));
        assert_eq!(a.get(Agent::Host), 0);
        assert_eq!(a.tick(Agent::Host), 1);
    }
}
