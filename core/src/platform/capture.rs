//! Graph capture as a trait of its own, so a platform without graphs (a
//! firmware command queue) implements [`Platform`] without faking it.

use super::Platform;

/// Records a stream's work into a replayable graph.
///
/// A platform with graphs usually implements it on itself
/// (`type Capture = Self;`) and returns `Some(self)` from
/// [`Platform::capture`]; a platform without declares
/// `type Capture = NoGraphs;` and writes nothing else. The core only calls
/// these methods through [`Platform::capture`], and only when
/// [`Platform::capabilities`] contains
/// [`GRAPH_CAPTURE`](super::Capabilities::GRAPH_CAPTURE).
pub trait GraphCapture<P: Platform + ?Sized> {
    /// A sealed, replayable capture of a stream's work.
    type Graph;

    /// Starts capturing `stream`: work queued on it from now on is recorded,
    /// not run, until [`GraphCapture::end_capture`].
    fn begin_capture(&self, stream: &mut P::Stream) -> Result<(), P::Error>;

    /// Stops capturing and seals what was recorded into a graph. If anything
    /// invalidated the capture (a host synchronization, a storage allocation on
    /// platforms that forbid it) it MUST fail with
    /// [`ErrorKind::CaptureInvalidated`](super::ErrorKind::CaptureInvalidated)
    /// and leave the stream not capturing.
    fn end_capture(&self, stream: &mut P::Stream) -> Result<Self::Graph, P::Error>;

    /// Queues one replay of `graph` on `stream`. The replay touches the same
    /// device addresses the capture recorded.
    fn launch_graph(&self, stream: &mut P::Stream, graph: &Self::Graph) -> Result<(), P::Error>;

    /// Destroys a graph. Replays already queued still complete.
    fn destroy_graph(&self, graph: Self::Graph) -> Result<(), P::Error>;
}

/// The graph type of platform `P`.
pub type GraphOf<P> = <<P as Platform>::Capture as GraphCapture<P>>::Graph;

/// The capture of a platform without graphs: a type with no values.
///
/// A `&NoGraphs` can never exist, so [`Platform::capture`] can only answer
/// `None` for such a platform and its capture methods can never run: the
/// compiler proves it (each body is an empty `match`), nothing is faked.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum NoGraphs {}

impl<P: Platform + ?Sized> GraphCapture<P> for NoGraphs {
    type Graph = NoGraphs;

    fn begin_capture(&self, _: &mut P::Stream) -> Result<(), P::Error> {
        match *self {}
    }

    fn end_capture(&self, _: &mut P::Stream) -> Result<NoGraphs, P::Error> {
        match *self {}
    }

    fn launch_graph(&self, _: &mut P::Stream, _: &NoGraphs) -> Result<(), P::Error> {
        match *self {}
    }

    fn destroy_graph(&self, graph: NoGraphs) -> Result<(), P::Error> {
        match graph {}
    }
}
