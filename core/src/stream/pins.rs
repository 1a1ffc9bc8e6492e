//! Cross-stream pins: a slice one stream's pools own, bound by another
//! stream's submission, stays out of reuse until that submission completed.

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use super::pool::StreamId;
use super::sync::{Cursor, UnknownStream, tracked};

/// Cross-stream bindings pinned until the consumer's work has completed.
///
/// When stream A binds a slice owned by stream B's pools, B must not reuse
/// the slice until A's submission has completed. The device pins the slice
/// at A's cursor; [`CrossPins::release_completed`] hands back every pin whose
/// cursor A has completed. Pins are kept per consumer in submission order,
/// so releasing is O(released).
#[derive(Debug, Clone)]
pub struct CrossPins<H> {
    per_consumer: Vec<VecDeque<(Cursor, H)>>,
}

impl<H> CrossPins<H> {
    /// Pins for `streams` consumer streams (at most
    /// [`MAX_TRACKED_STREAMS`](super::sync::MAX_TRACKED_STREAMS)).
    pub fn new(streams: usize) -> Self {
        let streams = tracked(streams);
        let mut per_consumer = Vec::with_capacity(streams);
        per_consumer.resize_with(streams, Default::default);
        Self { per_consumer }
    }

    /// Makes room for consumers `0..streams` (never shrinks; at most
    /// [`MAX_TRACKED_STREAMS`](super::sync::MAX_TRACKED_STREAMS)).
    pub fn grow(&mut self, streams: usize) {
        let streams = tracked(streams);
        if self.per_consumer.len() < streams {
            self.per_consumer.resize_with(streams, Default::default);
        }
    }

    /// Pins `handle` until `consumer` completes `cursor`. Pins may come in any
    /// cursor order (buffers are freed in any order, whatever the order of
    /// their last uses): each is inserted in cursor order, O(log n) to find
    /// its place (pins behind it shift; pinning in cursor order, the usual
    /// case, appends).
    pub fn pin(
        &mut self,
        consumer: StreamId,
        cursor: Cursor,
        handle: H,
    ) -> Result<(), UnknownStream> {
        let q = self
            .per_consumer
            .get_mut(consumer.index())
            .ok_or(UnknownStream(consumer))?;
        let at = q.partition_point(|(c, _)| *c <= cursor);
        q.insert(at, (cursor, handle));
        Ok(())
    }

    /// Hands every pin of `consumer` with a cursor `<= completed` to `release`.
    pub fn release_completed(
        &mut self,
        consumer: StreamId,
        completed: Cursor,
        mut release: impl FnMut(H),
    ) -> Result<usize, UnknownStream> {
        let q = self
            .per_consumer
            .get_mut(consumer.index())
            .ok_or(UnknownStream(consumer))?;
        let mut n = 0;
        while q.front().is_some_and(|(c, _)| *c <= completed) {
            if let Some((_, h)) = q.pop_front() {
                release(h);
                n += 1;
            }
        }
        Ok(n)
    }

    /// Number of pins held for `consumer`.
    pub fn pinned(&self, consumer: StreamId) -> usize {
        self.per_consumer
            .get(consumer.index())
            .map_or(0, |q| q.len())
    }

    /// Number of pins held in total.
    pub fn total(&self) -> usize {
        self.per_consumer.iter().map(|q| q.len()).sum()
    }

    /// Whether `pred` holds for some pinned handle (diagnostics, O(pins)).
    pub fn any(&self, mut pred: impl FnMut(&H) -> bool) -> bool {
        self.per_consumer.iter().flatten().any(|(_, h)| pred(h))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: StreamId = StreamId(0);
    const B: StreamId = StreamId(1);
    const C: StreamId = StreamId(2);

    /// Growing makes room for higher stream ids; an id past the room is a
    /// typed error.
    #[test]
    fn growing_makes_room_and_unknown_streams_are_typed_errors() {
        let mut pins: CrossPins<u8> = CrossPins::new(1);
        assert_eq!(pins.pin(B, 1, 0), Err(UnknownStream(B)));
        pins.grow(3);
        pins.grow(2); // never shrinks
        pins.pin(C, 1, 7).unwrap();
        assert_eq!(pins.total(), 1);
        assert_eq!(pins.pinned(C), 1);
    }

    #[test]
    fn cross_pins_release_in_order_once_completed() {
        let mut pins = CrossPins::new(2);
        pins.pin(A, 1, "x").unwrap();
        pins.pin(A, 3, "y").unwrap();
        pins.pin(B, 1, "z").unwrap();
        let mut out = Vec::new();
        assert_eq!(pins.release_completed(A, 2, |h| out.push(h)).unwrap(), 1);
        assert_eq!(out, ["x"]);
        assert_eq!(pins.pinned(A), 1);
        assert_eq!(pins.release_completed(A, 3, |h| out.push(h)).unwrap(), 1);
        assert_eq!(out, ["x", "y"]);
        assert_eq!(pins.total(), 1);
    }

    /// Buffers are freed in any order: a pin at an earlier cursor than the
    /// last one is released as soon as that earlier cursor completes (found
    /// by the fuzz harness: it used to trip a debug assertion, and release
    /// builds held it until the later cursor completed).
    #[test]
    fn cross_pins_out_of_order_release_at_their_own_cursor() {
        let mut pins = CrossPins::new(1);
        pins.pin(A, 5, "late").unwrap();
        pins.pin(A, 2, "early").unwrap();
        pins.pin(A, 5, "late2").unwrap();
        pins.pin(A, 3, "mid").unwrap();
        let mut out = Vec::new();
        assert_eq!(pins.release_completed(A, 2, |h| out.push(h)).unwrap(), 1);
        assert_eq!(out, ["early"]);
        assert_eq!(pins.release_completed(A, 4, |h| out.push(h)).unwrap(), 1);
        assert_eq!(out, ["early", "mid"]);
        assert_eq!(pins.release_completed(A, 5, |h| out.push(h)).unwrap(), 2);
        assert_eq!(out, ["early", "mid", "late", "late2"]);
        assert_eq!(pins.total(), 0);
    }
}
