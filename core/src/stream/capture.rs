//! The graph-capture lifecycle of one stream:
//! `NoCapture → Prepare → Capture → NoCapture`, with `abort` from either
//! open state.
//!
//! - `Prepare` is the warm-up: the work that will be captured runs eagerly
//!   once so the pools grow to the window's working set.
//! - `Capture` is the driver capture: work is recorded, not run; no storage
//!   allocation and no host synchronization may happen.
//!
//! A rejected transition changes nothing. A failure recorded while the window
//! is open (prepare or capture) dooms it: [`CaptureState::end`] then refuses to
//! seal a graph that would be missing work, closes the window and says why.

use core::fmt;
use core::num::NonZeroU64;

use crate::platform::ErrorKind;

/// Where a stream is in the capture lifecycle.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum Phase {
    /// Ordinary eager execution.
    #[default]
    NoCapture,
    /// Warm-up before a capture: eager, but the pools retain what they hand out.
    Prepare,
    /// The driver is recording the stream's work.
    Capture,
}

/// The info-cache mode a capture phase implies.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum CacheMode {
    /// LRU-bounded caching.
    Normal,
    /// Cache everything, evict nothing (the window's buffers must outlive it).
    Capture,
}

/// Why an open window can no longer be sealed.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DoomReason {
    /// A launch or copy inside the window failed or was skipped; the value is
    /// the raw failure id from the taint graph.
    Failure(NonZeroU64),
    /// A platform call inside the window failed.
    Platform {
        /// The operation.
        op: &'static str,
        /// Its classification.
        kind: ErrorKind,
    },
    /// A storage allocation would have been needed inside the open capture.
    AllocationInCapture {
        /// The bytes that were requested.
        bytes: u64,
    },
}

impl fmt::Display for DoomReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DoomReason::Failure(id) => write!(f, "failure #{id} happened inside the window"),
            DoomReason::Platform { op, kind } => {
                write!(
                    f,
                    "platform call `{op}` failed inside the window ({kind:?})"
                )
            }
            DoomReason::AllocationInCapture { bytes } => write!(
                f,
                "a storage allocation of {bytes} bytes was needed inside the capture (warm-up missed it)"
            ),
        }
    }
}

/// A rejected capture-lifecycle call.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CaptureError {
    /// `prepare` while a window is already open.
    AlreadyOpen {
        /// The phase the stream is in.
        phase: Phase,
    },
    /// `begin` without a preceding `prepare`.
    NotPrepared,
    /// `begin` while already capturing.
    AlreadyCapturing,
    /// `end` while not capturing.
    NotCapturing {
        /// The phase the stream is in.
        phase: Phase,
    },
    /// `abort` with no open window.
    NothingToAbort,
    /// `end` refused to seal a doomed window; the window is closed.
    Doomed(DoomReason),
}

impl fmt::Display for CaptureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CaptureError::AlreadyOpen { phase } => {
                write!(
                    f,
                    "cannot prepare: a capture window is already open ({phase:?})"
                )
            }
            CaptureError::NotPrepared => write!(f, "cannot begin capture: call prepare first"),
            CaptureError::AlreadyCapturing => write!(f, "cannot begin capture: already capturing"),
            CaptureError::NotCapturing { phase } => {
                write!(f, "cannot end capture: not capturing ({phase:?})")
            }
            CaptureError::NothingToAbort => write!(f, "cannot abort: no capture window is open"),
            CaptureError::Doomed(r) => write!(f, "refused to seal the capture: {r}"),
        }
    }
}

impl core::error::Error for CaptureError {}

/// The capture state of one stream.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct CaptureState {
    phase: Phase,
    doomed: Option<DoomReason>,
}

impl CaptureState {
    /// A stream that is not capturing.
    pub const fn new() -> Self {
        Self {
            phase: Phase::NoCapture,
            doomed: None,
        }
    }

