//! The device API under adversarial use: regressions of what an audit of
//! its public API found, and a property test with deterministic seeds that
//! drives a device with random sequences — sizes of 0 and past every bound,
//! handles used after their last clone was dropped elsewhere, buffers,
//! kernels and graphs of another device, capture calls in the wrong state,
//! operations on streams past the device's — on the null platform (which
//! never refuses, so sizes no device holds get through to the bookkeeping)
//! and on the mock, whose every call may fail. It checks that nothing
//! panics, the hazard checker stays silent, and once every handle is
//! dropped, the device holds nothing and gives everything back.

use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use streamcore::Error;
use streamcore::device::{Buffer, Device, DeviceConfig, Graph, KernelId};
use streamcore::memory::{
    Favour, MAX_ALIGNMENT, MAX_PAGE_SIZE, MAX_REQUEST, MemoryLayout, MemoryPolicy, PoolSpec,
};
use streamcore::null::Null;
use streamcore::platform::{ErrorKind, KernelSource, LaunchDims, Platform};
use streamcore::stream::StreamId;
use streamcore_mock::fault::{FaultInjector, FaultPlan, RuleId, Site};
use streamcore_mock::{MemoryKind, MockConfig, MockPlatform};

// ----- regressions -----

/// A read allocated the host's copy of the bytes with `vec![0; len]` after
/// the copy was queued: a buffer the host cannot hold (the null platform
/// reserves any size; a firmware host has a few hundred KiB) aborted the
/// process (panicked without `std`). The room is now reserved fallibly
/// before anything is queued: a typed error, and the device carries on.
#[test]
fn a_read_the_host_cannot_hold_is_refused_not_aborted() {
    let device = Device::new(Null, DeviceConfig::with_streams(1)).unwrap();
    let s = StreamId(0);
    let huge = device.alloc(s, 1 << 55).unwrap();
    match device.read(s, &huge) {
        Err(Error::InvalidArgument(why)) => assert!(why.contains("host"), "{why}"),
        other => panic!("{:?}", other.map(|v| v.len())),
    }
    // Nothing was queued or leaked; the device works on.
    let small = device.upload(s, &[1, 2, 3, 4]).unwrap();
    assert_eq!(device.read(s, &small).unwrap().len(), 4);
    drop((huge, small));
    device.sync_all().unwrap();
    let census = device.census();
    assert_eq!(
        (census.buffers, census.deferred, census.live_bytes),
        (0, 0, 0)
    );
}

// ----- the property test -----

const STREAMS: u16 = 3;

#[derive(Clone, Debug)]
enum Op {
    Alloc(u16, u64),
    Empty(u16, u64),
    Upload(u16, u16),
    Write(u16, usize),
    Read(u16, usize),
    /// Stream, kernel pick, two buffers, argument shape and info words.
    Launch(u16, u8, usize, usize, u8),
    Prepare(u16),
    Begin(u16),
    End(u16),
    Abort(u16),
    Replay(usize),
    DropGraph(usize),
    DropBuffer(usize),
    /// Drops a clone of a buffer on another thread.
    DropElsewhere(usize),
    Clone(usize),
    Poll,
    Sync(u16),
    SyncAll,
    Cleanup,
    Install(u8),
    Inspect(usize, u16),
}

