//! Unit tests: one per rule of the info cache.

use alloc::vec;
use alloc::vec::Vec;

use super::*;

fn cache(max_entries: usize, max_bytes: u64) -> InfoCache<u32> {
    InfoCache::new(CachePolicy::new(max_entries, max_bytes))
}

/// Inserts and asserts success, collecting evictions.
fn put(c: &mut InfoCache<u32>, words: &[u64], v: u32, evicted: &mut Vec<u32>) {
    assert_eq!(c.insert(words, v, |e| evicted.push(e)).copied(), Ok(v));
}

#[test]
fn get_hits_exact_words_only() {
    let mut c = cache(8, 1024);
    let mut ev = Vec::new();
    put(&mut c, &[1, 2, 3], 10, &mut ev);
    put(&mut c, &[0], 11, &mut ev);
    assert_eq!(c.get(&[1, 2, 3]), Some(&10));
    assert_eq!(c.get(&[1, 2]), None);
    assert_eq!(c.get(&[0, 0]), None, "length is part of the key");
    assert_eq!(c.get(&[0]), Some(&11));
    assert_eq!(c.get(&[]), None);
    assert_eq!((c.len(), c.bytes()), (2, 32));
    assert!(ev.is_empty());
    assert!(c.contains(&[0]) && !c.contains(&[9]));
}

#[test]
fn insert_of_cached_words_hands_the_value_back() {
    let mut c = cache(8, 1024);
    let mut ev = Vec::new();
    put(&mut c, &[5], 1, &mut ev);
    assert_eq!(
        c.insert(&[5], 2, |e| ev.push(e)).copied(),
        Err(InsertError::AlreadyCached(2))
    );
    assert_eq!(c.peek(&[5]), Some(&1));
    assert_eq!(InsertError::TooLarge(7).into_value(), 7);
}

#[test]
fn least_recently_used_is_evicted_first_and_get_refreshes() {
    let mut c = cache(3, 1024);
    let mut ev = Vec::new();
    for k in 1..=3 {
        put(&mut c, &[k], k as u32, &mut ev);
    }
    assert_eq!(c.get(&[1]), Some(&1)); // order now (MRU..LRU): 1 3 2
    assert_eq!(c.peek(&[2]), Some(&2), "peek does not refresh");
    put(&mut c, &[4], 4, &mut ev);
    assert_eq!(ev, [2]);
    put(&mut c, &[5], 5, &mut ev);
    assert_eq!(ev, [2, 3]);
    assert_eq!(c.lru_keys(), vec![vec![5], vec![4], vec![1]]);
    assert_eq!(c.len(), 3);
}

/// A hit marks its entry and leaves the order alone; eviction gives each
/// marked tail a second chance (to the head, mark cleared) and evicts the
/// first unmarked one. The list stays whole both ways: the order read from
/// the head, and evictions taken from the tail.
#[test]
fn a_hit_marks_its_entry_and_eviction_gives_it_a_second_chance() {
    let mut c = cache(4, 1024);
    let mut ev = Vec::new();
    for k in 1..=4 {
        put(&mut c, &[k], k as u32, &mut ev);
    }
    let keys = |c: &InfoCache<u32>| c.lru_keys().concat();
    assert_eq!(keys(&c), [4, 3, 2, 1]);
    assert_eq!(c.get(&[4]), Some(&4), "the head");
    assert_eq!(c.get(&[2]), Some(&2), "the middle");
    assert_eq!(c.get(&[1]), Some(&1), "the tail");
    assert_eq!(c.get(&[1]), Some(&1), "twice is one mark");
    assert_eq!(keys(&c), [4, 3, 2, 1], "hits do not reorder");
    assert_eq!(
        (c.lru_len(), c.lru_bytes()),
        (4, 32),
        "a hit neither adds nor moves"
    );
    // 1 (marked) goes to the head, 2 (marked) too, 3 goes.
    put(&mut c, &[5], 5, &mut ev);
    assert_eq!(ev, [3]);
    assert_eq!(keys(&c), [5, 2, 1, 4]);
    // 4 is still marked, 1 and 2 spent theirs: 4 moves, 1 goes.
    put(&mut c, &[6], 6, &mut ev);
    assert_eq!(ev, [3, 1]);
    assert_eq!(keys(&c), [6, 4, 5, 2]);
    // Every entry marked: one eviction walks the whole list once.
    for k in [6, 4, 5, 2] {
        assert_eq!(c.get(&[k]), Some(&(k as u32)));
    }
    put(&mut c, &[7], 7, &mut ev);
    assert_eq!(ev, [3, 1, 2], "after a full turn, the old tail goes");
    assert_eq!(keys(&c), [7, 6, 4, 5], "a full turn keeps the order");
    c.set_policy(CachePolicy::new(0, 1024), |v| ev.push(v));
    assert_eq!(ev, [3, 1, 2, 5, 4, 6, 7], "no mark left: tail to head");
}

