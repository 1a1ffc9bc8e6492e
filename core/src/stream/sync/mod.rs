//! Multi-stream synchronization: a cursor per stream and a last-synced
//! table per stream (the pins that keep cross-stream bindings alive are in
//! [`pins`](super::pins)).
//!
//! Every submission on a stream advances that stream's cursor. A buffer
//! remembers `(writer stream, cursor)` of its last write. When stream A binds
//! memory last written by stream B at cursor `c`, A must wait for B only if A
//! has not already synced B at or past `c`. [`SyncTable::plan`] computes the
//! minimal set of waits for one submission (at most one per other stream);
//! the caller records one event per producer, makes A wait on it and reports
//! it back with [`SyncTable::synced`]. The table is a vector clock: waiting
//! on B also teaches A everything B had synced itself.
//!
//! The table never talks to the platform: recording events and waiting is
//! the caller's job, and fence progress is an input ([`SyncTable::completed`]).

use alloc::vec;
use alloc::vec::Vec;
use core::fmt;

use super::pool::StreamId;

/// A position in one stream's submission sequence. Cursor 0 means "nothing
/// submitted yet"; the first submission gets cursor 1.
pub type Cursor = u64;

/// The last write of a buffer: which stream wrote it and at which cursor.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct WriteMark {
    /// The stream that wrote.
    pub stream: StreamId,
    /// The writer's cursor at that submission.
    pub cursor: Cursor,
}

/// A stream id the table was not built for.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct UnknownStream(pub StreamId);

impl fmt::Display for UnknownStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} is not tracked by the sync table", self.0)
    }
}

impl core::error::Error for UnknownStream {}

/// The waits one submission needs: for each producer stream, the cursor the
/// consumer must reach. Reused across submissions (no allocation once built).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WaitPlan {
    need: Vec<Cursor>,
    producers: Vec<StreamId>,
}

impl WaitPlan {
    /// An empty plan for a table of `streams` streams (at most
    /// [`MAX_TRACKED_STREAMS`], as [`SyncTable`] tracks).
    pub fn new(streams: usize) -> Self {
        let streams = tracked(streams);
        Self {
            need: vec![0; streams],
            producers: Vec::with_capacity(streams),
        }
    }

    /// Makes room for `streams` streams (never shrinks; at most
    /// [`MAX_TRACKED_STREAMS`]).
    pub fn grow(&mut self, streams: usize) {
        let streams = tracked(streams);
        if self.need.len() < streams {
            self.need.resize(streams, 0);
            self.producers
                .reserve(streams.saturating_sub(self.producers.len()));
        }
    }

    /// The producers to wait on, with the cursor each wait must cover, in
    /// the order they were first needed.
    pub fn waits(&self) -> impl Iterator<Item = (StreamId, Cursor)> + '_ {
        self.producers.iter().map(|&s| (s, self.need[s.index()]))
    }

    /// Whether the submission needs no wait.
    pub fn is_empty(&self) -> bool {
        self.producers.is_empty()
    }

    /// Number of waits.
    pub fn len(&self) -> usize {
        self.producers.len()
    }

    fn clear(&mut self) {
        for s in self.producers.drain(..) {
            self.need[s.index()] = 0;
        }
    }
}

/// The most streams a [`SyncTable`], a [`WaitPlan`] or a
/// [`CrossPins`](super::CrossPins) tracks, a device's bound
/// ([`MAX_STREAMS`](crate::device::MAX_STREAMS)): a larger count is clamped
/// (the matrix and its arithmetic stay small on every target); streams
/// past it are unknown ([`UnknownStream`]).
pub const MAX_TRACKED_STREAMS: usize = crate::device::MAX_STREAMS as usize;

/// `streams`, clamped to [`MAX_TRACKED_STREAMS`].
pub(crate) fn tracked(streams: usize) -> usize {
    streams.min(MAX_TRACKED_STREAMS)
}

