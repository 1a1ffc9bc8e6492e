//! `scripts/record_workloads.py`'s arguments and its answer where it cannot
//! record: checked on any machine with `python3`, with or without PyTorch
//! (recording itself needs a GPU machine).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;

use common::{scratch, text};

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/record_workloads.py")
}

/// The script's output, or `None` (the test skipped) without `python3`.
fn run(args: &[&str]) -> Option<Output> {
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("SKIPPED: python3 not found; record_workloads.py was not run");
        return None;
    }
    Some(
        Command::new("python3")
            .arg(script())
            .args(args)
            .output()
            .expect("run python3"),
    )
}

/// Whether this machine's python3 imports PyTorch, and it has a GPU.
fn torch() -> (bool, bool) {
    let probe = |code: &str| {
        Command::new("python3")
            .args(["-c", code])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let has = probe("import torch");
    (
        has,
        has && probe("import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"),
    )
}

/// What `--list` (with `args` before it) prints, and the names it lists;
/// `None` (the test skipped) without `python3`.
fn listed(args: &[&str]) -> Option<(String, Vec<String>)> {
    let out = run(&[args, &["--list"]].concat())?;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let listed = text(&out.stdout);
    let names = listed
        .lines()
        .map(|l| l.split(':').next().unwrap_or_default().to_owned())
        .collect();
    Some((listed, names))
}

#[test]
fn the_workloads_are_listed_without_pytorch() {
    let Some((listed, names)) = listed(&[]) else {
        return;
    };
    assert_eq!(
        names,
        [
            "bert_varlen_train",
            "unet_train",
            "vit_serving",
            "gru_varlen_train",
            "mlp_train_eval",
            "cnn_side_stream"
        ],
        "{listed}"
    );
    assert!(
        listed
            .lines()
            .all(|l| l.len() > l.find(':').unwrap_or(0) + 20),
        "each with what it runs: {listed}"
    );
}

#[test]
fn the_held_out_set_is_listed_apart_and_its_names_are_known() {
    let Some((listed, names)) = listed(&["--held-out"]) else {
        return;
    };
    assert_eq!(
        names,
        [
            "gpt_accum_train",
            "lstm_seq2seq_train",
            "cnn_multires_train",
            "moe_train",
            "denoise_sampling",
            "kv_cache_decode"
        ],
        "{listed}"
    );
    // A held-out name is a workload whichever set is chosen: without
    // PyTorch the check says so (status 3), never "no such workload" (2).
    let Some(out) = run(&["--check", "moe_train", "bert_varlen_train"]) else {
        return;
    };
    let err = text(&out.stderr);
    assert_ne!(out.status.code(), Some(2), "{err}");
    assert!(!err.contains("no such workload"), "{err}");
}

#[test]
fn bad_arguments_are_exit_2_and_record_nothing() {
    let dir = scratch("record-bad-args");
    let out_dir = dir.join("traces");
    let o = out_dir.to_str().unwrap();
    for (args, says) in [
        (vec![], "OUT_DIR is required"),
        (
            vec![o, "no_such_workload"],
            "no such workload: no_such_workload",
        ),
        (
            vec!["--check", "bert_varlen_train", "nope"],
            "no such workload: nope",
        ),
    ] {
        let Some(out) = run(&args) else { return };
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!out_dir.exists(), "{args:?} created {o}");
    }
}

#[test]
fn without_a_gpu_nothing_is_recorded_and_the_status_says_skipped() {
    let (has_torch, has_gpu) = torch();
    if has_gpu {
        eprintln!("SKIPPED: this machine has a GPU; recording is checked on GPU machines");
        return;
    }
    let dir = scratch("record-no-gpu");
    let out_dir = dir.join("traces");
    let Some(out) = run(&[out_dir.to_str().unwrap(), "mlp_train_eval"]) else {
        return;
    };
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    let why = if has_torch {
        "SKIPPED: PyTorch has no CUDA device"
    } else {
        "SKIPPED: PyTorch cannot be imported"
    };
    assert!(err.contains(why), "{err}");
    let written = std::fs::read_dir(&out_dir).map_or(0, |d| d.count());
    assert_eq!(written, 0, "no trace without a GPU");
}

#[test]
fn the_check_runs_every_workload_on_the_cpu_or_says_why_not() {
    let (has_torch, _) = torch();
    let Some(out) = run(&["--check"]) else { return };
    let err = text(&out.stderr);
    if !has_torch {
        assert_eq!(out.status.code(), Some(3), "{err}");
        assert!(err.contains("SKIPPED: PyTorch cannot be imported"), "{err}");
        return;
    }
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(
        text(&out.stdout).matches("ran on the CPU").count(),
        6,
        "{}",
        text(&out.stdout)
    );
}

