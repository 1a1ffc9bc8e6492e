//! Capture → graph → replay, and the capture rules.

use streamcore::platform::{
    DeviceRange, ErrorKind, GraphCapture, HostStorage, Platform, PlatformError, Storage,
};

use crate::common::{drain, host_page, host_range, platform_or_skip, to_words, words};
use crate::kernel::{AddRig, add_bindings, add_dims};
use crate::runner::Outcome;

pub fn captured_graph_replays_with_fresh_inputs() -> Outcome {
    let platform = platform_or_skip()?;
    let n: u64 = 4099;
    let bytes = n * 4;
    let AddRig {
        kernel,
        mut host,
        device: _device,
        mut stream,
        page,
    } = AddRig::new(&platform, n);
    let bindings = add_bindings(page, n);

    // Inputs a, b and info staged in one pinned page; out in another.
    let inputs = host_page(&mut host, &vec![0u8; (2 * bytes + 4) as usize]);
    host.write(inputs, 2 * bytes, &(n as u32).to_le_bytes())
        .unwrap();
    let sentinel = words(n as usize, |_| u32::MAX);
    let out = host_page(&mut host, &sentinel);
    let staged = host_range(inputs, 0, 2 * bytes);
    let info = host_range(inputs, 2 * bytes, 4);

    platform.begin_capture(&mut stream).unwrap();
    assert!(platform.is_capturing());
    platform
        .copy_to_device(
            &mut stream,
            staged,
            DeviceRange {
                page,
                offset: 0,
                len: 2 * bytes,
            },
        )
        .unwrap();
    platform
        .copy_to_device(&mut stream, info, bindings[3].range)
        .unwrap();
    platform
        .launch(&mut stream, &kernel, add_dims(n), &bindings)
        .unwrap();
    platform
        .copy_to_host(&mut stream, bindings[2].range, host_range(out, 0, bytes))
        .unwrap();
    let graph = platform.end_capture(&mut stream).unwrap();
    assert!(!platform.is_capturing());

    // Captured work was recorded, not run.
    drain(&platform, &mut stream);
    let mut back = vec![0u8; bytes as usize];
    host.read(out, 0, &mut back).unwrap();
    assert!(back == sentinel, "work ran during the capture");

    for round in 1..=3u32 {
        host.write(inputs, 0, &words(n as usize, |i| i * round))
            .unwrap();
        host.write(inputs, bytes, &words(n as usize, |i| i + 1000 * round))
            .unwrap();
        platform.launch_graph(&mut stream, &graph).unwrap();
        drain(&platform, &mut stream);
        host.read(out, 0, &mut back).unwrap();
        let sums = to_words(&back);
        for (i, &s) in sums.iter().enumerate() {
            let i = i as u32;
            assert_eq!(s, i * round + i + 1000 * round, "round {round}, word {i}");
        }
    }
    platform.destroy_graph(graph).unwrap();
    Ok(())
}

pub fn host_sync_during_capture_is_refused_and_invalidates_it() -> Outcome {
    let platform = platform_or_skip()?;
    let mut host = platform.host_storage().unwrap();
    let mut device = platform.device_storage().unwrap();
    let mut other = platform.create_stream().unwrap();
    let mut stream = platform.create_stream().unwrap();
    let before = platform.record(&mut other).unwrap();
    let h = host_page(&mut host, &[1u8; 4096]);
    let d = device.alloc(4096).unwrap();
    let whole = DeviceRange {
        page: d,
        offset: 0,
        len: 4096,
    };

    platform.begin_capture(&mut stream).unwrap();
    platform
        .copy_to_device(&mut stream, host_range(h, 0, 4096), whole)
        .unwrap();
    // Non-blocking polls stay legal during a capture.
    let _ = platform.query(&before).unwrap();
    let err = platform.synchronize(&before).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::CaptureUnsupported, "{err}");
    let err = platform.end_capture(&mut stream).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::CaptureInvalidated, "{err}");
    assert!(!stream.is_capturing() && !platform.is_capturing());

    // The stream is usable again, eagerly.
    platform.synchronize(&before).unwrap();
    platform
        .copy_to_host(&mut stream, whole, host_range(h, 0, 4096))
        .unwrap();
    drain(&platform, &mut stream);
    Ok(())
}

pub fn capture_calls_out_of_order_are_rejected() -> Outcome {
    let platform = platform_or_skip()?;
    let mut stream = platform.create_stream().unwrap();
    let err = platform.end_capture(&mut stream).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidValue, "{err}");
    platform.begin_capture(&mut stream).unwrap();
    let err = platform.begin_capture(&mut stream).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidValue, "{err}");
    // An empty capture seals into an (empty) graph that replays.
    let graph = platform.end_capture(&mut stream).unwrap();
    platform.launch_graph(&mut stream, &graph).unwrap();
    drain(&platform, &mut stream);
    platform.destroy_graph(graph).unwrap();
    Ok(())
}

pub fn dropping_a_capturing_stream_ends_its_capture() -> Outcome {
    let platform = platform_or_skip()?;
    let mut stream = platform.create_stream().unwrap();
    platform.begin_capture(&mut stream).unwrap();
    assert!(platform.is_capturing());
    drop(stream);
    assert!(!platform.is_capturing());
    let mut fresh = platform.create_stream().unwrap();
    drain(&platform, &mut fresh);
    Ok(())
}

pub fn storage_flush_during_capture_is_deferred() -> Outcome {
    let platform = platform_or_skip()?;
    let mut device = platform.malloc_storage();
    let page = device.alloc(4096).unwrap();
    device.dealloc(page);
    let mut stream = platform.create_stream().unwrap();
    platform.begin_capture(&mut stream).unwrap();
    let inside = platform.record(&mut stream).unwrap();
    assert!(inside.is_captured());
    device.flush().unwrap();
    assert_eq!(
        device.pending_pages(),
        1,
        "a free inside a capture must wait"
    );
    let graph = platform.end_capture(&mut stream).unwrap();
    // Observation only (drivers differ on events recorded inside a capture).
    crate::common::visible(&format!(
        "query of an event recorded inside the capture, after it ended: {:?}",
        platform.query(&inside).map_err(|e| e.to_string())
    ));
    device.flush().unwrap();
    assert_eq!(device.pending_pages(), 0);
    platform.destroy_graph(graph).unwrap();
    Ok(())
}
