//! What the READMEs tell a newcomer agrees with what the command line does:
//! the install command keeps the lock file, and the traces' figures are in
//! the units `streamcore replay` prints.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &str) -> String {
    std::fs::read_to_string(repo().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn the_readme_installs_with_the_lock_file() {
    let readme = read("README.md");
    let installs: Vec<&str> = readme
        .lines()
        .filter(|l| l.contains("cargo install"))
        .collect();
    assert!(!installs.is_empty(), "the README says how to install");
    for line in installs {
        assert!(line.contains("--locked"), "without --locked: {line}");
    }
}

#[test]
fn the_traces_readme_uses_the_units_replay_prints() {
    let readme = read("tests/traces/README.md");
    assert!(
        !readme.contains(" GB") && !readme.contains(" MB"),
        "decimal units in tests/traces/README.md"
    );
    let rows: Vec<(String, String, String)> = readme
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| file"))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            // | file | workload | events | streams | reserved / allocated (ratio) |
            let figures = cells[5];
            let (pair, _) = figures.split_once(" (").expect("figures (ratio)");
            let (reserved, allocated) = pair.split_once(" / ").expect("reserved / allocated");
            (
                cells[1].to_owned(),
                reserved.to_owned(),
                allocated.to_owned(),
            )
        })
        .collect();
    assert_eq!(rows.len(), 4, "one row per bundled trace");
    for (name, reserved, allocated) in rows {
        let trace = repo().join(format!("tests/traces/{name}.jsonl.gz"));
        let out = Command::new(env!("CARGO_BIN_EXE_streamcore"))
            .arg("replay")
            .arg(&trace)
            .output()
            .expect("run streamcore");
        assert!(out.status.success(), "{name}");
        let table = String::from_utf8_lossy(&out.stdout);
        let row = |what: &str| {
            table
                .lines()
                .find(|l| l.trim_start().starts_with(what))
                .unwrap_or_else(|| panic!("{name}: no {what:?} row in\n{table}"))
                .to_owned()
        };
        // The recorded run's column is the last one.
        assert!(
            row("peak reserved").trim_end().ends_with(&reserved),
            "{name}: README says {reserved}, replay prints {}",
            row("peak reserved")
        );
        assert!(
            row("peak live / allocated")
                .trim_end()
                .ends_with(&allocated),
            "{name}: README says {allocated}, replay prints {}",
            row("peak live / allocated")
        );
    }
}

/// `streamcore --help`'s about line lists what the command line does: each
/// item names one of its subcommands (no promise of a command that is not
/// there), each subcommand is listed, and the README's crate list says the
/// same.
#[test]
fn the_about_line_lists_the_subcommands_there_are() {
    let out = Command::new(env!("CARGO_BIN_EXE_streamcore"))
        .arg("--help")
        .output()
        .expect("run streamcore");
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    let about = help.lines().next().expect("an about line");
    let (_, list) = about.split_once(": ").expect("what: list");
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert_eq!(commands, ["demo", "replay", "record"], "{help}");
    let items: Vec<&str> = list.split(", ").collect();
    for item in &items {
        assert!(
            commands.iter().any(|c| item.contains(c)),
            "{item:?} is no subcommand: {about}"
        );
    }
    for c in &commands {
        assert!(
            items.iter().any(|item| item.contains(c)),
            "{c} is not listed: {about}"
        );
    }
    let readme = read("README.md");
    let line = readme
        .lines()
        .find(|l| l.starts_with("- `streamcore-cli`"))
        .expect("the README lists the crate");
    assert!(
        line.ends_with(&format!(": {list}.")),
        "README says {line:?}, --help says {about:?}"
    );
}
