//! The scenarios, each generic over a [`Harness`]. A scenario panics (test
//! failure) when the device misbehaves and returns [`Skip`] when the
//! platform lacks what it needs.

use streamcore::device::{Device, KernelId, Launched};
use streamcore::error::Error;
use streamcore::memory::{MemoryError, MemoryLayout};
use streamcore::platform::Platform;
use streamcore::stream::{CaptureError, DoomReason, StreamId};

use crate::harness::{Capability, Harness, Setup, Skip, failing_dims};
use crate::kernels::{self, bytes, dims, words};

mod faults;
mod threads;
pub use faults::{
    a_refused_cross_stream_wait_never_runs_unordered, a_refused_fence_keeps_staging_busy,
    a_refused_host_wait_is_typed_and_the_next_settles, a_refused_info_upload_is_not_cached,
    a_refused_kernel_load_is_typed, a_refused_launch_claims_its_outputs,
    a_refused_poll_keeps_its_frees_for_the_next,
    a_stream_the_platform_cannot_make_is_made_on_the_next_use,
    refused_capture_calls_leave_the_stream_usable, refused_copies_are_typed_and_retried,
    refused_memory_is_retried_or_typed,
};
pub use threads::{threads_share_one_device, two_devices_from_their_own_threads};

const S0: StreamId = StreamId(0);
const S1: StreamId = StreamId(1);

fn need<H: Harness>(h: &H, c: Capability) -> Result<(), Skip> {
    if h.supports(c) {
        Ok(())
    } else {
        Err(Skip(format!("{} cannot {c:?}", h.name())))
    }
}

