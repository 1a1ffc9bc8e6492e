//! The trace's first line: `{"header": {...}}`, the recorder's figures,
//! each optional, checked for their types and against each other.

use super::super::json::{self, Value};
use super::{TraceError, TraceHeader, field};

/// The header line `text`, as a [`TraceHeader`]: a figure that is there is
/// a non-negative integer (one of another type is refused, not read as
/// absent), the workload a string, and the figures agree with each other
/// ([`check_header_figures`]).
pub(super) fn parse_header(text: &str) -> Result<TraceHeader, TraceError> {
    let v = json::parse(text).map_err(|why| TraceError::MissingHeader { why })?;
    let Some(h) = v.get("header") else {
        return Err(TraceError::MissingHeader {
            why: "the first line has no \"header\" member".into(),
        });
    };
    if !matches!(h, Value::Object(_)) {
        return Err(TraceError::MissingHeader {
            why: "\"header\" is not an object".into(),
        });
    }
    // Each figure is optional, but one that is there is a non-negative
    // integer: a figure of another type is refused, not read as absent.
    let num = |k: &str| match h.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(_) => field(h, k, 1).map(Some),
    };
    let workload = match h.get("workload") {
        None | Some(Value::Null) => "",
        Some(Value::Str(s)) => s.as_str(),
        Some(_) => {
            return Err(TraceError::MalformedLine {
                line: 1,
                why: "\"workload\" in the header is not a string".into(),
            });
        }
    };
    let header = TraceHeader {
        workload: workload.into(),
        peak_allocated_bytes: num("peak_allocated_bytes")?,
        peak_reserved_bytes: num("peak_reserved_bytes")?,
        segment_allocs: num("segment_allocs")?,
        streams: num("streams")?,
        events: num("events")?,
        live_at_start_bytes: num("live_at_start_bytes")?,
    };
    check_header_figures(&header)?;
    Ok(header)
}

/// The recorder's figures must not contradict each other, or the replay
/// would print them (and their ratio) as if they were a run's: an
/// allocator's allocations lie inside what it reserved, so its peak reserved
/// is at least its peak allocated; and that peak includes what it held when
/// the recording began.
fn check_header_figures(h: &TraceHeader) -> Result<(), TraceError> {
    let rules = [
        (
            ("peak_reserved_bytes", h.peak_reserved_bytes),
            ("peak_allocated_bytes", h.peak_allocated_bytes),
            "an allocator's allocations lie inside what it reserved",
        ),
        (
            ("peak_allocated_bytes", h.peak_allocated_bytes),
            ("live_at_start_bytes", h.live_at_start_bytes),
            "the peak includes what was held when the recording began",
        ),
    ];
    for ((big, big_value), (small, small_value), because) in rules {
        if let (Some(b), Some(s)) = (big_value, small_value) {
            if b < s {
                return Err(TraceError::MalformedLine {
                    line: 1,
                    why: std::format!(
                        "the header's \"{big}\" ({b}) is below its \"{small}\" ({s}), \
                         which cannot be: {because}"
                    ),
                });
            }
        }
    }
    Ok(())
}
