//! `streamcore replay TRACE...`: allocation traces through streamcore's
//! memory managers on the mock platform's counting storages, with the
//! recorder's own figures beside ours.

#[cfg(feature = "hip")]
mod hip;
#[cfg(feature = "hip")]
mod hip_target;
mod input;
mod layout;
mod output;
mod plot;
mod progress;
mod svg_file;

use std::ffi::OsString;
use std::fmt;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use streamcore::platform::DeviceProperties;
use streamcore_mock::replay::{
    Accounting, ReplayError, ReplayOptions, Sample, StreamcoreTarget, TraceError, replay,
};

use crate::platform::{FreesArg, PlatformArg, StorageArg};
use layout::{ChosenLayout, LayoutArgError};
use output::Outcome;
use progress::Progress;
use svg_file::{check_svg_path, check_svg_target, svg_paths};

/// The device the bundled traces were recorded on (an H200): 141 GB.
pub const TOTAL_MEMORY: u64 = 141_000_000_000;
/// Its allocation alignment.
pub const ALIGNMENT: u64 = 256;
/// The largest page: a quarter of the device (as CubeCL's CUDA/HIP
/// runtimes cap it, and as the peer comparison uses).
pub const MAX_PAGE: u64 = TOTAL_MEMORY / 4;

/// `streamcore replay --help`, above the options.
pub const LONG_ABOUT: &str = "\
Replay allocation traces through streamcore's memory managers on the mock
platform, and report the bytes held beside the recorded run's own (PyTorch's)
figures.

Each TRACE (gzip JSON lines, .jsonl.gz, or plain JSON lines, .jsonl; see
`streamcore record --help` for the format and how to record one from PyTorch)
is loaded and checked whole, then its allocations and frees are fed in order
to one memory manager per stream, over storages that count bytes without
holding memory. The device is an H200's: 141,000,000,000 B (131.32 GiB),
256-byte alignment, pages of up to a quarter of the device; a layout is
checked against it before the first event.

Reported per trace: events, streams, peak reserved (the most bytes the
storages held at once; a released page counts until its storage is flushed),
peak live (the most bytes the trace itself had allocated at once), their
ratio, storage allocations, and the time per event (one replay, wall clock,
this machine); when trimming settled (kept memory it could have given back,
once the churn budget ran out or chunks it gave back kept coming back) or
gave idle chunks back past its budget, a line says so (JSON:
trim_settled_bytes, round_trip_settles, capped_decommits). Beside them, when the trace's header has them, the recorded
run's figures: PyTorch's own peak reserved and peak allocated and their
ratio, as measured in the program that was recorded. They are not a replay
of the same events: there PyTorch held some frees longer (memory used by
another stream is freed only once that stream is done with it), which its
peak reserved includes. The table labels them \"PyTorch, recorded\", the JSON
keys start with recorded_torch_, the plot says \"recorded run\".

Sizes are printed in binary units: KiB, MiB, GiB (1 GiB = 2^30 bytes).

