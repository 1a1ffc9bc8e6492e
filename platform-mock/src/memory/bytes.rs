//! The bytes of a simulated page, kept sparse: only the chunks ever written
//! hold memory (unwritten bytes read as zero), so a page of any size the
//! storage accepted can be written without allocating all of it, and what a
//! page holds is bounded by the bytes written into it.

use std::boxed::Box;
use std::collections::BTreeMap;
use std::vec;
use std::vec::Vec;

/// Bytes of one stored chunk (the last chunk of a page may be shorter).
pub(crate) const CHUNK: u64 = 4096;

/// A page's bytes: chunk start → the chunk's bytes.
#[derive(Debug, Default)]
pub(crate) struct SparseBytes {
    chunks: BTreeMap<u64, Box<[u8]>>,
}

impl SparseBytes {
    /// The chunk starts that `offset..end` touches, with the part of each
    /// it covers (chunk-relative).
    fn pieces(offset: u64, end: u64) -> impl Iterator<Item = (u64, u64, u64)> {
        let first = offset - offset % CHUNK;
        (first..end).step_by(CHUNK as usize).map(move |start| {
            let lo = offset.max(start) - start;
            let hi = end.min(start + CHUNK) - start;
            (start, lo, hi)
        })
    }

    /// Copies `len` bytes from `offset` (zeros where never written).
    pub(crate) fn read(&self, offset: u64, len: u64) -> Vec<u8> {
        let mut out = vec![0; len as usize];
        let end = offset.saturating_add(len);
        for (&start, chunk) in self.chunks.range(offset - offset % CHUNK..end) {
            let lo = offset.max(start);
            let hi = end.min(start + chunk.len() as u64);
            if lo < hi {
                out[(lo - offset) as usize..(hi - offset) as usize]
                    .copy_from_slice(&chunk[(lo - start) as usize..(hi - start) as usize]);
            }
        }
        out
    }

    /// Copies `data` in at `offset` of a page of `size` bytes; bytes past
    /// `size` are dropped.
    pub(crate) fn write(&mut self, size: u64, offset: u64, data: &[u8]) {
        let end = offset.saturating_add(data.len() as u64).min(size);
        if offset >= end {
            return;
        }
        for (start, lo, hi) in Self::pieces(offset, end) {
            let chunk = self
                .chunks
                .entry(start)
                .or_insert_with(|| vec![0; CHUNK.min(size - start) as usize].into_boxed_slice());
            let from = (start + lo - offset) as usize;
            chunk[lo as usize..hi as usize].copy_from_slice(&data[from..from + (hi - lo) as usize]);
        }
    }

    /// Zeroes `offset..offset + len`, dropping the chunks it covers whole.
    pub(crate) fn forget(&mut self, offset: u64, len: u64) {
        let end = offset.saturating_add(len);
        let starts: Vec<u64> = self
            .chunks
            .range(offset - offset % CHUNK..end)
            .map(|(&s, _)| s)
            .collect();
        for start in starts {
            let Some(chunk) = self.chunks.get_mut(&start) else {
                continue;
            };
            let lo = offset.max(start) - start;
            let hi = end.min(start + chunk.len() as u64) - start;
            if lo == 0 && hi == chunk.len() as u64 {
                self.chunks.remove(&start);
            } else if lo < hi {
                chunk[lo as usize..hi as usize].fill(0);
            }
        }
    }

    /// Bytes held (the chunks written).
    #[cfg(test)]
    pub(crate) fn held(&self) -> u64 {
        self.chunks.values().map(|c| c.len() as u64).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A dense reference: the bytes as a plain vector.
    fn check(sparse: &SparseBytes, dense: &[u8]) {
        assert_eq!(sparse.read(0, dense.len() as u64), dense);
    }

    #[test]
    fn reads_and_writes_match_a_dense_page_across_chunk_edges() {
        let size = 3 * CHUNK + 100;
        let mut s = SparseBytes::default();
        let mut d = vec![0u8; size as usize];
        let writes: [(u64, u64, u8); 6] = [
            (0, 1, 1),
            (CHUNK - 3, 7, 2),
            (2 * CHUNK - 1, CHUNK + 2, 3),
            (3 * CHUNK + 90, 10, 4),
            (5, 2 * CHUNK, 5),
            (size - 1, 1, 6),
        ];
        for (o, l, v) in writes {
            s.write(size, o, &vec![v; l as usize]);
            d[o as usize..(o + l) as usize].fill(v);
            check(&s, &d);
        }
        assert_eq!(
            s.read(CHUNK - 4, 9),
            d[(CHUNK - 4) as usize..(CHUNK + 5) as usize]
        );
        s.forget(CHUNK - 2, CHUNK + 4);
        d[(CHUNK - 2) as usize..(2 * CHUNK + 2) as usize].fill(0);
        check(&s, &d);
        assert_eq!(
            s.held(),
            2 * CHUNK + 100,
            "the chunk covered whole is dropped"
        );
        s.forget(0, size);
        assert_eq!(s.held(), 0);
        check(&s, &vec![0; size as usize]);
    }

    #[test]
    fn a_write_into_a_huge_page_holds_only_the_chunks_it_touches() {
        let size = 1 << 56;
        let mut s = SparseBytes::default();
        s.write(size, size - 3, &[7, 8, 9]);
        s.write(size, 1 << 40, &[1; 10]);
        assert_eq!(s.read(size - 4, 4), vec![0, 7, 8, 9]);
        assert_eq!(s.read((1 << 40) - 1, 3), vec![0, 1, 1]);
        assert_eq!(s.held(), 2 * CHUNK);
    }
}
