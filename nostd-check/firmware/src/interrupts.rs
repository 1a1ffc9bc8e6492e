//! One device called from an interrupt handler and from thread mode at
//! once, on the critical-section lock (`MaskedLock`): the firmware case a
//! spin lock deadlocks (a handler spinning on the lock the thread it
//! interrupted holds).
//!
//! A periodic timer interrupt (SysTick on the Cortex-M4F, the CLINT's
//! machine timer on RV32IMAC) launches on stream 1 at every tick, polls
//! every fourth and allocates and drops a buffer every eighth; meanwhile
//! thread mode runs rounds on stream 0 that read the handler's buffer (the
//! core places the cross-stream waits), allocate and drop, and
//! synchronize. The platform's synchronize is busy for [`WAIT`]
//! instructions, as a GPU still running would keep it: the device holds no
//! lock — so masks no interrupt — across that wait, and the worst
//! interrupt latency stays far below it. The verdict: every launch went
//! through, the device counted each of them once, nothing is left behind,
//! at least nine in ten of the ticks the synchronizations alone span were
//! taken (on the Cortex-M4F the one check of the three that can see a
//! mask held across a wait: SysTick is both its tick and its clock, so the
//! two timings below are modulo the tick period there), and both the
//! worst latency the handler saw and the longest time the
//! device's locks kept interrupts masked (timed by the mask itself) are
//! under a quarter of [`WAIT`].

use core::sync::atomic::{AtomicPtr, AtomicU32, Ordering};

use streamcore::device::{Buffer, Device, DeviceConfig, InterruptMask, KernelId, MaskedLock};
use streamcore::null::{Null, NullError, NullStorage};
use streamcore::platform::{
    Binding, Capabilities, DeviceProperties, DeviceRange, HostRange, KernelSource, LaunchDims,
    NoGraphs, Platform,
};
use streamcore::stream::StreamId;

#[cfg(target_arch = "arm")]
use crate::arm as arch;
#[cfg(target_arch = "riscv32")]
use crate::riscv as arch;

/// Instructions a host synchronization spins for (the GPU still busy).
pub const WAIT: u32 = 50_000;
/// Instructions between two timer interrupts (a prime, so the ticks land
/// at every phase of thread mode's rounds).
const PERIOD: u32 = 7_919;
/// Thread mode's rounds.
const ROUNDS: u32 = 120;
/// Fewest ticks the run must see for its verdict to mean anything.
const MIN_TICKS: u32 = 100;

/// The interrupt mask of this core (`cpsid i` / `csrrci mstatus`).
pub struct Irq;

impl InterruptMask for Irq {
    type Saved = usize;
    fn mask() -> usize {
        let saved = arch::mask_interrupts();
        if arch::was_unmasked(saved) {
            MASKED_AT.store(arch::counter() as u32, Ordering::Relaxed);
        }
        saved
    }
    fn restore(saved: usize) {
        if arch::was_unmasked(saved) {
            let held = arch::counter_since(MASKED_AT.load(Ordering::Relaxed));
            LONGEST_MASK.fetch_max(held, Ordering::Relaxed);
        }
        arch::restore_interrupts(saved);
    }
}

/// The counter when interrupts were last masked from unmasked.
static MASKED_AT: AtomicU32 = AtomicU32::new(0);
/// The longest time interrupts stayed masked by the device's locks, in
/// counter units.
static LONGEST_MASK: AtomicU32 = AtomicU32::new(0);

/// The null platform whose host synchronization takes [`WAIT`]
/// instructions; everything else is the null platform's.
#[derive(Clone, Copy)]
pub struct Busy;

impl Platform for Busy {
    type Stream = ();
    type Event = ();
    type Storage = NullStorage;
    type HostStorage = NullStorage;
    type Capture = NoGraphs;
    type Kernel = ();
    type Error = NullError;

