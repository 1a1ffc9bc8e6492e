//! The metadata info cache: per-launch info buffers (shapes, strides,
//! scalars, as `u64` words) keyed by their exact words, bounded (LRU by second chance), and
//! pinned by every captured graph that recorded them.
//!
//! A launch needs its info words in device memory. Uploading them for every
//! launch costs a copy; the cache keeps the device buffer (the value `V`, a
//! memory slice handle for the device) of recently used word sequences so a
//! repeated launch finds its buffer with one hash lookup.
//!
//! # Cost
//!
//! [`InfoCache::get`] and [`InfoCache::insert`] are O(1), and evictions
//! O(1) amortized: the entries live in a slab of nodes linked into an
//! intrusive doubly-linked list by index, and a hash table maps the words
//! to the node. A hit allocates nothing and writes only its own node.
//!
//! # Eviction order: LRU by second chance
//!
//! The list approximates least-recently-used order the way CLOCK does. A
//! hit does not move its entry; it sets the entry's reference bit. Eviction
//! takes the list's tail; a tail whose bit is set instead loses the bit and
//! moves to the head (its second chance), and the next tail is looked at.
//! Entries enter the list (inserted, or back from a capture window or a
//! graph) with the bit clear. So an entry hit since it entered or since its
//! last chance outlives every entry that was not, and among those not hit
//! the oldest goes first. A single eviction may walk the list when every
//! entry was hit, but each second chance spends the bit of one hit: over
//! any sequence, evictions cost O(1) per hit and insert. The bounds are
//! exact as before (the policy's entries and bytes; a second chance only
//! moves). A hit then touches only its own node, instead of splicing it
//! between its neighbours and the head.
//!
//! # Modes and pins
//!
//! - [`CacheMode::Normal`]: the LRU list is kept under the [`CachePolicy`]
//!   (entries and bytes); entries are evicted in second-chance order and
//!   their values handed to the caller's `on_evict` callback, so the device
//!   can free their slices.
//! - [`CacheMode::Capture`] (from prepare to the end of a capture): every
//!   entry used (hit or inserted) is recorded in the *window* and nothing is
//!   evicted. The window ends with [`InfoCache::capture_commit`], which pins
//!   its entries for the new graph, or [`InfoCache::capture_discard`], which
//!   turns them back into ordinary LRU entries and trims the list back under
//!   the policy.
//! - [`InfoCache::graph_release`] drops one graph's pins; an entry no live
//!   graph pins goes back to the cold end of the LRU list and the list is
//!   trimmed.
//!
//! Entries that are pinned or recorded in the open window are unlinked from
//! the LRU list, so eviction never has to skip them: it always takes the
//! list's tail. The policy bounds the entries *in the LRU list*; pinned and
//! window entries belong to their graphs (which need their buffers for every
//! replay) and are bounded by what those graphs recorded.
//!
//! The window's recorded set holds each entry at most once (a flag per
//! entry), so it is bounded by the number of live entries, that is by the
//! number of distinct info buffers the captured work used.

mod cache;
mod error;
mod policy;
mod slab;

#[cfg(test)]
mod model_tests;
#[cfg(test)]
mod tests;

pub use crate::stream::capture::CacheMode;
pub use cache::InfoCache;
pub use error::{InsertError, PinError};
pub use policy::CachePolicy;

/// Identifies one captured graph for pinning; minted by the caller, unique
/// among the graphs it has not released.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GraphId(pub u64);
