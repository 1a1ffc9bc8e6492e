//! The layouts' tests.

use super::preset::{KIB, MIB};
use super::*;
use crate::platform::DeviceProperties;

fn props() -> DeviceProperties {
    DeviceProperties {
        total_memory: 141 << 30,
        max_page_size: 1 << 30,
        alignment: 256,
        integrated: false,
    }
}

#[test]
fn presets_are_valid_and_ordered() {
    for p in [
        LayoutPreset::Balanced,
        LayoutPreset::ExclusivePages,
        LayoutPreset::Sliced,
    ] {
        let l = MemoryLayout::preset(p, &props());
        let again = MemoryLayout::new(l.pools(), l.alignment(), *l.policy());
        assert_eq!(again.as_ref(), Ok(&l), "{p:?}");
        assert_eq!(l.pools().last().unwrap().max_slice, 1 << 30, "{p:?}");
    }
}

#[test]
fn odd_properties_still_give_a_valid_layout() {
    let p = DeviceProperties {
        total_memory: 0,
        max_page_size: 0,
        alignment: 3,
        integrated: true,
    };
    let l = MemoryLayout::for_device(&p);
    assert_eq!(l.alignment(), 256);
    assert!(MemoryLayout::new(l.pools(), l.alignment(), *l.policy()).is_ok());
}

/// Sizes and alignments at the edge of `u64` are typed errors, and
/// properties out of range still give a valid layout (issue: a page size
/// of 2^64 - 1 used to overflow the rounding, an alignment of 2^63 to
/// corrupt the accounting).
#[test]
fn absurd_sizes_and_alignments_are_refused_not_wrapped() {
    let pol = MemoryPolicy::default();
    assert_eq!(
        MemoryLayout::new(&[PoolSpec::exclusive(u64::MAX)], 256, pol),
        Err(LayoutError::PageTooLarge {
            pool: 0,
            page: u64::MAX,
            limit: MAX_PAGE_SIZE
        })
    );
    assert_eq!(
        MemoryLayout::new(&[PoolSpec::sliced(u64::MAX, 1 << 20)], 256, pol),
        Err(LayoutError::PageTooLarge {
            pool: 0,
            page: u64::MAX,
            limit: MAX_PAGE_SIZE
        })
    );
    assert_eq!(
        MemoryLayout::new(&[PoolSpec::exclusive(1 << 20)], 1 << 63, pol),
        Err(LayoutError::BadAlignment { alignment: 1 << 63 })
    );
    assert!(MemoryLayout::new(&[PoolSpec::exclusive(MAX_PAGE_SIZE)], MAX_ALIGNMENT, pol).is_ok());
    let text = alloc::format!("{}", LayoutError::BadAlignment { alignment: 1 << 63 });
    assert!(text.contains("9223372036854775808"), "{text}");
    // A power of two too large is not called "not a power of two".
    assert!(text.contains("above the largest supported"), "{text}");
    assert!(!text.contains("not a power of two"), "{text}");
    let text = alloc::format!("{}", LayoutError::BadAlignment { alignment: 96 });
    assert!(text.contains("96 is not a power of two"), "{text}");
    for max_page_size in [u64::MAX, u64::MAX - 1, 1 << 63, MAX_PAGE_SIZE + 1] {
        let p = DeviceProperties {
            max_page_size,
            ..props()
        };
        for preset in [
            LayoutPreset::Balanced,
            LayoutPreset::ExclusivePages,
            LayoutPreset::Sliced,
        ] {
            let l = MemoryLayout::preset(preset, &p);
            // The largest page is the device's memory at most.
            assert_eq!(l.pools().last().unwrap().max_slice, p.total_memory);
            let unknown = DeviceProperties {
                total_memory: 0,
                ..p
            };
            let l0 = MemoryLayout::preset(preset, &unknown);
            assert_eq!(l0.pools().last().unwrap().max_slice, MAX_PAGE_SIZE);
            let again = MemoryLayout::new(l.pools(), l.alignment(), *l.policy());
            assert_eq!(again.as_ref(), Ok(&l), "{preset:?}");
        }
    }
    let huge_align = DeviceProperties {
        alignment: 1 << 63,
        ..props()
    };
    assert_eq!(
        MemoryLayout::try_for_device(&huge_align),
        Err(LayoutError::BadAlignment { alignment: 1 << 63 })
    );
    assert_eq!(MemoryLayout::for_device(&huge_align).alignment(), 256);
    assert_eq!(
        MemoryLayout::try_for_device(&props()),
        Ok(MemoryLayout::for_device(&props()))
    );
}

