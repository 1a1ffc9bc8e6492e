//! Capture priming and persistent windows: which pools serve reserves, and
//! which holds keep slices while a capture window is open.

use super::error::MemoryError;
use super::handle::{CapturedSlice, SliceHandle};
use super::manager::MemoryManager;
use super::slots::{PIN, WINDOW};
use crate::platform::Storage;

impl<S: Storage> MemoryManager<S> {
    /// Opens a persistent window (windows nest): reserves go to the
    /// persistent pool until the matching [`end_persistent`](Self::end_persistent).
    pub fn begin_persistent(&mut self) {
        // Saturating: 2^64 nested windows are never reached, and a window
        // past them stays persistent rather than wrapping to none.
        self.persistent_depth = self.persistent_depth.saturating_add(1);
    }

    /// Closes the innermost persistent window.
    pub fn end_persistent(&mut self) -> Result<(), MemoryError<S::Error>> {
        if self.persistent_depth == 0 {
            return Err(MemoryError::NoPersistentWindow);
        }
        self.persistent_depth -= 1;
        Ok(())
    }

    /// `NoCapture → Prepare`: from now every slice handed out is retained.
    pub fn prepare(&mut self) -> Result<(), MemoryError<S::Error>> {
        self.capture.prepare()?;
        Ok(())
    }

    /// `Prepare → Capture`: the retained slices go back to the pools.
    pub fn begin_capture(&mut self) -> Result<(), MemoryError<S::Error>> {
        self.capture.begin()?;
        self.drop_window_holds();
        Ok(())
    }

    fn drop_window_holds(&mut self) {
        let window = core::mem::take(&mut self.window);
        for &i in &window {
            self.drop_hold(i, WINDOW);
        }
        self.window = window;
        self.window.clear();
    }

    /// `Capture → NoCapture`: every slice reserved inside the capture, and
    /// every older slice freed inside it, is passed to `sink` and pinned for
    /// the graph until [`unpin`](Self::unpin).
    pub fn end_capture(
        &mut self,
        mut sink: impl FnMut(CapturedSlice),
    ) -> Result<(), MemoryError<S::Error>> {
        self.capture.end()?;
        for &i in &self.window {
            let Some(key) = self.slots.key_at(i) else {
                continue;
            };
            let s = &mut self.slots[i];
            s.holds = (s.holds & !WINDOW) | PIN;
            s.pins = s.pins.saturating_add(1);
            sink(CapturedSlice {
                handle: SliceHandle {
                    index: i,
                    generation: key.generation,
                },
                range: s.range,
            });
        }
        self.window.clear();
        Ok(())
    }

    /// Closes an open window without a graph: held slices go back to the
    /// pools (those their owners still hold stay live).
    pub fn abort_capture(&mut self) -> Result<(), MemoryError<S::Error>> {
        self.capture.abort()?;
        self.drop_window_holds();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::{AllocationMode, MemoryLayout};
    use crate::null::NullStorage;
    use crate::platform::DeviceProperties;

    fn manager() -> MemoryManager<NullStorage> {
        let props = DeviceProperties {
            total_memory: 1 << 30,
            max_page_size: 1 << 20,
            alignment: 256,
            integrated: false,
        };
        MemoryManager::new(NullStorage::default(), MemoryLayout::for_device(&props))
    }

    /// Windows nest without bound: the depth was a `u32` incremented with
    /// `+=`, so the 2^32-th `begin_persistent` overflowed (a panic in a
    /// debug build, persistent mode silently off in a release build).
    #[test]
    fn persistent_windows_nest_past_any_count_without_overflow() {
        let mut m = manager();
        m.persistent_depth = u32::MAX.into();
        m.begin_persistent();
        assert_eq!(m.mode(), AllocationMode::Persistent);
        m.end_persistent().unwrap();
        assert_eq!(m.mode(), AllocationMode::Persistent, "still nested");
        m.persistent_depth = u64::MAX;
        m.begin_persistent();
        assert_eq!(
            m.mode(),
            AllocationMode::Persistent,
            "saturated, not wrapped"
        );
        m.persistent_depth = 1;
        m.end_persistent().unwrap();
        assert_eq!(m.mode(), AllocationMode::Auto);
        assert!(matches!(
            m.end_persistent(),
            Err(MemoryError::NoPersistentWindow)
        ));
    }
}
