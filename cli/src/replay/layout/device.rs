//! A layout checked against the device it would run on.

use std::fmt;

use streamcore::memory::{HumanBytes, MemoryLayout, PoolKind};
use streamcore::platform::DeviceProperties;

/// A layout that does not fit the device it would run on.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DeviceMismatch {
    /// A pool makes pages larger than the device's largest page (sliced and
    /// small pools: every page; exclusive pools: their largest).
    PageTooLarge {
        /// The pool's index in the layout.
        pool: usize,
        /// Its kind.
        kind: PoolKind,
        /// Its (largest) page.
        page: u64,
        /// The device's largest page.
        max_page: u64,
    },
    /// The alignment is larger than the device's largest page.
    AlignmentTooLarge {
        /// The layout's alignment.
        alignment: u64,
        /// The device's largest page.
        max_page: u64,
    },
}

impl fmt::Display for DeviceMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            DeviceMismatch::PageTooLarge {
                pool,
                kind,
                page,
                max_page,
            } => {
                let what = match kind {
                    PoolKind::Exclusive => "largest page",
                    _ => "page size",
                };
                write!(
                    f,
                    "pool {pool} ({kind}): {what} {} ({page} B) is larger than the device's \
                     largest page, {} ({max_page} B)",
                    HumanBytes(page),
                    HumanBytes(max_page)
                )
            }
            DeviceMismatch::AlignmentTooLarge {
                alignment,
                max_page,
            } => write!(
                f,
                "alignment {} ({alignment} B) is larger than the device's largest page, {} \
                 ({max_page} B)",
                HumanBytes(alignment),
                HumanBytes(max_page)
            ),
        }
    }
}

impl std::error::Error for DeviceMismatch {}

/// Checks `layout` against the device: every pool's pages and the
/// alignment within the device's largest page. The first mismatch, in the
/// layout's order (the alignment first).
pub fn check_device(layout: &MemoryLayout, props: &DeviceProperties) -> Result<(), DeviceMismatch> {
    let max_page = props.max_page_size;
    if layout.alignment() > max_page {
        return Err(DeviceMismatch::AlignmentTooLarge {
            alignment: layout.alignment(),
            max_page,
        });
    }
    for (pool, spec) in layout.pools().iter().enumerate() {
        if spec.page_size > max_page {
            return Err(DeviceMismatch::PageTooLarge {
                pool,
                kind: spec.kind,
                page: spec.page_size,
                max_page,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use streamcore::memory::{MemoryPolicy, PoolSpec};

    use super::super::{FileError, PRESETS, parse, props};
    use super::*;

    #[test]
    fn layouts_are_checked_against_the_device() {
        let device = props();
        for (_, preset) in PRESETS {
            check_device(&MemoryLayout::preset(preset, &device), &device).unwrap();
        }
        let fits = MemoryLayout::new(
            &[PoolSpec::exclusive(device.max_page_size)],
            256,
            MemoryPolicy::default(),
        )
        .unwrap();
        assert_eq!(check_device(&fits, &device), Ok(()));
        // The bad layouts of the memory issue: each refused before any
        // event, naming the pool (or the alignment) and both sizes.
        let cases = [
            (
                r#"{"pools": [{"kind": "sliced", "page_size": 18446744073709551615, "max_slice": "1 MiB"}]}"#,
                DeviceMismatch::PageTooLarge {
                    pool: 0,
                    kind: PoolKind::Sliced,
                    page: u64::MAX,
                    max_page: device.max_page_size,
                },
            ),
            (
                r#"{"alignment": 9223372036854775808, "pools": [{"kind": "exclusive", "max_slice": "1 GiB"}]}"#,
                DeviceMismatch::AlignmentTooLarge {
                    alignment: 1 << 63,
                    max_page: device.max_page_size,
                },
            ),
            (
                r#"{"pools": [{"kind": "small", "page_size": "1 MiB", "max_slice": "1 KiB"},
                              {"kind": "sliced", "page_size": "1 TiB", "max_slice": "1 MiB"}]}"#,
                DeviceMismatch::PageTooLarge {
                    pool: 1,
                    kind: PoolKind::Sliced,
                    page: 1 << 40,
                    max_page: device.max_page_size,
                },
            ),
            (
                r#"{"pools": [{"kind": "exclusive", "max_slice": "200 TiB"}]}"#,
                DeviceMismatch::PageTooLarge {
                    pool: 0,
                    kind: PoolKind::Exclusive,
                    page: 200 << 40,
                    max_page: device.max_page_size,
                },
            ),
        ];
        for (text, want) in cases {
            // The layout is valid in itself (or refused by its own rules);
            // when it is built, the device refuses it.
            match parse(text, &device) {
                Ok(layout) => {
                    assert_eq!(check_device(&layout, &device), Err(want), "{text}");
                    let line = want.to_string();
                    assert!(
                        line.contains("larger than the device's largest page")
                            && !line.contains('\n'),
                        "{line}"
                    );
                }
                // Refused by the layout's own rules first: also before any
                // event (the process test checks the line).
                Err(FileError::Invalid(_)) => {}
                Err(e) => panic!("{text}: {e:?}"),
            }
        }
    }
}
