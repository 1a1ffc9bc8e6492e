//! `streamcore replay --platform hip TRACE...`: the traces on the real
//! device, through streamcore's storages and through the driver's own pool
//! (`hipMallocAsync`) in the same process.
//!
//! Each allocator gets timed passes (nothing else in the loop; the two
//! allocators alternate round by round, the fastest of `--runs` counts) and
//! a memory pass (`hipMemGetInfo` after every event; peak
//! used = the most device memory in use as the driver reports it, above
//! what was in use before the pass, over the trace's own peak live bytes).

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use streamcore::drop_queue::FlushPolicy;
use streamcore::platform::Platform;
use streamcore_hip::{DEVICE_ALIGNMENT, HipPlatform, StoragePreference};
use streamcore_mock::replay::{Trace, TraceEvent};

use super::hip_target::{DeviceTarget, PoolTarget, StreamcoreTarget, TargetError};
use super::layout::{self, ChosenLayout};
use super::{ReplayArgs, TraceFailure, output};
use crate::platform::{StorageArg, hip_unavailable};

/// The columns every line has (the PyTorch script prints the same).
pub const COLUMNS: &str = "trace allocator touch wall_ms driver_calls peak_used peak_live ratio";

/// What one allocator did on one trace.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    /// Fastest timed pass, milliseconds (events, then waiting for the
    /// streams).
    pub wall_ms: f64,
    /// Driver calls that allocate or free memory in that pass.
    pub driver_calls: u64,
    /// Peak used above the start, as the driver reports it.
    pub peak_used: u64,
    /// The allocator's own books: the most bytes it held (streamcore only).
    pub books_peak: Option<u64>,
    /// Fences recorded for frees in the timed pass.
    pub fences: u64,
}

/// Runs `streamcore replay --platform hip`.
pub fn main(args: &ReplayArgs) -> ExitCode {
    // A bad argument is one whether a GPU is there or not: the layout is
    // checked before the runtime is loaded, all but whether it fits the
    // device's memory (below, with the device's properties).
    if let Err(e) = layout::check_without_device(&args.layout, DEVICE_ALIGNMENT) {
        super::report_layout_error(&e);
        return ExitCode::from(2);
    }
    let platform = match HipPlatform::new() {
        Ok(p) => p,
        Err(e) => {
            error_line!("{}", hip_unavailable(&e));
            return ExitCode::FAILURE;
        }
    };
    let platform = platform.with_storage(match args.storage() {
        StorageArg::Auto => StoragePreference::Auto,
        StorageArg::Malloc => StoragePreference::Malloc,
    });
    let props = platform.properties();
    let chosen = match layout::choose(&args.layout, &props) {
        Ok(c) => c,
        Err(e) => {
            // A bad argument, as on the mock (`replay --help`).
            super::report_layout_error(&e);
            return ExitCode::from(2);
        }
    };
    let mut out = io::stdout().lock();
    let head = writeln!(
        out,
        "# device {} ({} B), virtual-memory granularity {}, layout {}, touch {}, runs {}",
        output::printable(platform.device_name()),
        props.total_memory,
        platform
            .vmm_granularity()
            .map_or_else(|| "none".to_owned(), |g| g.to_string()),
        chosen.name,
        if args.touch { "64 KiB" } else { "no" },
        args.runs()
    )
    .and_then(|()| writeln!(out, "{COLUMNS} books_ratio"))
    .and_then(|()| out.flush());
    if let Err(e) = head {
        return super::output_error(&e);
    }
    report_traces(&args.traces, &mut out, |path, out| {
        run_trace(&platform, &chosen, path, args, out)
    })
}

/// Why a trace's lines were not printed.
#[derive(Debug)]
enum TraceRunError {
    /// The trace could not be loaded or replayed: one line saying which
    /// and why (the path in it); the other traces are still replayed.
    Trace(String),
    /// The output could not be written: the command stops.
    Output(io::Error),
}

