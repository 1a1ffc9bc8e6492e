//! Resizable pages on the mock: a device whose pools carve their pages from
//! reservations, commits and decommits in place, the stream-ordered rule of
//! decommit (queued work that still touches the bytes is a hazard), no
//! commit inside a capture, and faults on commit and decommit. Where the
//! manager places pages and what that costs: `placement.rs`.

#[path = "../common/mod.rs"]
mod common;
mod placement;
mod trimming;

use common::*;
use streamcore::device::{Device, DeviceConfig};
use streamcore::platform::{
    ErrorKind, GraphCapture, Platform, PlatformError, Storage, StorageCosts,
};
use streamcore::stream::StreamId;
use streamcore_mock::fault::{FaultInjector, FaultPlan, Site};
use streamcore_mock::{Call, HazardKind, MemoryKind, MockConfig, MockPlatform};

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;

fn config(seed: u64) -> MockConfig {
    MockConfig::default()
        .seed(seed)
        .total_memory(256 * MIB)
        .virtual_memory(64 * KIB)
}

#[test]
fn virtual_memory_is_declared_exactly_when_configured() {
    use streamcore::platform::Capabilities;
    let on = MockPlatform::with_config(config(1)).unwrap();
    assert!(on.capabilities().contains(Capabilities::VIRTUAL_MEMORY));
    let off = MockPlatform::with_config(MockConfig::default().seed(1)).unwrap();
    assert!(!off.capabilities().contains(Capabilities::VIRTUAL_MEMORY));
    assert_eq!(
        off.capabilities(),
        Capabilities::GRAPH_CAPTURE,
        "nothing else changed"
    );
}

/// By default the device storages declare what the H200's driver charges
/// (the driver model's table): over virtual memory what a commit and a
/// decommit cost, so the churn budget binds as on the device; over plain
/// pages what `hipMalloc` and `hipFree` cost. `StorageCosts::UNKNOWN`
/// declares none.
#[test]
fn the_storages_declare_the_drivers_costs_unless_told_otherwise() {
    use streamcore_mock::replay::{DriverModel, H200};
    let costs = |config: MockConfig| {
        let mock = MockPlatform::with_config(config).unwrap();
        let storage = mock.device_storage().unwrap();
        storage.terms().costs
    };
    let vmm = costs(config(1));
    assert_eq!(vmm, DriverModel::Vmm.terms(&H200, 256).costs);
    // What trimming weighs: a 2 MiB chunk decommitted and committed again
    // costs tens of microseconds, as measured.
    let round_trip = vmm.decommit.of(2 * MIB) + vmm.commit.of(2 * MIB);
    assert!((40_000..200_000).contains(&round_trip), "{round_trip} ns");
    let plain = costs(MockConfig::default().seed(1));
    assert_eq!(plain, DriverModel::Malloc.terms(&H200, 256).costs);
    assert!(plain.release_synchronizes);
    let none = costs(config(1).storage_costs(StorageCosts::UNKNOWN));
    assert_eq!(none, StorageCosts::UNKNOWN);
}

#[test]
fn the_storage_commits_and_decommits_chunks_of_a_reservation() {
    let mut r = rig(config(3));
    let g = r
        .dev
        .terms()
        .resizable
        .expect("virtual memory is on")
        .granularity;
    assert_eq!(g, 64 * KIB);
    let page = r.dev.reserve(16 * g).unwrap();
    assert_eq!(
        r.mock.memory_used(MemoryKind::Device),
        0,
        "addresses cost nothing"
    );
    r.dev.commit(page, 0, 4 * g).unwrap();
    assert_eq!(r.mock.memory_used(MemoryKind::Device), 4 * g);
    // Off the granularity, over a committed chunk, past the reservation.
    for (o, l) in [(1, g), (2 * g, 4 * g), (15 * g, 2 * g)] {
        let e = r.dev.commit(page, o, l).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidValue, "{o}+{l}");
    }
    let mut s = r.stream();
    let k = r.kernel("fill");
    let bytes = dr(page, 0, 4 * g);
    r.mock
        .launch(&mut s, &k, fill_dims(9), &[write(bytes)])
        .unwrap();
    assert_eq!(r.download(&mut s, dr(page, 0, 16)), vec![9; 4]);
    // Bytes not committed cannot be touched.
    assert!(
        r.mock
            .launch(&mut s, &k, fill_dims(1), &[write(dr(page, 4 * g, 16))])
            .is_err()
    );
    assert!(
        r.dev.decommit(page, 0, 2 * g).is_err(),
        "not one earlier commit"
    );
    r.dev.decommit(page, 0, 4 * g).unwrap();
    assert_eq!(r.mock.memory_used(MemoryKind::Device), 0);
    r.mock.assert_no_hazards();
    r.dev.dealloc(page);
    r.dev.flush().unwrap();
}

