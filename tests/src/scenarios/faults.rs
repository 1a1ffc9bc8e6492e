//! Driver calls that fail, one at a time, on the mock and on a real device
//! alike ([`Harness::fail_next`]): each failure is a typed error of the
//! kind the platform answered, nothing is lost or left half done, and the
//! device works on after it (the same operation succeeds when tried
//! again, and the bytes are the right ones).

use streamcore::device::{Device, Launched};
use streamcore::error::Error;
use streamcore::memory::MemoryError;
use streamcore::platform::{Capabilities, ErrorKind, Platform, PlatformError};

use super::{S0, S1, load, need, queued, read_words};
use crate::harness::{Capability, FaultCall, Harness, Setup, Skip};
use crate::kernels::{self, bytes, dims};

/// The platform's classification of the failure `e` reports, if it reports
/// one.
fn kind_of<E: PlatformError>(e: &Error<E>) -> Option<ErrorKind> {
    match e {
        Error::Platform { source, .. } => Some(source.kind()),
        Error::Failed { kind, .. } => Some(*kind),
        Error::Memory(MemoryError::Storage { source, .. }) => Some(source.kind()),
        _ => None,
    }
}

/// Runs `op` with the next `call` failing with `kind`, and checks that `op`
/// took that fault (none is left pending for a later call).
fn struck<H: Harness, T>(
    h: &H,
    d: &Device<H::P>,
    call: FaultCall,
    kind: ErrorKind,
    op: impl FnOnce() -> T,
) -> Result<T, Skip> {
    let before = h.faults_taken(d);
    h.fail_next(d, call, kind)?;
    let out = op();
    assert_eq!(
        h.faults_taken(d),
        before + 1,
        "{call:?}: the operation did not take the fault"
    );
    Ok(out)
}

/// Runs `op` (`what`) with the next `call` failing with `kind`: it takes the
/// fault and fails with a platform failure of that kind.
fn refused<H: Harness, T: std::fmt::Debug>(
    h: &H,
    d: &Device<H::P>,
    call: FaultCall,
    kind: ErrorKind,
    what: &str,
    op: impl FnOnce() -> Result<T, Error<<H::P as Platform>::Error>>,
) -> Result<(), Skip> {
    match struck(h, d, call, kind, op)? {
        Err(e) => assert_eq!(kind_of(&e), Some(kind), "{what} ({call:?}): {e:?}"),
        Ok(v) => panic!("{what}: answered {v:?} although {call:?} failed"),
    }
    Ok(())
}

/// Checks that nothing is left behind once the scenario dropped its
/// buffers and graphs.
fn settled<H: Harness>(h: &H, d: &Device<H::P>) {
    d.sync_all().unwrap();
    let c = d.census();
    assert_eq!(
        (c.buffers, c.graphs, c.deferred, c.cross_pins, c.failures),
        (0, 0, 0, 0, 0),
        "{c:?}"
    );
    h.finish(d);
}

/// A refused copy, each way: the upload, write or read fails with the
/// platform's kind, and the same call then succeeds with the right bytes.
pub fn refused_copies_are_typed_and_retried<H: Harness>(h: &H) -> Result<(), Skip> {
    need(h, Capability::InjectFaults)?;
    let d = h.device(&Setup::streams(1))?;
    let n = 1024usize;
    let data: Vec<u32> = (0..n as u32).map(|i| i * 3 + 1).collect();

    refused(
        h,
        &d,
        FaultCall::CopyToDevice,
        ErrorKind::Other,
        "upload",
        || d.upload(S0, &bytes(&data)),
    )?;
    let b = d.upload(S0, &bytes(&data)).unwrap();
    assert_eq!(read_words(&d, S0, &b), data);

    let other: Vec<u32> = data.iter().map(|x| x ^ 0xffff).collect();
    refused(
        h,
        &d,
        FaultCall::CopyToDevice,
        ErrorKind::Other,
        "write",
        || d.write(S0, &b, &bytes(&other)),
    )?;
    d.write(S0, &b, &bytes(&other)).unwrap();
    assert_eq!(read_words(&d, S0, &b), other);

    refused(
        h,
        &d,
        FaultCall::CopyToHost,
        ErrorKind::Other,
        "read",
        || d.read(S0, &b),
    )?;
    assert_eq!(read_words(&d, S0, &b), other, "the next read");
    drop(b);
    settled(h, &d);
    Ok(())
}

