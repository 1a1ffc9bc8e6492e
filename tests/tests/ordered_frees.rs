//! Frees in stream order, on the mock (real bytes, the hazard checker): a
//! buffer dropped while only its owner stream's queued work uses it goes
//! back to the pool at once, with no fence; the bytes may serve the next
//! buffer of that stream while the old work is still queued. Another
//! stream's queued work must never see those bytes early: its first use of
//! such a buffer waits for the owner.

use streamcore::device::{Buffer, Device, DeviceConfig, KernelId, Launched};
use streamcore::stream::StreamId;
use streamcore_mock::{MockConfig, MockPlatform};
use streamcore_tests::kernels::{self, bytes, dims, words};

const S0: StreamId = StreamId(0);
const S1: StreamId = StreamId(1);
const N: usize = 64;

struct Rig {
    d: Device<MockPlatform>,
    fill: KernelId,
    scale: KernelId,
}

fn rig(seed: u64) -> Rig {
    let mock = MockPlatform::with_config(MockConfig::default().seed(seed)).unwrap();
    kernels::register_mock(&mock);
    let d = Device::new(mock, DeviceConfig::with_streams(2)).unwrap();
    let fill = d.load_kernel(&kernels::FILL).unwrap();
    let scale = d.load_kernel(&kernels::SCALE).unwrap();
    Rig { d, fill, scale }
}

impl Rig {
    fn fill(&self, s: StreamId, b: &Buffer, v: u32) {
        let r = self
            .d
            .launch(s, self.fill, dims(N), &[b.write()], &[N as u64, v.into()]);
        assert_eq!(r.unwrap(), Launched::Queued);
    }

    /// `dst = src * f` on `s`.
    fn scale(&self, s: StreamId, src: &Buffer, dst: &Buffer, f: u32) {
        let r = self.d.launch(
            s,
            self.scale,
            dims(N),
            &[src.read(), dst.write()],
            &[N as u64, f.into()],
        );
        assert_eq!(r.unwrap(), Launched::Queued);
    }

    fn hazards(&self) -> usize {
        self.d.with_platform(|p| p.hazards().len())
    }
}

/// The owner's queued fill of `a` is still pending when `a` is dropped: its
/// slice goes back at once (no fence), and `b`, reserved next on
/// the same stream, gets the same bytes. Stream 1's first use of `b` — a
/// write, or a read — must wait for stream 0, or it would race the fill
/// still queued over those bytes (the hazard checker reports it).
#[test]
fn another_streams_first_use_of_reused_bytes_waits_for_their_owner() {
    for read_first in [false, true] {
        for seed in 0..8 {
            let r = rig(seed);
            let a = r.d.alloc(S0, 4 * N as u64).unwrap();
            let a_range = r.d.range_of(&a);
            r.fill(S0, &a, 5);
            drop(a);
            let b = r.d.alloc(S0, 4 * N as u64).unwrap();
            let s = r.d.stats();
            assert_eq!(s.ordered_frees, 1, "freed in stream order");
            assert_eq!(r.d.range_of(&b), a_range, "the same bytes, at once");
            let waits = s.waits;
            if read_first {
                // Stream 1 reads the reused bytes (the old fill's value).
                let out = r.d.alloc(S1, 4 * N as u64).unwrap();
                r.scale(S1, &b, &out, 1);
                assert_eq!(words(&r.d.read(S1, &out).unwrap()), vec![5; N]);
            } else {
                r.fill(S1, &b, 9);
                assert_eq!(words(&r.d.read(S1, &b).unwrap()), vec![9; N]);
            }
            assert_eq!(r.d.stats().waits, waits + 1, "one wait for stream 0");
            assert_eq!(r.hazards(), 0, "seed {seed}, read first {read_first}");
            drop(b);
            r.d.sync_all().unwrap();
            assert_eq!(r.d.census().buffers, 0);
        }
    }
}

/// The owner itself reuses the bytes with no wait: its later work runs
/// after the queued use anyway.
#[test]
fn the_owner_reuses_its_freed_bytes_without_a_wait() {
    let r = rig(3);
    let a = r.d.upload(S0, &bytes(&[2; N])).unwrap();
    let out = r.d.alloc(S0, 4 * N as u64).unwrap();
    r.scale(S0, &a, &out, 3);
    drop(a);
    let b = r.d.alloc(S0, 4 * N as u64).unwrap();
    r.fill(S0, &b, 4);
    r.scale(S0, &b, &out, 2);
    assert_eq!(words(&r.d.read(S0, &out).unwrap()), vec![8; N]);
    let s = r.d.stats();
    assert_eq!((s.ordered_frees, s.waits), (1, 0));
    assert_eq!(r.hazards(), 0);
}

/// A small deterministic generator (xorshift64*).
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Random programs over two streams — allocations on either stream, fills,
/// scales across streams, drops while work is queued, polls, reads —
/// against a model of each buffer's value: every read matches the model and
/// the hazard checker finds nothing, whatever was freed in stream order and
/// reused.
#[test]
fn random_programs_with_ordered_frees_match_the_model_and_race_nothing() {
    let mut ordered = 0;
    for seed in 1..=60u64 {
        let r = rig(seed);
        let mut g = Gen(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        // Live buffers and their modelled value (None: never written).
        let mut live: Vec<(Buffer, Option<u32>)> = Vec::new();
        let stream = |g: &mut Gen| if g.below(2) == 0 { S0 } else { S1 };
        for _ in 0..40 {
            match g.below(7) {
                0 | 1 if live.len() < 6 => {
                    let b = r.d.alloc(stream(&mut g), 4 * N as u64).unwrap();
                    live.push((b, None));
                }
                2 if !live.is_empty() => {
                    let i = g.below(live.len());
                    let v = g.below(1000) as u32;
                    r.fill(stream(&mut g), &live[i].0, v);
                    live[i].1 = Some(v);
                }
                3 if live.len() >= 2 => {
                    let (i, j) = (g.below(live.len()), g.below(live.len()));
                    if i != j {
                        if let Some(v) = live[i].1 {
                            let f = 1 + g.below(3) as u32;
                            r.scale(stream(&mut g), &live[i].0, &live[j].0, f);
                            live[j].1 = Some(v.wrapping_mul(f));
                        }
                    }
                }
                4 if !live.is_empty() => {
                    drop(live.swap_remove(g.below(live.len())));
                }
                5 => {
                    r.d.poll().unwrap();
                }
                6 if !live.is_empty() => {
                    let i = g.below(live.len());
                    if let Some(v) = live[i].1 {
                        let got = words(&r.d.read(stream(&mut g), &live[i].0).unwrap());
                        assert_eq!(got, vec![v; N], "seed {seed}");
                    }
                }
                _ => {}
            }
        }
        drop(live);
        r.d.sync_all().unwrap();
        assert_eq!(r.hazards(), 0, "seed {seed}");
        let c = r.d.census();
        assert_eq!((c.buffers, c.deferred, c.cross_pins), (0, 0, 0));
        ordered += r.d.stats().ordered_frees;
    }
    assert!(
        ordered > 20,
        "the programs free in stream order ({ordered})"
    );
}
