//! Links `streamcore` into a `#![no_std]` static library that brings its own
//! `#[panic_handler]` and global allocator. If `std` ever sneaks into the
//! core or one of its dependencies, this crate fails to build with a
//! duplicate `panic_impl` lang item.
//!
//! The scenario it runs (`scenario.rs`) is the one the Cortex-M image in
//! `firmware/` runs under QEMU.
//!
//! This is the only code outside `platform-hip` with `unsafe` (besides the
//! firmware image's start-up): a global allocator cannot be written without
//! it.
#![no_std]

extern crate alloc;

mod bump;
mod scenario;

#[global_allocator]
static HEAP: bump::Bump<{ 8 << 20 }> = bump::Bump::new();

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    loop {}
}

/// Exercises the core so its code is really linked: returns what
/// [`streamcore_nostd_expected`] returns when all is well.
#[unsafe(no_mangle)]
pub extern "C" fn streamcore_nostd_smoke() -> u32 {
    scenario::run()
}

/// What [`streamcore_nostd_smoke`] returns when every part passed.
#[unsafe(no_mangle)]
pub extern "C" fn streamcore_nostd_expected() -> u32 {
    scenario::ALL_PASSED
}

/// The most heap bytes live at one time so far.
#[unsafe(no_mangle)]
pub extern "C" fn streamcore_nostd_heap_peak() -> usize {
    HEAP.peak()
}

/// Heap bytes handed out so far (the bump allocator does not reuse frees).
#[unsafe(no_mangle)]
pub extern "C" fn streamcore_nostd_heap_used() -> usize {
    HEAP.used()
}