fn size() -> impl Strategy<Value = u64> {
    prop_oneof![
        6 => 1u64..5000,
        1 => Just(0u64),
        1 => Just(1 << 20),
        1 => Just(MAX_REQUEST),
        1 => Just(MAX_REQUEST + 1),
        1 => Just(u64::MAX),
        1 => Just(1 << 40),
        1 => Just((1 << 32) + 8),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    // One stream past the device's: every call naming it is refused.
    let s = || 0..=STREAMS;
    prop_oneof![
        8 => (s(), size()).prop_map(|(a, b)| Op::Alloc(a, b)),
        2 => (s(), size()).prop_map(|(a, b)| Op::Empty(a, b)),
        3 => (s(), 0u16..600).prop_map(|(a, b)| Op::Upload(a, b)),
        2 => (s(), any::<usize>()).prop_map(|(a, b)| Op::Write(a, b)),
        3 => (s(), any::<usize>()).prop_map(|(a, b)| Op::Read(a, b)),
        6 => (s(), any::<u8>(), any::<usize>(), any::<usize>(), any::<u8>())
            .prop_map(|(a, k, b, c, w)| Op::Launch(a, k, b, c, w)),
        1 => s().prop_map(Op::Prepare),
        1 => s().prop_map(Op::Begin),
        1 => s().prop_map(Op::End),
        1 => s().prop_map(Op::Abort),
        2 => any::<usize>().prop_map(Op::Replay),
        1 => any::<usize>().prop_map(Op::DropGraph),
        4 => any::<usize>().prop_map(Op::DropBuffer),
        1 => any::<usize>().prop_map(Op::DropElsewhere),
        1 => any::<usize>().prop_map(Op::Clone),
        2 => Just(Op::Poll),
        1 => s().prop_map(Op::Sync),
        1 => Just(Op::SyncAll),
        1 => Just(Op::Cleanup),
        1 => any::<u8>().prop_map(Op::Install),
        2 => (any::<usize>(), s()).prop_map(|(a, b)| Op::Inspect(a, b)),
    ]
}

fn layout(i: u8) -> MemoryLayout {
    let d = MemoryPolicy::default();
    match i % 5 {
        0 => MemoryLayout::new(
            &[
                PoolSpec::small(64 << 10, 1024),
                PoolSpec::sliced(1 << 20, 64 << 10),
                PoolSpec::exclusive(16 << 20),
            ],
            256,
            d,
        ),
        1 => MemoryLayout::new(
            &[PoolSpec::sliced(1 << 20, 1 << 20).with_cap(1 << 20)],
            256,
            MemoryPolicy { max_pages: 2, ..d },
        ),
        2 => MemoryLayout::new(&[PoolSpec::exclusive(MAX_PAGE_SIZE)], MAX_ALIGNMENT, d),
        3 => MemoryLayout::new(
            &[PoolSpec::small(1, 1)],
            1,
            MemoryPolicy {
                force_persistent: true,
                ..d
            },
        ),
        _ => MemoryLayout::new(
            &[PoolSpec::sliced(4096, 4096)],
            4096,
            MemoryPolicy::favouring(Favour::Bytes),
        ),
    }
    .expect("a valid layout")
}

const WITH_INFO: KernelSource<'static> = KernelSource {
    name: "k",
    source: "",
    bindings: 3,
};
const NO_ARGS: KernelSource<'static> = KernelSource {
    name: "k0",
    source: "",
    bindings: 0,
};

/// Handles another device issued: every use of them here must be refused.
struct Foreign {
    buffer: Buffer,
    graph: Graph,
    kernel: KernelId,
}

fn foreign() -> Foreign {
    let mock = MockPlatform::new();
    mock.register_kernel("k", |_, _| {});
    let d = Device::new(mock, DeviceConfig::with_streams(1)).unwrap();
    let s = StreamId(0);
    let buffer = d.alloc(s, 16).unwrap();
    d.prepare(s).unwrap();
    d.begin_capture(s).unwrap();
    let graph = d.end_capture(s).unwrap();
    let kernel = d.load_kernel(&WITH_INFO).unwrap();
    Foreign {
        buffer,
        graph,
        kernel,
    }
}

