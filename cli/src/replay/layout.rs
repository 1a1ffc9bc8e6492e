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
//! a preset.
//!
//! A layout that is valid in itself is then checked against the device it
//! would run on ([`check_device`]): no pool may make pages larger than the
//! device's largest page, and the alignment must fit in one. Otherwise the
//! first allocation in that pool would fail, deep into the replay.

use std::fmt;
use std::num::NonZeroU64;
use std::path::{Path, PathBuf};

use streamcore::memory::{
    HumanBytes, LayoutError, LayoutPreset, MemoryLayout, MemoryPolicy, PoolKind, PoolSpec,
};
use streamcore::platform::DeviceProperties;
use streamcore_mock::replay::json::{self, Value};

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
    /// The file could not be read.
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
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
            LayoutArgError::Read { path, source } => {
                write!(f, "layout file {}: {source}", path.display())
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
pub fn choose(given: &str, props: &DeviceProperties) -> Result<ChosenLayout, LayoutArgError> {
    if let Some(preset) = preset_named(given) {
        return Ok(ChosenLayout {
            name: given.to_owned(),
            layout: MemoryLayout::preset(preset, props),
        });
    }
    let path = Path::new(given);
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(LayoutArgError::Unknown {
                given: given.to_owned(),
            });
        }
        Err(source) => {
            return Err(LayoutArgError::Read {
                path: path.to_path_buf(),
                source,
            });
        }
    };
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
        name: given.to_owned(),
        layout,
    })
}

fn preset_named(name: &str) -> Option<LayoutPreset> {
    PRESETS.iter().find(|(n, _)| *n == name).map(|(_, p)| *p)
}

/// What was wrong with a layout file's text.
#[derive(Debug, PartialEq)]
pub enum FileError {
    /// Not JSON, or a member is missing, unknown or of the wrong type.
    Format {
        /// Where (`pools[1].page_size`).
        at: String,
        /// Why.
        why: String,
    },
    /// The layout was refused.
    Invalid(LayoutError),
}

fn format_err(at: impl Into<String>, why: impl Into<String>) -> FileError {
    FileError::Format {
        at: at.into(),
        why: why.into(),
    }
}

/// Parses a layout file's text.
pub fn parse(text: &str, props: &DeviceProperties) -> Result<MemoryLayout, FileError> {
    let doc = json::parse(text).map_err(|why| format_err("", format!("not JSON: {why}")))?;
    let Value::Object(members) = &doc else {
        return Err(format_err("", "the layout must be a JSON object"));
    };
    for (key, _) in members {
        if !matches!(key.as_str(), "alignment" | "pools" | "preset" | "policy") {
            return Err(format_err(
                "",
                format!("unknown member \"{key}\" (expected alignment, pools, preset, policy)"),
            ));
        }
    }
    let base = match (doc.get("preset"), doc.get("pools")) {
        (Some(_), Some(_)) => {
            return Err(format_err(
                "",
                "give either \"preset\" or \"pools\", not both",
            ));
        }
        (None, None) => return Err(format_err("", "missing \"pools\" (or \"preset\")")),
        (Some(p), None) => {
            let name = p
                .as_str()
                .ok_or_else(|| format_err("preset", "not a string"))?;
            let preset = preset_named(name).ok_or_else(|| {
                format_err(
                    "preset",
                    format!("unknown preset \"{name}\" (balanced, exclusive-pages, sliced)"),
                )
            })?;
            if doc.get("alignment").is_some() {
                return Err(format_err(
                    "alignment",
                    "a preset takes the device's alignment; list \"pools\" to set it",
                ));
            }
            MemoryLayout::preset(preset, props)
        }
        (None, Some(pools)) => {
            let Value::Array(items) = pools else {
                return Err(format_err("pools", "not an array"));
            };
            let mut specs = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                specs.push(pool(item, &format!("pools[{i}]"))?);
            }
            let alignment = match doc.get("alignment") {
                None => props.alignment,
                Some(v) => size(v, "alignment")?,
            };
            if alignment < props.alignment {
                return Err(format_err(
                    "alignment",
                    format!(
                        "{alignment} is below the device's alignment {}",
                        props.alignment
                    ),
                ));
            }
            MemoryLayout::new(&specs, alignment, MemoryPolicy::default())
                .map_err(FileError::Invalid)?
        }
    };
    match doc.get("policy") {
        None => Ok(base),
        Some(p) => {
            let policy = policy(p, *base.policy())?;
            base.with_policy(policy).map_err(FileError::Invalid)
        }
    }
}

