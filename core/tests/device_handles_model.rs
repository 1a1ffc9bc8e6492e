//! Model-based property test of buffer handles and their release: random
//! sequences of devices made and dropped, buffers allocated, cloned and
//! dropped (here or on another thread, before or after their device),
//! against a naive model (per buffer, its device and how many handles are
//! alive), checking at every device call that the device holds exactly the
//! buffers the model says have a handle left: none freed early (a handle
//! that outlived its device must never release a later device's buffer,
//! whichever release queue that device got), none kept, no release error.

use proptest::prelude::*;
use streamcore::device::{Buffer, Device, DeviceConfig};
use streamcore::null::Null;
use streamcore::stream::StreamId;

/// Device slots the sequences use.
const DEVICES: usize = 2;

#[derive(Clone, Debug)]
enum Op {
    /// Makes a device in the slot, if it is empty.
    NewDevice(usize),
    /// Drops the slot's device (its handles live on).
    DropDevice(usize),
    /// A buffer on the slot's device, on stream 0 or 1.
    Alloc(usize, bool, u64),
    /// Clones a live handle (by position).
    Clone(usize),
    /// Drops a live handle (by position), here.
    Drop(usize),
    /// Drops a live handle (by position) on a thread of its own.
    DropOnThread(usize),
    /// Drops several handles between two device calls.
    DropMany(usize, usize),
    /// Asks the slot's device for its census.
    Check(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        1 => (0..DEVICES).prop_map(Op::NewDevice),
        1 => (0..DEVICES).prop_map(Op::DropDevice),
        6 => (0..DEVICES, any::<bool>(), 1u64..5000).prop_map(|(d, s, n)| Op::Alloc(d, s, n)),
        3 => any::<usize>().prop_map(Op::Clone),
        4 => any::<usize>().prop_map(Op::Drop),
        1 => any::<usize>().prop_map(Op::DropOnThread),
        1 => (any::<usize>(), 2usize..6).prop_map(|(h, n)| Op::DropMany(h, n)),
        3 => (0..DEVICES).prop_map(Op::Check),
    ]
}

/// A live handle: which model buffer it is a handle of.
struct Handle {
    buffer: usize,
    handle: Buffer,
}

/// A buffer of the model: the device instance it belongs to and its
/// handles alive.
struct Model {
    device: usize,
    handles: usize,
}

struct World {
    /// Per slot, the device and its instance number.
    devices: [Option<(Device<Null>, usize)>; DEVICES],
    next_instance: usize,
    handles: Vec<Handle>,
    model: Vec<Model>,
}

impl World {
    fn forget(&mut self, at: usize) -> Buffer {
        let h = self.handles.swap_remove(at);
        self.model[h.buffer].handles -= 1;
        h.handle
    }

    fn check(&self, slot: usize) {
        let Some((d, instance)) = &self.devices[slot] else {
            return;
        };
        let expected = self
            .model
            .iter()
            .filter(|m| m.device == *instance && m.handles > 0)
            .count();
        assert_eq!(
            d.census().buffers,
            expected,
            "live buffers of device slot {slot}"
        );
        assert_eq!(d.stats().release_errors, 0);
    }

    fn apply(&mut self, op: &Op) {
        match *op {
            Op::NewDevice(s) => {
                if self.devices[s].is_none() {
                    let d = Device::new(Null, DeviceConfig::with_streams(2)).unwrap();
                    self.devices[s] = Some((d, self.next_instance));
                    self.next_instance += 1;
                }
            }
            Op::DropDevice(s) => self.devices[s] = None,
            Op::Alloc(s, stream, size) => {
                if let Some((d, instance)) = &self.devices[s] {
                    let handle = d.alloc(StreamId(u16::from(stream)), size).unwrap();
                    self.model.push(Model {
                        device: *instance,
                        handles: 1,
                    });
                    self.handles.push(Handle {
                        buffer: self.model.len() - 1,
                        handle,
                    });
                    self.check(s);
                }
            }
            Op::Clone(h) if !self.handles.is_empty() => {
                let h = &self.handles[h % self.handles.len()];
                let (buffer, handle) = (h.buffer, h.handle.clone());
                self.model[buffer].handles += 1;
                self.handles.push(Handle { buffer, handle });
            }
            Op::Drop(h) if !self.handles.is_empty() => {
                drop(self.forget(h % self.handles.len()));
            }
            Op::DropOnThread(h) if !self.handles.is_empty() => {
                let handle = self.forget(h % self.handles.len());
                std::thread::spawn(move || drop(handle)).join().unwrap();
            }
            Op::DropMany(h, n) => {
                for i in 0..n {
                    if self.handles.is_empty() {
                        break;
                    }
                    drop(self.forget((h + i) % self.handles.len()));
                }
            }
            Op::Check(s) => self.check(s),
            Op::Clone(_) | Op::Drop(_) | Op::DropOnThread(_) => {}
        }
    }
}

proptest! {
    // 256 cases, or as many as `PROPTEST_CASES` asks for (a long run).
    #![proptest_config(ProptestConfig::default())]

    #[test]
    fn devices_hold_exactly_the_buffers_with_handles_left(ops in prop::collection::vec(op(), 1..120)) {
        let mut w = World {
            devices: [None, None],
            next_instance: 0,
            handles: Vec::new(),
            model: Vec::new(),
        };
        w.apply(&Op::NewDevice(0));
        for op in &ops {
            w.apply(op);
            for s in 0..DEVICES {
                w.check(s);
            }
        }
        // Everything dropped: every device left holds nothing.
        while !w.handles.is_empty() {
            drop(w.forget(0));
        }
        for s in 0..DEVICES {
            w.check(s);
        }
    }
}
