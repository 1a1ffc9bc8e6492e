//! A layout file's text, parsed into a [`MemoryLayout`].

use streamcore::memory::{LayoutError, MemoryLayout, MemoryPolicy, PoolKind, PoolSpec};
use streamcore::platform::DeviceProperties;
use streamcore_mock::replay::json::{self, Value};

use super::preset_named;
use super::values::size;

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

pub(super) fn format_err(at: impl Into<String>, why: impl Into<String>) -> FileError {
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
            let policy = super::policy::parse(p, *base.policy())?;
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

#[cfg(test)]
mod tests {
    use std::num::NonZeroU64;

    use streamcore::memory::LayoutPreset;

    use super::super::props;
    use super::*;

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
                "above the largest integer, 2^64 - 1",
            ),
            (
                r#"{"pools": [{"kind": "exclusive", "max_slice": "20000000 TiB"}]}"#,
                "pools[0].max_slice",
                "above the largest size",
            ),
            (
                r#"{"pools": [{"kind": "exclusive", "max_slice": -4096}]}"#,
                "pools[0].max_slice",
                "is a negative number",
            ),
            (
                r#"{"pools": [{"kind": "exclusive", "max_slice": 4096.5}]}"#,
                "pools[0].max_slice",
                "not a whole number",
            ),
            (
                r#"{"preset": "balanced", "policy": {"max_pages": 1e30}}"#,
                "policy.max_pages",
                "above the largest integer",
            ),
            (
                r#"{"preset": "balanced", "policy": {"max_pages": 1e3}}"#,
                "policy.max_pages",
                "1000 is written with a decimal point or an exponent",
            ),
            (
                r#"{"pools": [{"kind": "exclusive", "max_slice": -0}]}"#,
                "pools[0].max_slice",
                "-0 is written with a minus sign",
            ),
            (
                r#"{"alignment": 128, "pools": [{"kind": "exclusive", "max_slice": 4096}]}"#,
                "alignment",
                "below the device's alignment 256",
            ),
        ];
        super::super::assert_format_errors(&cases);
    }
}
