//! The trace loader: gzip and plain files, malformed and inconsistent
//! traces, each refused with a typed error that says where.

use super::*;

#[test]
fn loads_gzip_and_plain_alike() {
    let text = lines(&[
        r#"{"op":"alloc","id":7,"size":1000,"stream":0}"#,
        r#"{"op":"alloc","id":9,"size":24,"stream":1}"#,
        r#"{"op":"free","id":7}"#,
        r#"{"op":"alloc","id":7,"size":5,"stream":0}"#,
    ]);
    let plain = parse(&text).unwrap();
    let gz_path = temp_path("t.jsonl.gz");
    std::fs::write(&gz_path, gzip(&text)).unwrap();
    let gz = Trace::load(&gz_path).unwrap();
    assert_eq!(plain, gz);
    assert_eq!(plain.header.workload, "unit");
    assert_eq!(plain.header.recorder_ratio(), Some(1.5));
    // Id 7 freed, then allocated again: its slot is reused.
    assert_eq!((plain.slots, plain.streams), (2, 2));
    assert_eq!(
        plain.events,
        vec![
            TraceEvent::Alloc {
                slot: 0,
                size: 1000,
                stream: 0
            },
            TraceEvent::Alloc {
                slot: 1,
                size: 24,
                stream: 1
            },
            TraceEvent::Free { slot: 0 },
            TraceEvent::Alloc {
                slot: 0,
                size: 5,
                stream: 0
            },
        ]
    );
}

#[test]
fn missing_file_and_broken_gzip_are_typed() {
    let missing = temp_path("does-not-exist.jsonl.gz");
    assert!(matches!(
        Trace::load(&missing),
        Err(TraceError::NotFound { .. })
    ));
    let mut events = Vec::new();
    for i in 0..500 {
        events.push(std::format!(
            r#"{{"op":"alloc","id":{i},"size":{},"stream":0}}"#,
            512 + i
        ));
    }
    let refs: Vec<&str> = events.iter().map(String::as_str).collect();
    let full = gzip(&lines(&refs));
    let cut = temp_path("cut.jsonl.gz");
    std::fs::write(&cut, &full[..full.len() / 2]).unwrap();
    let e = Trace::load(&cut).unwrap_err();
    assert!(matches!(e, TraceError::TruncatedGzip { .. }), "{e:?}");
    assert!(std::format!("{e}").contains("truncated"), "{e}");
    let mut bad = full.clone();
    flip(&mut bad[20..60]);
    let bad_path = temp_path("bad.jsonl.gz");
    std::fs::write(&bad_path, &bad).unwrap();
    assert_damaged(&Trace::load(&bad_path).unwrap_err());
}

/// Flips the bits of `bytes` (damaged data).
fn flip(bytes: &mut [u8]) {
    for b in bytes {
        *b ^= 0x5a;
    }
}

/// A damaged gzip stream is refused as bad or truncated.
fn assert_damaged(e: &TraceError) {
    assert!(
        matches!(
            e,
            TraceError::BadGzip { .. } | TraceError::TruncatedGzip { .. }
        ),
        "{e:?}"
    );
}

