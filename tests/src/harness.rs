//! What a platform instance of the suite provides.

use std::fmt;

use streamcore::device::Device;
use streamcore::platform::{ErrorKind, LaunchDims, Platform};

/// Why a scenario did not run on a platform.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skip(pub String);

impl fmt::Display for Skip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SKIPPED: {}", self.0)
    }
}

/// Platform abilities some scenarios need; the one place where expected
/// differences between platforms are declared.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Capability {
    /// A launch of the setup's `fail_kernel` with [`failing_dims`] fails:
    /// injected by name on the mock; refused by a real driver, because the
    /// block has more threads than any device allows (a failure that does
    /// not harm the context).
    FailKernel,
    /// Device memory can be limited so out-of-memory is reachable quickly.
    SmallMemory,
    /// Storage allocations can be counted (to prove none happen in a capture).
    CountAllocations,
    /// Devices can be made on two different GPUs ([`Harness::device_on`]
    /// with ordinals 0 and 1), and driven from any thread.
    TwoDevices,
    /// One call of the platform can be made to fail on demand
    /// ([`Harness::fail_next`]): a rule of the fault injector on the mock,
    /// the HIP-on-CUDA shim's fault switch on a real device.
    InjectFaults,
}

/// A platform call a scenario can make fail once ([`Harness::fail_next`]).
/// Each names one driver entry point on HIP and one fault site on the mock.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum FaultCall {
    /// Recording an event (`Platform::record`; `hipEventRecord`).
    Record,
    /// A stream waiting for an event (`Platform::wait`;
    /// `hipStreamWaitEvent`).
    Wait,
    /// A host wait for an event (`Platform::synchronize`;
    /// `hipEventSynchronize`).
    Synchronize,
    /// A copy from pinned host memory to the device
    /// (`Platform::copy_to_device`; `hipMemcpyAsync`).
    CopyToDevice,
    /// A copy from the device to pinned host memory
    /// (`Platform::copy_to_host`; `hipMemcpyAsync`).
    CopyToHost,
    /// A kernel launch (`Platform::launch`; `hipModuleLaunchKernel`).
    Launch,
    /// Loading a compiled kernel (`Platform::load_kernel`;
    /// `hipModuleLoadData`).
    LoadKernel,
    /// Starting a capture (`Platform::begin_capture`;
    /// `hipStreamBeginCapture`).
    BeginCapture,
    /// Ending a capture (`Platform::end_capture`; `hipStreamEndCapture`,
    /// which ends the capture all the same and discards its graph).
    EndCapture,
    /// Replaying a graph (`Platform::launch_graph`; `hipGraphLaunch`).
    LaunchGraph,
    /// Device memory from the driver (`Storage::alloc`, `reserve` and
    /// `commit` of a device storage; `hipMemCreate` over virtual memory,
    /// else `hipMalloc`).
    DeviceAlloc,
    /// Pinned host memory (`Storage::alloc` of a host storage;
    /// `hipHostMalloc`).
    HostAlloc,
    /// Making a stream (`Platform::create_stream_for`, when the device
    /// first uses one; `hipStreamCreateWithFlags`).
    CreateStream,
}

/// Launch geometry a real driver refuses: one block of 2048 threads, more
/// than any HIP or CUDA device allows per block (1024). Scenarios launch
/// the failing kernel with it, so the failure is real on a GPU.
pub fn failing_dims(n: usize) -> LaunchDims {
    LaunchDims {
        grid: [n.div_ceil(2048).max(1) as u32, 1, 1],
        block: [2048, 1, 1],
        shared_mem_bytes: 0,
    }
}

/// How a scenario wants its device.
#[derive(Clone, Debug)]
pub struct Setup {
    /// Streams of the device.
    pub streams: u16,
    /// Scheduler seed (platforms without a scheduler ignore it).
    pub seed: u64,
    /// A kernel (by name) every launch of which fails.
    pub fail_kernel: Option<&'static str>,
    /// Device memory limit in bytes.
    pub memory: Option<u64>,
}

impl Setup {
    /// `streams` streams, seed 0, no faults.
    pub fn streams(streams: u16) -> Self {
        Self {
            streams,
            seed: 0,
            fail_kernel: None,
            memory: None,
        }
    }
}

/// One platform instance of the suite.
pub trait Harness {
    /// The platform.
    type P: Platform;

    /// A short name for messages.
    fn name(&self) -> &'static str;

    /// Whether the platform has `capability`.
    fn supports(&self, capability: Capability) -> bool;

    /// A fresh device with the suite's kernels available, or why not.
    fn device(&self, setup: &Setup) -> Result<Device<Self::P>, Skip>;

