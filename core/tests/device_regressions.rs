//! Regression tests of the device on platforms that hold no bytes: each
//! failed before its fix (issue 14 items 3, 4, 6 and 8, and one the fuzzer
//! found).

use std::sync::{Arc, Mutex};

use streamcore::device::{ConfigError, Device, DeviceConfig, Launched, MAX_STREAMS};
use streamcore::error::Error;
use streamcore::failure::Operation;
use streamcore::null::{Null, NullError, NullStorage};
use streamcore::platform::{
    Binding, Capabilities, DeviceProperties, DeviceRange, GraphCapture, HostRange, KernelSource,
    LaunchDims, Platform,
};
use streamcore::stream::StreamId;

const S0: StreamId = StreamId(0);
const S1: StreamId = StreamId(1);

fn null(streams: u16) -> Device<Null> {
    Device::new(Null, DeviceConfig::with_streams(streams)).unwrap()
}

fn kernel<P: Platform>(d: &Device<P>, bindings: usize) -> streamcore::device::KernelId {
    d.load_kernel(&KernelSource {
        name: "k",
        source: "",
        bindings,
    })
    .unwrap()
}

/// Item 3: `failure_of` checks the device like every other call: a healthy
/// buffer of device B, asked of device A, is not one of A's failures.
#[test]
fn failure_of_refuses_another_devices_buffer() {
    let a = null(1);
    let b = null(1);
    // A buffer of A claimed by its failed reservation, and B's first buffer
    // (same slot and generation in B's table).
    let claimed = a.empty(S0, u64::MAX).unwrap();
    let failure = a.failure_of(&claimed).expect("claimed by its reservation");
    let healthy = b.alloc(S0, 64).unwrap();
    assert_eq!(healthy.id(), claimed.id(), "the ids collide across devices");
    assert_eq!(a.failure_of(&healthy), None, "B's buffer is not A's");
    assert_eq!(b.failure_of(&healthy), None);
    assert_eq!(a.failure_of(&claimed), Some(failure));
}

/// Item 3: a kernel id of one device is refused by another, even when the
/// other loaded a kernel at the same index.
#[test]
fn a_kernel_of_another_device_is_refused() {
    let a = null(1);
    let b = null(1);
    let ka = kernel(&a, 1);
    let kb = kernel(&b, 1);
    assert_eq!(ka.index(), kb.index());
    let out = b.alloc(S0, 64).unwrap();
    assert!(matches!(
        b.launch(S0, ka, LaunchDims::linear(1, 1), &[out.write()], &[]),
        Err(Error::UnknownKernel(k)) if k == ka
    ));
    assert_eq!(b.stats().launches, 0);
    assert_eq!(
        b.launch(S0, kb, LaunchDims::linear(1, 1), &[out.write()], &[])
            .unwrap(),
        Launched::Queued
    );
}

/// A launch whose bindings differ from the kernel's declared count is
/// refused before anything changes (no claim, no info upload, no launch).
#[test]
fn a_launch_with_the_wrong_binding_count_is_refused() {
    let d = null(1);
    let k = kernel(&d, 2);
    let (a, out) = (d.alloc(S0, 64).unwrap(), d.alloc(S0, 64).unwrap());
    let dims = LaunchDims::linear(1, 1);
    for (args, info) in [
        (&[out.write()][..], &[][..]),
        (&[a.read(), out.write()][..], &[7u64][..]),
    ] {
        assert!(matches!(
            d.launch(S0, k, dims, args, info),
            Err(Error::InvalidArgument(_))
        ));
    }
    let s = d.stats();
    assert_eq!((s.launches, s.info_misses, s.failures), (0, 0, 0));
    assert_eq!(
        d.launch(S0, k, dims, &[out.write()], &[7]).unwrap(),
        Launched::Queued
    );
}

/// A launch its arguments refuse (another device's buffer) uploads no info
/// words and caches none: found by the fuzzer's oracle once the clean path
/// bound the info words before the argument pass.
#[test]
fn a_launch_refused_for_its_arguments_leaves_the_info_cache_alone() {
    let a = null(1);
    let b = null(1);
    let k = kernel(&a, 2);
    let foreign = b.alloc(S0, 64).unwrap();
    let dims = LaunchDims::linear(1, 1);
    assert!(matches!(
        a.launch(S0, k, dims, &[foreign.write()], &[7]),
        Err(Error::StaleBuffer(_))
    ));
    let s = a.stats();
    assert_eq!((s.launches, s.info_misses, s.uploads), (0, 0, 0));
    // The same words on a valid launch are a miss (nothing was cached).
    let out = a.alloc(S0, 64).unwrap();
    assert_eq!(
        a.launch(S0, k, dims, &[out.write()], &[7]).unwrap(),
        Launched::Queued
    );
    let s = a.stats();
    assert_eq!((s.launches, s.info_misses, s.info_hits), (1, 1, 0));
    // Refused again while the words are the stream's last hit (served
    // without a cache call): no hit is counted.
    assert_eq!(
        a.launch(S0, k, dims, &[out.write()], &[7]).unwrap(),
        Launched::Queued
    );
    assert!(matches!(
        a.launch(S0, k, dims, &[foreign.write()], &[7]),
        Err(Error::StaleBuffer(_))
    ));
    let s = a.stats();
    assert_eq!((s.launches, s.info_misses, s.info_hits), (2, 1, 1));
}

