//! RV32IMAC (`riscv32imac-unknown-none-elf`, QEMU `virt`, machine mode,
//! no firmware): the start-up code, the trap vector (faults end the run;
//! the machine timer's interrupt is the interrupt scenario's tick), the
//! semihosting trap and the timer.

use core::sync::atomic::{AtomicU32, Ordering};

// The entry point, at the start of RAM where QEMU's reset code jumps: only
// hart 0 runs (any other parks), the trap vector is set to `trap` (a fault
// of any kind ends the run as a failure instead of hanging QEMU), the stack
// pointer to the top of RAM, `.bss` is zeroed (`.data` is loaded in place:
// the image runs from RAM), then `firmware_main` is called. Written in
// assembly because no Rust code may run before the stack and statics are
// set up.
core::arch::global_asm!(
    r#"
    .section .text.reset,"ax",@progbits
    .global reset
    .type reset,@function
reset:
    csrr t0, mhartid
    bnez t0, 9f
    la t0, trap
    csrw mtvec, t0
    .option push
    .option norelax
    la gp, __global_pointer$
    .option pop
    la sp, __stack_top
    la t0, __sbss
    la t1, __ebss
0:  bgeu t0, t1, 1f
    sw zero, 0(t0)
    addi t0, t0, 4
    j 0b
1:  call firmware_main
9:  wfi
    j 9b

    .section .text.trap,"ax",@progbits
    .balign 4
    .global trap
trap:
    addi sp, sp, -64
    sw ra, 0(sp)
    sw t0, 4(sp)
    sw t1, 8(sp)
    sw t2, 12(sp)
    sw a0, 16(sp)
    sw a1, 20(sp)
    sw a2, 24(sp)
    sw a3, 28(sp)
    sw a4, 32(sp)
    sw a5, 36(sp)
    sw a6, 40(sp)
    sw a7, 44(sp)
    sw t3, 48(sp)
    sw t4, 52(sp)
    sw t5, 56(sp)
    sw t6, 60(sp)
    csrr t0, mcause
    bgez t0, 1f
    call firmware_interrupt
    lw ra, 0(sp)
    lw t0, 4(sp)
    lw t1, 8(sp)
    lw t2, 12(sp)
    lw a0, 16(sp)
    lw a1, 20(sp)
    lw a2, 24(sp)
    lw a3, 28(sp)
    lw a4, 32(sp)
    lw a5, 36(sp)
    lw a6, 40(sp)
    lw a7, 44(sp)
    lw t3, 48(sp)
    lw t4, 52(sp)
    lw t5, 56(sp)
    lw t6, 60(sp)
    addi sp, sp, 64
    mret
1:  la sp, __stack_top
    call firmware_fault
    "#
);

/// Called by `trap` on any exception: the run fails.
#[unsafe(no_mangle)]
extern "C" fn firmware_fault() -> ! {
    crate::exit(false)
}

/// Called by `trap` on an interrupt (the caller-saved registers saved
/// around it): the machine timer is the interrupt scenario's tick; any
/// other interrupt fails the run.
#[unsafe(no_mangle)]
extern "C" fn firmware_interrupt() {
    let cause: usize;
    // SAFETY: reads a machine-mode CSR; no memory, no flags.
    unsafe {
        core::arch::asm!("csrr {0}, mcause", out(reg) cause, options(nomem, nostack, preserves_flags));
    }
    if cause & 0x7FFF_FFFF != MACHINE_TIMER {
        crate::exit(false);
    }
    let now = mtime();
    let due = read_mtimecmp();
    let per = TICK_INSTRUCTIONS.load(Ordering::Relaxed).max(1);
    set_mtimecmp(now + u64::from(PERIOD_TICKS.load(Ordering::Relaxed)));
    let late = now.saturating_sub(due).saturating_mul(u64::from(per));
    crate::interrupts::on_tick(late.min(u64::from(u32::MAX)) as u32);
}

/// `mcause`'s code for the machine timer interrupt.
const MACHINE_TIMER: usize = 7;
/// The CLINT's `mtime` (QEMU `virt`).
const MTIME: usize = 0x0200_BFF8;
/// The CLINT's `mtimecmp` of hart 0.
const MTIMECMP: usize = 0x0200_4000;
/// Instructions per `mtime` tick, measured by `start_ticks`.
static TICK_INSTRUCTIONS: AtomicU32 = AtomicU32::new(1);
/// The timer's period, in `mtime` ticks.
static PERIOD_TICKS: AtomicU32 = AtomicU32::new(1);

/// Reads a 64-bit CLINT register as two words, high-low-high.
fn read64(at: usize) -> u64 {
    loop {
        // SAFETY: word reads of the CLINT's memory-mapped registers, which
        // exist at these addresses on QEMU's virt machine; no side effect.
        let (hi, lo, again) = unsafe {
            (
                core::ptr::read_volatile((at + 4) as *const u32),
                core::ptr::read_volatile(at as *const u32),
                core::ptr::read_volatile((at + 4) as *const u32),
            )
        };
        if hi == again {
            return (u64::from(hi) << 32) | u64::from(lo);
        }
    }
}

fn mtime() -> u64 {
    read64(MTIME)
}

fn read_mtimecmp() -> u64 {
    read64(MTIMECMP)
}

