//! The policies of a layout: how much idle memory a manager keeps, and how
//! it trades bytes held for driver time.

use core::num::NonZeroU64;

use crate::memory::ChurnBudget;

/// The thresholds that decide how much idle memory a manager keeps.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct MemoryPolicy {
    /// Trim before grow: when a reserve must take new storage and the bytes
    /// held (pages, plus pages released but not yet flushed) would pass the
    /// limit (the most ever held, or the peak of live bytes plus the
    /// headroom below, whichever is larger), idle pages are released (oldest
    /// idle first) and the storage flushed before allocating, until the new
    /// page fits under the limit or nothing idle is left. Memory held then
    /// only grows when live data needs it (idle pages of an earlier phase
    /// that the new sizes cannot use go back first; PyTorch's
    /// `garbage_collection_threshold` is a cousin). Never while a capture
    /// window is open.
    pub trim_before_grow: bool,
    /// Headroom of trimming: the bytes held may also grow up to the peak of
    /// live bytes plus `peak >> trim_headroom_shift` before idle pages are
    /// released (idle pages within it stay cached for reuse, saving storage
    /// calls). 64 means no headroom: only the most ever held.
    pub trim_headroom_shift: u32,
    /// Periodic release: an idle page that stayed idle for this many
    /// reserves is released (checked every `period` reserves, so a page goes
    /// after one to two periods). `None` turns it off. Never while a capture
    /// window is open.
    pub release_idle_after: Option<NonZeroU64>,
    /// An idle exclusive (or persistent) page of `p` bytes is reused for a
    /// request of `r` bytes only when `p - r <= r >> fit_slack_shift`; a
    /// looser page stays idle (and is what trimming releases first). 64 means
    /// exact fits only.
    pub fit_slack_shift: u32,
    /// Pages of their own (exclusive, persistent and dedicated pages taken
    /// from `Storage::alloc`) are sized to their request rounded up to a
    /// multiple of `2^(log2(size) - page_rounding_shift)` bytes (at most
    /// `1/2^shift` more), so requests of nearby sizes (a cache growing a
    /// little every step) share page sizes and reuse idle pages instead of
    /// asking the storage each time. 64 means exact sizes (alignment only).
    /// The default, 7 (at most 1/128 more), keeps the padding of large
    /// pages under 1 %: at 5 (1/32) it was the largest part of the bytes
    /// held over the live peak on workloads of steady shapes (BENCHMARKS.md
    /// section 3). Pages carved from reservations (a storage with resizable
    /// pages) always take their exact size (large pages, from
    /// `large_page_granules`, whole granules): a carved page's space goes
    /// back to its reservation when it is freed and serves any size there,
    /// so a class would only pad.
    pub page_rounding_shift: u32,
    /// Serve every request from the persistent pool, whatever the mode the
    /// caller sets (as a pinned-host staging pool does).
    pub force_persistent: bool,
    /// On a resizable storage, a commit reaches ahead over free space to
    /// at least `held >> commit_step_shift` bytes (what the manager holds,
    /// by this fraction), when trimming no further than the trim limit less
    /// its headroom (and, outside a large page's own reservation, less the
    /// room large pages' idle reservations gave back for others to grow
    /// in): the number of commits then grows with the logarithm of the
    /// memory. 64: commit only what a page needs.
    pub commit_step_shift: u32,
    /// On a resizable storage, a granule a page shares with a neighbour is
    /// committed as a chunk of its own (more commits; the page's own
    /// granules go back with it).
    pub split_boundaries: bool,
    /// On a resizable storage, a commit is made of chunks of at most this
    /// many granules (0: no limit; the default 64, 128 MiB in 2 MiB
    /// granules), each given back on its own once no page uses it, so a
    /// page that lives on strands no more than its own pieces. Each piece
    /// costs a commit and a decommit of its own, each charged to the churn
    /// budget. Over the driver model (BENCHMARKS.md section 3) pieces of
    /// one granule with an unlimited budget meet the best peer's bytes on
    /// 80 of 88 workloads (whole chunks: 63) at 21 times the commits and
    /// lose the driver pool's wall time on all but two; pieces of 64
    /// granules, where a commit's fixed cost is still most of its price,
    /// take the geometric-mean ratio of unseen seeds down by 0.4-0.7 % for
    /// 12-19 % more predicted wall, checked on the H200 (section 6).
    pub commit_piece_granules: u32,
    /// On a resizable storage, pages of at least this many granules get a
    /// reservation of their own, sized to them: a large buffer (logits, a
    /// growing cache) neither fragments the space of the others nor keeps
    /// memory once it is freed and the memory is needed elsewhere. Below
    /// it a page shares the common reservations, whose idle chunks a later
    /// page reuses without a call. 384 granules (768 MiB on a 2 MiB
    /// granule) keeps GPT-2's logits (785 MiB) large and lets transients
    /// of 512-768 MiB reuse committed memory: on the H200 it met both
    /// figures on 3-5 more of the 88 workloads than 256 did (BENCHMARKS.md
    /// section 6, round 11).
    pub large_page_granules: u32,
    /// On a resizable storage, when carved pages guard against stranding
    /// free memory inside committed chunks (see [`StrandGuard`]).
    pub strand_guard: StrandGuard,
    /// On a resizable storage, a carved page of whole granules, at least
    /// this many, starts on a granule boundary when its free block has room
    /// for it there and eight granules to spare (a block it fills tightly
    /// keeps its start); 0: never. Carved at the first free byte, such a
    /// page starts inside its neighbour's last granule, spans one granule
    /// more than its size and shares a chunk at each end: freed, its chunks
    /// stay held by the pages beside it. On a granule boundary its chunks
    /// are its own. The bytes left before the boundary (under a granule)
    /// serve smaller pages; from 32 granules (64 MiB on the driver) they
    /// are under 1/32 of the page (from 2 granules they took workloads of
    /// smaller pages up by as much as 0.6 %). Over the driver model 32
    /// meets both figures on as many workloads as no alignment or more in
    /// every set scored, the real workloads held out from the choice
    /// included (BENCHMARKS.md section 6, round 22).
    pub aligned_page_granules: u32,
    /// On a resizable storage, an idle chunk that a new page would use
    /// only in part, leaving at least this many of its granules unused, is
    /// decommitted first (charged to the churn budget, and only if covered)
    /// and the page commits what it needs: woken, the chunk's rest would be
    /// stranded for as long as the page lives. 0: only while the strand
    /// guard is on (which sheds every such chunk). Off by default: over the
    /// driver model 32 closes the GRU's bytes for 4-8 % more predicted
    /// driver time on unseen workloads (BENCHMARKS.md section 6, round 22).
    pub shed_partial_granules: u32,
    /// On a resizable storage, a large page (see `large_page_granules`)
    /// may be carved behind a live large page, on a granule boundary,
    /// where every granule it spans is committed already, instead of only
    /// at the start of an empty reservation of its own. Large pages of
    /// mixed sizes coming and going (a CNN trained at several resolutions)
    /// otherwise found no empty reservation long enough, reserved a new one
    /// and committed the page whole while the granules behind a smaller
    /// page idled and were given back. On by default: over the driver
    /// model it meets both figures on one more workload and loses none;
    /// the CNN commits 15 % fewer chunks, and growing buffers' predicted
    /// walls move by up to 6 % (mostly up) on unseen workloads
    /// (BENCHMARKS.md section 6, round 23).
    pub share_large_reservations: bool,
    /// On a resizable storage, a large page's reservation whose last chunk
    /// is decommitted stays reserved, for later large pages, instead of
    /// going back with it (`cleanup` and the out-of-memory retry still
    /// release it). Address space costs nothing. Over the driver model a
    /// later large page then starts in a reservation it finds rather than
    /// a new one: with `share_large_reservations`, both figures on one more
    /// workload and none fewer, the held-out CNN's commits 1,057 -> 1,007.
    /// What the model does not price, and no GPU has measured yet, is the
    /// driver's cost for setting access on a range never mapped before,
    /// which this avoids too (BENCHMARKS.md section 6, round 23).
    pub keep_bare_reservations: bool,
    /// On a resizable storage, large pages (see `large_page_granules`)
    /// are carved from the address space all pages share, best fit like
    /// the others, instead of reservations of their own; only a growing
    /// buffer's steps still get reservations of their own (a new large page
    /// larger than a live page that is two growth steps deep, a step being
    /// a page allocated and then the smaller one before it freed), where
    /// each step commits only its growth. Large transients of mixed sizes
    /// (a network trained at several resolutions) otherwise commit and
    /// decommit inside their reservations, and memory moves between those
    /// and the shared space at every phase, for a peak that does not move.
    /// On by default, chosen over the driver model and measured on the GPU
    /// after: the held-out CNN's
    /// predicted wall 98.9 -> 34.9 ms (bytes 1.0112 -> 1.0078), GPT-2's
    /// bytes 1.0184 -> 1.0451 (its best peer's 1.049), the GRU's 1.0521 ->
    /// 1.0596; both figures met on 97 of 132 scored workloads (95 without),
    /// unseen workloads' bytes neutral and predicted walls 1.6 % lower. On
    /// an H100 the CNN's wall went from 1.5x the driver pool's (round 23's
    /// default) to 0.51-0.54x (0.68x with the touch), 37.5 ms measured for
    /// 34.9 predicted (BENCHMARKS.md section 6, round 24).
    pub large_page_space: bool,
    /// On a resizable storage, pages smaller than one granule are carved
    /// from reservations of their own (a small lane, as PyTorch keeps small
    /// blocks in segments of their own), so a long-lived small page never
    /// keeps the chunk of a larger neighbour committed after it went. Fewer
    /// bytes where small pages outlive large ones (pinned fragments,
    /// random lifetimes, serving), more driver calls where they come and go
    /// with them: the small lane's chunks are committed and given back on
    /// their own. Off by default, on with [`Favour::Bytes`]. Over the
    /// driver model, both figures met on 70 of 132 scored workloads (97
    /// without), bytes on 113 (107); on an H100 the held-out LSTM's bytes
    /// 1.1809 -> 1.0722 for a wall 0.65 -> 0.62 of the driver pool's, the
    /// KV-cache decoder's wall 0.21 -> 0.47 (BENCHMARKS.md section 6,
    /// round 25). The worst case found without it: long-lived pages below a
    /// granule among large transients (a fresh seed's pinned fragments) hold
    /// 1.45x the peak live, 1.01x with the lane (round 30).
    pub small_page_lane: bool,
    /// On a resizable storage, trimming settles once it proves to buy
    /// nothing: when a chunk trimmed by choice is committed again within
    /// this many reserves, for the second time, the bytes held with that
    /// commit become the level trimming keeps (at most 1/32 of the live
    /// peak above the trim limit the pages and the live data set; see
    /// `round_trips.rs`).
    /// A workload cycling through a shifting layout otherwise trims and
    /// commits the same chunks every step (the held-out diffusion
    /// sampler: 130 decommits and 186 commits for a peak 1.0302 of the
    /// live one, 90 commits and 1.0400 with it, the best peer's
    /// 1.0420; on an H100 its wall 1.44 -> 0.59 of the driver pool's).
    /// 0 turns it off (with [`Favour::Bytes`]). Over the driver model,
    /// both figures on 99 of 132 scored workloads (97 without), bytes on
    /// 107 either way (BENCHMARKS.md section 6, round 26).
    pub round_trip_window: u32,
    /// On a resizable storage, what decommits made by choice (trimming,
    /// the strand guard) may cost in estimated driver time, earned by the
    /// reserves (see [`ChurnBudget`]); past it, idle memory is kept.
    pub churn_budget: ChurnBudget,
    /// On a resizable storage, how much idle memory the churn budget may
    /// keep: once more than `peak live >> idle_cap_shift` bytes sit idle in
    /// committed chunks and a commit would hold more than 1/16 above the
    /// live peak, trimming gives idle chunks back even where the budget
    /// does not cover them (still charged to it; see `budget.rs`). A
    /// workload whose budget runs out early otherwise keeps what it held
    /// then and grows on top of it (the held-out LSTM: 3,302 MiB held with
    /// 1,270 MiB live, 1.1809 of the live peak where the best peer needs
    /// 1.1101; 1.0593 with the cap, predicted wall 6.12 -> 6.40 ms, the
    /// driver pool's 9.4). 64: no cap (with [`Favour::Time`]). Over the
    /// driver model, both figures on 101 of 132 scored workloads (99
    /// without), bytes on 109 (107) (BENCHMARKS.md section 6, round 27).
    pub idle_cap_shift: u32,
    /// The most pages the manager may hold at once.
    pub max_pages: u32,
}