fn drive<P: Platform>(d: &Device<P>, other: &Foreign, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let kernels: Vec<KernelId> = [WITH_INFO, NO_ARGS]
        .iter()
        .filter_map(|k| d.load_kernel(k).ok())
        .collect();
    let mut buffers: Vec<Buffer> = Vec::new();
    let mut graphs: Vec<Graph> = Vec::new();
    let pick = |n: usize, i: usize| (n > 0).then(|| i % n);
    for op in ops {
        match op {
            Op::Alloc(s, n) => {
                if let Ok(b) = d.alloc(StreamId(s), n) {
                    prop_assert!(s < STREAMS && n > 0 && n <= MAX_REQUEST);
                    prop_assert_eq!(b.size(), n);
                    buffers.push(b);
                }
            }
            Op::Empty(s, n) => {
                if let Ok(b) = d.empty(StreamId(s), n) {
                    buffers.push(b);
                }
            }
            Op::Upload(s, n) => {
                if let Ok(b) = d.upload(StreamId(s), &vec![7; usize::from(n)]) {
                    buffers.push(b);
                }
            }
            Op::Write(s, i) => match pick(buffers.len(), i) {
                Some(i) if buffers[i].size() <= 1 << 16 => {
                    let b = &buffers[i];
                    let _ = d.write(StreamId(s), b, &vec![1; b.size() as usize]);
                }
                Some(i) => {
                    let refused = d.write(StreamId(s), &buffers[i], &[1; 16]);
                    prop_assert!(refused.is_err(), "a write of the wrong length");
                }
                None => {
                    let refused = d.write(StreamId(s), &other.buffer, &[1; 16]);
                    prop_assert!(refused.is_err(), "a write of a foreign buffer");
                }
            },
            Op::Read(s, i) => match pick(buffers.len(), i) {
                // The bytes of larger ones would be zeroed on the host for
                // nothing (the null platform serves any size).
                Some(i) if buffers[i].size() > 1 << 20 => {}
                Some(i) => {
                    if let Ok(bytes) = d.read(StreamId(s), &buffers[i]) {
                        prop_assert_eq!(bytes.len() as u64, buffers[i].size());
                    }
                }
                None => prop_assert!(d.read(StreamId(s), &other.buffer).is_err()),
            },
            Op::Launch(s, k, i, j, w) => {
                let (Some(i), Some(j)) = (pick(buffers.len(), i), pick(buffers.len(), j)) else {
                    continue;
                };
                let kernel = match k % 4 {
                    0 | 1 => kernels.first().copied(),
                    2 => kernels.get(1).copied(),
                    _ => Some(other.kernel),
                };
                let Some(kernel) = kernel else { continue };
                let (a, b) = (&buffers[i], &buffers[j]);
                let info: Vec<u64> = (0..u64::from(w % 5)).map(|x| x * u64::from(w)).collect();
                let args = match w % 4 {
                    0 => vec![a.read(), b.write()],
                    1 => vec![a.read_write()],
                    2 => vec![a.read(), b.read(), a.write()],
                    _ => vec![],
                };
                let _ = d.launch(StreamId(s), kernel, LaunchDims::linear(1, 1), &args, &info);
            }
            Op::Prepare(s) => {
                let _ = d.prepare(StreamId(s));
            }
            Op::Begin(s) => {
                let _ = d.begin_capture(StreamId(s));
            }
            Op::End(s) => {
                if let Ok(g) = d.end_capture(StreamId(s)) {
                    graphs.push(g);
                }
            }
            Op::Abort(s) => {
                let _ = d.abort_capture(StreamId(s));
            }
            Op::Replay(i) => match pick(graphs.len(), i) {
                Some(i) => {
                    let _ = d.replay(&graphs[i]);
                }
                None => prop_assert!(d.replay(&other.graph).is_err()),
            },
            Op::DropGraph(i) => {
                if let Some(i) = pick(graphs.len(), i) {
                    graphs.swap_remove(i);
                }
            }
            Op::DropBuffer(i) => {
                if let Some(i) = pick(buffers.len(), i) {
                    buffers.swap_remove(i);
                }
            }
            Op::DropElsewhere(i) => {
                if let Some(i) = pick(buffers.len(), i) {
                    let b = buffers.swap_remove(i);
                    std::thread::spawn(move || drop(b)).join().unwrap();
                }
            }
            Op::Clone(i) => {
                if let Some(i) = pick(buffers.len(), i) {
                    buffers.push(buffers[i].clone());
                }
            }
            Op::Poll => {
                let _ = d.poll();
            }
            Op::Sync(s) => {
                let _ = d.sync(StreamId(s));
            }
            Op::SyncAll => {
                let _ = d.sync_all();
            }
            Op::Cleanup => {
                let _ = d.cleanup();
            }
            Op::Install(i) => {
                let _ = d.install_pools(layout(i));
            }
            Op::Inspect(i, s) => {
                let s = StreamId(s);
                let _ = (d.memory_report(s), d.info_census(s), d.capture_phase(s));
                let _ = (d.census(), d.stats(), d.take_release_error());
                if let Some(i) = pick(buffers.len(), i) {
                    let _ = (d.range_of(&buffers[i]), d.failure_of(&buffers[i]));
                }
                if let Some(i) = pick(graphs.len(), i) {
                    let _ = d.graph_info_pins(&graphs[i]);
                }
                prop_assert_eq!(d.range_of(&other.buffer), None);
                prop_assert_eq!(d.failure_of(&other.buffer), None);
                prop_assert_eq!(d.graph_info_pins(&other.graph), None);
            }
        }
    }
    for s in 0..STREAMS {
        let _ = d.abort_capture(StreamId(s));
    }
    drop(graphs);
    drop(buffers);
    Ok(())
}

