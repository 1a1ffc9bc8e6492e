//! `scripts/torch_replay.py`'s input checks, which run before PyTorch is
//! imported (so they hold on any machine with `python3`): a trace is
//! checked by the rules `streamcore replay` applies, and refused with the
//! same line and reason.

use std::path::Path;
use std::process::{Command, Output};

mod common;

use common::{has_python, scratch, script, streamcore, text};

fn torch_replay(paths: &[&Path]) -> Output {
    Command::new("python3")
        .arg(script("torch_replay.py"))
        .args(paths)
        .output()
        .expect("run python3")
}

#[test]
fn a_trace_that_does_not_parse_is_reported_once_by_its_path() {
    if !has_python("torch_replay.py") {
        return;
    }
    let dir = scratch("bad-traces");
    let unknown = dir.join("unknown_free.jsonl");
    std::fs::write(&unknown, "{\"header\": {}}\n{\"op\":\"free\",\"id\":3}\n").unwrap();
    let broken = dir.join("broken.jsonl");
    std::fs::write(&broken, "{\"op\":\"alloc\",\"id\":1,\"size\":\n").unwrap();
    let out = torch_replay(&[&unknown, &broken]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "bad input is exit 1:\n{err}");
    assert!(!err.contains("SKIPPED"), "inputs are checked first:\n{err}");
    for (path, says) in [
        (&unknown, "line 2: free of id 3, which is not live"),
        (&broken, "line 1: no trace header (Expecting value"),
    ] {
        let p = path.to_str().unwrap();
        let lines: Vec<&str> = err.lines().filter(|l| l.contains(p)).collect();
        assert_eq!(lines.len(), 1, "{p} reported once:\n{err}");
        assert_eq!(
            lines[0].matches(p).count(),
            1,
            "the path once: {}",
            lines[0]
        );
        assert!(lines[0].contains(says), "{}", lines[0]);
    }
    assert!(text(&out.stdout).is_empty(), "no table for no trace");
}

/// Each trace `streamcore replay` refuses, the script refuses too, at the
/// same line and for the same reason, instead of replaying something else
/// (a negative stream read from the end, a repeated id overwriting a live
/// tensor, an unknown op skipped, a float size cut to an integer).
#[test]
fn traces_streamcore_refuses_are_refused_at_the_same_line() {
    if !has_python("torch_replay.py") {
        return;
    }
    let header = "{\"header\": {}}";
    let alloc = r#"{"op":"alloc","id":1,"size":4096,"stream":0}"#;
    let cases: Vec<(&str, String, &str)> = vec![
        ("no-header", alloc.to_owned(), "line 1: no trace header"),
        (
            "empty",
            String::new(),
            "line 1: no trace header (the trace is empty)",
        ),
        (
            "negative-size",
            format!("{header}\n{}", alloc.replace("4096", "-1")),
            "line 2: \"size\" is -1, a negative number",
        ),
        (
            "float-size",
            format!("{header}\n{}", alloc.replace("4096", "12.5")),
            "line 2: \"size\" is 12.5, not",
        ),
        (
            "string-size",
            format!("{header}\n{}", alloc.replace("4096", "\"12\"")),
            "line 2: \"size\" is \"12\", not",
        ),
        (
            "zero-size",
            format!("{header}\n{}", alloc.replace("4096", "0")),
            "line 2: id 1 has size 0",
        ),
        (
            "huge-size",
            format!(
                "{header}\n{}",
                alloc.replace("4096", "18446744073709551615")
            ),
            "line 2: id 1 has size 18446744073709551615, above the",
        ),
        (
            "negative-stream",
            format!(
                "{header}\n{}",
                alloc.replace("\"stream\":0", "\"stream\":-1")
            ),
            "line 2: \"stream\" is -1, a negative number",
        ),
        (
            "no-stream",
            format!("{header}\n{}", alloc.replace(",\"stream\":0", "")),
            "line 2: missing \"stream\"",
        ),
        (
            "stream-order",
            format!(
                "{header}\n{}",
                alloc.replace("\"stream\":0", "\"stream\":3")
            ),
            "line 2: stream 3 is used before stream 0",
        ),
        (
            "duplicate-id",
            format!("{header}\n{alloc}\n\n{alloc}"),
            "line 4: alloc of id 1, which is already live",
        ),
        (
            "double-free",
            format!(
                "{header}\n{alloc}\n{{\"op\":\"free\",\"id\":1}}\n{{\"op\":\"free\",\"id\":1}}"
            ),
            "line 4: free of id 1, which is not live",
        ),
        (
            "unknown-op",
            format!("{header}\n{}", alloc.replace("alloc", "ALLOC")),
            "line 2: unknown op \"ALLOC\"",
        ),
        (
            "not-an-object",
            format!("{header}\n[1, 2]"),
            "line 2: not a JSON object",
        ),
        (
            "header-count",
            format!("{{\"header\": {{\"events\": 3}}}}\n{alloc}"),
            "line 1: the header announces 3 events, the trace has 1",
        ),
        (
            "header-peaks",
            format!(
                "{{\"header\": {{\"peak_reserved_bytes\": 1, \"peak_allocated_bytes\": 2}}}}\n{alloc}"
            ),
            "line 1: the header's \"peak_reserved_bytes\" (1) is below its \"peak_allocated_bytes\" (2)",
        ),
    ];
    let dir = scratch("same-rules");
    let mut paths = Vec::new();
    for (name, body, _) in &cases {
        let path = dir.join(format!("{name}.jsonl"));
        std::fs::write(&path, body).unwrap();
        paths.push(path);
    }
    let refs: Vec<&Path> = paths.iter().map(|p| p.as_path()).collect();
    let out = torch_replay(&refs);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(!err.contains("Traceback"), "{err}");
    for ((_, _, says), path) in cases.iter().zip(&paths) {
        let p = path.to_str().unwrap();
        let line = err
            .lines()
            .find(|l| l.contains(p))
            .unwrap_or_else(|| panic!("{p} not reported:\n{err}"));
        assert!(line.starts_with(&format!("torch_replay: {p}: ")), "{line}");
        assert_eq!(line.matches(p).count(), 1, "the path once: {line}");
        assert!(line.contains(says), "{line}\nwanted {says}");
        // `streamcore replay` refuses it at the same line.
        let ours = streamcore(["replay".as_ref(), path.as_os_str()]);
        let ours_err = text(&ours.stderr);
        assert_eq!(ours.status.code(), Some(1), "{ours_err}");
        let at = says.split(':').next().unwrap();
        assert!(ours_err.contains(&format!("{p}: {at}:")), "{ours_err}");
    }
}

