//! The hazard checker: each kind is reported for a racy program, with the
//! two operations and the byte range, and not reported once the program
//! synchronizes properly.

mod common;

use common::*;
use streamcore::platform::{GraphCapture, HostStorage, LaunchDims, Platform, Storage};
use streamcore_mock::{Agent, ByteRange, Hazard, HazardKind, MemoryKind, MockConfig, OpKind};

fn seeds() -> impl Iterator<Item = u64> {
    0..8
}

fn only(h: &[Hazard], kind: HazardKind) -> &Hazard {
    assert_eq!(h.len(), 1, "expected exactly one {kind:?}, got {h:#?}");
    assert_eq!(h[0].kind, kind);
    &h[0]
}

/// Stream 0 fills `buf`; stream 1 copies it out, with or without waiting.
fn write_then_read(seed: u64, synced: bool) -> (Vec<Hazard>, Vec<u32>) {
    let mut r = rig(MockConfig::default().seed(seed));
    let mut s0 = r.stream();
    let mut s1 = r.stream();
    let buf = r.buffer(16);
    let out = r.buffer(16);
    r.fill(&mut s0, buf, 7);
    if synced {
        let e = r.mock.record(&mut s0).unwrap();
        r.mock.wait(&mut s1, &e).unwrap();
    }
    r.mock.copy_device(&mut s1, buf, out).unwrap();
    let got = r.download(&mut s1, out);
    (r.mock.hazards(), got)
}

#[test]
fn unsynchronized_write_then_read_across_streams() {
    // Reported under every seed, whether or not the race bit.
    for seed in seeds() {
        let (h, got) = write_then_read(seed, false);
        let h = only(&h, HazardKind::WriteRead);
        assert_eq!(h.current.agent, Agent::Stream(1));
        assert_eq!(h.current.kind, OpKind::CopyDevice);
        let prev = h.previous.as_ref().unwrap();
        assert_eq!(prev.agent, Agent::Stream(0));
        assert_eq!(prev.kind, OpKind::Kernel("fill".into()));
        assert!(prev.op < h.current.op);
        let b = h.bytes.unwrap();
        assert_eq!((b.memory, b.offset, b.len), (MemoryKind::Device, 0, 64));
        assert!(got == vec![0; 16] || got == vec![7; 16], "{got:?}");
        let (h, got) = write_then_read(seed, true);
        assert!(h.is_empty(), "seed {seed}: {h:#?}");
        assert_eq!(got, vec![7; 16]);
    }
}

#[test]
fn the_race_shows_in_the_data_under_some_seeds() {
    // Uninitialized device bytes read as zero: the reader sees 0 or 7
    // depending on the schedule.
    let seen: std::collections::BTreeSet<u32> =
        (0..32).map(|s| write_then_read(s, false).1[0]).collect();
    assert_eq!(seen, [0, 7].into_iter().collect());
}

#[test]
fn reports_are_byte_range_precise() {
    let mut r = rig(MockConfig::default().seed(1).report_uninitialized(false));
    let mut s0 = r.stream();
    let mut s1 = r.stream();
    let buf = r.buffer(32); // 128 bytes
    let out = r.buffer(32);
    let fill = r.kernel("fill");
    r.mock
        .launch(&mut s0, &fill, fill_dims(1), &[write(dr(buf.page, 0, 64))])
        .unwrap();
    // Disjoint bytes: no hazard.
    r.mock
        .copy_device(&mut s1, dr(buf.page, 64, 64), dr(out.page, 0, 64))
        .unwrap();
    assert!(r.mock.hazards().is_empty());
    // Overlapping bytes 32..64 only.
    r.mock
        .copy_device(&mut s1, dr(buf.page, 32, 64), dr(out.page, 64, 64))
        .unwrap();
    let h = r.mock.hazards();
    let b = only(&h, HazardKind::WriteRead).bytes.unwrap();
    assert_eq!((b.page, b.offset, b.len), (buf.page, 32, 32));
}

fn read_then_write(seed: u64, synced: bool) -> Vec<Hazard> {
    let mut r = rig(MockConfig::default().seed(seed));
    let mut s0 = r.stream();
    let mut s1 = r.stream();
    let buf = r.buffer(8);
    let out = r.buffer(8);
    r.fill(&mut s0, buf, 1);
    let e = r.mock.record(&mut s0).unwrap();
    r.mock.wait(&mut s1, &e).unwrap();
    // Stream 1 reads buf ...
    r.mock.copy_device(&mut s1, buf, out).unwrap();
    if synced {
        let done = r.mock.record(&mut s1).unwrap();
        r.mock.wait(&mut s0, &done).unwrap();
    }
    // ... while stream 0 overwrites it.
    r.fill(&mut s0, buf, 2);
    r.mock.run_until_idle();
    r.mock.hazards()
}

