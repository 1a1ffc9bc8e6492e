//! The virtual-memory storage: chosen at run time, pages in whole granules,
//! reservations committed and decommitted in place, typed errors, nothing
//! mapped inside a capture.

use streamcore::platform::{
    Capabilities, DeviceRange, ErrorKind, GraphCapture, PageId, Platform, PlatformError, Storage,
};
use streamcore_hip::{HipDeviceStorage, HipPlatform, HipVmmStorage, StoragePreference};

use crate::common::{platform_or_skip, round_trip, visible};
use crate::runner::{Outcome, Skip};

const MIB: u64 = 1 << 20;

/// The platform and its virtual-memory storage, or why the test cannot run
/// (no device, or no virtual-memory support).
fn vmm_or_skip() -> Result<(HipPlatform, HipVmmStorage), Skip> {
    let platform = platform_or_skip()?;
    match platform.vmm_storage() {
        Ok(storage) => Ok((platform, storage)),
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::NotAvailable, "{e}");
            Err(Skip(format!("no virtual-memory support ({e})")))
        }
    }
}

pub fn the_device_storage_is_chosen_at_run_time() -> Outcome {
    let platform = platform_or_skip()?;
    let chosen = platform.device_storage().unwrap();
    visible(&format!(
        "virtual-memory granularity {:?}: device storage is {}",
        platform.vmm_granularity(),
        chosen.name()
    ));
    match platform.vmm_granularity() {
        Some(g) => {
            assert!(g.is_power_of_two() && g >= 4096, "granularity {g}");
            assert!(matches!(chosen, HipDeviceStorage::Vmm(_)));
        }
        None => assert!(matches!(chosen, HipDeviceStorage::Malloc(_))),
    }
    // The declaration says which storage it is.
    assert_eq!(
        platform
            .capabilities()
            .contains(Capabilities::VIRTUAL_MEMORY),
        matches!(chosen, HipDeviceStorage::Vmm(_))
    );
    let platform = platform.with_storage(StoragePreference::Malloc);
    assert!(matches!(
        platform.device_storage().unwrap(),
        HipDeviceStorage::Malloc(_)
    ));
    assert!(
        !platform
            .capabilities()
            .contains(Capabilities::VIRTUAL_MEMORY)
    );
    Ok(())
}

pub fn vmm_pages_are_whole_granules_that_hold_bytes() -> Outcome {
    let (platform, mut vmm) = vmm_or_skip()?;
    let g = vmm.granularity();
    assert_eq!(
        vmm.alignment(),
        256,
        "slices align to the device alignment, not the granule"
    );
    let terms = vmm.terms();
    assert_eq!(terms.granularity, g);
    assert_eq!(terms.resizable.map(|r| r.granularity), Some(g));
    let before = platform.memory_info().unwrap().used();
    // Above the pack limit: mapped granules. At or below it: hipMalloc.
    let a = vmm.alloc(3 * MIB).unwrap();
    let b = vmm.alloc(5 * MIB + 256).unwrap();
    let small = vmm.alloc(MIB).unwrap();
    assert!(a != b && b != small && a != small);
    assert_eq!(a.0 % g, 0, "pages start on granules");
    assert_eq!(b.0 % g, 0);
    let big = (3 * MIB).div_ceil(g) * g + (5 * MIB + 256).div_ceil(g) * g;
    assert_eq!(vmm.mapped_bytes(), big);
    assert_eq!(vmm.live_bytes(), big + MIB);
    let charged = platform.memory_info().unwrap().used() - before;
    visible(&format!(
        "3 MiB + 5 MiB+256 pages: {big} B mapped; with a 1 MiB page the driver charged {charged} B"
    ));
    assert!(
        charged >= big && charged <= big + 2 * MIB,
        "charged {charged}"
    );
    // The whole rounded page is usable, not only the bytes asked for.
    let last = DeviceRange {
        page: b,
        offset: (5 * MIB + 256).div_ceil(g) * g - 4096,
        len: 4096,
    };
    assert_eq!(
        round_trip(&platform, last, 7),
        (0..1024).map(|i| i ^ 7).collect::<Vec<_>>()
    );
    let calls = vmm.calls();
    assert_eq!((calls.reserve, calls.map), (2, 2));
    vmm.dealloc(a);
    vmm.dealloc(b);
    vmm.dealloc(small);
    assert_eq!(vmm.pending_pages(), 3);
    assert_eq!(vmm.live_bytes(), 0);
    vmm.flush().unwrap();
    assert_eq!(vmm.pending_pages(), 0);
    assert_eq!(vmm.mapped_bytes(), 0);
    assert_eq!(
        platform.memory_info().unwrap().used(),
        before,
        "everything given back"
    );
    let calls = vmm.calls();
    assert_eq!((calls.unmap, calls.address_free), (2, 2));
    assert_eq!(
        vmm.driver_calls(),
        calls.total() + 2,
        "plus hipMalloc and hipFree"
    );
    Ok(())
}