/// A launch the platform refuses: its outputs are claimed by the failure
/// (work reading them is skipped, a read is refused with the report), and
/// a launch that rewrites them clears the claim.
pub fn a_refused_launch_claims_its_outputs<H: Harness>(h: &H) -> Result<(), Skip> {
    need(h, Capability::InjectFaults)?;
    let d = h.device(&Setup::streams(1))?;
    let (fill, scale) = (load(&d, &kernels::FILL), load(&d, &kernels::SCALE));
    let n = 256usize;
    let [a, b] = [0; 2].map(|_| d.alloc(S0, 4 * n as u64).unwrap());
    for kind in [ErrorKind::Kernel, ErrorKind::Other] {
        let err = struck(h, &d, FaultCall::Launch, kind, || {
            d.launch(S0, fill, dims(n), &[a.write()], &[n as u64, 7])
        })?
        .unwrap_err();
        let Error::Failed {
            failure, kind: got, ..
        } = err
        else {
            panic!("a refused launch is a failure that claims its outputs: {err:?}")
        };
        assert_eq!(got, kind);
        assert_eq!(d.failure_of(&a), Some(failure));
        assert_eq!(
            d.launch(S0, scale, dims(n), &[a.read(), b.write()], &[n as u64, 2])
                .unwrap(),
            Launched::Skipped(failure),
            "work reading the claimed bytes is skipped"
        );
        assert!(matches!(d.read(S0, &b), Err(Error::Tainted(_))));
        queued(d.launch(S0, fill, dims(n), &[a.write()], &[n as u64, 7]));
        queued(d.launch(S0, scale, dims(n), &[a.read(), b.write()], &[n as u64, 2]));
        assert_eq!(read_words(&d, S0, &b), vec![14; n]);
        assert_eq!(d.census().failures, 0, "the failure claims nothing more");
    }
    drop((a, b));
    settled(h, &d);
    Ok(())
}

/// The event a cross-stream read needs cannot be recorded, or the wait
/// cannot be queued: the launch is refused (it never runs unordered), and
/// the same launch then waits and reads what the other stream wrote.
pub fn a_refused_cross_stream_wait_never_runs_unordered<H: Harness>(h: &H) -> Result<(), Skip> {
    need(h, Capability::InjectFaults)?;
    let d = h.device(&Setup::streams(2))?;
    let (fill, scale) = (load(&d, &kernels::FILL), load(&d, &kernels::SCALE));
    let n = 4096usize;
    for (round, call) in [FaultCall::Record, FaultCall::Wait].into_iter().enumerate() {
        let value = 10 + round as u64;
        let produced = d.alloc(S1, 4 * n as u64).unwrap();
        let out = d.alloc(S0, 4 * n as u64).unwrap();
        queued(d.launch(S1, fill, dims(n), &[produced.write()], &[n as u64, value]));
        refused(h, &d, call, ErrorKind::Other, "the launch", || {
            d.launch(
                S0,
                scale,
                dims(n),
                &[produced.read(), out.write()],
                &[n as u64, 3],
            )
        })?;
        queued(d.launch(
            S0,
            scale,
            dims(n),
            &[produced.read(), out.write()],
            &[n as u64, 3],
        ));
        assert_eq!(
            read_words(&d, S0, &out),
            vec![3 * value as u32; n],
            "{call:?}"
        );
        drop((produced, out));
    }
    settled(h, &d);
    Ok(())
}