#[test]
fn malformed_lines_name_the_line_and_the_reason() {
    let cases: [(&str, usize, &str); 13] = [
        (r#"{"op":"alloc","id":1,"size":10"#, 2, "unexpected end"),
        (
            r#"{"op":"alloc","id":1,"size":-0,"stream":0}"#,
            2,
            "\"size\" is -0, written with a minus sign",
        ),
        (
            r#"{"op":"alloc","id":1,"size":16,"stream":1024}"#,
            2,
            "stream 1024 is past the last a trace may use (1023)",
        ),
        (r#"{"op":"alloc","id":1,"stream":0}"#, 2, "missing \"size\""),
        (
            r#"{"op":"alloc","id":1,"size":-4,"stream":0}"#,
            2,
            "\"size\" is -4, a negative number",
        ),
        (
            r#"{"op":"alloc","id":1,"size":18446744073709551616,"stream":0}"#,
            2,
            "above the largest integer, 2^64 - 1",
        ),
        (
            r#"{"op":"alloc","id":1,"size":1.5,"stream":0}"#,
            2,
            "\"size\" is 1.5, not a whole number",
        ),
        (
            r#"{"op":"alloc","id":1,"size":1e3,"stream":0}"#,
            2,
            "\"size\" is 1000, written with a decimal point or an exponent",
        ),
        (
            r#"{"op":"alloc","id":1,"size":4096.0,"stream":0}"#,
            2,
            "written with a decimal point or an exponent",
        ),
        (
            r#"{"op":"alloc","id":1,"size":1000,"size":5000,"stream":0}"#,
            2,
            "the key \"size\" appears twice",
        ),
        (r#"{"op":"grow","id":1}"#, 2, "unknown op \"grow\""),
        (r#"{"id":1}"#, 2, "missing \"op\""),
        (
            r#"{"op":"alloc","id":1,"size":4,"stream":5000}"#,
            2,
            "stream 5000",
        ),
    ];
    for (line, at, why) in cases {
        match parse(&lines(&[line])) {
            Err(TraceError::MalformedLine { line: l, why: w }) => {
                assert_eq!(l, at, "{line}");
                assert!(w.contains(why), "{line}: {w}");
            }
            other => panic!("{line}: {other:?}"),
        }
    }
    let e = parse(&lines(&[
        r#"{"op":"alloc","id":1,"size":4,"stream":0}"#,
        "not json",
    ]))
    .unwrap_err();
    assert!(std::format!("{e}").starts_with("line 3: "), "{e}");
}

#[test]
fn semantic_errors_are_typed() {
    assert!(matches!(
        parse(&lines(&[r#"{"op":"free","id":4}"#])),
        Err(TraceError::UnknownFree { line: 2, id: 4 })
    ));
    assert!(matches!(
        parse(&lines(&[
            r#"{"op":"alloc","id":4,"size":8,"stream":0}"#,
            r#"{"op":"alloc","id":4,"size":8,"stream":0}"#
        ])),
        Err(TraceError::DuplicateId { line: 3, id: 4 })
    ));
    assert!(matches!(
        parse(&lines(&[r#"{"op":"alloc","id":4,"size":0,"stream":0}"#])),
        Err(TraceError::ZeroSize { line: 2, id: 4 })
    ));
    assert!(matches!(
        parse(&lines(&[
            r#"{"op":"alloc","id":4,"size":99999999999999999,"stream":0}"#
        ])),
        Err(TraceError::AbsurdSize { line: 2, id: 4, .. })
    ));
    assert!(matches!(parse(""), Err(TraceError::MissingHeader { .. })));
    assert!(matches!(
        parse(r#"{"op":"alloc","id":4,"size":8,"stream":0}"#),
        Err(TraceError::MissingHeader { .. })
    ));
    assert!(matches!(
        parse(r#"{"header": 3}"#),
        Err(TraceError::MissingHeader { .. })
    ));
}

#[test]
fn streams_are_numbered_in_order_of_first_use() {
    let ok = parse(&lines(&[
        r#"{"op":"alloc","id":1,"size":8,"stream":0}"#,
        r#"{"op":"alloc","id":2,"size":8,"stream":1}"#,
        r#"{"op":"alloc","id":3,"size":8,"stream":0}"#,
    ]))
    .unwrap();
    assert_eq!(ok.streams, 2);
    let e = parse(&lines(&[r#"{"op":"alloc","id":1,"size":8,"stream":5}"#])).unwrap_err();
    assert!(
        matches!(
            e,
            TraceError::StreamOutOfOrder {
                line: 2,
                stream: 5,
                expected: 0
            }
        ),
        "{e:?}"
    );
    let e = parse(&lines(&[
        r#"{"op":"alloc","id":1,"size":8,"stream":0}"#,
        r#"{"op":"alloc","id":2,"size":8,"stream":2}"#,
    ]))
    .unwrap_err();
    assert!(
        std::format!("{e}").contains("stream 2 is used before stream 1"),
        "{e}"
    );
}

/// The header's event count sizes the events' array at once (no doubling
/// past it); a count that cannot be true (past what is reserved up front)
/// reserves nothing and is still refused as a mismatch, in bounded memory.
#[test]
fn the_announced_event_count_sizes_the_array() {
    let mut events = Vec::new();
    for i in 0..1000 {
        events.push(std::format!(
            r#"{{"op":"alloc","id":{i},"size":8,"stream":0}}"#
        ));
        events.push(std::format!(r#"{{"op":"free","id":{i}}}"#));
    }
    let body = events.join("\n");
    let with = |header: &str| parse(&std::format!("{header}\n{body}\n"));
    let t = with(r#"{"header": {"events": 2000}}"#).unwrap();
    assert_eq!(t.events.len(), 2000);
    assert_eq!(t.events.capacity(), 2000);
    // With no count the array grows by doubling: more room than events.
    let t = with(r#"{"header": {"workload": "w"}}"#).unwrap();
    assert!(t.events.capacity() > 2000, "{}", t.events.capacity());
    for lie in [1u64 << 29, 1 << 40, u64::MAX] {
        let e = with(&std::format!(r#"{{"header": {{"events": {lie}}}}}"#)).unwrap_err();
        assert!(
            matches!(e, TraceError::HeaderMismatch { what: "events", header, found: 2000 } if header == lie),
            "{e:?}"
        );
    }
}

#[test]
fn the_headers_counts_must_match_the_trace() {
    let body = [
        r#"{"op":"alloc","id":1,"size":8,"stream":0}"#,
        r#"{"op":"free","id":1}"#,
    ]
    .join("\n");
    let with = |header: &str| parse(&std::format!("{header}\n{body}\n"));
    with(r#"{"header": {"events": 2, "streams": 1}}"#).unwrap();
    let e = with(r#"{"header": {"events": 3, "streams": 1}}"#).unwrap_err();
    assert!(
        matches!(
            e,
            TraceError::HeaderMismatch {
                what: "events",
                header: 3,
                found: 2
            }
        ),
        "{e:?}"
    );
    assert!(
        std::format!("{e}").contains("the header announces 3 events, the trace has 2"),
        "{e}"
    );
    let e = with(r#"{"header": {"events": 2, "streams": 2}}"#).unwrap_err();
    assert!(
        matches!(
            e,
            TraceError::HeaderMismatch {
                what: "streams",
                ..
            }
        ),
        "{e:?}"
    );
}

#[test]
fn gzip_members_trailing_bytes_and_corruption_are_told_apart() {
    let text = lines(&[
        r#"{"op":"alloc","id":1,"size":8,"stream":0}"#,
        r#"{"op":"free","id":1}"#,
    ]);
    let read = |bytes: &[u8]| Trace::read(bytes, Path::new("t.gz"));
    let whole = gzip(&text);
    let want = parse(&text).unwrap();
    assert_eq!(read(&whole).unwrap(), want);

    // Two members, one after the other: one trace.
    let cut = text.find("\n{\"op\":\"free\"").unwrap() + 1;
    let mut two = gzip(&text[..cut]);
    two.extend(gzip(&text[cut..]));
    assert_eq!(read(&two).unwrap(), want);

    // Bytes that are not gzip after the end: short or long, not "truncated".
    for tail in [&b"x"[..], b"xy", b"garbage after the end\n", &[0u8; 100]] {
        let mut bytes = whole.clone();
        bytes.extend_from_slice(tail);
        let e = read(&bytes).unwrap_err();
        assert!(
            matches!(e, TraceError::TrailingData { .. }),
            "{tail:?}: {e:?}"
        );
    }

    // Cut short: truncated.
    let e = read(&whole[..whole.len() - 4]).unwrap_err();
    assert!(matches!(e, TraceError::TruncatedGzip { .. }), "{e:?}");

    // Corrupt in the middle of a long trace: the gzip error, not the
    // garbage lines the damaged data decoded to.
    let mut long = String::from(HEADER);
    for i in 0..20_000u32 {
        long.push_str(&std::format!(
            "\n{{\"op\":\"alloc\",\"id\":{i},\"size\":{},\"stream\":0}}\n{{\"op\":\"free\",\"id\":{i}}}",
            512 * (1 + i % 97)
        ));
    }
    long.push('\n');
    let mut bytes = gzip(&long);
    let mid = bytes.len() / 2;
    flip(&mut bytes[mid..mid + 64]);
    assert_damaged(&read(&bytes).unwrap_err());
}

/// A written trace loads as the same trace: events, slots, streams and the
/// header's figures (a workload name that needs escaping included).
#[test]
fn a_written_trace_loads_back_the_same() {
    let mut t = parse(&lines(&[
        r#"{"op":"alloc","id":0,"size":1000,"stream":0}"#,
        r#"{"op":"alloc","id":1,"size":24,"stream":1}"#,
        r#"{"op":"free","id":0}"#,
        r#"{"op":"free","id":1}"#,
    ]))
    .unwrap();
    t.header.workload = "a \"quoted\" \\ name".into();
    t.header.segment_allocs = Some(3);
    let plain = parse(&t.to_jsonl()).unwrap();
    assert_eq!(plain, t);
    let path = temp_path("written.jsonl.gz");
    t.save(&path).unwrap();
    assert_eq!(Trace::load(&path).unwrap(), t);
    for (name, w) in crate::replay::synthetic::workloads() {
        assert_eq!(parse(&w.to_jsonl()).unwrap().events, w.events, "{name}");
    }
}

/// A header figure that is there but not a non-negative integer (a
/// string, a fraction, a negative number) and a workload that is not a
/// string are refused, not read as absent: the figures are checked against
/// the trace when present.
#[test]
fn header_figures_of_the_wrong_type_are_refused() {
    let cases = [
        (
            r#"{"header": {"events": "1"}}"#,
            "\"events\" is not a non-negative integer",
        ),
        (
            r#"{"header": {"events": 1.5}}"#,
            "\"events\" is 1.5, not a whole number",
        ),
        (
            r#"{"header": {"peak_reserved_bytes": -5}}"#,
            "\"peak_reserved_bytes\" is -5, a negative number",
        ),
        (
            r#"{"header": {"workload": 5}}"#,
            "\"workload\" in the header is not a string",
        ),
    ];
    for (header, why) in cases {
        let text = std::format!(
            "{header}\n{}\n",
            r#"{"op":"alloc","id":1,"size":4,"stream":0}"#
        );
        match parse(&text) {
            Err(TraceError::MalformedLine { line: 1, why: w }) => {
                assert!(w.contains(why), "{header}: {w}");
            }
            other => panic!("{header}: {other:?}"),
        }
    }
    // Absent and null figures are absent.
    let text = std::format!(
        "{}\n{}\n",
        r#"{"header": {"events": null, "workload": "w"}}"#,
        r#"{"op":"alloc","id":1,"size":4,"stream":0}"#
    );
    let t = parse(&text).unwrap();
    assert_eq!(t.header.events, None);
    assert_eq!(t.header.workload, "w");
}

/// A byte-order mark before the header (as some editors save UTF-8) is
/// skipped: the trace loads as it would without it. Elsewhere it is what
/// it is, a character that is not JSON.
#[test]
fn a_byte_order_mark_before_the_header_is_skipped() {
    let text = lines(&[r#"{"op":"alloc","id":1,"size":64,"stream":0}"#]);
    let plain = parse(&text).unwrap();
    let marked = parse(&std::format!("\u{feff}{text}")).unwrap();
    assert_eq!(marked.events, plain.events);
    assert_eq!(marked.header, plain.header);
    let inside = std::format!("{text}\u{feff}{{\"op\":\"free\",\"id\":1}}\n");
    assert!(parse(&inside).is_err());
}

/// A line longer than any trace line (a file of zeros, a gzip bomb) is
/// refused as malformed after at most `MAX_LINE_BYTES + 1` bytes, not read
/// whole into memory; a line just under the limit is read.
#[test]
fn an_endless_line_is_refused_in_bounded_memory() {
    use std::io::Read;
    // An endless reader: were the line read whole this would never end.
    let zeros = std::io::repeat(0);
    let read = std::io::BufReader::new(zeros.take(u64::MAX));
    match Trace::parse_lines(read, Path::new("zeros")) {
        Err(TraceError::MalformedLine { line: 1, why }) => {
            assert!(why.contains("longer than"), "{why}");
        }
        other => panic!("an endless line: {other:?}"),
    }
    // A long event line under the limit (padded with spaces) still loads.
    let pad = " ".repeat(crate::replay::trace::MAX_LINE_BYTES - 100);
    let text = lines(&[&std::format!(
        r#"{{"op":"alloc","id":1,"size":64,"stream":0}}{pad}"#
    )]);
    assert_eq!(parse(&text).unwrap().events.len(), 1);
}

/// Header figures that contradict each other are refused: a recorder's
/// peak reserved is at least its peak allocated, which is at least what it
/// held when the recording began. Equal figures, or one of a pair absent,
/// are fine.
#[test]
fn header_figures_that_contradict_each_other_are_refused() {
    let event = r#"{"op":"alloc","id":1,"size":4,"stream":0}"#;
    for (header, why) in [
        (
            r#"{"header": {"peak_reserved_bytes": 10, "peak_allocated_bytes": 11}}"#,
            r#""peak_reserved_bytes" (10) is below its "peak_allocated_bytes" (11)"#,
        ),
        (
            r#"{"header": {"peak_allocated_bytes": 5, "live_at_start_bytes": 6}}"#,
            r#""peak_allocated_bytes" (5) is below its "live_at_start_bytes" (6)"#,
        ),
    ] {
        match parse(&std::format!("{header}\n{event}\n")) {
            Err(TraceError::MalformedLine { line: 1, why: w }) => {
                assert!(w.contains(why), "{header}: {w}");
            }
            other => panic!("{header}: {other:?}"),
        }
    }
    for header in [
        r#"{"header": {"peak_reserved_bytes": 10, "peak_allocated_bytes": 10, "live_at_start_bytes": 10}}"#,
        r#"{"header": {"peak_reserved_bytes": 10, "live_at_start_bytes": 20}}"#,
        r#"{"header": {"peak_allocated_bytes": 10}}"#,
    ] {
        assert!(
            parse(&std::format!("{header}\n{event}\n")).is_ok(),
            "{header}"
        );
    }
}

/// An event line that is JSON but not an object says so, rather than that
/// it lacks an "op".
#[test]
fn an_event_that_is_not_an_object_says_so() {
    for line in ["[1, 2]", "5", "\"alloc\"", "null"] {
        match parse(&lines(&[line])) {
            Err(TraceError::MalformedLine { line: 2, why }) => {
                assert!(why.starts_with("not a JSON object"), "{line}: {why}");
            }
            other => panic!("{line}: {other:?}"),
        }
    }
}