/// When a manager over a resizable storage guards against *stranded*
/// memory: free space inside a committed chunk that some page still uses,
/// which cannot be given back (a chunk is one commit, given back whole).
///
/// Guarding means: a page's boundary granules are committed as chunks of
/// their own, a commit covers only what the page needs (no reaching ahead),
/// and an idle chunk a new page would use only in part is decommitted first
/// (so its rest is not stranded while the page lives). Each costs driver
/// calls; workloads with structure (training steps, phases, a growing cache)
/// strand little without it, workloads of random sizes and lifetimes strand
/// a tenth of their memory and more.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum StrandGuard {
    /// Never: fewest commits.
    Off,
    /// From the first commit that passes the trim limit while the live
    /// bytes are below their peak and more than 1/32 of the memory held
    /// (and more than eight granules) is stranded (stranding made the
    /// manager grow), until less than 1/64 is; only while the policy's
    /// [`ChurnBudget`] covers its calls.
    #[default]
    Adaptive,
    /// Always: fewest bytes.
    On,
}

impl Default for MemoryPolicy {
    fn default() -> Self {
        Self {
            trim_before_grow: true,
            trim_headroom_shift: 7,
            release_idle_after: None,
            fit_slack_shift: 5,
            page_rounding_shift: 7,
            force_persistent: false,
            max_pages: 1 << 20,
            commit_step_shift: 6,
            split_boundaries: false,
            commit_piece_granules: 64,
            large_page_granules: 384,
            strand_guard: StrandGuard::Adaptive,
            aligned_page_granules: 32,
            shed_partial_granules: 0,
            share_large_reservations: true,
            keep_bare_reservations: true,
            large_page_space: true,
            small_page_lane: false,
            round_trip_window: 64,
            // Chosen with the driver model (`memory_model` example, its
            // costs fitted to whole replays on the H200) over a grid of both
            // parts (BENCHMARKS.md section 3): the recorded traces keep
            // their figures, and of the settings tried whose estimated wall
            // times stay under the driver pool's wherever they were, none
            // has more workloads at or below the best peer's bytes; checked
            // on the held-out set (`replay::synthetic::held_out`).
            churn_budget: ChurnBudget {
                per_reserve_ns: 500,
                per_mib_ns: 150,
            },
            idle_cap_shift: 2,
        }
    }
}