    /// A fresh device on GPU `ordinal` (the platform's device numbering),
    /// or why not. Platforms with one device have only ordinal 0.
    fn device_on(&self, ordinal: u32, setup: &Setup) -> Result<Device<Self::P>, Skip> {
        if ordinal == 0 {
            self.device(setup)
        } else {
            Err(Skip(format!("{} has no device {ordinal}", self.name())))
        }
    }

    /// Storage allocations made so far (0 when not counted).
    fn storage_allocations(&self, device: &Device<Self::P>) -> u64;

    /// Checks after a scenario (the mock: no hazard was reported).
    fn finish(&self, device: &Device<Self::P>);

    /// Makes the next `call` of `device`'s platform fail with `kind` (one
    /// of `OutOfMemory`, `InvalidValue`, `Kernel`, `Other`: failures that
    /// leave the device usable), once, without reaching the device; or why
    /// the platform cannot ([`Capability::InjectFaults`]).
    fn fail_next(
        &self,
        device: &Device<Self::P>,
        call: FaultCall,
        kind: ErrorKind,
    ) -> Result<(), Skip> {
        let _ = (device, call, kind);
        Err(Skip(format!("{} cannot inject faults", self.name())))
    }

    /// Bytes of device 0's memory in use, as its driver counts them (every
    /// process's), where the harness can read them: [`run_all`] checks
    /// that a scenario gives back what it took.
    fn device_memory_in_use(&self) -> Option<u64> {
        None
    }

    /// How many injected faults calls have taken so far (on HIP in the
    /// whole process), so a scenario can tell that the operation it meant
    /// took the fault it asked for and left none pending.
    fn faults_taken(&self, device: &Device<Self::P>) -> u64 {
        let _ = device;
        0
    }
}

/// Runs `scenario` under `harness`. A skipped scenario prints a `SKIPPED`
/// line straight to the process's stderr, which the test harness does not
/// capture, so it is visible in every run.
pub fn run<H: Harness>(harness: &H, scenario: &str, f: impl FnOnce(&H) -> Result<(), Skip>) {
    match f(harness) {
        Ok(()) => {}
        Err(skip) => {
            use std::io::Write;
            let mut err = std::io::stderr();
            let _ = writeln!(err, "{} / {scenario}: {skip}", harness.name());
        }
    }
}

/// A scenario as a plain function, for custom runners.
pub type Scenario<H> = fn(&H) -> Result<(), Skip>;

