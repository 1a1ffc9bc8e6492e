//! `--layout`: a preset name or a layout file (JSON), validated into a
//! [`MemoryLayout`].
//!
//! The file format (every member but `pools` / `preset` optional):
//!
//! ```json
//! {
//!   "alignment": 256,
//!   "pools": [
//!     {"kind": "small",     "page_size": "1 MiB", "max_slice": "1 KiB"},
//!     {"kind": "sliced",    "page_size": "4 MiB", "max_slice": "256 KiB", "cap": "2 GiB"},
//!     {"kind": "exclusive", "max_slice": "32 GiB"}
//!   ],
//!   "policy": {"trim_before_grow": true, "release_idle_after": 10000,
//!              "fit_slack_shift": 5, "max_pages": 1048576}
//! }
//! ```
//!
//! or `{"preset": "balanced", "policy": {...}}` to change only the policy of
//! a preset. The policy may name every [`MemoryPolicy`](streamcore::memory::MemoryPolicy)
//! setting and a `favour` to start from (`policy.rs`).
//!
//! A layout that is valid in itself is then checked against the device it
//! would run on ([`check_device`]): no pool may make pages larger than the
//! device's largest page, and the alignment must fit in one. Otherwise the
//! first allocation in that pool would fail, deep into the replay.

mod device;
mod file;
mod policy;
mod values;

use std::ffi::OsStr;
use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use streamcore::memory::{LayoutError, LayoutPreset, MemoryLayout};
use streamcore::platform::DeviceProperties;

pub use device::{DeviceMismatch, check_device};
pub use file::{FileError, parse};

/// The presets `--layout` knows, by name.
pub const PRESETS: [(&str, LayoutPreset); 3] = [
    ("balanced", LayoutPreset::Balanced),
    ("exclusive-pages", LayoutPreset::ExclusivePages),
    ("sliced", LayoutPreset::Sliced),
];

/// A layout and the name it is reported under.
#[derive(Clone, Debug)]
pub struct ChosenLayout {
    /// The preset's name or the file's path.
    pub name: String,
    /// The validated layout.
    pub layout: MemoryLayout,
}

/// Why `--layout` was refused.
#[derive(Debug)]
pub enum LayoutArgError {
    /// Neither a preset nor an existing file.
    Unknown {
        /// What was given.
        given: String,
    },
    /// The file could not be read, or is not a layout file's text (not
    /// UTF-8, or larger than [`MAX_LAYOUT_FILE_BYTES`]).
    Read {
        /// The file.
        path: PathBuf,
        /// Why, in a few words.
        why: String,
    },
    /// The file is not JSON, or a member is wrong.
    Format {
        /// The file.
        path: PathBuf,
        /// Where in the document (`pools[1].page_size`), empty for the top.
        at: String,
        /// Why.
        why: String,
    },
    /// The layout itself was refused.
    Invalid {
        /// The file.
        path: PathBuf,
        /// The layout's own error.
        error: LayoutError,
    },
    /// The layout does not fit the device.
    Device {
        /// The file.
        path: PathBuf,
        /// What does not fit.
        mismatch: DeviceMismatch,
    },
}

impl fmt::Display for LayoutArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LayoutArgError::Unknown { given } => {
                write!(f, "--layout {given}: no such preset or file (presets: ")?;
                for (i, (name, _)) in PRESETS.iter().enumerate() {
                    let sep = if i == 0 { "" } else { ", " };
                    write!(f, "{sep}{name}")?;
                }
                write!(f, ")")
            }
            LayoutArgError::Read { path, why } => {
                write!(f, "layout file {}: {why}", path.display())
            }
            LayoutArgError::Format { path, at, why } if at.is_empty() => {
                write!(f, "layout file {}: {why}", path.display())
            }
            LayoutArgError::Format { path, at, why } => {
                write!(f, "layout file {}: {at}: {why}", path.display())
            }
            LayoutArgError::Invalid { path, error } => {
                write!(f, "layout file {}: {error}", path.display())
            }
            LayoutArgError::Device { path, mismatch } => {
                write!(f, "layout file {}: {mismatch}", path.display())
            }
        }
    }
}

impl std::error::Error for LayoutArgError {}

/// Resolves `--layout`: a preset name first, else a file.
/// A file's path need not be UTF-8: it is shown with its unreadable bytes
/// replaced.
pub fn choose(
    given: impl AsRef<OsStr>,
    props: &DeviceProperties,
) -> Result<ChosenLayout, LayoutArgError> {
    let given = given.as_ref();
    if let Some(preset) = given.to_str().and_then(preset_named) {
        return Ok(ChosenLayout {
            name: given.to_string_lossy().into_owned(),
            layout: MemoryLayout::preset(preset, props),
        });
    }
    let path = Path::new(given);
    let text = read_layout_file(path).map_err(|e| match e {
        None => LayoutArgError::Unknown {
            given: given.to_string_lossy().into_owned(),
        },
        Some(why) => LayoutArgError::Read {
            path: path.to_path_buf(),
            why,
        },
    })?;
    let layout = parse(&text, props).map_err(|e| match e {
        FileError::Format { at, why } => LayoutArgError::Format {
            path: path.to_path_buf(),
            at,
            why,
        },
        FileError::Invalid(error) => LayoutArgError::Invalid {
            path: path.to_path_buf(),
            error,
        },
    })?;
    check_device(&layout, props).map_err(|mismatch| LayoutArgError::Device {
        path: path.to_path_buf(),
        mismatch,
    })?;
    Ok(ChosenLayout {
        name: given.to_string_lossy().into_owned(),
        layout,
    })
}

