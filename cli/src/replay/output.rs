//! What `streamcore replay` prints: a table per trace, an overview of
//! several, or one JSON object per trace.

use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use streamcore::memory::{HumanBytes, Trimming};
use streamcore_mock::replay::{ReplayReport, TraceHeader};

/// One trace's replay, ready to print.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The trace file as given.
    pub path: PathBuf,
    /// Its header.
    pub header: TraceHeader,
    /// Streams the trace used.
    pub streams: u32,
    /// What the replay measured.
    pub report: ReplayReport,
    /// What trimming did, summed over the streams' managers (their
    /// `MemoryReport`s).
    pub trimming: Trimming,
    /// The layout's name.
    pub layout: String,
    /// Where the plot went, with `--svg`.
    pub svg: Option<PathBuf>,
}

/// One line for the table, when trimming settled or gave idle chunks back
/// past its churn budget.
fn trimming_line(t: &Trimming) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(settled) = t.settled_at() {
        parts.push(settled.to_string());
    }
    if t.capped_decommits > 0 {
        parts.push(format!(
            "{} idle chunks given back past the churn budget",
            thousands(t.capped_decommits)
        ));
    }
    (!parts.is_empty()).then(|| format!("trimming: {}", parts.join("; ")))
}

impl Outcome {
    fn name(&self) -> String {
        if self.header.workload.is_empty() {
            stem(&self.path)
        } else {
            self.header.workload.clone()
        }
    }

    /// The name as a terminal shows it: control characters a trace's
    /// header may carry written as escapes, never sent to the terminal.
    fn shown_name(&self) -> String {
        printable(&self.name())
    }
}

pub use crate::text::printable;

/// A file's name up to its first dot (`gpt2_train.jsonl.gz` → `gpt2_train`);
/// `stdin` for `-` (standard input).
pub fn stem(path: &Path) -> String {
    if super::input::is_stdin(path) {
        return "stdin".to_owned();
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match name.split('.').next() {
        Some(s) if !s.is_empty() => s.to_owned(),
        _ => name,
    }
}

/// `1234567` → `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn bytes(v: Option<u64>) -> String {
    v.map_or_else(|| "-".to_owned(), |b| HumanBytes(b).to_string())
}

/// What the recorded run's column is called: the trace header's figures are
/// those of the program PyTorch recorded, not of a replay of its events.
pub const RECORDED: &str = "PyTorch, recorded";

/// The note under a table with the recorded run's figures, line by line.
pub const RECORDED_NOTE: [&str; 2] = [
    "PyTorch, recorded: the recorded program's own figures (the trace header),",
    "not a replay of these events: PyTorch held some frees longer there.",
];

/// A ratio to four decimals, or "-" where it has no value.
fn ratio(x: Option<f64>) -> String {
    x.map_or("-".into(), |x| format!("{x:.4}"))
}

/// The table of one trace: this replay beside the recorded run's figures.
pub fn table(out: &mut impl Write, o: &Outcome) -> io::Result<()> {
    let r = &o.report;
    let h = &o.header;
    let torch = h.peak_reserved_bytes.is_some()
        || h.peak_allocated_bytes.is_some()
        || h.segment_allocs.is_some();
    writeln!(
        out,
        "{}  ({}, layout {})",
        printable(&super::input::shown(&o.path).display().to_string()),
        o.shown_name(),
        printable(&o.layout)
    )?;
    let row = |out: &mut dyn Write, what: &str, ours: String, theirs: Option<String>| match (
        torch, theirs,
    ) {
        (true, Some(t)) => writeln!(out, "  {what:<22} {ours:>14} {t:>18}"),
        _ => writeln!(out, "  {what:<22} {ours:>14}"),
    };
    if torch {
        writeln!(out, "  {:<22} {:>14} {:>18}", "", "this replay", RECORDED)?;
    }
    row(out, "events", thousands(r.events), None)?;
    row(out, "streams", thousands(u64::from(o.streams)), None)?;
    row(
        out,
        "peak reserved",
        bytes(Some(r.peak_reserved)),
        Some(bytes(h.peak_reserved_bytes)),
    )?;
    row(
        out,
        "peak live / allocated",
        bytes(Some(r.peak_live)),
        Some(bytes(h.peak_allocated_bytes)),
    )?;
    row(
        out,
        "reserved / live",
        ratio(r.live_ratio()),
        Some(ratio(h.recorder_ratio())),
    )?;
    row(
        out,
        "storage allocations",
        thousands(r.storage.allocs),
        Some(h.segment_allocs.map_or("-".into(), thousands)),
    )?;
    row(out, "time per op", format!("{:.1} ns", r.ns_per_op()), None)?;
    if let Some(line) = trimming_line(&o.trimming) {
        writeln!(out, "  {line}")?;
    }
    if torch {
        for line in RECORDED_NOTE {
            writeln!(out, "  {line}")?;
        }
    }
    if let Some(start) = h.live_at_start_bytes.filter(|&b| b > 0) {
        writeln!(
            out,
            "  The recorded figures include {} PyTorch held before the recording began.",
            HumanBytes(start)
        )?;
    }
    if let Some(svg) = &o.svg {
        writeln!(out, "  plot: {}", svg.display())?;
    }
    Ok(())
}

