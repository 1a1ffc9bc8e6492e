//! Two devices: every entry point makes its platform's device current, so a
//! platform works from a thread that never touched it, whatever the thread's
//! first call, and two platforms on different devices can share a thread.
//! Skipped with fewer than two devices.

use std::thread;

use streamcore::platform::{
    Access, Binding, DeviceRange, HostStorage, LaunchDims, Platform, Storage,
};

use crate::bounds::TWO;
use crate::common::{drain, host_page, host_range, platform_on, to_words};
use crate::runner::Outcome;

pub fn a_platform_on_device_1_works_from_fresh_threads() -> Outcome {
    let one = platform_on(1)?;
    let zero = platform_on(0)?;
    let kernel = one.load_kernel(&TWO).unwrap();
    let mut device = one.device_storage().unwrap();
    let mut host = one.host_storage().unwrap();
    let mut stream = one.create_stream().unwrap();
    let a = device.alloc(4096).unwrap();
    let b = device.alloc(4096).unwrap();
    let out = host_page(&mut host, &[0u8; 128]);
    let bindings = [a, b].map(|page| Binding {
        range: DeviceRange {
            page,
            offset: 0,
            len: 128,
        },
        access: Access::Write,
    });
    let dims = LaunchDims::linear(1, 32);

    // Each thread is fresh: its current device is the runtime's default (0).
    thread::scope(|s| {
        s.spawn(|| {
            let event = one.record(&mut stream).expect("record as the first call");
            one.synchronize(&event).expect("synchronize");
        })
        .join()
        .expect("record first");
    });
    thread::scope(|s| {
        s.spawn(|| {
            one.launch(&mut stream, &kernel, dims, &bindings)
                .expect("launch as the first call");
            drain(&one, &mut stream);
        })
        .join()
        .expect("launch first");
    });
    thread::scope(|s| {
        s.spawn(|| {
            one.copy_to_host(&mut stream, bindings[0].range, host_range(out, 0, 128))
                .expect("copy as the first call");
            drain(&one, &mut stream);
        })
        .join()
        .expect("copy first");
    });
    let mut back = [0u8; 128];
    host.read(out, 0, &mut back).unwrap();
    assert_eq!(
        to_words(&back),
        vec![7u32; 32],
        "the launch on device 1 ran"
    );

    // One thread alternating between the two devices.
    thread::scope(|s| {
        s.spawn(|| {
            let mut other = zero.create_stream().expect("stream on device 0");
            for _ in 0..3 {
                let e0 = zero.record(&mut other).expect("record on device 0");
                one.launch(&mut stream, &kernel, dims, &bindings)
                    .expect("launch on device 1");
                let e1 = one.record(&mut stream).expect("record on device 1");
                zero.synchronize(&e0).expect("sync device 0");
                one.synchronize(&e1).expect("sync device 1");
            }
        })
        .join()
        .expect("alternating");
    });
    Ok(())
}
