//! Where a trace comes from: a file, or standard input for `-` (say,
//! `zcat trace.jsonl.gz | streamcore replay -`).

use std::io;
use std::path::{Path, PathBuf};

use streamcore_mock::replay::{Trace, TraceError};

/// The argument that names standard input.
pub const STDIN_ARG: &str = "-";

/// How standard input is named in messages.
const STDIN_SHOWN: &str = "standard input";

/// Whether `path` is the argument `-`.
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == STDIN_ARG
}

/// The trace `path` names: the file, or standard input for `-` (gzip or
/// plain, told apart as for a file).
pub fn load(path: &Path) -> Result<Trace, TraceError> {
    if is_stdin(path) {
        Trace::read(io::stdin().lock(), Path::new(STDIN_SHOWN))
    } else {
        Trace::load(path)
    }
}

/// `path` as messages name it (`standard input` for `-`).
pub fn shown(path: &Path) -> PathBuf {
    if is_stdin(path) {
        PathBuf::from(STDIN_SHOWN)
    } else {
        path.to_path_buf()
    }
}

/// Refuses `-` given more than once: standard input holds one trace.
pub fn check(traces: &[PathBuf]) -> Result<(), String> {
    if traces.iter().filter(|t| is_stdin(t)).count() > 1 {
        return Err(format!(
            "`{STDIN_ARG}` (standard input) can be given once: it holds one trace"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_lone_dash_is_standard_input() {
        assert!(is_stdin(Path::new("-")));
        for other in ["./-", "-.jsonl", "--", "a-b.jsonl.gz"] {
            assert!(!is_stdin(Path::new(other)), "{other}");
            assert_eq!(shown(Path::new(other)), PathBuf::from(other));
        }
        assert_eq!(shown(Path::new("-")), PathBuf::from("standard input"));
        let once = [PathBuf::from("-"), PathBuf::from("a.jsonl")];
        assert!(check(&once).is_ok());
        let twice = [PathBuf::from("-"), PathBuf::from("a"), PathBuf::from("-")];
        assert!(check(&twice).unwrap_err().contains("can be given once"));
    }
}