fn load<P: Platform>(d: &Device<P>, k: &streamcore::platform::KernelSource<'static>) -> KernelId
where
    P::Error: std::fmt::Debug,
{
    d.load_kernel(k)
        .unwrap_or_else(|e| panic!("loading {}: {e:?}", k.name))
}

/// Asserts that a launch was queued (not skipped, not failed).
fn queued<E: std::fmt::Debug>(r: Result<Launched, E>) {
    match r {
        Ok(Launched::Queued) => {}
        other => panic!("launch not queued: {other:?}"),
    }
}

fn read_words<P: Platform>(d: &Device<P>, s: StreamId, b: &streamcore::device::Buffer) -> Vec<u32>
where
    P::Error: std::fmt::Debug,
{
    words(&d.read(s, b).unwrap_or_else(|e| panic!("read: {e:?}")))
}

/// Upload two vectors, run `c = (a + b) * 3` then `d = c + c`, read back.
pub fn upload_launch_chain_download<H: Harness>(h: &H) -> Result<(), Skip> {
    let d = h.device(&Setup::streams(1))?;
    let (add, scale) = (load(&d, &kernels::ADD), load(&d, &kernels::SCALE));
    let n = 1000usize;
    let a: Vec<u32> = (0..n as u32).collect();
    let b: Vec<u32> = (0..n as u32).map(|x| 7 * x + 1).collect();
    let ba = d.upload(S0, &bytes(&a)).unwrap();
    let bb = d.upload(S0, &bytes(&b)).unwrap();
    let sum = d.alloc(S0, 4 * n as u64).unwrap();
    let c = d.alloc(S0, 4 * n as u64).unwrap();
    let out = d.alloc(S0, 4 * n as u64).unwrap();
    let info = [n as u64];
    assert_eq!(
        d.launch(
            S0,
            add,
            dims(n),
            &[ba.read(), bb.read(), sum.write()],
            &info
        )
        .unwrap(),
        Launched::Queued
    );
    queued(d.launch(S0, scale, dims(n), &[sum.read(), c.write()], &[n as u64, 3]));
    queued(d.launch(S0, add, dims(n), &[c.read(), c.read(), out.write()], &info));
    let got = read_words(&d, S0, &out);
    let want: Vec<u32> = (0..n).map(|i| 2 * 3 * (a[i] + b[i])).collect();
    assert_eq!(got, want);
    drop((ba, bb, sum, c, out));
    d.sync_all().unwrap();
    assert_eq!(d.census().buffers, 0, "every buffer released");
    h.finish(&d);
    Ok(())
}

/// Stream 1 produces, stream 0 consumes: exactly one event wait; a second
/// consumer launch after that needs none.
pub fn producer_consumer_waits_once<H: Harness>(h: &H) -> Result<(), Skip> {
    let d = h.device(&Setup::streams(2))?;
    let (fill, scale) = (load(&d, &kernels::FILL), load(&d, &kernels::SCALE));
    let n = 512usize;
    let produced = d.alloc(S1, 4 * n as u64).unwrap();
    let out1 = d.alloc(S0, 4 * n as u64).unwrap();
    let out2 = d.alloc(S0, 4 * n as u64).unwrap();
    queued(d.launch(S1, fill, dims(n), &[produced.write()], &[n as u64, 5]));
    let before = d.stats().waits;
    queued(d.launch(
        S0,
        scale,
        dims(n),
        &[produced.read(), out1.write()],
        &[n as u64, 2],
    ));
    assert_eq!(
        d.stats().waits - before,
        1,
        "one wait for the cross-stream read"
    );
    queued(d.launch(
        S0,
        scale,
        dims(n),
        &[produced.read(), out2.write()],
        &[n as u64, 3],
    ));
    assert_eq!(
        d.stats().waits - before,
        1,
        "no second wait: already synced"
    );
    assert_eq!(read_words(&d, S0, &out1), vec![10; n]);
    assert_eq!(read_words(&d, S0, &out2), vec![15; n]);
    // The consumer's read of stream 1's buffer pins it until stream 0's use
    // completes; after a full sync nothing stays pinned.
    drop(produced);
    d.sync_all().unwrap();
    let census = d.census();
    assert_eq!(census.cross_pins, 0);
    drop((out1, out2));
    d.sync_all().unwrap();
    assert_eq!(d.census().buffers, 0);
    h.finish(&d);
    Ok(())
}

/// A buffer dropped while only its own stream's work on it is queued goes
/// back to the pool in stream order: the same stream's next buffer gets the
/// same bytes at once, no fence (its later work runs after the queued use),
/// and what it reads is its own write.
pub fn free_while_in_flight_is_reused_in_stream_order<H: Harness>(h: &H) -> Result<(), Skip> {
    let d = h.device(&Setup::streams(1))?;
    let fill = load(&d, &kernels::FILL);
    let n = 4096usize;
    let a = d.alloc(S0, 4 * n as u64).unwrap();
    let a_range = d.range_of(&a).unwrap();
    queued(d.launch(S0, fill, dims(n), &[a.write()], &[n as u64, 9]));
    drop(a);
    let b = d.alloc(S0, 4 * n as u64).unwrap();
    assert_eq!(d.stats().ordered_frees, 1, "freed in stream order");
    assert_eq!(
        d.range_of(&b),
        Some(a_range),
        "reused at once, in stream order"
    );
    queued(d.launch(S0, fill, dims(n), &[b.write()], &[n as u64, 4]));
    assert_eq!(read_words(&d, S0, &b), vec![4; n]);
    drop(b);
    d.sync_all().unwrap();
    let census = d.census();
    assert_eq!(
        (census.buffers, census.deferred),
        (0, 0),
        "nothing held after sync"
    );
    h.finish(&d);
    Ok(())
}

/// Warm up, capture `out = (x + y) * k`, replay with fresh inputs many
/// times; no storage allocation inside the window.
pub fn capture_replay_with_fresh_inputs<H: Harness>(h: &H) -> Result<(), Skip> {
    let d = h.device(&Setup::streams(1))?;
    let (add, scale) = (load(&d, &kernels::ADD), load(&d, &kernels::SCALE));
    let n = 256usize;
    let x = d.alloc(S0, 4 * n as u64).unwrap();
    let y = d.alloc(S0, 4 * n as u64).unwrap();
    let out = d.alloc(S0, 4 * n as u64).unwrap();
    let body = |d: &Device<H::P>| {
        let tmp = d.alloc(S0, 4 * n as u64).unwrap();
        queued(d.launch(
            S0,
            add,
            dims(n),
            &[x.read(), y.read(), tmp.write()],
            &[n as u64],
        ));
        queued(d.launch(
            S0,
            scale,
            dims(n),
            &[tmp.read(), out.write()],
            &[n as u64, 3],
        ));
    };
    d.write(S0, &x, &bytes(&vec![1; n])).unwrap();
    d.write(S0, &y, &bytes(&vec![2; n])).unwrap();
    d.sync(S0).unwrap();
    d.prepare(S0).unwrap();
    body(&d);
    assert_eq!(read_words(&d, S0, &out), vec![9; n], "warm-up runs eagerly");
    let allocs = h.storage_allocations(&d);
    d.begin_capture(S0).unwrap();
    body(&d);
    let graph = d.end_capture(S0).unwrap();
    if h.supports(Capability::CountAllocations) {
        assert_eq!(
            h.storage_allocations(&d),
            allocs,
            "no allocation inside the window"
        );
    }
    for round in 0..5u32 {
        d.write(S0, &x, &bytes(&vec![round; n])).unwrap();
        d.write(S0, &y, &bytes(&vec![10 * round; n])).unwrap();
        assert_eq!(d.replay(&graph).unwrap(), Launched::Queued);
        assert_eq!(
            read_words(&d, S0, &out),
            vec![3 * 11 * round; n],
            "round {round}"
        );
    }
    assert_eq!(d.stats().graph_replays, 5);
    drop(graph);
    drop((x, y, out));
    d.sync_all().unwrap();
    let census = d.census();
    assert_eq!((census.graphs, census.buffers), (0, 0));
    h.finish(&d);
    Ok(())
}

/// A launch that fails inside the window dooms it: `end_capture` refuses,
/// and what the window would have written is claimed by that failure.
pub fn capture_doomed_by_failure<H: Harness>(h: &H) -> Result<(), Skip> {
    need(h, Capability::FailKernel)?;
    let mut setup = Setup::streams(1);
    setup.fail_kernel = Some(kernels::FLAKY.name);
    let d = h.device(&setup)?;
    let (scale, flaky) = (load(&d, &kernels::SCALE), load(&d, &kernels::FLAKY));
    let n = 64usize;
    let x = d.upload(S0, &bytes(&vec![1; n])).unwrap();
    let y = d.alloc(S0, 4 * n as u64).unwrap();
    let z = d.alloc(S0, 4 * n as u64).unwrap();
    d.prepare(S0).unwrap();
    queued(d.launch(S0, scale, dims(n), &[x.read(), z.write()], &[n as u64, 2]));
    d.begin_capture(S0).unwrap();
    queued(d.launch(S0, scale, dims(n), &[x.read(), z.write()], &[n as u64, 2]));
    let err = d
        .launch(
            S0,
            flaky,
            failing_dims(n),
            &[x.read(), y.write()],
            &[n as u64, 2],
        )
        .unwrap_err();
    let Error::Failed { failure, .. } = err else {
        panic!("expected a failure, got {err:?}");
    };
    match d.end_capture(S0) {
        Err(Error::Capture(CaptureError::Doomed(DoomReason::Failure(id)))) => {
            assert_eq!(id, failure.get())
        }
        other => panic!("a doomed window was sealed or refused wrongly: {other:?}"),
    }
    // The window never ran: what its launches would have written is
    // claimed by the failure that doomed it, and the report walks back to
    // it (not the warm-up's bytes, as if the window had run).
    match d.read(S0, &z) {
        Err(Error::Tainted(report)) => {
            assert_eq!(report.failure, failure);
            assert!(report.reached_root, "{report}");
        }
        other => panic!("a refused window's output read as {other:?}"),
    }
    assert_eq!(d.failure_of(&z), Some(failure));
    // The stream works on after the refused window; rewriting clears it.
    queued(d.launch(S0, scale, dims(n), &[x.read(), z.write()], &[n as u64, 2]));
    assert_eq!(read_words(&d, S0, &z), vec![2; n]);
    drop((x, y, z));
    d.sync_all().unwrap();
    assert_eq!(
        d.census().failures,
        0,
        "the failure is pruned with its buffers"
    );
    h.finish(&d);
    Ok(())
}

/// A fails → B skipped → C skipped; reading C names C ← B ← A; rewriting A
/// lets the chain run again; unrelated work is unaffected.
pub fn taint_chain_and_recovery<H: Harness>(h: &H) -> Result<(), Skip> {
    need(h, Capability::FailKernel)?;
    let mut setup = Setup::streams(1);
    setup.fail_kernel = Some(kernels::FLAKY.name);
    let d = h.device(&setup)?;
    let (fill, scale, flaky) = (
        load(&d, &kernels::FILL),
        load(&d, &kernels::SCALE),
        load(&d, &kernels::FLAKY),
    );
    let n = 128usize;
    let src = d.upload(S0, &bytes(&vec![3; n])).unwrap();
    let [a, b, c, other] = [0; 4].map(|_| d.alloc(S0, 4 * n as u64).unwrap());
    let info = [n as u64, 2];
    let err = d
        .launch(S0, flaky, failing_dims(n), &[src.read(), a.write()], &info)
        .unwrap_err();
    let Error::Failed { failure, .. } = err else {
        panic!("expected a failure, got {err:?}")
    };
    assert_eq!(
        d.launch(S0, scale, dims(n), &[a.read(), b.write()], &info)
            .unwrap(),
        Launched::Skipped(failure)
    );
    assert_eq!(
        d.launch(S0, scale, dims(n), &[b.read(), c.write()], &info)
            .unwrap(),
        Launched::Skipped(failure)
    );
    // Unrelated work runs and reads normally.
    queued(d.launch(S0, scale, dims(n), &[src.read(), other.write()], &info));
    assert_eq!(read_words(&d, S0, &other), vec![6; n]);
    let Err(Error::Tainted(report)) = d.read(S0, &c) else {
        panic!("a read of skipped output must fail with the taint report");
    };
    let text = report.to_string();
    let (pc, pb, pa) = (
        text.find("sc_scale").expect("names the skipped launches"),
        text.rfind("sc_scale").unwrap(),
        text.find("sc_flaky").expect("names the root failure"),
    );
    assert!(pc <= pb && pb < pa, "chain order C <- B <- A:\n{text}");
    // Recovery: rewrite A, rerun the chain.
    queued(d.launch(S0, fill, dims(n), &[a.write()], &[n as u64, 5]));
    assert_eq!(d.failure_of(&a), None);
    queued(d.launch(S0, scale, dims(n), &[a.read(), b.write()], &info));
    queued(d.launch(S0, scale, dims(n), &[b.read(), c.write()], &info));
    assert_eq!(read_words(&d, S0, &c), vec![20; n]);
    assert_eq!(
        d.census().failures,
        0,
        "the failure no longer claims anything"
    );
    drop((src, a, b, c, other));
    d.sync_all().unwrap();
    h.finish(&d);
    Ok(())
}

/// Allocate until out of memory: a typed error; after frees, allocation works.
pub fn out_of_memory_then_recovery<H: Harness>(h: &H) -> Result<(), Skip> {
    need(h, Capability::SmallMemory)?;
    let mut setup = Setup::streams(1);
    setup.memory = Some(256 << 20);
    let d = h.device(&setup)?;
    let mut held = Vec::new();
    let err = loop {
        match d.alloc(S0, 32 << 20) {
            Ok(b) => held.push(b),
            Err(e) => break e,
        }
        assert!(held.len() < 64, "the memory limit was not enforced");
    };
    match &err {
        Error::Memory(MemoryError::OutOfMemory { requested, .. }) => {
            assert_eq!(*requested, 32 << 20)
        }
        other => panic!("expected out-of-memory, got {other:?}"),
    }
    assert!(err.to_string().contains("memory"), "{err}");
    assert!(!held.is_empty());
    held.clear();
    let again = d
        .alloc(S0, 32 << 20)
        .expect("memory is usable again after frees");
    drop(again);
    d.sync_all().unwrap();
    h.finish(&d);
    Ok(())
}

/// `install_pools` refuses while a buffer is live, and works once freed.
pub fn install_pools_refused_while_in_use<H: Harness>(h: &H) -> Result<(), Skip> {
    let d = h.device(&Setup::streams(1))?;
    let fill = load(&d, &kernels::FILL);
    let b = d.alloc(S0, 1 << 20).unwrap();
    // A launch leaves a cached info buffer behind: the device's, not in use.
    queued(d.launch(S0, fill, dims(1024), &[b.write()], &[1024, 1]));
    let layout = MemoryLayout::for_device(&d.properties());
    match d.install_pools(layout.clone()) {
        Err(Error::Memory(MemoryError::InUse { bytes })) => assert!(bytes >= 1 << 20),
        other => panic!("install over live memory must be refused: {other:?}"),
    }
    drop(b);
    d.sync_all().unwrap();
    d.install_pools(layout)
        .expect("nothing live: the layout is swapped");
    let again = d.alloc(S0, 1 << 20).unwrap();
    drop(again);
    d.sync_all().unwrap();
    h.finish(&d);
    Ok(())
}

/// The same info words launch after launch are uploaded once.
pub fn info_cache_serves_repeated_launches<H: Harness>(h: &H) -> Result<(), Skip> {
    let d = h.device(&Setup::streams(1))?;
    let fill = load(&d, &kernels::FILL);
    let n = 64usize;
    let a = d.alloc(S0, 4 * n as u64).unwrap();
    for _ in 0..10 {
        queued(d.launch(S0, fill, dims(n), &[a.write()], &[n as u64, 8]));
    }
    let s = d.stats();
    assert_eq!((s.info_misses, s.info_hits), (1, 9));
    assert_eq!(read_words(&d, S0, &a), vec![8; n]);
    drop(a);
    d.sync_all().unwrap();
    h.finish(&d);
    Ok(())
}

/// Capture calls out of order are rejected and change nothing; host syncs
/// and reads are refused while recording; abort closes the window; an
/// upload inside a warmed-up window needs no new memory.
pub fn capture_calls_out_of_order_are_rejected<H: Harness>(h: &H) -> Result<(), Skip> {
    use streamcore::stream::Phase;
    let d = h.device(&Setup::streams(1))?;
    let scale = load(&d, &kernels::SCALE);
    let n = 64usize;
    let x = d.upload(S0, &bytes(&vec![2; n])).unwrap();
    let y = d.alloc(S0, 4 * n as u64).unwrap();
    let not_prepared = d.begin_capture(S0).unwrap_err();
    assert!(
        matches!(not_prepared, Error::Capture(CaptureError::NotPrepared)),
        "{not_prepared:?}"
    );
    let not_capturing = d.end_capture(S0).unwrap_err();
    assert!(
        matches!(
            not_capturing,
            Error::Capture(CaptureError::NotCapturing {
                phase: Phase::NoCapture
            })
        ),
        "{not_capturing:?}"
    );
    assert_eq!(d.capture_phase(S0), Phase::NoCapture);
    d.prepare(S0).unwrap();
    let twice = d.prepare(S0).unwrap_err();
    assert!(
        matches!(twice, Error::Capture(CaptureError::AlreadyOpen { .. })),
        "{twice:?}"
    );
    assert_eq!(d.capture_phase(S0), Phase::Prepare);
    d.write(S0, &x, &bytes(&vec![3; n])).unwrap();
    queued(d.launch(S0, scale, dims(n), &[x.read(), y.write()], &[n as u64, 2]));
    d.begin_capture(S0).unwrap();
    assert_eq!(d.capture_phase(S0), Phase::Capture);
    assert!(matches!(d.sync(S0), Err(Error::NotWhileCapturing { .. })));
    assert!(matches!(
        d.read(S0, &y),
        Err(Error::NotWhileCapturing { .. })
    ));
    d.write(S0, &x, &bytes(&vec![3; n])).unwrap();
    queued(d.launch(S0, scale, dims(n), &[x.read(), y.write()], &[n as u64, 2]));
    d.abort_capture(S0).unwrap();
    assert_eq!(d.capture_phase(S0), Phase::NoCapture);
    let nothing = d.abort_capture(S0).unwrap_err();
    assert!(
        matches!(nothing, Error::Capture(CaptureError::NothingToAbort)),
        "{nothing:?}"
    );
    // The stream is usable and the warm-up's eager work landed.
    assert_eq!(read_words(&d, S0, &y), vec![6; n]);
    drop((x, y));
    d.sync_all().unwrap();
    assert_eq!(d.census().buffers, 0);
    h.finish(&d);
    Ok(())
}

/// Bad input is a typed error, never a panic: unknown stream, zero-size or
/// absurd allocation, a write of the wrong length, a buffer of another
/// device, a kernel that was never loaded.
pub fn bad_input_is_a_typed_error<H: Harness>(h: &H) -> Result<(), Skip> {
    let d = h.device(&Setup::streams(1))?;
    let other = h.device(&Setup::streams(1))?;
    let fill = load(&d, &kernels::FILL);
    let far = StreamId(7);
    assert!(matches!(d.alloc(far, 64), Err(Error::Stream(_))));
    assert!(matches!(d.sync(far), Err(Error::Stream(_))));
    assert!(matches!(
        d.alloc(S0, 0),
        Err(Error::Memory(MemoryError::InvalidSize { size: 0 }))
    ));
    assert!(matches!(
        d.alloc(S0, u64::MAX),
        Err(Error::Memory(MemoryError::InvalidSize { .. }))
    ));
    let b = d.alloc(S0, 64).unwrap();
    assert!(matches!(
        d.write(S0, &b, &[1, 2, 3]),
        Err(Error::InvalidArgument(_))
    ));
    let foreign = other.alloc(S0, 64).unwrap();
    assert!(matches!(d.read(S0, &foreign), Err(Error::StaleBuffer(_))));
    assert!(matches!(
        d.launch(S0, fill, dims(16), &[foreign.write()], &[16, 1]),
        Err(Error::StaleBuffer(_))
    ));
    // A kernel another device loaded (same index as `fill` there) is
    // refused, not run as this device's kernel of that index.
    let unknown = load(&other, &kernels::FILL);
    assert_eq!(unknown.index(), fill.index());
    assert!(matches!(
        d.launch(S0, unknown, dims(16), &[b.write()], &[16, 1]),
        Err(Error::UnknownKernel(_))
    ));
    // Nothing above disturbed the device.
    queued(d.launch(S0, fill, dims(16), &[b.write()], &[16, 4]));
    assert_eq!(read_words(&d, S0, &b), vec![4; 16]);
    drop((b, foreign));
    d.sync_all().unwrap();
    other.sync_all().unwrap();
    h.finish(&d);
    h.finish(&other);
    Ok(())
}