/// A host wait the platform refuses, in `sync` and in `read`: typed, and
/// the next one settles the stream and reads the right bytes.
pub fn a_refused_host_wait_is_typed_and_the_next_settles<H: Harness>(h: &H) -> Result<(), Skip> {
    need(h, Capability::InjectFaults)?;
    let d = h.device(&Setup::streams(1))?;
    let fill = load(&d, &kernels::FILL);
    let n = 1 << 16;
    let a = d.alloc(S0, 4 * n as u64).unwrap();
    queued(d.launch(S0, fill, dims(n), &[a.write()], &[n as u64, 4]));
    refused(
        h,
        &d,
        FaultCall::Synchronize,
        ErrorKind::Other,
        "sync",
        || d.sync(S0),
    )?;
    d.sync(S0).unwrap();
    queued(d.launch(S0, fill, dims(n), &[a.write()], &[n as u64, 5]));
    refused(
        h,
        &d,
        FaultCall::Synchronize,
        ErrorKind::Other,
        "read",
        || d.read(S0, &a),
    )?;
    assert_eq!(read_words(&d, S0, &a), vec![5; n]);
    drop(a);
    settled(h, &d);
    Ok(())
}

/// Capture calls the platform refuses: a refused begin leaves the stream
/// running eagerly, a refused end leaves it out of the capture with nothing
/// pinned by the lost graph, a refused replay is typed and the next one
/// runs.
pub fn refused_capture_calls_leave_the_stream_usable<H: Harness>(h: &H) -> Result<(), Skip> {
    need(h, Capability::InjectFaults)?;
    let d = h.device(&Setup::streams(1))?;
    if !d.capabilities().contains(Capabilities::GRAPH_CAPTURE) {
        return Err(Skip("the platform declares no graph capture".into()));
    }
    let (fill, scale) = (load(&d, &kernels::FILL), load(&d, &kernels::SCALE));
    let n = 512usize;
    let x = d.upload(S0, &bytes(&vec![2u32; n])).unwrap();
    let out = d.alloc(S0, 4 * n as u64).unwrap();
    let body = |d: &Device<H::P>, factor: u64| {
        let tmp = d.alloc(S0, 4 * n as u64).unwrap();
        queued(d.launch(
            S0,
            scale,
            dims(n),
            &[x.read(), tmp.write()],
            &[n as u64, factor],
        ));
        queued(d.launch(
            S0,
            scale,
            dims(n),
            &[tmp.read(), out.write()],
            &[n as u64, 1],
        ));
    };
    d.sync(S0).unwrap();
    d.prepare(S0).unwrap();
    body(&d, 3);
    assert_eq!(read_words(&d, S0, &out), vec![6; n], "warm-up");

    refused(
        h,
        &d,
        FaultCall::BeginCapture,
        ErrorKind::Other,
        "begin_capture",
        || d.begin_capture(S0),
    )?;
    body(&d, 4);
    assert_eq!(
        read_words(&d, S0, &out),
        vec![8; n],
        "runs eagerly after a refused begin"
    );

    // What the stream holds outside any window; the window's buffer is
    // 4n bytes, and a few info words are all that may be added.
    d.sync(S0).unwrap();
    let outside = d.census().live_bytes;
    d.prepare(S0).unwrap();
    body(&d, 5);
    d.begin_capture(S0).unwrap();
    body(&d, 5);
    refused(
        h,
        &d,
        FaultCall::EndCapture,
        ErrorKind::Other,
        "end_capture",
        || d.end_capture(S0),
    )?;
    d.sync(S0).unwrap();
    let after = d.census().live_bytes;
    assert!(
        after < outside + 2 * n as u64,
        "nothing stays pinned for the graph that was not made: {after} B live, {outside} B before"
    );
    queued(d.launch(S0, fill, dims(n), &[out.write()], &[n as u64, 1]));
    assert_eq!(
        read_words(&d, S0, &out),
        vec![1; n],
        "runs eagerly after a refused end"
    );

    d.prepare(S0).unwrap();
    body(&d, 6);
    d.begin_capture(S0).unwrap();
    body(&d, 6);
    let graph = d.end_capture(S0).unwrap();
    queued(d.launch(S0, fill, dims(n), &[out.write()], &[n as u64, 0]));
    refused(
        h,
        &d,
        FaultCall::LaunchGraph,
        ErrorKind::Other,
        "replay",
        || d.replay(&graph),
    )?;
    assert_eq!(d.replay(&graph).unwrap(), Launched::Queued);
    assert_eq!(
        read_words(&d, S0, &out),
        vec![12; n],
        "the next replay runs"
    );
    drop(graph);
    drop((x, out));
    settled(h, &d);
    Ok(())
}

