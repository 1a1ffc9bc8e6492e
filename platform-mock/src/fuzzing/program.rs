//! What a fuzz input means: a [`Program`] of [`Op`]s under a [`Config`],
//! decoded from bytes with `arbitrary`, and encoded back (for seed corpora
//! and regression tests).
//!
//! Every index in an op (stream, buffer, graph) is reduced modulo what
//! exists when the op runs, so every byte string is a valid program.

use std::vec::Vec;

use arbitrary::{Arbitrary, Unstructured};

/// The most operations one program runs (the rest of the input is ignored),
/// so every run ends quickly.
pub const MAX_OPS: usize = 192;

/// The most buffer handles the harness holds at once (an `Alloc` beyond it
/// does nothing).
pub const MAX_BUFFERS: usize = 12;

/// The most graph handles the harness holds at once.
pub const MAX_GRAPHS: usize = 6;

/// Buffer sizes an op's `size` byte picks from (`size % 16`): tiny slices,
/// the sliced pools, one size past the sliced pools' largest slice (twice
/// as likely as the rest), and three sizes no reservation can hold: zero,
/// more than any device's memory, and `u64::MAX`.
pub const SIZES: [u64; 16] = [
    4,
    16,
    64,
    200,
    1024,
    4096,
    65_536,
    262_400,
    4,
    64,
    200,
    1024,
    65_536,
    0,
    1 << 40,
    u64::MAX,
];

/// The largest buffer the harness writes or keeps a model of its bytes
/// (larger ones are only ever reservations that must fail).
pub const MAX_MODELED: u64 = 1 << 20;

/// The kernels the harness registers on the mock (see
/// [`kernels`](super::kernels)). Every launch binds one info word `k % 4`.
#[derive(Arbitrary, Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kernel {
    /// `out[i] = k`.
    Fill,
    /// `out[i] = a[i % a.len()] * 3 + k`.
    Scale,
    /// `out[i] = a[i % a.len()] + b[i % b.len()] + k`.
    Add,
    /// `x[i] += k + 1`, in place (a read-write binding).
    Incr,
}

/// Where an injected fault strikes: the next platform call of that kind
/// fails (the fault stays armed until such a call happens).
#[derive(Arbitrary, Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FaultSite {
    /// The next kernel launch fails at the call and writes nothing.
    Launch,
    /// The next host-to-device copy (a write, or an info-word upload) fails.
    CopyToDevice,
    /// The next graph replay fails.
    LaunchGraph,
    /// The next device storage allocation runs out of memory.
    DeviceAlloc,
    /// The next `end_capture` fails on the platform (which still stops
    /// capturing).
    EndCapture,
}

/// A call inside `read` that a [`Op::ReadFault`] makes fail.
#[derive(Arbitrary, Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ReadSite {
    /// The host synchronization that waits for the copy.
    Synchronize,
    /// The event recorded after the copy.
    Record,
    /// The device-to-host copy itself.
    CopyToHost,
    /// A cross-stream wait before the copy (when one is needed).
    Wait,
}

/// A handle of another device, used on the device under test: each must be
/// refused, changing nothing.
#[derive(Arbitrary, Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Foreign {
    /// A launch of a kernel id the other device issued.
    Kernel,
    /// A launch binding one of the other device's buffers.
    LaunchBuffer,
    /// A write into one of the other device's buffers.
    Write,
    /// A read of one of the other device's buffers.
    Read,
    /// A replay of the other device's graph.
    Replay,
    /// `failure_of` and `range_of` of the other device's buffers (healthy
    /// and claimed ones).
    Query,
}

