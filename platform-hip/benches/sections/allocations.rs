//! Section 2: reserve + free, the pool, the `Device` and the driver's allocators.

use crate::common::*;

/// Section 2: reserve + free. Returns Device::alloc+drop / MemoryManager
/// reserve+free at 1 MiB and at 4 KiB (medians).
pub(crate) fn allocations(dev: &Device<HipPlatform>) -> R<(f64, f64)> {
    const OPS: usize = 256;
    const ROUNDS: usize = 40;
    let platform = HipPlatform::new().map_err(e("HipPlatform::new"))?;
    let storage = platform.device_storage().map_err(e("device_storage"))?;
    let mut pool = MemoryManager::new(storage, MemoryLayout::for_device(&platform.properties()));
    let rs = RawStream::new()?;
    // The same device on the spin lock (the default without `std`): how
    // much of the pair is the lock family.
    let spin = device_with_lock::<SpinLock>(1)?;

    println!(
        "\n2. Reserve + free, {OPS} pairs per round, {ROUNDS} rounds \
         (async: one stream sync per round, included)"
    );
    println!("  {:<44} {:>10} {:>10}", "", "median", "fastest");
    let mut ratios = (f64::NAN, f64::NAN);
    for size in [1usize << 20, 4096] {
        let mut s: [Samples; 5] = Default::default();
        interleaved(ROUNDS, 5, |which, counted| {
            let t = Instant::now();
            match which {
                0 => {
                    for _ in 0..OPS {
                        let (h, range) = pool
                            .reserve(size as u64)
                            .map_err(|err| format!("MemoryManager::reserve: {err:?}"))?;
                        black_box(range);
                        pool.free(h)
                            .map_err(|err| format!("MemoryManager::free: {err:?}"))?;
                    }
                }
                1 => {
                    for _ in 0..OPS {
                        let b = dev.alloc(S0, size as u64).map_err(e("Device::alloc"))?;
                        drop(black_box(b));
                    }
                }
                2 => {
                    for _ in 0..OPS {
                        let p = raw::malloc(size)?;
                        raw::free(black_box(p))?;
                    }
                }
                4 => {
                    for _ in 0..OPS {
                        let b = spin.alloc(S0, size as u64).map_err(e("Device::alloc"))?;
                        drop(black_box(b));
                    }
                }
                _ => {
                    for _ in 0..OPS {
                        let p = raw::malloc_async(size, &rs)?;
                        raw::free_async(black_box(p), &rs)?;
                    }
                    rs.sync()?;
                }
            }
            if counted {
                s[which].push(ns(t), OPS);
            }
            Ok(())
        })?;
        let label = if size >= 1 << 20 {
            format!("{} MiB", size >> 20)
        } else {
            format!("{} KiB", size >> 10)
        };
        println!("  at {label}:");
        row(
            "MemoryManager<HipStorage> reserve+free",
            &s[0],
            None,
            "ns/pair",
        );
        row("Device::alloc + drop", &s[1], None, "ns/pair");
        row("Device::alloc + drop (SpinLock)", &s[4], None, "ns/pair");
        row("hipMalloc + hipFree", &s[2], None, "ns/pair");
        row("hipMallocAsync + hipFreeAsync", &s[3], None, "ns/pair");
        for (label, num, den) in [
            ("hipMalloc+hipFree / MemoryManager", 2, 0),
            ("hipMallocAsync+hipFreeAsync / MemoryManager", 3, 0),
            ("hipMallocAsync+hipFreeAsync / Device", 3, 1),
            ("Device::alloc+drop / MemoryManager", 1, 0),
            ("Device::alloc+drop (SpinLock) / MemoryManager", 4, 0),
        ] {
            ratio(label, s[num].median(), s[den].median());
        }
        let r = s[1].median() / s[0].median();
        if size == 1 << 20 {
            ratios.0 = r;
        } else {
            ratios.1 = r;
        }
    }
    dev.sync_all().map_err(e("sync_all"))?;
    spin.sync_all().map_err(e("sync_all"))?;
    Ok(ratios)
}
