//! Object extents from dependence addresses. OMPT's dependence callback
//! reports only the *address* of each `depend` item, not its length (the
//! length lives in libomp's private `kmp_depend_info`). Tahoe needs sizes
//! for the task-type key and the footprint, so the tool infers them: in a
//! blocked task program the dependence addresses are block starts, and a
//! block extends to the next dependence address. The extent of `a` is the
//! gap to the next larger address seen, capped at `max` and at twice the
//! median gap (an object far below an unrelated one, e.g. the last heap
//! block below a stack slot, would otherwise span unmapped memory); the
//! largest address gets the median gap. [Inference, documented in
//! docs/tahoe.md: exact for contiguous equal blocks, an over-estimate of at
//! most 2x the median block for isolated objects, an under-estimate for
//! objects larger than that.]
//!
//! Where the tool sees libomp's `kmp_depend_info` itself (it interposes
//! `__kmpc_omp_task_with_deps` when preloaded, `memtamer-omp`'s `deps`),
//! the program's own length is recorded with [`Extents::observe_exact`] and
//! wins over the inference for that address.

use std::cell::Cell;
use std::collections::{BTreeSet, HashMap};

/// Shortest `depend` item taken as the object's extent: one page. Tahoe
/// places pages, so an item shorter than a page says nothing about which
/// pages a task touches; it is the first element that names a block (a
/// scalar sentinel), and the gap to the next address says more.
pub const SECTION_MIN: u64 = 4096;

/// The set of dependence addresses seen so far, and the exact lengths
/// known for some of them.
#[derive(Clone, Debug, Default)]
pub struct Extents {
    addrs: BTreeSet<u64>,
    /// Lengths the program stated (`depend` array sections), the largest
    /// one seen per address.
    exact: HashMap<u64, u64>,
    /// Bumped whenever an address or a larger exact length arrives: an
    /// extent computed before is stale once it changes.
    generation: u64,
    max: u64,
    /// Cached median gap; None = recompute (a new address arrived).
    median: Cell<Option<Option<u64>>>,
}

impl Extents {
    /// Empty set; inferred extents never exceed `max` bytes (>= 1).
    pub fn new(max: u64) -> Self {
        Extents {
            max: max.max(1),
            ..Extents::default()
        }
    }

    /// Records a dependence address.
    pub fn observe(&mut self, addr: u64) {
        if self.addrs.insert(addr) {
            self.median.set(None);
            self.generation += 1;
        }
    }

    /// Records a dependence address with the length the program gave it
    /// (a `depend` item's array section). An item shorter than
    /// [`SECTION_MIN`] is a *name* for the object it starts (`depend(in:
    /// blk[0])`, the usual idiom, and every client here), not its extent:
    /// only its address counts and the extent stays inferred. A zero length
    /// (OpenMP 5.1's `omp_all_memory`) names no object and is ignored. A
    /// second, larger length for the same address replaces the first. Not
    /// capped by `max`: the cap bounds a guess, not the program's own
    /// statement.
    pub fn observe_exact(&mut self, addr: u64, len: u64) {
        if len == 0 {
            return;
        }
        self.observe(addr);
        self.note_length(addr, len);
    }

    /// The length half of [`Self::observe_exact`], for a caller that
    /// records the address itself with [`Self::observe`]: the OMPT tool
    /// learns a task's lengths from its creation call and its addresses
    /// from the dependence callback right after, and inserting each address
    /// from both searched the address set twice per `depend` item. A length
    /// below [`SECTION_MIN`] (0 included) is no extent and is ignored.
    pub fn note_length(&mut self, addr: u64, len: u64) {
        if len < SECTION_MIN {
            return;
        }
        let e = self.exact.entry(addr).or_insert(0);
        if len > *e {
            *e = len;
            self.generation += 1;
        }
    }

    /// Addresses whose length the program stated.
    pub fn exact_len(&self) -> usize {
        self.exact.len()
    }

    /// Changes whenever [`Self::extent`] may answer differently for some
    /// address than before (a new address, a larger exact length).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Addresses seen.
    pub fn len(&self) -> usize {
        self.addrs.len()
    }

    /// No address seen.
    pub fn is_empty(&self) -> bool {
        self.addrs.is_empty()
    }

    /// Median gap between consecutive addresses (None with < 2), cached
    /// until the next new address.
    fn median_gap(&self) -> Option<u64> {
        if let Some(m) = self.median.get() {
            return m;
        }
        let m = self.compute_median();
        self.median.set(Some(m));
        m
    }

