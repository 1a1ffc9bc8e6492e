//! Model-based property tests: the drop queues against a naive reference
//! model (a `Vec` of staged items and a `Vec` of `(fence, items)` batches),
//! over random operation sequences. Every answer, every fence the queue asks
//! about, and every released item are compared exactly.

use alloc::vec::Vec;

use proptest::prelude::*;

use super::*;

/// A fence is a counter; the simulated device has completed every fence up
/// to `completed`. Closures fail on fences whose number is `fail_on` mod 4.
#[derive(Clone, Debug)]
enum Op {
    Push { bytes: u64 },
    Flush { fail: bool },
    Reclaim { fail_on: u8 },
    WaitOldest { fail: bool },
    Drain { fail_on: u8 },
    Complete { fences: u8 },
    SetRecording(bool),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u64..40).prop_map(|bytes| Op::Push { bytes }),
        3 => prop::bool::weighted(0.2).prop_map(|fail| Op::Flush { fail }),
        3 => (0u8..8).prop_map(|fail_on| Op::Reclaim { fail_on }),
        1 => prop::bool::weighted(0.2).prop_map(|fail| Op::WaitOldest { fail }),
        1 => (0u8..8).prop_map(|fail_on| Op::Drain { fail_on }),
        3 => (0u8..3).prop_map(|fences| Op::Complete { fences }),
        1 => any::<bool>().prop_map(Op::SetRecording),
    ]
}

fn fails(fence: u64, fail_on: u8) -> bool {
    fail_on < 4 && fence % 4 == u64::from(fail_on)
}

/// The naive reference.
#[derive(Debug, Default)]
struct Model {
    staged: Vec<(u64, u64)>,
    batches: Vec<(u64, Vec<u64>, u64)>,
    recording: bool,
    owed: bool,
    policy: Option<FlushPolicy>,
    /// `(items, batches)` for the bounded variant.
    caps: Option<(usize, usize)>,
}

/// What one operation answered, in a form both sides can produce.
#[derive(Debug, PartialEq, Eq)]
enum Answer {
    Pushed(Result<Pushed, QueueFull<u64>>),
    Flushed(Result<Flushed, DropQueueError<u64>>),
    Count(Result<usize, DropQueueError<u64>>),
    Unit,
    Owed(bool),
}

impl Model {
    fn held(&self) -> usize {
        self.staged.len() + self.batches.iter().map(|b| b.1.len()).sum::<usize>()
    }

    fn due(&self) -> bool {
        let p = self.policy.unwrap_or_default();
        let bytes: u64 = self.staged.iter().map(|s| s.1).sum();
        !self.staged.is_empty()
            && (self.owed || self.staged.len() >= p.max_items || bytes >= p.max_bytes)
    }

    fn push(&mut self, id: u64, bytes: u64) -> Result<Pushed, QueueFull<u64>> {
        if let Some((items, _)) = self.caps {
            if self.held() >= items {
                return Err(QueueFull { item: id, bytes });
            }
        }
        self.staged.push((id, bytes));
        Ok(if !self.due() {
            Pushed::Staged
        } else if self.recording {
            self.owed = true;
            Pushed::FlushOwed
        } else {
            Pushed::FlushDue
        })
    }

    fn flush(
        &mut self,
        fence: u64,
        fail: bool,
        calls: &mut Vec<u64>,
    ) -> Result<Flushed, DropQueueError<u64>> {
        if self.staged.is_empty() {
            self.owed = false;
            return Ok(Flushed::Nothing);
        }
        if self.recording {
            self.owed = true;
            return Ok(Flushed::Deferred);
        }
        calls.push(fence);
        if fail {
            return Err(DropQueueError::Fence(fence));
        }
        let items: Vec<u64> = self.staged.iter().map(|s| s.0).collect();
        let bytes: u64 = self.staged.iter().map(|s| s.1).sum();
        let answer = Flushed::Sealed {
            items: items.len(),
            bytes,
        };
        self.staged.clear();
        self.owed = false;
        let full = self.caps.is_some_and(|(_, cap)| self.batches.len() >= cap);
        match self.batches.last_mut() {
            Some(last) if full => {
                last.0 = fence;
                last.1.extend(items);
                last.2 += bytes;
            }
            _ => self.batches.push((fence, items, bytes)),
        }
        Ok(answer)
    }

    fn release_oldest(&mut self, released: &mut Vec<u64>) -> usize {
        let (_, items, _) = self.batches.remove(0);
        released.extend(&items);
        items.len()
    }

