//! The sync table and wait plans: fixed cases, and a property test against
//! a naive happens-before model.

use super::*;
use proptest::prelude::*;

const A: StreamId = StreamId(0);
const B: StreamId = StreamId(1);
const C: StreamId = StreamId(2);

fn plan_of(t: &SyncTable, consumer: StreamId, marks: &[WriteMark]) -> Vec<(StreamId, Cursor)> {
    let mut p = WaitPlan::new(t.streams());
    t.plan(consumer, marks.iter().copied(), &mut p).unwrap();
    p.waits().collect()
}

/// Growing moves every cursor, completed mark and synced entry to its
/// place in the larger block; the new streams start at zero.
#[test]
fn grow_keeps_every_cell() {
    let mut t = SyncTable::new(2);
    for _ in 0..3 {
        t.submit(A).unwrap();
    }
    for _ in 0..5 {
        t.submit(B).unwrap();
    }
    t.synced(A, B, 4).unwrap();
    t.synced(B, A, 2).unwrap();
    t.completed(A, 1).unwrap();
    t.completed(B, 3).unwrap();
    let before = |t: &SyncTable| {
        (
            [t.cursor(A).unwrap(), t.cursor(B).unwrap()],
            [
                t.completed_cursor(A).unwrap(),
                t.completed_cursor(B).unwrap(),
            ],
            [
                t.synced_cursor(A, B).unwrap(),
                t.synced_cursor(B, A).unwrap(),
            ],
        )
    };
    let was = before(&t);
    assert_eq!(was, ([3, 5], [1, 3], [4, 2]));
    t.grow(4);
    assert_eq!(t.streams(), 4);
    assert_eq!(before(&t), was);
    let d = StreamId(3);
    assert_eq!(t.cursor(C).unwrap(), 0);
    assert_eq!(t.completed_all(), &[1, 3, 0, 0]);
    assert_eq!(t.synced_cursor(d, A).unwrap(), 0);
    assert_eq!(t.synced_cursor(A, d).unwrap(), 0);
    // The old streams' knowledge still decides their waits.
    let w = WriteMark {
        stream: B,
        cursor: 4,
    };
    assert!(plan_of(&t, A, &[w]).is_empty(), "A synced B up to 4");
    assert_eq!(plan_of(&t, C, &[w]), [(B, 4)], "C knows nothing of B");
    t.all_completed();
    assert_eq!(t.completed_all(), &[3, 5, 0, 0]);
}

#[test]
fn waits_once_then_not_again() {
    let mut t = SyncTable::new(2);
    let c = t.submit(B).unwrap();
    let w = WriteMark {
        stream: B,
        cursor: c,
    };
    assert_eq!(plan_of(&t, A, &[w, w]), [(B, c)], "one wait for two reads");
    t.synced(A, B, t.cursor(B).unwrap()).unwrap();
    assert!(plan_of(&t, A, &[w]).is_empty(), "already synced");
    // A later write by B needs a new wait.
    let c2 = t.submit(B).unwrap();
    assert_eq!(
        plan_of(
            &t,
            A,
            &[WriteMark {
                stream: B,
                cursor: c2
            }]
        ),
        [(B, c2)]
    );
}

#[test]
fn own_writes_and_completed_writes_need_no_wait() {
    let mut t = SyncTable::new(2);
    let ca = t.submit(A).unwrap();
    assert!(
        plan_of(
            &t,
            A,
            &[WriteMark {
                stream: A,
                cursor: ca
            }]
        )
        .is_empty()
    );
    let cb = t.submit(B).unwrap();
    t.completed(B, cb).unwrap();
    assert!(
        plan_of(
            &t,
            A,
            &[WriteMark {
                stream: B,
                cursor: cb
            }]
        )
        .is_empty()
    );
}

#[test]
fn sync_is_transitive_through_the_vector_clock() {
    let mut t = SyncTable::new(3);
    let cc = t.submit(C).unwrap();
    t.synced(B, C, t.cursor(C).unwrap()).unwrap();
    t.submit(B).unwrap();
    t.synced(A, B, t.cursor(B).unwrap()).unwrap();
    assert!(
        plan_of(
            &t,
            A,
            &[WriteMark {
                stream: C,
                cursor: cc
            }]
        )
        .is_empty()
    );
}

