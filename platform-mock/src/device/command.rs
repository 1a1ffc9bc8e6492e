//! Commands: what a stream queue (or a capture) holds.

use std::vec::Vec;

use streamcore::platform::{Binding, DeviceRange, HostRange, LaunchDims, PageId};

use crate::check::OpKind;
use crate::kernel::MockKernel;
use crate::memory::MemoryKind;

/// One unit of device work.
#[derive(Clone, Debug)]
pub(crate) enum Command {
    CopyToDevice {
        src: HostRange,
        dst: DeviceRange,
    },
    CopyToHost {
        src: DeviceRange,
        dst: HostRange,
    },
    CopyDevice {
        src: DeviceRange,
        dst: DeviceRange,
    },
    Launch {
        kernel: MockKernel,
        dims: LaunchDims,
        bindings: Vec<Binding>,
    },
    /// Marks an event passed.
    Record {
        event: u64,
    },
    /// Blocks the stream until an event has passed.
    Wait {
        event: u64,
    },
}

/// One byte range a command touches.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Touch {
    pub memory: MemoryKind,
    pub page: PageId,
    pub offset: u64,
    pub len: u64,
    pub reads: bool,
    pub writes: bool,
}

fn dev(r: DeviceRange, reads: bool, writes: bool) -> Touch {
    Touch {
        memory: MemoryKind::Device,
        page: r.page,
        offset: r.offset,
        len: r.len,
        reads,
        writes,
    }
}

fn host(r: HostRange, reads: bool, writes: bool) -> Touch {
    Touch {
        memory: MemoryKind::Host,
        page: r.page,
        offset: r.offset,
        len: r.len,
        reads,
        writes,
    }
}

impl Command {
    /// The memory the command touches, sources first.
    pub(crate) fn touches(&self) -> Vec<Touch> {
        match self {
            Command::CopyToDevice { src, dst } => {
                vec![host(*src, true, false), dev(*dst, false, true)]
            }
            Command::CopyToHost { src, dst } => {
                vec![dev(*src, true, false), host(*dst, false, true)]
            }
            Command::CopyDevice { src, dst } => {
                vec![dev(*src, true, false), dev(*dst, false, true)]
            }
            Command::Launch { bindings, .. } => bindings
                .iter()
                .map(|b| dev(b.range, b.access.reads(), b.access.writes()))
                .collect(),
            Command::Record { .. } | Command::Wait { .. } => Vec::new(),
        }
    }

    /// The op kind named in hazard reports (none for event commands).
    pub(crate) fn op_kind(&self) -> Option<OpKind> {
        match self {
            Command::CopyToDevice { .. } => Some(OpKind::CopyToDevice),
            Command::CopyToHost { .. } => Some(OpKind::CopyToHost),
            Command::CopyDevice { .. } => Some(OpKind::CopyDevice),
            Command::Launch { kernel, .. } => Some(OpKind::Kernel(kernel.name.clone())),
            Command::Record { .. } | Command::Wait { .. } => None,
        }
    }
}

/// A command waiting in a stream's queue.
#[derive(Debug)]
pub(crate) struct Queued {
    pub op: u64,
    pub cmd: Command,
    pub graph: Option<u64>,
}
