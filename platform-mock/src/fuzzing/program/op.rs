//! The operations of a program, and their encoding back into the bytes
//! `arbitrary` decodes them from.

use std::vec::Vec;

use arbitrary::Arbitrary;

/// The kernels the harness registers on the mock (see
/// [`kernels`](crate::fuzzing::kernels)). Every launch binds one info word `k % 4`.
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

/// The `u32` whose `(x * count) >> 32` is `index`: how the derive picks a
/// variant.
fn tag(out: &mut Vec<u8>, index: u32, count: u32) {
    let x = (u64::from(index) << 32).div_ceil(u64::from(count));
    out.extend_from_slice(&(x as u32).to_le_bytes());
}

/// The tag of `value`, one of `all` (every variant, in declaration order).
fn tag_of<T: PartialEq>(out: &mut Vec<u8>, all: &[T], value: T) {
    let index = all.iter().position(|v| *v == value).unwrap_or(0);
    tag(out, index as u32, all.len() as u32);
}

impl Kernel {
    /// Every kernel, in declaration order.
    pub const ALL: [Kernel; 4] = [Kernel::Fill, Kernel::Scale, Kernel::Add, Kernel::Incr];

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
}

impl ReadSite {
    const ALL: [ReadSite; 4] = [
        ReadSite::Synchronize,
        ReadSite::Record,
        ReadSite::CopyToHost,
        ReadSite::Wait,
    ];
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
}

/// Number of [`Op`] variants.
pub const OP_KINDS: u32 = 21;

impl Op {
    /// [`Op::Write`] of the pattern `fill` into buffer `buf` on `stream`.
    pub const fn write(stream: u8, buf: u8, fill: u8) -> Op {
        Op::Write { stream, buf, fill }
    }

    /// [`Op::Launch`] of `kernel` on `stream`: inputs `a` and `b`, output
    /// `out`, scalar `k`.
    pub const fn launch(stream: u8, kernel: Kernel, a: u8, b: u8, out: u8, k: u8) -> Op {
        Op::Launch {
            stream,
            kernel,
            a,
            b,
            out,
            k,
        }
    }

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
                tag_of(out, &Kernel::ALL, kernel);
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
            Op::Fault { site } => tag_of(out, &FaultSite::ALL, site),
            Op::ReadFault { stream, buf, site } => {
                out.extend_from_slice(&[stream, buf]);
                tag_of(out, &ReadSite::ALL, site);
            }
            Op::Foreign { what, stream, buf } => {
                tag_of(out, &Foreign::ALL, what);
                out.extend_from_slice(&[stream, buf]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Config, Program};
    use super::*;

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