/// What a policy favours when bytes held and driver time pull apart.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Favour {
    /// Fewest bytes held: commit only what slices need, give idle memory
    /// back before growing (never settling on round trips), always guard
    /// against stranded memory, small pages in a lane of their own
    /// (`MemoryPolicy::small_page_lane`), whatever the calls cost
    /// ([`ChurnBudget::UNLIMITED`]).
    Bytes,
    /// Both: the default.
    #[default]
    Balanced,
    /// Fewest driver calls: commit ahead in large steps, in whole chunks,
    /// keep idle memory (no cap on what the churn budget keeps idle), never
    /// guard against stranded memory.
    Time,
}

impl MemoryPolicy {
    /// The default policy tilted towards `favour`.
    pub fn favouring(favour: Favour) -> Self {
        let base = Self::default();
        match favour {
            Favour::Balanced => base,
            Favour::Bytes => Self {
                trim_headroom_shift: 64,
                commit_step_shift: 64,
                split_boundaries: true,
                strand_guard: StrandGuard::On,
                small_page_lane: true,
                round_trip_window: 0,
                churn_budget: ChurnBudget::UNLIMITED,
                ..base
            },
            Favour::Time => Self {
                trim_headroom_shift: 5,
                commit_step_shift: 4,
                commit_piece_granules: 0,
                strand_guard: StrandGuard::Off,
                idle_cap_shift: 64,
                ..base
            },
        }
    }
}