/// One step of a program. Indices are reduced modulo what exists.
#[derive(Arbitrary, Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    /// `Device::alloc` of `SIZES[size % 8]` bytes in `stream`'s pools.
    Alloc {
        /// Stream.
        stream: u8,
        /// Size class.
        size: u8,
    },
    /// `Device::empty`: a buffer that exists even when its reservation fails.
    Empty {
        /// Stream.
        stream: u8,
        /// Size class.
        size: u8,
    },
    /// Drops the harness's handle of a buffer (the device frees it, deferred).
    Free {
        /// Buffer.
        buf: u8,
    },
    /// `Device::write` of a pattern derived from `fill`.
    Write {
        /// Stream.
        stream: u8,
        /// Buffer.
        buf: u8,
        /// Pattern seed.
        fill: u8,
    },
    /// `Device::read`, checked against the model.
    Read {
        /// Stream.
        stream: u8,
        /// Buffer.
        buf: u8,
    },
    /// `Device::launch` of `kernel` over live buffers (`a`, `b` inputs,
    /// `out` output; unused ones ignored). Buffers may alias.
    Launch {
        /// Stream.
        stream: u8,
        /// Kernel.
        kernel: Kernel,
        /// First input.
        a: u8,
        /// Second input.
        b: u8,
        /// Output.
        out: u8,
        /// Scalar (info word `k % 4`).
        k: u8,
    },
    /// An in-place launch on a stream other than the buffer's owner (when
    /// there are several streams): cross-stream use.
    CrossUse {
        /// Offset from the owner stream (`owner + 1 + stream`).
        stream: u8,
        /// Buffer.
        buf: u8,
        /// Scalar.
        k: u8,
    },
    /// `Device::sync` of one stream.
    Sync {
        /// Stream.
        stream: u8,
    },
    /// `Device::sync_all`.
    SyncAll,
    /// `Device::poll`: releases what passed, never blocks (the flush).
    Poll,
    /// `Device::prepare`.
    Prepare {
        /// Stream.
        stream: u8,
    },
    /// `Device::begin_capture`.
    Begin {
        /// Stream.
        stream: u8,
    },
    /// `Device::end_capture`.
    End {
        /// Stream.
        stream: u8,
    },
    /// `Device::replay` of a live graph.
    Replay {
        /// Graph.
        graph: u8,
    },
    /// Drops the harness's handle of a graph (the device releases it).
    DropGraph {
        /// Graph.
        graph: u8,
    },
    /// `Device::abort_capture`.
    Abort {
        /// Stream.
        stream: u8,
    },
    /// `Device::install_pools` with a preset layout.
    InstallPools {
        /// Preset index.
        preset: u8,
    },
    /// `Device::cleanup`.
    Cleanup,
    /// Arms a one-shot fault at `site`.
    Fault {
        /// Where.
        site: FaultSite,
    },
    /// `Device::read` with a one-shot fault armed at `site` for the read's
    /// duration only (disarmed afterwards if it did not fire).
    ReadFault {
        /// Stream.
        stream: u8,
        /// Buffer.
        buf: u8,
        /// Which call of the read fails.
        site: ReadSite,
    },
    /// Uses a handle of another device (a second device on its own mock)
    /// on the device under test.
    Foreign {
        /// Which handle, how.
        what: Foreign,
        /// Stream.
        stream: u8,
        /// Picks the other device's buffer (or this device's, for a launch).
        buf: u8,
    },
}

/// How the device of a run is set up. Every field is a raw byte the driver
/// reduces (see [`Setup`](super::Setup)), so every input is a valid config.
#[derive(Arbitrary, Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Config {
    /// Number of streams the ops use: `1 + streams % max` (the profile's max).
    pub streams: u8,
    /// Seed of the mock's seeded scheduler (and the harness layout, `seed % 3`,
    /// when `layout` picks the harness's own).
    pub seed: u8,
    /// Drop-queue thresholds: `0` the device preset, otherwise at most
    /// `flush % 4 + 1` items (tiny, to flush often).
    pub flush: u8,
    /// The device properties the platform reports (`device % 16`): sane
    /// ones, or zero memory, pages of `u64::MAX` or `2^63` bytes, alignments
    /// of 0, 3 or `2^63`, …; and whether the device storages offer
    /// resizable pages (virtual memory, `device / 16 % 4 == 3`, with sane
    /// properties and layouts).
    pub device: u8,
    /// The pool layout (`layout % 16`): the harness's, the core's presets
    /// for the properties, or adversarial ones (pages of `u64::MAX` bytes,
    /// alignment `2^63`, a one-page budget, caps, …).
    pub layout: u8,
    /// The stream count given to the device (`declared % 16`): mostly the
    /// streams the ops use, else the bound, one past it, zero, `u16::MAX`,
    /// or more than the ops use (their ids then spread up to the last).
    pub declared: u8,
}

