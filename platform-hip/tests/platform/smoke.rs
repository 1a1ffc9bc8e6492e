//! Streams, events, properties and copies.

use streamcore::platform::HostStorage;
use streamcore::platform::{DeviceRange, Platform, Storage};

use streamcore_hip::{HipDeviceStorage, HipHostStorage, HipPlatform, HipStream};

use crate::common::{drain, host_page, host_range, platform_or_skip, visible, words};
use crate::runner::Outcome;

pub fn properties_come_from_the_driver() -> Outcome {
    let platform = platform_or_skip()?;
    let p = platform.properties();
    visible(&format!(
        "device {}: {} bytes, max page {}, alignment {}, integrated {}",
        platform.device_name(),
        p.total_memory,
        p.max_page_size,
        p.alignment,
        p.integrated
    ));
    assert!(p.total_memory > 0);
    assert!(p.alignment.is_power_of_two() && p.alignment >= 256);
    assert!(p.max_page_size <= p.total_memory && p.max_page_size % p.alignment == 0);
    assert!(!platform.device_name().is_empty());
    // Discrete data-centre parts: a wrong attribute number (CUDA's 16 is the
    // multiprocessor count, HIP's 16 is Integrated) would read `true` here.
    let name = platform.device_name();
    if ["H100", "H200", "A100", "MI210", "MI250", "MI300X"]
        .iter()
        .any(|m| name.contains(m))
    {
        assert!(!p.integrated, "{name} is a discrete GPU");
    }
    Ok(())
}

pub fn events_pass_and_stay_passed() -> Outcome {
    let platform = platform_or_skip()?;
    let mut stream = platform.create_stream().unwrap();
    let event = platform.record(&mut stream).unwrap();
    platform.synchronize(&event).unwrap();
    assert!(platform.query(&event).unwrap());
    assert!(
        platform.query(&event).unwrap(),
        "once passed, always passed"
    );
    // A second event on the same stream, polled until it passes.
    let second = platform.record(&mut stream).unwrap();
    let mut polls = 0u64;
    while !platform.query(&second).unwrap() {
        polls += 1;
        assert!(polls < 100_000_000, "an empty stream's event never passed");
    }
    drop(event);
    drop(second);
    Ok(())
}

pub fn round_trip_through_device_with_offsets() -> Outcome {
    let platform = platform_or_skip()?;
    let len = 1 << 20;
    let mut host = platform.host_storage().unwrap();
    let mut device = platform.device_storage().unwrap();
    let mut stream = platform.create_stream().unwrap();

    let mut input = vec![0u8; len + 100];
    input[100..].copy_from_slice(&words(len / 4, |i| i.wrapping_mul(2_654_435_761)));
    let src = host_page(&mut host, &input);
    let out = host_page(&mut host, &vec![0u8; len]);
    let a = device.alloc(len as u64 + 256).unwrap();
    let b = device.alloc(len as u64).unwrap();

    let dev_a = DeviceRange {
        page: a,
        offset: 256,
        len: len as u64,
    };
    let dev_b = DeviceRange {
        page: b,
        offset: 0,
        len: len as u64,
    };
    platform
        .copy_to_device(&mut stream, host_range(src, 100, len as u64), dev_a)
        .unwrap();
    platform.copy_device(&mut stream, dev_a, dev_b).unwrap();
    platform
        .copy_to_host(&mut stream, dev_b, host_range(out, 0, len as u64))
        .unwrap();
    drain(&platform, &mut stream);

    let mut back = vec![0u8; len];
    host.read(out, 0, &mut back).unwrap();
    assert!(back == input[100..], "bytes changed on the round trip");
    Ok(())
}

/// The set-up of the cross-stream tests: pinned host storage, a producer
/// and a consumer stream, and one device page of `len` bytes (`whole`).
struct Pair {
    host: HipHostStorage,
    /// Held for `whole`'s page (dropping the storage frees it).
    _device: HipDeviceStorage,
    producer: HipStream,
    consumer: HipStream,
    whole: DeviceRange,
}

impl Pair {
    fn new(platform: &HipPlatform, len: usize) -> Self {
        let host = platform.host_storage().unwrap();
        let mut device = platform.device_storage().unwrap();
        let producer = platform.create_stream().unwrap();
        let consumer = platform.create_stream().unwrap();
        let page = device.alloc(len as u64).unwrap();
        Self {
            host,
            _device: device,
            producer,
            consumer,
            whole: DeviceRange {
                page,
                offset: 0,
                len: len as u64,
            },
        }
    }
}

pub fn wait_orders_work_across_streams() -> Outcome {
    let platform = platform_or_skip()?;
    let len: usize = 64 << 20;
    let mut p = Pair::new(&platform, len);

    let input = words(len / 4, |i| i ^ 0x5a5a_5a5a);
    let src = host_page(&mut p.host, &input);
    let out = host_page(&mut p.host, &vec![0u8; len]);

    platform
        .copy_to_device(&mut p.producer, host_range(src, 0, len as u64), p.whole)
        .unwrap();
    let written = platform.record(&mut p.producer).unwrap();
    platform.wait(&mut p.consumer, &written).unwrap();
    platform
        .copy_to_host(&mut p.consumer, p.whole, host_range(out, 0, len as u64))
        .unwrap();
    let done = platform.record(&mut p.consumer).unwrap();
    platform.synchronize(&done).unwrap();
    assert!(
        platform.query(&written).unwrap(),
        "the waited-on event passed first"
    );

    let mut back = vec![0u8; len];
    p.host.read(out, 0, &mut back).unwrap();
    assert!(
        back == input,
        "the consumer read before the producer's copy landed"
    );
    Ok(())
}

pub fn a_wait_keeps_its_record_when_the_event_is_reused() -> Outcome {
    // Dropped events stay in the thread's idle cache and the next record
    // re-records one: a wait queued before must still wait for the record
    // it saw, not the new one.
    let platform = platform_or_skip()?;
    let len: usize = 64 << 20;
    let mut p = Pair::new(&platform, len);
    let mut idle = platform.create_stream().unwrap();
    let src = host_page(&mut p.host, &vec![0u8; len]);
    let out = host_page(&mut p.host, &vec![0u8; len]);
    for round in 1..=3u32 {
        // Different bytes each round, so a stale read shows.
        let input = words(len / 4, |i| i.wrapping_mul(0x9e37_79b9) ^ round);
        p.host.write(src, 0, &input).unwrap();
        platform
            .copy_to_device(&mut p.producer, host_range(src, 0, len as u64), p.whole)
            .unwrap();
        let written = platform.record(&mut p.producer).unwrap();
        platform.wait(&mut p.consumer, &written).unwrap();
        drop(written);
        // Very likely the same driver event, re-recorded on an idle stream
        // where it passes at once.
        let reused = platform.record(&mut idle).unwrap();
        platform.synchronize(&reused).unwrap();
        platform
            .copy_to_host(&mut p.consumer, p.whole, host_range(out, 0, len as u64))
            .unwrap();
        drain(&platform, &mut p.consumer);
        let mut back = vec![0u8; len];
        p.host.read(out, 0, &mut back).unwrap();
        assert!(back == input, "the consumer did not wait for the producer");
        p.host.write(out, 0, &vec![0u8; len]).unwrap();
        drain(&platform, &mut p.producer);
    }
    Ok(())
}