#[test]
fn unsynchronized_read_then_write_across_streams() {
    for seed in seeds() {
        let h = read_then_write(seed, false);
        let h = only(&h, HazardKind::ReadWrite);
        assert_eq!(h.current.kind, OpKind::Kernel("fill".into()));
        assert_eq!(h.current.agent, Agent::Stream(0));
        assert_eq!(h.previous.as_ref().unwrap().kind, OpKind::CopyDevice);
        assert_eq!(h.previous.as_ref().unwrap().agent, Agent::Stream(1));
        assert!(read_then_write(seed, true).is_empty());
    }
}

fn write_write(seed: u64, synced: bool) -> Vec<Hazard> {
    let mut r = rig(MockConfig::default().seed(seed));
    let mut s0 = r.stream();
    let mut s1 = r.stream();
    let buf = r.buffer(8);
    r.fill(&mut s0, buf, 1);
    if synced {
        let e = r.mock.record(&mut s0).unwrap();
        r.mock.synchronize(&e).unwrap(); // a host sync orders later submissions too
    }
    r.fill(&mut s1, dr(buf.page, 16, 16), 2);
    r.mock.run_until_idle();
    r.mock.hazards()
}

#[test]
fn unsynchronized_write_write_across_streams() {
    for seed in seeds() {
        let h = write_write(seed, false);
        let h = only(&h, HazardKind::WriteWrite);
        let b = h.bytes.unwrap();
        assert_eq!((b.offset, b.len), (16, 16));
        assert!(write_write(seed, true).is_empty());
    }
}

#[test]
fn device_access_to_freed_storage() {
    for seed in seeds() {
        // Work queued after dealloc (before and after the flush).
        let mut r = rig(MockConfig::default().seed(seed));
        let mut s = r.stream();
        let buf = r.buffer(4);
        r.fill(&mut s, buf, 1);
        r.dev.dealloc(buf.page);
        let inc = r.kernel("inc");
        r.mock
            .launch(&mut s, &inc, LaunchDims::linear(1, 4), &[read_write(buf)])
            .unwrap();
        r.dev.flush().unwrap();
        r.mock
            .launch(&mut s, &inc, LaunchDims::linear(1, 4), &[read_write(buf)])
            .unwrap();
        r.mock.run_until_idle();
        let h = r.mock.hazards();
        assert_eq!(h.len(), 2, "{h:#?}");
        for h in &h {
            assert_eq!(h.kind, HazardKind::UseAfterFree);
            assert_eq!(h.current.kind, OpKind::Kernel("inc".into()));
            assert_eq!(h.previous.as_ref().unwrap().kind, OpKind::Dealloc);
            assert_eq!(h.bytes.unwrap().page, buf.page);
        }
        // Freed after the last use was synchronized: clean. Work queued
        // before the dealloc is fine even if it has not run yet.
        let mut r = rig(MockConfig::default().seed(seed));
        let mut s = r.stream();
        let buf = r.buffer(4);
        r.fill(&mut s, buf, 1);
        r.mock
            .launch(
                &mut s,
                &inc_of(&r),
                LaunchDims::linear(1, 4),
                &[read_write(buf)],
            )
            .unwrap();
        r.dev.dealloc(buf.page);
        r.dev.flush().unwrap();
        r.mock.assert_no_hazards();
    }
}

fn inc_of(r: &Rig) -> streamcore_mock::MockKernel {
    r.kernel("inc")
}

#[test]
fn reads_of_bytes_nothing_wrote() {
    let mut r = rig(MockConfig::default().seed(2));
    let mut s = r.stream();
    let buf = r.buffer(8);
    let out = r.buffer(8);
    r.fill(&mut s, dr(buf.page, 0, 16), 3);
    r.mock.copy_device(&mut s, buf, out).unwrap();
    let h = r.mock.take_hazards();
    let h = only(&h, HazardKind::UninitializedRead);
    assert!(h.previous.is_none());
    let b = h.bytes.unwrap();
    assert_eq!((b.page, b.offset, b.len), (buf.page, 16, 16));
    // Pinned bytes too: a copy of host bytes nobody wrote.
    let hp = r.host.alloc(8).unwrap();
    r.mock
        .copy_to_device(&mut s, hr(hp, 0, 8), dr(out.page, 0, 8))
        .unwrap();
    let h = r.mock.take_hazards();
    assert_eq!(
        only(&h, HazardKind::UninitializedRead)
            .bytes
            .unwrap()
            .memory,
        MemoryKind::Host
    );
    // Written first: clean.
    r.fill(&mut s, buf, 4);
    r.mock.copy_device(&mut s, buf, out).unwrap();
    r.mock.run_until_idle();
    r.mock.assert_no_hazards();
}

fn host_read_pending(seed: u64, eager: bool, synced: bool) -> Vec<Hazard> {
    let config = if eager {
        MockConfig::default().eager()
    } else {
        MockConfig::default().seed(seed)
    };
    let mut r = rig(config);
    let mut s = r.stream();
    let buf = r.buffer(4);
    r.fill(&mut s, buf, 9);
    let h = r.host.alloc(16).unwrap();
    r.mock.copy_to_host(&mut s, buf, hr(h, 0, 16)).unwrap();
    let e = r.mock.record(&mut s).unwrap();
    if synced {
        r.mock.synchronize(&e).unwrap();
    }
    let mut out = [0u8; 16];
    r.host.read(h, 0, &mut out).unwrap();
    r.mock.hazards()
}

