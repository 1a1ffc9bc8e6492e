//! What a platform can do beyond the required core: declared once, read by
//! the core and the layers above, which refuse what is missing with a typed
//! error instead of asking the platform to fake it.

bitflags::bitflags! {
    /// Optional features of a platform, as a set of flags.
    ///
    /// [`Platform::capabilities`](super::Platform::capabilities) returns the
    /// set; the answer MUST NOT change during the platform's lifetime. An empty
    /// set is a valid platform: streams, events, storage, copies and kernels are
    /// always required, nothing else is.
    ///
    /// ```
    /// use streamcore::platform::Capabilities;
    ///
    /// let firmware = Capabilities::HOST_VISIBLE_DEVICE_MEMORY;
    /// assert!(!firmware.contains(Capabilities::GRAPH_CAPTURE));
    /// ```
    #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
    pub struct Capabilities: u32 {
        /// Stream work can be recorded into a graph and replayed: the platform
        /// implements [`GraphCapture`](super::GraphCapture) and
        /// [`Platform::capture`](super::Platform::capture) returns it. Without
        /// it the device's capture calls (`prepare`, `begin_capture`,
        /// `end_capture`, `abort_capture`, `replay`) fail with
        /// [`Error::NotSupported`](crate::Error::NotSupported).
        const GRAPH_CAPTURE = 1 << 0;
        /// Events can measure the device time elapsed between them (through
        /// the platform's own API, e.g. for benches); the core itself never
        /// reads time.
        const TIMING = 1 << 1;
        /// Device memory is host-visible (an integrated GPU, a firmware
        /// command queue over shared RAM): the host could read device pages
        /// without a copy.
        const HOST_VISIBLE_DEVICE_MEMORY = 1 << 2;
        /// The device storage reserves virtual address ranges and maps
        /// physical memory into them (HIP's virtual memory management), so
        /// pages can grow without moving.
        const VIRTUAL_MEMORY = 1 << 3;
        /// `load_kernel` compiles [`KernelSource::source`](super::KernelSource)
        /// at run time; without it kernels are looked up by name among
        /// kernels built in ahead of time.
        const RUNTIME_COMPILATION = 1 << 4;
    }
}

impl Capabilities {
    /// The name of every flag in `self`, for messages.
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        self.iter_names().map(|(name, _)| name)
    }
}

#[cfg(test)]
mod tests {
    use super::Capabilities;
    use alloc::vec::Vec;

    #[test]
    fn flags_are_distinct_and_named() {
        let all: Vec<_> = Capabilities::all().names().collect();
        assert_eq!(
            all,
            [
                "GRAPH_CAPTURE",
                "TIMING",
                "HOST_VISIBLE_DEVICE_MEMORY",
                "VIRTUAL_MEMORY",
                "RUNTIME_COMPILATION"
            ]
        );
        assert_eq!(Capabilities::all().bits().count_ones(), 5);
        let firmware = Capabilities::HOST_VISIBLE_DEVICE_MEMORY;
        assert!(!firmware.contains(Capabilities::GRAPH_CAPTURE));
        assert_eq!(
            firmware.names().collect::<Vec<_>>(),
            ["HOST_VISIBLE_DEVICE_MEMORY"]
        );
    }
}
