//! Usage reports: per pool and total, with a readable table.

use alloc::vec::Vec;
use core::fmt;

use super::layout::PoolKind;

/// The figures of one pool.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct PoolReport {
    /// What the pool is.
    pub kind: PoolKind,
    /// Pages held from storage.
    pub pages: u64,
    /// Bytes of those pages.
    pub reserved: u64,
    /// Bytes requested by the live slices.
    pub in_use: u64,
    /// Bytes held for live slices beyond what they requested (alignment
    /// rounding, loose page fits).
    pub padding: u64,
    /// Live slices (including slices a capture window holds).
    pub slices: u64,
    /// Pages with no live slice (releasable).
    pub idle_pages: u64,
    /// Bytes of the idle pages.
    pub idle_bytes: u64,
}

impl PoolReport {
    /// An empty report for a pool of `kind`.
    pub const fn empty(kind: PoolKind) -> Self {
        Self {
            kind,
            pages: 0,
            reserved: 0,
            in_use: 0,
            padding: 0,
            slices: 0,
            idle_pages: 0,
            idle_bytes: 0,
        }
    }

    /// Bytes of pages that hold live slices but no slice covers (the
    /// free space inside partly used pages).
    pub const fn free_in_used_pages(&self) -> u64 {
        self.reserved
            .saturating_sub(self.idle_bytes)
            .saturating_sub(self.in_use)
            .saturating_sub(self.padding)
    }
}

/// The figures of one manager.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MemoryReport {
    /// One entry per pool, listed pools first, then persistent, then dedicated.
    pub pools: Vec<PoolReport>,
    /// Bytes of pages released to storage but not yet flushed (the storage
    /// still holds them).
    pub pending_release: u64,
    /// What trimming did.
    pub trimming: Trimming,
}

/// What trimming did: the level it settled at and why, and what it gave
/// back past the churn budget. Adds up over managers (`+`, `sum`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Trimming {
    /// The bytes trimming keeps no lower than, once it proved to buy
    /// nothing (the churn budget ran out, or trimmed chunks kept coming
    /// back); 0 while trimming is unsettled.
    pub settled: u64,
    /// How many commits that took back a chunk trimmed twice before
    /// raised [`Trimming::settled`] (`MemoryPolicy::round_trip_window`).
    pub round_trip_settles: u64,
    /// Decommits the churn budget did not cover, made because idle memory
    /// passed its cap (`MemoryPolicy::idle_cap_shift`).
    pub capped_decommits: u64,
}

impl Trimming {
    /// `settled at 3.00 MiB (raised by 2 round trips)` (or `(the churn
    /// budget ran out)`); `None` while trimming is unsettled.
    pub fn settled_at(&self) -> Option<impl fmt::Display> {
        (self.settled > 0).then_some(SettledAt(*self))
    }
}

/// [`Trimming::settled_at`]'s text.
struct SettledAt(Trimming);

impl fmt::Display for SettledAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "settled at {} ", HumanBytes(self.0.settled))?;
        match self.0.round_trip_settles {
            0 => write!(f, "(the churn budget ran out)"),
            1 => write!(f, "(raised by 1 round trip)"),
            n => write!(f, "(raised by {n} round trips)"),
        }
    }
}

impl core::ops::Add for Trimming {
    type Output = Self;

    /// Both managers' figures (saturating).
    fn add(self, o: Self) -> Self {
        Self {
            settled: self.settled.saturating_add(o.settled),
            round_trip_settles: self.round_trip_settles.saturating_add(o.round_trip_settles),
            capped_decommits: self.capped_decommits.saturating_add(o.capped_decommits),
        }
    }
}

impl core::iter::Sum for Trimming {
    fn sum<I: Iterator<Item = Self>>(iter: I) -> Self {
        iter.fold(Self::default(), |a, b| a + b)
    }
}

impl MemoryReport {
    /// The sum over all pools (its `kind` is meaningless: `Sliced`).
    pub fn total(&self) -> PoolReport {
        let mut t = PoolReport::empty(PoolKind::Sliced);
        for p in &self.pools {
            t.pages += p.pages;
            t.reserved += p.reserved;
            t.in_use += p.in_use;
            t.padding += p.padding;
            t.slices += p.slices;
            t.idle_pages += p.idle_pages;
            t.idle_bytes += p.idle_bytes;
        }
        t
    }
}

/// A byte count printed with a binary unit (`1.50 MiB`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct HumanBytes(pub u64);

