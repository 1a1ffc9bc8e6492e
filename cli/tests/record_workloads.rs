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

#[test]
fn the_workloads_are_listed_without_pytorch() {
    let Some(out) = run(&["--list"]) else { return };
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let listed = text(&out.stdout);
    let names: Vec<&str> = listed
        .lines()
        .map(|l| l.split(':').next().unwrap_or_default())
        .collect();
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
