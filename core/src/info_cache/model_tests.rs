//! Model-based property tests: the info cache against a naive reference
//! model (a `Vec` of keys in LRU order, entries with pin counts, linear
//! scans everywhere), over random operation sequences. Every answer, every
//! evicted value (in order) and the exact LRU order are compared.

use alloc::vec;
use alloc::vec::Vec;

use proptest::prelude::*;

use super::*;

#[derive(Clone, Debug)]
enum Op {
    Get(u64),
    Insert(u64),
    Capture,
    Normal,
    Commit(u64),
    Discard,
    Release(u64),
    ClearUnpinned,
    SetPolicy(usize, u64),
}

/// Keys 0..10 of 1 to 5 words, so byte bounds matter and both kinds of
/// key storage (in the node up to 3 words, a buffer beyond) are used.
fn words(k: u64) -> Vec<u64> {
    vec![k; 1 + (k % 5) as usize]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u64..10).prop_map(Op::Get),
        6 => (0u64..10).prop_map(Op::Insert),
        2 => Just(Op::Capture),
        1 => Just(Op::Normal),
        2 => (0u64..3).prop_map(Op::Commit),
        1 => Just(Op::Discard),
        2 => (0u64..3).prop_map(Op::Release),
        1 => Just(Op::ClearUnpinned),
        1 => (0usize..6, 0u64..100).prop_map(|(e, b)| Op::SetPolicy(e, b)),
    ]
}

#[derive(Debug)]
struct Entry {
    key: Vec<u64>,
    value: u32,
    pins: u32,
    in_window: bool,
    /// Hit since it entered the LRU list or got its last second chance.
    referenced: bool,
}

#[derive(Debug, Default)]
struct Model {
    entries: Vec<Entry>,
    /// Keys in the LRU list, the next evicted (but for second chances) first.
    lru: Vec<Vec<u64>>,
    window: Vec<Vec<u64>>,
    graphs: Vec<(u64, Vec<Vec<u64>>)>,
    capture: bool,
    max_entries: usize,
    max_bytes: u64,
}

fn bytes_of(key: &[u64]) -> u64 {
    8 * key.len() as u64
}

impl Model {
    fn entry(&mut self, key: &[u64]) -> Option<&mut Entry> {
        self.entries.iter_mut().find(|e| e.key == key)
    }

    fn lru_bytes(&self) -> u64 {
        self.lru.iter().map(|k| bytes_of(k)).sum()
    }

    /// Second chance: the oldest key hit since it entered the list (or
    /// since its last chance) loses its mark and becomes the newest; the
    /// oldest unmarked key is evicted.
    fn evict_oldest(&mut self, evicted: &mut Vec<u32>) {
        loop {
            let key = self.lru.remove(0);
            let e = self.entry(&key).unwrap();
            if e.referenced {
                e.referenced = false;
                self.lru.push(key);
                continue;
            }
            let pos = self.entries.iter().position(|e| e.key == key).unwrap();
            evicted.push(self.entries.remove(pos).value);
            return;
        }
    }

    fn trim(&mut self, evicted: &mut Vec<u32>) {
        if self.capture {
            return;
        }
        while !self.lru.is_empty()
            && (self.lru.len() > self.max_entries || self.lru_bytes() > self.max_bytes)
        {
            self.evict_oldest(evicted);
        }
    }

    fn record(&mut self, key: &[u64]) {
        let e = self.entry(key).unwrap();
        if !e.in_window {
            e.in_window = true;
            e.referenced = false;
            self.lru.retain(|k| k != key);
            self.window.push(key.to_vec());
        }
    }

    fn get(&mut self, key: &[u64]) -> Option<u32> {
        let value = self.entry(key)?.value;
        if self.capture {
            self.record(key);
        } else if self.lru.iter().any(|k| k == key) {
            // A hit marks the entry; the order stays.
            self.entry(key).unwrap().referenced = true;
        }
        Some(value)
    }

    fn insert(
        &mut self,
        key: &[u64],
        value: u32,
        evicted: &mut Vec<u32>,
    ) -> Result<u32, InsertError<u32>> {
        if self.entry(key).is_some() {
            return Err(InsertError::AlreadyCached(value));
        }
        let bytes = bytes_of(key);
        if !self.capture {
            if self.max_entries == 0 || bytes > self.max_bytes {
                return Err(InsertError::TooLarge(value));
            }
            while !self.lru.is_empty()
                && (self.lru.len() + 1 > self.max_entries
                    || self.lru_bytes() + bytes > self.max_bytes)
            {
                self.evict_oldest(evicted);
            }
        }
        self.entries.push(Entry {
            key: key.to_vec(),
            value,
            pins: 0,
            in_window: false,
            referenced: false,
        });
        if self.capture {
            self.record(key);
        } else {
            self.lru.push(key.to_vec());
        }
        Ok(value)
    }

    fn discard(&mut self, evicted: &mut Vec<u32>) -> usize {
        let window = core::mem::take(&mut self.window);
        for key in &window {
            let e = self.entry(key).unwrap();
            e.in_window = false;
            if e.pins == 0 {
                self.lru.push(key.clone());
            }
        }
        self.capture = false;
        self.trim(evicted);
        window.len()
    }