    fn reclaim(
        &mut self,
        completed: u64,
        fail_on: u8,
        calls: &mut Vec<u64>,
        released: &mut Vec<u64>,
    ) -> Result<usize, DropQueueError<u64>> {
        if self.recording {
            return Ok(0);
        }
        let mut n = 0;
        while let Some(&(fence, _, _)) = self.batches.first() {
            calls.push(fence);
            if fails(fence, fail_on) {
                return Err(DropQueueError::Fence(fence));
            }
            if fence > completed {
                break;
            }
            n += self.release_oldest(released);
        }
        Ok(n)
    }

    fn sync_batches(
        &mut self,
        only_oldest: bool,
        completed: &mut u64,
        fail: impl Fn(u64) -> bool,
        calls: &mut Vec<u64>,
        released: &mut Vec<u64>,
    ) -> Result<usize, DropQueueError<u64>> {
        if self.recording {
            return Err(DropQueueError::Recording);
        }
        let mut n = 0;
        while let Some(&(fence, _, _)) = self.batches.first() {
            calls.push(fence);
            if fail(fence) {
                return Err(DropQueueError::Fence(fence));
            }
            *completed = (*completed).max(fence);
            n += self.release_oldest(released);
            if only_oldest {
                break;
            }
        }
        Ok(n)
    }
}

/// The two variants behind one face.
trait Queue {
    fn push(&mut self, item: u64, bytes: u64) -> Result<Pushed, QueueFull<u64>>;
    fn q_flush(
        &mut self,
        record: impl FnOnce() -> Result<u64, u64>,
    ) -> Result<Flushed, DropQueueError<u64>>;
    fn q_reclaim(
        &mut self,
        passed: impl FnMut(&u64) -> Result<bool, u64>,
        release: impl FnMut(u64),
    ) -> Result<usize, DropQueueError<u64>>;
    fn q_wait_oldest(
        &mut self,
        sync: impl FnMut(&u64) -> Result<(), u64>,
        release: impl FnMut(u64),
    ) -> Result<usize, DropQueueError<u64>>;
    fn q_drain(
        &mut self,
        sync: impl FnMut(&u64) -> Result<(), u64>,
        release: impl FnMut(u64),
    ) -> Result<usize, DropQueueError<u64>>;
    fn q_set_recording(&mut self, on: bool) -> bool;
    /// (staged, staged bytes, pending, pending bytes, batches, owed, due, oldest, len)
    fn observe(
        &self,
    ) -> (
        usize,
        u64,
        usize,
        u64,
        usize,
        bool,
        bool,
        Option<u64>,
        usize,
    );
}

macro_rules! impl_queue {
    ($ty:ty, $push:expr) => {
        impl Queue for $ty {
            fn push(&mut self, item: u64, bytes: u64) -> Result<Pushed, QueueFull<u64>> {
                $push(self, item, bytes)
            }
            fn q_flush(
                &mut self,
                record: impl FnOnce() -> Result<u64, u64>,
            ) -> Result<Flushed, DropQueueError<u64>> {
                self.flush_with(record)
            }
            fn q_reclaim(
                &mut self,
                passed: impl FnMut(&u64) -> Result<bool, u64>,
                release: impl FnMut(u64),
            ) -> Result<usize, DropQueueError<u64>> {
                self.reclaim(passed, release)
            }
            fn q_wait_oldest(
                &mut self,
                sync: impl FnMut(&u64) -> Result<(), u64>,
                release: impl FnMut(u64),
            ) -> Result<usize, DropQueueError<u64>> {
                self.wait_oldest(sync, release)
            }
            fn q_drain(
                &mut self,
                sync: impl FnMut(&u64) -> Result<(), u64>,
                release: impl FnMut(u64),
            ) -> Result<usize, DropQueueError<u64>> {
                self.drain(sync, release)
            }
            fn q_set_recording(&mut self, on: bool) -> bool {
                self.set_recording(on)
            }
            fn observe(
                &self,
            ) -> (
                usize,
                u64,
                usize,
                u64,
                usize,
                bool,
                bool,
                Option<u64>,
                usize,
            ) {
                (
                    self.staged_len(),
                    self.staged_bytes(),
                    self.pending_len(),
                    self.pending_bytes(),
                    self.pending_batches(),
                    self.flush_owed(),
                    self.is_flush_due(),
                    self.oldest_fence().copied(),
                    self.len(),
                )
            }
        }
    };
}

impl_queue!(DropQueue<u64, u64>, |q: &mut DropQueue<u64, u64>, i, b| Ok(q.push(i, b)));
impl_queue!(BoundedDropQueue<u64, u64, 6, 2>, |q: &mut BoundedDropQueue<u64, u64, 6, 2>, i, b| q.push(i, b));

fn observe_model(
    m: &Model,
) -> (
    usize,
    u64,
    usize,
    u64,
    usize,
    bool,
    bool,
    Option<u64>,
    usize,
) {
    (
        m.staged.len(),
        m.staged.iter().map(|s| s.1).sum(),
        m.batches.iter().map(|b| b.1.len()).sum(),
        m.batches.iter().map(|b| b.2).sum(),
        m.batches.len(),
        m.owed,
        m.due(),
        m.batches.first().map(|b| b.0),
        m.held(),
    )
}