#[test]
fn host_reads_of_bytes_a_pending_copy_will_write() {
    for seed in seeds() {
        let h = host_read_pending(seed, false, false);
        let h = only(&h, HazardKind::HostReadPending);
        assert_eq!(h.current.agent, Agent::Host);
        assert_eq!(h.current.kind, OpKind::HostRead);
        assert_eq!(h.previous.as_ref().unwrap().kind, OpKind::CopyToHost);
        assert_eq!(h.bytes.unwrap().memory, MemoryKind::Host);
        assert!(host_read_pending(seed, false, true).is_empty());
    }
    // Reported even when the copy happened to complete already.
    let h = host_read_pending(0, true, false);
    only(&h, HazardKind::HostReadPending);
}

#[test]
fn a_query_that_answers_true_synchronizes_the_host() {
    let mut r = rig(MockConfig::default().eager());
    let mut s = r.stream();
    let buf = r.buffer(4);
    r.fill(&mut s, buf, 9);
    let h = r.host.alloc(16).unwrap();
    r.mock.copy_to_host(&mut s, buf, hr(h, 0, 16)).unwrap();
    let e = r.mock.record(&mut s).unwrap();
    while !r.mock.query(&e).unwrap() {}
    let mut out = [0u8; 16];
    r.host.read(h, 0, &mut out).unwrap();
    assert_eq!(words_of(&out), vec![9; 4]);
    r.mock.assert_no_hazards();
}

#[test]
fn host_writes_to_bytes_a_pending_copy_still_reads() {
    for synced in [false, true] {
        let mut r = rig(MockConfig::default().lazy());
        let mut s = r.stream();
        let h = r.host.alloc(16).unwrap();
        r.host.write(h, 0, &[1; 16]).unwrap();
        let buf = r.buffer(4);
        r.mock.copy_to_device(&mut s, hr(h, 0, 16), buf).unwrap();
        let e = r.mock.record(&mut s).unwrap();
        if synced {
            r.mock.synchronize(&e).unwrap();
        }
        r.host.write(h, 4, &[2; 4]).unwrap();
        r.mock.run_until_idle();
        let hz = r.mock.hazards();
        if synced {
            assert!(hz.is_empty(), "{hz:#?}");
        } else {
            let hz = only(&hz, HazardKind::HostWritePending);
            assert_eq!(hz.previous.as_ref().unwrap().kind, OpKind::CopyToDevice);
            let b = hz.bytes.unwrap();
            assert_eq!((b.offset, b.len), (4, 4));
            // The lazy schedule let the host overwrite the staging bytes
            // before the copy ran: the device got the new bytes.
            assert_eq!(r.mock.peek(buf).unwrap()[4..8], [2; 4]);
        }
    }
}

#[test]
fn a_host_sync_during_capture_is_a_hazard() {
    let r = rig(MockConfig::default().seed(3));
    let mut s = r.stream();
    let e = r.mock.record(&mut s).unwrap();
    r.mock.begin_capture(&mut s).unwrap();
    assert!(r.mock.synchronize(&e).is_err());
    let h = r.mock.hazards();
    let h = only(&h, HazardKind::SyncDuringCapture);
    assert_eq!(h.current.kind, OpKind::Synchronize);
    assert!(h.bytes.is_none());
}

#[test]
fn double_and_foreign_frees() {
    let mut r = rig(MockConfig::default());
    let buf = r.buffer(4);
    r.dev.dealloc(buf.page);
    r.dev.dealloc(buf.page);
    let h = r.mock.take_hazards();
    let h = only(&h, HazardKind::InvalidFree);
    assert_eq!(h.previous.as_ref().unwrap().kind, OpKind::Dealloc);
    assert_eq!(
        h.bytes,
        Some(ByteRange {
            memory: MemoryKind::Device,
            page: buf.page,
            offset: 0,
            len: 16
        })
    );
    let mut other = r.mock.device_storage().unwrap();
    let p = r.dev.alloc(8).unwrap();
    other.dealloc(p);
    r.host.dealloc(p);
    r.host.dealloc(streamcore::platform::PageId(12345));
    assert_eq!(r.mock.take_hazards().len(), 3);
    assert!(
        other.pending().is_empty(),
        "a refused dealloc is not queued for release"
    );
}

#[test]
fn assert_no_hazards_panics_with_the_reports() {
    let (h, _) = write_then_read(0, false);
    assert!(!h.is_empty());
    let text = h[0].to_string();
    assert!(
        text.contains("WriteRead") && text.contains("kernel `fill`") && text.contains("stream 0"),
        "{text}"
    );
    let r = rig(MockConfig::default());
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut r2 = rig(MockConfig::default());
        let buf = r2.buffer(1);
        r2.dev.dealloc(buf.page);
        r2.dev.dealloc(buf.page);
        r2.mock.assert_no_hazards();
    }));
    assert!(result.is_err());
    r.mock.assert_no_hazards();
}
