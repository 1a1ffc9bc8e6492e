//! A layout file's `policy` member: every [`MemoryPolicy`] setting, and a
//! `favour` to start from.
//!
//! ```json
//! "policy": {"favour": "bytes", "commit_step_shift": 6,
//!            "strand_guard": "adaptive",
//!            "churn_budget": {"per_reserve_ns": 500, "per_mib_ns": 150}}
//! ```
//!
//! `favour` (`balanced`, `bytes`, `time`: [`MemoryPolicy::favouring`]) is
//! applied first, whatever its place; the other members then change the
//! setting they name. Members left out keep the layout's own policy (the
//! preset's, or the default).

use std::num::NonZeroU64;

use streamcore::memory::{ChurnBudget, Favour, MAX_PAGES, MemoryPolicy, StrandGuard};
use streamcore_mock::replay::json::Value;

use super::file::{FileError, format_err};
use super::values::{boolean, integer};

/// The members a policy may have, for the error that names an unknown one.
const MEMBERS: &str = "favour, trim_before_grow, trim_headroom_shift, release_idle_after, \
     fit_slack_shift, page_rounding_shift, force_persistent, commit_step_shift, \
     split_boundaries, commit_piece_granules, large_page_granules, strand_guard, \
     aligned_page_granules, shed_partial_granules, share_large_reservations, \
     keep_bare_reservations, large_page_space, small_page_lane, round_trip_window, churn_budget, \
     idle_cap_shift, max_pages";

/// `policy` parsed over `base` (the layout's own policy).
pub(super) fn parse(v: &Value, base: MemoryPolicy) -> Result<MemoryPolicy, FileError> {
    let Value::Object(members) = v else {
        return Err(format_err("policy", "not a JSON object"));
    };
    let mut policy = match v.get("favour") {
        None => base,
        Some(f) => MemoryPolicy::favouring(one_of(f, "policy.favour", &FAVOURS)?),
    };
    for (key, value) in members {
        let at = format!("policy.{key}");
        match key.as_str() {
            "favour" => {}
            "trim_before_grow" => policy.trim_before_grow = boolean(value, &at)?,
            "force_persistent" => policy.force_persistent = boolean(value, &at)?,
            "split_boundaries" => policy.split_boundaries = boolean(value, &at)?,
            "release_idle_after" => {
                policy.release_idle_after = match value {
                    Value::Null | Value::UInt(0) => None,
                    _ => NonZeroU64::new(integer(value, &at)?),
                }
            }
            "fit_slack_shift" => {
                policy.fit_slack_shift = shift(value, &at, "exact fits only")?;
            }
            "trim_headroom_shift" => {
                policy.trim_headroom_shift = shift(value, &at, "no headroom")?;
            }
            "page_rounding_shift" => {
                policy.page_rounding_shift = shift(value, &at, "exact sizes")?;
            }
            "commit_step_shift" => {
                policy.commit_step_shift = shift(value, &at, "no reaching ahead")?;
            }
            "commit_piece_granules" => {
                policy.commit_piece_granules = granules(value, &at, 0)?;
            }
            "large_page_granules" => policy.large_page_granules = granules(value, &at, 1)?,
            "strand_guard" => policy.strand_guard = one_of(value, &at, &STRAND_GUARDS)?,
            "aligned_page_granules" => {
                policy.aligned_page_granules = granules(value, &at, 0)?;
            }
            "shed_partial_granules" => {
                policy.shed_partial_granules = granules(value, &at, 0)?;
            }
            "share_large_reservations" => {
                policy.share_large_reservations = boolean(value, &at)?;
            }
            "keep_bare_reservations" => {
                policy.keep_bare_reservations = boolean(value, &at)?;
            }
            "large_page_space" => policy.large_page_space = boolean(value, &at)?,
            "small_page_lane" => policy.small_page_lane = boolean(value, &at)?,
            "round_trip_window" => policy.round_trip_window = reserves(value, &at)?,
            "churn_budget" => {
                policy.churn_budget = churn_budget(value, &at, policy.churn_budget)?;
            }
            "idle_cap_shift" => policy.idle_cap_shift = shift(value, &at, "no cap")?,
            "max_pages" => policy.max_pages = max_pages(value, &at)?,
            other => {
                return Err(format_err(
                    "policy",
                    format!("unknown member \"{other}\" (expected {MEMBERS})"),
                ));
            }
        }
    }
    Ok(policy)
}

/// A shift of `0..=64` (64: `at_64`).
fn shift(v: &Value, at: &str, at_64: &str) -> Result<u32, FileError> {
    let s = integer(v, at)?;
    if s > 64 {
        return Err(format_err(
            at,
            format!("{s} is above 64 (64 means {at_64})"),
        ));
    }
    Ok(s as u32)
}

