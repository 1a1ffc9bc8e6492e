//! Text from the outside world (a trace's header, a file's name, a line
//! of a trace quoted in an error) as a terminal may be shown it.

/// The most characters of an error line after `streamcore: ` (see
/// [`error_text`]): room for a long path and its reason, not for a
/// megabyte of a trace line quoted back.
pub const MAX_ERROR_CHARS: usize = 1024;

/// Characters kept from the end of a cut error line: the end of a quoted
/// value and what follows it.
const ERROR_TAIL_CHARS: usize = 192;

/// `text` with every control character written as its escape (`\n`,
/// `\u{1b}`), so a header from a downloaded trace cannot move the cursor or
/// start an escape sequence.
pub fn printable(text: &str) -> String {
    let mut shown = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() {
            shown.extend(c.escape_default());
        } else {
            shown.push(c);
        }
    }
    shown
}

/// An error message as one line on a terminal: control characters escaped
/// ([`printable`]; a message may quote a trace's or a layout file's
/// text, or name a file), and at most [`MAX_ERROR_CHARS`] characters: a
/// longer one keeps its start (the file, the line, the reason) and its end,
/// and says how much was left out between them.
pub fn error_text(message: &str) -> String {
    let shown = printable(message);
    let total = shown.chars().count();
    if total <= MAX_ERROR_CHARS {
        return shown;
    }
    // Room for the marker with as many digits as `total` has (at least as
    // many as the count left out), so the line stays within the limit.
    let marker_room = " [...  characters left out ...] ".len() + total.to_string().len();
    let head = MAX_ERROR_CHARS - ERROR_TAIL_CHARS - marker_room;
    let left_out = total - head - ERROR_TAIL_CHARS;
    let marker = format!(" [... {left_out} characters left out ...] ");
    let mut cut: String = shown.chars().take(head).collect();
    cut.push_str(&marker);
    cut.extend(shown.chars().skip(total - ERROR_TAIL_CHARS));
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(printable("a\u{1b}[2Jb\n\t"), r"a\u{1b}[2Jb\n\t");
        assert_eq!(printable("ünï code"), "ünï code");
        assert_eq!(error_text("x\u{7}y"), r"x\u{7}y");
    }

    #[test]
    fn short_errors_are_kept_whole() {
        let line = "a".repeat(MAX_ERROR_CHARS);
        assert_eq!(error_text(&line), line);
    }

    /// A long error keeps its start and its end, says how much it left
    /// out, and stays within the limit (counted in characters, however
    /// many bytes each is).
    #[test]
    fn long_errors_keep_their_start_and_end() {
        for body in ["A", "é"] {
            let message = format!(
                "t.jsonl: line 2: unknown op \"{}\" (end)",
                body.repeat(1 << 20)
            );
            let shown = error_text(&message);
            let count = shown.chars().count();
            assert!(count <= MAX_ERROR_CHARS, "{count}");
            assert!(count >= MAX_ERROR_CHARS - 8, "{count}");
            assert!(
                shown.starts_with("t.jsonl: line 2: unknown op \""),
                "{shown}"
            );
            assert!(shown.ends_with("\" (end)"), "{shown}");
            let message_chars = message.chars().count();
            let left_out = message_chars - (count - shown_marker_len(&shown));
            assert!(
                shown.contains(&format!(" [... {left_out} characters left out ...] ")),
                "{shown}"
            );
        }
    }

    /// The characters of the marker in `shown`.
    fn shown_marker_len(shown: &str) -> usize {
        let start = shown.find(" [... ").expect("a marker");
        let end = shown.find(" ...] ").expect("a marker") + " ...] ".len();
        shown[start..end].chars().count()
    }
}