--platform hip replays the same traces on a real GPU instead, and prints its
own lines (wall time, driver calls and peak used, for streamcore's pools and
for the driver's pool): --json, --svg and --no-progress are the mock's alone,
--touch, --storage, --runs, --frees and --fence-* that platform's alone; an
option of the other platform is refused, even at its default value.

Exit status: 0 when every trace was replayed; 1 when any could not be read or
replayed, or its plot could not be written (each says why on stderr, the
others are still reported, and so is the table of a trace whose plot failed);
2 for bad arguments (nothing is replayed): among them a --layout file that
cannot be read, parsed or used on the device, an --svg file whose folder is
missing, an option of the other platform, and an option of --platform hip
without the one it refines (--frees without --touch; --fence-every,
--fence-bytes or --fence-poll-only without --touch --frees fenced).";

/// `streamcore replay --help`, below the options.
pub const AFTER_LONG_HELP: &str = "\
Layout files (--layout FILE): a JSON object, either pools listed by growing
largest request (at most 8; `page_size` may be left out for an exclusive
pool, whose pages are sized to their requests):

    {
      \"alignment\": 256,
      \"pools\": [
        {\"kind\": \"small\",     \"page_size\": \"1 MiB\", \"max_slice\": \"1 KiB\"},
        {\"kind\": \"sliced\",    \"page_size\": \"4 MiB\", \"max_slice\": \"256 KiB\", \"cap\": \"2 GiB\"},
        {\"kind\": \"exclusive\", \"max_slice\": \"32 GiB\"}
      ],
      \"policy\": {\"trim_before_grow\": true, \"release_idle_after\": 10000,
                 \"fit_slack_shift\": 5, \"force_persistent\": false,
                 \"max_pages\": 1048576}
    }

or a preset with another policy: {\"preset\": \"sliced\", \"policy\": {...}}.
The policy may also start from a favour and name the settings of a
resizable (virtual-memory) storage:

    \"policy\": {\"favour\": \"bytes\",            (balanced, bytes, time; applied first)
               \"trim_headroom_shift\": 7, \"page_rounding_shift\": 7,
               \"commit_step_shift\": 6,   \"split_boundaries\": false,
               \"commit_piece_granules\": 0,  (0: chunks of any size)
               \"large_page_granules\": 384,
               \"strand_guard\": \"adaptive\",  (off, adaptive, on)
               \"aligned_page_granules\": 32, \"shed_partial_granules\": 0,
               \"share_large_reservations\": true, \"keep_bare_reservations\": true,
               \"large_page_space\": true, \"small_page_lane\": false,
               \"round_trip_window\": 64,   (0: off)
               \"churn_budget\": {\"per_reserve_ns\": 500, \"per_mib_ns\": 150},
                                           (or \"unlimited\")
               \"idle_cap_shift\": 2}       (64: no cap)

Shifts are 0 to 64 (64: none). What each setting does: `MemoryPolicy` in
the API documentation (cargo doc -p streamcore).

Sizes are integers (bytes) or strings with B, KiB, MiB, GiB or TiB. Only
`pools` (or `preset`) is required: alignment defaults to the device's (256;
never below it), each policy member to its default. A request larger than
every pool's `max_slice` gets a page of its own, released when it is freed.
A refused layout is reported with the layout's own reason (pool 1: largest
slice exceeds its page size, pools out of order, ...).

Examples:
    streamcore replay tests/traces/*.jsonl.gz
    streamcore replay --json tests/traces/gpt2_train.jsonl.gz
    streamcore replay --layout exclusive-pages --svg gpt2.svg tests/traces/gpt2_train.jsonl.gz";

/// `--runs` when not given.
const DEFAULT_RUNS: u32 = 5;
/// `--fence-every` when not given.
const DEFAULT_FENCE_EVERY: usize = 64;
/// `--fence-bytes` when not given.
const DEFAULT_FENCE_BYTES: u64 = 4 << 20;

/// Arguments of `streamcore replay`.
///
/// The options of one platform alone are refused on the other whenever they
/// are given, even at their default value: those of `--platform hip` are
/// `Option`s (their defaults are applied by the accessors below), so that
/// giving one can be told from leaving it out.
///
/// The numeric options take a negative number as their value
/// (`allow_negative_numbers`), to refuse it as one: `--runs -1` is an
/// invalid value of `--runs`, not a stray argument `-1`.
#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// Trace files: gzip JSON lines (.jsonl.gz) or plain JSON lines
    /// (.jsonl); `-` reads one from standard input (once).
    #[arg(required = true, value_name = "TRACE")]
    pub traces: Vec<PathBuf>,

    /// Print one JSON object per trace, each on its own line, instead of
    /// tables. Mock only.
    #[arg(long)]
    pub json: bool,

    /// Pool layout: a preset (balanced, exclusive-pages, sliced) or a
    /// layout file (JSON; its format is below, under --help).
    #[arg(long, value_name = "PRESET|FILE", default_value = "balanced")]
    pub layout: OsString,

    /// Write a plot of reserved and live bytes over the trace, with the
    /// recorded run's (PyTorch's) peaks as reference lines. SVG only: FILE
    /// must end in `.svg`, its folder must exist. With several traces, one
    /// file each: FILE's name gets the trace's name before `.svg`. Mock
    /// only.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,

    /// Never draw the progress bar (it is drawn on stderr, and only when
    /// stderr is a terminal). Mock only (`--platform hip` draws none).
    #[arg(long)]
    pub no_progress: bool,

    /// Where to replay: the mock's counting storages, or the real device
    /// through HIP, side by side with the driver's own pool
    /// (`hipMallocAsync`): wall time, driver calls and peak used for each,
    /// as text lines (--json, --svg and --no-progress are the mock's alone).
    #[arg(long, value_enum, default_value_t = PlatformArg::Mock)]
    pub platform: PlatformArg,

    /// With `--platform hip`: queue a 64 KiB memset on each new allocation,
    /// so frees meet queued work (and are fenced before reuse).
    #[arg(long)]
    pub touch: bool,

    /// With `--platform hip`: the device storage under streamcore's pools.
    /// [default: auto]
    #[arg(long, value_enum)]
    pub storage: Option<StorageArg>,

    /// With `--platform hip`: timed passes per allocator, alternating
    /// between them (the fastest is reported); at least 1. [default: 5]
    #[arg(
        long,
        value_name = "N",
        value_parser = clap::value_parser!(u32).range(1..),
        allow_negative_numbers = true
    )]
    pub runs: Option<u32>,

    /// With `--platform hip --touch`: how frees reach streamcore's pools:
    /// at once in stream order (the default), or fenced through a drop
    /// queue per stream (the options below). [default: ordered]
    #[arg(long, value_enum)]
    pub frees: Option<FreesArg>,

    /// With `--platform hip --touch --frees fenced`: a fence is recorded once this many
    /// frees are staged (0: after every free) ... [default: 64]
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub fence_every: Option<usize>,

    /// ... or once this many bytes are (0: after every free). [default: 4194304]
    #[arg(long, value_name = "BYTES", allow_negative_numbers = true)]
    pub fence_bytes: Option<u64>,

    /// With `--platform hip --touch --frees fenced`: only poll fences. By default an
    /// allocation that sealed frees could serve waits for the oldest fence
    /// (the device is a few small writes behind) instead of letting the pool
    /// grow.
    #[arg(long)]
    pub fence_poll_only: bool,
}

impl ReplayArgs {
    /// `--storage`, or its default.
    pub fn storage(&self) -> StorageArg {
        self.storage.unwrap_or(StorageArg::Auto)
    }

    /// `--runs`, or its default (at least 1).
    pub fn runs(&self) -> u32 {
        self.runs.unwrap_or(DEFAULT_RUNS).max(1)
    }

    /// `--frees`, or its default.
    pub fn frees(&self) -> FreesArg {
        self.frees.unwrap_or(FreesArg::Ordered)
    }

    /// `--fence-every`, or its default.
    pub fn fence_every(&self) -> usize {
        self.fence_every.unwrap_or(DEFAULT_FENCE_EVERY)
    }

    /// `--fence-bytes`, or its default.
    pub fn fence_bytes(&self) -> u64 {
        self.fence_bytes.unwrap_or(DEFAULT_FENCE_BYTES)
    }
}

/// The first option of `--platform hip` alone that was given, if any (at
/// any value, its default included): the mock replay would ignore it
/// silently.
fn hip_only_option(args: &ReplayArgs) -> Option<&'static str> {
    [
        (args.touch, "--touch"),
        (args.storage.is_some(), "--storage"),
        (args.runs.is_some(), "--runs"),
        (args.frees.is_some(), "--frees"),
        (args.fence_every.is_some(), "--fence-every"),
        (args.fence_bytes.is_some(), "--fence-bytes"),
        (args.fence_poll_only, "--fence-poll-only"),
    ]
    .into_iter()
    .find_map(|(set, name)| set.then_some(name))
}

/// The first option of the mock replay alone that was given, if any:
/// `--platform hip` prints its own text lines, draws no progress bar and
/// has no plot.
fn mock_only_option(args: &ReplayArgs) -> Option<&'static str> {
    [
        (args.json, "--json"),
        (args.svg.is_some(), "--svg"),
        (args.no_progress, "--no-progress"),
    ]
    .into_iter()
    .find_map(|(set, name)| set.then_some(name))
}

/// The options refused with this `--platform`: one line saying why.
fn check_platform_options(args: &ReplayArgs) -> Result<(), String> {
    match args.platform {
        PlatformArg::Mock => match hip_only_option(args) {
            Some(option) => Err(format!(
                "{option} applies to `--platform hip` only; the mock replay \
                 (the default platform) has no device to touch or time"
            )),
            None => Ok(()),
        },
        PlatformArg::Hip => match mock_only_option(args) {
            Some(option) => Err(format!(
                "{option} applies to `--platform mock` only; `--platform hip` prints \
                 its own lines (wall time, driver calls, peak used), with no JSON, plot \
                 or progress bar"
            )),
            None => check_hip_refinements(args),
        },
    }
}

/// With `--platform hip`, the options that refine another are refused
/// without it (at any value, their defaults included), as the other
/// platform's options are: the replay would ignore them silently.
/// `--frees` says how frees meet queued work, which only `--touch` queues;
/// the `--fence-*` options tune the drop queues of `--frees fenced`.
fn check_hip_refinements(args: &ReplayArgs) -> Result<(), String> {
    if args.frees.is_some() && !args.touch {
        return Err(
            "--frees applies with `--touch` only; without it no work is queued \
             on the device, and every free reaches the pools at once"
                .to_owned(),
        );
    }
    let fenced = args.touch && args.frees() == FreesArg::Fenced;
    let fence_option = [
        (args.fence_every.is_some(), "--fence-every"),
        (args.fence_bytes.is_some(), "--fence-bytes"),
        (args.fence_poll_only, "--fence-poll-only"),
    ]
    .into_iter()
    .find_map(|(set, name)| set.then_some(name));
    match fence_option {
        Some(option) if !fenced => Err(format!(
            "{option} applies with `--touch --frees fenced` only; frees reach the \
             pools through no drop queue otherwise"
        )),
        _ => Ok(()),
    }
}

/// Why one trace could not be reported.
#[derive(Debug)]
enum TraceFailure {
    Load(PathBuf, TraceError),
    Replay {
        path: PathBuf,
        events: u64,
        error: ReplayError,
    },
    Svg(PathBuf, String),
}

impl fmt::Display for TraceFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // These name the file themselves.
            TraceFailure::Load(
                _,
                e @ (TraceError::NotFound { .. }
                | TraceError::Io { .. }
                | TraceError::TruncatedGzip { .. }
                | TraceError::BadGzip { .. }
                | TraceError::TrailingData { .. }),
            ) => write!(f, "{e}"),
            TraceFailure::Load(path, e) => write!(f, "{}: {e}", path.display()),
            TraceFailure::Replay {
                path,
                events,
                error,
            } => {
                // The manager's message may carry its whole memory report
                // on further lines: the first says why.
                let why = error.why.lines().next().unwrap_or_default();
                write!(
                    f,
                    "{}: the replay stopped at event {} of {events}: {why}",
                    path.display(),
                    error.event + 1,
                )?;
                if why.contains("out of memory") {
                    write!(f, " (the replay device has {TOTAL_MEMORY} B)")?;
                }
                Ok(())
            }
            TraceFailure::Svg(path, why) => {
                write!(f, "{}: cannot write the plot: {why}", path.display())
            }
        }
    }
}

/// Runs `streamcore replay`; the exit code says whether every trace was
/// reported.
pub fn main(args: &ReplayArgs) -> ExitCode {
    if let Err(why) = check_platform_options(args).and_then(|()| input::check(&args.traces)) {
        error_line!("{why}");
        return ExitCode::from(2);
    }
    if args.platform == PlatformArg::Hip {
        return run_hip(args);
    }
    let svg_paths = svg_paths(args.svg.as_deref(), &args.traces);
    if let Some(svg) = &args.svg {
        let checked = check_svg_path(svg).and_then(|()| {
            svg_paths
                .iter()
                .flatten()
                .try_for_each(|p| check_svg_target(p))
        });
        if let Err(why) = checked {
            error_line!("{why}");
            return ExitCode::from(2);
        }
    }
    let props = replay_device();
    let chosen = match layout::choose(&args.layout, &props) {
        Ok(c) => c,
        Err(e) => {
            report_layout_error(&e);
            return ExitCode::from(2);
        }
    };
    let progress = Progress::new(!args.no_progress);
    let mut out = io::stdout().lock();
    let mut done = Vec::new();
    let mut failed = 0usize;
    for (path, svg) in args.traces.iter().zip(svg_paths) {
        let (outcome, plot_failure) = match run_one(path, &chosen, svg, progress) {
            Ok(o) => o,
            Err(e) => {
                error_line!("{e}");
                failed += 1;
                continue;
            }
        };
        let written = if args.json {
            output::json_line(&mut out, &outcome)
        } else {
            let sep = if done.is_empty() {
                Ok(())
            } else {
                writeln!(out)
            };
            sep.and_then(|()| output::table(&mut out, &outcome))
        };
        if let Err(e) = written.and_then(|()| out.flush()) {
            return output_error(&e);
        }
        // The report is out; the plot that could not be written fails the
        // command all the same.
        if let Some(e) = plot_failure {
            error_line!("{e}");
            failed += 1;
        }
        done.push(outcome);
    }
    if !args.json && done.len() > 1 {
        let written = writeln!(out)
            .and_then(|()| output::overview(&mut out, &done))
            .and_then(|()| out.flush());
        if let Err(e) = written {
            return output_error(&e);
        }
    }
    if failed > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// `replay --platform hip`: the traces on the real device.
#[cfg(feature = "hip")]
fn run_hip(args: &ReplayArgs) -> ExitCode {
    hip::main(args)
}

/// `replay --platform hip` in a build without HIP: says so (after the
/// arguments, checked as that platform would: a bad one is still status 2).
#[cfg(not(feature = "hip"))]
fn run_hip(args: &ReplayArgs) -> ExitCode {
    // HIP's device alignment is the mock replay's too (256).
    if let Err(e) = layout::check_without_device(&args.layout, ALIGNMENT) {
        report_layout_error(&e);
        return ExitCode::from(2);
    }
    error_line!("{}", crate::platform::HIP_NOT_BUILT);
    ExitCode::FAILURE
}

/// The device the replay runs on: an H200's memory, alignment and largest
/// page.
pub fn replay_device() -> DeviceProperties {
    DeviceProperties {
        total_memory: TOTAL_MEMORY,
        max_page_size: MAX_PAGE,
        alignment: ALIGNMENT,
        integrated: false,
    }
}

fn report_layout_error(e: &LayoutArgError) {
    error_line!("{e}");
    // A file of the wrong shape: where the format is described. (A layout
    // the rules or the device refuse says why in its one line.)
    if matches!(e, LayoutArgError::Format { .. }) {
        error_line!("the layout file format is in `streamcore replay --help`");
    }
}

fn output_error(e: &io::Error) -> ExitCode {
    if e.kind() == io::ErrorKind::BrokenPipe {
        // Nobody reads the rest (`| head`): stop quietly.
        ExitCode::SUCCESS
    } else {
        error_line!("writing the output: {e}");
        ExitCode::FAILURE
    }
}

/// Replays one trace: its outcome, and why its plot could not be written
/// (the outcome is reported all the same, without the plot).
fn run_one(
    path: &Path,
    chosen: &ChosenLayout,
    svg: Option<PathBuf>,
    progress: Progress,
) -> Result<(Outcome, Option<TraceFailure>), TraceFailure> {
    let name = output::stem(path);
    let spinner = progress.loading(&name);
    let loaded = input::load(path);
    if let Some(s) = spinner {
        s.finish_and_clear();
    }
    let trace = loaded.map_err(|e| TraceFailure::Load(input::shown(path), e))?;
    let total = trace.events.len() as u64;
    let replay_error = |error| TraceFailure::Replay {
        path: input::shown(path),
        events: total,
        error,
    };

    // The measured run: no sampler in the timed loop.
    let bar = progress.replaying(&name, "replaying", total);
    let mut tick = |done: u64, _: u64| {
        if let Some(b) = &bar {
            b.set_position(done);
        }
    };
    let mut measured = target(chosen);
    let report = replay(
        &trace,
        &mut measured,
        ReplayOptions {
            progress: bar
                .is_some()
                .then_some(&mut tick as &mut dyn FnMut(u64, u64)),
            progress_every: progress::stride(total),
            ..ReplayOptions::default()
        },
    );
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let report = report.map_err(replay_error)?;
    let trimming = measured.reports().iter().map(|r| r.trimming).sum();

    let mut plot_failure = None;
    if let Some(svg_path) = &svg {
        // A second run samples every event (same inputs, same bytes).
        let bar = progress.replaying(&name, "sampling", total);
        let mut series = plot::Series::new(total);
        let mut sample = |s: Sample| {
            if let Some(b) = &bar {
                if s.event % 1024 == 0 {
                    b.set_position(s.event);
                }
            }
            series.push(s);
        };
        let sampled = replay(
            &trace,
            &mut target(chosen),
            ReplayOptions {
                sampler: Some(&mut sample),
                sample_every: 1,
                ..ReplayOptions::default()
            },
        );
        if let Some(b) = &bar {
            b.finish_and_clear();
        }
        sampled.map_err(replay_error)?;
        series.finish();
        let workload = if trace.header.workload.is_empty() {
            name.clone()
        } else {
            output::printable(&trace.header.workload)
        };
        let torch = match trace.header.recorder_ratio() {
            Some(x) => format!(", PyTorch recorded {x:.3}"),
            None => String::new(),
        };
        let title = format!(
            "{workload}: bytes over the trace (layout {}; reserved/live {}{torch})",
            chosen.name,
            report
                .live_ratio()
                .map_or("-".into(), |x| format!("{x:.3}"))
        );
        let written = plot::render(&plot::Plot {
            title: &title,
            events: total,
            series: &series,
            torch_reserved: trace.header.peak_reserved_bytes,
            torch_allocated: trace.header.peak_allocated_bytes,
        })
        .and_then(|svg_text| std::fs::write(svg_path, svg_text).map_err(|e| e.to_string()));
        if let Err(why) = written {
            plot_failure = Some(TraceFailure::Svg(svg_path.clone(), why));
        }
    }

    let outcome = Outcome {
        path: path.to_path_buf(),
        header: trace.header,
        streams: trace.streams,
        report,
        trimming,
        layout: chosen.name.clone(),
        // Only a plot that was written is named in the report.
        svg: svg.filter(|_| plot_failure.is_none()),
    };
    Ok((outcome, plot_failure))
}

/// Managers with the chosen layout over storages that fail past the
/// device's capacity.
fn target(chosen: &ChosenLayout) -> StreamcoreTarget {
    StreamcoreTarget::with_accounting(
        chosen.layout.clone(),
        chosen.layout.alignment().max(ALIGNMENT),
        Accounting::with_capacity(TOTAL_MEMORY),
    )
}