/// Item 4: `empty(stream, 0)` is claimed by its failed reservation: work
/// over it is skipped and reading it gives the reservation report.
#[test]
fn an_empty_zero_byte_buffer_is_claimed_by_its_reservation() {
    let d = null(1);
    let k = kernel(&d, 2);
    let b = d.empty(S0, 0).unwrap();
    assert_eq!(d.stats().failures, 1);
    let failure = d.failure_of(&b).expect("claimed by its failed reservation");
    assert_eq!(d.census().failures, 1);
    match d.read(S0, &b) {
        Err(Error::Tainted(r)) => {
            assert_eq!(r.failure, failure);
            assert!(r.reached_root, "{r}");
            assert!(
                r.root
                    .contains(&Operation::Reserve { bytes: 0 }.to_string()),
                "{r}"
            );
            // The report shows the buffer's zero bytes, not the one-byte
            // claim that carries its failure.
            assert_eq!((r.read.len, r.claimed.len, r.origin.len), (0, 0, 0));
            let text = r.to_string();
            assert!(text.contains("(no bytes)"), "{text}");
            assert!(!text.contains("[0, 1)"), "{text}");
        }
        other => panic!("reading it: {other:?}"),
    }
    match d.write(S0, &b, &[]) {
        Err(Error::InvalidArgument(_)) => {}
        other => panic!("an empty write: {other:?}"),
    }
    let out = d.alloc(S0, 64).unwrap();
    assert_eq!(
        d.launch(
            S0,
            k,
            LaunchDims::linear(1, 1),
            &[b.read(), out.write()],
            &[]
        )
        .unwrap(),
        Launched::Skipped(failure)
    );
    drop((b, out));
    d.sync_all().unwrap();
    assert_eq!(d.census().failures, 0, "freed with its buffer");
}

/// Item 6: the stream count is bounded with a typed error (it used to abort
/// the process allocating streams² words up front).
#[test]
fn the_stream_count_is_bounded_with_a_typed_error() {
    for (streams, want) in [
        (0, ConfigError::NoStreams),
        (
            MAX_STREAMS + 1,
            ConfigError::TooManyStreams {
                requested: MAX_STREAMS + 1,
                max: MAX_STREAMS,
            },
        ),
        (
            u16::MAX,
            ConfigError::TooManyStreams {
                requested: u16::MAX,
                max: MAX_STREAMS,
            },
        ),
    ] {
        match Device::new(Null, DeviceConfig::with_streams(streams)) {
            Err(Error::Config(e)) => assert_eq!(e, want),
            Err(e) => panic!("{streams} streams: {e}"),
            Ok(_) => panic!("{streams} streams accepted"),
        }
    }
    // The bound itself works, and its last stream too.
    let d = null(MAX_STREAMS);
    let last = StreamId(MAX_STREAMS - 1);
    let b = d.alloc(last, 64).unwrap();
    let c = d.alloc(S0, 64).unwrap();
    let k = kernel(&d, 2);
    assert_eq!(
        d.launch(S0, k, LaunchDims::linear(1, 1), &[b.read(), c.write()], &[])
            .unwrap(),
        Launched::Queued
    );
    drop((b, c));
    d.sync_all().unwrap();
    assert_eq!(d.census().deferred, 0);
}

/// What the teardown platform saw, in order.
type Log = Arc<Mutex<Vec<&'static str>>>;

fn note(log: &Log, what: &'static str) {
    log.lock().unwrap().push(what);
}