/// Cursors and the last-synced matrix of the streams in use: it starts at
/// the streams it is built for and [`grows`](SyncTable::grow) as higher
/// stream ids come into use, so its memory follows the streams used, not
/// the streams a device could have. It tracks at most [`MAX_TRACKED_STREAMS`].
///
/// Per stream `s`: its cursor (the latest submission), the highest cursor
/// known to have completed on the device, and for every other stream `b`
/// how far `s` has synced `b` (`synced(s, b)`: every submission of `b` up
/// to it is ordered before `s`'s future work).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyncTable {
    n: usize,
    /// The cursors `[0, n)`, the completed cursors `[n, 2n)`, the synced
    /// matrix `[2n, 2n + n²)`: one block (for two streams 64 bytes) rather
    /// than three, each a cache line a launch would touch.
    cells: Vec<Cursor>,
}

impl SyncTable {
    /// A table for `streams` streams (at most [`MAX_TRACKED_STREAMS`]), all at
    /// cursor 0.
    pub fn new(streams: usize) -> Self {
        let streams = tracked(streams);
        Self {
            n: streams,
            cells: vec![0; streams * (streams + 2)],
        }
    }

    /// Index of stream `i`'s cursor.
    #[inline(always)]
    const fn cur(i: usize) -> usize {
        i
    }

    /// Index of stream `i`'s completed cursor.
    #[inline(always)]
    const fn done(&self, i: usize) -> usize {
        self.n + i
    }

    /// Index of how far `a` has synced `b`.
    #[inline(always)]
    const fn syn(&self, a: usize, b: usize) -> usize {
        2 * self.n + a * self.n + b
    }

    /// Number of streams tracked.
    pub fn streams(&self) -> usize {
        self.n
    }

    /// Tracks streams `0..streams` (never shrinks; at most
    /// [`MAX_TRACKED_STREAMS`]; new streams start at cursor 0, synced with
    /// nothing). Reallocates the matrix: call it when a stream comes into
    /// use, not per submission.
    pub fn grow(&mut self, streams: usize) {
        let (n, m) = (self.n, tracked(streams));
        if m <= n {
            return;
        }
        let mut grown = Self::new(m);
        for a in 0..n {
            let (ca, da) = (self.cells[Self::cur(a)], self.cells[self.done(a)]);
            let (gc, gd) = (Self::cur(a), grown.done(a));
            grown.cells[gc] = ca;
            grown.cells[gd] = da;
            for b in 0..n {
                let v = self.cells[self.syn(a, b)];
                let g = grown.syn(a, b);
                grown.cells[g] = v;
            }
        }
        *self = grown;
    }

    fn check(&self, s: StreamId) -> Result<usize, UnknownStream> {
        if s.index() < self.n {
            Ok(s.index())
        } else {
            Err(UnknownStream(s))
        }
    }

    /// The cursor of the latest submission on `s`.
    pub fn cursor(&self, s: StreamId) -> Result<Cursor, UnknownStream> {
        Ok(self.cells[Self::cur(self.check(s)?)])
    }

    /// Advances `s` by one submission and returns the new cursor.
    pub fn submit(&mut self, s: StreamId) -> Result<Cursor, UnknownStream> {
        let i = Self::cur(self.check(s)?);
        let c = &mut self.cells[i];
        *c += 1;
        Ok(*c)
    }

    /// How far `consumer` has synced `producer` (a stream is always synced
    /// with itself up to its own cursor).
    pub fn synced_cursor(
        &self,
        consumer: StreamId,
        producer: StreamId,
    ) -> Result<Cursor, UnknownStream> {
        let (a, b) = (self.check(consumer)?, self.check(producer)?);
        Ok(if a == b {
            self.cells[Self::cur(a)]
        } else {
            self.cells[self.syn(a, b)]
        })
    }

    /// Fills `plan` with the waits a submission on `consumer` needs to see
    /// the writes `marks`. Writes by `consumer` itself, writes already
    /// synced, and writes known to have completed need none.
    pub fn plan(
        &self,
        consumer: StreamId,
        marks: impl IntoIterator<Item = WriteMark>,
        plan: &mut WaitPlan,
    ) -> Result<(), UnknownStream> {
        plan.clear();
        let a = self.check(consumer)?;
        if plan.need.len() < self.n {
            plan.need.resize(self.n, 0);
        }
        for m in marks {
            let b = self.check(m.stream)?;
            let cells = &self.cells;
            if b == a || m.cursor <= cells[self.syn(a, b)] || m.cursor <= cells[self.done(b)] {
                continue;
            }
            if plan.need[b] == 0 {
                plan.producers.push(m.stream);
            }
            plan.need[b] = plan.need[b].max(m.cursor);
        }
        Ok(())
    }