    fn properties(&self) -> DeviceProperties {
        Null.properties()
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities::empty()
    }
    fn create_stream(&self) -> Result<(), NullError> {
        Ok(())
    }
    fn device_storage(&self) -> Result<NullStorage, NullError> {
        Null.device_storage()
    }
    fn host_storage(&self) -> Result<NullStorage, NullError> {
        Null.host_storage()
    }
    fn record(&self, _: &mut ()) -> Result<(), NullError> {
        Ok(())
    }
    fn wait(&self, _: &mut (), _: &()) -> Result<(), NullError> {
        Ok(())
    }
    fn query(&self, _: &()) -> Result<bool, NullError> {
        Ok(true)
    }
    fn synchronize(&self, _: &()) -> Result<(), NullError> {
        WAITS.fetch_add(1, Ordering::Relaxed);
        arch::spin(WAIT / 2);
        Ok(())
    }
    fn copy_to_device(&self, _: &mut (), _: HostRange, _: DeviceRange) -> Result<(), NullError> {
        Ok(())
    }
    fn copy_to_host(&self, _: &mut (), _: DeviceRange, _: HostRange) -> Result<(), NullError> {
        Ok(())
    }
    fn copy_device(&self, _: &mut (), _: DeviceRange, _: DeviceRange) -> Result<(), NullError> {
        Ok(())
    }
    fn load_kernel(&self, _: &KernelSource<'_>) -> Result<(), NullError> {
        Ok(())
    }
    fn launch(&self, _: &mut (), _: &(), _: LaunchDims, _: &[Binding]) -> Result<(), NullError> {
        Ok(())
    }
}

/// Host synchronizations made (each [`WAIT`] instructions long).
static WAITS: AtomicU32 = AtomicU32::new(0);

type Dev = Device<Busy, MaskedLock<Irq>>;

/// What the interrupt handler reaches, and what it counts.
struct Shared {
    device: Dev,
    fill: KernelId,
    out: Buffer,
    ticks: AtomicU32,
    launched: AtomicU32,
    failed: AtomicU32,
    worst: AtomicU32,
    best: AtomicU32,
}

/// The handler's view; null until thread mode has set it up.
static SHARED: AtomicPtr<Shared> = AtomicPtr::new(core::ptr::null_mut());

fn shared() -> Option<&'static Shared> {
    let p = SHARED.load(Ordering::Acquire);
    // SAFETY: the pointer is null or comes from `Box::leak` in `run` (a
    // `Shared` that is never freed or moved, so `'static`); every field the
    // handler uses is shared safely (the device behind its masked lock,
    // the rest atomics).
    unsafe { p.as_ref() }
}

const STREAM_IRQ: StreamId = StreamId(1);
const STREAM_MAIN: StreamId = StreamId(0);
const BYTES: u64 = 256;

fn dims() -> LaunchDims {
    LaunchDims::linear(1, 64)
}

