//! Links `streamcore` into a `#![no_std]` static library that brings its own
//! `#[panic_handler]` and global allocator. If `std` ever sneaks into the
//! core or one of its dependencies, this crate fails to build with a
//! duplicate `panic_impl` lang item.
//!
//! This is the only code outside `platform-hip` with `unsafe`: a global
//! allocator cannot be written without it.
#![no_std]

extern crate alloc;

use core::alloc::{GlobalAlloc, Layout};
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicUsize, Ordering};

use streamcore::device::{Device, DeviceConfig, Launched};
use streamcore::null::Null;
use streamcore::platform::{KernelSource, LaunchDims};
use streamcore::stream::{CaptureState, StreamId, SyncTable, WaitPlan, WriteMark};

const ARENA: usize = 8 << 20;

/// A bump allocator over a static arena; frees are ignored.
struct Bump {
    arena: UnsafeCell<[u8; ARENA]>,
    next: AtomicUsize,
}

// SAFETY: the arena is only handed out in disjoint pieces, claimed through
// the atomic `next`, so sharing between threads cannot alias.
unsafe impl Sync for Bump {}

// SAFETY: `alloc` returns a pointer into the arena that is aligned to
// `layout.align()`, `layout.size()` bytes long, and never handed out again;
// it returns null when the arena is exhausted, as the trait asks.
unsafe impl GlobalAlloc for Bump {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let base = self.arena.get() as usize;
        let mut cur = self.next.load(Ordering::Relaxed);
        loop {
            let start = (base + cur).next_multiple_of(layout.align()) - base;
            let end = match start.checked_add(layout.size()) {
                Some(e) if e <= ARENA => e,
                _ => return core::ptr::null_mut(),
            };
            match self
                .next
                .compare_exchange(cur, end, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return (base + start) as *mut u8,
                Err(seen) => cur = seen,
            }
        }
    }
    unsafe fn dealloc(&self, _ptr: *mut u8, _layout: Layout) {}
}

#[global_allocator]
static HEAP: Bump = Bump {
    arena: UnsafeCell::new([0; ARENA]),
    next: AtomicUsize::new(0),
};

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    loop {}
}

/// Exercises the core so its code is really linked: returns the number of
/// waits a two-stream hand-off needs (1), plus whether a capture sealed (1),
/// plus whether the whole device API ran a cross-stream hand-off, a capture
/// and a replay and released everything (1): 3 when all is well.
#[unsafe(no_mangle)]
pub extern "C" fn streamcore_nostd_smoke() -> u32 {
    sync_and_capture() + u32::from(device_round_trip().is_some())
}

fn device_round_trip() -> Option<()> {
    let device = Device::new(Null, DeviceConfig::with_streams(2)).ok()?;
    let kernel = device
        .load_kernel(&KernelSource {
            name: "k",
            source: "",
            bindings: 3,
        })
        .ok()?;
    let (s0, s1) = (StreamId(0), StreamId(1));
    let a = device.upload(s1, &[1, 2, 3, 4]).ok()?;
    let b = device.alloc(s0, 4).ok()?;
    let dims = LaunchDims::linear(1, 4);
    let ran = device
        .launch(s0, kernel, dims, &[a.read(), b.write()], &[4])
        .ok()?;
    (ran == Launched::Queued && device.stats().waits == 1).then_some(())?;
    let queued = |r: Option<Launched>| (r == Some(Launched::Queued)).then_some(());
    device.prepare(s0).ok()?;
    queued(
        device
            .launch(s0, kernel, dims, &[a.read(), b.write()], &[4])
            .ok(),
    )?;
    device.begin_capture(s0).ok()?;
    queued(
        device
            .launch(s0, kernel, dims, &[a.read(), b.write()], &[4])
            .ok(),
    )?;
    let graph = device.end_capture(s0).ok()?;
    queued(device.replay(&graph).ok())?;
    drop((a, b, graph));
    device.sync_all().ok()?;
    let census = device.census();
    (census.buffers == 0 && census.graphs == 0 && census.deferred == 0).then_some(())
}

fn sync_and_capture() -> u32 {
    let mut table = SyncTable::new(2);
    let producer = StreamId(1);
    let cursor = table.submit(producer).unwrap_or(0);
    let mut plan = WaitPlan::new(2);
    let waits = match table.plan(
        StreamId(0),
        [WriteMark {
            stream: producer,
            cursor,
        }],
        &mut plan,
    ) {
        Ok(()) => plan.len() as u32,
        Err(_) => 0,
    };
    let mut capture = CaptureState::new();
    let sealed = capture
        .prepare()
        .and_then(|()| capture.begin())
        .and_then(|()| capture.end());
    waits + u32::from(sealed.is_ok())
}