#[test]
fn decommitting_bytes_queued_work_still_touches_is_a_hazard() {
    let mut r = rig(config(5).lazy());
    let page = r.dev.reserve(4 * 64 * KIB).unwrap();
    r.dev.commit(page, 0, 64 * KIB).unwrap();
    let mut s = r.stream();
    let k = r.kernel("fill");
    r.mock
        .launch(&mut s, &k, fill_dims(4), &[write(dr(page, 0, 256))])
        .unwrap();
    assert_eq!(r.mock.queued(&s), 1, "the launch is still queued");
    r.dev.decommit(page, 0, 64 * KIB).unwrap();
    let h = r.mock.take_hazards();
    assert_eq!(h.len(), 1, "{h:#?}");
    assert_eq!(h[0].kind, HazardKind::UseAfterFree);
    assert_eq!(h[0].bytes.unwrap().len, 256);
}

#[test]
fn nothing_is_committed_or_decommitted_while_a_capture_is_open() {
    let mut r = rig(config(7));
    let page = r.dev.reserve(4 * 64 * KIB).unwrap();
    r.dev.commit(page, 0, 64 * KIB).unwrap();
    let mut s = r.stream();
    r.mock.begin_capture(&mut s).unwrap();
    let e = r.dev.commit(page, 64 * KIB, 64 * KIB).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::CaptureUnsupported);
    let e = r.dev.decommit(page, 0, 64 * KIB).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::CaptureUnsupported);
    assert_eq!(
        r.mock.memory_used(MemoryKind::Device),
        64 * KIB,
        "nothing changed"
    );
    assert!(
        r.mock.end_capture(&mut s).is_err(),
        "the capture was invalidated"
    );
}

/// A device over the mock with virtual memory: buffers of every pool,
/// kernels, reads, frees through the drop queues, cleanup: the right bytes,
/// no hazard (no decommit of bytes queued work still touches), and the
/// pages really come from reservations.
#[test]
fn a_device_runs_over_resizable_pages_without_hazards() {
    for seed in 0..8 {
        let mock = MockPlatform::with_config(config(seed)).unwrap();
        register_kernels(&mock);
        let device = Device::new(mock, DeviceConfig::default()).unwrap();
        let s0 = StreamId(0);
        let s1 = StreamId(1);
        let add = device
            .load_kernel(&streamcore::platform::KernelSource {
                name: "add",
                source: "",
                bindings: 3,
            })
            .unwrap();
        for round in 0..6u32 {
            let n = 1000 + 3000 * round as usize;
            let a = device.upload(s0, &bytes_of(&vec![round; n])).unwrap();
            let b = device.upload(s1, &bytes_of(&vec![2; n])).unwrap();
            let out = device.alloc(s0, (n * 4) as u64).unwrap();
            let big = device.alloc(s1, (3 + round as u64) * MIB).unwrap();
            let _launched = device
                .launch(
                    s0,
                    add,
                    streamcore::platform::LaunchDims::linear(1, 64),
                    &[a.read(), b.read(), out.write()],
                    &[],
                )
                .unwrap();
            let got = device.read(s0, &out).unwrap();
            assert_eq!(
                got,
                bytes_of(&vec![round + 2; n]),
                "seed {seed} round {round}"
            );
            drop((a, b, out, big));
        }
        device.sync_all().unwrap();
        device.cleanup().unwrap();
        device.with_platform(|m| {
            m.assert_no_hazards();
            let calls = m.calls();
            let reservations = calls
                .iter()
                .filter(|c| {
                    matches!(
                        c,
                        Call::Alloc {
                            memory: MemoryKind::Device,
                            size: 0,
                            ..
                        }
                    )
                })
                .count();
            assert!(reservations >= 2, "one reservation per stream at least");
            assert!(
                calls.iter().any(|c| matches!(
                    c,
                    Call::Dealloc {
                        memory: MemoryKind::Device,
                        ..
                    }
                )),
                "cleanup decommitted in place"
            );
        });
    }
}

#[test]
fn faults_on_commit_and_decommit_are_typed() {
    let mock = MockPlatform::with_config(config(1)).unwrap();
    register_kernels(&mock);
    let f = FaultInjector::new(
        mock,
        FaultPlan::new().fail_nth(Site::DeviceAlloc, 2, ErrorKind::OutOfMemory),
    );
    let mut dev = f.device_storage().unwrap();
    let page = dev.reserve(8 * 64 * KIB).unwrap();
    let e = dev.commit(page, 0, 64 * KIB).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::OutOfMemory);
    dev.commit(page, 0, 64 * KIB).unwrap();
    f.add_rule(streamcore_mock::fault::Rule {
        site: Site::Flush,
        trigger: streamcore_mock::fault::Trigger::Nth(1),
        effect: streamcore_mock::fault::Effect::Fail(ErrorKind::Other),
    });
    let e = dev.decommit(page, 0, 64 * KIB).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Other);
    assert_eq!(
        f.inner().memory_used(MemoryKind::Device),
        64 * KIB,
        "still committed"
    );
    dev.decommit(page, 0, 64 * KIB).unwrap();
    assert_eq!(f.inner().memory_used(MemoryKind::Device), 0);
}

