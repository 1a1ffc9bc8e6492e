//! `streamcore demo`: the core's mechanisms, one after another, on the mock
//! platform — cross-stream waits, capture and replay, a failure that taints
//! only what depends on it, the memory report, and the hazard checker's
//! verdict.

use std::fmt;
use std::io::Write;

use streamcore::device::{Device, DeviceConfig, Launched};
use streamcore::error::Error;
use streamcore::platform::Platform;
use streamcore::stream::StreamId;
use streamcore_mock::fault::{FaultInjector, FaultPlan};
use streamcore_mock::{MockConfig, MockPlatform};
use streamcore_tests::kernels::{self, bytes, dims, words};

const CONSUMER: StreamId = StreamId(0);
const PRODUCER: StreamId = StreamId(1);
const N: usize = 4096;

/// Why the demo stopped.
#[derive(Debug)]
pub enum DemoError {
    /// Writing the report failed.
    Io(std::io::Error),
    /// The device answered something the demo did not expect.
    Unexpected(String),
}

impl fmt::Display for DemoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DemoError::Io(e) => write!(f, "writing the report: {e}"),
            DemoError::Unexpected(what) => write!(f, "demo went wrong: {what}"),
        }
    }
}

impl std::error::Error for DemoError {}

impl From<std::io::Error> for DemoError {
    fn from(e: std::io::Error) -> Self {
        DemoError::Io(e)
    }
}

fn unexpected<E: fmt::Display>(what: &str) -> impl FnOnce(E) -> DemoError + '_ {
    move |e| DemoError::Unexpected(format!("{what}: {e}"))
}

fn check(ok: bool, what: &str) -> Result<&'static str, DemoError> {
    if ok {
        Ok("ok")
    } else {
        Err(DemoError::Unexpected(what.to_string()))
    }
}

type P = FaultInjector<MockPlatform>;