fn run(mut q: impl Queue, mut m: Model, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut next_id = 0u64;
    let mut accepted = Vec::new();
    let mut next_fence = 1u64;
    let mut completed = 0u64;
    let (mut got_rel, mut want_rel) = (Vec::new(), Vec::new());
    for op in ops {
        let (mut got_calls, mut want_calls) = (Vec::new(), Vec::new());
        let (got, want) = match *op {
            Op::Push { bytes } => {
                next_id += 1;
                let got = q.push(next_id, bytes);
                let want = m.push(next_id, bytes);
                if want.is_ok() {
                    accepted.push(next_id);
                }
                (Answer::Pushed(got), Answer::Pushed(want))
            }
            Op::Flush { fail } => {
                let fence = next_fence;
                let got = q.q_flush(|| {
                    got_calls.push(fence);
                    if fail { Err(fence) } else { Ok(fence) }
                });
                let want = m.flush(fence, fail, &mut want_calls);
                if matches!(want, Ok(Flushed::Sealed { .. })) {
                    next_fence += 1;
                }
                (Answer::Flushed(got), Answer::Flushed(want))
            }
            Op::Reclaim { fail_on } => {
                let got = q.q_reclaim(
                    |f| {
                        got_calls.push(*f);
                        if fails(*f, fail_on) {
                            Err(*f)
                        } else {
                            Ok(*f <= completed)
                        }
                    },
                    |i| got_rel.push(i),
                );
                let want = m.reclaim(completed, fail_on, &mut want_calls, &mut want_rel);
                (Answer::Count(got), Answer::Count(want))
            }
            Op::WaitOldest { fail } => {
                let got = q.q_wait_oldest(
                    |f| {
                        got_calls.push(*f);
                        if fail { Err(*f) } else { Ok(()) }
                    },
                    |i| got_rel.push(i),
                );
                let want = m.sync_batches(
                    true,
                    &mut completed,
                    |_| fail,
                    &mut want_calls,
                    &mut want_rel,
                );
                (Answer::Count(got), Answer::Count(want))
            }
            Op::Drain { fail_on } => {
                let got = q.q_drain(
                    |f| {
                        got_calls.push(*f);
                        if fails(*f, fail_on) { Err(*f) } else { Ok(()) }
                    },
                    |i| got_rel.push(i),
                );
                let want = m.sync_batches(
                    false,
                    &mut completed,
                    |f| fails(f, fail_on),
                    &mut want_calls,
                    &mut want_rel,
                );
                (Answer::Count(got), Answer::Count(want))
            }
            Op::Complete { fences } => {
                completed = (completed + u64::from(fences)).min(next_fence - 1);
                (Answer::Unit, Answer::Unit)
            }
            Op::SetRecording(on) => {
                m.recording = on;
                (Answer::Owed(q.q_set_recording(on)), Answer::Owed(m.owed))
            }
        };
        prop_assert_eq!(got, want, "answer to {:?}", op);
        prop_assert_eq!(&got_calls, &want_calls, "fences asked about in {:?}", op);
        prop_assert_eq!(&got_rel, &want_rel, "released after {:?}", op);
        prop_assert_eq!(q.observe(), observe_model(&m), "state after {:?}", op);
    }
    // Conservation: after the capture, a flush and a drain, every accepted
    // item was released exactly once, in push order.
    q.q_set_recording(false);
    q.q_flush(|| Ok(next_fence))
        .map_err(|e| TestCaseError::fail(alloc::format!("{e:?}")))?;
    q.q_drain(|_| Ok(()), |i| got_rel.push(i))
        .map_err(|e| TestCaseError::fail(alloc::format!("{e:?}")))?;
    prop_assert_eq!(got_rel, accepted);
    prop_assert_eq!(q.observe().8, 0);
    Ok(())
}

fn policy() -> impl Strategy<Value = FlushPolicy> {
    (0usize..5, 0u64..120).prop_map(|(max_items, max_bytes)| FlushPolicy {
        max_items,
        max_bytes,
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn growable_queue_matches_model(policy in policy(), ops in prop::collection::vec(op(), 0..80)) {
        let m = Model { policy: Some(policy), ..Model::default() };
        run(DropQueue::<u64, u64>::new(policy), m, &ops)?;
    }

    #[test]
    fn bounded_queue_matches_model(policy in policy(), ops in prop::collection::vec(op(), 0..80)) {
        let m = Model { policy: Some(policy), caps: Some((6, 2)), ..Model::default() };
        run(BoundedDropQueue::<u64, u64, 6, 2>::new(policy), m, &ops)?;
    }
}