pub fn reservations_commit_and_decommit_in_place() -> Outcome {
    let (platform, mut vmm) = vmm_or_skip()?;
    let g = vmm.granularity();
    let page = vmm.reserve_range(16 * g).unwrap();
    assert_eq!(page.0 % g, 0);
    assert_eq!(vmm.live_bytes(), 0, "a reservation holds no memory");
    let before = platform.memory_info().unwrap().used();
    vmm.commit(page, 0, 2 * g).unwrap();
    vmm.commit(page, 4 * g, g).unwrap();
    assert_eq!(platform.memory_info().unwrap().used() - before, 3 * g);
    let refused = [
        (g, g, "overlaps the first chunk"),
        (3 * g, 2 * g, "overlaps the second chunk"),
        (g / 2, g, "misaligned offset"),
        (8 * g, g / 2, "misaligned length"),
        (15 * g, 2 * g, "past the end"),
        (8 * g, 0, "empty"),
    ];
    for (offset, len, why) in refused {
        let e = vmm.commit(page, offset, len).expect_err(why);
        assert_eq!(e.kind(), ErrorKind::InvalidValue, "{why}: {e}");
    }
    let e = vmm
        .commit(PageId(page.0 + g), 8 * g, g)
        .expect_err("not a reservation");
    assert_eq!(e.kind(), ErrorKind::InvalidValue);
    assert_eq!(
        platform.memory_info().unwrap().used() - before,
        3 * g,
        "refusals changed nothing"
    );

    let second = DeviceRange {
        page,
        offset: 4 * g,
        len: 4096,
    };
    assert_eq!(
        round_trip(&platform, second, 3),
        (0..1024).map(|i| i ^ 3).collect::<Vec<_>>()
    );
    // Give the first chunk back; the second keeps its place and its bytes.
    let e = vmm
        .decommit(page, 0, g)
        .expect_err("not the committed length");
    assert_eq!(e.kind(), ErrorKind::InvalidValue);
    vmm.decommit(page, 0, 2 * g).unwrap();
    assert_eq!(platform.memory_info().unwrap().used() - before, g);
    let first = DeviceRange {
        page,
        offset: 0,
        len: 4096,
    };
    // Committed again at the same offset: usable again.
    vmm.commit(page, 0, g).unwrap();
    assert_eq!(
        round_trip(&platform, first, 9),
        (0..1024).map(|i| i ^ 9).collect::<Vec<_>>()
    );
    vmm.dealloc(page);
    vmm.flush().unwrap();
    assert_eq!(platform.memory_info().unwrap().used(), before);
    Ok(())
}

pub fn out_of_memory_on_commit_is_typed_and_changes_nothing() -> Outcome {
    let (platform, mut vmm) = vmm_or_skip()?;
    let g = vmm.granularity();
    let total = platform.properties().total_memory;
    let too_much = (2 * total).div_ceil(g) * g;
    let page = vmm.reserve_range(too_much).unwrap();
    let e = vmm
        .commit(page, 0, too_much)
        .expect_err("twice the device cannot fit");
    assert_eq!(e.kind(), ErrorKind::OutOfMemory, "{e}");
    assert_eq!(e.call(), "hipMemCreate");
    assert_eq!(vmm.live_bytes(), 0);
    vmm.commit(page, 0, g).unwrap();
    vmm.decommit(page, 0, g).unwrap();
    vmm.dealloc(page);
    vmm.flush().unwrap();
    let e = vmm.alloc(too_much).expect_err("a page twice the device");
    assert_eq!(e.kind(), ErrorKind::OutOfMemory, "{e}");
    assert_eq!((vmm.live_bytes(), vmm.pending_pages()), (0, 0));
    Ok(())
}

pub fn nothing_is_mapped_or_unmapped_inside_a_capture() -> Outcome {
    let (platform, mut vmm) = vmm_or_skip()?;
    let g = vmm.granularity();
    let page = vmm.reserve_range(4 * g).unwrap();
    vmm.commit(page, 0, g).unwrap();
    let plain = vmm.alloc(g).unwrap();
    vmm.dealloc(plain);
    let mut stream = platform.create_stream().unwrap();
    platform.begin_capture(&mut stream).unwrap();
    let e = vmm.commit(page, g, g).expect_err("map inside a capture");
    assert_eq!(e.kind(), ErrorKind::CaptureUnsupported, "{e}");
    let e = vmm
        .decommit(page, 0, g)
        .expect_err("unmap inside a capture");
    assert_eq!(e.kind(), ErrorKind::CaptureUnsupported, "{e}");
    vmm.flush().unwrap();
    assert_eq!(vmm.pending_pages(), 1, "a release inside a capture waits");
    let graph = platform.end_capture(&mut stream).unwrap();
    platform.destroy_graph(graph).unwrap();
    assert_eq!(vmm.live_bytes(), g, "the refusals changed nothing");
    vmm.flush().unwrap();
    assert_eq!(vmm.pending_pages(), 0);
    vmm.decommit(page, 0, g).unwrap();
    vmm.dealloc(page);
    vmm.flush().unwrap();
    assert_eq!(vmm.mapped_bytes(), 0);
    Ok(())
}