/// Sets `mtimecmp` without passing through a smaller value (high word to
/// all ones first).
fn set_mtimecmp(at: u64) {
    // SAFETY: word writes of hart 0's `mtimecmp` (see `MTIMECMP`); a write
    // only moves the timer interrupt's due time.
    unsafe {
        core::ptr::write_volatile((MTIMECMP + 4) as *mut u32, u32::MAX);
        core::ptr::write_volatile(MTIMECMP as *mut u32, at as u32);
        core::ptr::write_volatile((MTIMECMP + 4) as *mut u32, (at >> 32) as u32);
    }
}

/// Masks machine interrupts (`mstatus.MIE`) and returns `mstatus` from
/// before.
pub fn mask_interrupts() -> usize {
    let old: usize;
    // SAFETY: clears MIE in machine mode, where the image runs; memory
    // accesses stay on their side (no `nomem`).
    unsafe {
        core::arch::asm!("csrrci {0}, mstatus, 8", out(reg) old, options(nostack, preserves_flags));
    }
    old
}

/// Enables machine interrupts (`mstatus.MIE`); none is raised until a
/// source is enabled in `mie`.
pub fn enable_interrupts() {
    // SAFETY: sets MIE in machine mode; `mie` enables no source yet, and
    // `trap` serves the one `start_ticks` enables.
    unsafe {
        core::arch::asm!("csrsi mstatus, 8", options(nostack, preserves_flags));
    }
}

/// Whether an `mstatus` `mask_interrupts` returned had interrupts enabled.
pub fn was_unmasked(saved: usize) -> bool {
    saved & 8 != 0
}

/// Puts back the MIE bit `mask_interrupts` returned.
pub fn restore_interrupts(saved: usize) {
    if was_unmasked(saved) {
        // SAFETY: sets MIE again, as it was; machine mode.
        unsafe {
            core::arch::asm!("csrsi mstatus, 8", options(nostack, preserves_flags));
        }
    }
}

/// Counter units (instructions) from `from` (the low word of a `counter()`
/// value) to now.
pub fn counter_since(from: u32) -> u32 {
    (counter() as u32).wrapping_sub(from)
}

/// Starts the machine timer's interrupt every `period` instructions
/// (converted to `mtime` ticks by a measurement against `minstret`).
pub fn start_ticks(period: u32) {
    let (t0, i0) = (mtime(), counter());
    spin(50_000);
    let (t1, i1) = (mtime(), counter());
    let per = ((i1 - i0) / (t1 - t0).max(1)).clamp(1, u64::from(u32::MAX)) as u32;
    TICK_INSTRUCTIONS.store(per, Ordering::Relaxed);
    PERIOD_TICKS.store((period / per).max(1), Ordering::Relaxed);
    set_mtimecmp(mtime() + u64::from(period / per).max(1));
    // SAFETY: enables the machine timer interrupt (mie.MTIE) and machine
    // interrupts (mstatus.MIE); `trap` serves it through
    // `firmware_interrupt`, which returns with `mret`.
    unsafe {
        core::arch::asm!("csrs mie, {0}", "csrsi mstatus, 8", in(reg) 0x80usize, options(nostack, preserves_flags));
    }
}

/// Stops the machine timer's interrupt.
pub fn stop_ticks() {
    // SAFETY: clears mie.MTIE; no interrupt is raised afterwards.
    unsafe {
        core::arch::asm!("csrc mie, {0}", in(reg) 0x80usize, options(nostack, preserves_flags));
    }
}

/// One semihosting call: operation `op`, parameter `arg`.
pub fn semihost(op: usize, arg: usize) -> usize {
    let ret;
    // SAFETY: the RISC-V semihosting trap is this exact three-instruction
    // sequence, uncompressed (hence `norvc`); QEMU (started with semihosting enabled)
    // services the `ebreak` and returns. The operations used here read only
    // what `arg` points to (a live NUL-terminated buffer for SYS_WRITE0) or
    // take it by value (SYS_EXIT on a 32-bit target), and clobber only a0.
    unsafe {
        core::arch::asm!(
            ".option push",
            ".option norvc",
            "slli x0, x0, 0x1f",
            "ebreak",
            "srai x0, x0, 7",
            ".option pop",
            inout("a0") op => ret,
            in("a1") arg,
            options(nostack, preserves_flags),
        );
    }
    ret
}

/// The bits [`counter`] keeps: all 64 of `minstret`.
pub const COUNTER_MASK: u64 = u64::MAX;

/// Nothing to start: `minstret` always counts (in machine mode).
pub fn start_counter() {}

/// Instructions retired (`minstret`, read high-low-high so the halves
/// agree). Under QEMU it counts instructions only with `-icount`.
pub fn counter() -> u64 {
    loop {
        let (hi, lo, again): (u32, u32, u32);
        // SAFETY: reads of the machine-mode counter CSRs, which the hart
        // running in machine mode may always read; no memory, no flags.
        unsafe {
            core::arch::asm!(
                "csrr {0}, minstreth",
                "csrr {1}, minstret",
                "csrr {2}, minstreth",
                out(reg) hi,
                out(reg) lo,
                out(reg) again,
                options(nomem, nostack, preserves_flags),
            );
        }
        if hi == again {
            return (u64::from(hi) << 32) | u64::from(lo);
        }
    }
}

/// Runs a loop of exactly `2 * n` instructions (`n` >= 1): the known
/// amount of work the counter is calibrated against.
pub fn spin(n: u32) {
    // SAFETY: two instructions on a register the asm owns (`n`, clobbered);
    // no memory is touched.
    unsafe {
        core::arch::asm!(
            "2:",
            "addi {n}, {n}, -1",
            "bnez {n}, 2b",
            n = inout(reg) n.max(1) => _,
            options(nomem, nostack, preserves_flags),
        );
    }
}