    /// Whether a submission on `consumer` must wait to see `producer`'s
    /// writes up to `cursor`: not for its own writes, writes already
    /// synced, or writes known to have completed. The one-producer case of
    /// [`plan`](Self::plan), without building a plan.
    #[inline]
    pub fn needs_wait(
        &self,
        consumer: StreamId,
        producer: StreamId,
        cursor: Cursor,
    ) -> Result<bool, UnknownStream> {
        let (a, b) = (self.check(consumer)?, self.check(producer)?);
        let cells = &self.cells;
        Ok(a != b && cursor > cells[self.syn(a, b)] && cursor > cells[self.done(b)])
    }

    /// Reports that `consumer` now waits on an event recorded on `producer`
    /// when its cursor was `at`: `consumer` learns `producer`'s history up to
    /// `at`, including everything `producer` had synced by then (vector clock
    /// merge; conservative: it merges what `producer` has synced now, which
    /// is only sound when `at` is `producer`'s current cursor — the only way
    /// the device uses it).
    #[inline]
    pub fn synced(
        &mut self,
        consumer: StreamId,
        producer: StreamId,
        at: Cursor,
    ) -> Result<(), UnknownStream> {
        let (a, b) = (self.check(consumer)?, self.check(producer)?);
        if a == b {
            return Ok(());
        }
        let n = self.n;
        let merge_history = at >= self.cells[Self::cur(b)];
        let i = self.syn(a, b);
        let ab = &mut self.cells[i];
        *ab = (*ab).max(at);
        // With two streams there is no third one to learn about.
        if merge_history && n > 2 {
            self.merge_history(a, b);
        }
        Ok(())
    }

    /// Row `a` (the consumer's) learns what row `b` (the producer's) has
    /// synced, but for the entries of `a` and `b` themselves.
    fn merge_history(&mut self, a: usize, b: usize) {
        let n = self.n;
        let base = 2 * n;
        let synced = &mut self.cells[base..];
        // Rows `a` (the consumer's, written) and `b` (read), split apart so
        // the merge is one pass of maxima over two slices.
        let (row_a, row_b) = if a < b {
            let (lo, hi) = synced.split_at_mut(b * n);
            (&mut lo[a * n..a * n + n], &hi[..n])
        } else {
            let (lo, hi) = synced.split_at_mut(a * n);
            (&mut hi[..n], &lo[b * n..b * n + n])
        };
        let keep = (row_a[a], row_a[b]);
        for (own, &via) in row_a.iter_mut().zip(row_b) {
            *own = (*own).max(via);
        }
        // Nothing is learnt about the consumer itself, and its entry for
        // the producer was set from `at` by the caller.
        row_a[a] = keep.0;
        row_a[b] = keep.1;
    }

    /// Reports that every submission of `s` up to `at` has completed on the
    /// device (an event recorded at `at` has passed). Completed work needs no
    /// wait from any stream.
    pub fn completed(&mut self, s: StreamId, at: Cursor) -> Result<(), UnknownStream> {
        let i = self.done(self.check(s)?);
        let c = &mut self.cells[i];
        *c = (*c).max(at);
        Ok(())
    }

    /// Per stream, the highest cursor known complete.
    pub fn completed_all(&self) -> &[Cursor] {
        &self.cells[self.n..2 * self.n]
    }

    /// The highest cursor of `s` known complete.
    pub fn completed_cursor(&self, s: StreamId) -> Result<Cursor, UnknownStream> {
        Ok(self.cells[self.done(self.check(s)?)])
    }

    /// A host synchronization of everything: every stream is complete up to
    /// its cursor, so nothing needs a wait.
    pub fn all_completed(&mut self) {
        let n = self.n;
        let (cursors, rest) = self.cells.split_at_mut(n);
        rest[..n].copy_from_slice(cursors);
    }
}

#[cfg(test)]
mod tests;