/// One row per trace, after the tables of several.
pub fn overview(out: &mut impl Write, all: &[Outcome]) -> io::Result<()> {
    let width = all
        .iter()
        .map(|o| o.shown_name().chars().count())
        .max()
        .unwrap_or(0)
        .max(5);
    writeln!(
        out,
        "{:<width$} {:>9} {:>7} {:>13} {:>13} {:>9} {:>9} {:>8} {:>8}",
        "trace",
        "events",
        "streams",
        "peak reserved",
        "peak live",
        "ratio",
        "recorded",
        "allocs",
        "ns/op"
    )?;
    for o in all {
        let r = &o.report;
        writeln!(
            out,
            "{:<width$} {:>9} {:>7} {:>13} {:>13} {:>9} {:>9} {:>8} {:>8.1}",
            o.shown_name(),
            thousands(r.events),
            o.streams,
            HumanBytes(r.peak_reserved).to_string(),
            HumanBytes(r.peak_live).to_string(),
            ratio(r.live_ratio()),
            ratio(o.header.recorder_ratio()),
            thousands(r.storage.allocs),
            r.ns_per_op()
        )?;
    }
    writeln!(out, "ratio: this replay's peak reserved / peak live")?;
    writeln!(
        out,
        "recorded: PyTorch's own peak reserved / peak allocated in the recorded program \
         (the trace header), not a replay of its events"
    )
}

fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// One JSON object on one line; keys from the header only when it has them,
/// named `recorded_torch_*`: the recorded program's own figures, not a
/// replay's.
pub fn json_line(out: &mut impl Write, o: &Outcome) -> io::Result<()> {
    let r = &o.report;
    let h = &o.header;
    let mut s = String::from("{");
    let mut member = |key: &str, value: String| {
        if s.len() > 1 {
            s.push(',');
        }
        s.push_str(&json_string(key));
        s.push(':');
        s.push_str(&value);
    };
    member("trace", json_string(&o.path.to_string_lossy()));
    member("workload", json_string(&o.name()));
    member("layout", json_string(&o.layout));
    member("events", r.events.to_string());
    member("streams", o.streams.to_string());
    member("allocs", r.allocs.to_string());
    member("peak_reserved_bytes", r.peak_reserved.to_string());
    member("peak_live_bytes", r.peak_live.to_string());
    // No value (null) when nothing was live.
    member(
        "ratio",
        r.live_ratio().map_or("null".into(), |x| format!("{x:.6}")),
    );
    member("storage_allocs", r.storage.allocs.to_string());
    member("storage_deallocs", r.storage.deallocs.to_string());
    member("trim_settled_bytes", o.trimming.settled.to_string());
    member(
        "round_trip_settles",
        o.trimming.round_trip_settles.to_string(),
    );
    member("capped_decommits", o.trimming.capped_decommits.to_string());
    member("ns_per_op", format!("{:.2}", r.ns_per_op()));
    if let Some(v) = h.peak_reserved_bytes {
        member("recorded_torch_peak_reserved_bytes", v.to_string());
    }
    if let Some(v) = h.peak_allocated_bytes {
        member("recorded_torch_peak_allocated_bytes", v.to_string());
    }
    if let Some(v) = h.recorder_ratio() {
        member("recorded_torch_ratio", format!("{v:.6}"));
    }
    if let Some(v) = h.segment_allocs {
        member("recorded_torch_segment_allocs", v.to_string());
    }
    if let Some(v) = h.live_at_start_bytes {
        member("recorded_torch_live_at_start_bytes", v.to_string());
    }
    if let Some(svg) = &o.svg {
        member("svg", json_string(&svg.to_string_lossy()));
    }
    s.push('}');
    writeln!(out, "{s}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use streamcore::memory::MemoryReport;
    use streamcore_mock::replay::StorageStats;
    use streamcore_mock::replay::json::{self, Value};

    fn outcome(header: TraceHeader) -> Outcome {
        Outcome {
            path: PathBuf::from("dir/a \"b\".jsonl.gz"),
            header,
            streams: 2,
            report: ReplayReport {
                events: 10,
                allocs: 5,
                peak_reserved: 2048,
                peak_live: 1024,
                storage: StorageStats {
                    allocs: 3,
                    deallocs: 1,
                    ..StorageStats::default()
                },
                elapsed_ns: 500,
            },
            trimming: Trimming::default(),
            layout: "balanced".into(),
            svg: None,
        }
    }

    #[test]
    fn trimming_is_shown_only_when_it_settled_or_passed_its_budget() {
        let text = |o: &Outcome| {
            let mut buf = Vec::new();
            table(&mut buf, o).unwrap();
            String::from_utf8(buf).unwrap()
        };
        let plain = outcome(TraceHeader::default());
        assert!(!text(&plain).contains("trimming"), "{}", text(&plain));
        let mut o = plain.clone();
        let report = |settled, round_trip_settles, capped_decommits| MemoryReport {
            pools: Vec::new(),
            pending_release: 0,
            trimming: Trimming {
                settled,
                round_trip_settles,
                capped_decommits,
            },
        };
        o.trimming = [report(3 << 20, 1, 0), report(1 << 20, 0, 1200)]
            .iter()
            .map(|r| r.trimming)
            .sum();
        assert_eq!(
            o.trimming,
            Trimming {
                settled: 4 << 20,
                round_trip_settles: 1,
                capped_decommits: 1200
            }
        );
        let shown = text(&o);
        assert!(
            shown.contains(
                "  trimming: settled at 4.00 MiB (raised by 1 round trip); \
                 1,200 idle chunks given back past the churn budget\n"
            ),
            "{shown}"
        );
        let mut buf = Vec::new();
        json_line(&mut buf, &o).unwrap();
        let v = json::parse(String::from_utf8(buf).unwrap().trim()).unwrap();
        for (key, want) in [
            ("trim_settled_bytes", 4 << 20),
            ("round_trip_settles", 1),
            ("capped_decommits", 1200),
        ] {
            assert_eq!(v.get(key).and_then(Value::as_u64), Some(want), "{key}");
        }
    }

    #[test]
    fn json_lines_parse_back_with_header_keys_only_when_known() {
        let mut buf = Vec::new();
        json_line(&mut buf, &outcome(TraceHeader::default())).unwrap();
        let text = String::from_utf8(buf).unwrap();
        assert_eq!(text.lines().count(), 1);
        let v = json::parse(text.trim()).unwrap();
        assert_eq!(
            v.get("trace").and_then(Value::as_str),
            Some("dir/a \"b\".jsonl.gz")
        );
        assert_eq!(v.get("workload").and_then(Value::as_str), Some("a \"b\""));
        assert_eq!(
            v.get("peak_reserved_bytes").and_then(Value::as_u64),
            Some(2048)
        );
        assert_eq!(v.get("ratio"), Some(&Value::Number(2.0)));
        assert_eq!(v.get("ns_per_op"), Some(&Value::Number(50.0)));
        assert!(v.get("recorded_torch_peak_reserved_bytes").is_none());

        let mut buf = Vec::new();
        let header = TraceHeader {
            workload: "w".into(),
            peak_reserved_bytes: Some(300),
            peak_allocated_bytes: Some(200),
            ..TraceHeader::default()
        };
        json_line(&mut buf, &outcome(header)).unwrap();
        let v = json::parse(String::from_utf8(buf).unwrap().trim()).unwrap();
        assert_eq!(
            v.get("recorded_torch_peak_reserved_bytes")
                .and_then(Value::as_u64),
            Some(300)
        );
        assert_eq!(
            v.get("recorded_torch_peak_allocated_bytes")
                .and_then(Value::as_u64),
            Some(200)
        );
        assert_eq!(v.get("recorded_torch_ratio"), Some(&Value::Number(1.5)));
        assert!(v.get("recorded_torch_segment_allocs").is_none());
        assert!(
            v.get("torch_ratio").is_none(),
            "no unlabelled PyTorch figure"
        );
    }

    #[test]
    fn json_strings_escape_controls() {
        assert_eq!(json_string("a\u{1}\n\\"), r#""a\u0001\n\\""#);
    }

    #[test]
    fn tables_show_pytorch_only_when_the_header_has_it() {
        let mut plain = Vec::new();
        table(&mut plain, &outcome(TraceHeader::default())).unwrap();
        let plain = String::from_utf8(plain).unwrap();
        assert!(!plain.contains("PyTorch"), "{plain}");
        assert!(plain.contains("2.0000"), "{plain}");

        let mut both = Vec::new();
        let header = TraceHeader {
            peak_reserved_bytes: Some(3 << 20),
            peak_allocated_bytes: Some(2 << 20),
            live_at_start_bytes: Some(1 << 20),
            ..TraceHeader::default()
        };
        table(&mut both, &outcome(header)).unwrap();
        let both = String::from_utf8(both).unwrap();
        for needle in [
            "PyTorch, recorded",
            "not a replay of these events",
            "3.00 MiB",
            "1.5000",
            "1.00 MiB PyTorch held before",
        ] {
            assert!(both.contains(needle), "{needle:?} in {both}");
        }
    }

    #[test]
    fn stems_and_thousands() {
        assert_eq!(stem(Path::new("x/gpt2_train.jsonl.gz")), "gpt2_train");
        assert_eq!(stem(Path::new(".hidden")), ".hidden");
        assert_eq!(stem(Path::new("-")), "stdin");
        assert_eq!(thousands(9_489), "9,489");
        assert_eq!(thousands(0), "0");
    }
}