/// An entry coming back to the list (from a capture window) starts
/// unmarked: a hit before its capture gives it no second chance after.
#[test]
fn an_entry_back_from_a_window_starts_unmarked() {
    let mut c = cache(2, 1024);
    let mut ev = Vec::new();
    put(&mut c, &[1], 1, &mut ev);
    put(&mut c, &[2], 2, &mut ev);
    assert_eq!(c.get(&[1]), Some(&1));
    c.set_mode(CacheMode::Capture, |_| ());
    assert_eq!(c.get(&[1]), Some(&1));
    assert_eq!(c.capture_discard(|e| ev.push(e)), Ok(1));
    assert_eq!(c.lru_keys(), vec![vec![1], vec![2]]);
    assert_eq!(c.get(&[2]), Some(&2));
    put(&mut c, &[3], 3, &mut ev);
    assert_eq!(ev, [1], "2 was hit since it entered; 1 was not");
}

#[test]
fn byte_bound_evicts_as_many_as_needed() {
    let mut c = cache(100, 64);
    let mut ev = Vec::new();
    put(&mut c, &[1; 3], 1, &mut ev); // 24 bytes
    put(&mut c, &[2; 3], 2, &mut ev); // 48
    put(&mut c, &[3; 1], 3, &mut ev); // 56
    put(&mut c, &[4; 7], 4, &mut ev); // needs 56: evicts 1 and 2 (-> 8 + 56)
    assert_eq!(ev, [1, 2]);
    assert_eq!((c.lru_len(), c.lru_bytes()), (2, 64));
}

#[test]
fn an_entry_that_cannot_fit_is_refused_outside_a_capture() {
    let mut c = cache(2, 16);
    let mut ev = Vec::new();
    put(&mut c, &[1], 1, &mut ev);
    assert_eq!(
        c.insert(&[1, 2, 3], 9, |e| ev.push(e)).copied(),
        Err(InsertError::TooLarge(9))
    );
    assert!(ev.is_empty(), "a refused insert evicts nothing");
    let mut none = cache(0, 1024);
    assert_eq!(
        none.insert(&[1], 9, |_| ()).copied(),
        Err(InsertError::TooLarge(9))
    );
    // A capture caches it anyway.
    none.set_mode(CacheMode::Capture, |_| ());
    assert_eq!(none.insert(&[1], 9, |_| ()).copied(), Ok(9));
}

