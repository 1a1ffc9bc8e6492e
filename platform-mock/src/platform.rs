//! [`MockPlatform`]: the simulated device as a [`Platform`], plus the
//! inspection and control calls tests use.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::vec::Vec;

use streamcore::platform::{
    Binding, Capabilities, DeviceProperties, DeviceRange, GraphCapture, HostRange, KernelSource,
    LaunchDims, Platform,
};
use streamcore::stream::StreamId;

use crate::check::Hazard;
use crate::config::MockConfig;
use crate::counters::{Call, Counters};
use crate::device::State;
use crate::device::command::Command;
use crate::error::MockError;
use crate::handles::{MockEvent, MockGraph, MockStream};
use crate::kernel::{KernelArg, MockKernel};
use crate::log::LogEntry;
use crate::memory::MemoryKind;
use crate::schedule::{ChoiceRecord, Scheduler};
use crate::storage::{MockHostStorage, MockStorage};

/// Distinguishes platforms, so a handle of one is refused by another.
static NEXT_INSTANCE: AtomicU64 = AtomicU64::new(1);

/// A deterministic simulated GPU. Cloning gives another handle to the same
/// device (storages hold one too).
///
/// ```
/// use streamcore::platform::{Platform, Storage, HostStorage, DeviceRange, HostRange};
/// use streamcore_mock::MockPlatform;
///
/// let mock = MockPlatform::new();
/// let mut s = mock.create_stream().unwrap();
/// let mut dev = mock.device_storage().unwrap();
/// let mut host = mock.host_storage().unwrap();
/// let d = dev.alloc(4).unwrap();
/// let h = host.alloc(4).unwrap();
/// host.write(h, 0, &[1, 2, 3, 4]).unwrap();
/// let (hr, dr) = (HostRange { page: h, offset: 0, len: 4 }, DeviceRange { page: d, offset: 0, len: 4 });
/// mock.copy_to_device(&mut s, hr, dr).unwrap();
/// mock.copy_to_host(&mut s, dr, HostRange { page: h, offset: 0, len: 4 }).unwrap();
/// let done = mock.record(&mut s).unwrap();
/// mock.synchronize(&done).unwrap();
/// let mut out = [0u8; 4];
/// host.read(h, 0, &mut out).unwrap();
/// assert_eq!(out, [1, 2, 3, 4]);
/// mock.assert_no_hazards();
/// ```
#[derive(Clone, Debug)]
pub struct MockPlatform {
    shared: Arc<Mutex<State>>,
}

impl Default for MockPlatform {
    fn default() -> Self {
        Self::new()
    }
}

impl MockPlatform {
    /// A device with the default configuration (seed 0).
    pub fn new() -> Self {
        let instance = NEXT_INSTANCE.fetch_add(1, Ordering::Relaxed);
        Self {
            shared: Arc::new(Mutex::new(State::new(instance, MockConfig::default()))),
        }
    }

    /// A device with the seeded scheduler started from `seed`.
    pub fn seeded(seed: u64) -> Self {
        // The default config is valid, so this cannot fail.
        Self::with_config(MockConfig::default().seed(seed)).unwrap_or_default()
    }

