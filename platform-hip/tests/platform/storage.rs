//! Device and pinned storages: alloc, deferred free, OOM, bounds.

use streamcore::platform::{
    DeviceRange, ErrorKind, HostStorage, PageId, Platform, PlatformError, Storage,
};

use crate::common::{host_range, platform_or_skip};
use crate::runner::Outcome;

pub fn device_pages_are_distinct_aligned_and_freed_on_flush() -> Outcome {
    let platform = platform_or_skip()?;
    let mut device = platform.malloc_storage();
    let align = device.alignment();
    let pages: Vec<PageId> = (0..4).map(|_| device.alloc(1 << 20).unwrap()).collect();
    for (i, p) in pages.iter().enumerate() {
        assert_eq!(p.0 % align, 0, "page {i} misaligned");
        assert!(pages[..i].iter().all(|q| q != p), "duplicate page id");
    }
    assert_eq!(device.live_bytes(), 4 << 20);
    device.dealloc(pages[1]);
    device.dealloc(pages[2]);
    assert_eq!(device.pending_pages(), 2);
    assert_eq!(device.live_bytes(), 2 << 20);
    device.flush().unwrap();
    assert_eq!(device.pending_pages(), 0);
    Ok(())
}

pub fn out_of_memory_is_typed_and_changes_nothing() -> Outcome {
    let platform = platform_or_skip()?;
    let mut device = platform.malloc_storage();
    let before = device.live_bytes();
    let err = device.alloc(1 << 50).expect_err("a petabyte cannot fit");
    assert_eq!(err.kind(), ErrorKind::OutOfMemory, "{err}");
    assert_eq!(err.call(), "hipMalloc");
    assert_eq!(err.name(), "hipErrorOutOfMemory");
    assert_eq!(device.live_bytes(), before);
    // Not sticky: the next allocation works.
    let page = device.alloc(4096).unwrap();
    device.dealloc(page);
    device.flush().unwrap();
    Ok(())
}

pub fn host_pages_refuse_out_of_range_access() -> Outcome {
    let platform = platform_or_skip()?;
    let mut host = platform.host_storage().unwrap();
    let page = host.alloc(4096).unwrap();
    host.write(page, 4000, &[7u8; 96]).unwrap();
    let mut out = [0u8; 96];
    host.read(page, 4000, &mut out).unwrap();
    assert_eq!(out, [7u8; 96]);

    let err = host.write(page, 4001, &[0u8; 96]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidValue);
    let err = host.read(page, u64::MAX, &mut out).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidValue);
    let err = host.read(PageId(page.0 + 1), 0, &mut out).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidValue, "not a page id");

    host.dealloc(page);
    assert_eq!(
        host.read(page, 0, &mut out).unwrap_err().kind(),
        ErrorKind::InvalidValue
    );
    host.flush().unwrap();
    Ok(())
}

pub fn copies_refuse_host_ranges_outside_live_pages_and_mismatched_lengths() -> Outcome {
    let platform = platform_or_skip()?;
    let mut host = platform.host_storage().unwrap();
    let mut device = platform.device_storage().unwrap();
    let mut stream = platform.create_stream().unwrap();
    let h = host.alloc(4096).unwrap();
    let d = device.alloc(8192).unwrap();

    let past_end = platform.copy_to_host(
        &mut stream,
        DeviceRange {
            page: d,
            offset: 0,
            len: 8192,
        },
        host_range(h, 0, 8192),
    );
    assert_eq!(past_end.unwrap_err().kind(), ErrorKind::InvalidValue);

    let mismatched = platform.copy_to_device(
        &mut stream,
        host_range(h, 0, 16),
        DeviceRange {
            page: d,
            offset: 0,
            len: 32,
        },
    );
    assert_eq!(mismatched.unwrap_err().kind(), ErrorKind::InvalidValue);

    host.dealloc(h);
    host.flush().unwrap();
    let freed = platform.copy_to_host(
        &mut stream,
        DeviceRange {
            page: d,
            offset: 0,
            len: 16,
        },
        host_range(h, 0, 16),
    );
    assert_eq!(
        freed.unwrap_err().kind(),
        ErrorKind::InvalidValue,
        "freed page"
    );
    Ok(())
}
