//! streamcore's `Device` over real HIP against bare HIP calls, side by side
//! in one run:
//!
//! 1. per-launch cost of a small kernel: bare `hipModuleLaunchKernel`,
//!    `HipPlatform::launch` (the platform alone), `Device::launch` (info words
//!    served by the info cache);
//! 2. reserve + free at 1 MiB and 4 KiB: streamcore's `MemoryManager` over
//!    `HipStorage`, `Device::alloc` + drop (on the default lock and on the
//!    spin lock), `hipMalloc` + `hipFree`, `hipMallocAsync` + `hipFreeAsync`;
//! 3. a 100-kernel chain: launched eagerly through the `Device`, replayed as
//!    a captured graph, and launched by bare calls;
//! 4. a two-stream pipeline: the waits and events the `Device` inserted
//!    against the minimum (one per cross-stream hand-off), and its time
//!    against hand-placed events (whole rounds, and submission alone), on
//!    the default lock, the spin lock and a lock with no atomics, and the
//!    same pipeline through `HipPlatform` alone (no core): what a stage adds
//!    split into the platform's share, the locks' and the core's
//!    bookkeeping;
//! 5. the building blocks of the launch and wait path, per call (events,
//!    waits, queries, the current-device calls), and the host's own: an
//!    uncontended atomic add, a lock + unlock of each lock family;
//! 6. two threads on the real driver, through bare calls and the `Device` on
//!    each lock family: a launch's latency on one stream while another
//!    thread waits out 20 ms synchronizes of the other, and two threads'
//!    launch rate on two streams against one thread's (`THREADS_SECS`,
//!    `THREADS_TRIALS`).
//!
//! It ends with the budget ratios (launch, pipeline, alloc at 1 MiB and at
//! 4 KiB) and their targets. Section names as arguments run only those sections.
//!
//! Timing: many operations per round, one synchronization per round, the
//! variants interleaved round by round; the table gives the median over
//! rounds (and the fastest round). Every result is checked on the host.
//! Without a HIP runtime or device it prints `SKIPPED: no HIP runtime` and
//! exits 0.

mod common;
mod raw;
mod sections;

use std::process::ExitCode;

use common::{DeviceConfig, HipPlatform, R, e};
use sections::{allocations, chain, launches, pipeline, primitives, threads};
use streamcore::device::Device;
use streamcore::platform::{ErrorKind, Platform, PlatformError};

/// The three figures the launch-path budget is judged by, with targets.
#[derive(Default)]
struct Budget {
    launch: Option<f64>,
    pipeline: Option<f64>,
    alloc: Option<(f64, f64)>,
}

impl Budget {
    fn print(&self) {
        println!("\nbudget (medians, this run):");
        let line = |name: &str, value: Option<f64>, target: f64| match value {
            Some(v) => println!(
                "  {name:<58} {v:>7.3}  target <= {target:.2}  {}",
                if v <= target { "met" } else { "MISSED" }
            ),
            None => println!("  {name:<58}     n/a  (section not run or failed)"),
        };
        line(
            "Device::launch / bare hipModuleLaunchKernel",
            self.launch,
            1.05,
        );
        line(
            "two-stream pipeline: Device / hand-placed events",
            self.pipeline,
            1.05,
        );
        line(
            "Device::alloc+drop / MemoryManager reserve+free (1 MiB)",
            self.alloc.map(|a| a.0),
            2.0,
        );
        line(
            "Device::alloc+drop / MemoryManager reserve+free (4 KiB)",
            self.alloc.map(|a| a.1),
            2.0,
        );
    }
}

const SECTIONS: [&str; 6] = [
    "launches",
    "allocations",
    "pipeline",
    "chain",
    "primitives",
    "threads",
];

fn run() -> R<bool> {
    // Section names on the command line run only those (flags such as
    // `--bench` are ignored).
    let wanted: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    if let Some(bad) = wanted.iter().find(|w| !SECTIONS.contains(&w.as_str())) {
        return Err(format!(
            "unknown section {bad}; sections: {}",
            SECTIONS.join(", ")
        ));
    }
    let platform = match HipPlatform::new() {
        Ok(p) => p,
        Err(err) if err.kind() == ErrorKind::NotAvailable => {
            println!("SKIPPED: no HIP runtime ({err})");
            return Ok(false);
        }
        Err(err) => return Err(format!("HipPlatform::new: {err}")),
    };
    let props = platform.properties();
    println!(
        "streamcore Device vs bare HIP on {} ({} MiB), release build",
        platform.device_name(),
        props.total_memory >> 20
    );
    let dev = Device::new(platform, DeviceConfig::with_streams(1)).map_err(e("Device::new"))?;
    let budget = std::cell::RefCell::new(Budget::default());
    // Each section runs even when an earlier one failed; the run fails at
    // the end if any did.
    let sections: [(&str, &dyn Fn() -> R<()>); 6] = [
        ("launches", &|| {
            budget.borrow_mut().launch = Some(launches(&dev)?);
            Ok(())
        }),
        ("allocations", &|| {
            budget.borrow_mut().alloc = Some(allocations(&dev)?);
            Ok(())
        }),
        ("pipeline", &|| {
            budget.borrow_mut().pipeline = Some(pipeline()?);
            Ok(())
        }),
        ("chain", &|| chain(&dev)),
        ("primitives", &primitives),
        ("threads", &threads),
    ];
    let mut failed = Vec::new();
    for (name, section) in sections {
        if !wanted.is_empty() && !wanted.iter().any(|w| w == name) {
            continue;
        }
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(section));
        let err = match outcome {
            Ok(Ok(())) => continue,
            Ok(Err(err)) => err,
            Err(_) => String::from("panicked"),
        };
        println!("\nsection {name} FAILED: {err}");
        failed.push(name);
    }
    dev.sync_all().map_err(e("sync_all"))?;
    budget.borrow().print();
    if failed.is_empty() {
        println!("\nall sections ran; every result checked");
        Ok(true)
    } else {
        Err(format!("sections failed: {}", failed.join(", ")))
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(_) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("bench failed: {err}");
            ExitCode::FAILURE
        }
    }
}
