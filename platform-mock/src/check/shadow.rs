//! The shadow of each byte and the check of one access against it.

use std::vec::Vec;

use streamcore::platform::PageId;

use super::range_map::RangeMap;
use super::{Agent, ByteRange, Hazard, HazardKind, OpKind, OpRef, VectorClock};
use crate::memory::MemoryKind;

/// One access as the shadow remembers it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct AccessRec {
    /// Who.
    pub agent: Agent,
    /// The agent's own clock entry for this access.
    pub epoch: u64,
    /// Global op index.
    pub op: u64,
    /// What the op was.
    pub kind: OpKind,
}

impl AccessRec {
    fn op_ref(&self) -> OpRef {
        OpRef {
            op: self.op,
            agent: self.agent,
            kind: self.kind.clone(),
        }
    }
}

/// The shadow of a run of bytes: last writer, and the last read of each
/// agent since that write (sorted by agent).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub(crate) struct Shadow {
    write: Option<AccessRec>,
    reads: Vec<AccessRec>,
}

/// One access to check: who, with what knowledge, reading and/or writing.
pub(crate) struct Access<'a> {
    /// The access itself.
    pub rec: AccessRec,
    /// The accessing agent's clock at the access.
    pub clock: &'a VectorClock,
    /// Whether it reads the bytes.
    pub reads: bool,
    /// Whether it writes the bytes.
    pub writes: bool,
}

/// Where the bytes are, for reports.
#[derive(Copy, Clone)]
pub(crate) struct Place {
    pub memory: MemoryKind,
    pub page: PageId,
}

struct Finding {
    kind: HazardKind,
    previous: Option<AccessRec>,
    lo: u64,
    hi: u64,
}

