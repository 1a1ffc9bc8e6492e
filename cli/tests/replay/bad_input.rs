//! Bad traces: missing, truncated or corrupt files, malformed or
//! inconsistent lines; each one line on stderr and exit status 1.

use super::*;

/// Writes a plain trace of `events` (after a header) and replays it.
fn replay_lines(test: &str, events: &[&str]) -> (PathBuf, Output) {
    let dir = scratch(test);
    let path = dir.join("bad.jsonl");
    let mut body = String::from("{\"header\": {}}\n");
    for e in events {
        body.push_str(e);
        body.push('\n');
    }
    std::fs::write(&path, body).unwrap();
    let out = replay(&[&path]);
    (path, out)
}

#[test]
fn a_missing_file_is_named() {
    let out = replay(&[&"no/such/trace.jsonl.gz"]);
    assert_refused(&out, &["no/such/trace.jsonl.gz: no such file"]);
}

#[test]
fn a_truncated_gzip_is_named() {
    let dir = scratch("truncated");
    let whole = std::fs::read(trace("gpt2_train")).unwrap();
    let path = dir.join("cut.jsonl.gz");
    std::fs::write(&path, &whole[..whole.len() / 2]).unwrap();
    assert_refused(
        &replay(&[&path]),
        &["cut.jsonl.gz: the gzip data ends early"],
    );
}

#[test]
fn bytes_after_the_gzip_data_are_not_called_truncated() {
    let dir = scratch("trailing");
    let whole = std::fs::read(trace("two_stream_pipeline")).unwrap();
    for (name, tail) in [("short", &b"xy"[..]), ("long", b"garbage after the end\n")] {
        let path = dir.join(format!("{name}.jsonl.gz"));
        let mut bytes = whole.clone();
        bytes.extend_from_slice(tail);
        std::fs::write(&path, bytes).unwrap();
        let out = replay(&[&path]);
        assert_refused(
            &out,
            &["bytes that are not gzip after the end of the gzip data"],
        );
        assert!(!text(&out.stderr).contains("truncated"), "{name}");
    }
}

#[test]
fn corruption_inside_the_gzip_data_is_called_corruption() {
    let dir = scratch("corrupt");
    let mut bytes = std::fs::read(trace("gpt2_train")).unwrap();
    let mid = bytes.len() / 2;
    for b in &mut bytes[mid..mid + 64] {
        *b ^= 0x5a;
    }
    let path = dir.join("damaged.jsonl.gz");
    std::fs::write(&path, bytes).unwrap();
    let out = replay(&[&path]);
    assert_refused(&out, &["damaged.jsonl.gz: corrupt gzip data"]);
    assert!(!text(&out.stderr).contains("line "), "not a JSON error");
}

