//! The page table: every page (or reservation) a manager holds from its
//! storage, in an [`Arena`] indexed by `u32`, and the
//! idle LRU: trimmable pages with no live slice, oldest idle first, linked
//! through the pages themselves (O(1) push, unlink and pop).

use crate::arena::{Arena, NIL};
use crate::platform::PageId;

/// One page held from the storage.
#[derive(Clone, Copy, Debug)]
pub(super) struct Page {
    /// The storage's id (a reservation's, for a page carved from one).
    pub id: PageId,
    /// Where the page starts in that storage page (0 unless carved).
    pub offset: u64,
    /// Carved pages: the reservation and the segment's block (`NIL` for
    /// pages from `alloc`).
    pub reservation: u32,
    pub block: u32,
    /// Bytes the page holds from the storage.
    pub size: u64,
    /// The pool it belongs to.
    pub pool: u8,
    /// In the idle LRU.
    pub in_lru: bool,
    /// Live slices on the page (any hold counts).
    pub live: u32,
    /// Sliced pools: the block at offset 0 (the whole page when idle).
    pub first_block: u32,
    /// LRU links.
    pub prev: u32,
    pub next: u32,
    /// The reserve count when the page last became idle.
    pub idle_since: u64,
}

impl Page {
    /// Where a carved page lives.
    pub(super) const fn carving(&self) -> super::segment::Carving {
        super::segment::Carving {
            id: self.id,
            offset: self.offset,
            reservation: self.reservation,
            block: self.block,
        }
    }

    /// A fresh page of `pool`, not idle-listed.
    pub(super) const fn new(id: PageId, size: u64, pool: u8, now: u64) -> Self {
        Self {
            id,
            offset: 0,
            reservation: NIL,
            block: NIL,
            size,
            pool,
            in_lru: false,
            live: 0,
            first_block: NIL,
            prev: NIL,
            next: NIL,
            idle_since: now,
        }
    }
}

/// The pages and the idle LRU.
#[derive(Debug, Default)]
pub(super) struct PageTable {
    pages: Arena<Page>,
    lru_head: u32,
    lru_tail: u32,
}

impl PageTable {
    pub(super) const fn new() -> Self {
        Self {
            pages: Arena::new(),
            lru_head: NIL,
            lru_tail: NIL,
        }
    }

    /// Pages held.
    pub(super) fn count(&self) -> u32 {
        self.pages.len() as u32
    }

    /// Stores a page; `None` when the table is full.
    pub(super) fn insert(&mut self, page: Page) -> Option<u32> {
        self.pages.insert(page).ok().map(|k| k.index)
    }

    /// Takes a page out of the table (and the LRU).
    pub(super) fn remove(&mut self, i: u32) -> Page {
        self.lru_unlink(i);
        match self.pages.remove_at(i) {
            Some(p) => p,
            None => panic!("page {i} is not in the table"),
        }
    }

    /// Every page held, idle or not.
    pub(super) fn iter(&self) -> impl Iterator<Item = &Page> + '_ {
        self.pages.iter().map(|(_, p)| p)
    }

    /// Forgets every page (the caller released them).
    pub(super) fn clear(&mut self) {
        self.pages.clear();
        self.lru_head = NIL;
        self.lru_tail = NIL;
    }

    /// The oldest idle page.
    pub(super) fn lru_head(&self) -> Option<u32> {
        (self.lru_head != NIL).then_some(self.lru_head)
    }

    /// The idle page after `i` (younger).
    pub(super) fn lru_next(&self, i: u32) -> Option<u32> {
        let n = self.pages[i].next;
        (n != NIL).then_some(n)
    }

    /// Appends an idle page (youngest).
    pub(super) fn lru_push(&mut self, i: u32) {
        let tail = self.lru_tail;
        let p = &mut self.pages[i];
        p.in_lru = true;
        p.prev = tail;
        p.next = NIL;
        if tail != NIL {
            self.pages[tail].next = i;
        } else {
            self.lru_head = i;
        }
        self.lru_tail = i;
    }

    /// Takes a page out of the LRU (no-op when not listed).
    pub(super) fn lru_unlink(&mut self, i: u32) {
        let p = self.pages[i];
        if !p.in_lru {
            return;
        }
        if p.prev != NIL {
            self.pages[p.prev].next = p.next;
        } else {
            self.lru_head = p.next;
        }
        if p.next != NIL {
            self.pages[p.next].prev = p.prev;
        } else {
            self.lru_tail = p.prev;
        }
        let p = &mut self.pages[i];
        p.in_lru = false;
        p.prev = NIL;
        p.next = NIL;
    }
}

impl core::ops::Index<u32> for PageTable {
    type Output = Page;
    #[inline]
    fn index(&self, i: u32) -> &Page {
        &self.pages[i]
    }
}

impl core::ops::IndexMut<u32> for PageTable {
    #[inline]
    fn index_mut(&mut self, i: u32) -> &mut Page {
        &mut self.pages[i]
    }
}