/// Checks `access` on bytes `start..end` of a page against `shadow`, appends
/// what it finds to `out` (one report per kind and conflicting op, covering
/// every conflicting byte), then records the access.
pub(crate) fn check_and_record(
    shadow: &mut RangeMap<Shadow>,
    start: u64,
    end: u64,
    place: Place,
    access: &Access<'_>,
    report_uninitialized: bool,
    out: &mut Vec<Hazard>,
) {
    let me = access.rec.agent;
    let ordered = |r: &AccessRec| r.agent == me || access.clock.covers(r.agent, r.epoch);
    let host = me == Agent::Host;
    let mut findings: Vec<Finding> = Vec::new();
    let mut note = |kind: HazardKind, prev: Option<&AccessRec>, a: u64, b: u64| {
        let prev_op = prev.map(|p| p.op);
        if let Some(f) = findings
            .iter_mut()
            .find(|f| f.kind == kind && f.previous.as_ref().map(|p| p.op) == prev_op)
        {
            f.lo = f.lo.min(a);
            f.hi = f.hi.max(b);
        } else {
            findings.push(Finding {
                kind,
                previous: prev.cloned(),
                lo: a,
                hi: b,
            });
        }
    };
    shadow.for_each(start, end, |a, b, s| {
        if access.reads {
            match &s.write {
                None if report_uninitialized => note(HazardKind::UninitializedRead, None, a, b),
                None => {}
                Some(w) if !ordered(w) => {
                    let kind = if host {
                        HazardKind::HostReadPending
                    } else {
                        HazardKind::WriteRead
                    };
                    note(kind, Some(w), a, b);
                }
                Some(_) => {}
            }
        }
        if access.writes {
            if let Some(w) = &s.write {
                if !ordered(w) {
                    let kind = if host {
                        HazardKind::HostWritePending
                    } else {
                        HazardKind::WriteWrite
                    };
                    note(kind, Some(w), a, b);
                }
            }
            for r in &s.reads {
                if !ordered(r) {
                    let kind = if host {
                        HazardKind::HostWritePending
                    } else {
                        HazardKind::ReadWrite
                    };
                    note(kind, Some(r), a, b);
                }
            }
        }
    });
    for f in findings {
        out.push(Hazard {
            kind: f.kind,
            current: access.rec.op_ref(),
            previous: f.previous.as_ref().map(AccessRec::op_ref),
            bytes: Some(ByteRange {
                memory: place.memory,
                page: place.page,
                offset: f.lo,
                len: f.hi - f.lo,
            }),
        });
    }
    if access.writes {
        shadow.set(
            start,
            end,
            Shadow {
                write: Some(access.rec.clone()),
                reads: Vec::new(),
            },
        );
    } else if access.reads {
        shadow.update(start, end, |s| {
            s.reads.retain(|r| r.agent != me);
            let at = s.reads.partition_point(|r| r.agent < me);
            s.reads.insert(at, access.rec.clone());
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An access by `agent` at `epoch` (op `op`, a device copy) with its
    /// clock `clock`, reading and writing as `(reads, writes)` says.
    fn access(
        agent: Agent,
        epoch: u64,
        op: u64,
        clock: &VectorClock,
        (reads, writes): (bool, bool),
    ) -> Access<'_> {
        Access {
            rec: AccessRec {
                agent,
                epoch,
                op,
                kind: OpKind::CopyDevice,
            },
            clock,
            reads,
            writes,
        }
    }

    const PLACE: Place = Place {
        memory: MemoryKind::Device,
        page: PageId(1),
    };

    #[test]
    fn unordered_write_then_read_is_reported_once_with_the_covering_range() {
        let mut m = RangeMap::new(100, Shadow::default());
        let mut out = Vec::new();
        let mut c0 = VectorClock::default();
        let e0 = c0.tick(Agent::Stream(0));
        let w = access(Agent::Stream(0), e0, 1, &c0, (false, true));
        check_and_record(&mut m, 10, 20, PLACE, &w, true, &mut out);
        check_and_record(&mut m, 30, 40, PLACE, &w, true, &mut out);
        assert!(out.is_empty());
        let mut c1 = VectorClock::default();
        let e1 = c1.tick(Agent::Stream(1));
        let r = access(Agent::Stream(1), e1, 2, &c1, (true, false));
        check_and_record(&mut m, 15, 35, PLACE, &r, false, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].kind, HazardKind::WriteRead);
        assert_eq!(out[0].previous.as_ref().map(|p| p.op), Some(1));
        let b = out[0].bytes.unwrap();
        assert_eq!((b.offset, b.len), (15, 20));
    }

    #[test]
    fn joined_clock_orders_the_accesses() {
        let mut m = RangeMap::new(8, Shadow::default());
        let mut out = Vec::new();
        let mut c0 = VectorClock::default();
        let e0 = c0.tick(Agent::Stream(0));
        let w = access(Agent::Stream(0), e0, 1, &c0, (false, true));
        check_and_record(&mut m, 0, 8, PLACE, &w, true, &mut out);
        let mut c1 = VectorClock::default();
        c1.join(&c0);
        let e1 = c1.tick(Agent::Stream(1));
        let rw = access(Agent::Stream(1), e1, 2, &c1, (true, true));
        check_and_record(&mut m, 0, 8, PLACE, &rw, true, &mut out);
        assert!(out.is_empty(), "{out:?}");
        // Stream 0 now writes again without knowing about stream 1's access.
        let e0b = c0.tick(Agent::Stream(0));
        let w2 = access(Agent::Stream(0), e0b, 3, &c0, (false, true));
        check_and_record(&mut m, 4, 8, PLACE, &w2, true, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].kind, HazardKind::WriteWrite);
    }

    #[test]
    fn uninitialized_read_and_host_kinds() {
        let mut m = RangeMap::new(8, Shadow::default());
        let mut out = Vec::new();
        let mut h = VectorClock::default();
        let eh = h.tick(Agent::Host);
        let hr = access(Agent::Host, eh, 1, &h, (true, false));
        check_and_record(&mut m, 0, 4, PLACE, &hr, true, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].kind, HazardKind::UninitializedRead);
        out.clear();
        // Submission joins the host's clock, as the platform does.
        let mut c = VectorClock::default();
        c.join(&h);
        let e = c.tick(Agent::Stream(2));
        let w = access(Agent::Stream(2), e, 2, &c, (false, true));
        check_and_record(&mut m, 0, 8, PLACE, &w, true, &mut out);
        assert!(out.is_empty(), "{out:?}");
        let eh2 = h.tick(Agent::Host);
        let hr2 = access(Agent::Host, eh2, 3, &h, (true, false));
        check_and_record(&mut m, 0, 8, PLACE, &hr2, true, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].kind, HazardKind::HostReadPending);
    }
}
