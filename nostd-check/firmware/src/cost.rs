//! What the core's launch path costs on the firmware core, counted by the
//! core's own counter (SysTick on the Cortex-M4F, `minstret` on RV32IMAC)
//! and calibrated against a loop of known length, so the figures are
//! instructions whatever the counter's unit. `run.sh` starts QEMU with
//! `-icount shift=0`, under which both counters advance with the
//! instructions executed, so a run's figures are exact and repeatable (to
//! SysTick's granularity on the Cortex-M4F) — instructions, not cycles: QEMU
//! models no pipeline or memory timing.
//!
//! Measured on the null platform (its launch is a few instructions), warm:
//! the kernels loaded, the buffers allocated, every info slice cached, a
//! round run before counting starts. Also counted: the heap bytes the
//! measured launches allocate (the core's promise is none once warm).

use streamcore::device::{Device, DeviceConfig, Launched};
use streamcore::null::Null;
use streamcore::platform::{KernelSource, LaunchDims};
use streamcore::stream::StreamId;

#[cfg(target_arch = "arm")]
use crate::arm::{COUNTER_MASK, counter, spin, start_counter};
#[cfg(target_arch = "riscv32")]
use crate::riscv::{COUNTER_MASK, counter, spin, start_counter};

/// Iterations of the calibration loop (two instructions each).
const CALIBRATION: u32 = 1 << 20;
/// Stages of the pipeline (as the host bench's round, smaller).
const STAGES: usize = 16;
/// Rounds counted.
const ROUNDS: u64 = 16;
/// Lone launches counted.
const LONE: u64 = 256;

/// What [`measure`] found.
pub struct Costs {
    /// Instructions a lone warm launch takes (one stream, same buffers).
    pub launch: u64,
    /// Instructions a pipeline stage takes: a fill on stream 1 and an
    /// accumulation of its buffer on stream 0 (the core places one wait).
    pub stage: u64,
    /// Instructions one `sync_all` at the end of a pipeline round takes.
    pub sync_all: u64,
    /// Heap bytes allocated while the launches were counted.
    pub allocated: usize,
    /// Counter units the calibration loop's instructions took, per 1,000
    /// instructions (1,000 when the counter counts instructions).
    pub units_per_1000: u64,
}

/// Counter units from `from` to now.
fn since(from: u64) -> u64 {
    counter().wrapping_sub(from) & COUNTER_MASK
}

/// Measures the costs; `heap_used` reads the allocator's bytes handed out
/// so far. `None` if the device could not be set up or a launch failed.
pub fn measure(heap_used: impl Fn() -> usize) -> Option<Costs> {
    start_counter();
    // Calibration: a loop of 2 * CALIBRATION instructions.
    let t = counter();
    spin(CALIBRATION);
    let cal_units = since(t).max(1);
    let cal_instructions = 2 * u64::from(CALIBRATION);
    let instructions = |units: u64, per: u64| units * cal_instructions / cal_units / per;

    let d = Device::new(Null, DeviceConfig::with_streams(2)).ok()?;
    let kernel = |bindings| {
        d.load_kernel(&KernelSource {
            name: "k",
            source: "",
            bindings,
        })
        .ok()
    };
    let (fill, acc) = (kernel(2)?, kernel(3)?);
    let (producer, consumer) = (StreamId(1), StreamId(0));
    let bytes = 256u64;
    let mut stages = alloc::vec::Vec::with_capacity(STAGES);
    for _ in 0..STAGES {
        stages.push(d.alloc(producer, bytes).ok()?);
    }
    let sum = d.alloc(consumer, bytes).ok()?;
    let dims = LaunchDims::linear(1, 64);
    let elements = bytes / 4;
    let queued = |r: Result<Launched, _>| matches!(r, Ok(Launched::Queued)).then_some(());
    let round = || -> Option<()> {
        for (k, b) in stages.iter().enumerate() {
            let info = [elements, k as u64 + 1];
            queued(d.launch(producer, fill, dims, &[b.write()], &info))?;
            queued(d.launch(
                consumer,
                acc,
                dims,
                &[b.read(), sum.read_write()],
                &[elements],
            ))?;
        }
        Some(())
    };
    let lone = || {
        queued(d.launch(
            consumer,
            acc,
            dims,
            &[stages[0].read(), sum.read_write()],
            &[elements],
        ))
    };

    // Warm: every info slice cached, every table at its size.
    for _ in 0..2 {
        round()?;
        lone()?;
        d.sync_all().ok()?;
    }
    let heap_before = heap_used();
    let (mut staged, mut synced) = (0, 0);
    for _ in 0..ROUNDS {
        let t = counter();
        round()?;
        staged += since(t);
        let t = counter();
        d.sync_all().ok()?;
        synced += since(t);
    }
    let t = counter();
    for _ in 0..LONE {
        lone()?;
    }
    let launched = since(t);
    d.sync_all().ok()?;
    let allocated = heap_used() - heap_before;
    Some(Costs {
        launch: instructions(launched, LONE),
        stage: instructions(staged, ROUNDS * STAGES as u64),
        sync_all: instructions(synced, ROUNDS),
        allocated,
        units_per_1000: cal_units * 1000 / cal_instructions,
    })
}