/// Memory the platform refuses: out of memory once is retried and served;
/// another refusal is a typed storage error, and the next allocation
/// works. The same for the pinned staging memory an upload needs.
pub fn refused_memory_is_retried_or_typed<H: Harness>(h: &H) -> Result<(), Skip> {
    need(h, Capability::InjectFaults)?;
    let d = h.device(&Setup::streams(1))?;
    let fill = load(&d, &kernels::FILL);
    let n = 3 << 18;
    let a = struck(
        h,
        &d,
        FaultCall::DeviceAlloc,
        ErrorKind::OutOfMemory,
        || d.alloc(S0, 4 * n as u64),
    )?
    .expect("out of memory once: retried");
    queued(d.launch(S0, fill, dims(n), &[a.write()], &[n as u64, 9]));
    assert_eq!(read_words(&d, S0, &a), vec![9; n]);

    refused(
        h,
        &d,
        FaultCall::DeviceAlloc,
        ErrorKind::Other,
        "alloc",
        || d.alloc(S0, 64 << 20),
    )?;
    let b = d.alloc(S0, 64 << 20).unwrap();

    let data: Vec<u32> = (0..(1u32 << 20)).collect();
    let c = struck(h, &d, FaultCall::HostAlloc, ErrorKind::OutOfMemory, || {
        d.upload(S0, &bytes(&data))
    })?
    .expect("staging out of memory once: retried");
    assert_eq!(read_words(&d, S0, &c), data);
    drop((a, b, c));
    settled(h, &d);
    Ok(())
}

/// A kernel the platform cannot load: typed, and loading it again works.
pub fn a_refused_kernel_load_is_typed<H: Harness>(h: &H) -> Result<(), Skip> {
    need(h, Capability::InjectFaults)?;
    let d = h.device(&Setup::streams(1))?;
    refused(
        h,
        &d,
        FaultCall::LoadKernel,
        ErrorKind::Kernel,
        "load_kernel",
        || d.load_kernel(&kernels::FILL),
    )?;
    let fill = load(&d, &kernels::FILL);
    let n = 64usize;
    let a = d.alloc(S0, 4 * n as u64).unwrap();
    queued(d.launch(S0, fill, dims(n), &[a.write()], &[n as u64, 3]));
    assert_eq!(read_words(&d, S0, &a), vec![3; n]);
    drop(a);
    settled(h, &d);
    Ok(())
}

/// The fence a read waits for cannot be recorded: the read is refused, and
/// the staging bytes its copy may still be filling are handed to no other
/// copy, on its stream or another, until a later fence passes (the hazard
/// checker watches on the mock; the bytes read back are checked on both).
pub fn a_refused_fence_keeps_staging_busy<H: Harness>(h: &H) -> Result<(), Skip> {
    need(h, Capability::InjectFaults)?;
    let d = h.device(&Setup::streams(2))?;
    let n = 1 << 16;
    let data =
        |seed: u32| -> Vec<u32> { (0..n as u32).map(|i| i.wrapping_mul(seed) ^ seed).collect() };
    let b = d.upload(S0, &bytes(&data(1))).unwrap();
    d.sync_all().unwrap();
    for round in 0..2u32 {
        refused(h, &d, FaultCall::Record, ErrorKind::Other, "read", || {
            d.read(S0, &b)
        })?;
        let on_s1 = d.upload(S1, &bytes(&data(10 + round))).unwrap();
        let on_s0 = d.upload(S0, &bytes(&data(20 + round))).unwrap();
        assert_eq!(read_words(&d, S1, &on_s1), data(10 + round));
        assert_eq!(read_words(&d, S0, &on_s0), data(20 + round));
        assert_eq!(read_words(&d, S0, &b), data(1));
    }
    drop(b);
    settled(h, &d);
    Ok(())
}

