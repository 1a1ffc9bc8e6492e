//! Allocation traces: gzip (or plain) JSON lines, a header first, then
//! `{"op":"alloc","id","size","stream"}` / `{"op":"free","id"}` events.
//!
//! Loading checks the whole trace: every free names a live id, every size is
//! sensible, ids are renumbered into dense slots so a replay needs no map.

use std::fmt;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::string::String;
use std::vec::Vec;
use streamcore::hash::FxHashMap;

use super::json::{self, Value};

mod header;
mod slots;

use header::parse_header;
pub(crate) use slots::SlotNumbers;

/// The largest size a trace may name (16 TiB, beyond any device).
pub const MAX_TRACE_SIZE: u64 = 1 << 44;
/// The most streams a trace may use.
pub const MAX_TRACE_STREAMS: u32 = 1024;
/// The longest line a trace may have, in bytes (a header or an event is a
/// few hundred): a longer one is refused as malformed once this much was
/// read, so a file of one endless line takes bounded memory.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// What the header says about the recorded run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceHeader {
    /// The workload's name.
    pub workload: String,
    /// The recorder's own peak of allocated bytes (PyTorch's figure).
    pub peak_allocated_bytes: Option<u64>,
    /// The recorder's own peak of reserved bytes (PyTorch's figure).
    pub peak_reserved_bytes: Option<u64>,
    /// Storage allocations the recorder made.
    pub segment_allocs: Option<u64>,
    /// Streams the header announces.
    pub streams: Option<u64>,
    /// Events the header announces.
    pub events: Option<u64>,
    /// Bytes the recorder held before the recording began.
    pub live_at_start_bytes: Option<u64>,
}

impl TraceHeader {
    /// The recorder's peak reserved / peak allocated, when both are known.
    pub fn recorder_ratio(&self) -> Option<f64> {
        match (self.peak_reserved_bytes, self.peak_allocated_bytes) {
            (Some(r), Some(a)) if a > 0 => Some(r as f64 / a as f64),
            _ => None,
        }
    }
}

/// One event, ids renumbered into dense slots.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TraceEvent {
    /// Reserve `size` bytes on `stream`; the allocation is known as `slot`.
    Alloc {
        /// Dense allocation number.
        slot: u32,
        /// Bytes.
        size: u64,
        /// Stream, numbered from 0.
        stream: u32,
    },
    /// Free the allocation `slot`.
    Free {
        /// Dense allocation number.
        slot: u32,
    },
}

/// A loaded, checked trace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trace {
    /// The header.
    pub header: TraceHeader,
    /// The events in order.
    pub events: Vec<TraceEvent>,
    /// Number of slots: every event's slot is below it. A slot is reused
    /// once its allocation is freed, so this is the most allocations live
    /// at once, not the number of allocations.
    pub slots: u32,
    /// Number of streams used (highest stream + 1).
    pub streams: u32,
}