/// Growing the table keeps every cursor, sync and completion, and the
/// new streams start knowing nothing: the same answers as a table built
/// at the larger size from the start.
#[test]
fn growing_keeps_history() {
    let ops = |t: &mut SyncTable| {
        let cb = t.submit(B).unwrap();
        t.synced(A, B, cb).unwrap();
        t.submit(A).unwrap();
        t.completed(A, 1).unwrap();
    };
    let mut grown = SyncTable::new(0);
    grown.grow(2);
    ops(&mut grown);
    grown.grow(3);
    grown.grow(2); // never shrinks
    let mut full = SyncTable::new(3);
    ops(&mut full);
    assert_eq!(grown, full);
    assert_eq!(grown.streams(), 3);
    let cc = grown.submit(C).unwrap();
    full.submit(C).unwrap();
    let mark = [WriteMark {
        stream: C,
        cursor: cc,
    }];
    assert_eq!(plan_of(&grown, A, &mark), plan_of(&full, A, &mark));
    let mut plan = WaitPlan::new(0);
    plan.grow(3);
    grown.plan(A, mark, &mut plan).unwrap();
    assert_eq!(plan.waits().collect::<Vec<_>>(), [(C, cc)]);
}

#[test]
fn unknown_streams_are_typed_errors() {
    let mut t = SyncTable::new(1);
    assert_eq!(t.submit(B), Err(UnknownStream(B)));
    let mut p = WaitPlan::new(1);
    assert_eq!(
        t.plan(
            A,
            [WriteMark {
                stream: C,
                cursor: 1
            }],
            &mut p
        ),
        Err(UnknownStream(C))
    );
}

/// Model: a consumer must wait exactly when the write is not ordered
/// before it, where "ordered" is computed by brute force over the
/// happens-before relation of explicit syncs (transitive closure).
#[derive(Debug, Clone)]
enum Op {
    Submit(u8),
    Sync {
        consumer: u8,
        producer: u8,
    },
    Check {
        consumer: u8,
        producer: u8,
        back: u8,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u8..3).prop_map(Op::Submit),
        (0u8..3, 0u8..3).prop_map(|(consumer, producer)| Op::Sync { consumer, producer }),
        (0u8..3, 0u8..3, 0u8..4).prop_map(|(consumer, producer, back)| Op::Check {
            consumer,
            producer,
            back
        }),
    ]
}

proptest! {
    #[test]
    fn plan_matches_happens_before_model(
        ops in proptest::collection::vec(op(), 1..60),
        n in 2usize..4,
    ) {
        // Two streams and three: the cells laid out for each.
        let mut t = SyncTable::new(n);
        // model: knows[a][b] = max cursor of b ordered before a's next work
        let mut knows = vec![vec![0u64; n]; n];
        let mut cur = vec![0u64; n];
        for op in ops {
            match op {
                Op::Submit(s) => {
                    let s = s as usize % n;
                    cur[s] += 1;
                    knows[s][s] = cur[s];
                    t.submit(StreamId(s as u16)).unwrap();
                }
                Op::Sync { consumer, producer } => {
                    let (a, b) = (consumer as usize % n, producer as usize % n);
                    if a != b {
                        // a waits on an event recorded on b now: a learns all b knows.
                        let kb = knows[b].clone();
                        for x in 0..n { knows[a][x] = knows[a][x].max(kb[x]); }
                        knows[a][b] = knows[a][b].max(cur[b]);
                        t.synced(StreamId(a as u16), StreamId(b as u16), cur[b]).unwrap();
                    }
                }
                Op::Check { consumer, producer, back } => {
                    let (a, b) = (consumer as usize % n, producer as usize % n);
                    let c = cur[b].saturating_sub(back as u64);
                    if c == 0 { continue; }
                    let need = a != b && knows[a][b] < c;
                    let got = plan_of(&t, StreamId(a as u16), &[WriteMark { stream: StreamId(b as u16), cursor: c }]);
                    prop_assert_eq!(!got.is_empty(), need);
                }
            }
        }
    }
}
