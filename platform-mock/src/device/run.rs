//! Making progress: choice points, and running one command.

use std::vec::Vec;

use streamcore::platform::ErrorKind;

use super::State;
use super::command::Command;
use crate::error::MockError;
use crate::kernel::KernelArg;
use crate::log::{FNV_START, LogEntry, LogOp, fnv1a};
use crate::schedule::{ChoicePoint, ChoiceRecord};

impl State {
    /// Streams whose head command can complete now, in id order.
    pub(crate) fn ready(&self) -> Vec<u32> {
        self.streams
            .iter()
            .enumerate()
            .filter(|(_, st)| match st.queue.front() {
                None => false,
                Some(q) => match &q.cmd {
                    // A dropped event was already passed (see `maybe_forget`).
                    Command::Wait { event } => self.events.get(event).is_none_or(|e| e.passed),
                    _ => true,
                },
            })
            .map(|(i, _)| i as u32)
            .collect()
    }

    /// Whether every queue is empty.
    pub(crate) fn idle(&self) -> bool {
        self.streams.iter().all(|s| s.queue.is_empty())
    }

    /// Asks the scheduler; `None` is "stop".
    fn choose(&mut self, may_stop: bool, ready: &[u32]) -> Option<u32> {
        let point = ChoicePoint { may_stop, ready };
        let options = point.options();
        let chosen = self.scheduler.choose(&point) % options;
        self.choices.push(ChoiceRecord {
            options,
            chosen,
            may_stop,
        });
        point.stream_of(chosen)
    }

    /// An opportunistic choice point, repeated until the scheduler stops or
    /// nothing is ready.
    pub(crate) fn tick(&mut self) {
        loop {
            let ready = self.ready();
            if ready.is_empty() {
                return;
            }
            match self.choose(true, &ready) {
                Some(s) => self.execute(s as usize),
                None => return,
            }
        }
    }

    /// Forced choice points until `done` holds. Fails (instead of spinning)
    /// if nothing can run while `done` does not hold.
    pub(crate) fn run_until(&mut self, done: impl Fn(&State) -> bool) -> Result<(), MockError> {
        while !done(self) {
            if !self.step() {
                return Err(MockError::new(
                    ErrorKind::Other,
                    "the awaited work can never complete (nothing is ready)",
                ));
            }
        }
        Ok(())
    }

    /// One forced choice point; whether anything ran.
    pub(crate) fn step(&mut self) -> bool {
        let ready = self.ready();
        if ready.is_empty() {
            return false;
        }
        match self.choose(false, &ready) {
            Some(s) => {
                self.execute(s as usize);
                true
            }
            None => false,
        }
    }

    /// Completes the head command of stream `s`.
    pub(crate) fn execute(&mut self, s: usize) {
        let Some(q) = self.streams[s].queue.pop_front() else {
            return;
        };
        let costs = self.costs;
        let copy_cost = |len: u64| costs.copy_base_ns + len / costs.copy_bytes_per_ns.max(1);
        let (cost, what, digest) = match q.cmd {
            Command::CopyToDevice { src, dst } => {
                let data = self.read_bytes(src.page, src.offset, src.len);
                self.write_bytes(dst.page, dst.offset, &data);
                (
                    copy_cost(src.len),
                    LogOp::CopyToDevice { src, dst },
                    digest_of(&data),
                )
            }
            Command::CopyToHost { src, dst } => {
                let data = self.read_bytes(src.page, src.offset, src.len);
                self.write_bytes(dst.page, dst.offset, &data);
                (
                    copy_cost(src.len),
                    LogOp::CopyToHost { src, dst },
                    digest_of(&data),
                )
            }
            Command::CopyDevice { src, dst } => {
                let data = self.read_bytes(src.page, src.offset, src.len);
                self.write_bytes(dst.page, dst.offset, &data);
                (
                    copy_cost(src.len),
                    LogOp::CopyDevice { src, dst },
                    digest_of(&data),
                )
            }
            Command::Launch {
                kernel,
                dims,
                bindings,
            } => {
                let mut args: Vec<KernelArg> = bindings
                    .iter()
                    .map(|b| {
                        let bytes = self.read_bytes(b.range.page, b.range.offset, b.range.len);
                        KernelArg::new(b.access, b.range, bytes)
                    })
                    .collect();
                // A closure that panics is a kernel that faults: its outputs
                // are not written and the device is lost (see `State::lost`),
                // instead of the panic unwinding through whatever call
                // happened to run the kernel (a drop's synchronize included).
                let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    (kernel.func)(&dims, &mut args);
                }));
                if let Err(payload) = ran {
                    let why = payload
                        .downcast_ref::<&str>()
                        .map(|s| String::from(*s))
                        .or_else(|| payload.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| String::from("a non-text panic"));
                    if self.lost.is_none() {
                        self.lost = Some(std::format!(
                            "kernel `{}` panicked while it ran: {why}",
                            kernel.name
                        ));
                    }
                    args.clear();
                }
                let mut h = FNV_START;
                let mut wrote = false;
                for (b, a) in bindings.iter().zip(args) {
                    if b.access.writes() {
                        let bytes = a.into_bytes();
                        h = fnv1a(h, &bytes);
                        wrote = true;
                        self.write_bytes(b.range.page, b.range.offset, &bytes);
                    }
                }
                (
                    costs.launch_ns,
                    LogOp::Launch {
                        kernel: kernel.name.clone(),
                        dims,
                    },
                    if wrote { h } else { 0 },
                )
            }
            Command::Record { event } => {
                if let Some(e) = self.events.get_mut(&event) {
                    e.passed = true;
                }
                self.maybe_forget(event);
                (costs.event_ns, LogOp::Record { event }, 0)
            }
            Command::Wait { event } => {
                if let Some(e) = self.events.get_mut(&event) {
                    e.waiters = e.waiters.saturating_sub(1);
                }
                self.maybe_forget(event);
                (costs.event_ns, LogOp::Wait { event }, 0)
            }
        };
        self.now = self.now.saturating_add(cost);
        self.counters.commands_completed += 1;
        self.log.push(LogEntry {
            time: self.now,
            stream: s as u32,
            op: q.op,
            graph: q.graph,
            what,
            digest,
        });
    }

    fn read_bytes(&self, page: streamcore::platform::PageId, offset: u64, len: u64) -> Vec<u8> {
        self.memory
            .page(page)
            .map(|p| p.read(offset, len))
            .unwrap_or_else(|| vec![0; len as usize])
    }

    fn write_bytes(&mut self, page: streamcore::platform::PageId, offset: u64, data: &[u8]) {
        if let Some(p) = self.memory.page_mut(page) {
            p.write(offset, data);
        }
    }
}

fn digest_of(data: &[u8]) -> u64 {
    if data.is_empty() {
        0
    } else {
        fnv1a(FNV_START, data)
    }
}
