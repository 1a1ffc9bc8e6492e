//! Graph capture: begin, end, replay.
//!
//! Like HIP/CUDA in global capture mode: commands queued on a capturing
//! stream are recorded, not run; a host synchronization, an event query, a
//! storage allocation or a flush that releases pages, while any capture is
//! open, fails with `CaptureUnsupported` and invalidates every open capture;
//! `end_capture` then fails with `CaptureInvalidated`. Only single-stream
//! captures are modelled: event records and waits inside the capture order
//! nothing beyond program order and are not part of the graph.

use std::sync::Arc;

use streamcore::platform::ErrorKind;

use super::command::Command;
use super::{CaptureRec, State};
use crate::counters::Call;
use crate::error::MockError;

impl State {
    /// Starts capturing stream `s`.
    pub(crate) fn begin_capture(&mut self, s: usize) -> Result<(), MockError> {
        if self.streams[s].capture.is_some() {
            return Err(MockError::invalid(std::format!(
                "stream {s} is already capturing"
            )));
        }
        self.tick();
        let id = self.next_capture;
        self.next_capture += 1;
        self.streams[s].capture = Some(CaptureRec {
            id,
            commands: std::vec::Vec::new(),
            invalidated: None,
        });
        self.counters.captures_begun += 1;
        self.calls.push(Call::BeginCapture { stream: s as u32 });
        Ok(())
    }

    /// Stops capturing stream `s`: the graph's id and commands, or
    /// `CaptureInvalidated` (the stream stops capturing either way).
    pub(crate) fn end_capture(&mut self, s: usize) -> Result<(u64, Arc<[Command]>), MockError> {
        let Some(cap) = self.streams[s].capture.take() else {
            return Err(MockError::invalid(std::format!(
                "stream {s} is not capturing"
            )));
        };
        if let Some(reason) = cap.invalidated {
            return Err(MockError::new(
                ErrorKind::CaptureInvalidated,
                std::format!("the capture on stream {s} was invalidated: {reason}"),
            ));
        }
        let id = self.next_graph;
        self.next_graph += 1;
        self.counters.graphs_captured += 1;
        self.calls.push(Call::EndCapture {
            stream: s as u32,
            graph: id,
        });
        Ok((id, Arc::from(cap.commands)))
    }

    /// Queues one replay of a graph on stream `s` (or records it into the
    /// stream's open capture). The replayed commands touch the same pages
    /// and offsets as the captured ones and are checked like new work.
    pub(crate) fn launch_graph(
        &mut self,
        s: usize,
        graph: u64,
        commands: &[Command],
    ) -> Result<(), MockError> {
        for c in commands {
            self.validate(c)?;
        }
        if let Some(cap) = &mut self.streams[s].capture {
            if let Some(r) = &cap.invalidated {
                return Err(MockError::new(
                    ErrorKind::CaptureInvalidated,
                    std::format!("the capture on stream {s} was invalidated: {r}"),
                ));
            }
            cap.commands.extend(commands.iter().cloned());
        } else {
            self.tick();
            for c in commands {
                self.enqueue(s, c.clone(), Some(graph));
            }
        }
        self.counters.graph_launches += 1;
        self.calls.push(Call::LaunchGraph {
            stream: s as u32,
            graph,
        });
        Ok(())
    }

    /// A graph was destroyed (its queued replays still complete).
    pub(crate) fn destroy_graph(&mut self, graph: u64) {
        self.counters.graphs_destroyed += 1;
        self.calls.push(Call::DestroyGraph { graph });
    }
}