    fn compute_median(&self) -> Option<u64> {
        let mut gaps: Vec<u64> = self
            .addrs
            .iter()
            .zip(self.addrs.iter().skip(1))
            .map(|(a, b)| b - a)
            .collect();
        if gaps.is_empty() {
            return None;
        }
        gaps.sort_unstable();
        Some(gaps[gaps.len() / 2])
    }

    /// Length of the object at `addr`: the program's own where known,
    /// else inferred (1 if nothing else known).
    pub fn extent(&self, addr: u64) -> u64 {
        use std::ops::Bound::{Excluded, Unbounded};
        if let Some(&len) = self.exact.get(&addr) {
            return len;
        }
        let next = self.addrs.range((Excluded(addr), Unbounded)).next();
        let med = self.median_gap();
        let len = match (next, med) {
            (Some(n), Some(m)) => (n - addr).min(m.saturating_mul(2)),
            (Some(n), None) => n - addr,
            (None, m) => m.unwrap_or(1),
        };
        len.clamp(1, self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_get_their_stride_and_last_gets_median() {
        let mut e = Extents::new(1 << 20);
        assert_eq!(e.extent(100), 1);
        for a in [0u64, 4096, 8192, 12288] {
            e.observe(a);
        }
        e.observe(12288);
        assert_eq!(e.len(), 4);
        assert_eq!(e.extent(0), 4096);
        assert_eq!(e.extent(8192), 4096);
        assert_eq!(e.extent(12288), 4096);
        // An address between blocks extends to the next one.
        assert_eq!(e.extent(5000), 8192 - 5000);
    }

    #[test]
    fn exact_lengths_win_and_move_the_generation() {
        let mut e = Extents::new(1 << 20);
        for a in [0u64, 4096, 8192] {
            e.observe(a);
        }
        let g = e.generation();
        assert_eq!(e.extent(4096), 4096);
        // a first-element sentinel (8 B) names the block: still inferred
        e.observe_exact(4096, 8);
        assert_eq!(
            (e.extent(4096), e.generation(), e.exact_len()),
            (4096, g, 0)
        );
        // a section shorter than the gap wins
        e.observe_exact(0, 5000);
        assert_eq!(e.extent(0), 5000);
        assert!(e.generation() > g);
        // a smaller length for the same address changes nothing
        let g = e.generation();
        e.observe_exact(0, 4096);
        assert_eq!((e.extent(0), e.generation()), (5000, g));
        // a larger one replaces it, and is not capped at `max`
        e.observe_exact(0, 1 << 30);
        assert_eq!(e.extent(0), 1 << 30);
        // omp_all_memory (length 0) names no object
        e.observe_exact(1 << 40, 0);
        assert_eq!((e.len(), e.exact_len()), (3, 1));
        // a new sentinel address is also a neighbour for the inferred ones
        e.observe_exact(6144, 8);
        assert_eq!(e.extent(4096), 2048);
        // an observed address already seen keeps the generation
        let g = e.generation();
        e.observe(0);
        assert_eq!(e.generation(), g);
    }

    #[test]
    fn a_noted_length_adds_no_address() {
        let mut e = Extents::new(1 << 20);
        e.note_length(0, 8192);
        e.note_length(4096, 8);
        assert_eq!((e.len(), e.exact_len(), e.extent(0)), (0, 1, 8192));
        let g = e.generation();
        e.observe(0);
        assert_eq!((e.len(), e.extent(0)), (1, 8192));
        assert!(e.generation() > g);
    }

    #[test]
    fn far_neighbour_is_capped_at_twice_the_median() {
        let mut e = Extents::new(1 << 40);
        for a in [0u64, 100, 200, 300, 1 << 30] {
            e.observe(a);
        }
        assert_eq!(e.extent(100), 100);
        assert_eq!(e.extent(300), 200);
        e.observe(400);
        assert_eq!(e.extent(300), 100);
    }

    #[test]
    fn extents_are_capped() {
        let mut e = Extents::new(1000);
        e.observe(0);
        e.observe(1 << 30);
        assert_eq!(e.extent(0), 1000);
        assert_eq!(e.extent(1 << 30), 1000);
        let one = {
            let mut x = Extents::new(0);
            x.observe(5);
            x
        };
        assert_eq!(one.extent(5), 1);
        assert!(!one.is_empty());
    }
}