/// Why a trace could not be loaded.
#[derive(Debug)]
#[non_exhaustive]
pub enum TraceError {
    /// The file does not exist.
    NotFound {
        /// The path.
        path: PathBuf,
    },
    /// Reading failed.
    Io {
        /// What was being read.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
    /// The gzip stream ends early.
    TruncatedGzip {
        /// The path.
        path: PathBuf,
    },
    /// The gzip data is corrupt.
    BadGzip {
        /// The path.
        path: PathBuf,
        /// What the decoder said.
        why: String,
    },
    /// Bytes that are not gzip follow the end of the gzip data.
    TrailingData {
        /// The path.
        path: PathBuf,
    },
    /// The first line is not a `{"header": {...}}` object.
    MissingHeader {
        /// Why.
        why: String,
    },
    /// A line could not be read as an event.
    MalformedLine {
        /// 1-based line number.
        line: usize,
        /// Why.
        why: String,
    },
    /// A free of an id that is not live.
    UnknownFree {
        /// 1-based line number.
        line: usize,
        /// The id.
        id: u64,
    },
    /// An alloc of an id that is already live.
    DuplicateId {
        /// 1-based line number.
        line: usize,
        /// The id.
        id: u64,
    },
    /// An alloc of zero bytes.
    ZeroSize {
        /// 1-based line number.
        line: usize,
        /// The id.
        id: u64,
    },
    /// An alloc larger than [`MAX_TRACE_SIZE`].
    AbsurdSize {
        /// 1-based line number.
        line: usize,
        /// The id.
        id: u64,
        /// The size.
        size: u64,
    },
    /// A stream used before a lower-numbered one: streams are numbered 0,
    /// 1, ... in order of first use.
    StreamOutOfOrder {
        /// 1-based line number.
        line: usize,
        /// The stream the line uses.
        stream: u32,
        /// The number its first use should have had.
        expected: u32,
    },
    /// The process could not have the memory for the trace's events (a
    /// trace of billions of events, or a gzip file that decompresses to
    /// one): refused here rather than aborting the process.
    OutOfMemory {
        /// 1-based line number of the event that did not fit.
        line: usize,
        /// The events loaded before it.
        events: u64,
    },
    /// The header announces a count (`events`, `streams`) the trace does
    /// not have.
    HeaderMismatch {
        /// Which count.
        what: &'static str,
        /// The header's figure.
        header: u64,
        /// The trace's.
        found: u64,
    },
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceError::NotFound { path } => write!(f, "{}: no such file", path.display()),
            TraceError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            TraceError::TruncatedGzip { path } => {
                write!(
                    f,
                    "{}: the gzip data ends early (truncated file?)",
                    path.display()
                )
            }
            TraceError::BadGzip { path, why } => {
                write!(f, "{}: corrupt gzip data ({why})", path.display())
            }
            TraceError::TrailingData { path } => write!(
                f,
                "{}: bytes that are not gzip after the end of the gzip data (appended to, or damaged?)",
                path.display()
            ),
            TraceError::MissingHeader { why } => write!(f, "line 1: no trace header ({why})"),
            TraceError::MalformedLine { line, why } => write!(f, "line {line}: {why}"),
            TraceError::UnknownFree { line, id } => {
                write!(f, "line {line}: free of id {id}, which is not live")
            }
            TraceError::DuplicateId { line, id } => {
                write!(f, "line {line}: alloc of id {id}, which is already live")
            }
            TraceError::ZeroSize { line, id } => write!(f, "line {line}: id {id} has size 0"),
            TraceError::AbsurdSize { line, id, size } => write!(
                f,
                "line {line}: id {id} has size {size}, above the {MAX_TRACE_SIZE} B limit"
            ),
            TraceError::StreamOutOfOrder {
                line,
                stream,
                expected,
            } => write!(
                f,
                "line {line}: stream {stream} is used before stream {expected} (streams are \
                 numbered 0, 1, ... in order of first use)"
            ),
            TraceError::OutOfMemory { line, events } => write!(
                f,
                "line {line}: no memory left for more events after {events} (a trace this \
                 long cannot be loaded by this process)"
            ),
            TraceError::HeaderMismatch {
                what,
                header,
                found,
            } => write!(
                f,
                "line 1: the header announces {header} {what}, the trace has {found} \
                 (cut short, or edited?)"
            ),
        }
    }
}

impl std::error::Error for TraceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TraceError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl Trace {
    /// Loads a trace file, gzip or plain (told apart by the gzip magic).
    pub fn load(path: impl AsRef<Path>) -> Result<Self, TraceError> {
        let path = path.as_ref();
        let file = std::fs::File::open(path).map_err(|source| {
            if source.kind() == io::ErrorKind::NotFound {
                TraceError::NotFound {
                    path: path.to_path_buf(),
                }
            } else {
                TraceError::Io {
                    path: path.to_path_buf(),
                    source,
                }
            }
        })?;
        Self::read(file, path)
    }