/// Frees in stream order over resizable pages, on a device that runs
/// nothing until the host waits (or a step is forced): every slice is
/// written by a kernel queued on the stream and freed at once naming that
/// kernel's cursor; its bytes serve later kernels of the same stream while
/// earlier ones are still queued; chunks are decommitted only once the
/// stream is known to have passed them (told by polled events, or waited
/// for when the manager asks). The hazard checker stays silent, and every
/// live slice holds what its own kernel wrote. The storages declare no
/// call costs, so the churn budget never keeps a chunk trimming may take:
/// what is tested is when a decommit may happen, not whether one pays.
#[test]
fn frees_in_stream_order_reuse_at_once_and_decommit_only_fenced_bytes() {
    use streamcore::memory::{MemoryLayout, MemoryManager, MemoryPolicy, PoolSpec};
    for seed in 0..4u64 {
        let mut r = rig(config(seed).lazy().storage_costs(StorageCosts::UNKNOWN));
        let storage = r.mock.device_storage().unwrap();
        let layout = MemoryLayout::new(
            &[
                PoolSpec::small(64 * KIB, KIB),
                PoolSpec::sliced(256 * KIB, 32 * KIB),
                PoolSpec::exclusive(4 * MIB),
            ],
            256,
            MemoryPolicy {
                // Give memory back whenever a phase moves on.
                trim_headroom_shift: 64,
                ..MemoryPolicy::default()
            },
        )
        .unwrap();
        let mut m = MemoryManager::new(storage, layout);
        assert!(m.carves_pages());
        let mut s = r.stream();
        let k = r.kernel("fill");
        let mut draw = xorshift(seed);
        let mut next = move |n: u64| draw() % n;
        // (handle, range, value, cursor of its kernel)
        let mut live = Vec::new();
        let mut cursor = 0u64;
        // A progress event: (cursor it covers, event).
        let mut progress = None;
        let mut value = 0u32;
        for step in 0..300u64 {
            // Three phases of disjoint sizes, so trimming decommits.
            let (lo, hi) = [(KIB, 32 * KIB), (256 * KIB, 3 * MIB), (40 * KIB, 200 * KIB)]
                [(step / 100) as usize];
            if live.len() < 12 && next(3) != 0 {
                let size = (lo + next(hi - lo)).next_multiple_of(4);
                let can_wait = step % 4 != 0;
                let submitted = cursor;
                let mock = &r.mock;
                let stream = &mut s;
                let mut wait = |c: u64| -> Option<u64> {
                    assert!(c <= submitted, "asked for {c} past {submitted}");
                    if !can_wait {
                        return None;
                    }
                    let e = mock.record(stream).unwrap();
                    mock.synchronize(&e).unwrap();
                    Some(submitted)
                };
                let (h, range) = m.reserve_ordered(size, &mut wait).unwrap();
                value += 1;
                r.mock
                    .launch(&mut s, &k, fill_dims(value), &[write(range)])
                    .unwrap();
                cursor += 1;
                live.push((h, range, value, cursor));
            } else if !live.is_empty() {
                let (h, _, _, c) = live.swap_remove(next(live.len() as u64) as usize);
                m.free_ordered(h, c).unwrap();
            }
            match next(8) {
                0 => {
                    r.mock.step();
                }
                1 if progress.is_none() => {
                    progress = Some((cursor, r.mock.record(&mut s).unwrap()));
                }
                2 => {
                    if let Some((c, e)) = &progress {
                        if r.mock.query(e).unwrap() {
                            m.complete(*c);
                            progress = None;
                        }
                    }
                }
                _ => {}
            }
        }
        r.mock.assert_no_hazards();
        assert!(m.decommits() > 0, "seed {seed}: trimming decommitted");
        assert!(m.waits() > 0, "seed {seed}: the manager asked to wait");
        for &(_, range, value, _) in &live {
            let words = r.download(&mut s, range);
            assert!(
                words.iter().all(|&w| w == value),
                "seed {seed}: a live slice lost its bytes"
            );
        }
        r.mock.assert_no_hazards();
    }
}

/// A xorshift generator seeded by `seed`: the same draws for the same seed.
fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

/// Storage calls that take device memory or addresses (reserve, commit,
/// alloc) so far.
fn device_allocs(mock: &MockPlatform) -> usize {
    device_allocs_of(mock, |_| true)
}

