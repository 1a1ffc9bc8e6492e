//! A host-side, deterministic test of your own pipeline: on the mock, under
//! many schedules (seeded, the laziest, the eagerest), with the hazard
//! checker, an injected kernel failure and an out-of-memory device.
//! (For every interleaving of short programs, see `fuzz_orderings`.)
//!
//! ```sh
//! cargo run --example pipeline_test     # the checks, one line each
//! cargo test --example pipeline_test    # the same checks as tests
//! ```
//!
//! The pipeline is written once, generic over the platform, as your
//! application would have it; the tests give it a mock. Copy the shape:
//! a helper that builds a mock device (scheduler, kernels, faults), one
//! test per property, `assert_no_hazards` after each run.

use streamcore::Error;
use streamcore::device::{Buffer, Device, DeviceConfig, KernelId, Launched};
use streamcore::platform::{ErrorKind, Platform};
use streamcore::stream::StreamId;
use streamcore_kernels::{ADD, SCALE, bytes, dims, register_mock, words};
use streamcore_mock::fault::{FaultInjector, FaultPlan, Site};
use streamcore_mock::{MockConfig, MockPlatform};

// ---- Your pipeline (generic over the platform) ----

const CONSUMER: StreamId = StreamId(0);
const PRODUCER: StreamId = StreamId(1);

/// `out = raw * gain + bias`: the scaling on the producer stream, the sum
/// on the consumer stream, which reads what the producer wrote.
struct Pipeline {
    scale: KernelId,
    add: KernelId,
}

impl Pipeline {
    fn load<P: Platform>(device: &Device<P>) -> Result<Self, Error<P::Error>> {
        Ok(Self {
            scale: device.load_kernel(&SCALE)?,
            add: device.load_kernel(&ADD)?,
        })
    }

    /// Queues the pipeline over `raw` and returns the output buffer. A
    /// failed launch does not stop it: its output carries the failure, the
    /// launches that read it are skipped, and reading the output reports
    /// the chain. Other errors (out of memory, a bad argument) do.
    fn run<P: Platform>(
        &self,
        device: &Device<P>,
        raw: &[u32],
        gain: u32,
        bias: &Buffer,
    ) -> Result<Buffer, Error<P::Error>> {
        let n = raw.len();
        let input = device.upload(PRODUCER, &bytes(raw))?;
        let scaled = device.alloc(PRODUCER, 4 * n as u64)?;
        let info = [n as u64, u64::from(gain)];
        tolerate(device.launch(
            PRODUCER,
            self.scale,
            dims(n),
            &[input.read(), scaled.write()],
            &info,
        ))?;
        let out = device.alloc(CONSUMER, 4 * n as u64)?;
        tolerate(device.launch(
            CONSUMER,
            self.add,
            dims(n),
            &[scaled.read(), bias.read(), out.write()],
            &[n as u64],
        ))?;
        Ok(out)
    }
}