/// A launch whose info words cannot be uploaded (the copy into the info
/// cache is refused): the launch is refused, and the same words on the
/// next launch are uploaded then, never served from an entry whose upload
/// failed.
pub fn a_refused_info_upload_is_not_cached<H: Harness>(h: &H) -> Result<(), Skip> {
    need(h, Capability::InjectFaults)?;
    let d = h.device(&Setup::streams(1))?;
    let fill = load(&d, &kernels::FILL);
    let n = 1024usize;
    let a = d.alloc(S0, 4 * n as u64).unwrap();
    // Settle the stream, so the info upload is the next copy.
    queued(d.launch(S0, fill, dims(n), &[a.write()], &[n as u64, 1]));
    assert_eq!(read_words(&d, S0, &a), vec![1; n]);
    for value in [0x51u64, 0x52] {
        refused(
            h,
            &d,
            FaultCall::CopyToDevice,
            ErrorKind::Other,
            "the launch",
            || d.launch(S0, fill, dims(n), &[a.write()], &[n as u64, value]),
        )?;
        queued(d.launch(S0, fill, dims(n), &[a.write()], &[n as u64, value]));
        assert_eq!(read_words(&d, S0, &a), vec![value as u32; n]);
        queued(d.launch(S0, fill, dims(n), &[a.write()], &[n as u64, 1]));
        queued(d.launch(S0, fill, dims(n), &[a.write()], &[n as u64, value]));
        assert_eq!(
            read_words(&d, S0, &a),
            vec![value as u32; n],
            "served again"
        );
    }
    drop(a);
    settled(h, &d);
    Ok(())
}

/// A stream the platform cannot make (the device makes each when it first
/// uses it): that use is refused, typed, and the next one makes the stream,
/// which then works with the others.
pub fn a_stream_the_platform_cannot_make_is_made_on_the_next_use<H: Harness>(
    h: &H,
) -> Result<(), Skip> {
    need(h, Capability::InjectFaults)?;
    let d = h.device(&Setup::streams(2))?;
    let (fill, scale) = (load(&d, &kernels::FILL), load(&d, &kernels::SCALE));
    let n = 512usize;
    let a = d.alloc(S0, 4 * n as u64).unwrap();
    queued(d.launch(S0, fill, dims(n), &[a.write()], &[n as u64, 6]));
    refused(
        h,
        &d,
        FaultCall::CreateStream,
        ErrorKind::Other,
        "stream 1's first use",
        || d.alloc(S1, 4 * n as u64),
    )?;
    let b = d.alloc(S1, 4 * n as u64).unwrap();
    queued(d.launch(S1, scale, dims(n), &[a.read(), b.write()], &[n as u64, 2]));
    assert_eq!(read_words(&d, S1, &b), vec![12; n]);
    assert_eq!(read_words(&d, S0, &a), vec![6; n]);
    drop((a, b));
    settled(h, &d);
    Ok(())
}

/// `poll` whose fence cannot be recorded (the fence that tells when a
/// buffer another stream still read may go): typed, the free stays held,
/// the next poll works, and syncing releases it.
pub fn a_refused_poll_keeps_its_frees_for_the_next<H: Harness>(h: &H) -> Result<(), Skip> {
    need(h, Capability::InjectFaults)?;
    let d = h.device(&Setup::streams(2))?;
    let (fill, scale) = (load(&d, &kernels::FILL), load(&d, &kernels::SCALE));
    let n = 1 << 16;
    let held = |d: &Device<H::P>| {
        let c = d.census();
        c.deferred + c.cross_pins
    };
    let a = d.alloc(S1, 4 * n as u64).unwrap();
    let b = d.alloc(S0, 4 * n as u64).unwrap();
    queued(d.launch(S1, fill, dims(n), &[a.write()], &[n as u64, 1]));
    queued(d.launch(S0, scale, dims(n), &[a.read(), b.write()], &[n as u64, 2]));
    drop(a);
    assert!(held(&d) > 0, "stream 0's read pins the free");
    refused(h, &d, FaultCall::Record, ErrorKind::Other, "poll", || {
        d.poll()
    })?;
    assert!(held(&d) > 0, "the free is still held");
    d.poll().unwrap();
    d.sync_all().unwrap();
    assert_eq!(held(&d), 0, "released once the streams are synced");
    assert_eq!(read_words(&d, S0, &b), vec![2; n]);
    drop(b);
    settled(h, &d);
    Ok(())
}
