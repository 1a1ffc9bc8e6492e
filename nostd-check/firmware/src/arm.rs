//! Cortex-M4F (`thumbv7em-none-eabihf`, QEMU `mps2-an386`): the vector
//! table, the start-up code and the semihosting trap.

// The reset handler: zero `.bss`, copy `.data` from its load address, grant
// full access to the FPU coprocessors (CPACR CP10/CP11), then call
// `firmware_main`. Written in assembly because no Rust code may run before
// statics are initialized.
core::arch::global_asm!(
    r#"
    .section .text.reset,"ax",%progbits
    .global reset
    .type reset,%function
    .thumb_func
reset:
    ldr r0, =__sbss
    ldr r1, =__ebss
    movs r2, #0
0:  cmp r0, r1
    bhs 1f
    str r2, [r0], #4
    b 0b
1:  ldr r0, =__sdata
    ldr r1, =__edata
    ldr r2, =__sidata
2:  cmp r0, r1
    bhs 3f
    ldr r3, [r2], #4
    str r3, [r0], #4
    b 2b
3:  ldr r0, =0xE000ED88
    ldr r1, [r0]
    orr r1, r1, #0xF00000
    str r1, [r0]
    dsb
    isb
    bl firmware_main
    b .
    .ltorg
    "#
);

unsafe extern "C" {
    fn reset();
}

/// A fault of any kind ends the run as a failure instead of hanging QEMU.
extern "C" fn fault() {
    crate::exit(false)
}

/// SysTick's exception: the interrupt scenario's timer tick. Its latency is
/// how far the counter has run down since it wrapped (when the tick became
/// due).
extern "C" fn systick() {
    // SAFETY: a word read of SysTick's current value register (see
    // `start_counter`); reading has no side effect.
    let current = unsafe { core::ptr::read_volatile(SYST_CVR) };
    // SAFETY: as above, the reload register.
    let reload = unsafe { core::ptr::read_volatile(SYST_RVR) };
    // The tick became due as the counter reached 0; it reloads on the next
    // count and runs down from there.
    let elapsed = if current == 0 {
        0
    } else {
        reload - current + 1
    };
    crate::interrupts::on_tick(elapsed);
}

/// The exception vectors after the initial stack pointer (which `link.x`
/// writes): reset, then NMI, HardFault, MemManage, BusFault, UsageFault,
/// four reserved, SVCall, DebugMonitor, reserved, PendSV, SysTick.
#[unsafe(link_section = ".vector_table")]
#[unsafe(no_mangle)]
#[used]
static VECTORS: [unsafe extern "C" fn(); 15] = [
    reset, fault, fault, fault, fault, fault, fault, fault, fault, fault, fault, fault, fault,
    fault, systick,
];

/// Masks interrupts (`cpsid i`) and returns the PRIMASK from before.
pub fn mask_interrupts() -> usize {
    let primask: u32;
    // SAFETY: reads PRIMASK and sets it; the image runs privileged, where
    // both are allowed. No memory is touched; the compiler must not move
    // memory accesses across the mask (no `nomem`).
    unsafe {
        core::arch::asm!("mrs {0}, PRIMASK", "cpsid i", out(reg) primask, options(nostack, preserves_flags));
    }
    primask as usize
}

/// Enables interrupts (`cpsie i`; PRIMASK is clear from reset already).
pub fn enable_interrupts() {
    // SAFETY: clears PRIMASK (privileged); the only exception source the
    // image enables is SysTick, served by `systick`.
    unsafe {
        core::arch::asm!("cpsie i", options(nostack, preserves_flags));
    }
}

/// Whether a PRIMASK `mask_interrupts` returned had interrupts enabled.
pub fn was_unmasked(saved: usize) -> bool {
    saved & 1 == 0
}

/// Counter units from `from` (a `counter()` value read while the ticks run)
/// to now: SysTick counts down from its reload, so the distance is taken
/// modulo the reload period.
pub fn counter_since(from: u32) -> u32 {
    // SAFETY: a word read of SysTick's reload register; no side effect.
    let reload = unsafe { core::ptr::read_volatile(SYST_RVR) };
    let period = u64::from(reload) + 1;
    // Back to the current-value register's readings (both below `period`).
    let (was, is) = (COUNTER_MASK - u64::from(from), COUNTER_MASK - counter());
    ((was + period - is) % period) as u32
}