/// Runs the demo with scheduler seed `seed`, writing the report to `out`.
pub fn run(seed: u64, out: &mut impl Write) -> Result<(), DemoError> {
    let mock =
        MockPlatform::with_config(MockConfig::default().seed(seed)).map_err(unexpected("mock"))?;
    kernels::register_mock(&mock);
    let platform = FaultInjector::new(
        mock.clone(),
        FaultPlan::new().fail_kernel(kernels::FLAKY.name),
    );
    let device: Device<P> =
        Device::new(platform, DeviceConfig::with_streams(2)).map_err(unexpected("device"))?;
    let load = |k| device.load_kernel(k).map_err(unexpected("load kernel"));
    let (fill, add, scale, flaky) = (
        load(&kernels::FILL)?,
        load(&kernels::ADD)?,
        load(&kernels::SCALE)?,
        load(&kernels::FLAKY)?,
    );
    let info = [N as u64];
    let bytes_n = 4 * N as u64;
    let alloc = |s| device.alloc(s, bytes_n).map_err(unexpected("alloc"));
    let launched = |r: Result<Launched, Error<<P as Platform>::Error>>| match r {
        Ok(Launched::Queued) => Ok(()),
        Ok(Launched::Skipped(f)) => Err(DemoError::Unexpected(format!("launch skipped by {f}"))),
        Err(e) => Err(DemoError::Unexpected(format!("launch: {e}"))),
    };

    writeln!(
        out,
        "streamcore demo — mock platform, scheduler seed {seed}, {N} u32 elements per buffer"
    )?;
    writeln!(out)?;
    writeln!(out, "1. Two streams: stream 1 produces, stream 0 consumes")?;
    let x = device
        .upload(PRODUCER, &bytes(&(0..N as u32).collect::<Vec<_>>()))
        .map_err(unexpected("upload"))?;
    let y = alloc(PRODUCER)?;
    launched(device.launch(PRODUCER, fill, dims(N), &[y.write()], &[N as u64, 1]))?;
    writeln!(out, "   stream 1: upload x = 0..{N}, fill y = 1")?;
    let waits0 = device.stats().waits;
    let z = alloc(CONSUMER)?;
    launched(device.launch(
        CONSUMER,
        add,
        dims(N),
        &[x.read(), y.read(), z.write()],
        &info,
    ))?;
    let waits1 = device.stats().waits;
    writeln!(
        out,
        "   stream 0: z = x + y      -> {} event wait inserted (z reads what stream 1 wrote)",
        waits1 - waits0
    )?;
    let w = alloc(CONSUMER)?;
    launched(device.launch(
        CONSUMER,
        scale,
        dims(N),
        &[x.read(), w.write()],
        &[N as u64, 2],
    ))?;
    writeln!(
        out,
        "   stream 0: w = x * 2      -> {} more waits (stream 0 already synced stream 1)",
        device.stats().waits - waits1
    )?;
    let zw = words(&device.read(CONSUMER, &z).map_err(unexpected("read z"))?);
    let verdict = check(
        zw.iter().enumerate().all(|(i, &v)| v == i as u32 + 1),
        "z = x + y",
    )?;
    writeln!(out, "   read z: {verdict} (z[i] = i + 1)")?;

    writeln!(out)?;
    writeln!(
        out,
        "2. Capture stream 0's chain out = (x + y) * 3 as a graph, replay with fresh inputs"
    )?;
    let graph_out = alloc(CONSUMER)?;
    let body = |d: &Device<P>| -> Result<(), DemoError> {
        let tmp = d.alloc(CONSUMER, bytes_n).map_err(unexpected("alloc"))?;
        launched(d.launch(
            CONSUMER,
            add,
            dims(N),
            &[x.read(), y.read(), tmp.write()],
            &info,
        ))?;
        launched(d.launch(
            CONSUMER,
            scale,
            dims(N),
            &[tmp.read(), graph_out.write()],
            &[N as u64, 3],
        ))?;
        Ok(())
    };
    device.prepare(CONSUMER).map_err(unexpected("prepare"))?;
    body(&device)?;
    let allocs_before = mock.counters().allocs;
    device
        .begin_capture(CONSUMER)
        .map_err(unexpected("begin_capture"))?;
    body(&device)?;
    let graph = device
        .end_capture(CONSUMER)
        .map_err(unexpected("end_capture"))?;
    writeln!(
        out,
        "   warm-up, capture, seal -> graph #{}; storage allocations inside the window: {}",
        graph.id().0,
        mock.counters().allocs - allocs_before
    )?;
    for round in 1..=3u32 {
        device
            .write(PRODUCER, &x, &bytes(&vec![round; N]))
            .map_err(unexpected("write x"))?;
        launched(device.replay(&graph))?;
        let got = words(
            &device
                .read(CONSUMER, &graph_out)
                .map_err(unexpected("read"))?,
        );
        let want = 3 * (round + 1);
        let verdict = check(got.iter().all(|&v| v == want), "replay output")?;
        writeln!(
            out,
            "   replay {round}: x = {round} -> out = {want}: {verdict}"
        )?;
    }

    writeln!(out)?;
    writeln!(
        out,
        "3. One injected failure: every launch of kernel `{}` fails",
        kernels::FLAKY.name
    )?;
    let a = alloc(CONSUMER)?;
    let b = alloc(CONSUMER)?;
    match device.launch(
        CONSUMER,
        flaky,
        dims(N),
        &[x.read(), a.write()],
        &[N as u64, 2],
    ) {
        Err(Error::Failed {
            failure, message, ..
        }) => writeln!(
            out,
            "   a = flaky(x)  -> failed ({message}); a is claimed by {failure}"
        )?,
        other => {
            return Err(DemoError::Unexpected(format!(
                "the injected failure did not happen: {other:?}"
            )));
        }
    }
    match device
        .launch(
            CONSUMER,
            scale,
            dims(N),
            &[a.read(), b.write()],
            &[N as u64, 2],
        )
        .map_err(unexpected("launch"))?
    {
        Launched::Skipped(f) => writeln!(
            out,
            "   b = a * 2     -> skipped: its input carries {f}; b inherits the claim"
        )?,
        Launched::Queued => {
            return Err(DemoError::Unexpected(
                "a launch over a claimed input ran".into(),
            ));
        }
    }
    match device.read(CONSUMER, &b) {
        Err(Error::Tainted(report)) => {
            writeln!(
                out,
                "   read b        -> refused, with the chain back to the root:"
            )?;
            for line in report.to_string().lines() {
                writeln!(out, "       {line}")?;
            }
        }
        other => {
            return Err(DemoError::Unexpected(format!(
                "reading a tainted buffer: {other:?}"
            )));
        }
    }
    let ww = words(&device.read(CONSUMER, &w).map_err(unexpected("read w"))?);
    let verdict = check(ww.iter().all(|&v| v % 2 == 0), "w unaffected")?;
    writeln!(
        out,
        "   read w (shares nothing with the failure) -> {verdict}"
    )?;

    writeln!(out)?;
    writeln!(out, "4. Memory of stream 0 (graph and buffers still alive)")?;
    if let Some(report) = device.memory_report(CONSUMER) {
        for line in report.to_string().lines() {
            writeln!(out, "   {line}")?;
        }
    }

    drop((x, y, z, w, a, b, graph_out, graph));
    device.sync_all().map_err(unexpected("sync"))?;
    let census = device.census();
    let stats = device.stats();
    let hazards = mock.hazards();
    writeln!(out)?;
    writeln!(out, "5. After dropping everything and a final sync")?;
    writeln!(
        out,
        "   live buffers {}, graphs {}, failures {}, deferred frees {}, cross-stream pins {}",
        census.buffers, census.graphs, census.failures, census.deferred, census.cross_pins
    )?;
    writeln!(
        out,
        "   launches {}, skipped {}, failures {}, waits {}, events recorded {}, host syncs {}, info-cache hits {} / misses {}",
        stats.launches,
        stats.skipped,
        stats.failures,
        stats.waits,
        stats.events_recorded,
        stats.host_syncs,
        stats.info_hits,
        stats.info_misses
    )?;
    if hazards.is_empty() {
        writeln!(out, "   hazards reported by the mock's checker: none")?;
    } else {
        writeln!(
            out,
            "   hazards reported by the mock's checker: {}",
            hazards.len()
        )?;
        for h in &hazards {
            writeln!(out, "     {h}")?;
        }
        return Err(DemoError::Unexpected(format!("{} hazards", hazards.len())));
    }
    Ok(())
}
