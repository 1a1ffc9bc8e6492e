//! One pool of a manager: its kind, sizes, cap, the engine that carves its
//! pages, and its figures.

use alloc::boxed::Box;

use super::layout::PoolKind;
use super::report::PoolReport;
use super::size_index::SizeIndex;
use super::tlsf::SlicedEngine;

/// How a pool finds room in what it holds.
#[derive(Debug)]
pub(super) enum Engine {
    /// Small and sliced pools: fixed-size pages split into blocks (TLSF).
    Sliced(Box<SlicedEngine>),
    /// Exclusive, persistent and dedicated: idle pages by (size, page).
    Pages(Box<SizeIndex>),
}

/// One pool.
#[derive(Debug)]
pub(super) struct Pool {
    pub kind: PoolKind,
    /// The largest request it serves.
    pub max_slice: u64,
    /// Sliced pools: the size of every page; exclusive: the largest page.
    pub page_size: u64,
    /// The most bytes it may hold.
    pub cap: Option<u64>,
    pub engine: Engine,
    pub stats: PoolReport,
    /// Exclusive pools over a resizable storage: the page freed last, whose
    /// space is back in its reservation but whose page entry and chunk uses
    /// are kept until the pool's next reserve (`NIL`: none). When that
    /// reserve would carve the very same bytes again, the page is taken
    /// back as it is; otherwise (and before the manager grows or gives
    /// memory back) it is released. See `MemoryManager::settle_recent`.
    pub recent: u32,
}

impl Pool {
    /// A pool of `kind`; `page_size` is already rounded to `align`.
    pub(super) fn new(
        kind: PoolKind,
        page_size: u64,
        max_slice: u64,
        cap: Option<u64>,
        align: u64,
    ) -> Self {
        let engine = match kind {
            PoolKind::Small | PoolKind::Sliced => {
                Engine::Sliced(Box::new(SlicedEngine::new(align)))
            }
            _ => Engine::Pages(Box::new(SizeIndex::new(align))),
        };
        Self {
            kind,
            max_slice,
            page_size,
            cap,
            engine,
            stats: PoolReport::empty(kind),
            recent: crate::arena::NIL,
        }
    }

    /// Idle pages of this pool are trimmed and periodically released.
    pub(super) fn trimmable(&self) -> bool {
        self.kind != PoolKind::Persistent
    }

    /// Whether holding `bytes` more would pass the cap; the cap if so.
    pub(super) fn over_cap(&self, bytes: u64) -> Option<u64> {
        self.cap
            .filter(|&cap| self.stats.reserved.saturating_add(bytes) > cap)
    }
}