fn pool(v: &Value, at: &str) -> Result<PoolSpec, FileError> {
    let Value::Object(members) = v else {
        return Err(format_err(at, "a pool must be a JSON object"));
    };
    for (key, _) in members {
        if !matches!(key.as_str(), "kind" | "page_size" | "max_slice" | "cap") {
            return Err(format_err(
                at,
                format!("unknown member \"{key}\" (expected kind, page_size, max_slice, cap)"),
            ));
        }
    }
    let kind = match v.get("kind").map(Value::as_str) {
        None => return Err(format_err(at, "missing \"kind\"")),
        Some(Some("small")) => PoolKind::Small,
        Some(Some("sliced")) => PoolKind::Sliced,
        Some(Some("exclusive")) => PoolKind::Exclusive,
        Some(Some(other)) => {
            return Err(format_err(
                format!("{at}.kind"),
                format!("unknown kind \"{other}\" (small, sliced, exclusive)"),
            ));
        }
        Some(None) => return Err(format_err(format!("{at}.kind"), "not a string")),
    };
    let max_slice = match v.get("max_slice") {
        Some(s) => size(s, &format!("{at}.max_slice"))?,
        None => return Err(format_err(at, "missing \"max_slice\"")),
    };
    let page_size = match (v.get("page_size"), kind) {
        (Some(s), _) => size(s, &format!("{at}.page_size"))?,
        // An exclusive pool's pages are sized to their requests.
        (None, PoolKind::Exclusive) => max_slice,
        (None, _) => return Err(format_err(at, "missing \"page_size\"")),
    };
    let cap = match v.get("cap") {
        None | Some(Value::Null) => None,
        Some(c) => Some(size(c, &format!("{at}.cap"))?),
    };
    Ok(PoolSpec {
        kind,
        page_size,
        max_slice,
        cap,
    })
}

fn policy(v: &Value, mut policy: MemoryPolicy) -> Result<MemoryPolicy, FileError> {
    let Value::Object(members) = v else {
        return Err(format_err("policy", "not a JSON object"));
    };
    for (key, value) in members {
        let at = format!("policy.{key}");
        match key.as_str() {
            "trim_before_grow" => policy.trim_before_grow = boolean(value, &at)?,
            "force_persistent" => policy.force_persistent = boolean(value, &at)?,
            "release_idle_after" => {
                policy.release_idle_after = match value {
                    Value::Null | Value::UInt(0) => None,
                    _ => NonZeroU64::new(integer(value, &at)?),
                }
            }
            "fit_slack_shift" => {
                let shift = integer(value, &at)?;
                if shift > 64 {
                    return Err(format_err(at, "above 64 (64 means exact fits only)"));
                }
                policy.fit_slack_shift = shift as u32;
            }
            "max_pages" => {
                let pages = integer(value, &at)?;
                // Out-of-range budgets are the layout's own error.
                policy.max_pages = u32::try_from(pages).unwrap_or(u32::MAX);
            }
            other => {
                return Err(format_err(
                    "policy",
                    format!(
                        "unknown member \"{other}\" (expected trim_before_grow, \
                         release_idle_after, fit_slack_shift, force_persistent, max_pages)"
                    ),
                ));
            }
        }
    }
    Ok(policy)
}

fn boolean(v: &Value, at: &str) -> Result<bool, FileError> {
    match v {
        Value::Bool(b) => Ok(*b),
        _ => Err(format_err(at, "not true or false")),
    }
}