/// A run: a config and the operations.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Program {
    /// The device setup.
    pub config: Config,
    /// The operations, in order.
    pub ops: Vec<Op>,
}

impl Program {
    /// Decodes a program from fuzz input: the config, then operations until
    /// the input (or [`MAX_OPS`]) runs out. Never fails: missing bytes read
    /// as zero.
    pub fn decode(data: &[u8]) -> Self {
        let mut u = Unstructured::new(data);
        let config = Config::arbitrary(&mut u).unwrap_or_default();
        let mut ops = Vec::new();
        while !u.is_empty() && ops.len() < MAX_OPS {
            match Op::arbitrary(&mut u) {
                Ok(op) => ops.push(op),
                Err(_) => break,
            }
        }
        Self { config, ops }
    }

    /// Bytes that [`Program::decode`] turns back into this program (the
    /// inverse of `arbitrary`'s derived format: enum tags as little-endian
    /// `u32`s, `u8` fields as one byte each).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let c = self.config;
        out.extend_from_slice(&[c.streams, c.seed, c.flush, c.device, c.layout, c.declared]);
        for op in &self.ops {
            op.encode(&mut out);
        }
        out
    }
}

/// The `u32` whose `(x * count) >> 32` is `index`: how the derive picks a
/// variant.
fn tag(out: &mut Vec<u8>, index: u32, count: u32) {
    let x = (u64::from(index) << 32).div_ceil(u64::from(count));
    out.extend_from_slice(&(x as u32).to_le_bytes());
}

impl Kernel {
    /// Every kernel, in declaration order.
    pub const ALL: [Kernel; 4] = [Kernel::Fill, Kernel::Scale, Kernel::Add, Kernel::Incr];

    fn index(self) -> u32 {
        Self::ALL.iter().position(|k| *k == self).unwrap_or(0) as u32
    }

    /// Inputs the kernel reads (beside its output).
    pub fn inputs(self) -> usize {
        match self {
            Kernel::Fill | Kernel::Incr => 0,
            Kernel::Scale => 1,
            Kernel::Add => 2,
        }
    }
}

impl FaultSite {
    const ALL: [FaultSite; 5] = [
        FaultSite::Launch,
        FaultSite::CopyToDevice,
        FaultSite::LaunchGraph,
        FaultSite::DeviceAlloc,
        FaultSite::EndCapture,
    ];

    fn index(self) -> u32 {
        Self::ALL.iter().position(|k| *k == self).unwrap_or(0) as u32
    }
}

impl ReadSite {
    const ALL: [ReadSite; 4] = [
        ReadSite::Synchronize,
        ReadSite::Record,
        ReadSite::CopyToHost,
        ReadSite::Wait,
    ];

    fn index(self) -> u32 {
        Self::ALL.iter().position(|k| *k == self).unwrap_or(0) as u32
    }
}

impl Foreign {
    const ALL: [Foreign; 6] = [
        Foreign::Kernel,
        Foreign::LaunchBuffer,
        Foreign::Write,
        Foreign::Read,
        Foreign::Replay,
        Foreign::Query,
    ];

    fn index(self) -> u32 {
        Self::ALL.iter().position(|k| *k == self).unwrap_or(0) as u32
    }
}

/// Number of [`Op`] variants.
pub const OP_KINDS: u32 = 21;

impl Op {
    /// The variant's index in declaration order (what the derive decodes).
    pub fn kind_index(&self) -> u32 {
        match self {
            Op::Alloc { .. } => 0,
            Op::Empty { .. } => 1,
            Op::Free { .. } => 2,
            Op::Write { .. } => 3,
            Op::Read { .. } => 4,
            Op::Launch { .. } => 5,
            Op::CrossUse { .. } => 6,
            Op::Sync { .. } => 7,
            Op::SyncAll => 8,
            Op::Poll => 9,
            Op::Prepare { .. } => 10,
            Op::Begin { .. } => 11,
            Op::End { .. } => 12,
            Op::Replay { .. } => 13,
            Op::DropGraph { .. } => 14,
            Op::Abort { .. } => 15,
            Op::InstallPools { .. } => 16,
            Op::Cleanup => 17,
            Op::Fault { .. } => 18,
            Op::ReadFault { .. } => 19,
            Op::Foreign { .. } => 20,
        }
    }

