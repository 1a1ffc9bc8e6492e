//! The no_std scenario (`../src/scenario.rs`: the null platform through the
//! whole device API) as a bare-metal Cortex-M4F image. `run.sh` builds it
//! for `thumbv7em-none-eabihf` and runs it under QEMU's `mps2-an386`; the
//! image reports through Arm semihosting and exits QEMU with status 0 only
//! when every part of the scenario passed (1 on a failure, a panic or a
//! fault).
//!
//! No runtime crate: the vector table, the start-up code (zero `.bss`, copy
//! `.data`, enable the FPU the hard-float ABI needs) and the two semihosting
//! calls are written here, so the image holds the core, `alloc` and little
//! else, and its size is the core's.
#![no_std]
#![no_main]

extern crate alloc;

#[path = "../../src/bump.rs"]
mod bump;
#[path = "../../src/scenario.rs"]
mod scenario;

use core::fmt::Write;

/// Heap for the scenario: 1 MiB of the 4 MiB RAM (the scenario peaks
/// near 200 KB; the margin keeps the check about correctness, not budget).
const HEAP_BYTES: usize = 1 << 20;

#[global_allocator]
static HEAP: bump::Bump<HEAP_BYTES> = bump::Bump::new();

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
    fn reset() -> !;
}

/// A fault of any kind ends the run as a failure instead of hanging QEMU.
extern "C" fn fault() -> ! {
    exit(false)
}

/// The exception vectors after the initial stack pointer (which `link.x`
/// writes): reset, then NMI, HardFault, MemManage, BusFault, UsageFault,
/// four reserved, SVCall, DebugMonitor, reserved, PendSV, SysTick.
#[unsafe(link_section = ".vector_table")]
#[unsafe(no_mangle)]
#[used]
static VECTORS: [unsafe extern "C" fn() -> !; 15] = [
    reset, fault, fault, fault, fault, fault, fault, fault, fault, fault, fault, fault, fault,
    fault, fault,
];

/// Arm semihosting `SYS_WRITE0`: print a NUL-terminated string.
const SYS_WRITE0: usize = 0x04;
/// Arm semihosting `SYS_EXIT`.
const SYS_EXIT: usize = 0x18;
/// `SYS_EXIT` reason: the application finished normally (QEMU exits 0).
const ADP_STOPPED_APPLICATION_EXIT: usize = 0x2_0026;
/// `SYS_EXIT` reason: a run-time error (QEMU exits 1).
const ADP_STOPPED_RUN_TIME_ERROR: usize = 0x2_0023;

/// One semihosting call: operation `op`, parameter `arg`.
fn semihost(op: usize, arg: usize) -> usize {
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

fn exit(ok: bool) -> ! {
    let reason = if ok {
        ADP_STOPPED_APPLICATION_EXIT
    } else {
        ADP_STOPPED_RUN_TIME_ERROR
    };
    loop {
        semihost(SYS_EXIT, reason);
    }
}

/// Runs the scenario and exits QEMU with its verdict.
#[unsafe(no_mangle)]
extern "C" fn firmware_main() -> ! {
    let got = scenario::run();
    let ok = got == scenario::ALL_PASSED;
    print(format_args!(
        "firmware scenario on Cortex-M4F: {} ({got}/{} parts); heap peak {} B live, {} B allocated in all, of {} B\n",
        if ok { "ok" } else { "FAILED" },
        scenario::ALL_PASSED,
        HEAP.peak(),
        HEAP.used(),
        HEAP_BYTES,
    ));
    exit(ok)
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    print(format_args!("firmware scenario panicked: {info}\n"));
    exit(false)
}