/// Puts back the PRIMASK `mask_interrupts` returned.
pub fn restore_interrupts(saved: usize) {
    // SAFETY: writes PRIMASK (privileged, as above) with a value read from
    // it; memory accesses stay on their side (no `nomem`).
    unsafe {
        core::arch::asm!("msr PRIMASK, {0}", in(reg) saved as u32, options(nostack, preserves_flags));
    }
}

/// Starts SysTick's interrupt every `period` counter units (the processor
/// clock, as `counter` counts).
pub fn start_ticks(period: u32) {
    // SAFETY: SysTick's registers (see `start_counter`); TICKINT set: the
    // vector table's SysTick entry is `systick`, which returns.
    unsafe {
        core::ptr::write_volatile(SYST_CSR, 0);
        core::ptr::write_volatile(SYST_RVR, period.clamp(1, COUNTER_MASK as u32) - 1);
        core::ptr::write_volatile(SYST_CVR, 0);
        core::ptr::write_volatile(SYST_CSR, 0b111);
    }
}

/// Stops SysTick's interrupt (the counter keeps running from its largest
/// reload, as `start_counter` left it).
pub fn stop_ticks() {
    // SAFETY: as `start_counter`: no TICKINT, so no more exceptions.
    unsafe {
        core::ptr::write_volatile(SYST_CSR, 0);
    }
    start_counter();
}

/// One semihosting call: operation `op`, parameter `arg`.
pub fn semihost(op: usize, arg: usize) -> usize {
    let ret;
    // SAFETY: `bkpt 0xAB` is the Armv7-M semihosting trap; QEMU (started with
    // semihosting enabled) services it and returns. The operations used here
    // read only what `arg` points to (a live NUL-terminated buffer for
    // SYS_WRITE0) or take it by value (SYS_EXIT), and clobber only r0.
    unsafe {
        core::arch::asm!(
            "bkpt 0xAB",
            inout("r0") op => ret,
            in("r1") arg,
            options(nostack, preserves_flags),
        );
    }
    ret
}

/// SysTick's control and status register (Armv7-M system control space).
const SYST_CSR: *mut u32 = 0xE000_E010 as *mut u32;
/// SysTick's reload value register.
const SYST_RVR: *mut u32 = 0xE000_E014 as *mut u32;
/// SysTick's current value register (counts down; a write clears it).
const SYST_CVR: *mut u32 = 0xE000_E018 as *mut u32;

/// The bits [`counter`] keeps: SysTick is a 24-bit down-counter.
pub const COUNTER_MASK: u64 = 0x00FF_FFFF;

/// Starts SysTick on the processor clock from its largest reload, without
/// its interrupt. Under QEMU with `-icount`, the processor clock advances
/// with the instructions executed.
pub fn start_counter() {
    // SAFETY: the three SysTick registers exist on every Armv7-M core at
    // these addresses and take word writes; the image runs privileged (it
    // never leaves thread mode's privileged state). TICKINT stays 0, so no
    // exception is ever raised (its vector would end the run).
    unsafe {
        core::ptr::write_volatile(SYST_RVR, COUNTER_MASK as u32);
        core::ptr::write_volatile(SYST_CVR, 0);
        core::ptr::write_volatile(SYST_CSR, 0b101);
    }
}

/// SysTick ticks since [`start_counter`], modulo 2^24 (see [`COUNTER_MASK`]).
pub fn counter() -> u64 {
    // SAFETY: a word read of SysTick's current value register (see
    // `start_counter`); reading has no side effect.
    let current = unsafe { core::ptr::read_volatile(SYST_CVR) };
    COUNTER_MASK - u64::from(current)
}

/// Runs a loop of exactly `2 * n` instructions (`n` >= 1): the known
/// amount of work the counter is calibrated against.
pub fn spin(n: u32) {
    // SAFETY: two instructions on a register the asm owns (`n`, clobbered);
    // no memory is touched; the flags are clobbered (not preserved).
    unsafe {
        core::arch::asm!(
            "2:",
            "subs {n}, {n}, #1",
            "bne 2b",
            n = inout(reg) n.max(1) => _,
            options(nomem, nostack),
        );
    }
}