    fn commit(&mut self, g: u64, evicted: &mut Vec<u32>) -> Result<usize, PinError> {
        if !self.capture {
            return Err(PinError::NotCapturing);
        }
        if self.graphs.iter().any(|(id, _)| *id == g) {
            return Err(PinError::GraphExists(GraphId(g)));
        }
        let window = core::mem::take(&mut self.window);
        for key in &window {
            let e = self.entry(key).unwrap();
            e.in_window = false;
            e.pins += 1;
        }
        let n = window.len();
        self.graphs.push((g, window));
        self.capture = false;
        self.trim(evicted);
        Ok(n)
    }

    fn release(&mut self, g: u64, evicted: &mut Vec<u32>) -> Result<usize, PinError> {
        let Some(pos) = self.graphs.iter().position(|(id, _)| *id == g) else {
            return Err(PinError::UnknownGraph(GraphId(g)));
        };
        let (_, keys) = self.graphs.remove(pos);
        let mut back = Vec::new();
        let mut unpinned = 0;
        for key in &keys {
            let e = self.entry(key).unwrap();
            e.pins -= 1;
            if e.pins == 0 {
                unpinned += 1;
                if !e.in_window {
                    back.push(key.clone());
                }
            }
        }
        back.append(&mut self.lru);
        self.lru = back;
        self.trim(evicted);
        Ok(unpinned)
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn info_cache_matches_model(
        max_entries in 0usize..6,
        max_bytes in 0u64..100,
        ops in prop::collection::vec(op(), 0..120),
    ) {
        let mut cache: InfoCache<u32> = InfoCache::new(CachePolicy::new(max_entries, max_bytes));
        let mut m = Model { max_entries, max_bytes, ..Model::default() };
        let mut next = 0u32;
        for op in &ops {
            let (mut got_ev, mut want_ev) = (Vec::new(), Vec::new());
            match *op {
                Op::Get(k) => {
                    let w = words(k);
                    prop_assert_eq!(cache.get(&w).copied(), m.get(&w), "get {:?}", w);
                }
                Op::Insert(k) => {
                    let w = words(k);
                    next += 1;
                    let got = cache.insert(&w, next, |v| got_ev.push(v)).copied();
                    let want = m.insert(&w, next, &mut want_ev);
                    prop_assert_eq!(got, want, "insert {:?}", w);
                }
                Op::Capture => {
                    cache.set_mode(CacheMode::Capture, |v| got_ev.push(v));
                    m.capture = true;
                }
                Op::Normal => {
                    cache.set_mode(CacheMode::Normal, |v| got_ev.push(v));
                    if m.capture {
                        m.discard(&mut want_ev);
                    }
                }
                Op::Commit(g) => {
                    let got = cache.capture_commit(GraphId(g), |v| got_ev.push(v));
                    prop_assert_eq!(got, m.commit(g, &mut want_ev));
                }
                Op::Discard => {
                    let got = cache.capture_discard(|v| got_ev.push(v));
                    let want = if m.capture { Ok(m.discard(&mut want_ev)) } else { Err(PinError::NotCapturing) };
                    prop_assert_eq!(got, want);
                }
                Op::Release(g) => {
                    let got = cache.graph_release(GraphId(g), |v| got_ev.push(v));
                    prop_assert_eq!(got, m.release(g, &mut want_ev));
                }
                Op::ClearUnpinned => {
                    let got = cache.clear_unpinned(|v| got_ev.push(v));
                    let n = m.lru.len();
                    while !m.lru.is_empty() {
                        m.evict_oldest(&mut want_ev);
                    }
                    prop_assert_eq!(got, n);
                }
                Op::SetPolicy(e, b) => {
                    cache.set_policy(CachePolicy::new(e, b), |v| got_ev.push(v));
                    m.max_entries = e;
                    m.max_bytes = b;
                    m.trim(&mut want_ev);
                }
            }
            prop_assert_eq!(&got_ev, &want_ev, "evicted by {:?}", op);
            let mut lru_mru_first = m.lru.clone();
            lru_mru_first.reverse();
            prop_assert_eq!(cache.lru_keys(), lru_mru_first, "LRU order after {:?}", op);
            prop_assert_eq!(cache.len(), m.entries.len());
            prop_assert_eq!(cache.bytes(), m.entries.iter().map(|e| bytes_of(&e.key)).sum::<u64>());
            prop_assert_eq!(cache.lru_bytes(), m.lru_bytes());
            prop_assert_eq!(cache.window_len(), m.window.len());
            prop_assert_eq!(cache.graph_count(), m.graphs.len());
            prop_assert_eq!(cache.mode() == CacheMode::Capture, m.capture);
            for k in 0..10 {
                let w = words(k);
                let e = m.entries.iter().find(|e| e.key == w);
                prop_assert_eq!(cache.peek(&w).copied(), e.map(|e| e.value));
                prop_assert_eq!(cache.pin_count(&w), e.map(|e| e.pins));
            }
            for g in 0..3 {
                let want = m.graphs.iter().find(|(id, _)| *id == g).map(|(_, k)| k.len());
                prop_assert_eq!(cache.graph_entries(GraphId(g)), want);
            }
        }
    }
}
