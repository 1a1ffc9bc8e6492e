//! Shrinking a failing program to a small one that fails the same way, for
//! regression tests and bug reports.
//!
//! A run *fails the same way* when [`failure`] gives the same [`Failure`]
//! key: the violation's message up to its first digit-free cut (so step
//! numbers and ids may differ), or the panic's location.

use std::panic::{self, AssertUnwindSafe};
use std::string::{String, ToString};
use std::sync::Mutex;
use std::vec::Vec;

use super::{Profile, Program, run};

/// How a run failed.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Failure {
    /// The oracle's violation: a key (the message with digits dropped and
    /// cut at 60 characters) and the full message.
    Violation(String, String),
    /// The code under test panicked: where, and the message.
    Panic(String, String),
}

impl Failure {
    /// What two runs must share to fail "the same way".
    pub fn key(&self) -> &str {
        match self {
            Failure::Violation(k, _) | Failure::Panic(k, _) => k,
        }
    }

    /// The full message.
    pub fn message(&self) -> &str {
        match self {
            Failure::Violation(_, m) | Failure::Panic(_, m) => m,
        }
    }
}

static LAST_PANIC: Mutex<Option<(String, String)>> = Mutex::new(None);

/// Runs `program` as `profile` shapes it, catching panics (the default
/// panic hook is replaced by a quiet one while this runs in the process).
/// `None` when it passes.
pub fn failure(profile: Profile, program: &Program) -> Option<Failure> {
    let p = profile.shape(program.clone());
    let prev = panic::take_hook();
    panic::set_hook(std::boxed::Box::new(|info| {
        let loc = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        *LAST_PANIC.lock().unwrap_or_else(|e| e.into_inner()) = Some((loc, msg));
    }));
    let r = panic::catch_unwind(AssertUnwindSafe(|| run(&p)));
    panic::set_hook(prev);
    match r {
        Ok(Ok(_)) => None,
        Ok(Err(v)) => {
            let m = v.message.to_string();
            let key: String = m.chars().filter(|c| !c.is_ascii_digit()).take(60).collect();
            Some(Failure::Violation(key, v.to_string()))
        }
        Err(_) => {
            let (loc, msg) = LAST_PANIC
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take()
                .unwrap_or_default();
            Some(Failure::Panic(loc, msg))
        }
    }
}

/// The smallest program found (ops removed, config bytes zeroed) that still
/// fails with `target`'s key under `profile`.
pub fn minimize(profile: Profile, program: &Program, target: &Failure) -> Program {
    minimize_with(profile, program, target, |_| false)
}

/// [`minimize`], never trying a candidate `skip` accepts.
pub fn minimize_with(
    profile: Profile,
    program: &Program,
    target: &Failure,
    skip: impl Fn(&Program) -> bool,
) -> Program {
    let same =
        |p: &Program| !skip(p) && failure(profile, p).is_some_and(|f| f.key() == target.key());
    let mut best = profile.shape(program.clone());
    // Remove chunks of ops, halving the chunk size.
    let mut chunk = best.ops.len().max(1);
    while chunk >= 1 {
        let mut i = 0;
        while i < best.ops.len() {
            let mut candidate = best.clone();
            let end = (i + chunk).min(candidate.ops.len());
            candidate.ops.drain(i..end);
            if same(&candidate) {
                best = candidate;
            } else {
                i += chunk;
            }
        }
        if chunk == 1 {
            break;
        }
        chunk /= 2;
    }
    // Zero what the config does not need.
    let fields: [fn(&mut Program) -> &mut u8; 6] = [
        |p| &mut p.config.streams,
        |p| &mut p.config.seed,
        |p| &mut p.config.flush,
        |p| &mut p.config.device,
        |p| &mut p.config.layout,
        |p| &mut p.config.declared,
    ];
    for f in fields {
        let mut candidate = best.clone();
        if *f(&mut candidate) != 0 {
            *f(&mut candidate) = 0;
            if same(&candidate) {
                best = candidate;
            }
        }
    }
    best
}

/// Every distinct failure (by key) among `count` random inputs of `profile`
/// from `seed`, each with the first input that showed it, minimized.
/// Each input goes through `filter` first: `None` skips it (e.g. one known
/// to abort the process, which no harness can catch), or it may be
/// rewritten (e.g. to steer around a known bug).
pub fn survey(
    profile: Profile,
    count: usize,
    seed: u64,
    filter: impl Fn(Program) -> Option<Program>,
) -> Vec<(Failure, Program)> {
    let skip = |p: &Program| filter(p.clone()).as_ref() != Some(p);
    let mut rng = crate::rng::SplitMix64::new(seed);
    let mut found: Vec<(Failure, Program)> = Vec::new();
    for _ in 0..count {
        let len = 8 + rng.below(240) as usize;
        let bytes: Vec<u8> = (0..len).map(|_| rng.below(256) as u8).collect();
        let Some(p) = filter(profile.shape(Program::decode(&bytes))) else {
            continue;
        };
        if let Some(f) = failure(profile, &p) {
            if found.iter().all(|(g, _)| g.key() != f.key()) {
                let small = minimize_with(profile, &p, &f, skip);
                found.push((f, small));
            }
        }
    }
    found
}
