//! Driver faults in the virtual-memory storage's calls, on a real device:
//! each failure path is typed, loses nothing and leaks nothing (the
//! driver's own count of used memory comes back to where it was), and the
//! storage works on after it.
//!
//! The faults come from the HIP-on-CUDA shim through
//! `streamcore_hip::faults` (the next call of one entry point returns a
//! status without reaching the driver); over a runtime without it (a real
//! ROCm) these tests skip.

use streamcore::memory::{MemoryError, MemoryLayout, MemoryManager};
use streamcore::platform::{DeviceRange, ErrorKind, PageId, Platform, PlatformError, Storage};
use streamcore_hip::{HipError, HipPlatform, HipVmmStorage, faults};

use crate::common::{platform_or_skip, round_trip};
use crate::runner::{Outcome, Skip};

/// HIP's out-of-memory status, what the injected faults return.
const OUT_OF_MEMORY: i32 = status(ErrorKind::OutOfMemory);
/// HIP's invalid-value status.
const INVALID_VALUE: i32 = status(ErrorKind::InvalidValue);
/// `hipErrorUnknown`, a status of kind `Other`.
const UNKNOWN: i32 = status(ErrorKind::Other);

/// The status `faults::status_of` gives a kind that has one.
const fn status(kind: ErrorKind) -> i32 {
    match faults::status_of(kind) {
        Some(s) => s,
        None => panic!("a kind with an injectable status"),
    }
}

/// The shim's fault switch (`streamcore_hip::faults`).
struct Faults;

impl Faults {
    /// The switch, or why these tests cannot run.
    fn open() -> Result<Self, Skip> {
        if faults::available() {
            Ok(Self)
        } else {
            Err(Skip("the runtime injects no faults (not the shim)".into()))
        }
    }

    /// The next call of `call` returns `status`.
    fn fail_next(&self, call: &str, status: i32) {
        if let Err(e) = faults::fail_next(call, status) {
            panic!("the shim refused a fault for {call}: {e}");
        }
    }
}

/// The platform, its virtual-memory storage and the fault switch, or why
/// the test cannot run.
fn setup() -> Result<(HipPlatform, HipVmmStorage, Faults), Skip> {
    let platform = platform_or_skip()?;
    let mut vmm = platform
        .vmm_storage()
        .map_err(|e| Skip(format!("no virtual-memory support ({e})")))?;
    let faults = Faults::open()?;
    // The first copies of a process may take device memory of their own
    // (the runtime's staging): taken here, before a test counts.
    let g = vmm.granularity();
    let page = vmm.reserve_range(g).unwrap();
    commit_use_decommit(&platform, &mut vmm, page, 0, g);
    vmm.dealloc(page);
    vmm.flush().unwrap();
    Ok((platform, vmm, faults))
}

/// Asserts that `e` names `call` and is of `kind`.
fn refused_by(e: &HipError, call: &str, kind: ErrorKind) {
    assert_eq!((e.call(), e.kind()), (call, kind), "{e}");
}

/// Device memory in use, as the driver counts it.
fn used(platform: &HipPlatform) -> u64 {
    platform.memory_info().unwrap().used()
}

/// Writes 1024 words at `page` + `offset` and reads them back: the chunk
/// there is mapped and accessible.
fn holds_bytes(platform: &HipPlatform, page: PageId, offset: u64) {
    let at = DeviceRange {
        page,
        offset,
        len: 4096,
    };
    assert_eq!(
        round_trip(platform, at, 0x5a),
        (0..1024).map(|i| i ^ 0x5a).collect::<Vec<_>>()
    );
}

/// Commits `len` bytes at `offset` of the reservation `page`, checks the
/// chunk holds bytes, and decommits it: the offset works.
fn commit_use_decommit(
    platform: &HipPlatform,
    vmm: &mut HipVmmStorage,
    page: PageId,
    offset: u64,
    len: u64,
) {
    vmm.commit(page, offset, len).unwrap();
    holds_bytes(platform, page, offset);
    vmm.decommit(page, offset, len).unwrap();
}