/// Defaults scale with the device: on a device of a few hundred KiB the
/// small pools' pages are 1/16 of it (a 256 KiB device used to get
/// 1 MiB pages and could allocate nothing), GPU-sized devices keep
/// 1 MiB and 512 KiB pages; every preset fits its device, and a device
/// smaller than one aligned page is a typed error.
#[test]
fn presets_scale_with_the_devices_memory() {
    for total in [
        4 * KIB,
        64 * KIB,
        256 * KIB,
        MIB,
        8 * MIB,
        16 * MIB,
        1 << 34,
        141 << 30,
    ] {
        let p = DeviceProperties {
            total_memory: total,
            max_page_size: total / 4,
            alignment: 256,
            integrated: true,
        };
        for preset in [
            LayoutPreset::Balanced,
            LayoutPreset::ExclusivePages,
            LayoutPreset::Sliced,
        ] {
            let l = MemoryLayout::try_preset(preset, &p).unwrap();
            assert_eq!(l.fits(total), Ok(()), "{preset:?} {total}");
            let small = l.pools()[0];
            assert!(
                small.page_size <= (total / 16).max(256),
                "{total}: {small:?}"
            );
            let again = MemoryLayout::new(l.pools(), l.alignment(), *l.policy());
            assert_eq!(again.as_ref(), Ok(&l), "{preset:?} {total}");
        }
        let l = MemoryLayout::for_device(&p);
        if total >= 16 * MIB {
            assert_eq!(
                (l.pools()[0].page_size, l.pools()[1].page_size),
                (MIB, 512 * KIB),
                "{total}"
            );
        }
    }
    let tiny = DeviceProperties {
        total_memory: 100,
        max_page_size: 100,
        alignment: 256,
        integrated: true,
    };
    assert_eq!(
        MemoryLayout::try_for_device(&tiny),
        Err(LayoutError::DeviceTooSmall {
            total: 100,
            page: 256
        })
    );
    let big =
        MemoryLayout::new(&[PoolSpec::sliced(MIB, KIB)], 256, MemoryPolicy::default()).unwrap();
    assert_eq!(
        big.fits(256 * KIB),
        Err(LayoutError::PageLargerThanDevice {
            pool: 0,
            page: MIB,
            total: 256 * KIB
        })
    );
    assert!(alloc::format!("{}", big.fits(1).unwrap_err()).contains("do not fit"));
}

