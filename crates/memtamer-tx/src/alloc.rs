//! Locality-aware allocation in 64 B lines (thesis §5.4.4), pure
//! bookkeeping: which lines are free. Writing and zeroing object headers is
//! the transaction layer's job.
//!
//! * one **sorted global free list** for fresh space, taken in segments
//!   into **per-thread portions** (per TxState slot here: a slot is owned by
//!   one thread for a transaction), allocated first-fit so that consecutive
//!   requests get adjacent lines (Principle B, "contiguous allocation");
//! * frees go to the owner's **deallocation list**; the GC step moves them,
//!   headers zeroed, into the **sorted recycle list**, which refills the
//!   global list when that runs dry (deletion records wait for a global GC
//!   generation, see `Pool::reap`);
//! * objects above [`LARGE_LINES`] take the **large-object path**: best fit
//!   straight from the global list (the thesis's "regular path").

use std::collections::BTreeMap;

/// Objects of more lines than this bypass the per-thread portions.
pub const LARGE_LINES: u32 = 64;

/// A sorted, coalescing set of free line extents.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FreeList {
    map: BTreeMap<u32, u32>,
    total: u64,
}

impl FreeList {
    /// Free lines in total.
    pub fn total(&self) -> u64 {
        self.total
    }
    /// Number of extents.
    pub fn extents(&self) -> usize {
        self.map.len()
    }
    /// Extents in address order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.map.iter().map(|(a, n)| (*a, *n))
    }

    /// Adds `start..start+n`, merging with neighbours. Panics (debug) on
    /// overlap, which would be a double free.
    pub fn insert(&mut self, start: u32, n: u32) {
        if n == 0 {
            return;
        }
        let mut s = start;
        let mut len = n;
        if let Some((&ps, &pn)) = self.map.range(..start).next_back() {
            debug_assert!(ps + pn <= start, "double free at line {start}");
            if ps + pn == start {
                self.map.remove(&ps);
                s = ps;
                len += pn;
            }
        }
        if let Some(&nn) = self.map.get(&(start + n)) {
            self.map.remove(&(start + n));
            len += nn;
        }
        debug_assert!(
            self.map.range(start..start + n).next().is_none(),
            "double free at line {start}"
        );
        self.map.insert(s, len);
        self.total += u64::from(n);
    }

    /// First fit: the lowest extent with at least `n` lines.
    pub fn take_first(&mut self, n: u32) -> Option<u32> {
        let (&s, &len) = self.map.iter().find(|(_, l)| **l >= n)?;
        self.split(s, len, n);
        Some(s)
    }

    /// Best fit: the smallest extent with at least `n` lines (large path).
    pub fn take_best(&mut self, n: u32) -> Option<u32> {
        let (&s, &len) = self
            .map
            .iter()
            .filter(|(_, l)| **l >= n)
            .min_by_key(|(s, l)| (**l, **s))?;
        self.split(s, len, n);
        Some(s)
    }

    /// A segment for a per-thread portion: the lowest extent of at least
    /// `want` lines among the first 64 (so a fragmented list does not hand
    /// out one-line segments), else the lowest with `min`.
    pub fn take_segment(&mut self, min: u32, want: u32) -> Option<(u32, u32)> {
        let want = want.max(min);
        let pick = self
            .map
            .iter()
            .take(64)
            .find(|(_, l)| **l >= want)
            .or_else(|| self.map.iter().find(|(_, l)| **l >= min));
        let (&s, &len) = pick?;
        let n = len.min(want);
        self.split(s, len, n);
        Some((s, n))
    }

    fn split(&mut self, s: u32, len: u32, n: u32) {
        self.map.remove(&s);
        if len > n {
            self.map.insert(s + n, len - n);
        }
        self.total -= u64::from(n);
    }

    /// Refills a portion (thesis §5.4.4 step 2): a segment as
    /// [`take_segment`](Self::take_segment) picks it becomes the bump
    /// range; when the list is fragmented (that segment is shorter than
    /// `want`), the extents that follow it in address order are handed over
    /// too, up to `want` lines in all. Without this, once recycled copies
    /// have cut the list into short runs, every allocation or two goes back
    /// to the global lock for a one-line "segment".
    ///
    /// Returns the extents taken (empty when the list has no run of `min`
    /// lines), so the caller can log each one as fetched (CHKP-diff).
    pub fn refill_portion(&mut self, min: u32, want: u32, p: &mut Portion) -> Vec<(u32, u32)> {
        let Some((s, n)) = self.take_segment(min, want) else {
            return Vec::new();
        };
        p.add_segment(s, n);
        let mut taken = vec![(s, n)];
        let mut got = n;
        while got < want {
            let Some((&es, &en)) = self.map.range(s..).next() else {
                break;
            };
            let take = en.min(want - got);
            self.split(es, en, take);
            p.free.insert(es, take);
            taken.push((es, take));
            got += take;
        }
        taken
    }

    /// Merges a batch of runs (any order, no overlaps) in one pass: sort,
    /// coalesce, rebuild; O(n log n) once instead of a tree insert per run.
    pub fn absorb_runs(&mut self, runs: &mut Vec<(u32, u32)>) {
        if runs.is_empty() {
            return;
        }
        let mut all: Vec<(u32, u32)> = std::mem::take(&mut self.map).into_iter().collect();
        all.append(runs);
        all.sort_unstable();
        let mut merged: Vec<(u32, u32)> = Vec::with_capacity(all.len());
        let mut total = 0u64;
        for (s, n) in all {
            if n == 0 {
                continue;
            }
            total += u64::from(n);
            match merged.last_mut() {
                Some((ms, mn)) if *ms + *mn == s => *mn += n,
                Some((ms, mn)) => {
                    debug_assert!(*ms + *mn < s, "double free at line {s}");
                    merged.push((s, n));
                }
                None => merged.push((s, n)),
            }
        }
        self.map = merged.into_iter().collect();
        self.total = total;
    }

    /// Moves everything from `other` into `self`.
    pub fn absorb(&mut self, other: &mut FreeList) {
        for (s, n) in std::mem::take(&mut other.map) {
            self.insert(s, n);
        }
        other.total = 0;
    }
}