/// A commit whose map, or whose access grant, the driver refuses: the
/// error names the call and its kind, the chunk it created is released
/// (the driver's used memory is back where it was), nothing stays mapped
/// at that offset (a commit there then works), and the storage's books did
/// not move.
pub fn a_refused_map_or_access_releases_the_chunk() -> Outcome {
    let (platform, mut vmm, faults) = setup()?;
    let g = vmm.granularity();
    let page = vmm.reserve_range(4 * g).unwrap();
    let before = used(&platform);
    for (call, status, kind) in [
        ("hipMemMap", OUT_OF_MEMORY, ErrorKind::OutOfMemory),
        ("hipMemSetAccess", INVALID_VALUE, ErrorKind::InvalidValue),
        ("hipMemCreate", OUT_OF_MEMORY, ErrorKind::OutOfMemory),
    ] {
        faults.fail_next(call, status);
        let e = vmm.commit(page, g, 2 * g).expect_err(call);
        refused_by(&e, call, kind);
        assert_eq!(used(&platform), before, "{call}: the chunk was released");
        assert_eq!((vmm.live_bytes(), vmm.mapped_bytes()), (0, 0), "{call}");
        commit_use_decommit(&platform, &mut vmm, page, g, 2 * g);
        assert_eq!(used(&platform), before, "{call}");
    }
    vmm.dealloc(page);
    vmm.flush().unwrap();
    assert_eq!(vmm.pending_pages(), 0);
    Ok(())
}

/// A refused access grant whose undoing unmap is refused too: the commit
/// fails, the mapping stays in the range (counted as mapped, refusing a
/// commit over it), and goes with the range, its memory with it.
pub fn a_mapping_that_will_not_go_is_released_with_its_range() -> Outcome {
    let (platform, mut vmm, faults) = setup()?;
    let g = vmm.granularity();
    let before = used(&platform);
    let page = vmm.reserve_range(4 * g).unwrap();
    faults.fail_next("hipMemSetAccess", INVALID_VALUE);
    faults.fail_next("hipMemUnmap", INVALID_VALUE);
    let e = vmm.commit(page, g, g).expect_err("no access");
    assert_eq!(e.call(), "hipMemSetAccess", "the first error: {e}");
    assert_eq!(used(&platform), before + g, "still mapped");
    let e = vmm.commit(page, g, g).expect_err("over the stuck mapping");
    assert_eq!(e.kind(), ErrorKind::InvalidValue, "{e}");
    // The rest of the range works.
    commit_use_decommit(&platform, &mut vmm, page, 2 * g, g);
    vmm.dealloc(page);
    vmm.flush().unwrap();
    assert_eq!(used(&platform), before, "released with the range");
    assert_eq!(vmm.pending_pages(), 0);
    Ok(())
}

/// A decommit whose unmap the driver refuses leaves the chunk mapped,
/// counted and holding its bytes; the next decommit gives it back.
pub fn a_refused_unmap_keeps_the_chunk_usable() -> Outcome {
    let (platform, mut vmm, faults) = setup()?;
    let g = vmm.granularity();
    let page = vmm.reserve_range(2 * g).unwrap();
    let before = used(&platform);
    vmm.commit(page, 0, g).unwrap();
    faults.fail_next("hipMemUnmap", INVALID_VALUE);
    let e = vmm.decommit(page, 0, g).expect_err("the unmap fails");
    assert_eq!(e.call(), "hipMemUnmap", "{e}");
    assert_eq!(vmm.mapped_bytes(), g, "still mapped");
    assert_eq!(used(&platform), before + g);
    holds_bytes(&platform, page, 0);
    vmm.decommit(page, 0, g).unwrap();
    assert_eq!(used(&platform), before);
    vmm.dealloc(page);
    vmm.flush().unwrap();
    Ok(())
}

