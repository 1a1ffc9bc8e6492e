//! The simulated device: stream queues, events, captures, memory, the
//! scheduler and the checker, behind one lock.
//!
//! Split by concern: [`submit`] (validation, clocks, hazard checks,
//! queueing), [`run`] (choice points and command execution), [`events`]
//! (record, wait, query, synchronize), [`capture`] (begin, end, graph
//! replay), [`storage`] (allocation, release, pinned host access).

pub(crate) mod capture;
pub(crate) mod command;
pub(crate) mod events;
pub(crate) mod run;
pub(crate) mod storage;
pub(crate) mod submit;

use std::boxed::Box;
use std::collections::{BTreeMap, VecDeque};
use std::string::String;
use std::sync::Arc;
use std::vec::Vec;

use streamcore::platform::{DeviceProperties, ErrorKind};

use crate::check::{Agent, Hazard, HazardKind, OpKind, OpRef, VectorClock};
use crate::config::{CostModel, MockConfig};
use crate::counters::{Call, Counters};
use crate::error::MockError;
use crate::kernel::{KernelFn, MockKernel};
use crate::log::LogEntry;
use crate::memory::Memory;
use crate::schedule::{ChoiceRecord, Scheduler};

use command::{Command, Queued};

/// An open capture on one stream.
#[derive(Debug)]
pub(crate) struct CaptureRec {
    pub id: u64,
    pub commands: Vec<Command>,
    /// Why it can no longer be sealed, if something invalidated it.
    pub invalidated: Option<String>,
}

/// One stream.
#[derive(Debug, Default)]
pub(crate) struct StreamState {
    pub queue: VecDeque<Queued>,
    /// What the stream's most recently queued command is ordered after.
    pub clock: VectorClock,
    pub capture: Option<CaptureRec>,
    /// What a device calls the stream (`Platform::create_stream_for`).
    pub label: Option<u16>,
}

/// One event.
#[derive(Debug)]
pub(crate) struct EventState {
    /// The stream's clock at the record.
    pub clock: VectorClock,
    pub passed: bool,
    /// The capture it was recorded into, if it was recorded while capturing.
    pub captured: Option<u64>,
    /// Queued waits on it that have not completed.
    pub waiters: u32,
    /// Whether its handle is alive.
    pub handle: bool,
}

/// Everything the simulated device knows.
pub(crate) struct State {
    pub instance: u64,
    pub props: DeviceProperties,
    pub costs: CostModel,
    /// What device storages declare their calls cost.
    pub storage_costs: streamcore::platform::StorageCosts,
    pub report_uninitialized: bool,
    pub allow_query_during_capture: bool,
    pub scheduler: Box<dyn Scheduler>,
    /// Virtual time, in simulated nanoseconds.
    pub now: u64,
    next_op: u64,
    next_event: u64,
    next_graph: u64,
    next_capture: u64,
    next_storage: u64,
    pub streams: Vec<StreamState>,
    /// What the host is known to be ordered after.
    pub host_clock: VectorClock,
    pub events: BTreeMap<u64, EventState>,
    pub memory: Memory,
    pub kernels: BTreeMap<String, Arc<KernelFn>>,
    pub hazards: Vec<Hazard>,
    pub log: Vec<LogEntry>,
    pub calls: Vec<Call>,
    pub counters: Counters,
    pub choices: Vec<ChoiceRecord>,
    /// Why the device is lost, once a kernel closure panicked while it ran
    /// (a real device's kernel fault): every later call fails with
    /// `DeviceLost` and this message.
    pub lost: Option<String>,
}

impl State {
    /// A fresh device from a validated config.
    pub(crate) fn new(instance: u64, config: MockConfig) -> Self {
        let p = config.properties;
        Self {
            instance,
            props: p,
            costs: config.costs,
            storage_costs: config.declared_storage_costs(),
            report_uninitialized: config.report_uninitialized,
            allow_query_during_capture: config.allow_query_during_capture,
            scheduler: config.scheduler,
            now: 0,
            next_op: 0,
            next_event: 0,
            next_graph: 0,
            next_capture: 0,
            next_storage: 0,
            streams: Vec::new(),
            host_clock: VectorClock::default(),
            events: BTreeMap::new(),
            memory: Memory::new(p.total_memory, config.host_memory, p.alignment)
                .with_virtual_memory(config.virtual_memory),
            kernels: BTreeMap::new(),
            hazards: Vec::new(),
            log: Vec::new(),
            calls: Vec::new(),
            counters: Counters::default(),
            choices: Vec::new(),
            lost: None,
        }
    }

    /// The next op index.
    pub(crate) fn next_op(&mut self) -> u64 {
        let op = self.next_op;
        self.next_op += 1;
        op
    }

