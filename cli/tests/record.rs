//! `streamcore record` (the guide, the script) and the converter script
//! end to end: a PyTorch-shaped snapshot → a trace → `streamcore replay`.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use streamcore_mock::replay::json::{self, Value};

mod common;

use common::{has_python, scratch, streamcore, text, u};

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/torch_snapshot_to_trace.py")
}

#[test]
fn record_help_says_how_to_record_from_pytorch() {
    let out = streamcore(["record", "--help"]);
    assert!(out.status.success());
    let help = text(&out.stdout);
    for needle in [
        "torch.cuda.memory._record_memory_history",
        "torch.cuda.memory._snapshot()",
        "_dump_snapshot",
        "`alloc` events",
        "`free_requested` events",
        "scripts/torch_snapshot_to_trace.py",
        "streamcore record --script",
        "{\"op\":\"alloc\",\"id\":N,\"size\":BYTES,\"stream\":S}",
        "{\"op\":\"free\",\"id\":N}",
        "peak_reserved_bytes",
        "streamcore replay trace.jsonl.gz",
    ] {
        assert!(help.contains(needle), "missing {needle:?} in:\n{help}");
    }
    // Plain `streamcore record` prints the same guide.
    let plain = streamcore(["record"]);
    assert!(plain.status.success());
    assert!(text(&plain.stdout).contains("torch.cuda.memory._snapshot()"));
}

#[test]
fn record_script_prints_the_committed_converter() {
    let out = streamcore(["record", "--script"]);
    assert!(out.status.success());
    let committed = std::fs::read_to_string(script()).unwrap();
    assert_eq!(text(&out.stdout), committed);
}

/// `python3`, or `None` (the caller skips, saying so).
fn python() -> Option<&'static str> {
    has_python("the snapshot converter").then_some("python3")
}

/// A snapshot shaped as `torch.cuda.memory._snapshot()` returns it: a
/// block of 4 MiB was live before the history began (and is freed in it),
/// a 20 MiB segment is added, two streams allocate, an address is reused,
/// a 4-byte request takes a 512-byte block.
const SNAPSHOT: &str = r#"{
  "segments": [
    {"device": 0, "address": 4096, "total_size": 4194304, "allocated_size": 0, "stream": 11},
    {"device": 0, "address": 65536, "total_size": 20971520, "allocated_size": 524288, "stream": 11},
    {"device": 1, "address": 0, "total_size": 999999999, "allocated_size": 999999999, "stream": 5}
  ],
  "device_traces": [[
    {"action": "segment_alloc", "addr": 65536, "size": 20971520, "stream": 11, "frames": []},
    {"action": "alloc", "addr": 65536, "size": 1048576, "stream": 11, "frames": [{"filename": "a.py", "line": 1, "name": "f"}]},
    {"action": "alloc", "addr": 2162688, "size": 2097152, "stream": 22, "frames": []},
    {"action": "alloc", "addr": 9999, "size": 4, "stream": 11, "frames": []},
    {"action": "free_requested", "addr": 9999, "size": 4, "stream": 11, "frames": []},
    {"action": "free_completed", "addr": 9999, "size": 4, "stream": 11, "frames": []},
    {"action": "free_requested", "addr": 65536, "size": 1048576, "stream": 11, "frames": []},
    {"action": "free_completed", "addr": 65536, "size": 1048576, "stream": 11, "frames": []},
    {"action": "alloc", "addr": 65536, "size": 524288, "stream": 11, "frames": []},
    {"action": "free_requested", "addr": 4096, "size": 4194304, "stream": 11, "frames": []},
    {"action": "free_completed", "addr": 4096, "size": 4194304, "stream": 11, "frames": []},
    {"action": "free_requested", "addr": 2162688, "size": 2097152, "stream": 22, "frames": []},
    {"action": "free_completed", "addr": 2162688, "size": 2097152, "stream": 22, "frames": []}
  ], []]
}"#;

const MIB: u64 = 1 << 20;

fn convert(python: &str, args: &[&Path], extra: &[&str]) -> Output {
    Command::new(python)
        .arg(script())
        .args(args)
        .args(extra)
        .output()
        .expect("run the converter")
}

/// Runs the Python one-liner `script` with `args` (it writes a file the
/// test needs); fails the test when it fails.
fn run_python(python: &str, script: &str, args: &[&Path]) {
    let made = Command::new(python)
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .expect("run python");
    assert!(made.status.success(), "{}", text(&made.stderr));
}

/// Pickles the JSON snapshot `json` into `pickle`, as `_dump_snapshot`
/// writes one.
fn pickle_json(python: &str, json: &Path, pickle: &Path) {
    run_python(
        python,
        "import json, pickle, sys; pickle.dump(json.load(open(sys.argv[1])), open(sys.argv[2], 'wb'))",
        &[json, pickle],
    );
}