/// A release that fails after its chunk was unmapped (on a decommit, or on
/// a refused map) is made again by the next flush: the memory comes back
/// then, not never.
pub fn a_failed_release_is_retried_by_the_flush() -> Outcome {
    let (platform, mut vmm, faults) = setup()?;
    let g = vmm.granularity();
    let page = vmm.reserve_range(2 * g).unwrap();
    let before = used(&platform);

    // Once unmapped, the decommit happened: the caller may not use the
    // bytes, and the memory goes back at the next flush.
    vmm.commit(page, 0, g).unwrap();
    faults.fail_next("hipMemRelease", OUT_OF_MEMORY);
    vmm.decommit(page, 0, g).unwrap();
    assert_eq!((vmm.mapped_bytes(), vmm.live_bytes()), (0, 0), "unmapped");
    assert_eq!(used(&platform), before + g, "held until released");
    // A flush whose release fails again says so, and keeps the chunk.
    faults.fail_next("hipMemRelease", OUT_OF_MEMORY);
    let e = vmm.flush().expect_err("the release fails again");
    assert_eq!(e.call(), "hipMemRelease", "{e}");
    assert_eq!(used(&platform), before + g);
    vmm.flush().unwrap();
    assert_eq!(used(&platform), before, "released by the flush");
    // The offset takes a new chunk.
    commit_use_decommit(&platform, &mut vmm, page, 0, g);

    faults.fail_next("hipMemMap", OUT_OF_MEMORY);
    faults.fail_next("hipMemRelease", OUT_OF_MEMORY);
    let e = vmm.commit(page, 0, g).expect_err("the map fails");
    assert_eq!(e.call(), "hipMemMap", "the map's error is reported: {e}");
    assert_eq!(used(&platform), before + g, "its chunk is not released yet");
    vmm.flush().unwrap();
    assert_eq!(used(&platform), before, "released by the flush");
    commit_use_decommit(&platform, &mut vmm, page, 0, g);
    vmm.dealloc(page);
    vmm.flush().unwrap();
    assert_eq!(used(&platform), before);
    Ok(())
}

/// Addresses whose free the driver refuses stay queued: the flush reports
/// the error, and the next one frees them. The same for the range of a
/// plain page whose memory could not be had.
pub fn a_failed_address_free_is_retried_by_the_flush() -> Outcome {
    let (platform, mut vmm, faults) = setup()?;
    let g = vmm.granularity();
    let before = used(&platform);
    let page = vmm.reserve_range(4 * g).unwrap();
    vmm.dealloc(page);
    faults.fail_next("hipMemAddressFree", INVALID_VALUE);
    let e = vmm.flush().expect_err("the free fails");
    assert_eq!(e.call(), "hipMemAddressFree", "{e}");
    assert_eq!(vmm.pending_pages(), 1, "kept for the next flush");
    vmm.flush().unwrap();
    assert_eq!(vmm.pending_pages(), 0);

    // A plain page past the pack limit: a range, then its memory.
    faults.fail_next("hipMemCreate", OUT_OF_MEMORY);
    faults.fail_next("hipMemAddressFree", INVALID_VALUE);
    let e = vmm.alloc(4 * g).expect_err("no memory for the page");
    refused_by(&e, "hipMemCreate", ErrorKind::OutOfMemory);
    assert_eq!(vmm.pending_pages(), 1, "its range waits for the flush");
    vmm.flush().unwrap();
    assert_eq!(vmm.pending_pages(), 0);
    let plain = vmm.alloc(4 * g).unwrap();
    holds_bytes(&platform, plain, 0);
    vmm.dealloc(plain);
    vmm.flush().unwrap();
    assert_eq!(used(&platform), before);

    // A reservation the driver refuses: typed, nothing held.
    faults.fail_next("hipMemAddressReserve", OUT_OF_MEMORY);
    let e = vmm.reserve_range(4 * g).expect_err("no addresses");
    assert_eq!(e.call(), "hipMemAddressReserve", "{e}");
    assert_eq!((vmm.live_bytes(), vmm.pending_pages()), (0, 0));
    Ok(())
}

