//! `streamcore replay` run as a process: on the bundled traces, with each
//! output, and on each kind of bad input (a clear message and exit status
//! 1, never a panic).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use streamcore_mock::replay::json::{self, Value};

fn traces() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/traces")
}

fn trace(name: &str) -> PathBuf {
    traces().join(format!("{name}.jsonl.gz"))
}

/// A fresh scratch folder for one test.
fn scratch(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("replay-{test}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch folder");
    dir
}

fn streamcore(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_streamcore"))
        .args(args)
        .output()
        .expect("run streamcore")
}

fn replay(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    let mut all: Vec<&std::ffi::OsStr> = vec!["replay".as_ref()];
    all.extend(args.iter().map(|a| a.as_ref()));
    streamcore(&all)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn json_lines(out: &Output) -> Vec<Value> {
    text(&out.stdout)
        .lines()
        .map(|l| json::parse(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn u(v: &Value, key: &str) -> u64 {
    v.get(key)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("no integer {key:?} in {v:?}"))
}

fn f(v: &Value, key: &str) -> f64 {
    match v.get(key) {
        Some(Value::Number(x)) => *x,
        Some(Value::UInt(n)) => *n as f64,
        other => panic!("no number {key:?}: {other:?}"),
    }
}

/// A bad input: exit status 1 (not a panic's 101), one clear message.
fn assert_refused(out: &Output, needles: &[&str]) {
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {err}");
    assert!(
        !err.contains("panicked") && !err.contains("backtrace"),
        "{err}"
    );
    assert!(err.starts_with("streamcore: "), "{err}");
    for n in needles {
        assert!(err.contains(n), "missing {n:?} in: {err}");
    }
}

#[test]
fn a_bundled_trace_gets_a_table_beside_pytorchs_figures() {
    let out = replay(&[&trace("two_stream_pipeline")]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for needle in [
        "two_stream_pipeline.jsonl.gz",
        "layout balanced",
        "this replay",
        "PyTorch, recorded",
        "not a replay of these events",
        "events                            968",
        "streams                             2",
        "peak reserved",
        "peak live",
        "reserved / live",
        // PyTorch's own figures from the header: 1.53 GB / 0.40 GB.
        "1.42 GiB",
        "385.00 MiB",
        "3.7922",
        "storage allocations",
        "time per op",
        "65.00 MiB PyTorch held before the recording began",
    ] {
        assert!(stdout.contains(needle), "missing {needle:?} in:\n{stdout}");
    }
    // One trace: no overview table.
    assert!(!stdout.contains("ns/op"), "{stdout}");
}

#[test]
fn several_traces_get_an_overview_row_each() {
    let out = replay(&[&trace("gpt2_train"), &trace("two_stream_pipeline")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let overview: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("trace "))
        .collect();
    assert!(overview.len() >= 3, "{stdout}");
    assert!(overview[0].contains("ns/op") && overview[0].contains("recorded"));
    assert!(
        stdout.contains(
            "recorded: PyTorch's own peak reserved / peak allocated in the recorded program"
        ),
        "{stdout}"
    );
    assert!(overview[1].starts_with("gpt2_train ") && overview[1].contains("9,489"));
    assert!(
        overview[1].contains("1.0466"),
        "the recorded run's ratio: {}",
        overview[1]
    );
    assert!(overview[2].starts_with("two_stream_pipeline ") && overview[2].contains("3.7922"));
}

#[test]
fn json_gives_one_object_per_trace_with_the_issue_keys() {
    let names = [
        "gpt2_train",
        "resnet50_train",
        "llama_decode",
        "two_stream_pipeline",
    ];
    let paths: Vec<PathBuf> = names.iter().map(|n| trace(n)).collect();
    let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"--json"];
    args.extend(paths.iter().map(|p| p as &dyn AsRef<std::ffi::OsStr>));
    let out = replay(&args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let objects = json_lines(&out);
    assert_eq!(objects.len(), names.len());
    // (events, streams, PyTorch peak reserved, PyTorch peak allocated) from
    // the headers (tests/traces/README.md).
    let expected = [
        (9_489, 1, 8_082_423_808u64, 7_722_708_480u64),
        (7_374, 1, 3_571_449_856, 3_215_763_456),
        (328_246, 1, 899_678_208, 490_733_568),
        (968, 2, 1_530_920_960, 403_702_272),
    ];
    for ((v, name), (events, streams, torch_r, torch_a)) in objects.iter().zip(names).zip(expected)
    {
        let path = v.get("trace").and_then(Value::as_str).unwrap();
        assert!(path.ends_with(&format!("{name}.jsonl.gz")), "{path}");
        assert_eq!(u(v, "events"), events, "{name}");
        assert_eq!(u(v, "streams"), streams, "{name}");
        assert_eq!(
            u(v, "recorded_torch_peak_reserved_bytes"),
            torch_r,
            "{name}"
        );
        assert_eq!(
            u(v, "recorded_torch_peak_allocated_bytes"),
            torch_a,
            "{name}"
        );
        let (reserved, live) = (u(v, "peak_reserved_bytes"), u(v, "peak_live_bytes"));
        assert!(reserved >= live && live > 0, "{name}: {reserved} < {live}");
        let ratio = f(v, "ratio");
        assert!(
            (ratio - reserved as f64 / live as f64).abs() < 1e-5,
            "{name}"
        );
        let torch_ratio = f(v, "recorded_torch_ratio");
        assert!((torch_ratio - torch_r as f64 / torch_a as f64).abs() < 1e-5);
        assert!(u(v, "storage_allocs") > 0, "{name}");
        assert!(f(v, "ns_per_op") > 0.0, "{name}");
    }
}

#[test]
fn plain_jsonl_without_pytorch_figures() {
    let dir = scratch("plain");
    let path = dir.join("small.jsonl");
    std::fs::write(
        &path,
        [
            r#"{"header": {"workload": "small"}}"#,
            r#"{"op":"alloc","id":7,"size":1048576,"stream":0}"#,
            r#"{"op":"alloc","id":8,"size":3000,"stream":1}"#,
            "",
            r#"{"op":"free","id":7}"#,
            r#"{"op":"alloc","id":7,"size":524288,"stream":0}"#,
            r#"{"op":"free","id":8}"#,
            r#"{"op":"free","id":7}"#,
        ]
        .join("\n"),
    )
    .unwrap();
    let out = replay(&[&"--json", &path]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v = &json_lines(&out)[0];
    assert_eq!(u(v, "events"), 6);
    assert_eq!(u(v, "streams"), 2);
    assert_eq!(u(v, "allocs"), 3);
    assert_eq!(u(v, "peak_live_bytes"), 1_048_576 + 3000);
    assert_eq!(v.get("workload").and_then(Value::as_str), Some("small"));
    for key in [
        "recorded_torch_peak_reserved_bytes",
        "recorded_torch_peak_allocated_bytes",
    ] {
        assert!(v.get(key).is_none(), "{key} without a header figure");
    }
    let table = replay(&[&path]);
    assert!(table.status.success());
    assert!(!text(&table.stdout).contains("PyTorch"));
}

/// The points of a polyline.
fn points(node: roxmltree::Node<'_, '_>) -> Vec<(f64, f64)> {
    node.attribute("points")
        .unwrap_or("")
        .split_whitespace()
        .map(|p| {
            let (x, y) = p.split_once(',').expect("x,y");
            (x.parse().unwrap(), y.parse().unwrap())
        })
        .collect()
}

#[test]
fn svg_is_well_formed_and_holds_the_expected_series() {
    let dir = scratch("svg");
    let svg = dir.join("gpt2.svg");
    let out = replay(&[&"--json", &"--svg", &svg, &trace("gpt2_train")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v = &json_lines(&out)[0];
    assert_eq!(
        v.get("svg").and_then(Value::as_str).map(PathBuf::from),
        Some(svg.clone())
    );
    let body = std::fs::read_to_string(&svg).expect("the plot was written");
    let doc = roxmltree::Document::parse(&body).expect("well-formed XML");
    assert_eq!(doc.root_element().tag_name().name(), "svg");

    let texts: Vec<String> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text().map(|t| t.trim().to_owned()))
        .collect();
    for label in [
        "streamcore reserved (this replay)",
        "live (the trace's own bytes)",
        "PyTorch peak reserved (recorded run)",
        "PyTorch peak allocated (recorded run)",
        "event",
        "bytes (GiB)",
    ] {
        assert!(
            texts.iter().any(|t| t == label),
            "no {label:?} in {texts:?}"
        );
    }
    assert!(
        texts.iter().any(|t| t.starts_with("gpt2_train: ")),
        "caption"
    );

    // Each series by its colour: the longest polyline of that stroke (the
    // legend's sample is a short one of the same colour).
    let series = |stroke: &str| -> Vec<Vec<(f64, f64)>> {
        doc.descendants()
            .filter(|n| n.has_tag_name("polyline") && n.attribute("stroke") == Some(stroke))
            .map(points)
            .collect()
    };
    let longest = |stroke: &str| {
        series(stroke)
            .into_iter()
            .max_by_key(Vec::len)
            .unwrap_or_else(|| panic!("no polyline of {stroke}"))
    };
    let reserved = longest("#1F77B4");
    let live = longest("#2CA02C");
    assert!(reserved.len() > 100 && live.len() > 100);
    // x: event index, left to right over the whole trace.
    assert!(reserved.windows(2).all(|w| w[0].0 <= w[1].0));
    let (x0, x1) = (reserved[0].0, reserved[reserved.len() - 1].0);
    assert!(x1 - x0 > 800.0, "the line spans the plot: {x0}..{x1}");
    // y grows downwards; the first point is (event 0, 0 bytes).
    let bottom = reserved[0].1;
    let top = |line: &[(f64, f64)]| line.iter().map(|p| p.1).fold(f64::MAX, f64::min);
    assert!(top(&reserved) <= top(&live), "reserved covers live");
    // PyTorch's peaks: dashed horizontal reference lines.
    let torch_r = series("#D62728");
    let torch_a = series("#FF7F0E");
    assert!(torch_r.len() > 5 && torch_a.len() > 5, "dashed");
    let level = |dashes: &[Vec<(f64, f64)>]| {
        let ys: Vec<f64> = dashes
            .iter()
            .filter(|d| d.len() >= 2)
            .flatten()
            .map(|p| p.1)
            .collect();
        let y = ys[ys.len() / 2];
        assert!(
            ys.iter().filter(|&&v| v == y).count() * 10 >= ys.len() * 9,
            "flat"
        );
        y
    };
    let (y_r, y_a) = (level(&torch_r), level(&torch_a));
    assert!(y_r < y_a, "PyTorch reserved is above its allocated");
    // The heights agree with the figures the replay reported.
    let height = |y: f64| bottom - y;
    let ours = height(top(&reserved)) / height(y_r);
    let want =
        u(v, "peak_reserved_bytes") as f64 / u(v, "recorded_torch_peak_reserved_bytes") as f64;
    assert!((ours - want).abs() < 0.01, "{ours} vs {want}");
}

#[test]
fn svg_with_several_traces_writes_one_file_each() {
    let dir = scratch("svg-several");
    let out = replay(&[
        &"--svg",
        &dir.join("plot.svg"),
        &trace("two_stream_pipeline"),
        &trace("resnet50_train"),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for name in ["plot-two_stream_pipeline.svg", "plot-resnet50_train.svg"] {
        let body = std::fs::read_to_string(dir.join(name)).expect(name);
        roxmltree::Document::parse(&body).expect("well-formed XML");
    }
    assert!(!dir.join("plot.svg").exists());
}

#[test]
fn layouts_by_preset_and_by_file() {
    let dir = scratch("layouts");
    let t = trace("two_stream_pipeline");
    let mut storage_allocs = Vec::new();
    for preset in ["balanced", "exclusive-pages", "sliced"] {
        let out = replay(&[&"--json", &"--layout", &preset, &t]);
        assert!(out.status.success(), "{preset}: {}", text(&out.stderr));
        let v = &json_lines(&out)[0];
        assert_eq!(v.get("layout").and_then(Value::as_str), Some(preset));
        storage_allocs.push(u(v, "storage_allocs"));
    }
    assert!(
        storage_allocs[2] < storage_allocs[1],
        "sliced pages serve many requests each: {storage_allocs:?}"
    );

    let file = dir.join("layout.json");
    std::fs::write(
        &file,
        r#"{"pools": [
              {"kind": "small", "page_size": "1 MiB", "max_slice": "1 KiB"},
              {"kind": "exclusive", "max_slice": "1 GiB"}],
            "policy": {"release_idle_after": 64}}"#,
    )
    .unwrap();
    let out = replay(&[&"--json", &"--layout", &file, &t]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(u(&json_lines(&out)[0], "events"), 968);

    // Refused layouts: the layout's own typed error, before any trace.
    std::fs::write(
        &file,
        r#"{"pools": [{"kind": "sliced", "page_size": "1 MiB", "max_slice": "2 MiB"}]}"#,
    )
    .unwrap();
    let out = replay(&[&"--layout", &file, &t]);
    assert_refused(
        &out,
        &["pool 0: largest slice 2097152 B exceeds its page size"],
    );
    assert!(out.stdout.is_empty());
    std::fs::write(&file, r#"{"pools": [{"kind": "sliced", "max_slice": 1}]}"#).unwrap();
    assert_refused(
        &replay(&[&"--layout", &file, &t]),
        &["pools[0]: missing \"page_size\""],
    );
    assert_refused(
        &replay(&[&"--layout", &"tiny", &t]),
        &["--layout tiny: no such preset or file", "exclusive-pages"],
    );
}

#[test]
fn layouts_that_do_not_fit_the_device_are_refused_before_the_first_event() {
    let dir = scratch("layouts-device");
    let t = trace("two_stream_pipeline");
    let file = dir.join("layout.json");
    // The bad layouts of the memory issue, and what each line must name.
    let cases = [
        (
            r#"{"pools": [{"kind": "sliced", "page_size": 18446744073709551615, "max_slice": "1 MiB"}]}"#,
            "pool 0",
        ),
        (
            r#"{"alignment": 9223372036854775808, "pools": [{"kind": "exclusive", "max_slice": "1 GiB"}]}"#,
            "alignment",
        ),
        (
            r#"{"pools": [{"kind": "sliced", "page_size": "1 TiB", "max_slice": "1 MiB"}]}"#,
            "pool 0 (sliced): page size 1.00 TiB",
        ),
        (
            r#"{"pools": [{"kind": "exclusive", "max_slice": "200 TiB"}]}"#,
            "pool 0 (exclusive): largest page 200.00 TiB",
        ),
    ];
    for (layout, needle) in cases {
        std::fs::write(&file, layout).unwrap();
        let out = replay(&[&"--layout", &file, &t]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{layout}: {err}");
        assert_eq!(err.lines().count(), 1, "{layout}: one line: {err}");
        assert!(
            err.contains("layout file") && err.contains(needle),
            "{layout}: {err}"
        );
        assert!(
            !err.contains("event"),
            "{layout}: refused before the replay: {err}"
        );
        assert!(!err.contains("panicked"), "{layout}: {err}");
        assert!(out.stdout.is_empty(), "{layout}: no table");
    }
    // The ones the layout's own rules accept say what does not fit.
    std::fs::write(&file, cases[2].0).unwrap();
    let err = text(&replay(&[&"--layout", &file, &t]).stderr);
    assert!(
        err.contains("is larger than the device's largest page, 32.82 GiB"),
        "{err}"
    );
}

#[test]
fn svg_into_a_file_not_named_svg_is_a_usage_error() {
    let dir = scratch("svg-png");
    let png = dir.join("out.png");
    let out = replay(&[&"--svg", &png, &trace("two_stream_pipeline")]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("ending in .svg"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!png.exists(), "nothing written under a bitmap's name");
    assert!(out.stdout.is_empty());
}

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
        &[
            "line 2: \"size\" is",
            "above the largest integer a trace holds (2^64 - 1)",
        ],
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

#[test]
fn no_trace_is_a_usage_error() {
    let out = replay(&[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("<TRACE>"));
}

#[test]
fn help_documents_the_layout_file_and_the_outputs() {
    let out = replay(&[&"--help"]);
    assert!(out.status.success());
    let help = text(&out.stdout);
    for needle in [
        "--json",
        "--svg <FILE>",
        "--layout <PRESET|FILE>",
        "balanced, exclusive-pages, sliced",
        "Layout files",
        "\"max_slice\"",
        "release_idle_after",
        "141,000,000,000 B (131.32 GiB)",
        "checked against it before the first event",
        "labels them \"PyTorch, recorded\"",
        "not a replay",
        "recorded_torch_",
        "binary units",
        "must end in `.svg`",
    ] {
        assert!(help.contains(needle), "missing {needle:?} in:\n{help}");
    }
}

#[cfg(feature = "hip")]
#[test]
fn hip_without_a_runtime_says_so_in_one_line() {
    let empty = Path::new(env!("CARGO_TARGET_TMPDIR")).join("no-rocm-replay");
    std::fs::create_dir_all(empty.join("lib")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_streamcore"))
        .args(["replay", "--platform", "hip"])
        .arg(trace("two_stream_pipeline"))
        .env("ROCM_PATH", &empty)
        .env("HIP_PATH", &empty)
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .expect("run streamcore");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(
        err.starts_with("streamcore: --platform hip: no HIP runtime found"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}

#[cfg(not(feature = "hip"))]
#[test]
fn hip_in_a_build_without_it_says_so_in_one_line() {
    let out = replay(&[&"--platform", &"hip", &trace("two_stream_pipeline")]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.contains("built without HIP support"), "{err}");
}
