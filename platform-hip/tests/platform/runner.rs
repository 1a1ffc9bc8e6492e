//! A small test runner for the platform tests, so a test that cannot run
//! here (no HIP runtime, no device, too few devices) is reported as
//! `SKIPPED: why` and counted as skipped, never as passed — the standard
//! harness can only say "ok".
//!
//! Arguments follow the standard harness where they matter: positional
//! filters (substring of the test name), `--exact`, `--ignored`,
//! `--include-ignored`, `--list`. Other flags (`--test-threads=N`,
//! `--nocapture`, `-q`) are accepted and ignored: tests run one at a time,
//! in order, with their output uncaptured. A test fails by panicking.

use std::fmt;
use std::io::Write;
use std::process::ExitCode;

/// Why a test did not run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skip(pub String);

impl fmt::Display for Skip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SKIPPED: {}", self.0)
    }
}

/// What a test returns: `Ok` when it ran and passed, `Err(Skip)` when it
/// could not run.
pub type Outcome = Result<(), Skip>;

/// One test.
#[derive(Clone, Copy)]
pub struct Test {
    /// `module::function`.
    pub name: &'static str,
    /// The body.
    pub run: fn() -> Outcome,
    /// Ignored unless asked for (`--ignored`): the child-process halves
    /// of tests that need a fresh process.
    pub ignored: bool,
}

/// Lists tests as `module::function`; `ignored` ones after a `;`.
#[macro_export]
macro_rules! tests {
    ($($m:ident :: $f:ident),* $(,)? ; $($im:ident :: $if:ident),* $(,)?) => {
        &[
            $($crate::runner::Test {
                name: concat!(stringify!($m), "::", stringify!($f)),
                run: $m::$f,
                ignored: false,
            },)*
            $($crate::runner::Test {
                name: concat!(stringify!($im), "::", stringify!($if)),
                run: $im::$if,
                ignored: true,
            },)*
        ]
    };
}

struct Args {
    filters: Vec<String>,
    exact: bool,
    ignored: bool,
    include_ignored: bool,
    list: bool,
}

fn parse(args: impl Iterator<Item = String>) -> Args {
    let mut parsed = Args {
        filters: Vec::new(),
        exact: false,
        ignored: false,
        include_ignored: false,
        list: false,
    };
    for arg in args {
        match arg.as_str() {
            "--exact" => parsed.exact = true,
            "--ignored" => parsed.ignored = true,
            "--include-ignored" => parsed.include_ignored = true,
            "--list" => parsed.list = true,
            flag if flag.starts_with('-') => {}
            filter => parsed.filters.push(filter.to_owned()),
        }
    }
    parsed
}

impl Args {
    fn selects(&self, name: &str) -> bool {
        self.filters.is_empty()
            || self.filters.iter().any(|f| {
                if self.exact {
                    name == f
                } else {
                    name.contains(f.as_str())
                }
            })
    }
}

/// The counts a run ends with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Ran and passed.
    pub passed: usize,
    /// Panicked.
    pub failed: usize,
    /// Returned [`Skip`].
    pub skipped: usize,
    /// Not asked for (`ignored` tests without `--ignored`).
    pub ignored: usize,
    /// Not selected by the filters.
    pub filtered: usize,
}

/// Runs the selected tests in order, printing one line each and the
/// summary line `test result: ok. N passed; N failed; N skipped; N
/// ignored; N filtered out`.
pub fn run(tests: &[Test], args: impl Iterator<Item = String>) -> Summary {
    let args = parse(args);
    let mut summary = Summary::default();
    if args.list {
        for t in tests.iter().filter(|t| args.selects(t.name)) {
            println!("{}: test", t.name);
        }
        return summary;
    }
    let selected: Vec<&Test> = tests.iter().filter(|t| args.selects(t.name)).collect();
    summary.filtered = tests.len() - selected.len();
    println!("\nrunning {} tests", selected.len());
    for t in selected {
        let wanted = if args.include_ignored {
            true
        } else {
            t.ignored == args.ignored
        };
        if !wanted {
            summary.ignored += 1;
            println!("test {} ... ignored", t.name);
            continue;
        }
        let _ = std::io::stdout().flush();
        let outcome = std::panic::catch_unwind(t.run);
        match outcome {
            Ok(Ok(())) => {
                summary.passed += 1;
                println!("test {} ... ok", t.name);
            }
            Ok(Err(skip)) => {
                summary.skipped += 1;
                println!("test {} ... {skip}", t.name);
            }
            Err(_) => {
                summary.failed += 1;
                println!("test {} ... FAILED", t.name);
            }
        }
    }
    println!(
        "\ntest result: {}. {} passed; {} failed; {} skipped; {} ignored; {} filtered out\n",
        if summary.failed == 0 { "ok" } else { "FAILED" },
        summary.passed,
        summary.failed,
        summary.skipped,
        summary.ignored,
        summary.filtered
    );
    summary
}

/// Runs `tests` with the process's arguments; fails when any test failed.
pub fn main(tests: &[Test]) -> ExitCode {
    let summary = run(tests, std::env::args().skip(1));
    if summary.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
