//! Model-based property test of the simulator: a program whose commands are
//! totally ordered by events computes, under every seed and on any mix of
//! streams, exactly what a naive sequential byte model computes, and the
//! checker finds nothing.

mod common;

use common::*;
use proptest::prelude::*;
use streamcore::platform::{LaunchDims, Platform};
use streamcore_mock::MockConfig;

const PAGES: usize = 2;
const WORDS: u64 = 16;

#[derive(Clone, Debug)]
enum Op {
    Fill {
        page: usize,
        word: u64,
        words: u64,
        value: u32,
    },
    Inc {
        page: usize,
        word: u64,
        words: u64,
    },
    Copy {
        from: usize,
        to: usize,
        src: u64,
        dst: u64,
        words: u64,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let span = (0..WORDS).prop_flat_map(|w| (Just(w), 1..=WORDS - w));
    prop_oneof![
        (0..PAGES, span.clone(), any::<u32>()).prop_map(|(page, (word, words), value)| Op::Fill {
            page,
            word,
            words,
            value
        }),
        (0..PAGES, span.clone()).prop_map(|(page, (word, words))| Op::Inc { page, word, words }),
        (0..PAGES, span, 0..WORDS).prop_map(|(from, (src, words), dst)| {
            let dst = dst.min(WORDS - words);
            Op::Copy {
                from,
                to: 1 - from,
                src,
                dst,
                words,
            }
        }),
    ]
}

fn model(ops: &[Op]) -> Vec<Vec<u32>> {
    let mut m = vec![vec![0u32; WORDS as usize]; PAGES];
    for o in ops {
        match *o {
            Op::Fill {
                page,
                word,
                words,
                value,
            } => m[page][word as usize..(word + words) as usize].fill(value),
            Op::Inc { page, word, words } => {
                for v in &mut m[page][word as usize..(word + words) as usize] {
                    *v = v.wrapping_add(1);
                }
            }
            Op::Copy {
                from,
                to,
                src,
                dst,
                words,
            } => {
                let data = m[from][src as usize..(src + words) as usize].to_vec();
                m[to][dst as usize..(dst + words) as usize].copy_from_slice(&data);
            }
        }
    }
    m
}

fn simulate(seed: u64, streams: usize, placement: &[usize], ops: &[Op]) -> Vec<Vec<u32>> {
    let mut r = rig(MockConfig::default().seed(seed));
    r.mock.register_kernel("inc_wrapping", |_, args| {
        let v: Vec<u32> = args[0]
            .to_u32s()
            .iter()
            .map(|x| x.wrapping_add(1))
            .collect();
        args[0].write_u32s(&v);
    });
    let mut s: Vec<_> = (0..streams).map(|_| r.stream()).collect();
    let pages: Vec<_> = (0..PAGES).map(|_| r.buffer(WORDS)).collect();
    for p in &pages {
        r.mock.poke(*p, &vec![0; (WORDS * 4) as usize]).unwrap();
    }
    let inc = r.kernel("inc_wrapping");
    let range = |page: usize, word: u64, words: u64| dr(pages[page].page, word * 4, words * 4);
    let mut prev = None;
    for (i, o) in ops.iter().enumerate() {
        let st = &mut s[placement[i % placement.len()] % streams];
        if let Some(e) = &prev {
            r.mock.wait(st, e).unwrap();
        }
        match *o {
            Op::Fill {
                page,
                word,
                words,
                value,
            } => r.fill(st, range(page, word, words), value),
            Op::Inc { page, word, words } => r
                .mock
                .launch(
                    st,
                    &inc,
                    LaunchDims::linear(1, 1),
                    &[read_write(range(page, word, words))],
                )
                .unwrap(),
            Op::Copy {
                from,
                to,
                src,
                dst,
                words,
            } => r
                .mock
                .copy_device(st, range(from, src, words), range(to, dst, words))
                .unwrap(),
        }
        prev = Some(r.mock.record(st).unwrap());
    }
    let last = &mut s[0];
    if let Some(e) = &prev {
        r.mock.wait(last, e).unwrap();
    }
    let out: Vec<Vec<u32>> = pages.iter().map(|p| r.download(last, *p)).collect();
    r.mock.assert_no_hazards();
    out
}

proptest! {
    #[test]
    fn ordered_programs_compute_the_sequential_result(
        seed in any::<u64>(),
        streams in 1usize..4,
        placement in proptest::collection::vec(0usize..4, 1..8),
        ops in proptest::collection::vec(op(), 0..24),
    ) {
        prop_assert_eq!(simulate(seed, streams, &placement, &ops), model(&ops));
    }
}