/// A pool over the device storage meets the same faults: a refusal of
/// another kind than exhaustion is a typed `MemoryError::Storage` naming
/// the driver call, with nothing held more, and the next reserve works; a
/// one-off exhaustion is ridden out by the pool's retry; a close whose
/// unmap fails says so, and dropping the pool still gives the device all
/// its memory back.
pub fn a_pool_on_the_device_rides_out_refused_calls() -> Outcome {
    let (platform, vmm, faults) = setup()?;
    let before = used(&platform);
    let mut pool = MemoryManager::new(vmm, MemoryLayout::for_device(&platform.properties()));
    // Large pages, each its own reservation and commits (nothing carved
    // from memory the pool holds): every reserve calls the driver.
    const SIZE: u64 = 800 << 20;
    let mut live = Vec::new();
    for call in [
        "hipMemAddressReserve",
        "hipMemCreate",
        "hipMemMap",
        "hipMemSetAccess",
    ] {
        let held = pool.held_bytes();
        faults.fail_next(call, INVALID_VALUE);
        match pool.reserve(SIZE) {
            Err(MemoryError::Storage { source, .. }) => {
                assert_eq!(source.call(), call, "{source}");
                assert_eq!(source.kind(), ErrorKind::InvalidValue, "{source}");
            }
            other => panic!("{call}: {other:?}"),
        }
        assert_eq!(pool.held_bytes(), held, "{call}: nothing held more");
        let (h, range) = pool.reserve(SIZE).unwrap();
        holds_bytes(&platform, range.page, range.offset);
        live.push(h);
    }
    faults.fail_next("hipMemCreate", OUT_OF_MEMORY);
    let (h, range) = pool.reserve(SIZE).expect("retried once");
    holds_bytes(&platform, range.page, range.offset);
    live.push(h);
    assert!(used(&platform) >= before + 5 * SIZE);
    for h in live {
        pool.free(h).unwrap();
    }
    faults.fail_next("hipMemUnmap", INVALID_VALUE);
    match pool.close() {
        Err(MemoryError::Storage { source, .. }) => assert_eq!(source.call(), "hipMemUnmap"),
        other => panic!("close: {other:?}"),
    }
    drop(pool);
    assert_eq!(used(&platform), before, "the drop gave everything back");
    Ok(())
}

