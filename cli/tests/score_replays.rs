//! `scripts/score_replays.py` on logs it must refuse or warn about: a row
//! is scored as written or not at all, never guessed at (standard library
//! only, so it runs wherever `python3` does).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

mod common;

use common::{full_disk, has_python, scratch, script, text};

/// A pass of `streamcore replay --platform hip` over two traces.
const PASS: &str = "\
# device NVIDIA H200 (150109880320 B), virtual-memory granularity 2097152, layout balanced, touch no, runs 5
trace allocator touch wall_ms driver_calls peak_used peak_live ratio books_ratio
alpha hipMallocAsync no 10.0 100 2000 1000 2.0000 -
alpha streamcore-vmm-balanced no 5.0 10 1500 1000 1.5000 1.5000
# alpha: streamcore/hipMallocAsync wall 0.500, peak used 1.5000 vs 2.0000; streamcore fences 0
beta hipMallocAsync no 10.0 100 1100 1000 1.1000 -
beta streamcore-vmm-balanced no 20.0 10 1200 1000 1.2000 1.2000
";

/// Writes `text` as `name` in a fresh folder for `test`.
fn log(test: &str, name: &str, text: &str) -> PathBuf {
    let path = scratch(test).join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn score(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    Command::new("python3")
        .arg(script("score_replays.py"))
        .args(args.iter().map(|a| a.as_ref()))
        .output()
        .expect("run python3")
}

/// Refused: exit status 1, one line naming `needles`, no traceback.
fn assert_refused(out: &Output, needles: &[&str]) {
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.starts_with("score_replays: "), "{err}");
    for n in needles {
        assert!(err.contains(n), "missing {n:?} in: {err}");
    }
}

fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn a_good_log_is_scored() {
    if !has_python("score_replays.py") {
        return;
    }
    let pass = log("score-good", "pass.txt", PASS);
    let out = score(&[&"--rows", &pass]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("rows 2: both 1, bytes 1, wall 1; streamcore / pool wall, all rows 1.250"),
        "{stdout}"
    );
    assert!(text(&out.stderr).is_empty(), "{}", text(&out.stderr));
}

