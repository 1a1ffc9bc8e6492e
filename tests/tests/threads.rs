//! One device shared by several threads, each driving its own stream, plus
//! a hand-off between two of them: results are right and the mock's hazard
//! checker stays silent.

use std::sync::Arc;
use std::thread;

use streamcore::device::Launched;
use streamcore::stream::StreamId;
use streamcore_tests::harness::{Harness, Setup};
use streamcore_tests::kernels::{self, bytes, dims, words};
use streamcore_tests::mock::MockHarness;

#[test]
fn threads_share_one_device() {
    let h = MockHarness { seed: 3 };
    let d = Arc::new(h.device(&Setup::streams(4)).unwrap());
    let scale = d.load_kernel(&kernels::SCALE).unwrap();
    let n = 256usize;
    let workers: Vec<_> = (0..4u16)
        .map(|s| {
            let d = Arc::clone(&d);
            thread::spawn(move || {
                let sid = StreamId(s);
                let x = d.upload(sid, &bytes(&vec![u32::from(s) + 1; n])).unwrap();
                let y = d.alloc(sid, 4 * n as u64).unwrap();
                for _ in 0..50 {
                    let r = d.launch(sid, scale, dims(n), &[x.read(), y.write()], &[n as u64, 3]);
                    assert_eq!(r.unwrap(), Launched::Queued);
                }
                words(&d.read(sid, &y).unwrap())
            })
        })
        .collect();
    for (s, w) in workers.into_iter().enumerate() {
        assert_eq!(w.join().unwrap(), vec![3 * (s as u32 + 1); n]);
    }
    // A buffer made on one thread's stream, consumed on another's.
    let a = d.upload(StreamId(1), &bytes(&vec![5; n])).unwrap();
    let consumer = {
        let d = Arc::clone(&d);
        let a = a.clone();
        thread::spawn(move || {
            let out = d.alloc(StreamId(2), 4 * n as u64).unwrap();
            let r = d.launch(
                StreamId(2),
                scale,
                dims(n),
                &[a.read(), out.write()],
                &[n as u64, 2],
            );
            assert_eq!(r.unwrap(), Launched::Queued);
            words(&d.read(StreamId(2), &out).unwrap())
        })
    };
    assert_eq!(consumer.join().unwrap(), vec![10; n]);
    drop(a);
    d.sync_all().unwrap();
    assert_eq!(d.census().buffers, 0);
    h.finish(&d);
}
