//! The two ring buffers a drop queue is made of, abstracted over growable
//! (`VecDeque`) and fixed (`heapless::Deque`) storage.

use alloc::collections::VecDeque;

/// A FIFO ring buffer.
pub(crate) trait Ring<X> {
    /// Appends `x`, or hands it back when the ring is full.
    fn try_push_back(&mut self, x: X) -> Result<(), X>;
    /// Removes the oldest element.
    fn pop_front(&mut self) -> Option<X>;
    /// The oldest element.
    fn front(&self) -> Option<&X>;
    /// The newest element.
    fn back_mut(&mut self) -> Option<&mut X>;
    /// Number of elements.
    fn len(&self) -> usize;
}

impl<X> Ring<X> for VecDeque<X> {
    #[inline]
    fn try_push_back(&mut self, x: X) -> Result<(), X> {
        self.push_back(x);
        Ok(())
    }
    #[inline]
    fn pop_front(&mut self) -> Option<X> {
        VecDeque::pop_front(self)
    }
    #[inline]
    fn front(&self) -> Option<&X> {
        VecDeque::front(self)
    }
    #[inline]
    fn back_mut(&mut self) -> Option<&mut X> {
        VecDeque::back_mut(self)
    }
    #[inline]
    fn len(&self) -> usize {
        VecDeque::len(self)
    }
}

impl<X, const N: usize> Ring<X> for heapless::Deque<X, N> {
    #[inline]
    fn try_push_back(&mut self, x: X) -> Result<(), X> {
        self.push_back(x)
    }
    #[inline]
    fn pop_front(&mut self) -> Option<X> {
        heapless::Deque::pop_front(self)
    }
    #[inline]
    fn front(&self) -> Option<&X> {
        heapless::Deque::front(self)
    }
    #[inline]
    fn back_mut(&mut self) -> Option<&mut X> {
        heapless::Deque::back_mut(self)
    }
    #[inline]
    fn len(&self) -> usize {
        heapless::Deque::len(self)
    }
}