    /// The current phase.
    pub const fn phase(&self) -> Phase {
        self.phase
    }

    /// Whether the driver is recording (work is not run).
    pub const fn is_recording(&self) -> bool {
        matches!(self.phase, Phase::Capture)
    }

    /// Whether a window (prepare or capture) is open.
    pub const fn is_open(&self) -> bool {
        !matches!(self.phase, Phase::NoCapture)
    }

    /// The info-cache mode: capture mode across the whole prepare → end window.
    pub const fn cache_mode(&self) -> CacheMode {
        match self.phase {
            Phase::NoCapture => CacheMode::Normal,
            Phase::Prepare | Phase::Capture => CacheMode::Capture,
        }
    }

    /// Why the open window is doomed, if it is.
    pub const fn doomed(&self) -> Option<DoomReason> {
        self.doomed
    }

    /// `NoCapture → Prepare`.
    pub fn prepare(&mut self) -> Result<(), CaptureError> {
        match self.phase {
            Phase::NoCapture => {
                self.phase = Phase::Prepare;
                self.doomed = None;
                Ok(())
            }
            phase => Err(CaptureError::AlreadyOpen { phase }),
        }
    }

    /// `Prepare → Capture`.
    pub fn begin(&mut self) -> Result<(), CaptureError> {
        match self.phase {
            Phase::Prepare => {
                self.phase = Phase::Capture;
                Ok(())
            }
            Phase::NoCapture => Err(CaptureError::NotPrepared),
            Phase::Capture => Err(CaptureError::AlreadyCapturing),
        }
    }

    /// Checks that `end` would seal, without changing anything.
    pub fn check_end(&self) -> Result<(), CaptureError> {
        match (self.phase, self.doomed) {
            (Phase::Capture, None) => Ok(()),
            (Phase::Capture, Some(r)) => Err(CaptureError::Doomed(r)),
            (phase, _) => Err(CaptureError::NotCapturing { phase }),
        }
    }

    /// `Capture → NoCapture`. A doomed window is closed too, but the answer is
    /// [`CaptureError::Doomed`]: no graph may be sealed from it.
    pub fn end(&mut self) -> Result<(), CaptureError> {
        match self.check_end() {
            Err(CaptureError::NotCapturing { phase }) => Err(CaptureError::NotCapturing { phase }),
            other => {
                self.phase = Phase::NoCapture;
                self.doomed = None;
                other
            }
        }
    }

    /// Closes an open window without a graph.
    pub fn abort(&mut self) -> Result<(), CaptureError> {
        match self.phase {
            Phase::NoCapture => Err(CaptureError::NothingToAbort),
            _ => {
                self.phase = Phase::NoCapture;
                self.doomed = None;
                Ok(())
            }
        }
    }

