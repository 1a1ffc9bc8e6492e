//! The no_std scenario: the null platform driven through the whole device
//! API, plus the sync table and capture state machine on their own. Shared
//! by the host static library (`lib.rs`) and the Cortex-M image run under
//! QEMU (`firmware/`), so both prove the same thing.

use streamcore::device::{Device, DeviceConfig, Launched};
use streamcore::null::Null;
use streamcore::platform::{KernelSource, LaunchDims};
use streamcore::stream::{CaptureState, StreamId, SyncTable, WaitPlan, WriteMark};

/// What [`run`] returns when every part passed.
pub const ALL_PASSED: u32 = 4;

/// Runs the scenario: the number of waits a two-stream hand-off needs (1),
/// plus whether a capture sealed (1), plus whether the whole device API ran
/// a cross-stream hand-off, a capture and a replay and released everything
/// (1), plus whether sizes past the host's address space are refused (1):
/// [`ALL_PASSED`] when all is well.
pub fn run() -> u32 {
    sync_and_capture()
        + u32::from(device_round_trip().is_some())
        + u32::from(sizes_past_the_address_space())
}

/// On a 32-bit target, a buffer larger than the address space reads back
/// as a typed error, never as a truncated copy (its size used to be cast to
/// `usize`). On wider targets there is nothing to check.
fn sizes_past_the_address_space() -> bool {
    if usize::BITS > 32 {
        return true;
    }
    let Ok(device) = Device::new(Null, DeviceConfig::with_streams(1)) else {
        return false;
    };
    let s0 = StreamId(0);
    let Ok(big) = device.alloc(s0, (1 << 32) + 16) else {
        return false;
    };
    matches!(
        device.read(s0, &big),
        Err(streamcore::error::Error::InvalidArgument(_))
    )
}

fn device_round_trip() -> Option<()> {
    let device = Device::new(Null, DeviceConfig::with_streams(2)).ok()?;
    let kernel = device
        .load_kernel(&KernelSource {
            name: "k",
            source: "",
            bindings: 3,
        })
        .ok()?;
    let (s0, s1) = (StreamId(0), StreamId(1));
    let a = device.upload(s1, &[1, 2, 3, 4]).ok()?;
    let b = device.alloc(s0, 4).ok()?;
    let dims = LaunchDims::linear(1, 4);
    let ran = device
        .launch(s0, kernel, dims, &[a.read(), b.write()], &[4])
        .ok()?;
    (ran == Launched::Queued && device.stats().waits == 1).then_some(())?;
    let queued = |r: Option<Launched>| (r == Some(Launched::Queued)).then_some(());
    device.prepare(s0).ok()?;
    queued(
        device
            .launch(s0, kernel, dims, &[a.read(), b.write()], &[4])
            .ok(),
    )?;
    device.begin_capture(s0).ok()?;
    queued(
        device
            .launch(s0, kernel, dims, &[a.read(), b.write()], &[4])
            .ok(),
    )?;
    let graph = device.end_capture(s0).ok()?;
    queued(device.replay(&graph).ok())?;
    drop((a, b, graph));
    device.sync_all().ok()?;
    let census = device.census();
    (census.buffers == 0 && census.graphs == 0 && census.deferred == 0).then_some(())
}

fn sync_and_capture() -> u32 {
    let mut table = SyncTable::new(2);
    let producer = StreamId(1);
    let cursor = table.submit(producer).unwrap_or(0);
    let mut plan = WaitPlan::new(2);
    let waits = match table.plan(
        StreamId(0),
        [WriteMark {
            stream: producer,
            cursor,
        }],
        &mut plan,
    ) {
        Ok(()) => plan.len() as u32,
        Err(_) => 0,
    };
    let mut capture = CaptureState::new();
    let sealed = capture
        .prepare()
        .and_then(|()| capture.begin())
        .and_then(|()| capture.end());
    waits + u32::from(sealed.is_ok())
}
