//! The progress bar of long replays: on stderr, only when stderr is a
//! terminal (never in pipes, files or tests), cleared when done.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Replays shorter than this finish too fast to need a bar.
const MIN_EVENTS: u64 = 50_000;

/// Whether bars are drawn.
#[derive(Copy, Clone, Debug)]
pub struct Progress {
    enabled: bool,
}

impl Progress {
    /// Bars when `wanted` and stderr is a terminal.
    pub fn new(wanted: bool) -> Self {
        Self {
            enabled: wanted && std::io::stderr().is_terminal(),
        }
    }

    /// A spinner while a trace loads (`None` when bars are off).
    pub fn loading(&self, name: &str) -> Option<ProgressBar> {
        if !self.enabled {
            return None;
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template("{spinner} {prefix}: {msg}") {
            bar.set_style(style);
        }
        bar.set_prefix(name.to_owned());
        bar.set_message("loading");
        bar.enable_steady_tick(Duration::from_millis(100));
        Some(bar)
    }

    /// A bar over `total` events (`None` when bars are off or the replay
    /// is short).
    pub fn replaying(&self, name: &str, what: &'static str, total: u64) -> Option<ProgressBar> {
        if !self.enabled || total < MIN_EVENTS {
            return None;
        }
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template(
            "{prefix}: {msg} [{bar:40}] {human_pos}/{human_len} events ({eta} left)",
        ) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_prefix(name.to_owned());
        bar.set_message(what);
        Some(bar)
    }
}

/// How often (in events) the replay reports progress to a bar.
pub fn stride(total: u64) -> u64 {
    (total / 200).max(1024)
}
