//! The engine's tests: splits and merges, and a model check against a
//! naive list of blocks (a page's free blocks walked in address order
//! included).

use super::*;
use alloc::vec;
use proptest::prelude::*;
use std::collections::BTreeMap;

#[test]
fn mapping_classes_grow_and_round_up_fits() {
    let mut last = (0, 0);
    for u in 1..5000u64 {
        let m = mapping(u);
        assert!(m >= last, "classes ordered");
        last = m;
        let up = mapping_up(u);
        assert!(up >= m);
        // Every size in the class `up` (or above) is at least u.
        for v in u.saturating_sub(64)..u {
            assert!(mapping(v) < up || v >= u, "{v} < {u} in class {up:?}");
        }
    }
}

#[test]
fn split_and_coalesce_restore_the_page() {
    let mut e = SlicedEngine::new(256);
    let first = e.add_page(0, 1 << 20);
    let a = e.take(1024).unwrap();
    let b = e.take(4096).unwrap();
    let c = e.take(256).unwrap();
    assert_eq!((a.offset, b.offset, c.offset), (0, 1024, 5120));
    assert_eq!(a.block, first);
    e.give(b.block);
    // The hole is reused by a fitting request.
    let d = e.take(2048).unwrap();
    assert_eq!(d.offset, 1024);
    e.give(a.block);
    e.give(c.block);
    e.give(d.block);
    assert_eq!(e.free_blocks(), vec![(0, 0, 1 << 20)]);
    assert_eq!(e.block_size(first), 1 << 20);
    e.remove_page(first);
    assert!(e.free_blocks().is_empty());
    assert!(e.take(256).is_none());
}

proptest! {
    /// Against a naive model (byte ranges in a map): carved blocks never
    /// overlap, lie inside their page, and frees coalesce fully; carving
    /// at an offset inside a free block (op 3) takes exactly the bytes
    /// asked for, in both kinds of engine.
    #[test]
    fn model_check(
        ops in proptest::collection::vec((0u8..4, 1u64..40, any::<u16>()), 1..200),
        best in any::<bool>(),
    ) {
        let page = 64 * 256;
        let mut e = SlicedEngine::new(256);
        if best {
            e = e.best_fit();
        }
        let mut pages = 0u32;
        let mut firsts = Vec::new();
        let mut live: BTreeMap<(u32, u64), (u64, u32)> = BTreeMap::new();
        for (op, units, pick) in ops {
            match op {
                0 | 1 => {
                    let size = (units % 64 + 1) * 256;
                    match e.take(size) {
                        Some(c) => {
                            prop_assert!(c.offset + size <= page);
                            let key = (c.page, c.offset);
                            if let Some((&(p, o), &(s, _))) = live.range(..key).next_back() {
                                prop_assert!(p != c.page || o + s <= c.offset, "overlap");
                            }
                            if let Some((&(p, o), _)) = live.range(key..).next() {
                                prop_assert!(p != c.page || c.offset + size <= o, "overlap");
                            }
                            live.insert(key, (size, c.block));
                        }
                        None => {
                            // Only fails when no free block is big enough.
                            prop_assert!(e.free_blocks().iter().all(|b| b.2 < size));
                            firsts.push(e.add_page(pages, page));
                            pages += 1;
                        }
                    }
                }
                3 => {
                    let size = (units % 16 + 1) * 256;
                    if let Some(f) = e.peek(size) {
                        let room = (e.block_size(f.block) - size) / 256;
                        let offset = f.offset + u64::from(pick) % (room + 1) * 256;
                        let c = e.carve_at(f.block, offset, size);
                        prop_assert_eq!((c.page, c.offset), (f.page, offset));
                        prop_assert!(!e.free_blocks().iter().any(|b| {
                            b.0 == c.page && b.1 < offset + size && offset < b.1 + b.2
                        }), "the carved bytes are not free");
                        live.insert((c.page, c.offset), (size, c.block));
                    }
                }
                _ => {
                    if !live.is_empty() {
                        let k = *live.keys().nth(pick as usize % live.len()).unwrap();
                        let (_, block) = live.remove(&k).unwrap();
                        e.give(block);
                    }
                }
            }
            let free: u64 = e.free_blocks().iter().map(|b| b.2).sum();
            let used: u64 = live.values().map(|v| v.0).sum();
            prop_assert_eq!(free + used, u64::from(pages) * page);
            // A page's free blocks, walked from its first block: those of
            // the model, in address order, the first `room` of them.
            let room = usize::from(pick % 4) + 1;
            for (p, &first) in firsts.iter().enumerate() {
                let mut out = vec![(0u32, 0u64, 0u64); room];
                let n = e.free_in_page(first, &mut out);
                let got: Vec<_> = out[..n].iter().map(|&(b, o, s)| {
                    prop_assert_eq!(e.block_size(b), s);
                    Ok((p as u32, o, s))
                }).collect::<Result<_, TestCaseError>>()?;
                let want: Vec<_> = e
                    .free_blocks()
                    .into_iter()
                    .filter(|b| b.0 == p as u32)
                    .take(room)
                    .collect();
                prop_assert_eq!(got, want);
            }
        }
        for (_, (_, block)) in core::mem::take(&mut live) {
            e.give(block);
        }
        let expect: Vec<_> = (0..pages).map(|p| (p, 0, page)).collect();
        prop_assert_eq!(e.free_blocks(), expect);
        for f in firsts {
            e.remove_page(f);
        }
        prop_assert!(e.free_blocks().is_empty());
    }
}