/// A page budget. One that fits a `u32` is checked by the layout's own
/// rules (`1..=MAX_PAGES`); a larger one is refused here with the number
/// as given (not as a `u32` would hold it).
fn max_pages(v: &Value, at: &str) -> Result<u32, FileError> {
    let pages = integer(v, at)?;
    u32::try_from(pages).map_err(|_| format_err(at, format!("{pages} is outside 1..={MAX_PAGES}")))
}

/// A count of granules in `min..=u32::MAX`.
fn granules(v: &Value, at: &str, min: u32) -> Result<u32, FileError> {
    count(v, at, min, "")
}

/// A count of reserves in `0..=u32::MAX` (0: off).
fn reserves(v: &Value, at: &str) -> Result<u32, FileError> {
    count(v, at, 0, " (0: off)")
}

/// An integer in `min..=u32::MAX`; refused with the range and `note`.
fn count(v: &Value, at: &str, min: u32, note: &str) -> Result<u32, FileError> {
    let n = integer(v, at)?;
    match u32::try_from(n) {
        Ok(c) if c >= min => Ok(c),
        _ => Err(format_err(
            at,
            format!("{n} is not in {min}..=4294967295{note}"),
        )),
    }
}

/// The value of the names in `choices` that `v` is.
fn one_of<T: Copy>(v: &Value, at: &str, choices: &[(&str, T)]) -> Result<T, FileError> {
    if let Some(&(_, t)) = choices.iter().find(|(n, _)| Some(*n) == v.as_str()) {
        return Ok(t);
    }
    let names: Vec<String> = choices.iter().map(|(n, _)| format!("\"{n}\"")).collect();
    let (last, rest) = names
        .split_last()
        .map_or(("", &[][..]), |(l, r)| (l.as_str(), r));
    Err(format_err(at, format!("not {} or {last}", rest.join(", "))))
}

const FAVOURS: [(&str, Favour); 3] = [
    ("balanced", Favour::Balanced),
    ("bytes", Favour::Bytes),
    ("time", Favour::Time),
];

const STRAND_GUARDS: [(&str, StrandGuard); 3] = [
    ("off", StrandGuard::Off),
    ("adaptive", StrandGuard::Adaptive),
    ("on", StrandGuard::On),
];

/// `"unlimited"`, or an object with either part (the other kept).
fn churn_budget(v: &Value, at: &str, mut budget: ChurnBudget) -> Result<ChurnBudget, FileError> {
    match v {
        Value::Str(s) if s == "unlimited" => return Ok(ChurnBudget::UNLIMITED),
        Value::Object(members) => {
            for (key, value) in members {
                let at = format!("{at}.{key}");
                match key.as_str() {
                    "per_reserve_ns" => budget.per_reserve_ns = integer(value, &at)?,
                    "per_mib_ns" => budget.per_mib_ns = integer(value, &at)?,
                    other => {
                        return Err(format_err(
                            at,
                            format!(
                                "unknown member \"{other}\" (expected per_reserve_ns, per_mib_ns)"
                            ),
                        ));
                    }
                }
            }
        }
        _ => {
            return Err(format_err(
                at,
                "not \"unlimited\" or an object {\"per_reserve_ns\": N, \"per_mib_ns\": N}",
            ));
        }
    }
    Ok(budget)
}

#[cfg(test)]
mod tests {
    use streamcore::memory::{LayoutPreset, MemoryLayout};

    use super::super::file::parse as parse_file;
    use super::super::props;
    use super::*;

    /// A layout file giving `policy` to the balanced preset.
    fn file_with(policy: &str) -> String {
        format!(r#"{{"preset": "balanced", "policy": {policy}}}"#)
    }

    fn policy_of(policy: &str) -> Result<MemoryPolicy, FileError> {
        parse_file(&file_with(policy), &props()).map(|l| *l.policy())
    }

    fn balanced() -> MemoryPolicy {
        *MemoryLayout::preset(LayoutPreset::Balanced, &props()).policy()
    }

    #[test]
    fn every_setting_can_be_named() {
        let p = policy_of(
            r#"{"trim_headroom_shift": 10, "page_rounding_shift": 64,
                "commit_step_shift": 5, "split_boundaries": true,
                "commit_piece_granules": 4, "large_page_granules": 128, "strand_guard": "off",
                "aligned_page_granules": 2, "shed_partial_granules": 32,
                "share_large_reservations": false, "keep_bare_reservations": false,
                "large_page_space": false, "small_page_lane": true,
                "round_trip_window": 16,
                "churn_budget": {"per_reserve_ns": 0, "per_mib_ns": 300},
                "idle_cap_shift": 3}"#,
        )
        .unwrap();
        let want = MemoryPolicy {
            trim_headroom_shift: 10,
            page_rounding_shift: 64,
            commit_step_shift: 5,
            split_boundaries: true,
            commit_piece_granules: 4,
            large_page_granules: 128,
            strand_guard: StrandGuard::Off,
            aligned_page_granules: 2,
            shed_partial_granules: 32,
            share_large_reservations: false,
            keep_bare_reservations: false,
            large_page_space: false,
            small_page_lane: true,
            round_trip_window: 16,
            churn_budget: ChurnBudget {
                per_reserve_ns: 0,
                per_mib_ns: 300,
            },
            idle_cap_shift: 3,
            ..balanced()
        };
        assert_eq!(p, want);
    }

