//! The progress bar of long replays: on stderr, only when stderr is a
//! terminal (never in pipes, files or tests), cleared when done.
//!
//! Its line stays within 79 columns (an 80-column terminal never wraps it)
//! for traces of up to 99,999,999 events: the trace's name is cut to
//! [`NAME_COLUMNS`], the bar is [`BAR_COLUMNS`] wide. The first frame
//! already says what is going on (the style, name and message are set
//! before anything is drawn).

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::text::printable;

/// Replays shorter than this finish too fast to need a bar.
const MIN_EVENTS: u64 = 50_000;

/// The most columns of a trace's name on a bar (longer ones end in `~`).
pub const NAME_COLUMNS: usize = 16;
/// The bar's own width, between its brackets.
const BAR_COLUMNS: usize = 16;

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
        let bar = spinner(name, ProgressDrawTarget::stderr());
        bar.enable_steady_tick(Duration::from_millis(100));
        Some(bar)
    }

    /// A bar over `total` events (`None` when bars are off or the replay
    /// is short).
    pub fn replaying(&self, name: &str, what: &'static str, total: u64) -> Option<ProgressBar> {
        if !self.enabled || total < MIN_EVENTS {
            return None;
        }
        Some(bar(name, what, total, ProgressDrawTarget::stderr()))
    }
}

/// The loading spinner, drawn on `target`.
fn spinner(name: &str, target: ProgressDrawTarget) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(None, target);
    let bar = match ProgressStyle::with_template("{spinner} {prefix}: {msg}") {
        Ok(style) => bar.with_style(style),
        Err(_) => bar,
    };
    bar.with_prefix(short_name(name)).with_message("loading")
}

/// The bar over `total` events, drawn on `target`.
fn bar(name: &str, what: &'static str, total: u64, target: ProgressDrawTarget) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(total), target);
    let template = format!(
        "{{prefix}}: {{msg}} [{{bar:{BAR_COLUMNS}}}] {{human_pos}}/{{human_len}}, {{eta}} left"
    );
    let bar = match ProgressStyle::with_template(&template) {
        Ok(style) => bar.with_style(style.progress_chars("=> ")),
        Err(_) => bar,
    };
    // Builders, not setters: a setter draws a frame at once, before the
    // message is there.
    bar.with_prefix(short_name(name)).with_message(what)
}

/// `name` with its control characters escaped (a file's name from
/// elsewhere cannot drive the terminal: [`printable`]), cut to
/// [`NAME_COLUMNS`] characters (the last one a `~`).
fn short_name(name: &str) -> String {
    let name = printable(name);
    if name.chars().count() <= NAME_COLUMNS {
        return name;
    }
    let mut short: String = name.chars().take(NAME_COLUMNS - 1).collect();
    short.push('~');
    short
}

/// How often (in events) the replay reports progress to a bar.
pub fn stride(total: u64) -> u64 {
    (total / 200).max(1024)
}

#[cfg(test)]
mod tests {
    use std::io;
    use std::sync::{Arc, Mutex};

    use indicatif::TermLike;

    use super::*;

    /// An 80-column terminal that keeps each frame written to it.
    #[derive(Debug, Default, Clone)]
    struct Screen(Arc<Mutex<Vec<String>>>);

    impl Screen {
        fn frames(&self) -> Vec<String> {
            self.0.lock().unwrap().clone()
        }
        /// A frame's text; indicatif's own filler (spaces up to the
        /// terminal's width, after the text) is left out.
        fn push(&self, s: &str) {
            if !s.trim().is_empty() {
                self.0.lock().unwrap().push(s.to_owned());
            }
        }
    }

    impl TermLike for Screen {
        fn width(&self) -> u16 {
            80
        }
        fn move_cursor_up(&self, _: usize) -> io::Result<()> {
            Ok(())
        }
        fn move_cursor_down(&self, _: usize) -> io::Result<()> {
            Ok(())
        }
        fn move_cursor_right(&self, _: usize) -> io::Result<()> {
            Ok(())
        }
        fn move_cursor_left(&self, _: usize) -> io::Result<()> {
            Ok(())
        }
        fn write_line(&self, s: &str) -> io::Result<()> {
            self.push(s);
            Ok(())
        }
        fn write_str(&self, s: &str) -> io::Result<()> {
            self.push(s);
            Ok(())
        }
        fn clear_line(&self) -> io::Result<()> {
            Ok(())
        }
        fn flush(&self) -> io::Result<()> {
            Ok(())
        }
    }

    /// Every frame of a long replay with a long name fits 79 columns, and
    /// the first one already says what is replayed.
    #[test]
    fn bar_frames_fit_79_columns_and_start_with_a_message() {
        let screen = Screen::default();
        let total = 99_999_999;
        let b = bar(
            "a_rather_long_trace_name_of_a_workload",
            "replaying",
            total,
            ProgressDrawTarget::term_like(Box::new(screen.clone())),
        );
        for pos in [0, 1, 12_345, total / 2, total - 1, total] {
            b.set_position(pos);
        }
        let frames = screen.frames();
        assert!(frames.len() >= 2, "{frames:?}");
        assert!(
            frames[0].starts_with("a_rather_long_t~: replaying ["),
            "{frames:?}"
        );
        for f in &frames {
            assert!(
                f.chars().count() <= 79,
                "{} columns: {f:?}",
                f.chars().count()
            );
        }
    }

    #[test]
    fn the_spinner_starts_with_its_message() {
        let screen = Screen::default();
        let s = spinner(
            "gpt2_train",
            ProgressDrawTarget::term_like(Box::new(screen.clone())),
        );
        s.tick();
        let frames = screen.frames();
        assert!(
            !frames.is_empty() && frames.iter().all(|f| f.contains("gpt2_train: loading")),
            "{frames:?}"
        );
    }

    #[test]
    fn short_names() {
        assert_eq!(short_name("gpt2_train"), "gpt2_train");
        assert_eq!(short_name("two_stream_pipel"), "two_stream_pipel");
        assert_eq!(short_name("two_stream_pipeline"), "two_stream_pipe~");
    }

    /// A file's name with control characters (an escape sequence, a bell)
    /// reaches the terminal escaped, on the spinner and on the bar alike.
    #[test]
    fn control_characters_of_names_are_escaped() {
        assert_eq!(short_name("g\u{1b}[2J\u{7}"), r"g\u{1b}[2J\u{7}");
        assert_eq!(short_name("a\u{1b}[2Jlong_name"), r"a\u{1b}[2Jlong_~");
        let screen = Screen::default();
        let s = spinner(
            "evil\u{1b}[2J",
            ProgressDrawTarget::term_like(Box::new(screen.clone())),
        );
        s.tick();
        let b = bar(
            "evil\u{1b}[2J",
            "replaying",
            100_000,
            ProgressDrawTarget::term_like(Box::new(screen.clone())),
        );
        b.set_position(50_000);
        let frames = screen.frames();
        assert!(frames.len() >= 2, "{frames:?}");
        for f in &frames {
            assert!(!f.contains('\u{1b}'), "{f:?}");
            assert!(f.contains(r"evil\u{1b}[2J: "), "{f:?}");
        }
    }
}
