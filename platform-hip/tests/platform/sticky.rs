//! A sticky device error (an illegal address) is provoked in a child
//! process; the harness only reads what the child reported.

use streamcore::platform::{
    Access, Binding, DeviceRange, KernelSource, LaunchDims, Platform, PlatformError, Storage,
};

use crate::common::{platform_or_skip, reports, run_child, visible};
use crate::runner::Outcome;

const POKE: KernelSource<'static> = KernelSource {
    name: "poke",
    source: r#"
// Writes through address 0x10, which is never mapped on the device. The
// platform only hands kernels live ranges, so the bad address is made by the
// kernel's own code (its contract, not the platform's, is broken).
extern "C" __global__ void poke(unsigned int* p) {
    unsigned int* bad = (unsigned int*)(((unsigned long long)p & 0xfull) | 0x10ull);
    bad[threadIdx.x] = 0xabcdu;
}
"#,
    bindings: 1,
};

/// Run by `sticky_error_stays_in_the_child` in a child process.
pub fn child_illegal_address() -> Outcome {
    let platform = platform_or_skip().inspect_err(|_| println!("CHILD-REPORT skipped"))?;
    let kernel = platform.load_kernel(&POKE).expect("compile poke");
    let mut stream = platform.create_stream().expect("stream");
    let mut device = platform.device_storage().expect("device storage");
    let page = device.alloc(256).expect("device page");
    let binding = Binding {
        range: DeviceRange {
            page,
            offset: 0,
            len: 256,
        },
        access: Access::Write,
    };
    println!("CHILD-REPORT launching");
    let launched = platform.launch(&mut stream, &kernel, LaunchDims::linear(1, 64), &[binding]);
    let outcome = launched.and_then(|()| {
        let event = platform.record(&mut stream)?;
        platform.synchronize(&event)
    });
    match outcome {
        Ok(()) => println!("CHILD-REPORT fault none"),
        Err(e) => println!(
            "CHILD-REPORT fault kind={:?} call={} name={} status={:?}",
            e.kind(),
            e.call(),
            e.name(),
            e.status()
        ),
    }
    // Sticky: the context accepts no more work.
    match platform.create_stream().and_then(|mut s| {
        let event = platform.record(&mut s)?;
        platform.synchronize(&event)
    }) {
        Ok(()) => println!("CHILD-REPORT after ok"),
        Err(e) => println!("CHILD-REPORT after kind={:?} name={}", e.kind(), e.name()),
    }
    Ok(())
}

pub fn sticky_error_stays_in_the_child() -> Outcome {
    let _platform = platform_or_skip()?;
    let output = run_child("sticky::child_illegal_address", &[], &[]);
    let lines = reports(&output);
    visible(&format!(
        "sticky child: status {:?}, reports {lines:?}",
        output.status
    ));
    assert!(
        lines.iter().any(|l| l == "launching"),
        "child did not get to the launch: {output:?}"
    );
    let fault = lines.iter().find(|l| l.starts_with("fault "));
    match fault {
        Some(fault) => {
            assert!(
                fault.contains("kind=DeviceLost"),
                "fault not classified as DeviceLost: {fault}"
            );
            assert!(fault.contains("name=hipErrorIllegalAddress"), "{fault}");
            assert!(
                lines.iter().any(|l| l.starts_with("after kind=DeviceLost")),
                "the error should be sticky in the child: {lines:?}"
            );
        }
        // ROCm's runtime aborts the process on a GPU memory fault: the child
        // dying after the launch is the other acceptable outcome.
        None => assert!(
            !output.status.success(),
            "child neither reported nor died: {output:?}"
        ),
    }
    // The parent's own device state is untouched.
    let platform = platform_or_skip().expect("parent platform");
    let mut stream = platform.create_stream().unwrap();
    let event = platform.record(&mut stream).unwrap();
    platform.synchronize(&event).unwrap();
    assert!(platform.query(&event).unwrap());
    Ok(())
}