/// Damaged gzip files are called damaged (not the lines a corrupt stream
/// decoded to), and a gzip trace is read as gzip whatever its name.
#[test]
fn gzip_files_are_told_apart_by_their_bytes() {
    if !has_python("torch_replay.py") {
        return;
    }
    let dir = scratch("gzip");
    let whole = std::fs::read(common::trace("gpt2_train")).unwrap();
    let cut = dir.join("cut.jsonl.gz");
    std::fs::write(&cut, &whole[..whole.len() / 2]).unwrap();
    let mut damaged_bytes = whole.clone();
    let mid = whole.len() / 2;
    for b in &mut damaged_bytes[mid..mid + 64] {
        *b ^= 0x5a;
    }
    let damaged = dir.join("damaged.jsonl.gz");
    std::fs::write(&damaged, damaged_bytes).unwrap();
    let mut trailing_bytes = whole.clone();
    trailing_bytes.extend_from_slice(b"garbage after the end\n");
    let trailing = dir.join("trailing.jsonl.gz");
    std::fs::write(&trailing, trailing_bytes).unwrap();
    let out = torch_replay(&[&cut, &damaged, &trailing]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    for (path, says) in [
        (&cut, "the gzip data ends early"),
        (&damaged, "corrupt gzip data"),
        (
            &trailing,
            "bytes that are not gzip after the end of the gzip data",
        ),
    ] {
        let want = format!("{}: {says}", path.display());
        assert!(err.contains(&want), "missing {want:?} in:\n{err}");
    }
    // The same gzip trace under a plain name loads (no "not UTF-8").
    let misnamed = dir.join("misnamed.jsonl");
    std::fs::write(&misnamed, &whole).unwrap();
    let name = load_name(&misnamed);
    assert_eq!(name, "gpt2_train");
}

/// The name a trace is reported under (`load`'s first value), from the
/// script itself.
fn load_name(path: &Path) -> String {
    let out = Command::new("python3")
        .arg("-c")
        .arg("import sys; sys.path.insert(0, sys.argv[1]); import torch_replay; print(torch_replay.load(sys.argv[2])[0])")
        .arg(script("torch_replay.py").parent().unwrap())
        .arg(path)
        // Nothing written beside the script (no __pycache__).
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("run python3");
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout).trim_end_matches('\n').to_owned()
}

/// The trace's name is one column of the output, whatever its header or
/// file name holds, as `streamcore replay --platform hip` writes it; and
/// taken up to the file name's first dot, as streamcore takes it.
#[test]
fn the_name_is_one_column() {
    if !has_python("torch_replay.py") {
        return;
    }
    let dir = scratch("names");
    let alloc = r#"{"op":"alloc","id":1,"size":4096,"stream":0}"#;
    let named = dir.join("named.jsonl");
    std::fs::write(
        &named,
        format!("{{\"header\": {{\"workload\": \"my model\\tv2\"}}}}\n{alloc}\n"),
    )
    .unwrap();
    assert_eq!(load_name(&named), "my_model_v2");
    let unnamed = dir.join("my run.v2.jsonl.gz");
    std::fs::write(&unnamed, format!("{{\"header\": {{}}}}\n{alloc}\n")).unwrap();
    assert_eq!(load_name(&unnamed), "my_run");
}
