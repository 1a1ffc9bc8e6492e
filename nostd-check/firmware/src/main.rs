//! The no_std scenario (`../src/scenario.rs`: the null platform through the
//! whole device API) as a bare-metal image for two firmware cores. `run.sh`
//! builds it for `thumbv7em-none-eabihf` (run under QEMU's `mps2-an386`, a
//! Cortex-M4F) and for `riscv32imac-unknown-none-elf` (QEMU's `virt`, an
//! RV32IMAC hart in machine mode); the image reports through semihosting and
//! exits QEMU with status 0 only when every part of the scenario passed (1
//! on a failure, a panic or a fault).
//!
//! No runtime crate: the start-up code (vector table or trap vector, stack,
//! `.bss` and `.data`, the FPU the Arm hard-float ABI needs) and the
//! semihosting trap are written here, one file per architecture (`arm.rs`,
//! `riscv.rs`), so the image holds the core, `alloc` and little else, and
//! its size is the core's.
#![no_std]
#![no_main]

extern crate alloc;

#[cfg(target_arch = "arm")]
mod arm;
#[cfg(target_arch = "arm")]
use arm::semihost;
#[cfg(target_arch = "riscv32")]
mod riscv;
#[cfg(target_arch = "riscv32")]
use riscv::semihost;

/// The core the scenario ran on, for its report line.
#[cfg(target_arch = "arm")]
const CORE: &str = "Cortex-M4F";
#[cfg(target_arch = "riscv32")]
const CORE: &str = "RV32IMAC";

#[path = "../../src/bump.rs"]
mod bump;
mod cost;
mod interrupts;
#[path = "../../src/scenario.rs"]
mod scenario;

use core::fmt::Write;

/// Heap for the scenario: 1 MiB of the 4 MiB RAM (the scenario peaks
/// near 30 KB; the margin keeps the check about correctness, not budget).
const HEAP_BYTES: usize = 1 << 20;

#[global_allocator]
static HEAP: bump::Bump<HEAP_BYTES> = bump::Bump::new();

/// Semihosting `SYS_WRITE0` (the same numbers on Arm and RISC-V): print a NUL-terminated string.
const SYS_WRITE0: usize = 0x04;
/// Semihosting `SYS_EXIT`.
const SYS_EXIT: usize = 0x18;
/// `SYS_EXIT` reason: the application finished normally (QEMU exits 0).
const ADP_STOPPED_APPLICATION_EXIT: usize = 0x2_0026;
/// `SYS_EXIT` reason: a run-time error (QEMU exits 1).
const ADP_STOPPED_RUN_TIME_ERROR: usize = 0x2_0023;

/// A line buffer printed through the debugger console.
struct Console {
    buf: [u8; 256],
    len: usize,
}

impl Write for Console {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        for &b in s.as_bytes() {
            // Keep one byte for the terminating NUL; overflow truncates.
            if self.len + 1 < self.buf.len() {
                self.buf[self.len] = b;
                self.len += 1;
            }
        }
        Ok(())
    }
}

fn print(args: core::fmt::Arguments<'_>) {
    let mut c = Console {
        buf: [0; 256],
        len: 0,
    };
    let _ = c.write_fmt(args);
    c.buf[c.len] = 0;
    semihost(SYS_WRITE0, c.buf.as_ptr() as usize);
}

pub(crate) fn exit(ok: bool) -> ! {
    let reason = if ok {
        ADP_STOPPED_APPLICATION_EXIT
    } else {
        ADP_STOPPED_RUN_TIME_ERROR
    };
    loop {
        semihost(SYS_EXIT, reason);
    }
}

/// Runs the scenario, then counts what launches cost (`cost.rs`), then
/// shares a device with a timer interrupt (`interrupts.rs`), and exits
/// QEMU with the verdict: the scenario passed, the launches ran, none of
/// the counted ones allocated, and the interrupt scenario passed.
#[unsafe(no_mangle)]
extern "C" fn firmware_main() -> ! {
    let got = scenario::run();
    let ok = got == scenario::ALL_PASSED;
    print(format_args!(
        "firmware scenario on {CORE}: {} ({got}/{} parts); heap peak {} B live, {} B allocated in all, of {} B\n",
        if ok { "ok" } else { "FAILED" },
        scenario::ALL_PASSED,
        HEAP.peak(),
        HEAP.used(),
        HEAP_BYTES,
    ));
    let costs = cost::measure(|| HEAP.used());
    match &costs {
        Some(c) => print(format_args!(
            "launch cost on {CORE} (instructions, warm, null platform): a lone launch {}, \
             a pipeline stage (two launches, one cross-stream wait) {}, a round's sync_all {}; \
             {} B allocated while counting; counter {} units per 1000 instructions\n",
            c.launch, c.stage, c.sync_all, c.allocated, c.units_per_1000,
        )),
        None => print(format_args!(
            "launch cost on {CORE}: FAILED (a launch or the set-up failed)\n"
        )),
    }
    let irq = interrupts::run(costs.as_ref().map_or(1000, |c| c.units_per_1000));
    match &irq {
        Some(r) => {
            print(format_args!(
                "interrupts on {CORE} (MaskedLock): {}; {} ticks ({} in the waits), {} launches from the handler, \
                 {} from thread mode\n",
                if r.ok { "ok" } else { "FAILED" },
                r.ticks,
                r.spanned,
                r.irq_launches,
                r.main_launches,
            ));
            print(format_args!(
                "  instructions: interrupt latency worst {} (best {}), longest mask {} \
                 (setting up: {}), beside {}-instruction synchronizations\n",
                r.worst,
                r.best,
                r.longest_mask,
                r.setup_mask,
                interrupts::WAIT,
            ));
        }
        None => print(format_args!(
            "interrupts on {CORE}: FAILED (the device could not be set up)\n"
        )),
    }
    exit(ok && costs.is_some_and(|c| c.allocated == 0) && irq.is_some_and(|r| r.ok))
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    print(format_args!("firmware scenario panicked: {info}\n"));
    exit(false)
}