#[test]
fn capture_caches_everything_evicts_nothing_and_records_each_use_once() {
    let mut c = cache(2, 1024);
    let mut ev = Vec::new();
    put(&mut c, &[1], 1, &mut ev);
    put(&mut c, &[2], 2, &mut ev);
    c.set_mode(CacheMode::Capture, |e| ev.push(e));
    assert_eq!(c.mode(), CacheMode::Capture);
    for k in 3..=10 {
        put(&mut c, &[k], k as u32, &mut ev);
    }
    assert_eq!(c.get(&[1]), Some(&1));
    assert_eq!(c.get(&[1]), Some(&1));
    assert_eq!(c.get(&[3]), Some(&3));
    assert!(ev.is_empty());
    assert_eq!(c.len(), 10);
    assert_eq!(c.window_len(), 9, "8 inserts and one hit, each once");
    assert_eq!(c.lru_keys(), vec![vec![2]], "window entries leave the LRU");
    assert_eq!(c.clear_unpinned(|e| ev.push(e)), 1);
    assert_eq!(ev, [2], "clear_unpinned spares the open window");
}

#[test]
fn commit_pins_for_the_graph_and_release_unpins() {
    let mut c = cache(2, 1024);
    let mut ev = Vec::new();
    c.set_mode(CacheMode::Capture, |_| ());
    for k in 1..=4 {
        put(&mut c, &[k], k as u32, &mut ev);
    }
    assert_eq!(c.capture_commit(GraphId(7), |e| ev.push(e)), Ok(4));
    assert_eq!(c.mode(), CacheMode::Normal);
    assert_eq!((c.graph_count(), c.graph_entries(GraphId(7))), (1, Some(4)));
    assert_eq!(c.pin_count(&[3]), Some(1));
    assert!(ev.is_empty(), "pinned entries are not trimmed");
    assert_eq!(c.clear_unpinned(|e| ev.push(e)), 0);

    // Eviction skips pinned entries: only ordinary ones are evicted.
    for k in 10..=13 {
        put(&mut c, &[k], k as u32, &mut ev);
    }
    assert_eq!(ev, [10, 11]);
    assert_eq!(c.get(&[1]), Some(&1), "pinned entries still hit");
    assert_eq!((c.len(), c.lru_len()), (6, 2));

    // Release: the four go to the cold end (first used coldest), then trim.
    assert_eq!(c.graph_release(GraphId(7), |e| ev.push(e)), Ok(4));
    assert_eq!(ev, [10, 11, 1, 2, 3, 4]);
    assert_eq!(c.graph_count(), 0);
    assert_eq!(
        c.graph_release(GraphId(7), |_| ()),
        Err(PinError::UnknownGraph(GraphId(7)))
    );
}

#[test]
fn released_entries_are_evicted_before_hot_ones() {
    let mut c = cache(3, 1024);
    let mut ev = Vec::new();
    c.set_mode(CacheMode::Capture, |_| ());
    put(&mut c, &[1], 1, &mut ev);
    put(&mut c, &[2], 2, &mut ev);
    c.capture_commit(GraphId(1), |_| ()).unwrap();
    put(&mut c, &[3], 3, &mut ev);
    c.graph_release(GraphId(1), |e| ev.push(e)).unwrap();
    assert!(ev.is_empty(), "3 entries fit");
    assert_eq!(c.lru_keys(), vec![vec![3], vec![2], vec![1]]);
    put(&mut c, &[4], 4, &mut ev);
    assert_eq!(ev, [1]);
}

#[test]
fn pins_are_refcounted_per_graph() {
    let mut c = cache(1, 1024);
    let mut ev = Vec::new();
    for g in [1, 2] {
        c.set_mode(CacheMode::Capture, |_| ());
        if c.get(&[9]).is_none() {
            put(&mut c, &[9], 9, &mut ev);
        }
        c.capture_commit(GraphId(g), |_| ()).unwrap();
    }
    assert_eq!(c.pin_count(&[9]), Some(2));
    assert_eq!(c.graph_release(GraphId(1), |e| ev.push(e)), Ok(0));
    assert_eq!(c.pin_count(&[9]), Some(1));
    put(&mut c, &[1], 1, &mut ev);
    put(&mut c, &[2], 2, &mut ev);
    assert_eq!(ev, [1], "still pinned by graph 2");
    assert_eq!(c.graph_release(GraphId(2), |e| ev.push(e)), Ok(1));
    assert_eq!(ev, [1, 9], "unpinned at the cold end, trimmed first");
}