    /// Appends the bytes `Op::arbitrary` decodes into this op.
    pub fn encode(&self, out: &mut Vec<u8>) {
        tag(out, self.kind_index(), OP_KINDS);
        match *self {
            Op::Alloc { stream, size } | Op::Empty { stream, size } => {
                out.extend_from_slice(&[stream, size])
            }
            Op::Free { buf } => out.push(buf),
            Op::Write { stream, buf, fill } => out.extend_from_slice(&[stream, buf, fill]),
            Op::Read { stream, buf } => out.extend_from_slice(&[stream, buf]),
            Op::Launch {
                stream,
                kernel,
                a,
                b,
                out: o,
                k,
            } => {
                out.push(stream);
                tag(out, kernel.index(), 4);
                out.extend_from_slice(&[a, b, o, k]);
            }
            Op::CrossUse { stream, buf, k } => out.extend_from_slice(&[stream, buf, k]),
            Op::Sync { stream }
            | Op::Prepare { stream }
            | Op::Begin { stream }
            | Op::End { stream }
            | Op::Abort { stream } => out.push(stream),
            Op::Replay { graph } | Op::DropGraph { graph } => out.push(graph),
            Op::InstallPools { preset } => out.push(preset),
            Op::SyncAll | Op::Poll | Op::Cleanup => {}
            Op::Fault { site } => tag(out, site.index(), FaultSite::ALL.len() as u32),
            Op::ReadFault { stream, buf, site } => {
                out.extend_from_slice(&[stream, buf]);
                tag(out, site.index(), ReadSite::ALL.len() as u32);
            }
            Op::Foreign { what, stream, buf } => {
                tag(out, what.index(), Foreign::ALL.len() as u32);
                out.extend_from_slice(&[stream, buf]);
            }
        }
    }
}

/// Which part of the op space a fuzz target explores. Every target runs the
/// same driver and oracle; a profile only filters the ops, bounds the
/// streams and picks the drop-queue thresholds.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Profile {
    /// Everything.
    All,
    /// Orders of frees, syncs and capture transitions (prepare, begin, end,
    /// replay, release, abort) on one or two streams.
    CaptureFreeOrderings,
    /// Cross-stream producers and consumers, syncs, polls and reads whose
    /// synchronization fails, on two to four streams, no capture.
    MultiStreamSync,
    /// Injected faults, skipped launches, taint through launches, writes,
    /// reads and replays, refused windows, handles of another device.
    TaintPropagation,
    /// Deferred frees under tiny flush thresholds: frees, polls, syncs,
    /// cleanups, pool installs, graph releases, reads whose synchronization
    /// fails.
    DropQueue,
}