/// Every scenario of the suite with its name, for runners that report
/// skips themselves (the test harness can only say "ok").
pub fn all<H>() -> Vec<(&'static str, Scenario<H>)>
where
    H: Harness + Sync,
    Device<H::P>: Send + Sync,
{
    macro_rules! list {
        ($($name:ident),* $(,)?) => {
            vec![$((stringify!($name), crate::scenarios::$name::<H> as Scenario<H>)),*]
        };
    }
    crate::for_each_scenario!(list)
}

/// Calls macro `$m` with the names of every scenario: the one list of the
/// suite, used by [`all`] and [`scenario_suite!`](crate::scenario_suite).
#[macro_export]
macro_rules! for_each_scenario {
    ($($m:ident)::+ $(, $arg:expr)?) => {
        $($m)::+! { $($arg;)?
            upload_launch_chain_download,
            producer_consumer_waits_once,
            free_while_in_flight_is_reused_in_stream_order,
            capture_replay_with_fresh_inputs,
            capture_doomed_by_failure,
            taint_chain_and_recovery,
            out_of_memory_then_recovery,
            install_pools_refused_while_in_use,
            info_cache_serves_repeated_launches,
            capture_calls_out_of_order_are_rejected,
            bad_input_is_a_typed_error,
            two_devices_from_their_own_threads,
            threads_share_one_device,
            refused_copies_are_typed_and_retried,
            a_refused_launch_claims_its_outputs,
            a_refused_cross_stream_wait_never_runs_unordered,
            a_refused_host_wait_is_typed_and_the_next_settles,
            refused_capture_calls_leave_the_stream_usable,
            refused_memory_is_retried_or_typed,
            a_refused_kernel_load_is_typed,
            a_refused_fence_keeps_staging_busy,
            a_refused_info_upload_is_not_cached,
            a_stream_the_platform_cannot_make_is_made_on_the_next_use,
            a_refused_poll_keeps_its_frees_for_the_next,
        }
    };
}

/// What a scenario may leave of the device's memory in use once its device
/// is gone: less than the smallest page a storage takes from the driver
/// above its packing limit (2 MiB), so a leaked page shows.
pub const LEFT_IN_USE_SLACK: u64 = 1 << 20;

/// What a scenario left of the device's memory in use, judged: the bytes
/// more in use after its run (`left`) and, when that passed
/// [`LEFT_IN_USE_SLACK`] and the scenario was run a second time, after the
/// second run (`again`: `Err` when the second run failed). A leak recurs;
/// what the driver sets up on its first use of something (a second
/// stream's resources, a module) does not. `Ok(note)` passes, with what to
/// add to the `ok` line; `Err(why)` fails.
pub fn judge_left_in_use(left: u64, again: Option<Result<u64, ()>>) -> Result<String, String> {
    if left <= LEFT_IN_USE_SLACK {
        return Ok(String::new());
    }
    match again {
        None => Err(format!("{left} B more device memory in use after it")),
        Some(Err(())) => Err(format!(
            "its second run (made because the first left {left} B more device memory in use) failed"
        )),
        Some(Ok(again)) if again > LEFT_IN_USE_SLACK => Err(format!(
            "{left} B more device memory in use after it, and {again} B more after a second run: a leak"
        )),
        Some(Ok(again)) => Ok(format!(
            " (the driver kept {left} B after its first run and {again} B after a second: its own one-time set-up)"
        )),
    }
}

/// Runs every scenario under `harness` in turn, printing one line each
/// (`ok`, `FAILED`, `SKIPPED: why`) and the closing line
/// `NAME: N passed, N failed, N skipped`. Returns whether none failed.
///
/// Where the harness reads the device's memory in use
/// ([`Harness::device_memory_in_use`]), a scenario that leaves more than
/// [`LEFT_IN_USE_SLACK`] of it in use once its devices are dropped is run
/// a second time, and fails if that run leaves more again
/// ([`judge_left_in_use`]): the runtime keeps what its first use of the
/// device, of a second stream or of a module sets up, once.
pub fn run_all<H>(harness: &H) -> bool
where
    H: Harness + Sync,
    Device<H::P>: Send + Sync,
{
    let (mut passed, mut failed, mut skipped) = (0, 0, 0);
    for (name, scenario) in all::<H>() {
        let run = || {
            let before = harness.device_memory_in_use();
            let outcome =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| scenario(harness)));
            let left = match (before, harness.device_memory_in_use()) {
                (Some(b), Some(a)) => a.saturating_sub(b),
                _ => 0,
            };
            (outcome, left)
        };
        let (outcome, left) = run();
        match outcome {
            Ok(Ok(())) => {
                let again = (left > LEFT_IN_USE_SLACK).then(|| match run() {
                    (Ok(Ok(())), again) => Ok(again),
                    _ => Err(()),
                });
                match judge_left_in_use(left, again) {
                    Ok(note) => {
                        passed += 1;
                        println!("scenario {name} ... ok{note}");
                    }
                    Err(why) => {
                        failed += 1;
                        println!("scenario {name} ... FAILED: {why}");
                    }
                }
            }
            Ok(Err(skip)) => {
                skipped += 1;
                println!("scenario {name} ... {skip}");
            }
            Err(_) => {
                failed += 1;
                println!("scenario {name} ... FAILED");
            }
        }
    }
    println!(
        "{}: {passed} passed, {failed} failed, {skipped} skipped",
        harness.name()
    );
    failed == 0
}

/// Instantiates every scenario of the suite as a `#[test]` for the harness
/// built by `$make`.
#[macro_export]
macro_rules! scenario_suite {
    ($make:expr) => {
        $crate::for_each_scenario!($crate::scenario_tests, $make);
    };
}

/// Emits one `#[test]` per scenario name for the harness `$make`
/// (used by [`scenario_suite!`](crate::scenario_suite)).
#[macro_export]
macro_rules! scenario_tests {
    ($make:expr; $($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                let harness = $make;
                $crate::harness::run(&harness, stringify!($name), |h| {
                    $crate::scenarios::$name(h)
                });
            }
        )*
    };
}

#[cfg(test)]
mod tests {
    use super::{LEFT_IN_USE_SLACK, judge_left_in_use};

    #[test]
    fn memory_left_in_use_fails_a_scenario_only_when_a_second_run_leaves_more_again() {
        let slack = LEFT_IN_USE_SLACK;
        assert_eq!(judge_left_in_use(0, None), Ok(String::new()));
        assert_eq!(judge_left_in_use(slack, None), Ok(String::new()));
        // More than the slack and not run again: a failure naming it.
        let e = judge_left_in_use(2 << 20, None).unwrap_err();
        assert!(e.contains("2097152 B more"), "{e}");
        // The driver's one-time set-up: the second run leaves nothing more.
        let ok = judge_left_in_use(2 << 20, Some(Ok(0))).unwrap();
        assert!(ok.contains("one-time set-up"), "{ok}");
        assert!(judge_left_in_use(2 << 20, Some(Ok(slack))).is_ok());
        // A leak recurs.
        let e = judge_left_in_use(2 << 20, Some(Ok(slack + 1))).unwrap_err();
        assert!(e.contains("a leak") && e.contains("2097152 B"), "{e}");
        let e = judge_left_in_use(4 << 20, Some(Err(()))).unwrap_err();
        assert!(e.contains("second run"), "{e}");
    }
}