/// Checks `--layout` as far as it can be before the device is there (the
/// HIP runtime loaded): a preset name, or a file that can be read, parsed
/// and accepted by the layout's own rules, on a device of this `alignment`
/// (a constant of the platform). Only whether it fits the device's memory
/// ([`check_device`]) is left to [`choose`], with the device's properties.
///
/// The layout's rules do not depend on the device's memory: a preset is
/// valid on any device, a file's pools only depend on the alignment. So
/// what this refuses, [`choose`] would refuse too, and what it accepts only
/// the device check can still refuse.
pub fn check_without_device(
    given: impl AsRef<OsStr>,
    alignment: u64,
) -> Result<(), LayoutArgError> {
    // Memory unknown (0: no limit) and pages as large as layouts allow.
    let any_size = DeviceProperties {
        total_memory: 0,
        max_page_size: u64::MAX,
        alignment,
        integrated: false,
    };
    match choose(given, &any_size) {
        Ok(_) | Err(LayoutArgError::Device { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// The most bytes a layout file may hold. A layout is a few hundred bytes:
/// a larger file is not one, and an endless one (`/dev/zero`, a FIFO that
/// never ends) is refused once this much was read, not read into memory
/// whole.
pub const MAX_LAYOUT_FILE_BYTES: u64 = 1 << 20;

/// The text of the layout file `path`: `Err(None)` when there is no such
/// file (the name may be a misspelt preset), else `Err(Some(why))` when it
/// cannot be read as a layout file's text.
fn read_layout_file(path: &Path) -> Result<String, Option<String>> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(None),
        Err(e) => return Err(Some(e.to_string())),
    };
    if file.metadata().is_ok_and(|m| m.is_dir()) {
        return Err(Some("this is a folder, not a layout file".into()));
    }
    let mut bytes = Vec::new();
    file.take(MAX_LAYOUT_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Some(e.to_string()))?;
    if bytes.len() as u64 > MAX_LAYOUT_FILE_BYTES {
        return Err(Some(format!(
            "longer than {MAX_LAYOUT_FILE_BYTES} bytes: not a layout file (a layout is a \
             JSON object of a few hundred bytes)"
        )));
    }
    String::from_utf8(bytes).map_err(|e| {
        Some(format!(
            "not UTF-8 text (byte {} is not): not a layout file",
            e.utf8_error().valid_up_to()
        ))
    })
}

fn preset_named(name: &str) -> Option<LayoutPreset> {
    PRESETS.iter().find(|(n, _)| *n == name).map(|(_, p)| *p)
}

/// Asserts that each layout file text is refused with a format error at
/// `at` whose reason contains `why`.
#[cfg(test)]
fn assert_format_errors<T: AsRef<str>, A: AsRef<str>>(cases: &[(T, A, &str)]) {
    for (text, at_want, why_want) in cases {
        let text = text.as_ref();
        match file::parse(text, &props()) {
            Err(file::FileError::Format { at, why }) => {
                assert_eq!(at, at_want.as_ref(), "{text}");
                assert!(why.contains(why_want), "{text}: {why}");
            }
            other => panic!("{text}: {other:?}"),
        }
    }
}

/// The device of the layout tests: an H200's memory, a quarter of it per
/// page.
#[cfg(test)]
fn props() -> DeviceProperties {
    streamcore_mock::replay::H200_PROPERTIES
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_and_unknown_names() {
        for (name, preset) in PRESETS {
            let c = choose(name, &props()).unwrap();
            assert_eq!(c.layout, MemoryLayout::preset(preset, &props()));
        }
        let e = choose("no-such-layout", &props()).unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("no such preset or file") && text.contains("exclusive-pages"),
            "{text}"
        );
    }

    /// Before the device is there: the name, the file and the layout's own
    /// rules are checked; only the device's memory is not.
    #[test]
    fn checks_without_the_device() {
        let alignment = props().alignment;
        for (name, _) in PRESETS {
            check_without_device(name, alignment).unwrap();
        }
        let e = check_without_device("no-such-layout", alignment).unwrap_err();
        assert!(matches!(e, LayoutArgError::Unknown { .. }), "{e}");

        let dir =
            std::env::temp_dir().join(format!("streamcore-cli-layout-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("layout.json");
        let given = file.to_str().unwrap();
        let check = |text: &str| {
            std::fs::write(&file, text).unwrap();
            check_without_device(given, alignment)
        };
        assert!(matches!(check("{"), Err(LayoutArgError::Format { .. })));
        assert!(matches!(
            check(r#"{"pools": [{"kind": "sliced", "page_size": "1 KiB", "max_slice": "1 MiB"}]}"#),
            Err(LayoutArgError::Invalid { .. })
        ));
        assert!(matches!(
            check(r#"{"preset": "sliced", "policy": {"max_pages": 0}}"#),
            Err(LayoutArgError::Invalid { .. })
        ));
        // Too large for the H200 of the mock replay, fine before the device
        // is known: `choose` refuses it with the device's properties.
        let huge = r#"{"pools": [{"kind": "sliced", "page_size": "1 TiB", "max_slice": "1 MiB"}]}"#;
        check(huge).unwrap();
        assert!(matches!(
            choose(given, &props()),
            Err(LayoutArgError::Device { .. })
        ));
        check(r#"{"preset": "balanced", "policy": {"favour": "bytes"}}"#).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }
}