impl Profile {
    /// Every profile that has a fuzz target, with the target's name.
    pub const TARGETS: [(&'static str, Profile); 4] = [
        ("capture_free_orderings", Profile::CaptureFreeOrderings),
        ("multi_stream_sync", Profile::MultiStreamSync),
        ("taint_propagation", Profile::TaintPropagation),
        ("drop_queue", Profile::DropQueue),
    ];

    /// The profile of a fuzz target's name.
    pub fn of_target(name: &str) -> Option<Profile> {
        Self::TARGETS
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, p)| *p)
    }

    /// The most streams a program of this profile uses.
    pub fn max_streams(self) -> u8 {
        match self {
            Profile::All => 4,
            Profile::CaptureFreeOrderings => 2,
            Profile::MultiStreamSync => 4,
            Profile::TaintPropagation => 2,
            Profile::DropQueue => 3,
        }
    }

    /// The fewest streams.
    pub fn min_streams(self) -> u8 {
        match self {
            Profile::MultiStreamSync => 2,
            _ => 1,
        }
    }

    /// Whether the profile runs `op`.
    pub fn admits(self, op: &Op) -> bool {
        match self {
            Profile::All => true,
            Profile::CaptureFreeOrderings => !matches!(op, Op::InstallPools { .. }),
            Profile::MultiStreamSync => matches!(
                op,
                Op::Alloc { .. }
                    | Op::Free { .. }
                    | Op::Write { .. }
                    | Op::Read { .. }
                    | Op::ReadFault { .. }
                    | Op::Launch { .. }
                    | Op::CrossUse { .. }
                    | Op::Sync { .. }
                    | Op::SyncAll
                    | Op::Poll
                    | Op::Cleanup
            ),
            Profile::TaintPropagation => !matches!(
                op,
                Op::InstallPools { .. } | Op::Cleanup | Op::Poll | Op::Sync { .. }
            ),
            Profile::DropQueue => {
                !matches!(op, Op::Empty { .. } | Op::Fault { .. } | Op::Foreign { .. })
            }
        }
    }

    /// Whether the profile forces tiny flush thresholds.
    pub fn tiny_flush(self) -> bool {
        matches!(self, Profile::DropQueue)
    }

    /// The program as this profile runs it: stream count bounded, ops
    /// filtered.
    pub fn shape(self, mut program: Program) -> Program {
        let span = self.max_streams() - self.min_streams() + 1;
        program.config.streams = self.min_streams() - 1 + program.config.streams % span;
        if self.tiny_flush() && program.config.flush == 0 {
            program.config.flush = 1;
        }
        program.ops.retain(|op| self.admits(op));
        program
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_is_the_inverse_of_decode() {
        let mut rng = crate::rng::SplitMix64::new(3);
        for _ in 0..300 {
            let len = rng.below(200) as usize;
            let bytes: Vec<u8> = (0..len).map(|_| rng.below(256) as u8).collect();
            let p = Program::decode(&bytes);
            let again = Program::decode(&p.encode());
            assert_eq!(again, p);
        }
    }

    #[test]
    fn every_variant_round_trips() {
        let ops = [
            Op::Alloc { stream: 1, size: 2 },
            Op::Empty { stream: 3, size: 4 },
            Op::Free { buf: 5 },
            Op::Write {
                stream: 1,
                buf: 2,
                fill: 3,
            },
            Op::Read { stream: 1, buf: 9 },
            Op::Launch {
                stream: 1,
                kernel: Kernel::Add,
                a: 1,
                b: 2,
                out: 3,
                k: 4,
            },
            Op::CrossUse {
                stream: 1,
                buf: 2,
                k: 3,
            },
            Op::Sync { stream: 7 },
            Op::SyncAll,
            Op::Poll,
            Op::Prepare { stream: 1 },
            Op::Begin { stream: 1 },
            Op::End { stream: 1 },
            Op::Replay { graph: 2 },
            Op::DropGraph { graph: 3 },
            Op::Abort { stream: 0 },
            Op::InstallPools { preset: 2 },
            Op::Cleanup,
            Op::Fault {
                site: FaultSite::DeviceAlloc,
            },
            Op::ReadFault {
                stream: 1,
                buf: 2,
                site: ReadSite::Wait,
            },
            Op::Foreign {
                what: Foreign::Query,
                stream: 3,
                buf: 4,
            },
        ];
        assert_eq!(ops.len() as u32, OP_KINDS);
        let mut all = ops.to_vec();
        all.extend(FaultSite::ALL.map(|site| Op::Fault { site }));
        all.extend(ReadSite::ALL.map(|site| Op::ReadFault {
            stream: 0,
            buf: 0,
            site,
        }));
        all.extend(Foreign::ALL.map(|what| Op::Foreign {
            what,
            stream: 0,
            buf: 0,
        }));
        let p = Program {
            config: Config {
                streams: 1,
                seed: 2,
                flush: 3,
                device: 4,
                layout: 5,
                declared: 6,
            },
            ops: all,
        };
        assert_eq!(Program::decode(&p.encode()), p);
    }
}
