//! The sequential model the oracle compares the device against: plain bytes
//! per buffer, a claim per buffer following the taint rules, the capture
//! phase of every stream, and the graphs with what they recorded.
//!
//! Every operand of a harness launch covers a whole buffer, so a claim is
//! per buffer: `Some(failure)` when every byte of it is claimed.

use std::collections::BTreeSet;
use std::vec::Vec;

use streamcore::failure::FailureId;
use streamcore::platform::Access;
use streamcore::stream::Phase;

use super::kernels;
use super::program::Kernel;

/// A buffer of the model (index into [`Model::bufs`]; never reused).
pub type BufId = usize;
/// A graph of the model (index into [`Model::graphs`]; never reused).
pub type GraphIx = usize;

/// One buffer.
#[derive(Clone, Debug)]
pub struct MBuf {
    /// The stream whose pools hold it.
    pub owner: usize,
    /// Its size in bytes.
    pub size: u64,
    /// Its bytes, when `defined` (empty for buffers too large to model,
    /// which never get memory).
    pub data: Vec<u8>,
    /// Whether every byte was written (otherwise its contents are whatever
    /// the memory held: never compared).
    pub defined: bool,
    /// The failure claiming it.
    pub claim: Option<FailureId>,
    /// Its reservation failed: it has no memory, stays claimed.
    pub unplaced: bool,
    /// The harness still holds its handle.
    pub handle: bool,
}

/// Recorded work, as the model replays it.
#[derive(Clone, Debug)]
pub enum MOp {
    /// A launch over `args` (in binding order) with scalar `k`.
    Launch {
        /// Kernel.
        kernel: Kernel,
        /// Buffers and how they are bound.
        args: Vec<(BufId, Access)>,
        /// Scalar.
        k: u8,
    },
    /// A write of `data`.
    Write {
        /// Buffer.
        buf: BufId,
        /// Bytes.
        data: Vec<u8>,
    },
}

/// Why the model expects `end_capture` to refuse.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Doom {
    /// A failure or skip inside the window.
    Failure(FailureId),
    /// A reservation needed storage inside the capture.
    Allocation,
    /// Work asked for inside the window failed on the platform before it
    /// was queued.
    Platform,
    /// A reservation inside the window failed with this failure (an empty
    /// buffer of a size, or under a layout, no storage could serve): the
    /// device names either the failure or the allocation in the capture.
    Reservation(FailureId),
}

/// One stream.
#[derive(Clone, Debug, Default)]
pub struct MStream {
    /// Capture phase.
    pub phase: Phase,
    /// First doom reason of the open window.
    pub doom: Option<Doom>,
    /// The mock invalidated the open capture.
    pub invalidated: bool,
    /// Work the user asked for inside the recording window failed without
    /// dooming it (the graph would miss it).
    pub missing_work: bool,
    /// Work recorded in the capture.
    pub window: Vec<MOp>,
    /// Info words the open window recorded (used since `prepare`, from the
    /// cache).
    pub info: BTreeSet<u8>,
    /// Info words the stream's cache holds (uploaded by eager work; the
    /// harness's few words never reach the cache's bounds).
    pub cached: BTreeSet<u8>,
}

impl MStream {
    /// A launch with info word `k` got its info binding.
    pub fn info_used(&mut self, k: u8) {
        match self.phase {
            Phase::NoCapture => {
                self.cached.insert(k);
            }
            Phase::Prepare => {
                self.cached.insert(k);
                self.info.insert(k);
            }
            // A miss while recording is uploaded inside the graph only.
            Phase::Capture => {
                if self.cached.contains(&k) {
                    self.info.insert(k);
                }
            }
        }
    }
}

/// One sealed graph.
#[derive(Clone, Debug)]
pub struct MGraph {
    /// Stream it was captured on.
    pub stream: usize,
    /// What it replays.
    pub ops: Vec<MOp>,
    /// Net use of every buffer, first use first.
    pub uses: Vec<(BufId, Access)>,
    /// Info-cache entries it pins.
    pub info_pins: usize,
    /// The info words of those entries.
    pub info_words: BTreeSet<u8>,
    /// Whether the harness holds its handle.
    pub handle: bool,
}

/// The whole model.
#[derive(Clone, Debug, Default)]
pub struct Model {
    /// Every buffer ever made; `None` once the device no longer holds it.
    pub bufs: Vec<Option<MBuf>>,
    /// Every stream.
    pub streams: Vec<MStream>,
    /// Every graph ever sealed; `None` once released.
    pub graphs: Vec<Option<MGraph>>,
}

impl MOp {
    fn bufs(&self) -> impl Iterator<Item = BufId> + '_ {
        let (args, write): (&[(BufId, Access)], Option<BufId>) = match self {
            MOp::Launch { args, .. } => (args, None),
            MOp::Write { buf, .. } => (&[], Some(*buf)),
        };
        args.iter().map(|(b, _)| *b).chain(write)
    }
}

impl Model {
    /// A model of a device with `streams` streams.
    pub fn new(streams: usize) -> Self {
        Self {
            bufs: Vec::new(),
            streams: vec![MStream::default(); streams],
            graphs: Vec::new(),
        }
    }