    /// Records a failure. Inside an open window it dooms the window (the
    /// first reason is kept); outside it changes nothing. Returns whether the
    /// window is (now) doomed.
    pub fn doom(&mut self, reason: DoomReason) -> bool {
        if !self.is_open() {
            return false;
        }
        if self.doomed.is_none() {
            self.doomed = Some(reason);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    extern crate alloc;

    type Transition = fn(&mut CaptureState) -> Result<(), CaptureError>;
    const ALL_OPS: [Transition; 4] = [
        CaptureState::prepare,
        CaptureState::begin,
        CaptureState::end,
        CaptureState::abort,
    ];

    #[test]
    fn happy_path_and_cache_mode() {
        let mut s = CaptureState::new();
        assert_eq!(s.cache_mode(), CacheMode::Normal);
        s.prepare().unwrap();
        assert!(!s.is_recording());
        assert_eq!(s.cache_mode(), CacheMode::Capture);
        s.begin().unwrap();
        assert!(s.is_recording());
        assert_eq!(s.cache_mode(), CacheMode::Capture);
        s.end().unwrap();
        assert_eq!(s.phase(), Phase::NoCapture);
        assert_eq!(s.cache_mode(), CacheMode::Normal);
    }

    #[test]
    fn out_of_order_calls_are_rejected_and_change_nothing() {
        let mut s = CaptureState::new();
        assert_eq!(s.begin(), Err(CaptureError::NotPrepared));
        assert_eq!(
            s.end(),
            Err(CaptureError::NotCapturing {
                phase: Phase::NoCapture
            })
        );
        assert_eq!(s.abort(), Err(CaptureError::NothingToAbort));
        assert_eq!(s, CaptureState::new());

        s.prepare().unwrap();
        let before = s;
        assert_eq!(
            s.prepare(),
            Err(CaptureError::AlreadyOpen {
                phase: Phase::Prepare
            })
        );
        assert_eq!(
            s.end(),
            Err(CaptureError::NotCapturing {
                phase: Phase::Prepare
            })
        );
        assert_eq!(s, before);

        s.begin().unwrap();
        let before = s;
        assert_eq!(
            s.prepare(),
            Err(CaptureError::AlreadyOpen {
                phase: Phase::Capture
            })
        );
        assert_eq!(s.begin(), Err(CaptureError::AlreadyCapturing));
        assert_eq!(s, before);
    }

    #[test]
    fn abort_closes_either_open_phase() {
        let mut s = CaptureState::new();
        s.prepare().unwrap();
        s.abort().unwrap();
        assert_eq!(s.phase(), Phase::NoCapture);
        s.prepare().unwrap();
        s.begin().unwrap();
        s.abort().unwrap();
        assert_eq!(s.phase(), Phase::NoCapture);
    }

    #[test]
    fn failure_in_window_dooms_end_and_first_reason_wins() {
        let first = DoomReason::Failure(NonZeroU64::new(7).unwrap());
        let mut s = CaptureState::new();
        assert!(!s.doom(first), "outside a window nothing is doomed");
        assert_eq!(s.doomed(), None);

        s.prepare().unwrap();
        assert!(s.doom(first));
        s.begin().unwrap();
        assert!(s.doom(DoomReason::AllocationInCapture { bytes: 4 }));
        assert_eq!(s.check_end(), Err(CaptureError::Doomed(first)));
        assert_eq!(s.end(), Err(CaptureError::Doomed(first)));
        // The window is closed and the next one starts clean.
        assert_eq!(s.phase(), Phase::NoCapture);
        s.prepare().unwrap();
        s.begin().unwrap();
        assert_eq!(s.end(), Ok(()));
    }

    /// Model check: every sequence of up to 6 calls against a table model.
    #[test]
    fn exhaustive_against_model() {
        fn model(phase: Phase, op: usize) -> Option<Phase> {
            match (phase, op) {
                (Phase::NoCapture, 0) => Some(Phase::Prepare),
                (Phase::Prepare, 1) => Some(Phase::Capture),
                (Phase::Capture, 2) => Some(Phase::NoCapture),
                (Phase::Prepare | Phase::Capture, 3) => Some(Phase::NoCapture),
                _ => None,
            }
        }
        let mut count = 0;
        for code in 0..4usize.pow(6) {
            let mut s = CaptureState::new();
            let mut c = code;
            for _ in 0..6 {
                let op = c % 4;
                c /= 4;
                let before = s;
                let got = ALL_OPS[op](&mut s);
                match model(before.phase(), op) {
                    Some(next) => {
                        assert_eq!(got, Ok(()));
                        assert_eq!(s.phase(), next);
                    }
                    None => {
                        assert!(got.is_err());
                        assert_eq!(s, before);
                    }
                }
                count += 1;
            }
        }
        assert_eq!(count, 6 * 4096);
    }

    #[test]
    fn errors_display_readably() {
        let e = CaptureError::Doomed(DoomReason::AllocationInCapture { bytes: 64 });
        let text = alloc::format!("{e}");
        assert!(text.contains("64 bytes"), "{text}");
    }
}
