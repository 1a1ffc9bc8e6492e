//! Which part of the op space a fuzz target explores.

use super::{Op, Program};

/// Which part of the op space a fuzz target explores. Every target runs the
/// same driver and oracle; a profile only filters the ops, bounds the
/// streams and picks the drop-queue thresholds.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Profile {
    /// Everything.
    All,
    /// Orders of frees, syncs and capture transitions (prepare, begin, end,
    /// replay, release, abort) on one or two streams.
    CaptureFreeOrderings,
    /// Cross-stream producers and consumers, syncs, polls and reads whose
    /// synchronization fails, on two to four streams, no capture.
    MultiStreamSync,
    /// Injected faults, skipped launches, taint through launches, writes,
    /// reads and replays, refused windows, handles of another device.
    TaintPropagation,
    /// Deferred frees under tiny flush thresholds: frees, polls, syncs,
    /// cleanups, pool installs, graph releases, reads whose synchronization
    /// fails.
    DropQueue,
}

impl Profile {
    /// Every profile that has a fuzz target, with the target's name.
    pub const TARGETS: [(&'static str, Profile); 4] = [
        ("capture_free_orderings", Profile::CaptureFreeOrderings),
        ("multi_stream_sync", Profile::MultiStreamSync),
        ("taint_propagation", Profile::TaintPropagation),
        ("drop_queue", Profile::DropQueue),
    ];

    /// The profile of a fuzz target's name.
    pub fn of_target(name: &str) -> Option<Profile> {
        Self::TARGETS
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, p)| *p)
    }

    /// The most streams a program of this profile uses.
    pub fn max_streams(self) -> u8 {
        match self {
            Profile::All => 4,
            Profile::CaptureFreeOrderings => 2,
            Profile::MultiStreamSync => 4,
            Profile::TaintPropagation => 2,
            Profile::DropQueue => 3,
        }
    }

    /// The fewest streams.
    pub fn min_streams(self) -> u8 {
        match self {
            Profile::MultiStreamSync => 2,
            _ => 1,
        }
    }

    /// Whether the profile runs `op`.
    pub fn admits(self, op: &Op) -> bool {
        match self {
            Profile::All => true,
            Profile::CaptureFreeOrderings => !matches!(op, Op::InstallPools { .. }),
            Profile::MultiStreamSync => matches!(
                op,
                Op::Alloc { .. }
                    | Op::Free { .. }
                    | Op::Write { .. }
                    | Op::Read { .. }
                    | Op::ReadFault { .. }
                    | Op::Launch { .. }
                    | Op::CrossUse { .. }
                    | Op::Sync { .. }
                    | Op::SyncAll
                    | Op::Poll
                    | Op::Cleanup
            ),
            Profile::TaintPropagation => !matches!(
                op,
                Op::InstallPools { .. } | Op::Cleanup | Op::Poll | Op::Sync { .. }
            ),
            Profile::DropQueue => {
                !matches!(op, Op::Empty { .. } | Op::Fault { .. } | Op::Foreign { .. })
            }
        }
    }

    /// Whether the profile forces tiny flush thresholds.
    pub fn tiny_flush(self) -> bool {
        matches!(self, Profile::DropQueue)
    }

    /// The program as this profile runs it: stream count bounded, ops
    /// filtered.
    pub fn shape(self, mut program: Program) -> Program {
        let span = self.max_streams() - self.min_streams() + 1;
        program.config.streams = self.min_streams() - 1 + program.config.streams % span;
        if self.tiny_flush() && program.config.flush == 0 {
            program.config.flush = 1;
        }
        program.ops.retain(|op| self.admits(op));
        program
    }
}
