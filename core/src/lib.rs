//! # streamcore
//!
//! A `no_std + alloc` GPU stream runtime core: everything that must move in
//! step with the work queued on a device stream — memory pools, deferred
//! frees, graph capture, cross-stream waits, error taint — kept apart from
//! any driver. The core makes no driver call, reads no clock, spawns no
//! thread and does no I/O: a [`Platform`](platform::Platform) provides all of
//! it, and time and fence progress are inputs.
//!
//! ## The model in one screen
//!
//! - **Platform.** A driver binding implements [`platform::Platform`]:
//!   streams, events, page allocators, copies, kernels, capture. Two exist:
//!   `streamcore-mock`, a deterministic simulated GPU with real bytes, a
//!   seeded scheduler, fault injection and a hazard checker (for tests,
//!   fuzzing and learning), and `streamcore-hip`, real HIP devices.
//! - **Device.** A [`Device`](device::Device) is one cheap-clone handle over
//!   a platform with a fixed number of **streams**,
//!   [`StreamId`](stream::StreamId)`(0)` … `(n - 1)`. Work on one stream runs
//!   in order; streams run side by side.
//! - **Buffers.** [`alloc`](device::Device::alloc) and
//!   [`upload`](device::Device::upload) give a [`Buffer`](device::Buffer)
//!   carved from its stream's pools ([`memory`]);
//!   [`read`](device::Device::read) copies it back and waits for it.
//!   Dropping the last handle frees it *later*: its bytes stay reserved until
//!   every queued use has completed ([`drop_queue`]).
//! - **Launches.** [`launch`](device::Device::launch) queues a kernel with
//!   its buffers, each marked [`read`](device::Buffer::read) or
//!   [`write`](device::Buffer::write), and its info words (sizes, scalars,
//!   served from a per-stream [`info_cache`]). When a launch reads what
//!   another stream wrote, the device inserts exactly one event wait for it
//!   ([`stream`]); otherwise none.
//! - **Capture.** [`prepare`](device::Device::prepare), a warm-up run,
//!   [`begin_capture`](device::Device::begin_capture), the same calls again,
//!   [`end_capture`](device::Device::end_capture): a
//!   [`Graph`](device::Graph) that [`replay`](device::Device::replay) runs
//!   again on the same buffers, with nothing allocated while recording. (A
//!   platform without graphs declares so in its
//!   [`Capabilities`](platform::Capabilities), and capture calls answer
//!   [`Error::NotSupported`].)
//! - **Taint.** A failed launch or copy does not poison the device: it
//!   claims the bytes it would have written with a
//!   [`FailureId`](failure::FailureId) ([`failure`]). A launch that reads
//!   claimed bytes is skipped and passes the claim on; reading them fails
//!   with [`Error::Tainted`], a report that walks back to the root failure.
//!   Work that shares no buffer with the failure runs as usual.
//! - **Poll.** Nothing runs in the background: [`poll`](device::Device::poll)
//!   releases, without blocking, the deferred frees whose fences passed (a
//!   firmware loop calls it), [`sync`](device::Device::sync) and
//!   [`sync_all`](device::Device::sync_all) wait for the device.
//!
//! ## On the mock, from start to finish
//!
//! Allocate, upload, launch, read; capture and replay; a failure and its
//! report. The same code runs on a GPU with `streamcore_hip::HipPlatform`
//! in place of the mock (which then compiles the kernel's HIP source).
//!
//! ```
//! use streamcore::device::{Device, DeviceConfig, Launched};
//! use streamcore::platform::{ErrorKind, KernelSource, LaunchDims};
//! use streamcore::stream::StreamId;
//! use streamcore::Error;
//! use streamcore_mock::fault::{Effect, FaultInjector, FaultPlan, Rule, Site, Trigger};
//! use streamcore_mock::MockPlatform;
//!
//! // y[i] = x[i] * info[1] for i < info[0]: HIP source for a real GPU...
//! const SCALE: KernelSource<'static> = KernelSource {
//!     name: "scale",
//!     source: r#"extern "C" __global__ void scale(
//!         const unsigned* x, unsigned* y, const unsigned long long* info) {
//!         unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x;
//!         if (i < info[0]) y[i] = x[i] * (unsigned)info[1];
//!     }"#,
//!     bindings: 3, // x, y, and the info words, bound last
//! };
//! // ...and its body in Rust for the mock.
//! let mock = MockPlatform::new();
//! mock.register_kernel("scale", |_, args| {
//!     let info = args[2].to_u32s(); // two u64 words: [n, factor]
//!     let (n, factor) = (info[0] as usize, info[2]);
//!     let y: Vec<u32> = args[0].to_u32s()[..n].iter().map(|v| v * factor).collect();
//!     args[1].write_u32s(&y);
//! });
//! // The mock behind a fault injector, so a failure can be asked for later.
//! let faults = FaultInjector::new(mock.clone(), FaultPlan::new());
//! let device = Device::new(faults.clone(), DeviceConfig::with_streams(2))?;
//! let scale = device.load_kernel(&SCALE)?;
//! let (s0, s1) = (StreamId(0), StreamId(1));
//! let words = |b: &[u8]| -> Vec<u32> {
//!     b.chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
//! };
//!
//! // Allocate, upload, launch, read.
//! let x = device.upload(s1, &[1u32, 2, 3, 4].map(u32::to_le_bytes).concat())?;
//! let y = device.alloc(s0, 16)?;
//! let dims = LaunchDims::linear(1, 4);
//! // Stream 0 reads what stream 1 wrote: one event wait is inserted.
//! let launched = device.launch(s0, scale, dims, &[x.read(), y.write()], &[4, 10])?;
//! assert_eq!(launched, Launched::Queued);
//! assert_eq!(device.stats().waits, 1);
//! assert_eq!(words(&device.read(s0, &y)?), [10, 20, 30, 40]);
//!
//! // Capture y = x * 3 on stream 0 and replay it on fresh inputs.
//! device.prepare(s0)?;
//! device.launch(s0, scale, dims, &[x.read(), y.write()], &[4, 3])?; // warm-up
//! device.begin_capture(s0)?;
//! device.launch(s0, scale, dims, &[x.read(), y.write()], &[4, 3])?; // recorded
//! let graph = device.end_capture(s0)?;
//! device.write(s1, &x, &[5u32, 6, 7, 8].map(u32::to_le_bytes).concat())?;
//! device.replay(&graph)?;
//! assert_eq!(words(&device.read(s0, &y)?), [15, 18, 21, 24]);
//!
//! // A failure: the next launch of `scale` fails. Its output is claimed,
//! // the launch that reads it is skipped, the read reports the chain.
//! faults.add_rule(Rule {
//!     site: Site::Kernel("scale".into()),
//!     trigger: Trigger::Nth(1),
//!     effect: Effect::Fail(ErrorKind::Kernel),
//! });
//! let (a, b) = (device.alloc(s0, 16)?, device.alloc(s0, 16)?);
//! let failed = device.launch(s0, scale, dims, &[x.read(), a.write()], &[4, 2]);
//! let Err(Error::Failed { failure, .. }) = failed else { panic!("{failed:?}") };
//! let skipped = device.launch(s0, scale, dims, &[a.read(), b.write()], &[4, 2])?;
//! assert_eq!(skipped, Launched::Skipped(failure));
//! match device.read(s0, &b) {
//!     Err(Error::Tainted(report)) => {
//!         assert_eq!(report.failure, failure);
//!         assert!(report.reached_root && report.root.contains("scale"));
//!         println!("{report}"); // read of b refused <- skip <- the failed launch
//!     }
//!     other => panic!("{other:?}"),
//! }
//! assert_eq!(words(&device.read(s0, &y)?), [15, 18, 21, 24]); // y is unaffected
//!
//! // Drop everything; poll releases what completed, sync_all the rest.
//! drop((x, y, a, b, graph));
//! device.poll()?;
//! device.sync_all()?;
//! assert_eq!(device.census().buffers, 0);
//! mock.assert_no_hazards(); // no unsynchronized access, no use after free
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! More, as programs (`cargo run --example NAME` from the repository root):
//! `service_loop` (a firmware-style loop on a bounded configuration),
//! `pipeline_test` (a host-side test of your own pipeline with the hazard
//! checker and fault injection), `fuzz_orderings` (fuzzing your own
//! capture and free orderings), `minimal_platform` (the smallest real
//! platform, for platform authors). `streamcore demo` tells the same story
//! as above, step by step.
//!
//! ## Features and targets
//!
//! With no features the core needs only `core` and `alloc`: it builds for
//! hosts and for firmware targets alike (`thumbv7em-none-eabihf`,
//! `riscv32imac-unknown-none-elf`; no 64-bit atomics are used), where the
//! default lock is [`SpinLock`](device::SpinLock) and
//! [`MaskedLock`](device::MaskedLock) shares a device with interrupt
//! handlers. The `std` feature adds what needs an operating system — the
//! parking lock (`device::ParkingLock`, then the default) —
//! and so builds only for targets with `std`: asking for it on a bare-metal
//! target (`target_os = "none"`) stops the build with a message that says so.
//!
//! ## Modules
//!
//! | module | what |
//! |---|---|
//! | [`device`] | the API users call: [`Device`](device::Device), buffers, launches, transfers, capture, replay, sync, reports |
//! | [`platform`] | the contract a driver binding implements, method by method; storages and their terms |
//! | [`stream`] | stream ids and pool, the capture lifecycle, cross-stream sync (cursors, wait planning, pins) |
//! | [`memory`] | per-stream memory pools: layouts, presets, policies, the manager, reports |
//! | [`drop_queue`] | fence-gated deferred frees, with flush thresholds |
//! | [`info_cache`] | the LRU-bounded metadata (info word) cache, pinned by graphs |
//! | [`failure`] | the error-taint graph: failures, claims, taint reports |
//! | [`error`] | [`Error`], the device's typed error, wrapping the platform's |
//! | [`hash`] | a fixed, seedless hasher: no behaviour depends on a random seed |
//! | [`null`] | a platform that does nothing and never allocates (measures the core's own cost) |
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;
#[cfg(all(feature = "std", target_os = "none"))]
compile_error!(
    "streamcore: the `std` feature needs a target with std; on a bare-metal \
     target build without it (the default lock is then `SpinLock`)"
);
#[cfg(any(test, feature = "std"))]
extern crate std;

mod arena;
pub mod device;
pub mod drop_queue;
pub mod error;
pub mod failure;
pub mod hash;
pub mod info_cache;
pub mod memory;
pub mod null;
pub mod platform;
pub mod stream;

pub use error::Error;
