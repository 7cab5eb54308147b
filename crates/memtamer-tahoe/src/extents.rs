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

use std::cell::Cell;
use std::collections::BTreeSet;

/// The set of dependence addresses seen so far.
#[derive(Clone, Debug, Default)]
pub struct Extents {
    addrs: BTreeSet<u64>,
    max: u64,
    /// Cached median gap; None = recompute (a new address arrived).
    median: Cell<Option<Option<u64>>>,
}

impl Extents {
    /// Empty set; extents never exceed `max` bytes (>= 1).
    pub fn new(max: u64) -> Self {
        Extents {
            addrs: BTreeSet::new(),
            max: max.max(1),
            median: Cell::new(None),
        }
    }

    /// Records a dependence address.
    pub fn observe(&mut self, addr: u64) {
        if self.addrs.insert(addr) {
            self.median.set(None);
        }
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

    /// Inferred length of the object at `addr` (1 if nothing else known).
    pub fn extent(&self, addr: u64) -> u64 {
        use std::ops::Bound::{Excluded, Unbounded};
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