    /// Reads a trace from `reader` (gzip or plain); `path` names it in errors.
    ///
    /// A gzip file may hold several members one after another; anything
    /// else after the last one is an error ([`TraceError::TrailingData`]).
    /// When a line of a gzip file is wrong, the rest of the gzip data is
    /// checked first: a corrupt stream is reported as such
    /// ([`TraceError::BadGzip`]), not as the garbage lines it decoded to.
    pub fn read(reader: impl Read, path: &Path) -> Result<Self, TraceError> {
        let mut buffered = BufReader::with_capacity(1 << 16, reader);
        let magic = buffered.fill_buf().map_err(|source| TraceError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        if magic.starts_with(&GZIP_MAGIC) {
            let gz = Members {
                decoder: Some(flate2::bufread::GzDecoder::new(buffered)),
            };
            let mut lines = BufReader::with_capacity(1 << 16, gz);
            match Self::parse_lines(&mut lines, path) {
                Err(e @ TraceError::Io { .. })
                | Err(e @ TraceError::TruncatedGzip { .. })
                | Err(e @ TraceError::BadGzip { .. })
                | Err(e @ TraceError::TrailingData { .. }) => Err(e),
                Err(content) => match io::copy(&mut lines, &mut io::sink()) {
                    // The gzip data is intact: the content is what is wrong.
                    Ok(_) => Err(content),
                    Err(e) => Err(Self::io_error(path, e)),
                },
                ok => ok,
            }
        } else {
            Self::parse_lines(buffered, path)
        }
    }

    fn io_error(path: &Path, source: io::Error) -> TraceError {
        if source
            .get_ref()
            .is_some_and(|e| e.downcast_ref::<NotGzip>().is_some())
        {
            return TraceError::TrailingData {
                path: path.to_path_buf(),
            };
        }
        match source.kind() {
            io::ErrorKind::UnexpectedEof => TraceError::TruncatedGzip {
                path: path.to_path_buf(),
            },
            io::ErrorKind::InvalidData | io::ErrorKind::InvalidInput => TraceError::BadGzip {
                path: path.to_path_buf(),
                why: source.to_string(),
            },
            _ => TraceError::Io {
                path: path.to_path_buf(),
                source,
            },
        }
    }

    /// Parses JSON lines (already decompressed).
    pub fn parse_lines(mut reader: impl BufRead, path: &Path) -> Result<Self, TraceError> {
        let mut trace = Trace::default();
        let mut live: FxHashMap<u64, u32> = FxHashMap::default();
        let mut slots = SlotNumbers::default();
        let mut buf = Vec::new();
        let mut line = 0usize;
        let mut header_seen = false;
        loop {
            buf.clear();
            // At most one byte past the limit is read: a file of one endless
            // line (a gzip bomb of zeros, /dev/zero) is refused in bounded
            // memory instead of being read whole.
            let n = (&mut reader)
                .take(MAX_LINE_BYTES as u64 + 1)
                .read_until(b'\n', &mut buf)
                .map_err(|e| Self::io_error(path, e))?;
            if n == 0 {
                break;
            }
            line += 1;
            if buf.len() > MAX_LINE_BYTES {
                return Err(TraceError::MalformedLine {
                    line,
                    why: format!("longer than {MAX_LINE_BYTES} bytes (no trace line is)"),
                });
            }
            let text = match std::str::from_utf8(&buf) {
                Ok(t) => t.trim(),
                Err(_) => {
                    return Err(TraceError::MalformedLine {
                        line,
                        why: "not UTF-8".into(),
                    });
                }
            };
            if !header_seen {
                header_seen = true;
                // A byte-order mark, as some editors write one, is not JSON
                // but says nothing wrong about the trace: skipped.
                trace.header = parse_header(text.strip_prefix('\u{feff}').unwrap_or(text))?;
                reserve_announced(&mut trace);
                continue;
            }
            if text.is_empty() {
                continue;
            }
            let event = parse_event(text, line, &mut live, &mut slots, &mut trace)?;
            if trace.events.try_reserve(1).is_err() {
                return Err(out_of_memory(line, &trace));
            }
            trace.events.push(event);
        }
        trace.slots = slots.count();
        if !header_seen {
            return Err(TraceError::MissingHeader {
                why: "the trace is empty".into(),
            });
        }
        let counts = [
            ("events", trace.header.events, trace.events.len() as u64),
            ("streams", trace.header.streams, u64::from(trace.streams)),
        ];
        for (what, header, found) in counts {
            match header {
                Some(header) if header != found => {
                    return Err(TraceError::HeaderMismatch {
                        what,
                        header,
                        found,
                    });
                }
                _ => {}
            }
        }
        Ok(trace)
    }
}

/// The most events a header's count reserves room for up front (6 GiB of
/// events): past it the events grow as they are read, as they do with no
/// count.
const MAX_RESERVED_EVENTS: u64 = 1 << 28;

/// Room for the events the header announces, taken at once: a trace of
/// millions of events then holds one array of its size, not the up to
/// twice as large one that growing by doubling leaves (and copies on the
/// way). The header is the file's word, not a fact: a count past
/// [`MAX_RESERVED_EVENTS`], or one the allocator refuses, reserves nothing,
/// and a count the events do not match is reported at the end
/// ([`TraceError::HeaderMismatch`]).
fn reserve_announced(trace: &mut Trace) {
    if let Some(announced) = trace.header.events.filter(|&n| n <= MAX_RESERVED_EVENTS) {
        // A refusal is not an error: the events then grow as they are read.
        let _ = trace.events.try_reserve_exact(announced as usize);
    }
}

/// The two bytes every gzip member starts with.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// The payload of the read error for bytes after the last gzip member.
#[derive(Debug)]
struct NotGzip;

impl fmt::Display for NotGzip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("bytes that are not gzip after the end of the gzip data")
    }
}

impl std::error::Error for NotGzip {}