    /// A device built from `config`. Fails with `InvalidValue` if the
    /// alignment is not a power of two.
    pub fn with_config(config: MockConfig) -> Result<Self, MockError> {
        if !config.properties.alignment.is_power_of_two() {
            return Err(MockError::invalid(std::format!(
                "alignment {} is not a power of two",
                config.properties.alignment
            )));
        }
        let instance = NEXT_INSTANCE.fetch_add(1, Ordering::Relaxed);
        Ok(Self {
            shared: Arc::new(Mutex::new(State::new(instance, config))),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while the lock was held (kernel closures' are caught where
        // they run) poisons it; the state is still consistent enough to
        // inspect, so carry on.
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn call<T>(
        &self,
        op: &'static str,
        f: impl FnOnce(&mut State) -> Result<T, MockError>,
    ) -> Result<T, MockError> {
        let mut st = self.lock();
        if let Some(why) = &st.lost {
            let e = MockError::new(streamcore::platform::ErrorKind::DeviceLost, why.clone());
            return st.outcome(op, Err(e));
        }
        let r = f(&mut st);
        // A kernel that faulted while this call ran the device fails it too.
        let r = match &st.lost {
            Some(why) => Err(MockError::new(
                streamcore::platform::ErrorKind::DeviceLost,
                why.clone(),
            )),
            None => r,
        };
        st.outcome(op, r)
    }

    /// Registers (or replaces) the kernel `name`. [`Platform::load_kernel`]
    /// looks kernels up by [`KernelSource::name`] and ignores the source
    /// text; a kernel already loaded keeps the closure it was loaded with.
    /// A closure that panics while it runs is a kernel fault, as on a real
    /// device: its outputs are not written and the device is lost (the call
    /// that ran it and every later one fail with
    /// [`ErrorKind::DeviceLost`](streamcore::platform::ErrorKind::DeviceLost)
    /// and the panic's message); the panic does not reach the caller.
    pub fn register_kernel<F>(&self, name: &str, kernel: F)
    where
        F: Fn(&LaunchDims, &mut [KernelArg]) + Send + Sync + 'static,
    {
        self.lock().register_kernel(name, Arc::new(kernel));
    }

    /// A new stream, named `label` in hazard reports when a device made it.
    fn new_stream(&self, label: Option<u16>) -> Result<MockStream, MockError> {
        let mut st = self.lock();
        let r = st.create_stream(label);
        let id = st.outcome("create_stream", r)?;
        Ok(MockStream {
            id,
            instance: st.instance,
        })
    }

    /// Every hazard found so far, in the order found. A stream a device
    /// created is named by the device's number for it
    /// ([`Agent::Stream`](crate::check::Agent::Stream)`(n)` for
    /// `StreamId(n)`); one created by `create_stream` directly, by its
    /// order of creation on this platform.
    pub fn hazards(&self) -> Vec<Hazard> {
        let st = self.lock();
        st.hazards.iter().map(|h| st.as_named(h.clone())).collect()
    }

    /// Returns and clears the hazards found so far (streams named as by
    /// [`hazards`](Self::hazards)).
    pub fn take_hazards(&self) -> Vec<Hazard> {
        let mut st = self.lock();
        let taken = std::mem::take(&mut st.hazards);
        taken.into_iter().map(|h| st.as_named(h)).collect()
    }

    /// Panics, listing them, if any hazard was found. A test helper.
    #[track_caller]
    pub fn assert_no_hazards(&self) {
        let h = self.hazards();
        if !h.is_empty() {
            let lines: Vec<std::string::String> = h.iter().map(|h| std::format!("  {h}")).collect();
            panic!("{} hazard(s) found:\n{}", h.len(), lines.join("\n"));
        }
    }

    /// The device's number for the platform stream `stream` (a
    /// [`LogEntry::stream`], numbered in creation order on this platform):
    /// `StreamId(n)` for a stream a device created for its `StreamId(n)`
    /// (devices create theirs when first used, so the orders differ);
    /// `None` for one created by `create_stream` directly, or no such
    /// stream.
    pub fn device_stream(&self, stream: u32) -> Option<StreamId> {
        let st = self.lock();
        st.streams.get(stream as usize)?.label.map(StreamId)
    }

    /// Every completed command, in completion order (streams by their
    /// order of creation on this platform; [`device_stream`](Self::device_stream)
    /// names them as the device does).
    pub fn event_log(&self) -> Vec<LogEntry> {
        self.lock().log.clone()
    }

    /// Returns and clears the event log.
    pub fn take_event_log(&self) -> Vec<LogEntry> {
        std::mem::take(&mut self.lock().log)
    }

    /// The counters.
    pub fn counters(&self) -> Counters {
        self.lock().counters.clone()
    }

    /// Every host call so far, in order (failed calls as [`Call::Failed`]).
    pub fn calls(&self) -> Vec<Call> {
        self.lock().calls.clone()
    }

    /// Returns and clears the call sequence.
    pub fn take_calls(&self) -> Vec<Call> {
        std::mem::take(&mut self.lock().calls)
    }

    /// Every choice point so far and the option taken: what an exhaustive
    /// explorer needs (see [`Explorer`](crate::schedule::Explorer)).
    pub fn choice_trace(&self) -> Vec<ChoiceRecord> {
        self.lock().choices.clone()
    }

    /// Returns and clears the choice trace.
    pub fn take_choice_trace(&self) -> Vec<ChoiceRecord> {
        std::mem::take(&mut self.lock().choices)
    }

    /// Replaces the scheduler from now on.
    pub fn set_scheduler(&self, scheduler: std::boxed::Box<dyn Scheduler>) {
        self.lock().scheduler = scheduler;
    }

    /// One forced choice point: completes one ready command. Returns whether
    /// anything ran.
    pub fn step(&self) -> bool {
        self.lock().step()
    }

    /// Completes every queued command (forced choice points). Returns how
    /// many ran. Does not synchronize the host (its clock is unchanged).
    pub fn run_until_idle(&self) -> u64 {
        let mut st = self.lock();
        let mut n = 0;
        while st.step() {
            n += 1;
        }
        n
    }

    /// Whether no command is queued.
    pub fn is_idle(&self) -> bool {
        self.lock().idle()
    }

    /// Commands queued on `stream` and not completed.
    pub fn queued(&self, stream: &MockStream) -> usize {
        let st = self.lock();
        st.streams
            .get(stream.id as usize)
            .map_or(0, |s| s.queue.len())
    }

    /// Whether `stream` is capturing.
    pub fn is_capturing(&self, stream: &MockStream) -> bool {
        let st = self.lock();
        st.streams
            .get(stream.id as usize)
            .is_some_and(|s| s.capture.is_some())
    }

    /// Ids of the streams whose open capture was invalidated (it can no
    /// longer be sealed), in increasing order.
    pub fn invalidated_captures(&self) -> Vec<u32> {
        let st = self.lock();
        st.streams
            .iter()
            .enumerate()
            .filter(|(_, s)| s.capture.as_ref().is_some_and(|c| c.invalidated.is_some()))
            .map(|(i, _)| i as u32)
            .collect()
    }

    /// Virtual time, in simulated nanoseconds.
    pub fn now(&self) -> u64 {
        self.lock().now
    }

    /// Bytes reserved by pages of `kind` not yet released.
    pub fn memory_used(&self, kind: MemoryKind) -> u64 {
        self.lock().memory.used(kind)
    }

    /// Events the device still tracks (handles alive, or needed by a wait).
    pub fn tracked_events(&self) -> usize {
        self.lock().events.len()
    }

    /// Reads device bytes for inspection: no choice point, no hazard check,
    /// no synchronization. Fails on an invalid range.
    pub fn peek(&self, range: DeviceRange) -> Result<Vec<u8>, MockError> {
        self.peek_memory(MemoryKind::Device, range.page, range.offset, range.len)
    }

    /// Reads pinned host bytes for inspection, like [`MockPlatform::peek`].
    pub fn peek_host(&self, range: HostRange) -> Result<Vec<u8>, MockError> {
        self.peek_memory(MemoryKind::Host, range.page, range.offset, range.len)
    }

    fn peek_memory(
        &self,
        memory: MemoryKind,
        page: streamcore::platform::PageId,
        offset: u64,
        len: u64,
    ) -> Result<Vec<u8>, MockError> {
        let st = self.lock();
        st.validate_touch(&crate::device::command::Touch {
            memory,
            page,
            offset,
            len,
            reads: true,
            writes: false,
        })?;
        Ok(st
            .memory
            .page(page)
            .map(|p| p.read(offset, len))
            .unwrap_or_default())
    }

    /// Writes device bytes directly from the host (test setup). Checked as a
    /// host write: racing with queued work that uses the bytes is a hazard.
    pub fn poke(&self, range: DeviceRange, data: &[u8]) -> Result<(), MockError> {
        if data.len() as u64 != range.len {
            return Err(MockError::invalid(
                "poke: data length differs from the range",
            ));
        }
        self.call("poke", |st| {
            st.host_write(MemoryKind::Device, None, range.page, range.offset, data)
        })
    }
}

impl Platform for MockPlatform {
    type Stream = MockStream;
    type Event = MockEvent;
    type Storage = MockStorage;
    type HostStorage = MockHostStorage;
    type Capture = Self;
    type Kernel = MockKernel;
    type Error = MockError;

    fn properties(&self) -> DeviceProperties {
        self.lock().props
    }

    /// Graph capture; virtual memory when configured with
    /// [`virtual_memory`](crate::MockConfig::virtual_memory) (its device
    /// storages then offer resizable pages). Kernels are Rust closures found
    /// by name (no run-time compilation); events carry no timing.
    fn capabilities(&self) -> Capabilities {
        let mut caps = Capabilities::GRAPH_CAPTURE;
        if self.lock().memory.granularity.is_some() {
            caps |= Capabilities::VIRTUAL_MEMORY;
        }
        caps
    }

    fn capture(&self) -> Option<&Self> {
        Some(self)
    }

    fn create_stream(&self) -> Result<MockStream, MockError> {
        self.new_stream(None)
    }

    /// A stream that hazard reports call by the device's number for it.
    fn create_stream_for(&self, sid: StreamId) -> Result<MockStream, MockError> {
        self.new_stream(Some(sid.0))
    }

    fn device_storage(&self) -> Result<MockStorage, MockError> {
        let mut st = self.lock();
        Ok(MockStorage {
            shared: self.shared.clone(),
            id: st.new_storage(),
            alignment: st.props.alignment,
            pending: Vec::new(),
        })
    }

    fn host_storage(&self) -> Result<MockHostStorage, MockError> {
        let mut st = self.lock();
        Ok(MockHostStorage {
            shared: self.shared.clone(),
            id: st.new_storage(),
            alignment: st.props.alignment,
            pending: Vec::new(),
        })
    }

    fn record(&self, stream: &mut MockStream) -> Result<MockEvent, MockError> {
        let id = self.call("record", |st| {
            let s = st.check_stream(stream.instance, stream.id)?;
            st.record(s)
        })?;
        Ok(MockEvent {
            id,
            instance: stream.instance,
            shared: Arc::downgrade(&self.shared),
        })
    }

    fn wait(&self, stream: &mut MockStream, event: &MockEvent) -> Result<(), MockError> {
        self.call("wait", |st| {
            let s = st.check_stream(stream.instance, stream.id)?;
            st.check_instance(event.instance, "event")?;
            st.wait(s, event.id)
        })
    }

    fn query(&self, event: &MockEvent) -> Result<bool, MockError> {
        self.call("query", |st| {
            st.check_instance(event.instance, "event")?;
            st.query(event.id)
        })
    }

    fn synchronize(&self, event: &MockEvent) -> Result<(), MockError> {
        self.call("synchronize", |st| {
            st.check_instance(event.instance, "event")?;
            st.synchronize(event.id)
        })
    }

    fn copy_to_device(
        &self,
        stream: &mut MockStream,
        src: HostRange,
        dst: DeviceRange,
    ) -> Result<(), MockError> {
        self.call("copy_to_device", |st| {
            let s = st.check_stream(stream.instance, stream.id)?;
            st.submit(s, Command::CopyToDevice { src, dst })?;
            st.counters.copies_to_device += 1;
            st.calls.push(Call::CopyToDevice { stream: s as u32 });
            Ok(())
        })
    }

    fn copy_to_host(
        &self,
        stream: &mut MockStream,
        src: DeviceRange,
        dst: HostRange,
    ) -> Result<(), MockError> {
        self.call("copy_to_host", |st| {
            let s = st.check_stream(stream.instance, stream.id)?;
            st.submit(s, Command::CopyToHost { src, dst })?;
            st.counters.copies_to_host += 1;
            st.calls.push(Call::CopyToHost { stream: s as u32 });
            Ok(())
        })
    }

    fn copy_device(
        &self,
        stream: &mut MockStream,
        src: DeviceRange,
        dst: DeviceRange,
    ) -> Result<(), MockError> {
        self.call("copy_device", |st| {
            let s = st.check_stream(stream.instance, stream.id)?;
            st.submit(s, Command::CopyDevice { src, dst })?;
            st.counters.copies_device += 1;
            st.calls.push(Call::CopyDevice { stream: s as u32 });
            Ok(())
        })
    }

    /// Looks the kernel up by name among the registered closures; an unknown
    /// name fails with [`ErrorKind::Kernel`](streamcore::platform::ErrorKind::Kernel).
    fn load_kernel(&self, source: &KernelSource<'_>) -> Result<MockKernel, MockError> {
        self.call("load_kernel", |st| st.load_kernel(source.name))
    }

    fn launch(
        &self,
        stream: &mut MockStream,
        kernel: &MockKernel,
        dims: LaunchDims,
        bindings: &[Binding],
    ) -> Result<(), MockError> {
        self.call("launch", |st| {
            let s = st.check_stream(stream.instance, stream.id)?;
            st.submit(
                s,
                Command::Launch {
                    kernel: kernel.clone(),
                    dims,
                    bindings: bindings.to_vec(),
                },
            )?;
            st.counters.launches += 1;
            st.calls.push(Call::Launch {
                stream: s as u32,
                kernel: kernel.name.clone(),
            });
            Ok(())
        })
    }
}

impl GraphCapture<MockPlatform> for MockPlatform {
    type Graph = MockGraph;

    fn begin_capture(&self, stream: &mut MockStream) -> Result<(), MockError> {
        self.call("begin_capture", |st| {
            let s = st.check_stream(stream.instance, stream.id)?;
            st.begin_capture(s)
        })
    }

    fn end_capture(&self, stream: &mut MockStream) -> Result<MockGraph, MockError> {
        self.call("end_capture", |st| {
            let s = st.check_stream(stream.instance, stream.id)?;
            let (id, commands) = st.end_capture(s)?;
            Ok(MockGraph {
                id,
                instance: st.instance,
                commands,
            })
        })
    }

    fn launch_graph(&self, stream: &mut MockStream, graph: &MockGraph) -> Result<(), MockError> {
        self.call("launch_graph", |st| {
            let s = st.check_stream(stream.instance, stream.id)?;
            st.check_instance(graph.instance, "graph")?;
            st.launch_graph(s, graph.id, &graph.commands)
        })
    }

    fn destroy_graph(&self, graph: MockGraph) -> Result<(), MockError> {
        self.call("destroy_graph", |st| {
            st.check_instance(graph.instance, "graph")?;
            st.destroy_graph(graph.id);
            Ok(())
        })
    }
}
