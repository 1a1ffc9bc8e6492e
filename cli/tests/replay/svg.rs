//! `--svg`: the plot of reserved and live bytes, checked as XML.

use super::*;

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

/// A plot that cannot be written is a bad argument, found before any trace
/// is replayed: a folder that is not there, a folder under the plot's name.
#[test]
fn svg_into_a_missing_folder_or_onto_a_folder_is_a_usage_error() {
    let dir = scratch("svg-nowhere");
    let onto_folder = dir.join("plots.svg");
    std::fs::create_dir(&onto_folder).unwrap();
    let not_a_folder = dir.join("file");
    std::fs::write(&not_a_folder, "").unwrap();
    let cases = [
        (dir.join("missing/x.svg"), "no folder"),
        (onto_folder.clone(), "is a folder"),
        (not_a_folder.join("x.svg"), "is not a folder"),
    ];
    for (svg, needle) in cases {
        for traces in [
            vec![trace("two_stream_pipeline")],
            vec![trace("two_stream_pipeline"), trace("llama_decode")],
        ] {
            // With several traces the plots are FILE-NAME.svg: a folder
            // under FILE's own name is no obstacle.
            if traces.len() > 1 && svg == onto_folder {
                continue;
            }
            let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"--svg", &svg];
            args.extend(traces.iter().map(|t| t as &dyn AsRef<std::ffi::OsStr>));
            let out = replay(&args);
            let err = text(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{}: {err}", svg.display());
            assert_eq!(err.lines().count(), 1, "one line: {err}");
            assert!(
                err.starts_with(&format!("streamcore: --svg {}", svg.display()))
                    && err.contains(needle),
                "{err}"
            );
            assert!(out.stdout.is_empty(), "nothing replayed");
        }
    }
    assert!(onto_folder.is_dir());
}

/// A write that fails late (here a full disk: the plot's name is a link to
/// /dev/full) fails the command, but the report is printed all the same,
/// without a plot it does not have.
#[cfg(target_os = "linux")]
#[test]
fn a_plot_that_cannot_be_written_still_leaves_the_report() {
    let dir = scratch("svg-full");
    let svg = dir.join("full.svg");
    std::os::unix::fs::symlink("/dev/full", &svg).unwrap();
    let out = replay(&[&"--svg", &svg, &trace("two_stream_pipeline")]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(
        err.contains(&format!("{}: cannot write the plot", svg.display())),
        "{err}"
    );
    let table = text(&out.stdout);
    assert!(table.contains("peak reserved"), "the table: {table}");
    assert!(!table.contains("plot:"), "no plot named: {table}");

    let out = replay(&[&"--json", &"--svg", &svg, &trace("two_stream_pipeline")]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 1);
    assert!(lines[0].get("peak_reserved_bytes").is_some());
    assert!(lines[0].get("svg").is_none(), "no plot named");
}