fn integer(v: &Value, at: &str) -> Result<u64, FileError> {
    match v {
        Value::UInt(n) => Ok(*n),
        Value::Number(x) => Err(format_err(at, number_why(*x))),
        _ => Err(format_err(at, "not a non-negative integer")),
    }
}

/// Why a JSON number that is not a `u64` is refused: what is wrong with it.
fn number_why(x: f64) -> String {
    if x < 0.0 {
        format!("{x} is negative")
    } else if x.fract() != 0.0 {
        format!("{x} is not a whole number")
    } else {
        format!("{x} is above the largest value, 2^64 - 1")
    }
}

/// A byte size: an integer, or a string such as `"4 MiB"` (B, KiB, MiB,
/// GiB, TiB; binary units).
fn size(v: &Value, at: &str) -> Result<u64, FileError> {
    match v {
        Value::UInt(n) => Ok(*n),
        Value::Number(x) => Err(format_err(at, number_why(*x))),
        Value::Str(s) => parse_size(s).map_err(|e| {
            format_err(
                at,
                match e {
                    SizeError::Syntax => format!(
                        "\"{s}\" is not a size (bytes, or a whole number with B, KiB, MiB, GiB, TiB)"
                    ),
                    SizeError::Overflow => {
                        format!("\"{s}\" is above the largest size, 2^64 - 1 bytes")
                    }
                },
            )
        }),
        _ => Err(format_err(
            at,
            "not a size (an integer or a string like \"4 MiB\")",
        )),
    }
}

/// Why a size string was refused.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum SizeError {
    /// Not digits and a unit.
    Syntax,
    /// More bytes than a `u64` holds.
    Overflow,
}