    /// The buffer `b` (panics on a model bug: the harness only names live ones).
    pub fn buf(&self, b: BufId) -> &MBuf {
        self.bufs[b].as_ref().expect("model buffer is live")
    }

    /// The buffer `b`, mutably.
    pub fn buf_mut(&mut self, b: BufId) -> &mut MBuf {
        self.bufs[b].as_mut().expect("model buffer is live")
    }

    /// Adds a buffer.
    pub fn add_buf(&mut self, owner: usize, size: u64) -> BufId {
        let modeled = if size <= super::program::MAX_MODELED {
            size as usize
        } else {
            0
        };
        self.bufs.push(Some(MBuf {
            owner,
            size,
            data: vec![0; modeled],
            defined: false,
            claim: None,
            unplaced: false,
            handle: true,
        }));
        self.bufs.len() - 1
    }

    /// Whether any stream is recording a capture.
    pub fn any_recording(&self) -> bool {
        self.streams.iter().any(|s| s.phase == Phase::Capture)
    }

    /// Whether the device still holds `b`: the harness's handle, an open
    /// window's recorded work, or a live graph.
    pub fn held(&self, b: BufId) -> bool {
        if self.bufs[b].as_ref().is_some_and(|m| m.handle) {
            return true;
        }
        self.streams
            .iter()
            .any(|s| s.window.iter().any(|op| op.bufs().any(|x| x == b)))
            || self
                .graphs
                .iter()
                .flatten()
                .any(|g| g.uses.iter().any(|(x, _)| *x == b))
    }

    /// Forgets every buffer the device no longer holds.
    pub fn collect(&mut self) {
        for b in 0..self.bufs.len() {
            if self.bufs[b].is_some() && !self.held(b) {
                self.bufs[b] = None;
            }
        }
    }

    /// Live buffers.
    pub fn live_bufs(&self) -> impl Iterator<Item = (BufId, &MBuf)> {
        self.bufs
            .iter()
            .enumerate()
            .filter_map(|(i, b)| b.as_ref().map(|b| (i, b)))
    }

    /// Distinct failures claiming live buffers.
    pub fn live_failures(&self) -> usize {
        let set: BTreeSet<FailureId> = self.live_bufs().filter_map(|(_, b)| b.claim).collect();
        set.len()
    }

    /// The first operand (in order) that blocks work: a read of claimed
    /// bytes, or any use of a buffer without memory. Its failure.
    pub fn blocking(&self, args: &[(BufId, Access)]) -> Option<FailureId> {
        args.iter().find_map(|(b, access)| {
            let m = self.buf(*b);
            if access.reads() || m.unplaced {
                m.claim
            } else {
                None
            }
        })
    }

    /// Claims every written operand with `f` (a buffer without memory
    /// keeps the claim of its failed reservation).
    pub fn claim_outputs(&mut self, args: &[(BufId, Access)], f: FailureId) {
        for (b, access) in args {
            if access.writes() && !self.buf(*b).unplaced {
                self.buf_mut(*b).claim = Some(f);
            }
        }
    }

    /// Runs a launch eagerly on the model's bytes; clears its outputs' claims.
    pub fn run_launch(&mut self, kernel: Kernel, args: &[(BufId, Access)], k: u8) {
        let (ins, out) = split(kernel, args);
        let defined = ins.iter().all(|b| self.buf(*b).defined);
        let inputs: Vec<Vec<u8>> = ins.iter().map(|b| self.buf(*b).data.clone()).collect();
        let refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
        let len = self.buf(out).data.len();
        let result = kernels::compute(kernel, k, &refs, len);
        let m = self.buf_mut(out);
        m.data = result;
        m.defined = defined;
        m.claim = None;
    }

    /// Runs a write eagerly; clears the claim.
    pub fn run_write(&mut self, b: BufId, data: &[u8]) {
        let m = self.buf_mut(b);
        m.data.copy_from_slice(data);
        m.defined = true;
        m.claim = None;
    }

    /// The graph's net use of every buffer, as the device computes it: a
    /// buffer first written is an output; first read, an input (and an
    /// output too if anything writes it later).
    pub fn net_uses(ops: &[MOp]) -> Vec<(BufId, Access)> {
        let mut uses: Vec<(BufId, Access)> = Vec::new();
        let mut note = |b: BufId, a: Access| {
            if let Some(u) = uses.iter_mut().find(|u| u.0 == b) {
                if u.1 == Access::Read && a.writes() {
                    u.1 = Access::ReadWrite;
                }
            } else {
                uses.push((b, a));
            }
        };
        for op in ops {
            match op {
                MOp::Launch { args, .. } => {
                    for &(b, a) in args {
                        note(b, a);
                    }
                }
                MOp::Write { buf, .. } => note(*buf, Access::Write),
            }
        }
        uses
    }
}

/// A launch's inputs and its output, from its binding list.
pub fn split(kernel: Kernel, args: &[(BufId, Access)]) -> (Vec<BufId>, BufId) {
    let n = kernel.inputs();
    if kernel == Kernel::Incr {
        (vec![args[0].0], args[0].0)
    } else {
        (args[..n].iter().map(|a| a.0).collect(), args[n].0)
    }
}