/// The decompressed bytes of gzip members one after another; anything but
/// a member after one is an error carrying [`NotGzip`].
struct Members<R: BufRead> {
    decoder: Option<flate2::bufread::GzDecoder<R>>,
}

impl<R: BufRead> Read for Members<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let Some(decoder) = self.decoder.as_mut() else {
                return Ok(0);
            };
            let n = decoder.read(buf)?;
            if n > 0 || buf.is_empty() {
                return Ok(n);
            }
            // The member ended (its checksum verified): what follows?
            let Some(decoder) = self.decoder.take() else {
                return Ok(0);
            };
            let mut rest = decoder.into_inner();
            let next = rest.fill_buf()?;
            if next.is_empty() {
                return Ok(0);
            }
            if !next.starts_with(&GZIP_MAGIC) {
                return Err(io::Error::new(io::ErrorKind::InvalidData, NotGzip));
            }
            self.decoder = Some(flate2::bufread::GzDecoder::new(rest));
        }
    }
}

/// The error for line `line` when the memory for `trace`'s next event (or
/// the ids live so far) could not be had.
fn out_of_memory(line: usize, trace: &Trace) -> TraceError {
    TraceError::OutOfMemory {
        line,
        events: trace.events.len() as u64,
    }
}

/// The non-negative integer `key` of the object `v` on line `line`.
fn field(v: &Value, key: &str, line: usize) -> Result<u64, TraceError> {
    match v.get(key) {
        Some(Value::UInt(n)) => Ok(*n),
        Some(Value::Number(x)) => Err(TraceError::MalformedLine {
            line,
            why: std::format!("\"{key}\" is {x}, {}", super::json::why_not_u64(*x)),
        }),
        Some(_) => Err(TraceError::MalformedLine {
            line,
            why: std::format!("\"{key}\" is not a non-negative integer"),
        }),
        None => Err(TraceError::MalformedLine {
            line,
            why: std::format!("missing \"{key}\""),
        }),
    }
}

fn parse_event(
    text: &str,
    line: usize,
    live: &mut FxHashMap<u64, u32>,
    slots: &mut SlotNumbers,
    trace: &mut Trace,
) -> Result<TraceEvent, TraceError> {
    let v = json::parse(text).map_err(|why| TraceError::MalformedLine { line, why })?;
    if !matches!(v, Value::Object(_)) {
        return Err(TraceError::MalformedLine {
            line,
            why: "not a JSON object (an event is {\"op\": \"alloc\" or \"free\", ...})".into(),
        });
    }
    let op = match v.get("op") {
        Some(Value::Str(s)) => s.as_str(),
        Some(_) => {
            return Err(TraceError::MalformedLine {
                line,
                why: "\"op\" is not a string".into(),
            });
        }
        None => {
            return Err(TraceError::MalformedLine {
                line,
                why: "missing \"op\"".into(),
            });
        }
    };
    let id = field(&v, "id", line)?;
    match op {
        "alloc" => {
            let size = field(&v, "size", line)?;
            let stream = field(&v, "stream", line)?;
            if size == 0 {
                return Err(TraceError::ZeroSize { line, id });
            }
            if size > MAX_TRACE_SIZE {
                return Err(TraceError::AbsurdSize { line, id, size });
            }
            if stream >= u64::from(MAX_TRACE_STREAMS) {
                return Err(TraceError::MalformedLine {
                    line,
                    why: std::format!(
                        "stream {stream} is past the last a trace may use ({})",
                        MAX_TRACE_STREAMS - 1
                    ),
                });
            }
            let stream = stream as u32;
            if stream > trace.streams {
                return Err(TraceError::StreamOutOfOrder {
                    line,
                    stream,
                    expected: trace.streams,
                });
            }
            if live.try_reserve(1).is_err() {
                return Err(out_of_memory(line, trace));
            }
            let Some(slot) = slots.take() else {
                return Err(TraceError::MalformedLine {
                    line,
                    why: "too many allocations live at once".into(),
                });
            };
            // A duplicate ends the load: what the insert replaced is moot.
            if live.insert(id, slot).is_some() {
                return Err(TraceError::DuplicateId { line, id });
            }
            trace.streams = trace.streams.max(stream + 1);
            Ok(TraceEvent::Alloc { slot, size, stream })
        }
        "free" => match live.remove(&id) {
            Some(slot) => {
                slots.free(slot);
                Ok(TraceEvent::Free { slot })
            }
            None => Err(TraceError::UnknownFree { line, id }),
        },
        other => Err(TraceError::MalformedLine {
            line,
            why: std::format!("unknown op \"{other}\""),
        }),
    }
}
