//! `--svg FILE`: where each trace's plot goes, checked before any trace is
//! replayed.

use std::collections::BTreeSet;
use std::io;
use std::path::{Path, PathBuf};

use super::output;

/// `--svg FILE` writes SVG: FILE must say so (`out.png` would hold SVG text
/// under a bitmap's name), and its folder must be there: a plot that cannot
/// be written is found out before any trace is replayed.
pub fn check_svg_path(path: &Path) -> Result<(), String> {
    let is_svg = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("svg"));
    if !is_svg {
        return Err(format!(
            "--svg {}: the plot is an SVG document; give a file name ending in .svg",
            path.display()
        ));
    }
    // `plot.svg` has the empty parent: the current folder.
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    match std::fs::metadata(parent) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(format!(
            "--svg {}: {} is not a folder",
            path.display(),
            parent.display()
        )),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(format!(
            "--svg {}: no folder {} to write the plot in (create it first)",
            path.display(),
            parent.display()
        )),
        Err(e) => Err(format!(
            "--svg {}: {}: {e}",
            path.display(),
            parent.display()
        )),
    }
}

/// A file the plot will be written to must not be a folder.
pub fn check_svg_target(path: &Path) -> Result<(), String> {
    if path.is_dir() {
        Err(format!(
            "--svg {}: this is a folder; give the name of a file to write the plot to",
            path.display()
        ))
    } else {
        Ok(())
    }
}

/// `--svg FILE` for each trace: FILE itself for one trace, else FILE with
/// the trace's name before the extension (unique even when names repeat).
pub fn svg_paths(svg: Option<&Path>, traces: &[PathBuf]) -> Vec<Option<PathBuf>> {
    let Some(svg) = svg else {
        return vec![None; traces.len()];
    };
    if traces.len() == 1 {
        return vec![Some(svg.to_path_buf())];
    }
    let base = svg.with_extension("");
    let base = base.to_string_lossy();
    let mut used = BTreeSet::new();
    traces
        .iter()
        .map(|t| {
            let name = output::stem(t);
            let mut candidate = format!("{base}-{name}.svg");
            let mut n = 2;
            while !used.insert(candidate.clone()) {
                candidate = format!("{base}-{name}-{n}.svg");
                n += 1;
            }
            Some(PathBuf::from(candidate))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn svg_paths_must_end_in_svg() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        assert!(check_svg_path(&src.join("plot.svg")).is_ok());
        assert!(check_svg_path(Path::new("PLOT.SVG")).is_ok());
        for bad in ["out.png", "plot", "plot.svg.gz", "dir/"] {
            let e = check_svg_path(Path::new(bad)).unwrap_err();
            assert!(e.contains("ending in .svg"), "{bad}: {e}");
        }
    }

    /// The folder of the plot must be there, and be a folder; the plot's
    /// own name must not be a folder.
    #[test]
    fn svg_paths_need_a_folder_to_go_in() {
        let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
        let e = check_svg_path(&crate_dir.join("no-such-folder/x.svg")).unwrap_err();
        assert!(
            e.contains("no folder") && e.contains("no-such-folder"),
            "{e}"
        );
        let e = check_svg_path(&crate_dir.join("Cargo.toml/x.svg")).unwrap_err();
        assert!(e.contains("Cargo.toml is not a folder"), "{e}");
        let e = check_svg_target(&crate_dir.join("src")).unwrap_err();
        assert!(e.contains("is a folder"), "{e}");
        assert!(check_svg_target(&crate_dir.join("src/plot.svg")).is_ok());
    }

    #[test]
    fn svg_paths_per_trace() {
        let traces = [
            PathBuf::from("a/gpt2.jsonl.gz"),
            PathBuf::from("b/gpt2.jsonl"),
            PathBuf::from("llama.jsonl.gz"),
        ];
        assert_eq!(svg_paths(None, &traces), vec![None, None, None]);
        assert_eq!(
            svg_paths(Some(Path::new("out/p.svg")), &traces[..1]),
            vec![Some(PathBuf::from("out/p.svg"))]
        );
        assert_eq!(
            svg_paths(Some(Path::new("out/p.svg")), &traces),
            vec![
                Some(PathBuf::from("out/p-gpt2.svg")),
                Some(PathBuf::from("out/p-gpt2-2.svg")),
                Some(PathBuf::from("out/p-llama.svg")),
            ]
        );
    }
}