    /// A fresh storage id.
    pub(crate) fn new_storage(&mut self) -> u64 {
        let id = self.next_storage;
        self.next_storage += 1;
        id
    }

    /// Records a failed call and passes the error through.
    pub(crate) fn failed(&mut self, op: &'static str, e: MockError) -> MockError {
        self.counters.errors += 1;
        self.calls.push(Call::Failed { op, kind: e.kind() });
        e
    }

    /// Records the outcome of a call: failures are logged, values pass.
    pub(crate) fn outcome<T>(
        &mut self,
        op: &'static str,
        r: Result<T, MockError>,
    ) -> Result<T, MockError> {
        r.map_err(|e| self.failed(op, e))
    }

    /// Checks a handle belongs to this device.
    pub(crate) fn check_instance(&self, instance: u64, what: &str) -> Result<(), MockError> {
        if instance == self.instance {
            Ok(())
        } else {
            Err(MockError::invalid(std::format!(
                "{what} belongs to another mock platform"
            )))
        }
    }

    /// Checks a stream id is one of ours.
    pub(crate) fn check_stream(&self, instance: u64, id: u32) -> Result<usize, MockError> {
        self.check_instance(instance, "stream")?;
        let i = id as usize;
        if i < self.streams.len() {
            Ok(i)
        } else {
            Err(MockError::invalid(std::format!("unknown stream {id}")))
        }
    }

    /// `h` with each stream named as the device that created it calls it
    /// (its creation index where no device named it).
    pub(crate) fn as_named(&self, mut h: Hazard) -> Hazard {
        let name = |agent: &mut Agent| {
            if let Agent::Stream(s) = *agent {
                if let Some(label) = self.streams.get(s as usize).and_then(|st| st.label) {
                    *agent = Agent::Stream(u32::from(label));
                }
            }
        };
        name(&mut h.current.agent);
        if let Some(p) = h.previous.as_mut() {
            name(&mut p.agent);
        }
        h
    }

    /// Creates a stream (named `label` where a device made it) and returns
    /// its id.
    pub(crate) fn create_stream(&mut self, label: Option<u16>) -> Result<u32, MockError> {
        let id = u32::try_from(self.streams.len())
            .map_err(|_| MockError::new(ErrorKind::Other, "too many streams"))?;
        self.streams.push(StreamState {
            label,
            ..StreamState::default()
        });
        self.counters.streams += 1;
        self.calls.push(Call::CreateStream { stream: id });
        Ok(id)
    }

    /// Registers (or replaces) a kernel.
    pub(crate) fn register_kernel(&mut self, name: &str, f: Arc<KernelFn>) {
        self.kernels.insert(String::from(name), f);
    }

    /// Loads a registered kernel.
    pub(crate) fn load_kernel(&mut self, name: &str) -> Result<MockKernel, MockError> {
        let Some(func) = self.kernels.get(name).cloned() else {
            return Err(MockError::new(
                ErrorKind::Kernel,
                std::format!("no kernel is registered under the name `{name}`"),
            ));
        };
        let name: Arc<str> = Arc::from(name);
        self.counters.kernels_loaded += 1;
        self.calls.push(Call::LoadKernel { name: name.clone() });
        Ok(MockKernel {
            name,
            func,
            instance: self.instance,
        })
    }

    /// Whether any stream is capturing.
    pub(crate) fn any_capture_open(&self) -> bool {
        self.streams.iter().any(|s| s.capture.is_some())
    }

    /// Invalidates every open capture (global capture mode).
    pub(crate) fn invalidate_all(&mut self, reason: &str) {
        for s in &mut self.streams {
            if let Some(c) = &mut s.capture {
                if c.invalidated.is_none() {
                    c.invalidated = Some(String::from(reason));
                    self.counters.captures_invalidated += 1;
                }
            }
        }
    }

    /// Reports a host synchronization during a capture, invalidates every
    /// open capture, and returns the driver's error.
    pub(crate) fn sync_during_capture(&mut self, kind: OpKind, what: &str) -> MockError {
        let op = self.next_op();
        self.hazards.push(Hazard {
            kind: HazardKind::SyncDuringCapture,
            current: OpRef {
                op,
                agent: Agent::Host,
                kind,
            },
            previous: None,
            bytes: None,
        });
        let reason = std::format!("{what} while a capture was open");
        self.invalidate_all(&reason);
        MockError::new(ErrorKind::CaptureUnsupported, reason)
    }
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("State")
            .field("instance", &self.instance)
            .field("now", &self.now)
            .field("streams", &self.streams.len())
            .field("events", &self.events.len())
            .field("hazards", &self.hazards.len())
            .finish_non_exhaustive()
    }
}