#[test]
fn streams_out_of_first_use_order_are_refused() {
    let (_, out) = replay_lines(
        "stream-5",
        &[r#"{"op":"alloc","id":1,"size":4096,"stream":5}"#],
    );
    assert_refused(
        &out,
        &[
            "line 2: stream 5 is used before stream 0",
            "in order of first use",
        ],
    );
}

#[test]
fn header_counts_are_checked_against_the_events() {
    let dir = scratch("header-counts");
    let path = dir.join("counts.jsonl");
    std::fs::write(
        &path,
        "{\"header\": {\"events\": 3, \"streams\": 1}}\n\
         {\"op\":\"alloc\",\"id\":1,\"size\":4096,\"stream\":0}\n\
         {\"op\":\"free\",\"id\":1}\n",
    )
    .unwrap();
    assert_refused(
        &replay(&[&path]),
        &["counts.jsonl: line 1: the header announces 3 events, the trace has 2"],
    );
}

#[test]
fn a_size_beyond_64_bits_says_so() {
    let (_, out) = replay_lines(
        "size-2-64",
        &[r#"{"op":"alloc","id":1,"size":18446744073709551616,"stream":0}"#],
    );
    assert_refused(
        &out,
        &["line 2: \"size\" is", "above the largest integer, 2^64 - 1"],
    );
    assert!(!text(&out.stderr).contains("not a non-negative integer"));
}

#[test]
fn a_malformed_line_says_which_and_why() {
    let (_, out) = replay_lines(
        "malformed",
        &[
            r#"{"op":"alloc","id":1,"size":4096,"stream":0}"#,
            r#"{"op":"alloc","id":2,"size":"big","stream":0}"#,
        ],
    );
    assert_refused(
        &out,
        &["bad.jsonl: line 3: \"size\" is not a non-negative integer"],
    );
    let (_, out) = replay_lines("not-json", &[r#"{"op":"alloc","id":1,"size":4096"#]);
    assert_refused(&out, &["bad.jsonl: line 2: "]);
    let (_, out) = replay_lines("unknown-op", &[r#"{"op":"realloc","id":1}"#]);
    assert_refused(&out, &["line 2: unknown op \"realloc\""]);
}

#[test]
fn a_free_of_an_unknown_id_is_named() {
    let (_, out) = replay_lines(
        "unknown-free",
        &[
            r#"{"op":"alloc","id":1,"size":4096,"stream":0}"#,
            r#"{"op":"free","id":1}"#,
            r#"{"op":"free","id":1}"#,
        ],
    );
    assert_refused(&out, &["line 4: free of id 1, which is not live"]);
}

#[test]
fn zero_and_absurd_sizes_are_refused() {
    let (_, out) = replay_lines("zero", &[r#"{"op":"alloc","id":5,"size":0,"stream":0}"#]);
    assert_refused(&out, &["line 2: id 5 has size 0"]);
    let (_, out) = replay_lines(
        "absurd",
        &[r#"{"op":"alloc","id":5,"size":18446744073709551615,"stream":0}"#],
    );
    assert_refused(
        &out,
        &["line 2: id 5 has size 18446744073709551615, above the"],
    );
    // Plausible for the format, more than the device holds.
    let (_, out) = replay_lines(
        "beyond-device",
        &[
            r#"{"op":"alloc","id":1,"size":4096,"stream":0}"#,
            r#"{"op":"alloc","id":2,"size":200000000000,"stream":0}"#,
        ],
    );
    assert_refused(
        &out,
        &[
            "the replay stopped at event 2 of 2",
            "out of memory",
            "141000000000 B",
        ],
    );
    assert_eq!(
        text(&out.stderr).lines().count(),
        1,
        "one line, no report dump"
    );
}

#[test]
fn an_empty_file_has_no_header() {
    let dir = scratch("empty");
    let path = dir.join("empty.jsonl");
    std::fs::write(&path, "").unwrap();
    assert_refused(&replay(&[&path]), &["empty.jsonl: line 1: no trace header"]);
}

#[test]
fn one_bad_trace_does_not_hide_the_others() {
    let out = replay(&[&"--json", &"missing.jsonl", &trace("two_stream_pipeline")]);
    assert_refused(&out, &["missing.jsonl: no such file"]);
    let objects = json_lines(&out);
    assert_eq!(objects.len(), 1);
    assert_eq!(u(&objects[0], "events"), 968);
}

/// A header whose figures contradict each other is refused, not printed as
/// a recorded run's (a reserved / allocated ratio below 1).
#[test]
fn a_header_whose_figures_contradict_each_other_is_refused() {
    let dir = scratch("header-contradicts");
    let path = dir.join("contradicts.jsonl");
    for (header, says) in [
        (
            r#"{"header": {"peak_reserved_bytes": 10, "peak_allocated_bytes": 100}}"#,
            r#"line 1: the header's "peak_reserved_bytes" (10) is below its "peak_allocated_bytes" (100)"#,
        ),
        (
            r#"{"header": {"peak_allocated_bytes": 100, "live_at_start_bytes": 200}}"#,
            r#"line 1: the header's "peak_allocated_bytes" (100) is below its "live_at_start_bytes" (200)"#,
        ),
    ] {
        std::fs::write(
            &path,
            format!("{header}\n{{\"op\":\"alloc\",\"id\":1,\"size\":4096,\"stream\":0}}\n"),
        )
        .unwrap();
        let out = replay(&[&path]);
        assert_refused(&out, &[&format!("contradicts.jsonl: {says}")]);
        assert!(out.stdout.is_empty(), "no table for {header}");
    }
}

/// What a trace's line or a file's name puts in an error line reaches the
/// terminal with its control characters escaped, as in the table: a trace
/// from elsewhere cannot start an escape sequence on stderr either.
#[test]
fn control_characters_in_errors_are_escaped() {
    let (_, out) = replay_lines(
        "errors-with-controls",
        &[r#"{"op":"\u001b[2Jgone\u0007","id":1}"#],
    );
    assert_refused(&out, &[r#"line 2: unknown op "\u{1b}[2Jgone\u{7}""#]);
    let err = text(&out.stderr);
    assert!(!err.contains('\u{1b}') && !err.contains('\u{7}'), "{err:?}");

    let dir = scratch("errors-with-controls-names");
    let missing = dir.join("no\u{1b}[31mthere\n.jsonl");
    let out = replay(&[&missing]);
    let err = text(&out.stderr);
    assert_refused(&out, &[r"no\u{1b}[31mthere\n.jsonl: no such file"]);
    assert!(!err.contains('\u{1b}'), "{err:?}");
    assert_eq!(err.lines().count(), 1, "one line: {err:?}");
}

/// A trace line quoted back in an error (up to a megabyte of it) is cut
/// to its start and end: the error is one readable line, with the file,
/// the line and the reason.
#[test]
fn a_huge_quoted_value_is_cut_in_the_error() {
    let op = "A".repeat(1_000_000);
    let (_, out) = replay_lines("errors-huge", &[&format!(r#"{{"op":"{op}","id":1}}"#)]);
    assert_refused(
        &out,
        &[
            "bad.jsonl: line 2: unknown op \"AAAA",
            "characters left out",
        ],
    );
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "one line");
    assert!(err.trim_end().ends_with("AAAA\""), "its end is kept");
    assert!(
        err.chars().count() <= "streamcore: \n".len() + streamcore_cli::text::MAX_ERROR_CHARS,
        "{} characters",
        err.chars().count()
    );
}