/// Two passes over the same traces, each scored over the other before:
/// now refused, naming both lines, unless `--section` keeps one.
#[test]
fn a_second_pass_over_a_trace_is_refused_not_overwritten() {
    if !has_python("score_replays.py") {
        return;
    }
    let two = format!("## call 1\n{PASS}## call 2\n{PASS}");
    let path = log("score-two-passes", "two.txt", &two);
    let p = path_str(&path);
    assert_refused(
        &score(&[&path]),
        &[
            &format!("{p}:12: a second hipMallocAsync row for alpha (touch no)"),
            &format!("the first is at {p}:4"),
            "--section",
        ],
    );
    let out = score(&[&"--section", &"call 2", &path]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // The same log given twice is two passes too.
    let once = log("score-twice", "pass.txt", PASS);
    assert_refused(&score(&[&once, &once]), &["a second hipMallocAsync row"]);
}

#[test]
fn a_row_that_cannot_be_read_is_refused_where_it_is() {
    if !has_python("score_replays.py") {
        return;
    }
    let cases = [
        (
            "alpha hipMallocAsync no 10.0 100 2000 1000 2.0000 -",
            "alpha hipMallocAsync no 10.0 100 2000",
            "a hipMallocAsync row of 6 columns, not 8",
        ),
        (
            "alpha hipMallocAsync no 10.0 100 2000 1000 2.0000 -",
            "alpha hipMallocAsync no fast 100 2000 1000 2.0000 -",
            "wall_ms is 'fast', not a number",
        ),
        (
            "beta streamcore-vmm-balanced no 20.0 10 1200 1000 1.2000 1.2000",
            "beta streamcore-vmm-balanced no 20.0 10 1200 1000 nan 1.2000",
            "ratio is 'nan', not a number",
        ),
        (
            "beta streamcore-vmm-balanced no 20.0 10 1200 1000 1.2000 1.2000",
            "beta streamcore-vmm-balanced no -3 10 1200 1000 1.2000 1.2000",
            "wall_ms is '-3', not a number of 0 or more",
        ),
    ];
    for (i, (good, bad, why)) in cases.into_iter().enumerate() {
        let path = log(
            &format!("score-bad-row-{i}"),
            "bad.txt",
            &PASS.replace(good, bad),
        );
        let line = PASS.lines().position(|l| l == good).unwrap() + 1;
        assert_refused(
            &score(&[&path]),
            &[&format!("{}:{line}: {why}", path_str(&path))],
        );
    }
}

/// Two layouts in one score (streamcore-vmm-balanced and
/// streamcore-vmm-other.json for one trace) cannot both be scored.
#[test]
fn two_streamcore_allocators_for_one_trace_are_refused() {
    if !has_python("score_replays.py") {
        return;
    }
    let other =
        "alpha streamcore-vmm-other.json no 4.0 10 1400 1000 1.4000 1.4000\n".to_owned() + PASS;
    let path = log("score-two-layouts", "two.txt", &other);
    assert_refused(
        &score(&[&path]),
        &["alpha (touch no) has rows of streamcore-vmm-balanced and streamcore-vmm-other.json"],
    );
}

/// A trace with one allocator's row only, or no ratio (it allocates
/// nothing), is left out with a warning: never scored as 0 or silently.
#[test]
fn rows_that_cannot_be_scored_are_left_out_with_a_warning() {
    if !has_python("score_replays.py") {
        return;
    }
    let text_of_log = format!(
        "{PASS}gamma hipMallocAsync no 1.0 0 0 0 - -\n\
         gamma streamcore-vmm-balanced no 1.0 0 0 0 - -\n\
         delta hipMallocAsync no 1.0 2 4096 4096 1.0000 -\n"
    );
    let path = log("score-left-out", "pass.txt", &text_of_log);
    let out = score(&[&path]);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(
            "gamma (hipMallocAsync, touch no) has no ratio (the trace allocates nothing): left out"
        ),
        "{err}"
    );
    assert!(
        err.contains("delta (touch no) has no streamcore row: left out"),
        "{err}"
    );
    assert!(
        text(&out.stdout).contains("rows 2:"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn the_model_files_are_checked() {
    if !has_python("score_replays.py") {
        return;
    }
    let pass = log("score-model", "pass.txt", PASS);
    let dir = pass.parent().unwrap();
    let model = dir.join("model.txt");
    std::fs::write(&model, "alpha no 1.4000 4.00 3\nbeta no 1.1000 9.00 3\n").unwrap();
    let base = dir.join("base.txt");
    std::fs::write(&base, "alpha no 1.5000 5.00 3\n").unwrap();
    let out = score(&[&"--base-model", &base, &pass]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("--base-model scales the walls of --model"),
        "{}",
        text(&out.stderr)
    );
    // The base model lacks beta: its wall cannot be scaled.
    assert_refused(
        &score(&[&"--model", &model, &"--base-model", &base, &pass]),
        &["no row for beta (touch no)", "the wall cannot be scaled"],
    );
    std::fs::write(&base, "alpha no 1.5000 5.00 3\nbeta no 1.1000 x 3\n").unwrap();
    assert_refused(
        &score(&[&"--model", &model, &"--base-model", &base, &pass]),
        &[&format!(
            "{}:2: predicted_wall_ms is 'x', not a number",
            path_str(&base)
        )],
    );
    std::fs::write(&base, "alpha no 1.5000 5.00 3\nbeta no 1.1000 10.00 3\n").unwrap();
    let out = score(&[&"--model", &model, &"--base-model", &base, &pass]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// A reader that stops early ends the score quietly with status 0; a full
/// disk is one line and status 1; never a traceback.
#[cfg(target_os = "linux")]
#[test]
fn output_that_cannot_be_written() {
    if !has_python("score_replays.py") {
        return;
    }
    let pass = log("score-pipes", "pass.txt", PASS);
    let run = |stdout: Stdio| {
        Command::new("python3")
            .arg(script("score_replays.py"))
            .args(["--rows".as_ref(), pass.as_os_str()])
            .stdout(stdout)
            .output()
            .expect("run python3")
    };
    let out = run(common::readerless_pipe("score"));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
    if let Some(full) = full_disk() {
        let out = run(full);
        assert_refused(&out, &["writing the output: No space left on device"]);
    }
}
