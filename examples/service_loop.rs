//! A firmware-style service loop, run on the host over the mock.
//!
//! ```sh
//! cargo run --example service_loop
//! ```
//!
//! The service itself (`examples/service.rs`, in this crate's `#![no_std]`
//! library) is what would run on the firmware: a bounded configuration, a
//! graph captured at start, and a loop that serves a frame when one is
//! there and polls the device when not. Here the mock plays the device, a
//! counter plays the sensor, and one replay is made to fail on purpose: the
//! frame is reported lost and the service goes on.
//!
//! What this program checks: every served frame is right, exactly the
//! frame hit by the failure is lost, the loop makes no storage allocation,
//! the deferred frees are released by the idle polls, and the mock's hazard
//! checker saw nothing.

use streamcore::failure::FailureId;
use streamcore::memory::HumanBytes;
use streamcore::platform::ErrorKind;
use streamcore_examples::service::{CALIBRATE, Frames, Results, STREAM, Service};
use streamcore_mock::fault::{FaultInjector, FaultPlan, Site};
use streamcore_mock::{MockConfig, MockPlatform};

const FRAME_WORDS: usize = 1024;
const GAIN: u32 = 3;
const OFFSET: u32 = 7;
const TICKS: u64 = 30;
/// The replay of this frame (counting from 1) fails.
const FAILING_FRAME: u64 = 4;

/// A sensor with a frame on two ticks out of three.
struct Sensor;

impl Frames for Sensor {
    fn next(&mut self, tick: u64, frame: &mut [u8]) -> bool {
        if tick % 3 == 2 {
            return false;
        }
        for (i, word) in frame.chunks_exact_mut(4).enumerate() {
            word.copy_from_slice(&sample(tick, i).to_le_bytes());
        }
        true
    }
}

fn sample(tick: u64, i: usize) -> u32 {
    (tick as u32) * 1000 + i as u32
}

/// Checks each result against the calibration, and keeps the lost frames.
#[derive(Default)]
struct Checker {
    served: u64,
    lost: Vec<(u64, FailureId)>,
}

impl Results for Checker {
    fn served(&mut self, tick: u64, output: &[u8]) {
        for (i, word) in output.chunks_exact(4).enumerate() {
            let got = u32::from_le_bytes(word.try_into().expect("4 bytes"));
            assert_eq!(
                got,
                sample(tick, i) * GAIN + OFFSET,
                "tick {tick}, word {i}"
            );
        }
        self.served += 1;
    }

    fn lost(&mut self, tick: u64, failure: FailureId) {
        self.lost.push((tick, failure));
    }
}

fn main() {
    // The mock under a scheduler seed, with the kernel's Rust body.
    let mock = MockPlatform::with_config(MockConfig::default().seed(7)).expect("mock");
    mock.register_kernel(CALIBRATE.name, |_, args| {
        let info = args[2].to_u32s(); // u64 words [n, gain, offset]
        let (n, gain, offset) = (info[0] as usize, info[2], info[4]);
        let y: Vec<u32> = args[0].to_u32s()[..n]
            .iter()
            .map(|x| x * gain + offset)
            .collect();
        args[1].write_u32s(&y);
    });
    // The graph launch of one frame fails (the capture at start made none).
    let platform = FaultInjector::new(
        mock.clone(),
        FaultPlan::new().fail_nth(Site::LaunchGraph, FAILING_FRAME, ErrorKind::Kernel),
    );

    let mut service = Service::start(platform, FRAME_WORDS, GAIN, OFFSET).expect("start");
    let at_start = mock.counters();
    let mut checker = Checker::default();
    let stats = service
        .run(TICKS, &mut Sensor, &mut checker)
        .expect("the service loop");
    let after = mock.counters();

    println!(
        "streamcore service loop — mock platform, {TICKS} ticks, {FRAME_WORDS} words per frame"
    );
    println!(
        "frames served {}, lost {}, idle ticks {}; the polls released {} deferred frees",
        stats.served, stats.lost, stats.idle, stats.released
    );
    for (tick, failure) in &checker.lost {
        println!("  frame of tick {tick}: lost to {failure}; the next frame was served again");
    }
    let allocations = (after.allocs + after.host_allocs) - (at_start.allocs + at_start.host_allocs);
    println!("storage allocations while serving: {allocations}");
    if let Some(report) = service.device().memory_report(STREAM) {
        let total = report.total();
        println!(
            "stream 0 holds {} pages, {} reserved, {} in use",
            total.pages,
            HumanBytes(total.reserved),
            HumanBytes(total.in_use)
        );
    }
    let hazards = mock.hazards();
    println!("hazards reported by the mock's checker: {}", hazards.len());

    assert_eq!(checker.served, stats.served);
    assert_eq!(stats.served + stats.lost + stats.idle, TICKS);
    // The fourth frame (ticks 0, 1, 3, 4 carry the first four) is lost.
    assert_eq!(checker.lost.len(), 1, "exactly the failing frame is lost");
    assert_eq!(checker.lost[0].0, 4);
    assert_eq!(allocations, 0, "the loop allocates no storage");
    assert!(stats.released > 0, "the polls release deferred frees");
    assert!(hazards.is_empty(), "{hazards:?}");
}

#[test]
fn runs() {
    main();
}
