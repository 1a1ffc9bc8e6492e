//! Scenarios that drive devices from several threads: one device per GPU
//! from threads of their own, and one device shared by four threads.

use streamcore::device::Device;
use streamcore::stream::StreamId;

use super::{S0, S1, load, need, queued, read_words};
use crate::harness::{Capability, Harness, Setup, Skip};
use crate::kernels::{self, bytes, dims};

/// One device per GPU, each driven from a thread of its own; then a device
/// driven from fresh threads that never touched it, whose first calls are
/// `sync_all` and a launch.
pub fn two_devices_from_their_own_threads<H>(h: &H) -> Result<(), Skip>
where
    H: Harness + Sync,
    Device<H::P>: Send + Sync,
{
    use std::thread;
    need(h, Capability::TwoDevices)?;
    let d0 = h.device_on(0, &Setup::streams(2))?;
    let d1 = h.device_on(1, &Setup::streams(2))?;
    let n = 1024usize;
    let rounds = 20u32;
    let work = |d: &Device<H::P>, base: u32| {
        let scale = load(d, &kernels::SCALE);
        let x = d.upload(S1, &bytes(&vec![base; n])).unwrap();
        let y = d.alloc(S0, 4 * n as u64).unwrap();
        for round in 1..=rounds {
            queued(d.launch(
                S0,
                scale,
                dims(n),
                &[x.read(), y.write()],
                &[n as u64, u64::from(round)],
            ));
            assert_eq!(
                read_words(d, S0, &y),
                vec![base * round; n],
                "round {round}"
            );
        }
        drop((x, y));
        d.sync_all().unwrap();
    };
    thread::scope(|s| {
        let a = s.spawn(|| work(&d0, 3));
        let b = s.spawn(|| work(&d1, 5));
        a.join().expect("device 0 from its thread");
        b.join().expect("device 1 from its thread");
    });

    // Device 1, set up here, then driven from threads that never touched it.
    let fill = load(&d1, &kernels::FILL);
    let a = d1.alloc(S0, 4 * n as u64).unwrap();
    let b = d1.alloc(S1, 4 * n as u64).unwrap();
    queued(d1.launch(S0, fill, dims(n), &[a.write()], &[n as u64, 11]));
    queued(d1.launch(S1, fill, dims(n), &[b.write()], &[n as u64, 12]));
    thread::scope(|s| {
        s.spawn(|| d1.sync_all().expect("sync_all as a thread's first call"))
            .join()
            .expect("sync_all first");
    });
    thread::scope(|s| {
        s.spawn(|| {
            queued(d1.launch(S1, fill, dims(n), &[b.write()], &[n as u64, 13]));
            d1.sync_all().expect("sync_all after the launch");
        })
        .join()
        .expect("launch first");
    });
    assert_eq!(read_words(&d1, S0, &a), vec![11; n]);
    assert_eq!(read_words(&d1, S1, &b), vec![13; n]);
    drop((a, b));
    d1.sync_all().unwrap();
    d0.sync_all().unwrap();
    h.finish(&d0);
    h.finish(&d1);
    Ok(())
}

/// One device shared by four threads, each on a stream of its own: two
/// run scale launches with allocations and drops of temporaries in
/// between and read their results back (host synchronizations while the
/// others launch); the other two hand buffers over: one fills a fresh
/// buffer on its stream each round and sends it through a channel,
/// dropping its own handle, the other adds each into an accumulator on
/// its stream (the core places the waits on the producer's fills). Every
/// result is checked.
pub fn threads_share_one_device<H>(h: &H) -> Result<(), Skip>
where
    H: Harness + Sync,
    Device<H::P>: Send + Sync,
{
    use std::sync::mpsc;
    use std::thread;
    let d = h.device(&Setup::streams(4))?;
    let (scale, fill, add) = (
        load(&d, &kernels::SCALE),
        load(&d, &kernels::FILL),
        load(&d, &kernels::ADD),
    );
    let n = 4096usize;
    let rounds = 40u32;
    let info = |k: u32| [n as u64, u64::from(k)];
    thread::scope(|s| {
        let d = &d;
        let workers: Vec<_> = (0..2u16)
            .map(|t| {
                s.spawn(move || {
                    let sid = StreamId(t);
                    let base = u32::from(t) + 2;
                    let x = d.upload(sid, &bytes(&vec![base; n])).unwrap();
                    for round in 1..=rounds {
                        // Temporaries of three sizes, so pages are taken
                        // and given back while the other threads run.
                        let extra = 4 * n as u64 * u64::from(round % 3);
                        let tmp = d.alloc(sid, 4 * n as u64 + extra).unwrap();
                        queued(d.launch(
                            sid,
                            scale,
                            dims(n),
                            &[x.read(), tmp.write()],
                            &info(round),
                        ));
                        if round % 4 == 0 {
                            let got = read_words(d, sid, &tmp);
                            assert_eq!(
                                &got[..n],
                                &vec![base * round; n][..],
                                "thread {t}, round {round}"
                            );
                        }
                    }
                })
            })
            .collect();
        let (tx, rx) = mpsc::channel();
        let producer = s.spawn(move || {
            let sid = StreamId(2);
            for k in 1..=rounds {
                let b = d.alloc(sid, 4 * n as u64).unwrap();
                queued(d.launch(sid, fill, dims(n), &[b.write()], &info(k)));
                tx.send(b.clone()).unwrap();
                drop(b);
            }
        });
        let consumer = s.spawn(move || {
            let sid = StreamId(3);
            let mut acc = d.alloc(sid, 4 * n as u64).unwrap();
            let mut next = d.alloc(sid, 4 * n as u64).unwrap();
            queued(d.launch(sid, fill, dims(n), &[acc.write()], &info(0)));
            for b in rx {
                queued(d.launch(
                    sid,
                    add,
                    dims(n),
                    &[acc.read(), b.read(), next.write()],
                    &info(0),
                ));
                std::mem::swap(&mut acc, &mut next);
            }
            read_words(d, sid, &acc)
        });
        for (t, w) in workers.into_iter().enumerate() {
            w.join().unwrap_or_else(|_| panic!("worker {t} failed"));
        }
        producer.join().expect("the producer failed");
        let sum = consumer.join().expect("the consumer failed");
        assert_eq!(
            sum,
            vec![rounds * (rounds + 1) / 2; n],
            "the hand-offs' sum"
        );
    });
    d.sync_all().unwrap();
    h.finish(&d);
    Ok(())
}
