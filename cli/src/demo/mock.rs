//! The demo on the mock: a seeded scheduler decides when queued work
//! completes, the event log says in which order it did, and the hazard
//! checker gives its verdict at the end.

use std::io::Write;

use streamcore::device::{Device, DeviceConfig};
use streamcore_kernels as kernels;
use streamcore_mock::fault::{FaultInjector, FaultPlan};
use streamcore_mock::{LogEntry, LogOp, MockConfig, MockPlatform};

use super::DemoError;
use super::pipeline::{self, Stage};

/// The mock under a scheduler seed.
pub struct MockStage {
    mock: MockPlatform,
    seed: u64,
}

impl MockStage {
    /// A mock with the demo's kernels, scheduled by `seed`.
    pub fn new(seed: u64) -> Result<Self, DemoError> {
        let mock = MockPlatform::with_config(MockConfig::default().seed(seed))
            .map_err(|e| DemoError::Unexpected(format!("mock: {e}")))?;
        kernels::register_mock(&mock);
        Ok(Self { mock, seed })
    }
}

/// One completed command, short: `s1 fill`, `s0 wait`, `s1 upload`.
fn short(entry: &LogEntry) -> String {
    let what = match &entry.what {
        LogOp::CopyToDevice { .. } => "upload".to_owned(),
        LogOp::CopyToHost { .. } => "download".to_owned(),
        LogOp::CopyDevice { .. } => "copy".to_owned(),
        LogOp::Launch { kernel, .. } => kernel.trim_start_matches("sc_").to_owned(),
        LogOp::Record { .. } => "event".to_owned(),
        LogOp::Wait { .. } => "wait".to_owned(),
        _ => "other".to_owned(),
    };
    format!("s{} {what}", entry.stream)
}

impl Stage for MockStage {
    type P = MockPlatform;

    fn describe(&self) -> String {
        format!("mock platform, scheduler seed {}", self.seed)
    }

    fn completed(&self) -> Option<String> {
        let done = self.mock.take_event_log();
        let list = if done.is_empty() {
            "nothing yet".to_owned()
        } else {
            done.iter().map(short).collect::<Vec<_>>().join(", ")
        };
        Some(format!(
            "completed so far, in the order seed {} chose: {list}",
            self.seed
        ))
    }

    fn allocations(&self) -> Option<u64> {
        let c = self.mock.counters();
        Some(c.allocs + c.host_allocs)
    }

    fn hazards(&self) -> Option<Vec<String>> {
        Some(self.mock.hazards().iter().map(|h| h.to_string()).collect())
    }
}

/// Runs the demo on the mock with scheduler seed `seed`.
pub fn run(seed: u64, out: &mut impl Write) -> Result<(), DemoError> {
    let stage = MockStage::new(seed)?;
    let platform = FaultInjector::new(
        stage.mock.clone(),
        FaultPlan::new().fail_kernel(kernels::FLAKY.name),
    );
    let device = Device::new(platform, DeviceConfig::with_streams(2))
        .map_err(|e| DemoError::Unexpected(format!("device: {e}")))?;
    pipeline::run(&stage, &device, out)
}
