//! Writing traces in the format [`Trace::load`] reads: a header line, then
//! one JSON line per event, ids being the dense slots (so loading a written
//! trace gives back the same events).

use std::format;
use std::io::{self, Write};
use std::path::Path;
use std::string::String;
use std::vec::Vec;

use super::trace::{Trace, TraceEvent};

impl Trace {
    /// The trace as JSON lines: the header (the workload's name and the
    /// recorder's figures it has), then the events.
    pub fn to_jsonl(&self) -> String {
        let h = &self.header;
        let mut text = format!("{{\"header\": {{\"workload\": \"{}\"", escape(&h.workload));
        for (key, value) in [
            ("peak_allocated_bytes", h.peak_allocated_bytes),
            ("peak_reserved_bytes", h.peak_reserved_bytes),
            ("segment_allocs", h.segment_allocs),
            ("streams", h.streams),
            ("events", h.events),
            ("live_at_start_bytes", h.live_at_start_bytes),
        ] {
            if let Some(v) = value {
                text.push_str(&format!(", \"{key}\": {v}"));
            }
        }
        text.push_str("}}\n");
        for e in &self.events {
            match *e {
                TraceEvent::Alloc { slot, size, stream } => text.push_str(&format!(
                    "{{\"op\":\"alloc\",\"id\":{slot},\"size\":{size},\"stream\":{stream}}}\n"
                )),
                TraceEvent::Free { slot } => {
                    text.push_str(&format!("{{\"op\":\"free\",\"id\":{slot}}}\n"));
                }
            }
        }
        text
    }

    /// Writes the trace gzip-compressed to `path` (`.jsonl.gz`).
    pub fn save(&self, path: impl AsRef<Path>) -> io::Result<()> {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(self.to_jsonl().as_bytes())?;
        std::fs::write(path, enc.finish()?)
    }
}

/// `s` as the inside of a JSON string.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}