    #[test]
    fn favour_is_the_base_wherever_it_stands() {
        let bytes = MemoryPolicy::favouring(Favour::Bytes);
        assert_eq!(policy_of(r#"{"favour": "bytes"}"#).unwrap(), bytes);
        // Named after the setting it would otherwise reset: the setting
        // still wins.
        let p = policy_of(r#"{"commit_step_shift": 6, "favour": "bytes"}"#).unwrap();
        assert_eq!(
            p,
            MemoryPolicy {
                commit_step_shift: 6,
                ..bytes
            }
        );
        let time = policy_of(r#"{"favour": "time"}"#).unwrap();
        assert_eq!(time, MemoryPolicy::favouring(Favour::Time));
    }

    #[test]
    fn a_budget_part_left_out_is_kept_and_unlimited_never_binds() {
        let p = policy_of(r#"{"churn_budget": {"per_mib_ns": 9}}"#).unwrap();
        assert_eq!(p.churn_budget.per_mib_ns, 9);
        assert_eq!(
            p.churn_budget.per_reserve_ns,
            balanced().churn_budget.per_reserve_ns
        );
        let p = policy_of(r#"{"churn_budget": "unlimited"}"#).unwrap();
        assert_eq!(p.churn_budget, ChurnBudget::UNLIMITED);
    }

    #[test]
    fn bad_settings_say_where_and_why() {
        let cases = [
            (
                r#"{"commit_step_shift": 65}"#,
                "commit_step_shift",
                "65 is above 64",
            ),
            (
                r#"{"large_page_granules": 0}"#,
                "large_page_granules",
                "0 is not in 1..",
            ),
            (
                r#"{"large_page_granules": 4294967296}"#,
                "large_page_granules",
                "not in 1..",
            ),
            (
                r#"{"commit_piece_granules": 4294967296}"#,
                "commit_piece_granules",
                "not in 0..",
            ),
            (
                r#"{"strand_guard": "sometimes"}"#,
                "strand_guard",
                "not \"off\"",
            ),
            (r#"{"favour": "speed"}"#, "favour", "not \"balanced\""),
            (
                r#"{"churn_budget": 5}"#,
                "churn_budget",
                "not \"unlimited\"",
            ),
            (
                r#"{"churn_budget": {"per_gib_ns": 5}}"#,
                "churn_budget.per_gib_ns",
                "unknown member",
            ),
            (
                r#"{"trim_headroom_shift": -1}"#,
                "trim_headroom_shift",
                "negative",
            ),
            (
                r#"{"split_boundaries": 1}"#,
                "split_boundaries",
                "not true or false",
            ),
            (
                r#"{"aligned_page_granules": true}"#,
                "aligned_page_granules",
                "not a non-negative integer",
            ),
            (
                r#"{"shed_partial_granules": 4294967296}"#,
                "shed_partial_granules",
                "not in 0..",
            ),
            (
                r#"{"round_trip_window": 4294967296}"#,
                "round_trip_window",
                "4294967296 is not in 0..=4294967295 (0: off)",
            ),
            (
                r#"{"idle_cap_shift": 65}"#,
                "idle_cap_shift",
                "65 is above 64 (64 means no cap)",
            ),
            // Past a `u32`: the number as given, not as a `u32` holds it.
            (
                r#"{"max_pages": 18446744073709551615}"#,
                "max_pages",
                "18446744073709551615 is outside 1..=16777216",
            ),
            (
                r#"{"max_pages": 4294967296}"#,
                "max_pages",
                "4294967296 is outside 1..=16777216",
            ),
        ];
        let mut files: Vec<(String, String, &str)> = cases
            .iter()
            .map(|&(p, at, why)| (file_with(p), format!("policy.{at}"), why))
            .collect();
        files.push((
            file_with(r#"{"strand": "on"}"#),
            "policy".into(),
            "strand_guard, aligned_page_granules, shed_partial_granules, share_large_reservations, \
             keep_bare_reservations, large_page_space, small_page_lane, round_trip_window, \
             churn_budget, idle_cap_shift, max_pages",
        ));
        super::super::assert_format_errors(&files);
    }
}
