//! Section 5: the building blocks of the launch and wait path, per call.

use crate::common::*;

/// Section 5: what the building blocks cost, per call, through the same
/// loader as everything above (profiling data for the launch and wait path).
pub(crate) fn primitives() -> R<()> {
    const OPS: usize = 1000;
    const ROUNDS: usize = 30;
    let platform = HipPlatform::new().map_err(e("HipPlatform::new"))?;
    let mut ps = platform.create_stream().map_err(e("create_stream"))?;
    let rs = RawStream::new()?;
    let reused = RawEvent::new()?;
    reused.record(&rs)?;
    rs.sync()?;
    let passed = platform.record(&mut ps).map_err(e("record"))?;
    platform.synchronize(&passed).map_err(e("synchronize"))?;
    let names = [
        "hipGetDevice",
        "hipSetDevice (same device)",
        "hipEventCreate + hipEventRecord + hipEventDestroy",
        "hipEventRecord (event reused)",
        "hipStreamWaitEvent",
        "hipEventQuery (passed event)",
        "HipPlatform::record + drop",
        "HipPlatform::wait",
        "HipPlatform::query",
        "host: AtomicUsize::fetch_add (uncontended)",
        "host: StdLock mutex lock + unlock",
        "host: ParkingLock mutex lock + unlock (the default)",
        "host: SpinLock mutex lock + unlock",
    ];
    let counter = std::sync::atomic::AtomicUsize::new(0);
    let std_mutex = <<StdLock as RawLock>::Mutex<u64> as LockFamilyMutex<u64>>::new(0);
    let parking_mutex = <<ParkingLock as RawLock>::Mutex<u64> as LockFamilyMutex<u64>>::new(0);
    let spin_mutex = <<SpinLock as RawLock>::Mutex<u64> as LockFamilyMutex<u64>>::new(0);
    let mut s: Vec<Samples> = names.iter().map(|_| Samples::default()).collect();
    interleaved(ROUNDS, names.len(), |which, counted| {
        let t = Instant::now();
        for _ in 0..OPS {
            match which {
                0 => raw::get_device().map(drop)?,
                1 => raw::set_device(platform.device_ordinal())?,
                2 => {
                    let ev = RawEvent::new()?;
                    ev.record(&rs)?;
                    drop(black_box(ev));
                }
                3 => reused.record(&rs)?,
                4 => rs.wait(&reused)?,
                5 => {
                    black_box(reused.query()?);
                }
                6 => {
                    let ev = platform.record(&mut ps).map_err(e("record"))?;
                    drop(black_box(ev));
                }
                7 => platform.wait(&mut ps, &passed).map_err(e("wait"))?,
                8 => {
                    black_box(platform.query(&passed).map_err(e("query"))?);
                }
                9 => {
                    black_box(
                        black_box(&counter).fetch_add(1, std::sync::atomic::Ordering::Relaxed),
                    );
                }
                10 => *LockFamilyMutex::lock(black_box(&std_mutex)) += 1,
                11 => *LockFamilyMutex::lock(black_box(&parking_mutex)) += 1,
                _ => *LockFamilyMutex::lock(black_box(&spin_mutex)) += 1,
            }
        }
        if counted {
            s[which].push(ns(t), OPS);
        }
        rs.sync()?;
        ps.synchronize().map_err(e("synchronize"))?;
        Ok(())
    })?;
    println!("\n5. Building blocks, {OPS} calls per round, {ROUNDS} rounds");
    println!("  {:<52} {:>10} {:>10}", "", "median", "fastest");
    for (name, samples) in names.iter().zip(&s) {
        println!(
            "  {name:<52} {:>10.0} {:>10.0}  ns/call",
            samples.median(),
            samples.min()
        );
    }
    Ok(())
}
