//! The device's own bookkeeping per operation, on the null platform (every
//! platform call returns at once): what `Device` adds on top of a driver.
//!
//! `cargo bench -p streamcore --bench device`

use std::hint::black_box;

use divan::Bencher;
use streamcore::device::{Device, DeviceConfig, KernelId, Launched};
use streamcore::null::Null;
use streamcore::platform::{KernelSource, LaunchDims};
use streamcore::stream::StreamId;

fn main() {
    divan::main();
}

const S0: StreamId = StreamId(0);
const S1: StreamId = StreamId(1);

fn device() -> Device<Null> {
    Device::new(Null, DeviceConfig::with_streams(2)).unwrap()
}

/// A kernel taking `bindings` bindings (the info buffer included).
fn kernel(d: &Device<Null>, bindings: usize) -> KernelId {
    d.load_kernel(&KernelSource {
        name: "k",
        source: "",
        bindings,
    })
    .unwrap()
}

/// One launch with three buffers and its info words served by the cache.
#[divan::bench]
fn launch_3_buffers_info_hit(b: Bencher<'_, '_>) {
    let d = device();
    let k = kernel(&d, 4);
    let bufs: Vec<_> = (0..3).map(|_| d.alloc(S0, 4096).unwrap()).collect();
    let dims = LaunchDims::linear(4, 256);
    b.bench_local(|| {
        let r = d.launch(
            S0,
            k,
            dims,
            &[bufs[0].read(), bufs[1].read(), bufs[2].write()],
            black_box(&[1024, 7]),
        );
        assert_eq!(r.unwrap(), Launched::Queued);
    });
}

/// A producer launch on stream 1 and a consumer launch on stream 0: the
/// consumer needs one event wait each time.
#[divan::bench]
fn cross_stream_handoff(b: Bencher<'_, '_>) {
    let d = device();
    let (k1, k2) = (kernel(&d, 2), kernel(&d, 3));
    let a = d.alloc(S1, 4096).unwrap();
    let c = d.alloc(S0, 4096).unwrap();
    let dims = LaunchDims::linear(4, 256);
    b.bench_local(|| {
        assert_eq!(
            d.launch(S1, k1, dims, &[a.write()], &[1024]).unwrap(),
            Launched::Queued
        );
        let r = d.launch(S0, k2, dims, &[a.read(), c.write()], &[1024]);
        assert_eq!(r.unwrap(), Launched::Queued);
    });
}

/// `alloc` of 1 MiB, then dropping the handle and polling the deferred free.
#[divan::bench]
fn alloc_drop_poll_1mib(b: Bencher<'_, '_>) {
    let d = device();
    b.bench_local(|| {
        let buf = d.alloc(S0, 1 << 20).unwrap();
        drop(black_box(buf));
        d.poll().unwrap();
    });
}