/// The timer interrupt: `latency` counter units since the tick was due.
pub fn on_tick(latency: u32) {
    let Some(s) = shared() else {
        return;
    };
    let tick = s.ticks.fetch_add(1, Ordering::Relaxed) + 1;
    s.worst.fetch_max(latency, Ordering::Relaxed);
    s.best.fetch_min(latency, Ordering::Relaxed);
    let d = &s.device;
    let ok = d
        .launch(
            STREAM_IRQ,
            s.fill,
            dims(),
            &[s.out.write()],
            &[BYTES / 4, u64::from(tick % 4)],
        )
        .is_ok();
    let counter = if ok { &s.launched } else { &s.failed };
    counter.fetch_add(1, Ordering::Relaxed);
    if tick % 4 == 0 && d.poll().is_err() {
        s.failed.fetch_add(1, Ordering::Relaxed);
    }
    if tick % 8 == 0 {
        match d.alloc(STREAM_IRQ, BYTES) {
            Ok(b) => drop(b),
            Err(_) => {
                s.failed.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// What [`run`] found.
pub struct Report {
    /// Timer interrupts taken.
    pub ticks: u32,
    /// Those the thread's host synchronizations alone spanned (at least
    /// nine in ten must be taken).
    pub spanned: u64,
    /// Launches the handler made, and thread mode's.
    pub irq_launches: u32,
    pub main_launches: u32,
    /// The longest and shortest time from a tick's due time to its
    /// handler, in instructions (counter units converted by the
    /// calibration; QEMU's `-icount` makes them exact, to a unit).
    pub worst: u32,
    pub best: u32,
    /// The longest time the device's locks kept interrupts masked, in
    /// instructions.
    pub longest_mask: u32,
    /// The longest mask while the device was set up (kernels loaded, the
    /// streams' first allocations), before the ticks started.
    pub setup_mask: u32,
    /// Whether every check passed.
    pub ok: bool,
}

/// Runs the scenario; `units_per_1000` is the counter's calibration
/// (`cost.rs`: counter units per 1,000 instructions). `None` if the device
/// could not be set up.
pub fn run(units_per_1000: u64) -> Option<Report> {
    // Interrupts on (no source enabled yet), so the setup's masks are timed.
    arch::enable_interrupts();
    let per = units_per_1000.max(1);
    let to_instructions =
        |units: u32| (u64::from(units) * 1000 / per).min(u64::from(u32::MAX)) as u32;
    let device = Dev::with_lock(Busy, DeviceConfig::with_streams(2)).ok()?;
    let kernel = |bindings| {
        device
            .load_kernel(&KernelSource {
                name: "k",
                source: "",
                bindings,
            })
            .ok()
    };
    let (fill, acc) = (kernel(2)?, kernel(3)?);
    let out = device.alloc(STREAM_IRQ, BYTES).ok()?;
    // Both streams made and their pools grown before the ticks start: a
    // stream's creation and first pages are one long piece of bookkeeping
    // (reported apart, as the setup's mask).
    let warm = device.alloc(STREAM_MAIN, BYTES).ok()?;
    let args = [out.read(), warm.read_write()];
    let _ = device
        .launch(STREAM_MAIN, acc, dims(), &args, &[BYTES / 4])
        .ok()?;
    drop(warm);
    device.sync_all().ok()?;
    let launches_before = device.stats().launches;
    let waits_before = WAITS.load(Ordering::Relaxed);
    let shared: &'static Shared = alloc::boxed::Box::leak(alloc::boxed::Box::new(Shared {
        device: device.clone(),
        fill,
        out: out.clone(),
        ticks: AtomicU32::new(0),
        launched: AtomicU32::new(0),
        failed: AtomicU32::new(0),
        worst: AtomicU32::new(0),
        best: AtomicU32::new(u32::MAX),
    }));
    SHARED.store((shared as *const Shared).cast_mut(), Ordering::Release);
    // On the Cortex-M4F, masks measured from here on are modulo the tick
    // period (SysTick is the tick): the one measured while setting up (the
    // counter at its largest reload) is kept apart.
    let setup_mask = to_instructions(LONGEST_MASK.swap(0, Ordering::Relaxed));
    arch::start_ticks((u64::from(PERIOD) * per / 1000).max(1) as u32);
    let (mut main_launches, mut main_failed) = (0u32, 0u32);
    for round in 0..ROUNDS {
        let mut launched = |r: Result<_, _>| match r {
            Ok(_) => main_launches += 1,
            Err(_) => main_failed += 1,
        };
        match device.alloc(STREAM_MAIN, BYTES) {
            Ok(b) => {
                let info = [BYTES / 4, u64::from(round % 4)];
                launched(device.launch(STREAM_MAIN, fill, dims(), &[b.write()], &info));
                let args = [out.read(), b.read_write()];
                launched(device.launch(STREAM_MAIN, acc, dims(), &args, &[BYTES / 4]));
            }
            Err(_) => main_failed += 1,
        }
        let synced = if round % 10 == 9 {
            device.sync_all().is_ok()
        } else if round % 5 == 4 {
            device.sync(STREAM_MAIN).is_ok()
        } else {
            true
        };
        if !synced {
            main_failed += 1;
        }
    }
    arch::stop_ticks();
    let ticks = shared.ticks.load(Ordering::Relaxed);
    // The ticks the waits alone spanned: were interrupts masked across a
    // wait, its ticks would be lost (one taken at the end at most), however
    // the mask's own timing aliases against the tick period.
    let waits = WAITS.load(Ordering::Relaxed) - waits_before;
    let spanned = u64::from(waits) * u64::from(WAIT) / u64::from(PERIOD);
    let irq_launches = shared.launched.load(Ordering::Relaxed);
    let failed = shared.failed.load(Ordering::Relaxed) + main_failed;
    let worst = to_instructions(shared.worst.load(Ordering::Relaxed));
    let best = to_instructions(shared.best.load(Ordering::Relaxed));
    let longest_mask = to_instructions(LONGEST_MASK.load(Ordering::Relaxed));
    let launches = device.stats().launches - launches_before;
    drop(out);
    let settled = device.sync_all().is_ok();
    // The handler's clones stay with `Shared`: only thread mode's buffers
    // must be gone.
    let buffers = device.census().buffers;
    let ok = failed == 0
        && ticks >= MIN_TICKS
        && u64::from(ticks) >= spanned * 9 / 10
        && irq_launches == ticks
        && launches == u64::from(irq_launches) + u64::from(main_launches)
        && settled
        && buffers == 1
        && worst < WAIT / 4
        && longest_mask < WAIT / 4;
    Some(Report {
        ticks,
        spanned,
        irq_launches,
        main_launches,
        worst,
        best,
        longest_mask,
        setup_mask,
        ok,
    })
}
