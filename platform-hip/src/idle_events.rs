//! Idle driver events, kept per thread for the next `record` to reuse.
//!
//! Creating and destroying a HIP event costs more than recording one, so a
//! dropped [`crate::HipEvent`] leaves its driver event here and the next
//! record on the same thread and device takes it back. The cache is the
//! calling thread's own: taking and giving back touch no lock and no shared
//! counter, which keeps a cross-stream hand-off (one event recorded, waited
//! on and dropped) as cheap as the bare driver calls. An event is a
//! process-wide object, so one dropped on another thread than the one that
//! recorded it simply joins that thread's cache.
//!
//! Bounded: at most [`IDLE_PER_DEVICE`] events per device per thread; any
//! beyond are destroyed at once. A thread's cache is destroyed with the
//! thread.

use std::cell::RefCell;

use cubecl_hip_sys as hip;

/// At most this many idle events are kept per device on each thread.
pub(crate) const IDLE_PER_DEVICE: usize = 256;

/// A thread's idle events, one list per device ordinal.
struct IdleEvents {
    /// `by_device[d]`: idle events created on device `d`.
    by_device: Vec<Vec<hip::hipEvent_t>>,
}

impl Drop for IdleEvents {
    fn drop(&mut self) {
        for (device, idle) in self.by_device.iter_mut().enumerate() {
            let Ok(device) = i32::try_from(device) else {
                continue;
            };
            for raw in idle.drain(..) {
                crate::event::destroy(device, raw);
            }
        }
    }
}

thread_local! {
    static IDLE: RefCell<IdleEvents> = const {
        RefCell::new(IdleEvents {
            by_device: Vec::new(),
        })
    };
}

/// An idle event of `device` this thread kept, if it has one.
#[inline]
pub(crate) fn take(device: i32) -> Option<hip::hipEvent_t> {
    let d = usize::try_from(device).ok()?;
    IDLE.try_with(|idle| {
        let mut idle = idle.try_borrow_mut().ok()?;
        idle.by_device.get_mut(d)?.pop()
    })
    .ok()
    .flatten()
}

/// Keeps an idle event of `device` for this thread's next record; hands it
/// back when the thread's list for the device is full (or the thread is
/// exiting), for the caller to destroy.
#[inline]
pub(crate) fn give_back(device: i32, raw: hip::hipEvent_t) -> Option<hip::hipEvent_t> {
    let Ok(d) = usize::try_from(device) else {
        return Some(raw);
    };
    IDLE.try_with(|idle| {
        let Ok(mut idle) = idle.try_borrow_mut() else {
            return Some(raw);
        };
        if idle.by_device.len() <= d {
            idle.by_device.resize_with(d + 1, Vec::new);
        }
        let list = &mut idle.by_device[d];
        if list.len() < IDLE_PER_DEVICE {
            list.push(raw);
            None
        } else {
            Some(raw)
        }
    })
    .unwrap_or(Some(raw))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake event handle: never handed to the driver.
    fn fake(n: usize) -> hip::hipEvent_t {
        n as hip::hipEvent_t
    }

    /// Takes everything this thread holds for `device`, so no fake handle
    /// reaches the driver when the thread's cache is destroyed.
    fn drain(device: i32) -> Vec<hip::hipEvent_t> {
        std::iter::from_fn(|| take(device)).collect()
    }

    #[test]
    fn events_come_back_per_device_and_last_in_first_out() {
        assert_eq!(take(0), None);
        assert_eq!(give_back(1, fake(11)), None);
        assert_eq!(give_back(0, fake(1)), None);
        assert_eq!(give_back(0, fake(2)), None);
        assert_eq!(take(0), Some(fake(2)));
        assert_eq!(take(0), Some(fake(1)));
        assert_eq!(take(0), None, "device 1's event is not device 0's");
        assert_eq!(drain(1), vec![fake(11)]);
        assert_eq!(take(-1), None);
        assert_eq!(give_back(-1, fake(5)), Some(fake(5)), "no such device");
    }

    #[test]
    fn the_cache_is_bounded_and_hands_back_the_excess() {
        for n in 1..=IDLE_PER_DEVICE {
            assert_eq!(give_back(2, fake(n)), None);
        }
        let extra = fake(IDLE_PER_DEVICE + 1);
        assert_eq!(give_back(2, extra), Some(extra), "the list is full");
        assert_eq!(drain(2).len(), IDLE_PER_DEVICE);
    }

    #[test]
    fn each_thread_keeps_its_own() {
        assert_eq!(give_back(3, fake(7)), None);
        let other_found_one = std::thread::spawn(|| take(3).is_some()).join().ok();
        assert_eq!(
            other_found_one,
            Some(false),
            "another thread's cache is its own"
        );
        assert_eq!(drain(3), vec![fake(7)]);
    }
}