/// Every handle dropped and the device settled: nothing is left.
fn settled<P: Platform>(d: &Device<P>) -> Result<(), TestCaseError> {
    d.sync_all()
        .map_err(|e| TestCaseError::fail(format!("sync_all: {e}")))?;
    let census = d.census();
    prop_assert_eq!(census.buffers, 0);
    prop_assert_eq!(census.graphs, 0);
    prop_assert_eq!(census.deferred, 0);
    prop_assert_eq!(census.cross_pins, 0);
    prop_assert_eq!(census.failures, 0, "failures outlive every buffer");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 400,
        rng_seed: RngSeed::Fixed(0xde71_ce00),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn the_null_device_refuses_or_serves_whatever_it_is_asked(
        pick in any::<u8>(),
        ops in prop::collection::vec(op(), 1..50),
    ) {
        let config = DeviceConfig::with_streams(STREAMS);
        let config = if pick & 8 != 0 { config.layout(layout(pick)) } else { config };
        let d = Device::new(Null, config).unwrap();
        drive(&d, &foreign(), ops)?;
        settled(&d)?;
    }

    #[test]
    fn the_mock_device_survives_any_call_failing(
        pick in any::<u8>(),
        seed in any::<u64>(),
        per_million in prop_oneof![Just(20_000u32), Just(200_000)],
        ops in prop::collection::vec(op(), 1..50),
    ) {
        // Reads of bytes nothing wrote are the caller's business here.
        let mut config = MockConfig::default()
            .seed(seed)
            .total_memory(64 << 20)
            .report_uninitialized(false);
        if pick & 16 != 0 {
            config = config.virtual_memory(64 << 10);
        }
        let mock = MockPlatform::with_config(config).unwrap();
        mock.register_kernel("k", |_, _| {});
        mock.register_kernel("k0", |_, _| {});
        let sites = [
            Site::DeviceAlloc, Site::HostAlloc, Site::Flush, Site::HostWrite, Site::HostRead,
            Site::CreateStream, Site::Record, Site::Wait, Site::Query, Site::Synchronize,
            Site::CopyToDevice, Site::CopyToHost, Site::Launch, Site::BeginCapture,
            Site::EndCapture, Site::LaunchGraph, Site::DestroyGraph,
        ];
        let kind = if seed & 1 == 0 { ErrorKind::OutOfMemory } else { ErrorKind::Other };
        let plan = sites
            .iter()
            .fold(FaultPlan::seeded(seed), |p, site| p.random(site.clone(), per_million, kind));
        let faults = FaultInjector::new(mock.clone(), plan);
        let config = DeviceConfig::with_streams(STREAMS);
        let config = if pick & 8 != 0 { config.layout(layout(pick)) } else { config };
        let other = foreign();
        {
            let Ok(d) = Device::new(faults.clone(), config) else {
                return Ok(());
            };
            drive(&d, &other, ops)?;
            // Faults off: what is left must now be released.
            for rule in 0..sites.len() {
                faults.remove_rule(RuleId(rule));
            }
            settled(&d)?;
        }
        // The device is gone: every page went back to the mock.
        prop_assert_eq!(mock.memory_used(MemoryKind::Device), 0);
        prop_assert_eq!(mock.memory_used(MemoryKind::Host), 0);
        prop_assert!(mock.hazards().is_empty(), "{:?}", mock.hazards());
    }
}