fn parse_size(s: &str) -> Result<u64, SizeError> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(split);
    if digits.is_empty() {
        return Err(SizeError::Syntax);
    }
    let shift = match unit.trim() {
        "" | "B" => 0,
        "KiB" => 10,
        "MiB" => 20,
        "GiB" => 30,
        "TiB" => 40,
        _ => return Err(SizeError::Syntax),
    };
    // Only digits are left: a parse error is an overflow.
    let n: u64 = digits.parse().map_err(|_| SizeError::Overflow)?;
    n.checked_mul(1u64 << shift).ok_or(SizeError::Overflow)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props() -> DeviceProperties {
        DeviceProperties {
            total_memory: 141_000_000_000,
            max_page_size: 141_000_000_000 / 4,
            alignment: 256,
            integrated: false,
        }
    }

    #[test]
    fn a_full_file_becomes_that_layout() {
        let l = parse(
            r#"{
              "alignment": 512,
              "pools": [
                {"kind": "small", "page_size": "1 MiB", "max_slice": 1024},
                {"kind": "sliced", "page_size": "4MiB", "max_slice": "256 KiB", "cap": "2 GiB"},
                {"kind": "exclusive", "max_slice": "32 GiB"}
              ],
              "policy": {"trim_before_grow": false, "release_idle_after": 100,
                         "fit_slack_shift": 3, "max_pages": 4096}
            }"#,
            &props(),
        )
        .unwrap();
        assert_eq!(l.alignment(), 512);
        assert_eq!(
            l.pools(),
            &[
                PoolSpec::small(1 << 20, 1024),
                PoolSpec::sliced(4 << 20, 256 << 10).with_cap(2 << 30),
                PoolSpec::exclusive(32 << 30),
            ]
        );
        let p = l.policy();
        assert!(!p.trim_before_grow);
        assert_eq!(p.release_idle_after, NonZeroU64::new(100));
        assert_eq!((p.fit_slack_shift, p.max_pages), (3, 4096));
    }

    #[test]
    fn a_preset_with_a_policy() {
        let l = parse(
            r#"{"preset": "sliced", "policy": {"release_idle_after": 50}}"#,
            &props(),
        )
        .unwrap();
        let base = MemoryLayout::preset(LayoutPreset::Sliced, &props());
        assert_eq!(l.pools(), base.pools());
        assert_eq!(l.policy().release_idle_after, NonZeroU64::new(50));
    }

    #[test]
    fn invalid_layouts_carry_the_layout_error() {
        let e = parse(
            r#"{"pools": [{"kind": "sliced", "page_size": 1024, "max_slice": 4096}]}"#,
            &props(),
        )
        .unwrap_err();
        assert_eq!(
            e,
            FileError::Invalid(LayoutError::SliceLargerThanPage {
                pool: 0,
                slice: 4096,
                page: 1024
            })
        );
        let e = parse(
            r#"{"pools": [{"kind": "exclusive", "max_slice": 4096}], "alignment": 768}"#,
            &props(),
        )
        .unwrap_err();
        assert_eq!(
            e,
            FileError::Invalid(LayoutError::BadAlignment { alignment: 768 })
        );
        let e = parse(
            r#"{"preset": "balanced", "policy": {"max_pages": 0}}"#,
            &props(),
        )
        .unwrap_err();
        assert!(
            matches!(e, FileError::Invalid(LayoutError::TooManyPages { .. })),
            "{e:?}"
        );
    }

    #[test]
    fn format_errors_say_where() {
        let cases = [
            ("[1, 2]", "", "JSON object"),
            ("{", "", "not JSON"),
            (r#"{"pool": []}"#, "", "unknown member \"pool\""),
            (r#"{"pools": 3}"#, "pools", "not an array"),
            (
                r#"{"pools": [{"kind": "huge", "max_slice": 1}]}"#,
                "pools[0].kind",
                "unknown kind",
            ),
            (
                r#"{"pools": [{"kind": "sliced", "max_slice": 1}]}"#,
                "pools[0]",
                "missing \"page_size\"",
            ),
            (
                r#"{"pools": [{"kind": "sliced", "page_size": "4 MB", "max_slice": 1}]}"#,
                "pools[0].page_size",
                "not a size",
            ),
            (
                r#"{"preset": "balanced", "policy": {"fit_slack_shift": 65}}"#,
                "policy.fit_slack_shift",
                "above 64",
            ),
            (
                r#"{"preset": "balanced", "policy": {"trim": true}}"#,
                "policy",
                "unknown member",
            ),
            (r#"{"preset": "tiny"}"#, "preset", "unknown preset"),
            (
                r#"{"pools": [{"kind": "exclusive", "max_slice": 18446744073709551616}]}"#,
                "pools[0].max_slice",
                "above the largest value, 2^64 - 1",
            ),
            (
                r#"{"pools": [{"kind": "exclusive", "max_slice": "20000000 TiB"}]}"#,
                "pools[0].max_slice",
                "above the largest size",
            ),
            (
                r#"{"pools": [{"kind": "exclusive", "max_slice": -4096}]}"#,
                "pools[0].max_slice",
                "is negative",
            ),
            (
                r#"{"pools": [{"kind": "exclusive", "max_slice": 4096.5}]}"#,
                "pools[0].max_slice",
                "not a whole number",
            ),
            (
                r#"{"preset": "balanced", "policy": {"max_pages": 1e30}}"#,
                "policy.max_pages",
                "above the largest value",
            ),
            (
                r#"{"alignment": 128, "pools": [{"kind": "exclusive", "max_slice": 4096}]}"#,
                "alignment",
                "below the device's alignment 256",
            ),
        ];
        for (text, at_want, why_want) in cases {
            match parse(text, &props()) {
                Err(FileError::Format { at, why }) => {
                    assert_eq!(at, at_want, "{text}");
                    assert!(why.contains(why_want), "{text}: {why}");
                }
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn sizes_take_binary_units_and_refuse_overflow() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("3 KiB"), Ok(3 << 10));
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert_eq!(parse_size("1 TiB"), Ok(1 << 40));
        assert_eq!(parse_size("20000000 TiB"), Err(SizeError::Overflow));
        assert_eq!(parse_size("18446744073709551616"), Err(SizeError::Overflow));
        assert_eq!(parse_size("MiB"), Err(SizeError::Syntax));
        assert_eq!(parse_size("1.5 GiB"), Err(SizeError::Syntax));
        assert_eq!(parse_size("4 MB"), Err(SizeError::Syntax));
    }

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
}