/// One slot's allocation list (its portion of the global list): a bump
/// range inside the current segment, so consecutive requests get adjacent
/// lines in O(1), plus first-fit over returned extents.
#[derive(Debug, Default)]
pub struct Portion {
    /// Free extents held by this slot besides the bump range.
    pub free: FreeList,
    bump: u32,
    bump_end: u32,
}

impl Portion {
    /// Bump first, then first fit (thesis §5.4.4 step 1) among the lowest
    /// 64 extents (bounded: a portion may hold many one-line extents; a
    /// request none of them fits goes to the global list).
    pub fn alloc(&mut self, n: u32) -> Option<u32> {
        if self.bump_end - self.bump >= n {
            let l = self.bump;
            self.bump += n;
            return Some(l);
        }
        let (&s, &len) = self.free.map.iter().take(64).find(|(_, l)| **l >= n)?;
        self.free.split(s, len, n);
        Some(s)
    }

    /// Adopts a fresh segment as the bump range (the rest of the old one
    /// goes to the extent list).
    pub fn add_segment(&mut self, start: u32, n: u32) {
        self.free.insert(self.bump, self.bump_end - self.bump);
        self.bump = start;
        self.bump_end = start + n;
    }

    /// Gives every free line back (to the global list).
    pub fn drain_into(&mut self, g: &mut FreeList) {
        g.insert(self.bump, self.bump_end - self.bump);
        self.bump = 0;
        self.bump_end = 0;
        g.absorb(&mut self.free);
    }
}

/// A block waiting for GC: its header must be zeroed before reuse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dealloc {
    /// First line.
    pub line: u32,
    /// Lines.
    pub lines: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_coalesces_and_first_fit_is_lowest() {
        let mut f = FreeList::default();
        f.insert(10, 5);
        f.insert(20, 5);
        f.insert(15, 5);
        assert_eq!(f.iter().collect::<Vec<_>>(), vec![(10, 15)]);
        assert_eq!(f.take_first(3), Some(10));
        assert_eq!(f.take_first(3), Some(13));
        assert_eq!(f.total(), 9);
        f.insert(100, 2);
        assert_eq!(f.take_best(2), Some(100));
        assert_eq!(f.take_first(100), None);
    }

    #[test]
    fn segments_are_capped_and_contiguous() {
        let mut f = FreeList::default();
        f.insert(0, 1000);
        assert_eq!(f.take_segment(1, 256), Some((0, 256)));
        assert_eq!(f.take_segment(1, 256), Some((256, 256)));
        assert_eq!(f.total(), 488);
        let mut p = Portion::default();
        p.add_segment(0, 256);
        let a = p.alloc(1).unwrap();
        let b = p.alloc(2).unwrap();
        assert_eq!(b, a + 1, "consecutive requests get adjacent lines");
        p.free.insert(300, 1);
        assert_eq!(p.alloc(300), None);
        assert_eq!(p.alloc(1), Some(3));
        let mut g = FreeList::default();
        p.drain_into(&mut g);
        assert_eq!(g.total(), 253);
        assert_eq!(p.alloc(1), None);
    }

    #[test]
    fn a_fragmented_list_refills_a_portion_with_many_extents() {
        let mut g = FreeList::default();
        for i in 0..100u32 {
            g.insert(i * 3, 1);
        }
        g.insert(1000, 8);
        let mut p = Portion::default();
        assert_eq!(
            g.refill_portion(1, 16, &mut p).len(),
            16,
            "one extent per run taken"
        );
        assert_eq!(g.total() + 16, 108);
        let got: Vec<u32> = (0..16).filter_map(|_| p.alloc(1)).collect();
        assert_eq!(got, (0..16).map(|i| i * 3).collect::<Vec<_>>());
        assert_eq!(p.alloc(1), None, "16 lines handed over, no more");
        assert_eq!(p.alloc(2), None);
        // a whole segment when one exists
        let mut p = Portion::default();
        assert!(!g.refill_portion(2, 8, &mut p).is_empty());
        assert_eq!(p.alloc(8), Some(1000));
        let mut empty = FreeList::default();
        assert!(empty.refill_portion(1, 8, &mut p).is_empty());
    }

    #[test]
    fn absorb_runs_sorts_and_coalesces() {
        let mut a = FreeList::default();
        a.insert(10, 2);
        let mut runs = vec![(12, 3), (0, 5), (5, 1), (40, 1)];
        a.absorb_runs(&mut runs);
        assert!(runs.is_empty());
        assert_eq!(a.iter().collect::<Vec<_>>(), vec![(0, 6), (10, 5), (40, 1)]);
        assert_eq!(a.total(), 12);
        assert_eq!(a.take_first(6), Some(0));
    }

    #[test]
    fn absorb_merges_sorted() {
        let mut a = FreeList::default();
        let mut b = FreeList::default();
        a.insert(0, 4);
        b.insert(4, 4);
        b.insert(20, 1);
        a.absorb(&mut b);
        assert_eq!(a.iter().collect::<Vec<_>>(), vec![(0, 8), (20, 1)]);
        assert_eq!(b.total(), 0);
    }
}