/// Drops into the log.
struct Noted(Log, &'static str);

impl Drop for Noted {
    fn drop(&mut self) {
        note(&self.0, self.1);
    }
}

/// The null platform, logging host syncs, graph destroys and the drops of
/// its streams, kernels, graphs and storages.
#[derive(Clone)]
struct Teardown(Log);

struct TStorage(NullStorage, #[allow(dead_code)] Noted);

impl streamcore::platform::Storage for TStorage {
    type Error = NullError;
    fn alignment(&self) -> u64 {
        self.0.alignment()
    }
    fn alloc(&mut self, size: u64) -> Result<streamcore::platform::PageId, NullError> {
        self.0.alloc(size)
    }
    fn dealloc(&mut self, page: streamcore::platform::PageId) {
        self.0.dealloc(page)
    }
    fn flush(&mut self) -> Result<(), NullError> {
        self.0.flush()
    }
}

impl streamcore::platform::HostStorage for TStorage {
    fn write(
        &mut self,
        p: streamcore::platform::PageId,
        o: u64,
        d: &[u8],
    ) -> Result<(), NullError> {
        self.0.write(p, o, d)
    }
    fn read(&self, p: streamcore::platform::PageId, o: u64, d: &mut [u8]) -> Result<(), NullError> {
        self.0.read(p, o, d)
    }
}

impl Platform for Teardown {
    type Stream = Noted;
    type Event = ();
    type Storage = TStorage;
    type HostStorage = TStorage;
    type Capture = Self;
    type Kernel = Noted;
    type Error = NullError;

    fn properties(&self) -> DeviceProperties {
        Null.properties()
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities::GRAPH_CAPTURE
    }
    fn capture(&self) -> Option<&Self> {
        Some(self)
    }
    fn create_stream(&self) -> Result<Noted, NullError> {
        Ok(Noted(self.0.clone(), "stream"))
    }
    fn device_storage(&self) -> Result<TStorage, NullError> {
        Ok(TStorage(
            NullStorage::default(),
            Noted(self.0.clone(), "storage"),
        ))
    }
    fn host_storage(&self) -> Result<TStorage, NullError> {
        Ok(TStorage(
            NullStorage::default(),
            Noted(self.0.clone(), "host storage"),
        ))
    }
    fn record(&self, _: &mut Noted) -> Result<(), NullError> {
        Ok(())
    }
    fn wait(&self, _: &mut Noted, _: &()) -> Result<(), NullError> {
        Ok(())
    }
    fn query(&self, _: &()) -> Result<bool, NullError> {
        Ok(true)
    }
    fn synchronize(&self, _: &()) -> Result<(), NullError> {
        note(&self.0, "sync");
        Ok(())
    }
    fn copy_to_device(&self, _: &mut Noted, _: HostRange, _: DeviceRange) -> Result<(), NullError> {
        Ok(())
    }
    fn copy_to_host(&self, _: &mut Noted, _: DeviceRange, _: HostRange) -> Result<(), NullError> {
        Ok(())
    }
    fn copy_device(&self, _: &mut Noted, _: DeviceRange, _: DeviceRange) -> Result<(), NullError> {
        Ok(())
    }
    fn load_kernel(&self, _: &KernelSource<'_>) -> Result<Noted, NullError> {
        Ok(Noted(self.0.clone(), "kernel"))
    }
    fn launch(
        &self,
        _: &mut Noted,
        _: &Noted,
        _: LaunchDims,
        _: &[Binding],
    ) -> Result<(), NullError> {
        Ok(())
    }
}

impl GraphCapture<Teardown> for Teardown {
    type Graph = Noted;

    fn begin_capture(&self, _: &mut Noted) -> Result<(), NullError> {
        Ok(())
    }
    fn end_capture(&self, _: &mut Noted) -> Result<Noted, NullError> {
        Ok(Noted(self.0.clone(), "graph"))
    }
    fn launch_graph(&self, _: &mut Noted, _: &Noted) -> Result<(), NullError> {
        Ok(())
    }
    fn destroy_graph(&self, g: Noted) -> Result<(), NullError> {
        note(&self.0, "destroy graph");
        drop(g);
        Ok(())
    }
}

/// Item 8: dropping the device waits for queued work, then destroys graphs,
/// kernels, streams and storages, in that order.
#[test]
fn teardown_syncs_then_destroys_graphs_kernels_streams_storages() {
    let log = Log::default();
    let d = Device::new(Teardown(log.clone()), DeviceConfig::with_streams(2)).unwrap();
    let k = kernel(&d, 2);
    let out = d.alloc(S0, 64).unwrap();
    let other = d.alloc(S1, 64).unwrap();
    d.prepare(S0).unwrap();
    let run = || d.launch(S0, k, LaunchDims::linear(1, 1), &[out.write()], &[1]);
    assert_eq!(run().unwrap(), Launched::Queued);
    d.begin_capture(S0).unwrap();
    assert_eq!(run().unwrap(), Launched::Queued);
    let graph = d.end_capture(S0).unwrap();
    assert_eq!(d.replay(&graph).unwrap(), Launched::Queued);
    log.lock().unwrap().clear();
    // The user's handles outlive the device: teardown does not wait for them.
    drop(d);
    let seen = log.lock().unwrap().clone();
    let last = |what: &str| seen.iter().rposition(|s| *s == what);
    let first = |what: &str| seen.iter().position(|s| *s == what);
    let order = [
        ("sync", "destroy graph"),
        ("destroy graph", "kernel"),
        ("graph", "kernel"),
        ("kernel", "stream"),
        ("stream", "storage"),
        ("storage", "host storage"),
    ];
    for (before, after) in order {
        let (Some(b), Some(a)) = (last(before), first(after)) else {
            panic!("{before} or {after} missing from {seen:?}");
        };
        assert!(b < a, "every {before} before any {after}: {seen:?}");
    }
    assert_eq!(seen.iter().filter(|s| **s == "stream").count(), 2);
    assert_eq!(seen.iter().filter(|s| **s == "storage").count(), 2);
    drop((graph, out, other));
}