#[test]
fn each_invalid_layout_has_its_error() {
    let pol = MemoryPolicy::default();
    assert_eq!(MemoryLayout::new(&[], 256, pol), Err(LayoutError::Empty));
    assert_eq!(
        MemoryLayout::new(&[PoolSpec::sliced(0, 0)], 256, pol),
        Err(LayoutError::ZeroSize { pool: 0 })
    );
    assert_eq!(
        MemoryLayout::new(&[PoolSpec::sliced(1024, 2048)], 256, pol),
        Err(LayoutError::SliceLargerThanPage {
            pool: 0,
            slice: 2048,
            page: 1024
        })
    );
    assert_eq!(
        MemoryLayout::new(&[PoolSpec::sliced(4096, 1024).with_cap(2048)], 256, pol),
        Err(LayoutError::CapSmallerThanPage {
            pool: 0,
            cap: 2048,
            page: 4096
        })
    );
    let many = [PoolSpec::exclusive(1 << 20); MAX_POOLS + 1];
    assert_eq!(
        MemoryLayout::new(&many, 256, pol),
        Err(LayoutError::TooManyPools {
            count: MAX_POOLS + 1,
            limit: MAX_POOLS
        })
    );
    let pages = MemoryPolicy {
        max_pages: MAX_PAGES + 1,
        ..pol
    };
    assert_eq!(
        MemoryLayout::new(&[PoolSpec::exclusive(1 << 20)], 256, pages),
        Err(LayoutError::TooManyPages {
            requested: MAX_PAGES + 1,
            limit: MAX_PAGES
        })
    );
    assert_eq!(
        MemoryLayout::new(
            &[PoolSpec::exclusive(1 << 20), PoolSpec::exclusive(1 << 10)],
            256,
            pol
        ),
        Err(LayoutError::Unordered { pool: 1 })
    );
    let persistent = PoolSpec {
        kind: PoolKind::Persistent,
        ..PoolSpec::exclusive(1 << 20)
    };
    assert_eq!(
        MemoryLayout::new(&[persistent], 256, pol),
        Err(LayoutError::ReservedKind { pool: 0 })
    );
    assert_eq!(
        MemoryLayout::new(&[PoolSpec::exclusive(1 << 20)], 96, pol),
        Err(LayoutError::BadAlignment { alignment: 96 })
    );
    let text = alloc::format!(
        "{}",
        LayoutError::CapSmallerThanPage {
            pool: 2,
            cap: 1,
            page: 4
        }
    );
    assert!(
        text.contains("pool 2") && text.contains("cap 1 B"),
        "{text}"
    );
}

/// Every preset fits the device it was made for, whatever its alignment:
/// pages count at their size rounded to the alignment (a 2 MiB alignment on
/// a 6 MiB device once gave 8 MiB sliced pages), and a layout that cannot
/// keep its pools on so small a device falls back to exclusive pages.
#[test]
fn presets_fit_their_device_at_every_alignment() {
    for alignment in [256, 4 * KIB, 64 * KIB, 2 * MIB, MAX_ALIGNMENT] {
        for total in [
            alignment,
            alignment + 1,
            3 * alignment,
            6 * MIB,
            7 * MIB + 256,
            16 * MIB,
            100 * MIB,
            1 << 34,
        ] {
            if total < alignment {
                continue;
            }
            for max_page_size in [0, alignment + 1, total / 3, total] {
                let p = DeviceProperties {
                    total_memory: total,
                    max_page_size,
                    alignment,
                    integrated: false,
                };
                for preset in [
                    LayoutPreset::Balanced,
                    LayoutPreset::ExclusivePages,
                    LayoutPreset::Sliced,
                ] {
                    let what = alloc::format!("{preset:?} align {alignment} total {total}");
                    let l = MemoryLayout::try_preset(preset, &p).unwrap();
                    assert_eq!(l.fits(total), Ok(()), "{what}: {:?}", l.pools());
                    assert_eq!(MemoryLayout::preset(preset, &p), l, "{what}");
                }
            }
        }
    }
}

/// A page costs its size rounded up to the alignment: a cap or a device
/// between the two holds no page.
#[test]
fn pages_count_at_their_aligned_size() {
    let pol = MemoryPolicy::default();
    let odd = PoolSpec::sliced(5 * MIB, MIB);
    let l = MemoryLayout::new(&[odd], 2 * MIB, pol).unwrap();
    assert_eq!(l.fits(6 * MIB), Ok(()));
    assert_eq!(
        l.fits(5 * MIB),
        Err(LayoutError::PageLargerThanDevice {
            pool: 0,
            page: 6 * MIB,
            total: 5 * MIB
        })
    );
    assert_eq!(
        MemoryLayout::new(&[odd.with_cap(5 * MIB)], 2 * MIB, pol),
        Err(LayoutError::CapSmallerThanPage {
            pool: 0,
            cap: 5 * MIB,
            page: 6 * MIB
        })
    );
    assert!(MemoryLayout::new(&[odd.with_cap(6 * MIB)], 2 * MIB, pol).is_ok());
}
