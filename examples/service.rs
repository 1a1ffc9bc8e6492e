//! A firmware-style service over any platform: one stream, fixed buffers,
//! the per-frame work captured once as a graph, and a poll-driven loop.
//!
//! Everything here is `core` and `alloc` (this crate is `#![no_std]`): no
//! clock, no thread, no I/O, no lock of its own. Frames come from a
//! [`Frames`] source and results go to a [`Results`] sink, which the
//! firmware implements over its mailboxes or DMA rings (the host example
//! `service_loop` implements them over the mock).
//!
//! What keeps it bounded:
//! - the configuration ([`bounded_config`]): one stream, a small pool for
//!   info words and one sliced pool sized for frames, capped, with a page
//!   budget; a four-entry info cache; every deferred free fenced at once;
//! - the loop allocates nothing on the device: the input and output buffers
//!   and the graph are made at [`Service::start`], each frame is written
//!   into the same input and replayed through the same graph;
//! - nothing runs in the background: every tick starts with
//!   [`Device::poll`], which releases (without blocking) the deferred frees
//!   whose fences passed — the staging bytes of the frame submitted on the
//!   tick before.
//!
//! A tick submits its frame (write and replay, queued, no wait) and
//! collects the frame of the tick before (a read, which waits only for that
//! frame's work): results come one tick late, and the host never waits for
//! the work it has just queued.
//!
//! A failure does not stop the service: a frame whose replay fails is
//! reported lost ([`Outcome::Lost`], with the failure that claims its
//! output), and the next frame's replay writes the output again, which
//! clears the claim.

use alloc::vec;
use core::fmt;

use streamcore::Error;
use streamcore::device::{Buffer, Device, DeviceConfig, Graph, Launched};
use streamcore::drop_queue::FlushPolicy;
use streamcore::failure::FailureId;
use streamcore::info_cache::CachePolicy;
use streamcore::memory::{LayoutError, MemoryLayout, MemoryPolicy, PoolSpec};
use streamcore::platform::{KernelSource, LaunchDims, Platform};
use streamcore::stream::StreamId;

/// `y[i] = x[i] * info[1] + info[2]` for `i < info[0]`: a sensor
/// calibration (gain and offset). A real device compiles this source; the
/// mock runs a Rust body registered under the same name.
pub const CALIBRATE: KernelSource<'static> = KernelSource {
    name: "calibrate",
    source: r#"extern "C" __global__ void calibrate(const unsigned int* x, unsigned int* y, const unsigned long long* info) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < info[0]) y[i] = x[i] * (unsigned int)info[1] + (unsigned int)info[2];
}"#,
    bindings: 3,
};

/// The service's one stream.
pub const STREAM: StreamId = StreamId(0);

/// The bounded configuration for frames of `frame_bytes` bytes: one
/// stream; a small pool (4 KiB pages) for info words and a sliced pool of
/// 16 frames per page, capped at 4 pages; at most 8 pages in all; a
/// four-entry info cache; every deferred free fenced at once, so a poll can release it.
pub fn bounded_config(frame_bytes: u64) -> Result<DeviceConfig, LayoutError> {
    let page = (frame_bytes * 16).next_power_of_two().max(64 << 10);
    let layout = MemoryLayout::new(
        &[
            PoolSpec::small(4 << 10, 256),
            PoolSpec::sliced(page, frame_bytes.max(512)).with_cap(4 * page),
        ],
        256,
        MemoryPolicy {
            max_pages: 8,
            ..MemoryPolicy::default()
        },
    )?;
    let mut config = DeviceConfig::with_streams(1)
        .layout(layout)
        .flush_policy(FlushPolicy {
            max_items: 1,
            max_bytes: 64 << 10,
        });
    config.info_cache = CachePolicy::new(4, 256);
    Ok(config)
}

/// Where frames come from (a mailbox, a DMA ring, a sensor).
pub trait Frames {
    /// Fills `frame` with the frame for `tick` and returns `true`, or
    /// returns `false` when there is none this tick.
    fn next(&mut self, tick: u64, frame: &mut [u8]) -> bool;
}

/// Where results go.
pub trait Results {
    /// The frame of `tick` was served: `output` holds its result.
    fn served(&mut self, tick: u64, output: &[u8]);

    /// The frame of `tick` was lost to `failure` (its output is not valid).
    fn lost(&mut self, tick: u64, failure: FailureId);
}

/// What became of one frame.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The output holds the frame's result.
    Served,
    /// A failure claims the frame's output.
    Lost(FailureId),
}

/// What the service did.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Frames served.
    pub served: u64,
    /// Frames lost to a failure.
    pub lost: u64,
    /// Ticks without a frame.
    pub idle: u64,
    /// Deferred frees the polls released (what a read had not already
    /// released: a read waits, and releases what completed).
    pub released: u64,
}

/// Why the service could not start or stopped.
#[derive(Debug)]
#[non_exhaustive]
pub enum ServiceError<E> {
    /// The frame size makes no valid layout.
    Layout(LayoutError),
    /// The device refused something other than a frame's work.
    Device(Error<E>),
}