/// The plain storages (`hipMalloc` for device pages, `hipHostMalloc` for
/// pinned ones): a refused allocation is typed and holds nothing; a refused
/// free keeps the page queued, and the next flush frees it (the driver's
/// count of used device memory back where it was). The switch itself
/// refuses what it cannot fault and counts the faults taken.
pub fn plain_pages_ride_out_refused_calls() -> Outcome {
    let (platform, _vmm, faults) = setup()?;
    let before = used(&platform);
    let taken = faults::taken().unwrap();
    let mut dev = platform.malloc_storage();
    faults.fail_next("hipMalloc", OUT_OF_MEMORY);
    let e = dev.alloc(4 << 20).expect_err("no memory");
    refused_by(&e, "hipMalloc", ErrorKind::OutOfMemory);
    assert_eq!(
        faults::taken().unwrap(),
        taken + 1,
        "the allocation took it"
    );
    assert_eq!((dev.live_bytes(), dev.pending_pages()), (0, 0));
    let page = dev.alloc(4 << 20).unwrap();
    holds_bytes(&platform, page, 4096);
    dev.dealloc(page);
    faults.fail_next("hipFree", INVALID_VALUE);
    let e = dev.flush().expect_err("the free fails");
    assert_eq!(e.call(), "hipFree", "{e}");
    assert_eq!(dev.pending_pages(), 1, "kept for the next flush");
    dev.flush().unwrap();
    assert_eq!(dev.pending_pages(), 0);
    assert_eq!(used(&platform), before, "the page went back to the driver");

    let mut host = platform.host_storage().unwrap();
    faults.fail_next("hipHostMalloc", OUT_OF_MEMORY);
    let e = host.alloc(1 << 16).expect_err("no pinned memory");
    refused_by(&e, "hipHostMalloc", ErrorKind::OutOfMemory);
    let pinned = host.alloc(1 << 16).unwrap();
    streamcore::platform::HostStorage::write(&mut host, pinned, 0, &[7; 64]).unwrap();
    host.dealloc(pinned);
    faults.fail_next("hipHostFree", INVALID_VALUE);
    let e = host.flush().expect_err("the free fails");
    assert_eq!(e.call(), "hipHostFree", "{e}");
    host.flush().unwrap();
    assert_eq!(faults::taken().unwrap(), taken + 4);

    for (call, status) in [("hipNoSuchCall", INVALID_VALUE), ("hipMalloc", 0)] {
        let e = faults::fail_next(call, status).expect_err("refused");
        assert_eq!(e.kind(), ErrorKind::InvalidValue, "{call} {status}: {e}");
    }
    let e = faults::fail_next("hip\0Malloc", INVALID_VALUE).expect_err("a NUL byte");
    assert_eq!(e.kind(), ErrorKind::InvalidValue, "{e}");
    assert_eq!(faults::taken().unwrap(), taken + 4, "nothing more pending");
    Ok(())
}

/// The platform's own calls, each refused once by the driver: streams,
/// events (record, wait, query, synchronize) and copies answer a typed
/// error naming the call, and the next call works.
pub fn streams_events_and_copies_ride_out_refused_calls() -> Outcome {
    let (platform, _vmm, faults) = setup()?;
    let refused = |e: HipError, call: &str| refused_by(&e, call, ErrorKind::Other);
    faults.fail_next("hipStreamCreateWithFlags", UNKNOWN);
    refused(
        platform.create_stream().expect_err("refused"),
        "hipStreamCreateWithFlags",
    );
    let mut stream = platform.create_stream().unwrap();
    let mut other = platform.create_stream().unwrap();

    faults.fail_next("hipEventRecord", UNKNOWN);
    refused(
        platform.record(&mut stream).expect_err("refused"),
        "hipEventRecord",
    );
    let event = platform.record(&mut stream).unwrap();
    faults.fail_next("hipStreamWaitEvent", UNKNOWN);
    refused(
        platform.wait(&mut other, &event).expect_err("refused"),
        "hipStreamWaitEvent",
    );
    platform.wait(&mut other, &event).unwrap();
    faults.fail_next("hipEventQuery", UNKNOWN);
    refused(
        platform.query(&event).expect_err("refused"),
        "hipEventQuery",
    );
    faults.fail_next("hipEventSynchronize", UNKNOWN);
    refused(
        platform.synchronize(&event).expect_err("refused"),
        "hipEventSynchronize",
    );
    platform.synchronize(&event).unwrap();
    assert!(platform.query(&event).unwrap());

    // A refused copy moves nothing; the next one does.
    let mut device = platform.malloc_storage();
    let page = device.alloc(1 << 16).unwrap();
    let at = DeviceRange {
        page,
        offset: 0,
        len: 4096,
    };
    let mut host = platform.host_storage().unwrap();
    let src = crate::common::host_page(&mut host, &[0xab; 4096]);
    faults.fail_next("hipMemcpyAsync", UNKNOWN);
    refused(
        platform
            .copy_to_device(&mut stream, crate::common::host_range(src, 0, 4096), at)
            .expect_err("refused"),
        "hipMemcpyAsync",
    );
    holds_bytes(&platform, page, 0);
    device.dealloc(page);
    device.flush().unwrap();
    Ok(())
}