/// A failed launch is already recorded in the taint graph: carry on.
fn tolerate<E>(launched: Result<Launched, Error<E>>) -> Result<(), Error<E>> {
    match launched {
        Ok(_) | Err(Error::Failed { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

// ---- The test bench ----

type Mock = FaultInjector<MockPlatform>;

/// A device on the mock built from `config`, with the kernels' Rust bodies
/// and `plan`'s faults; the mock is returned for its checker.
fn mock_device(config: MockConfig, plan: FaultPlan) -> (MockPlatform, Device<Mock>) {
    let mock = MockPlatform::with_config(config).expect("mock");
    register_mock(&mock);
    let device = Device::new(
        FaultInjector::new(mock.clone(), plan),
        DeviceConfig::with_streams(2),
    )
    .expect("device");
    (mock, device)
}

const N: usize = 1000;
const GAIN: u32 = 3;

fn raw() -> Vec<u32> {
    (0..N as u32).collect()
}

fn expected(bias: u32) -> Vec<u32> {
    raw().iter().map(|x| x * GAIN + bias).collect()
}

/// Runs the pipeline once on `device`: the output's words.
fn run_once(
    device: &Device<Mock>,
    bias: u32,
) -> Result<Vec<u32>, Error<<Mock as Platform>::Error>> {
    let pipeline = Pipeline::load(device)?;
    let bias = device.upload(CONSUMER, &bytes(&vec![bias; N]))?;
    let out = pipeline.run(device, &raw(), GAIN, &bias)?;
    Ok(words(&device.read(CONSUMER, &out)?))
}

// ---- The checks ----

/// The same answer under 32 scheduler seeds, one cross-stream wait each
/// time, no hazard.
fn every_seed_gives_the_same_answer() -> String {
    for seed in 0..32 {
        let (mock, device) = mock_device(MockConfig::default().seed(seed), FaultPlan::new());
        assert_eq!(
            run_once(&device, 5).expect("run"),
            expected(5),
            "seed {seed}"
        );
        assert_eq!(
            device.stats().waits,
            1,
            "seed {seed}: one wait, on the producer"
        );
        mock.assert_no_hazards();
    }
    "32 scheduler seeds: same output, one cross-stream wait each, no hazard".into()
}

/// The two extreme schedules: the laziest (nothing completes until the
/// host waits) and the eagerest (everything completes as soon as it can).
/// A pipeline that forgets a dependency shows it in one of them.
fn the_extreme_schedules_give_the_same_answer() -> String {
    for (name, config) in [
        ("lazy", MockConfig::default().lazy()),
        ("eager", MockConfig::default().eager()),
    ] {
        let (mock, device) = mock_device(config, FaultPlan::new());
        assert_eq!(run_once(&device, 5).expect("run"), expected(5), "{name}");
        mock.assert_no_hazards();
    }
    "the laziest and the eagerest schedules: same output, no hazard".into()
}

/// The scaling fails once: the output is refused with the chain back to
/// that failure, the bias buffer (which shares nothing with it) is intact,
/// and the next run is right again.
fn a_failed_kernel_taints_only_what_depends_on_it() -> String {
    let plan = FaultPlan::new().fail_nth(Site::Kernel(SCALE.name.into()), 1, ErrorKind::Kernel);
    let (mock, device) = mock_device(MockConfig::default(), plan);
    let pipeline = Pipeline::load(&device).expect("load");
    let bias = device.upload(CONSUMER, &bytes(&vec![5; N])).expect("bias");
    let out = pipeline.run(&device, &raw(), GAIN, &bias).expect("run");
    let failure = device.failure_of(&out).expect("the output is claimed");
    let report = match device.read(CONSUMER, &out) {
        Err(Error::Tainted(report)) => report,
        other => panic!("reading a tainted output: {other:?}"),
    };
    assert_eq!(report.failure, failure);
    assert!(
        report.reached_root,
        "the chain reaches the failed launch:\n{report}"
    );
    assert!(report.root.contains(SCALE.name), "{report}");
    assert_eq!(
        words(&device.read(CONSUMER, &bias).expect("bias")),
        vec![5; N]
    );
    // The fault was one-shot: the next run is right.
    let again = pipeline.run(&device, &raw(), GAIN, &bias).expect("run");
    assert_eq!(
        words(&device.read(CONSUMER, &again).expect("read")),
        expected(5)
    );
    assert_eq!(
        device.stats().skipped,
        1,
        "the sum over the failed scaling was skipped"
    );
    mock.assert_no_hazards();
    format!("an injected kernel failure: the output refused ({failure}), the rest intact")
}

/// A device of 16 MiB: a pipeline over 6 MiB of input (three such buffers)
/// is refused with a typed error (no panic), and the device serves a
/// smaller run afterwards.
fn out_of_memory_is_a_typed_error() -> String {
    let config = MockConfig::default()
        .total_memory(16 << 20)
        .max_page_size(16 << 20);
    let (mock, device) = mock_device(config, FaultPlan::new());
    let pipeline = Pipeline::load(&device).expect("load");
    let big = vec![1u32; 6 << 18];
    let bias = device.upload(CONSUMER, &bytes(&vec![5; N])).expect("bias");
    let refused = pipeline.run(&device, &big, GAIN, &bias);
    let Err(e @ Error::Memory(_)) = refused else {
        panic!("expected an out-of-memory error, got {refused:?}");
    };
    let out = pipeline
        .run(&device, &raw(), GAIN, &bias)
        .expect("a smaller run fits");
    assert_eq!(
        words(&device.read(CONSUMER, &out).expect("read")),
        expected(5)
    );
    mock.assert_no_hazards();
    // The error's text ends with the pools' report; its first line says why.
    let why = e.to_string().lines().next().unwrap_or_default().to_owned();
    format!("out of memory: a typed error ({why}), then a smaller run succeeds")
}

#[cfg_attr(test, allow(dead_code))]
fn main() {
    println!("pipeline_test: out = raw * {GAIN} + bias over {N} words, on two streams");
    for check in [
        every_seed_gives_the_same_answer,
        the_extreme_schedules_give_the_same_answer,
        a_failed_kernel_taints_only_what_depends_on_it,
        out_of_memory_is_a_typed_error,
    ] {
        println!("  ok: {}", check());
    }
}

#[test]
fn same_answer_under_every_seed() {
    every_seed_gives_the_same_answer();
}

#[test]
fn same_answer_under_the_extreme_schedules() {
    the_extreme_schedules_give_the_same_answer();
}

#[test]
fn failed_kernel_taints_only_what_depends_on_it() {
    a_failed_kernel_taints_only_what_depends_on_it();
}

#[test]
fn out_of_memory() {
    out_of_memory_is_a_typed_error();
}
