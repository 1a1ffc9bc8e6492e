//! Resizable pages on the mock: a device whose pools carve their pages from
//! reservations, commits and decommits in place, the stream-ordered rule of
//! decommit (queued work that still touches the bytes is a hazard), no
//! commit inside a capture, and faults on commit and decommit.

mod common;

use common::*;
use streamcore::device::{Device, DeviceConfig};
use streamcore::platform::{ErrorKind, GraphCapture, Platform, PlatformError, Storage};
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
/// live slice holds what its own kernel wrote.
#[test]
fn frees_in_stream_order_reuse_at_once_and_decommit_only_fenced_bytes() {
    use streamcore::memory::{MemoryLayout, MemoryManager, MemoryPolicy, PoolSpec};
    for seed in 0..4u64 {
        let mut r = rig(config(seed).lazy());
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
        let mut rng = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut next = move |n: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % n
        };
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

/// A manager over the rig's device storage (carved pages) with one
/// exclusive pool, no trim headroom and no reaching ahead (a commit is what
/// a page needs), and commits in pieces of `piece` granules (0: any size).
fn exact_manager(
    r: &Rig,
    piece: u32,
) -> streamcore::memory::MemoryManager<streamcore_mock::MockStorage> {
    exact_manager_with(r, |p| p.commit_piece_granules = piece)
}

/// [`exact_manager`] with chunks of any size and `tweak` applied to its
/// policy.
fn exact_manager_with(
    r: &Rig,
    tweak: impl FnOnce(&mut streamcore::memory::MemoryPolicy),
) -> streamcore::memory::MemoryManager<streamcore_mock::MockStorage> {
    use streamcore::memory::{MemoryLayout, MemoryManager, MemoryPolicy, PoolSpec};
    let mut policy = MemoryPolicy {
        trim_headroom_shift: 64,
        commit_step_shift: 64,
        commit_piece_granules: 0,
        ..MemoryPolicy::default()
    };
    tweak(&mut policy);
    let layout = MemoryLayout::new(&[PoolSpec::exclusive(4 * MIB)], 256, policy).unwrap();
    let m = MemoryManager::new(r.mock.device_storage().unwrap(), layout);
    assert!(m.carves_pages());
    m
}

/// [`exact_manager_with`] where pages of four granules and more are large.
fn large_manager(
    r: &Rig,
    tweak: impl FnOnce(&mut streamcore::memory::MemoryPolicy),
) -> streamcore::memory::MemoryManager<streamcore_mock::MockStorage> {
    exact_manager_with(r, |p| {
        p.large_page_granules = 4;
        tweak(p);
    })
}

/// Gives every idle byte of `m` back and checks the rig holds no device
/// memory and saw no hazard (every page of `m` freed before).
fn cleans_up(r: &Rig, m: &mut streamcore::memory::MemoryManager<streamcore_mock::MockStorage>) {
    m.cleanup().unwrap();
    assert_eq!(r.mock.memory_used(MemoryKind::Device), 0);
    r.mock.assert_no_hazards();
}

/// `aligned_page_granules`: after a page of half a granule, two pages of
/// two granules each. Carved at the first free byte they start mid-granule
/// and share a chunk, so freeing the first strands its bytes in the chunk
/// the second still uses; on granule boundaries each has chunks of its own
/// and the first one's go back whole.
#[test]
fn pages_of_whole_granules_on_granule_boundaries_own_their_chunks() {
    let g = 64 * KIB;
    // (the second and third pages' offsets; device bytes held and bytes
    // stranded once the second is freed and the idle memory given back)
    let run = |aligned: bool| {
        let r = rig(config(17));
        let mut m = exact_manager_with(&r, |p| p.aligned_page_granules = u32::from(aligned) * 2);
        let (s, rs) = m.reserve(g / 2).unwrap();
        let (a, ra) = m.reserve(2 * g).unwrap();
        let (b, rb) = m.reserve(2 * g).unwrap();
        assert_eq!(rb.offset, ra.offset + 2 * g, "side by side");
        m.free(a).unwrap();
        m.cleanup().unwrap();
        let figures = (
            ra.offset - rs.offset,
            r.mock.memory_used(MemoryKind::Device),
            m.stranded_bytes(),
        );
        for h in [s, b] {
            m.free(h).unwrap();
        }
        cleans_up(&r, &mut m);
        figures
    };
    // Off: granules 0 (the small page and the first's head), 1-2 (the
    // first's rest and the second's head), 3-4: all held, 2.5 granules
    // stranded.
    assert_eq!(run(false), (g / 2, 5 * g, 5 * g / 2));
    // On: granule 0 (the small page), 1-2 given back, 3-4 (the second).
    assert_eq!(run(true), (g, 3 * g, g / 2));
}

/// `share_large_reservations`: a large page freed leaves its reservation's
/// granules committed (two chunks of four); a smaller large page takes the
/// reservation's start (its first chunk), and the next one of that size
/// goes behind it over the committed rest (the second),
/// with no call, where without sharing it reserves a reservation of its own
/// and commits its page whole. Behind a live page nothing is committed: a
/// page that needs granules past the committed ones gets a reservation of
/// its own either way.
#[test]
fn a_large_page_goes_behind_a_live_one_over_committed_granules() {
    let g = 64 * KIB;
    // (the second page's reservation is the first's, its offset from the
    // first's, driver calls taking memory or addresses for it; the same for
    // the third page)
    let run = |share: bool| {
        let r = rig(config(23));
        let mut m = large_manager(&r, |p| {
            p.commit_piece_granules = 4;
            p.share_large_reservations = share;
            p.large_page_space = false;
        });
        let (big, _) = m.reserve(8 * g).unwrap();
        m.free(big).unwrap();
        let (a, ra) = m.reserve(4 * g).unwrap();
        let calls = device_allocs(&r.mock);
        let (b, rb) = m.reserve(4 * g).unwrap();
        let second = (
            rb.page == ra.page,
            rb.offset.wrapping_sub(ra.offset),
            device_allocs(&r.mock) - calls,
        );
        let calls = device_allocs(&r.mock);
        let (c, rc) = m.reserve(4 * g).unwrap();
        let third = (rc.page == ra.page, device_allocs(&r.mock) - calls);
        for h in [a, b, c] {
            m.free(h).unwrap();
        }
        cleans_up(&r, &mut m);
        (second, third)
    };
    // Shared: the second page behind the first, over granules 4-7, no
    // call; the third finds nothing committed behind them: a reservation
    // and a commit.
    assert_eq!(run(true), ((true, 4 * g, 0), (false, 2)));
    // Not shared: a reservation and a commit for each.
    let (second, third) = run(false);
    assert!(!second.0, "a reservation of its own");
    assert_eq!((second.2, third), (2, (false, 2)));
}

/// `keep_bare_reservations`: a large page freed, its chunk then trimmed
/// for a shared page, leaves its reservation bare; kept, the next large
/// page starts in it with no reservation call (and commits what it needs);
/// not kept, the reservation went back with its last chunk and the next
/// large page reserves a new one. `cleanup` gives a kept one back.
#[test]
fn a_large_pages_bare_reservation_is_kept_for_the_next_one() {
    let g = 64 * KIB;
    // (the second large page's reservation is the first's, reservation
    // calls it made, device bytes while it lives)
    let run = |keep: bool| {
        let r = rig(config(29));
        let mut m = large_manager(&r, |p| {
            p.keep_bare_reservations = keep;
            p.large_page_space = false;
        });
        let (first, r1) = m.reserve(8 * g).unwrap();
        m.free(first).unwrap();
        // Over the trim floor: the idle large chunk goes back for it.
        let (small, _) = m.reserve(3 * g).unwrap();
        assert_eq!(r.mock.memory_used(MemoryKind::Device), 3 * g, "trimmed");
        let before = reserves(&r.mock);
        let (second, r2) = m.reserve(8 * g).unwrap();
        let figures = (
            r2.page == r1.page,
            reserves(&r.mock) - before,
            r.mock.memory_used(MemoryKind::Device),
        );
        for h in [small, second] {
            m.free(h).unwrap();
        }
        cleans_up(&r, &mut m);
        assert_eq!(m.address_space(), 0, "cleanup gives every reservation back");
        figures
    };
    assert_eq!(run(true), (true, 0, 11 * g));
    assert_eq!(run(false), (false, 1, 11 * g));
}

/// `large_page_space`: two large pages side by side, both freed, leave
/// their granules committed; a page of both their sizes lands over them
/// in the shared space with no call, where in reservations of their own it
/// finds half of it committed at the start of one and commits the rest.
#[test]
fn large_pages_share_the_space_over_what_others_left() {
    let g = 64 * KIB;
    // (the third page starts where the first did, storage commits and
    // reservations for it)
    let run = |space: bool| {
        let r = rig(config(31));
        let mut m = large_manager(&r, |p| {
            p.commit_piece_granules = 4;
            p.large_page_space = space;
        });
        let (a, ra) = m.reserve(4 * g).unwrap();
        let (b, _) = m.reserve(4 * g).unwrap();
        m.free(a).unwrap();
        m.free(b).unwrap();
        let (calls, reserved) = (device_allocs(&r.mock), reserves(&r.mock));
        let (c, rc) = m.reserve(8 * g).unwrap();
        let figures = (
            rc.page == ra.page && rc.offset == ra.offset,
            device_allocs(&r.mock) - calls,
            reserves(&r.mock) - reserved,
        );
        m.free(c).unwrap();
        cleans_up(&r, &mut m);
        figures
    };
    assert_eq!(run(true), (true, 0, 0));
    assert_eq!(run(false), (true, 1, 0));
}

/// `large_page_space`: a buffer growing a page at a time (the next page
/// reserved, then the one before freed) takes its first steps in the
/// shared space; once a live step is two steps deep, its next, larger page gets a
/// reservation of its own, twice its size, and the steps after it take
/// turns in two such reservations as they do without the space (each
/// finding the one the step before last left, committed over what that
/// step used).
#[test]
fn a_growing_buffers_later_steps_get_reservations_of_their_own() {
    let g = 64 * KIB;
    let r = rig(config(37));
    let mut m = large_manager(&r, |p| {
        p.large_page_space = true;
    });
    let (mut live, first) = m.reserve(4 * g).unwrap();
    // (the reservation of each step, and the reservation calls it made)
    let mut steps = Vec::new();
    for granules in 5..=9 {
        let before = reserves(&r.mock);
        let (next, at) = m.reserve(granules * g).unwrap();
        m.free(live).unwrap();
        live = next;
        steps.push((at.page, reserves(&r.mock) - before));
    }
    let pages: Vec<_> = steps.iter().map(|s| s.0).collect();
    let calls: Vec<_> = steps.iter().map(|s| s.1).collect();
    assert_eq!(
        (pages[0], pages[1]),
        (first.page, first.page),
        "5 and 6 granules in the shared space"
    );
    assert!(
        pages[2] != first.page && pages[3] != pages[2] && pages[3] != first.page,
        "7 and 8 granules in reservations of their own: {pages:?}"
    );
    assert_eq!(pages[4], pages[2], "9 granules where 7 were");
    assert_eq!(calls, [0, 0, 1, 1, 0]);
    m.free(live).unwrap();
    cleans_up(&r, &mut m);
}

/// `shed_partial_granules`: a page carved over part of an idle chunk wakes
/// it whole (its rest stranded while the page lives) unless the page
/// would leave at least that many of the chunk's granules unused, when the
/// chunk is decommitted first and the page commits what it needs.
#[test]
fn an_idle_chunk_a_page_uses_in_part_is_shed_past_the_setting() {
    use streamcore::memory::ChurnBudget;
    let g = 64 * KIB;
    // (device bytes held and stranded while the small page lives)
    let run = |shed: u32| {
        let r = rig(config(19));
        let mut m = exact_manager_with(&r, |p| {
            p.shed_partial_granules = shed;
            p.churn_budget = ChurnBudget::UNLIMITED;
        });
        let (big, rbig) = m.reserve(8 * g).unwrap();
        m.free(big).unwrap();
        assert_eq!(
            r.mock.memory_used(MemoryKind::Device),
            8 * g,
            "kept committed"
        );
        let (small, rsmall) = m.reserve(2 * g).unwrap();
        assert_eq!(rsmall.offset, rbig.offset, "carved over the idle chunk");
        let figures = (r.mock.memory_used(MemoryKind::Device), m.stranded_bytes());
        m.free(small).unwrap();
        cleans_up(&r, &mut m);
        figures
    };
    assert_eq!(run(0), (8 * g, 6 * g), "off: woken whole");
    assert_eq!(run(7), (8 * g, 6 * g), "six granules unused, under seven");
    assert_eq!(run(6), (2 * g, 0), "six unused, at the setting: shed");
}

/// Commits made of pieces: each piece is a chunk of its own, so a page
/// that lives on keeps only the pieces it touches, where one whole chunk
/// would strand the rest (the same pages, the same frees, beside the
/// default of chunks of any size).
#[test]
fn a_commit_in_pieces_gives_back_what_no_live_page_touches() {
    let g = 64 * KIB;
    // (device bytes held and bytes stranded once the first page is freed
    // and the idle memory given back; commits made for the two pages)
    let run = |piece: u32| {
        let r = rig(config(11));
        let mut m = exact_manager(&r, piece);
        // Two pages of 2.5 granules side by side: the second starts inside
        // the first one's last granule.
        let (a, ra) = m.reserve(g * 5 / 2).unwrap();
        let (b, rb) = m.reserve(g * 5 / 2).unwrap();
        assert_eq!(rb.offset, ra.offset + g * 5 / 2, "carved side by side");
        let commits = m.commits();
        m.free(a).unwrap();
        m.cleanup().unwrap();
        let stranded = m.stranded_bytes();
        let held = r.mock.memory_used(MemoryKind::Device);
        m.free(b).unwrap();
        cleans_up(&r, &mut m);
        (held, stranded, commits)
    };
    // One chunk per commit: granules 0-2, then 3-4; the first stays whole
    // while the second page uses its last granule (stranded: its first two
    // granules and half of the fifth, the second page's end).
    assert_eq!(run(0), (5 * g, g * 5 / 2, 2));
    // One chunk per granule: granules 0 and 1 go back with the first page.
    assert_eq!(run(1), (3 * g, g / 2, 5));
    // Pieces of two: 0-1, 2, then 3-4.
    assert_eq!(run(2), (3 * g, g / 2, 3));
}

/// A page whose bytes are committed in part (an idle chunk in its middle)
/// commits its gaps and reaches past its end no further than the commit
/// step allows beyond what the page needs: the step is measured against
/// the page's gaps together, not granted again to its last gap (which
/// committed the first gap's size a second time, past the page's end, and
/// stranded it there while the page lived: the growing pairs of the driver
/// model held 1.06 times their live peak where 1.007 was needed).
#[test]
fn a_page_committed_in_two_gaps_reaches_no_further_than_its_step() {
    let g = 64 * KIB;
    let r = rig(config(13));
    let mut m = exact_manager(&r, 0);
    let (a, ra) = m.reserve(2 * g).unwrap();
    let (b, rb) = m.reserve(2 * g).unwrap();
    let (c, rc) = m.reserve(2 * g).unwrap();
    assert_eq!(
        (rb.offset, rc.offset),
        (ra.offset + 2 * g, ra.offset + 4 * g)
    );
    assert_eq!(m.commits(), 3);
    // The outer pages' chunks go back; the middle page is freed in stream
    // order, its work not yet done, so its chunk stays committed.
    m.free(a).unwrap();
    m.free(c).unwrap();
    m.cleanup().unwrap();
    assert_eq!(r.mock.memory_used(MemoryKind::Device), 2 * g);
    m.free_ordered(b, 1).unwrap();
    // Six granules over the idle chunk: two gaps of two granules.
    let (d, rd) = m.reserve(6 * g).unwrap();
    assert_eq!(rd.offset, ra.offset, "carved over the three");
    assert_eq!(m.commits(), 5, "one commit per gap");
    assert_eq!(
        r.mock.memory_used(MemoryKind::Device),
        6 * g,
        "nothing committed past the page"
    );
    m.free(d).unwrap();
    m.complete(1);
    cleans_up(&r, &mut m);
}