impl<E: fmt::Display> fmt::Display for ServiceError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServiceError::Layout(e) => write!(f, "no layout for this frame size: {e}"),
            ServiceError::Device(e) => write!(f, "device: {e}"),
        }
    }
}

impl<E: fmt::Debug + fmt::Display> core::error::Error for ServiceError<E> {}

impl<E> From<Error<E>> for ServiceError<E> {
    fn from(e: Error<E>) -> Self {
        ServiceError::Device(e)
    }
}

/// The service: a device, its input and output buffers, the captured
/// per-frame graph.
pub struct Service<P: Platform> {
    device: Device<P>,
    input: Buffer,
    output: Buffer,
    graph: Graph,
    frame_bytes: usize,
    stats: Stats,
}

impl<P: Platform> Service<P> {
    /// Starts the service on `platform` for frames of `frame_words` `u32`s,
    /// calibrated with `gain` and `offset`: makes the buffers, runs the work
    /// once to warm the pools, and captures it as the graph every frame
    /// replays.
    pub fn start(
        platform: P,
        frame_words: usize,
        gain: u32,
        offset: u32,
    ) -> Result<Self, ServiceError<P::Error>> {
        let frame_bytes = frame_words * 4;
        let config = bounded_config(frame_bytes as u64).map_err(ServiceError::Layout)?;
        let device = Device::new(platform, config)?;
        let kernel = device.load_kernel(&CALIBRATE)?;
        let input = device.upload(STREAM, &vec![0; frame_bytes])?;
        let output = device.alloc(STREAM, frame_bytes as u64)?;
        let dims = LaunchDims::linear(frame_words.div_ceil(256) as u32, 256);
        let info = [frame_words as u64, u64::from(gain), u64::from(offset)];
        let work = |d: &Device<P>| {
            d.launch(STREAM, kernel, dims, &[input.read(), output.write()], &info)
                .map(drop)
        };
        device.prepare(STREAM)?;
        work(&device)?;
        device.begin_capture(STREAM)?;
        work(&device)?;
        let graph = device.end_capture(STREAM)?;
        Ok(Self {
            device,
            input,
            output,
            graph,
            frame_bytes,
            stats: Stats::default(),
        })
    }

    /// The device, for reports.
    pub fn device(&self) -> &Device<P> {
        &self.device
    }

    /// Submits one frame: writes it into the input and queues the graph's
    /// replay (nothing waits). `Lost` when the write or the replay failed.
    pub fn submit(&mut self, frame: &[u8]) -> Result<Outcome, Error<P::Error>> {
        match self.device.write(STREAM, &self.input, frame) {
            Ok(()) => {}
            Err(Error::Failed { failure, .. }) => return Ok(Outcome::Lost(failure)),
            Err(e) => return Err(e),
        }
        match self.device.replay(&self.graph) {
            Ok(Launched::Queued) => Ok(Outcome::Served),
            Ok(Launched::Skipped(failure)) | Err(Error::Failed { failure, .. }) => {
                Ok(Outcome::Lost(failure))
            }
            Err(e) => Err(e),
        }
    }

    /// Collects the last submitted frame: reads the output into `out`
    /// (`frame_bytes` long), waiting for that frame's work.
    pub fn collect(&mut self, out: &mut [u8]) -> Result<Outcome, Error<P::Error>> {
        match self.device.read(STREAM, &self.output) {
            Ok(bytes) => {
                out.copy_from_slice(&bytes);
                Ok(Outcome::Served)
            }
            Err(Error::Tainted(report)) => Ok(Outcome::Lost(report.failure)),
            Err(e) => Err(e),
        }
    }

    /// The service loop, for `ticks` ticks and one more to collect the last
    /// frame. Each tick polls the device, collects the frame submitted on
    /// the tick before, and submits the frame `frames` has for this tick, if
    /// any. The frame and result buffers are allocated once, before the
    /// loop.
    pub fn run(
        &mut self,
        ticks: u64,
        frames: &mut impl Frames,
        results: &mut impl Results,
    ) -> Result<Stats, Error<P::Error>> {
        let mut frame = vec![0u8; self.frame_bytes];
        let mut out = vec![0u8; self.frame_bytes];
        // The frame in flight: its tick, and whether its submission failed.
        let mut in_flight: Option<(u64, Outcome)> = None;
        for tick in 0..=ticks {
            self.stats.released += self.device.poll()? as u64;
            if let Some((submitted, outcome)) = in_flight.take() {
                let outcome = match outcome {
                    Outcome::Served => self.collect(&mut out)?,
                    lost => lost,
                };
                match outcome {
                    Outcome::Served => {
                        self.stats.served += 1;
                        results.served(submitted, &out);
                    }
                    Outcome::Lost(failure) => {
                        self.stats.lost += 1;
                        results.lost(submitted, failure);
                    }
                }
            }
            if tick == ticks {
                break;
            }
            if frames.next(tick, &mut frame) {
                in_flight = Some((tick, self.submit(&frame)?));
            } else {
                self.stats.idle += 1;
            }
        }
        Ok(self.stats)
    }
}