/// Runs `run` on each trace in turn. A trace that fails is one line on
/// stderr and the others still run (status 1 at the end); output that
/// cannot be written stops the command at once, quietly with status 0 when
/// its reader went away (`| head`), as every command does.
fn report_traces<W: Write>(
    traces: &[PathBuf],
    out: &mut W,
    mut run: impl FnMut(&Path, &mut W) -> Result<(), TraceRunError>,
) -> ExitCode {
    let mut failed = 0;
    for path in traces {
        match run(path, out) {
            Ok(()) => {}
            Err(TraceRunError::Trace(why)) => {
                error_line!("{why}");
                failed += 1;
            }
            Err(TraceRunError::Output(e)) => return super::output_error(&e),
        }
    }
    if failed > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn run_trace(
    platform: &HipPlatform,
    chosen: &ChosenLayout,
    path: &Path,
    args: &ReplayArgs,
    out: &mut impl Write,
) -> Result<(), TraceRunError> {
    let trace = load(path)?;
    let name = column_name(&trace, path);
    // A failure of the replay itself: the first line of the reason (a
    // manager's message may carry its memory report on further lines).
    let failed = |who: &str, why: String| {
        TraceRunError::Trace(format!(
            "{}: {who}: {}",
            path.display(),
            why.lines().next().unwrap_or_default()
        ))
    };
    let touch = args.touch;
    let runs = args.runs();
    let policy = FlushPolicy {
        max_items: args.fence_every(),
        max_bytes: args.fence_bytes(),
    };
    let make_pool = || PoolTarget::new(platform, touch);
    let make_ours = || {
        StreamcoreTarget::new(
            platform,
            chosen.layout.clone(),
            touch,
            args.frees(),
            policy,
            !args.fence_poll_only,
        )
    };
    // Timed passes side by side: the two allocators alternate, round by
    // round (the order flips each round), so drift hits both alike.
    let (mut pool_best, mut ours_best) = (Timed::default(), Timed::default());
    for round in 0..runs {
        for who in [round % 2, 1 - round % 2] {
            if who == 0 {
                pool_best
                    .keep(timed(&trace, make_pool()).map_err(|e| failed("hipMallocAsync", e))?);
            } else {
                ours_best.keep(timed(&trace, make_ours()).map_err(|e| failed("streamcore", e))?);
            }
        }
    }
    let pool = memory(platform, &trace, pool_best, make_pool())
        .map_err(|e| failed("hipMallocAsync", e))?;
    let ours =
        memory(platform, &trace, ours_best, make_ours()).map_err(|e| failed("streamcore", e))?;
    let storage = platform.device_storage().map_or("?", |s| s.name());
    let live = peak_live(&trace);
    let touch_s = if touch { "yes" } else { "no" };
    let ratio = |b: u64| ratio_text(b, live);
    let line = |who: &str, m: &Measured| {
        format!(
            "{name} {who} {touch_s} {:.1} {} {} {live} {} {}",
            m.wall_ms,
            m.driver_calls,
            m.peak_used,
            ratio(m.peak_used),
            m.books_peak.map_or_else(|| "-".to_owned(), ratio)
        )
    };
    // The layout's name may be a file's path: one column all the same.
    let ours_name = column(&format!("streamcore-{storage}-{}", chosen.name));
    let written = writeln!(out, "{}", line("hipMallocAsync", &pool))
        .and_then(|()| writeln!(out, "{}", line(&ours_name, &ours)))
        .and_then(|()| {
            writeln!(
                out,
                "# {name}: streamcore/hipMallocAsync wall {:.3}, peak used {} vs {}; streamcore fences {}",
                ours.wall_ms / pool.wall_ms.max(1e-9),
                ratio(ours.peak_used),
                ratio(pool.peak_used),
                ours.fences
            )
        })
        .and_then(|()| out.flush());
    written.map_err(TraceRunError::Output)
}

/// `text` as one column of a line of columns split on whitespace (the
/// lines of `replay --platform hip`, which `scripts/score_replays.py` reads):
/// each whitespace or control character becomes `_`, so a workload named
/// `my model` stays one column and its figures stay under their headings;
/// an empty name is `-`.
fn column(text: &str) -> String {
    if text.is_empty() {
        return "-".to_owned();
    }
    text.chars()
        .map(|c| {
            if c.is_whitespace() || c.is_control() {
                '_'
            } else {
                c
            }
        })
        .collect()
}

/// `bytes` over the trace's peak live bytes, to four decimals; `-` for a
/// trace that allocates nothing, which has no ratio (a 0 would read as
/// the best ratio there is).
fn ratio_text(bytes: u64, live: u64) -> String {
    if live == 0 {
        "-".to_owned()
    } else {
        format!("{:.4}", bytes as f64 / live as f64)
    }
}

/// The trace at `path`, or the one line saying why not (naming the file
/// once, as the mock replay does).
fn load(path: &Path) -> Result<Trace, TraceRunError> {
    super::input::load(path).map_err(|e| {
        TraceRunError::Trace(TraceFailure::Load(super::input::shown(path), e).to_string())
    })
}

/// The trace's name in the first column: the header's workload, else the
/// file's name up to its first dot, as one column
/// ([`column`]).
fn column_name(trace: &Trace, path: &Path) -> String {
    if trace.header.workload.is_empty() {
        column(&output::stem(path))
    } else {
        column(&trace.header.workload)
    }
}

/// The trace's own peak of live bytes.
fn peak_live(trace: &Trace) -> u64 {
    let mut sizes = vec![0u64; trace.slots as usize];
    let (mut live, mut peak) = (0u64, 0u64);
    for e in &trace.events {
        match *e {
            TraceEvent::Alloc { slot, size, .. } => {
                sizes[slot as usize] = size;
                live += size;
                peak = peak.max(live);
            }
            TraceEvent::Free { slot } => live -= sizes[slot as usize],
        }
    }
    peak
}

/// The fastest timed pass so far: wall ms, driver calls, fences.
#[derive(Clone, Copy, Debug, Default)]
struct Timed(Option<(f64, u64, u64)>);

impl Timed {
    fn keep(&mut self, t: (f64, u64, u64)) {
        if self.0.is_none_or(|(b, _, _)| t.0 < b) {
            self.0 = Some(t);
        }
    }
}

/// One timed pass through a fresh target: (wall ms, driver calls, fences).
/// The wall time covers the events and waiting for the streams; tearing the
/// target down is outside it.
fn timed<T: DeviceTarget>(trace: &Trace, mut target: T) -> Result<(f64, u64, u64), String> {
    let start = Instant::now();
    pass(trace, &mut target, None).map_err(|(i, e)| format!("event {}: {e}", i + 1))?;
    target.finish().map_err(|e| e.to_string())?;
    let ms = start.elapsed().as_secs_f64() * 1e3;
    Ok((ms, target.driver_calls(), target.fences()))
}

/// The memory pass through a fresh target, completing `best`.
fn memory<T: DeviceTarget>(
    platform: &HipPlatform,
    trace: &Trace,
    best: Timed,
    mut target: T,
) -> Result<Measured, String> {
    let (wall_ms, driver_calls, fences) = best.0.unwrap_or_default();
    let base = platform.memory_info().map_err(|e| e.to_string())?.used();
    let mut peak = 0u64;
    let mut sample = |_: usize| -> Result<(), TargetError> {
        let used = platform.memory_info()?.used();
        peak = peak.max(used.saturating_sub(base));
        Ok(())
    };
    pass(trace, &mut target, Some(&mut sample))
        .map_err(|(i, e)| format!("event {}: {e}", i + 1))?;
    target.finish().map_err(|e| e.to_string())?;
    let books_peak = target.books_peak();
    drop(target);
    Ok(Measured {
        wall_ms,
        driver_calls,
        peak_used: peak,
        books_peak,
        fences,
    })
}

type Sampler<'a> = &'a mut dyn FnMut(usize) -> Result<(), TargetError>;

/// Feeds the events through `target`, calling `sample` after each.
fn pass<T: DeviceTarget>(
    trace: &Trace,
    target: &mut T,
    mut sample: Option<Sampler<'_>>,
) -> Result<(), (usize, TargetError)> {
    let mut handles: Vec<Option<(u32, T::Handle)>> = Vec::new();
    handles.resize_with(trace.slots as usize, || None);
    for (i, e) in trace.events.iter().enumerate() {
        match *e {
            TraceEvent::Alloc { slot, size, stream } => {
                let h = target.alloc(stream, size).map_err(|e| (i, e))?;
                handles[slot as usize] = Some((stream, h));
            }
            TraceEvent::Free { slot } => {
                if let Some((stream, h)) = handles[slot as usize].take() {
                    target.free(stream, h).map_err(|e| (i, e))?;
                }
            }
        }
        if let Some(s) = sample.as_mut() {
            s(i).map_err(|e| (i, e))?;
        }
    }
    // Whatever the trace left live is freed, so the target ends empty.
    for (stream, h) in handles.into_iter().flatten() {
        target
            .free(stream, h)
            .map_err(|e| (trace.events.len(), e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use streamcore_mock::replay::TraceHeader;

    /// Records what the replay asked for.
    #[derive(Default)]
    struct Fake {
        log: Vec<String>,
        next: u64,
    }

    impl DeviceTarget for Fake {
        type Handle = u64;
        fn alloc(&mut self, stream: u32, size: u64) -> Result<u64, TargetError> {
            self.next += 1;
            self.log
                .push(format!("alloc s{stream} {size} -> {}", self.next));
            Ok(self.next)
        }
        fn free(&mut self, stream: u32, handle: u64) -> Result<(), TargetError> {
            self.log.push(format!("free s{stream} {handle}"));
            Ok(())
        }
        fn finish(&mut self) -> Result<(), TargetError> {
            self.log.push("finish".into());
            Ok(())
        }
        fn driver_calls(&self) -> u64 {
            0
        }
        fn books_peak(&self) -> Option<u64> {
            None
        }
    }

    fn trace() -> Trace {
        Trace {
            header: TraceHeader::default(),
            events: vec![
                TraceEvent::Alloc {
                    slot: 0,
                    size: 100,
                    stream: 0,
                },
                TraceEvent::Alloc {
                    slot: 1,
                    size: 50,
                    stream: 1,
                },
                TraceEvent::Free { slot: 0 },
                TraceEvent::Alloc {
                    slot: 2,
                    size: 70,
                    stream: 0,
                },
            ],
            slots: 3,
            streams: 2,
        }
    }

    #[test]
    fn a_pass_frees_on_the_allocating_stream_and_leaves_nothing_live() {
        let mut fake = Fake::default();
        let mut samples = Vec::new();
        let mut sample = |i: usize| -> Result<(), TargetError> {
            samples.push(i);
            Ok(())
        };
        pass(&trace(), &mut fake, Some(&mut sample)).unwrap();
        assert_eq!(
            fake.log,
            [
                "alloc s0 100 -> 1",
                "alloc s1 50 -> 2",
                "free s0 1",
                "alloc s0 70 -> 3",
                // Left live by the trace: freed at the end, in slot order.
                "free s1 2",
                "free s0 3",
            ]
        );
        assert_eq!(samples, [0, 1, 2, 3], "one sample after every event");
    }

    /// A writer whose every write fails with `kind`.
    struct Failing(io::ErrorKind);

    impl Write for Failing {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::from(self.0))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// Runs `report_traces` over traces `a`, `b`, `c` into `out`; each
    /// trace writes a row, and `b` fails when `b_fails`. The exit code and
    /// the traces that ran.
    fn report<W: Write>(out: &mut W, b_fails: bool) -> (ExitCode, Vec<String>) {
        let traces = ["a", "b", "c"].map(PathBuf::from);
        let mut ran = Vec::new();
        let code = report_traces(&traces, out, |path, out| {
            let name = path.display().to_string();
            ran.push(name.clone());
            if b_fails && name == "b" {
                return Err(TraceRunError::Trace("b: no such file".into()));
            }
            writeln!(out, "{name} row").map_err(TraceRunError::Output)
        });
        (code, ran)
    }

    /// A reader that went away (`| head`) ends the command quietly with
    /// status 0, and no further trace is replayed on the device; any other
    /// write error is a failure, and also stops.
    #[test]
    fn output_that_cannot_be_written_stops_the_replays() {
        let (code, ran) = report(&mut Failing(io::ErrorKind::BrokenPipe), false);
        assert_eq!(code, ExitCode::SUCCESS);
        assert_eq!(ran, ["a"]);
        let (code, ran) = report(&mut Failing(io::ErrorKind::StorageFull), false);
        assert_eq!(code, ExitCode::FAILURE);
        assert_eq!(ran, ["a"]);
    }

    /// A trace that fails is reported, and the others are still replayed.
    #[test]
    fn a_failed_trace_does_not_stop_the_others() {
        let mut out = Vec::new();
        let (code, ran) = report(&mut out, true);
        assert_eq!(code, ExitCode::FAILURE);
        assert_eq!(ran, ["a", "b", "c"]);
        assert_eq!(String::from_utf8(out).unwrap(), "a row\nc row\n");
        let (code, _) = report(&mut Vec::new(), false);
        assert_eq!(code, ExitCode::SUCCESS);
    }

    /// A trace that cannot be loaded is named once in its line, as the
    /// mock replay names it.
    #[test]
    fn a_trace_that_does_not_load_is_named_once() {
        let path = Path::new("no/such/trace.jsonl.gz");
        match load(path) {
            Err(TraceRunError::Trace(why)) => {
                assert_eq!(why, "no/such/trace.jsonl.gz: no such file");
            }
            other => panic!("{other:?}"),
        }
    }

    /// The name column is one column whatever the header or the file name
    /// holds.
    #[test]
    fn the_name_column_is_one_column() {
        let mut t = trace();
        t.header.workload = "my model\tv2\n".into();
        assert_eq!(column_name(&t, Path::new("x.jsonl.gz")), "my_model_v2_");
        t.header.workload.clear();
        assert_eq!(column_name(&t, Path::new("dir/my run.jsonl.gz")), "my_run");
    }

    /// A trace that allocates nothing has no ratio: `-`, never `0.0000`.
    #[test]
    fn no_ratio_without_live_bytes() {
        assert_eq!(ratio_text(0, 0), "-");
        assert_eq!(ratio_text(2 << 20, 0), "-");
        assert_eq!(ratio_text(3, 2), "1.5000");
    }

    #[test]
    fn peak_live_is_the_traces_own() {
        assert_eq!(peak_live(&trace()), 150);
    }
}