/// Address reservations so far (an allocation of no bytes).
fn reserves(mock: &MockPlatform) -> usize {
    device_allocs_of(mock, |size| size == 0)
}

/// The calls [`device_allocs`] counts whose size `which` accepts.
fn device_allocs_of(mock: &MockPlatform, which: impl Fn(u64) -> bool) -> usize {
    mock.calls()
        .iter()
        .filter(|c| match c {
            Call::Alloc {
                memory: MemoryKind::Device,
                size,
                ..
            } => which(*size),
            _ => false,
        })
        .count()
}

#[test]
fn a_request_no_reservation_can_hold_is_refused_up_front_and_never_placed() {
    // Found by the fuzzer: a page larger than a chunk map addresses (2^31
    // granules) was carved with none of its granules committed, so a 2^48
    // byte buffer was placed on a 1 GiB device; a 2^40 byte request walked
    // 2^24 granules before its commit was refused.
    let mock = MockPlatform::with_config(
        MockConfig::default()
            .total_memory(1 << 30)
            .virtual_memory(64 * KIB),
    )
    .unwrap();
    register_kernels(&mock);
    let device = Device::new(mock.clone(), DeviceConfig::with_streams(1)).unwrap();
    let s = StreamId(0);
    let small = device.alloc(s, 4 * KIB).unwrap();
    for size in [
        (1 << 30) + 1,
        1 << 31,
        1 << 40,
        (1 << 47) + 1,
        1 << 48,
        1 << 50,
        streamcore::memory::MAX_REQUEST,
    ] {
        let before = device_allocs(&mock);
        match device.alloc(s, size) {
            Err(streamcore::error::Error::Memory(_)) => {}
            Err(e) => panic!("{size} bytes: not a memory error: {e}"),
            Ok(b) => panic!(
                "{size} bytes placed at {:?} with {} bytes committed",
                device.range_of(&b),
                mock.memory_used(MemoryKind::Device)
            ),
        }
        assert_eq!(
            device_allocs(&mock),
            before,
            "{size} bytes: refused before asking the storage"
        );
    }
    // What fits is placed on committed bytes: its last byte can be written.
    let big = device.alloc(s, 512 * MIB).unwrap();
    assert!(mock.memory_used(MemoryKind::Device) >= 512 * MIB);
    let r = device.range_of(&big).unwrap();
    let mut st = mock.create_stream().unwrap();
    let k = kernel(&mock, "fill");
    let last = dr(r.page, r.offset + r.len - 4, 4);
    mock.launch(&mut st, &k, fill_dims(3), &[write(last)])
        .unwrap();
    let done = mock.record(&mut st).unwrap();
    mock.synchronize(&done).unwrap();
    drop((small, big));
    device.sync_all().unwrap();
    mock.assert_no_hazards();
}

#[test]
fn a_page_no_chunk_map_addresses_is_refused_whatever_the_storage_reserves() {
    // A storage that reserves any range: a page of more granules than a
    // chunk map addresses (2^31) must still never be handed out with
    // granules nothing committed.
    use streamcore::memory::{MemoryError, MemoryLayout, MemoryManager, OomCause};
    use streamcore::platform::{ResizableTerms, StorageTerms};
    use streamcore_mock::replay::{Accounting, CountingStorage};
    let g = 64 * KIB;
    let mut terms = StorageTerms::plain(256);
    terms.resizable = Some(ResizableTerms::new(g, 1 << 62));
    let accounting = Accounting::with_capacity(1 << 30);
    let storage = CountingStorage::with_terms(accounting.clone(), 256, terms);
    let props = streamcore::platform::DeviceProperties {
        total_memory: 1 << 30,
        max_page_size: 1 << 30,
        alignment: 256,
        integrated: false,
    };
    let mut m = MemoryManager::new(storage, MemoryLayout::for_device(&props));
    assert!(m.carves_pages());
    let (kept, _) = m.reserve(MIB).unwrap();
    for size in [
        (1 << 47) + 1,
        1 << 48,
        1 << 52,
        streamcore::memory::MAX_REQUEST,
    ] {
        match m.reserve(size) {
            Err(MemoryError::OutOfMemory {
                cause: OomCause::LargerThanReservation { max, .. },
                ..
            }) => assert_eq!(max, g << 31),
            Err(e) => panic!("{size} bytes: {e}"),
            Ok((_, r)) => panic!(
                "{size} bytes placed at {r:?} with {} bytes held",
                accounting.held()
            ),
        }
    }
    // Larger than the memory, yet a reservation holds it: the commit is
    // refused, and the slice is not placed.
    assert!(matches!(
        m.reserve(1 << 40),
        Err(MemoryError::OutOfMemory {
            cause: OomCause::Storage(_),
            ..
        })
    ));
    assert!(accounting.held() < 1 << 30);
    m.free(kept).unwrap();
}
