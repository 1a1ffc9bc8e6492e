//! RV32IMAC (`riscv32imac-unknown-none-elf`, QEMU `virt`, machine mode,
//! no firmware): the start-up code, the trap vector and the semihosting
//! trap.

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
    la sp, __stack_top
    call firmware_fault
    "#
);

/// Called by `trap` on any exception or interrupt: the run fails.
#[unsafe(no_mangle)]
extern "C" fn firmware_fault() -> ! {
    crate::exit(false)
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