#[test]
fn commit_of_a_live_graph_or_outside_capture_changes_nothing() {
    let mut c = cache(4, 1024);
    let mut ev = Vec::new();
    assert_eq!(
        c.capture_commit(GraphId(1), |_| ()),
        Err(PinError::NotCapturing)
    );
    assert_eq!(c.capture_discard(|_| ()), Err(PinError::NotCapturing));
    c.set_mode(CacheMode::Capture, |_| ());
    put(&mut c, &[1], 1, &mut ev);
    c.capture_commit(GraphId(1), |_| ()).unwrap();
    c.set_mode(CacheMode::Capture, |_| ());
    put(&mut c, &[2], 2, &mut ev);
    assert_eq!(
        c.capture_commit(GraphId(1), |_| ()),
        Err(PinError::GraphExists(GraphId(1)))
    );
    assert_eq!((c.mode(), c.window_len()), (CacheMode::Capture, 1));
    assert_eq!(c.graph_entries(GraphId(1)), Some(1));
    assert_eq!(c.capture_commit(GraphId(2), |_| ()), Ok(1));
}

#[test]
fn discard_turns_the_window_into_lru_entries_and_trims() {
    let mut c = cache(2, 1024);
    let mut ev = Vec::new();
    put(&mut c, &[1], 1, &mut ev);
    c.set_mode(CacheMode::Capture, |_| ());
    for k in 2..=4 {
        put(&mut c, &[k], k as u32, &mut ev);
    }
    assert_eq!(c.capture_discard(|e| ev.push(e)), Ok(3));
    assert_eq!(c.mode(), CacheMode::Normal);
    assert_eq!(c.graph_count(), 0);
    assert_eq!(c.pin_count(&[4]), Some(0));
    // LRU before trim: 4 3 2 1 -> trimmed to 2 entries.
    assert_eq!(ev, [1, 2]);
    assert_eq!(c.lru_keys(), vec![vec![4], vec![3]]);
}

#[test]
fn set_mode_normal_discards_and_same_mode_is_a_no_op() {
    let mut c = cache(1, 1024);
    let mut ev = Vec::new();
    c.set_mode(CacheMode::Normal, |e| ev.push(e));
    c.set_mode(CacheMode::Capture, |e| ev.push(e));
    put(&mut c, &[1], 1, &mut ev);
    c.set_mode(CacheMode::Capture, |e| ev.push(e));
    put(&mut c, &[2], 2, &mut ev);
    assert_eq!(c.window_len(), 2);
    c.set_mode(CacheMode::Normal, |e| ev.push(e));
    assert_eq!((c.window_len(), c.len()), (0, 1));
    assert_eq!(ev, [1]);
}

#[test]
fn releasing_a_graph_mid_capture_keeps_window_entries_out_of_the_lru() {
    let mut c = cache(4, 1024);
    let mut ev = Vec::new();
    c.set_mode(CacheMode::Capture, |_| ());
    put(&mut c, &[1], 1, &mut ev);
    put(&mut c, &[2], 2, &mut ev);
    c.capture_commit(GraphId(1), |_| ()).unwrap();
    c.set_mode(CacheMode::Capture, |_| ());
    assert_eq!(c.get(&[1]), Some(&1));
    assert_eq!(c.graph_release(GraphId(1), |e| ev.push(e)), Ok(2));
    assert_eq!(c.lru_keys(), vec![vec![2]], "[1] stays in the window");
    c.capture_discard(|e| ev.push(e)).unwrap();
    assert_eq!(c.lru_keys(), vec![vec![1], vec![2]]);
    assert!(ev.is_empty());
}