fn replay_json(trace: &Path) -> Value {
    let out = streamcore([
        OsStr::new("replay"),
        OsStr::new("--json"),
        trace.as_os_str(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    json::parse(text(&out.stdout).trim()).unwrap()
}

#[test]
fn the_converter_turns_a_snapshot_into_a_trace_that_replays() {
    let Some(py) = python() else { return };
    let dir = scratch("convert");
    let json_snapshot = dir.join("snap.json");
    std::fs::write(&json_snapshot, SNAPSHOT).unwrap();
    // The pickle, as `_dump_snapshot` writes it.
    let pickled = dir.join("snap.pickle");
    pickle_json(py, &json_snapshot, &pickled);

    let trace = dir.join("snap.jsonl.gz");
    let out = convert(py, &[&pickled, &trace], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("1 frees of blocks allocated before"), "{err}");
    assert!(err.contains("7 events, 2 streams"), "{err}");

    let v = replay_json(&trace);
    assert_eq!(v.get("workload").and_then(Value::as_str), Some("snap"));
    assert_eq!(u(&v, "events"), 7);
    assert_eq!(u(&v, "streams"), 2);
    assert_eq!(u(&v, "allocs"), 4);
    // 1 MiB on one stream and 2 MiB on the other, and a 512-byte block,
    // live together.
    assert_eq!(u(&v, "peak_live_bytes"), 3 * MIB + 512);
    // PyTorch's figures, walked back from the segments held at the end:
    // 4 MiB held before, +20 MiB segment; 4 MiB live before, +3 MiB + 512.
    assert_eq!(u(&v, "recorded_torch_peak_reserved_bytes"), 24 * MIB);
    assert_eq!(u(&v, "recorded_torch_peak_allocated_bytes"), 7 * MIB + 512);
    assert_eq!(u(&v, "recorded_torch_live_at_start_bytes"), 4 * MIB);
    assert_eq!(u(&v, "recorded_torch_segment_allocs"), 1);

    // A JSON snapshot, a plain output and the recorder's own peaks given.
    let plain = dir.join("given.jsonl");
    let out = convert(
        py,
        &[&json_snapshot, &plain],
        &[
            "--workload",
            "given",
            "--peak-reserved",
            "30000000",
            "--peak-allocated",
            "8000000",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let first = std::fs::read_to_string(&plain).unwrap();
    assert!(
        first.starts_with("{\"header\": {\"workload\": \"given\""),
        "{first}"
    );
    let v = replay_json(&plain);
    assert_eq!(u(&v, "recorded_torch_peak_reserved_bytes"), 30_000_000);
    assert_eq!(u(&v, "recorded_torch_peak_allocated_bytes"), 8_000_000);
    assert_eq!(u(&v, "events"), 7);
}

#[test]
fn the_converter_refuses_what_is_not_a_snapshot() {
    let Some(py) = python() else { return };
    let dir = scratch("refuse");
    // A pickle that would build an object: never loaded.
    let evil = dir.join("evil.pickle");
    run_python(
        py,
        "import collections, pickle, sys; pickle.dump(collections.OrderedDict(a=1), open(sys.argv[1], 'wb'))",
        &[&evil],
    );
    let out = convert(py, &[&evil, &dir.join("t.jsonl")], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("refusing to load collections.OrderedDict"));
    // No history for the device asked for.
    let snap = dir.join("snap.json");
    std::fs::write(&snap, SNAPSHOT).unwrap();
    let out = convert(py, &[&snap, &dir.join("t.jsonl")], &["--device", "3"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("no history for device 3"));
    // A text file, a JSON object that is not a snapshot, a cut pickle: each
    // is "not a snapshot", never a pickle machine's message.
    let txt = dir.join("notes.txt");
    std::fs::write(&txt, "hello, this is text\nmore text\n").unwrap();
    let json = dir.join("other.json");
    std::fs::write(&json, r#"{"a": 1}"#).unwrap();
    let cut = dir.join("cut.pickle");
    run_python(
        py,
        "import pickle, sys; d = pickle.dumps({'device_traces': [[]]}); open(sys.argv[1], 'wb').write(d[: len(d) // 2])",
        &[&cut],
    );
    for bad in [&txt, &json, &cut] {
        let out = convert(py, &[bad, &dir.join("t.jsonl")], &[]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains("not a PyTorch memory snapshot"), "{err}");
        assert!(
            !err.contains("Memo value") && !err.contains("Traceback"),
            "{err}"
        );
    }
    // A missing file.
    let out = convert(py, &[&dir.join("none.pickle"), &dir.join("t.jsonl")], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(!text(&out.stderr).contains("Traceback"));
}

/// A real snapshot: PyTorch 2.11 on an H200, a small MLP trained for three
/// AdamW steps with its targets made on a side stream (`record_stream`),
/// frames stripped, saved as JSON. The same run printed
/// `torch.cuda.max_memory_reserved()` = 249561088 and
/// `torch.cuda.max_memory_allocated()` = 238129664: the figures the script
/// derives from the snapshot alone.
#[test]
fn a_real_pytorch_snapshot_gives_pytorchs_own_peaks() {
    let Some(py) = python() else { return };
    let dir = scratch("real");
    let snapshot = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/torch_snapshot.json");
    let pickled = dir.join("real.pickle");
    pickle_json(py, &snapshot, &pickled);
    let trace = dir.join("real.jsonl.gz");
    let out = convert(py, &[&pickled, &trace], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v = replay_json(&trace);
    assert_eq!(u(&v, "events"), 165);
    assert_eq!(u(&v, "streams"), 2);
    assert_eq!(u(&v, "recorded_torch_peak_reserved_bytes"), 249_561_088);
    assert_eq!(u(&v, "recorded_torch_peak_allocated_bytes"), 238_129_664);
    assert_eq!(u(&v, "recorded_torch_segment_allocs"), 17);
    // Nothing was live before the history began, so the trace's own peak
    // is PyTorch's allocated peak.
    assert_eq!(u(&v, "peak_live_bytes"), 238_129_664);
}

/// Peaks that are no byte counts, or that contradict each other or the
/// snapshot, are refused before a trace `streamcore replay` would refuse
/// is written: a bad argument is status 2, a contradiction with the
/// snapshot status 1, each one line.
#[test]
fn the_converter_refuses_peaks_that_cannot_be_true() {
    let Some(py) = python() else { return };
    let dir = scratch("peaks");
    let snap = dir.join("snap.json");
    std::fs::write(&snap, SNAPSHOT).unwrap();
    let trace = dir.join("t.jsonl");
    for (extra, code, says) in [
        (
            &["--peak-reserved", "-5"][..],
            2,
            "argument --peak-reserved: a byte count is 0 or more, not -5",
        ),
        (
            &["--peak-allocated", "1e9"],
            2,
            "argument --peak-allocated: not a whole number of bytes: '1e9'",
        ),
        (
            &["--peak-reserved", "10", "--peak-allocated", "100"],
            2,
            "--peak-reserved 10 is below --peak-allocated 100",
        ),
        // The snapshot held 4 MiB when its history began.
        (
            &["--peak-allocated", "1000"],
            1,
            "the peak allocated (1000 B) is below what the snapshot held when its history began (4194304 B)",
        ),
        (
            &["--peak-reserved", "1000"],
            1,
            "the peak reserved (1000 B) is below the peak allocated",
        ),
    ] {
        let out = convert(py, &[&snap, &trace], extra);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{extra:?}: {err}");
        assert!(err.contains(says), "{extra:?}: {err}");
        assert!(!err.contains("Traceback"), "{extra:?}: {err}");
        assert!(!trace.exists(), "{extra:?}: no trace written");
    }
}

/// A snapshot that is a folder or no regular file (a device such as
/// /dev/zero, which would be read without end), and an output that cannot
/// be written, are one line each, naming the path once.
#[test]
fn the_converter_names_files_it_cannot_use_once() {
    let Some(py) = python() else { return };
    let dir = scratch("files");
    let snap = dir.join("snap.json");
    std::fs::write(&snap, SNAPSHOT).unwrap();
    let folder = dir.join("folder");
    std::fs::create_dir_all(&folder).unwrap();
    let mut cases = vec![
        (
            folder.clone(),
            dir.join("t.jsonl"),
            folder.clone(),
            "this is a folder, not a snapshot file",
        ),
        (
            dir.join("none.pickle"),
            dir.join("t.jsonl"),
            dir.join("none.pickle"),
            "No such file or directory",
        ),
        (
            snap.clone(),
            folder.clone(),
            folder.clone(),
            "Is a directory",
        ),
        (
            snap.clone(),
            dir.join("no/such/t.jsonl"),
            dir.join("no/such/t.jsonl"),
            "No such file or directory",
        ),
    ];
    if Path::new("/dev/zero").exists() {
        cases.push((
            "/dev/zero".into(),
            dir.join("t.jsonl"),
            "/dev/zero".into(),
            "not a regular file (a snapshot is one)",
        ));
    }
    for (input, output, named, says) in cases {
        let out = convert(py, &[&input, &output], &[]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        // The snapshot's own warnings aside, one line.
        let lines: Vec<&str> = err.lines().filter(|l| !l.contains(": warning: ")).collect();
        let n = named.to_str().unwrap();
        assert_eq!(
            lines,
            [format!("torch_snapshot_to_trace: {n}: {says}")],
            "the path once, then why: {err}"
        );
    }
}