/// A stand-in for PyTorch that claims a CUDA device and fails as
/// `FAKE_TORCH_FAILS` says: `raise` (an exception whose message runs over
/// two lines, as CUDA's do) or `kill` (the process killed, as the kernel's
/// out-of-memory killer does).
const FAKE_TORCH: &str = r#"
import os
import signal


class _Cuda:
    @staticmethod
    def is_available():
        return True

    @staticmethod
    def init():
        how = os.environ.get("FAKE_TORCH_FAILS")
        if how == "raise":
            raise RuntimeError("CUDA error: out of memory\nCUDA kernel errors might be "
                               "asynchronously reported")
        if how == "kill":
            os.kill(os.getpid(), signal.SIGKILL)


cuda = _Cuda()


def manual_seed(seed):
    pass
"#;

/// Records `names` into a fresh folder with the stand-in PyTorch failing
/// as `how` says.
fn record_with_fake_torch(test: &str, how: &str, names: &[&str]) -> Option<Output> {
    let dir = scratch(test);
    let fake = dir.join("fake");
    std::fs::create_dir_all(fake.join("torch")).unwrap();
    std::fs::write(fake.join("torch/__init__.py"), FAKE_TORCH).unwrap();
    run(&[])?;
    Some(
        Command::new("python3")
            .arg(script())
            .arg(dir.join("traces"))
            .args(names)
            .env("PYTHONPATH", &fake)
            .env("FAKE_TORCH_FAILS", how)
            .output()
            .expect("run python3"),
    )
}

/// A workload whose process fails is reported with its reason on the
/// FAILED line (the exception and the first line of its message), the
/// child's traceback kept above it; the next workload is still tried.
#[test]
fn a_failed_recording_says_why_beside_failed() {
    let names = ["mlp_train_eval", "unet_train"];
    let Some(out) = record_with_fake_torch("record-fails", "raise", &names) else {
        return;
    };
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    for name in names {
        let line = format!("{name}: FAILED (exit 1: RuntimeError: CUDA error: out of memory)");
        assert!(
            err.lines().any(|l| l == line),
            "missing the line {line:?} in:\n{err}"
        );
    }
    // The whole traceback, for the log.
    assert_eq!(
        err.matches("Traceback (most recent call last)").count(),
        2,
        "{err}"
    );
    assert!(
        err.contains("CUDA kernel errors might be asynchronously reported"),
        "{err}"
    );
}

/// A workload whose process is killed says by what.
#[cfg(unix)]
#[test]
fn a_killed_recording_says_by_what() {
    let Some(out) = record_with_fake_torch("record-killed", "kill", &["vit_serving"]) else {
        return;
    };
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.lines()
            .any(|l| l == "vit_serving: FAILED (killed by SIGKILL, out of memory?)"),
        "{err}"
    );
}

/// OUT_DIR must be a folder, or one that can be made: a bad argument,
/// said in one line (no traceback), nothing recorded.
#[test]
fn an_out_dir_that_cannot_be_a_folder_is_a_bad_argument() {
    let dir = scratch("record-out-dir");
    let file = dir.join("a-file");
    std::fs::write(&file, "not a folder").unwrap();
    for (out_dir, says) in [
        (file.clone(), "is not a folder"),
        (file.join("below"), "cannot be created"),
    ] {
        let o = out_dir.to_str().unwrap();
        let Some(out) = run(&[o, "mlp_train_eval"]) else {
            return;
        };
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{o}: {err}");
        assert!(err.contains(&format!("OUT_DIR {o} {says}")), "{err}");
        assert!(!err.contains("Traceback"), "{err}");
    }
}

/// `--list` into a reader that went away stops quietly with status 0;
/// into a full disk it is one line and status 1; never a traceback.
#[cfg(target_os = "linux")]
#[test]
fn output_that_cannot_be_written() {
    if run(&["--list"]).is_none() {
        return;
    }
    let list = |stdout: std::process::Stdio| {
        Command::new("python3")
            .arg(script())
            .arg("--list")
            .stdout(stdout)
            .output()
            .expect("run python3")
    };
    let out = list(common::readerless_pipe("record-list"));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
    if let Some(full) = common::full_disk() {
        let out = list(full);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert_eq!(
            err.trim_end(),
            "record_workloads: writing the output: No space left on device"
        );
    }
}
