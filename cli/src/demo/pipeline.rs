//! The demo's story, written once against the platform traits: a
//! [`Device`] over any platform behind the fault injector, narrated step by
//! step. What only a platform can tell (the mock's completion order and
//! hazards) comes through [`Stage`].

use std::fmt;
use std::io::Write;

use streamcore::device::{Device, Launched};
use streamcore::error::Error;
use streamcore::platform::Platform;
use streamcore::stream::StreamId;
use streamcore_kernels::{self as kernels, bytes, dims, words};
use streamcore_mock::fault::FaultInjector;

use super::DemoError;

/// What the story needs from a platform beyond the core's traits.
pub trait Stage {
    /// The platform under the fault injector.
    type P: Platform;

    /// The header line's description of the device.
    fn describe(&self) -> String;

    /// The device work completed since the last call, in completion order,
    /// as one line (`None` when the platform cannot tell).
    fn completed(&self) -> Option<String>;

    /// Storage allocations made so far (`None` when not counted).
    fn allocations(&self) -> Option<u64>;

    /// Hazards the platform's checker reported (`None`: no checker).
    fn hazards(&self) -> Option<Vec<String>>;

    /// What to say instead of a hazard verdict when there is no checker.
    fn no_checker(&self) -> &'static str {
        "not checked here (the mock's checker does that: `streamcore demo`)"
    }
}

/// The device the story runs on: the stage's platform behind the fault
/// injector, which fails every launch of [`FLAKY`](streamcore_kernels::FLAKY).
pub type DemoDevice<S> = Device<FaultInjector<<S as Stage>::P>>;

const CONSUMER: StreamId = StreamId(0);
const PRODUCER: StreamId = StreamId(1);
const N: usize = 4096;

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

/// Tells the story on `device` (two streams, the stage's platform behind
/// a fault injector that fails [`FLAKY`](streamcore_kernels::FLAKY)), writing it to `out`.
pub fn run<S: Stage>(
    stage: &S,
    device: &DemoDevice<S>,
    out: &mut impl Write,
) -> Result<(), DemoError> {
    type P<S> = FaultInjector<<S as Stage>::P>;
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
    let launched = |r: Result<Launched, Error<<P<S> as Platform>::Error>>| match r {
        Ok(Launched::Queued) => Ok(()),
        Ok(Launched::Skipped(f)) => Err(DemoError::Unexpected(format!("launch skipped by {f}"))),
        Err(e) => Err(DemoError::Unexpected(format!("launch: {e}"))),
    };

    writeln!(
        out,
        "streamcore demo — {}, {N} u32 elements per buffer",
        stage.describe()
    )?;
    writeln!(out)?;
    writeln!(out, "1. Two streams: stream 1 produces, stream 0 consumes")?;
    // The consumer's outputs first: stream 0 is then the platform's first
    // stream too, and the completion order below names streams as here.
    let z = alloc(CONSUMER)?;
    let x = device
        .upload(PRODUCER, &bytes(&(0..N as u32).collect::<Vec<_>>()))
        .map_err(unexpected("upload"))?;
    let y = alloc(PRODUCER)?;
    launched(device.launch(PRODUCER, fill, dims(N), &[y.write()], &[N as u64, 1]))?;
    writeln!(out, "   stream 1: upload x = 0..{N}, fill y = 1")?;
    let waits0 = device.stats().waits;
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
    if let Some(order) = stage.completed() {
        writeln!(out, "   {order}")?;
    }
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
    let body = |d: &DemoDevice<S>| -> Result<(), DemoError> {
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
    body(device)?;
    let pages = |d: &DemoDevice<S>| d.memory_report(CONSUMER).map_or(0, |r| r.total().pages);
    let (allocs_before, pages_before) = (stage.allocations(), pages(device));
    device
        .begin_capture(CONSUMER)
        .map_err(unexpected("begin_capture"))?;
    body(device)?;
    let graph = device
        .end_capture(CONSUMER)
        .map_err(unexpected("end_capture"))?;
    match (allocs_before, stage.allocations()) {
        (Some(before), Some(after)) => writeln!(
            out,
            "   warm-up, capture, seal -> graph #{}; storage allocations inside the window: {}",
            graph.id().0,
            after - before
        )?,
        _ => writeln!(
            out,
            "   warm-up, capture, seal -> graph #{}; stream 0's pages before / after the window: {} / {}",
            graph.id().0,
            pages_before,
            pages(device)
        )?,
    }
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
    match stage.hazards() {
        None => writeln!(out, "   hazards: {}", stage.no_checker())?,
        Some(hazards) if hazards.is_empty() => {
            writeln!(out, "   hazards reported by the mock's checker: none")?;
        }
        Some(hazards) => {
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
    }
    Ok(())
}