#[test]
fn clear_unpinned_and_set_policy_evict_to_the_caller() {
    let mut c = cache(4, 1024);
    let mut ev = Vec::new();
    for k in 1..=4 {
        put(&mut c, &[k], k as u32, &mut ev);
    }
    c.set_policy(CachePolicy::new(2, 1024), |e| ev.push(e));
    assert_eq!(ev, [1, 2]);
    assert_eq!(c.policy(), CachePolicy::new(2, 1024));
    assert_eq!(c.clear_unpinned(|e| ev.push(e)), 2);
    assert_eq!(ev, [1, 2, 3, 4]);
    assert!(c.is_empty());
    assert_eq!((c.bytes(), c.lru_bytes()), (0, 0));
    // Slots are reused after eviction.
    put(&mut c, &[5, 5], 5, &mut ev);
    assert_eq!(c.get(&[5, 5]), Some(&5));
}

#[test]
fn defaults_and_errors_display() {
    assert_eq!(CachePolicy::default(), CachePolicy::new(4096, 4 << 20));
    assert!(CachePolicy::new(1, 8).admits(8));
    assert!(!CachePolicy::new(1, 8).admits(9));
    assert!(!CachePolicy::new(0, 8).admits(0));
    let text = alloc::format!("{}", PinError::UnknownGraph(GraphId(3)));
    assert!(text.contains("graph 3"), "{text}");
    let text = alloc::format!("{}", InsertError::AlreadyCached(1u8));
    assert!(text.contains("cached already"), "{text}");
    let c: InfoCache<u8> = InfoCache::with_capacity(CachePolicy::default(), 16);
    assert!(c.is_empty() && c.mode() == CacheMode::Normal);
}

#[test]
fn short_and_long_keys_are_told_apart_by_length_and_words() {
    let mut c: InfoCache<u32> = InfoCache::new(CachePolicy::new(16, 1024));
    let mut ev = Vec::new();
    // Keys held in the node (up to 3 words) pad with zeros: a shorter
    // key is not the longer one with zeros.
    let keys: [&[u64]; 7] = [
        &[1],
        &[1, 0],
        &[1, 0, 0],
        &[1, 0, 0, 0],
        &[0],
        &[7, 7, 7, 7, 7],
        &[7, 7, 7, 7, 8],
    ];
    for (v, k) in keys.iter().enumerate() {
        put(&mut c, k, v as u32, &mut ev);
    }
    for (v, k) in keys.iter().enumerate() {
        assert_eq!(c.get(k), Some(&(v as u32)), "key {k:?}");
    }
    assert_eq!(c.get(&[]), None);
    assert_eq!(c.get(&[1, 0, 0, 0, 0]), None);
    assert_eq!(c.bytes(), 8 * (1 + 2 + 3 + 4 + 1 + 5 + 5));
    // A long key's buffer is reused after eviction; a short key is rebuilt.
    assert_eq!(c.clear_unpinned(|e| ev.push(e)), 7);
    ev.sort_unstable();
    assert_eq!(ev, [0, 1, 2, 3, 4, 5, 6]);
    put(&mut c, &[9, 9, 9, 9, 9], 9, &mut ev);
    put(&mut c, &[9], 10, &mut ev);
    assert_eq!(c.get(&[9, 9, 9, 9, 9]), Some(&9));
    assert_eq!(c.get(&[9]), Some(&10));
    assert_eq!(ev.len(), 7, "nothing more evicted");
}

/// A capacity is a hint: one the allocator cannot grant leaves the cache
/// empty and working, never a panic or an abort.
#[test]
fn an_impossible_capacity_is_a_hint_not_a_panic() {
    for entries in [
        usize::MAX,
        usize::MAX / 2,
        (u32::MAX as usize).saturating_add(1),
    ] {
        let mut c = InfoCache::with_capacity(CachePolicy::new(4, 1024), entries);
        let mut ev = Vec::new();
        put(&mut c, &[1, 2], 7, &mut ev);
        assert_eq!(c.get(&[1, 2]).copied(), Some(7));
        assert_eq!(c.len(), 1);
    }
}