impl fmt::Display for HumanBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
        let mut unit = 0;
        let mut scaled = self.0;
        while scaled >= 1024 * 1024 && unit < UNITS.len() - 2 {
            scaled >>= 10;
            unit += 1;
        }
        let text = if self.0 < 1024 {
            alloc::format!("{} B", self.0)
        } else {
            let div = 1u64 << (10 * (unit + 1));
            let whole = self.0 / div;
            let hundredths = (self.0 % div) * 100 / div;
            alloc::format!("{whole}.{hundredths:02} {}", UNITS[unit + 1])
        };
        f.pad(&text)
    }
}

fn row(f: &mut fmt::Formatter<'_>, name: &str, p: &PoolReport) -> fmt::Result {
    writeln!(
        f,
        "{name:<10} {:>7} {:>12} {:>12} {:>12} {:>8} {:>12}",
        p.pages,
        HumanBytes(p.reserved),
        HumanBytes(p.in_use),
        HumanBytes(p.padding),
        p.slices,
        HumanBytes(p.idle_bytes),
    )
}

impl fmt::Display for MemoryReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{:<10} {:>7} {:>12} {:>12} {:>12} {:>8} {:>12}",
            "pool", "pages", "reserved", "in use", "padding", "slices", "idle"
        )?;
        for p in &self.pools {
            row(f, p.kind.name(), p)?;
        }
        row(f, "total", &self.total())?;
        if self.pending_release > 0 {
            writeln!(
                f,
                "released, not yet flushed: {}",
                HumanBytes(self.pending_release)
            )?;
        }
        if let Some(settled) = self.trimming.settled_at() {
            writeln!(f, "trimming {settled}")?;
        }
        if self.trimming.capped_decommits > 0 {
            writeln!(
                f,
                "idle chunks given back past the churn budget: {}",
                self.trimming.capped_decommits
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;

    #[test]
    fn human_sizes() {
        assert_eq!(format!("{}", HumanBytes(0)), "0 B");
        assert_eq!(format!("{}", HumanBytes(1023)), "1023 B");
        assert_eq!(format!("{}", HumanBytes(1536)), "1.50 KiB");
        assert_eq!(format!("{}", HumanBytes(3 << 20)), "3.00 MiB");
        assert_eq!(format!("{}", HumanBytes(7_722_708_480)), "7.19 GiB");
        assert_eq!(format!("{:>9}", HumanBytes(1 << 10)), " 1.00 KiB");
    }

    #[test]
    fn table_adds_up_and_aligns() {
        let mut a = PoolReport::empty(PoolKind::Small);
        a.pages = 1;
        a.reserved = 1 << 20;
        a.in_use = 100;
        a.padding = 156;
        a.slices = 1;
        let mut b = PoolReport::empty(PoolKind::Exclusive);
        b.pages = 2;
        b.reserved = 3 << 20;
        b.in_use = 2 << 20;
        b.idle_pages = 1;
        b.idle_bytes = 1 << 20;
        b.slices = 1;
        let r = MemoryReport {
            pools: alloc::vec![a, b],
            pending_release: 0,
            trimming: Trimming::default(),
        };
        let t = r.total();
        assert_eq!((t.pages, t.reserved, t.slices), (3, 4 << 20, 2));
        assert_eq!(b.free_in_used_pages(), 0);
        assert_eq!(a.free_in_used_pages(), (1 << 20) - 256);
        let text = format!("{r}");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert!(lines[3].starts_with("total"), "{text}");
        assert!(lines[3].contains("4.00 MiB"), "{text}");
        let width = lines[0].len();
        assert!(lines.iter().all(|l| l.len() == width), "{text}");
        // What trimming did gets a line of its own, only when it happened.
        let with = |trimming| MemoryReport {
            trimming,
            ..r.clone()
        };
        let t = Trimming {
            settled: 3 << 20,
            round_trip_settles: 2,
            capped_decommits: 0,
        };
        let settled = with(t);
        let capped = with(Trimming {
            capped_decommits: 4,
            ..t
        });
        let budget = with(Trimming {
            round_trip_settles: 0,
            ..t
        });
        for (report, lines, last) in [
            (
                &budget,
                5,
                "trimming settled at 3.00 MiB (the churn budget ran out)",
            ),
            (
                &settled,
                5,
                "trimming settled at 3.00 MiB (raised by 2 round trips)",
            ),
            (
                &capped,
                6,
                "idle chunks given back past the churn budget: 4",
            ),
        ] {
            let text = format!("{report}");
            assert_eq!(text.lines().count(), lines, "{text}");
            assert_eq!(text.lines().last(), Some(last), "{text}");
        }
    }
}
