//! DRAM residency and eviction (thesis §4.3.5): which pages are in DRAM,
//! and a FIFO of the DRAM footprints of the last ten executed tasks; when
//! DRAM is full, the oldest entry's pages are evicted (recency by task
//! execution, not page use), skipping pages the next ready task will use.

use crate::fasthash::{PageMap, PageSet};
use std::collections::VecDeque;

/// FIFO length in the thesis.
pub const FIFO_ENTRIES: usize = 10;

/// DRAM state in pages. Each resident page belongs to at most one FIFO
/// entry, that of the last executed task that used it (`owner`); entry
/// lists may hold stale pages, skipped by comparing owners, so a task's
/// completion costs O(its footprint), not O(DRAM). Pages of entries that
/// fall off the 10-entry FIFO go to an "old" pool (owner 0), evicted
/// before any entry, so no resident page is lost from the eviction order.
#[derive(Clone, Debug)]
pub struct Residency {
    capacity: usize,
    resident: PageSet,
    fifo: VecDeque<(u64, Vec<u64>)>,
    owner: PageMap<u64>,
    old: Vec<u64>,
    seq: u64,
    entries: usize,
}

impl Residency {
    /// DRAM of `capacity` pages, all free, FIFO of `entries` (>= 1) slots.
    pub fn new(capacity: usize, entries: usize) -> Self {
        Residency {
            capacity,
            resident: PageSet::default(),
            fifo: VecDeque::new(),
            owner: PageMap::default(),
            old: Vec::new(),
            seq: 0,
            entries: entries.max(1),
        }
    }

    /// Capacity in pages.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Pages in DRAM.
    pub fn used(&self) -> usize {
        self.resident.len()
    }

    /// Free DRAM pages.
    pub fn free(&self) -> usize {
        self.capacity.saturating_sub(self.resident.len())
    }

    /// Is page `p` in DRAM?
    pub fn contains(&self, p: u64) -> bool {
        self.resident.contains(&p)
    }

    /// Residency as (first page, page count) regions, the thesis's list
    /// of contiguous DRAM ranges.
    pub fn regions(&self) -> Vec<(u64, u64)> {
        let mut pages: Vec<u64> = self.resident.iter().copied().collect();
        pages.sort_unstable();
        let mut out: Vec<(u64, u64)> = Vec::new();
        for p in pages {
            match out.last_mut() {
                Some((s, n)) if *s + *n == p => *n += 1,
                _ => out.push((p, 1)),
            }
        }
        out
    }

    /// Marks pages resident (after a successful promotion); returns how
    /// many were new. Never exceeds capacity: the excess is not admitted.
    pub fn admit(&mut self, pages: &[u64]) -> usize {
        let mut n = 0;
        for &p in pages {
            if self.resident.len() >= self.capacity {
                break;
            }
            if self.resident.insert(p) {
                n += 1;
            }
        }
        n
    }

    /// Pages found in DRAM when the runtime starts (the OS placed them at
    /// first touch): resident, and first in the eviction order (the old
    /// pool) until a task that uses them runs. Returns how many were new.
    pub fn adopt(&mut self, pages: &[u64]) -> usize {
        let mut n = 0;
        for &p in pages {
            if self.resident.len() >= self.capacity {
                break;
            }
            if self.resident.insert(p) {
                self.owner.insert(p, 0);
                self.old.push(p);
                n += 1;
            }
        }
        n
    }

    /// Forgets pages (a demotion, or a promotion that failed).
    pub fn release(&mut self, pages: &[u64]) {
        for p in pages {
            self.resident.remove(p);
            self.owner.remove(p);
        }
    }

    /// A task finished: its DRAM-resident pages become the newest FIFO
    /// entry. On overflow the oldest entry's pages join the next oldest,
    /// so no resident page is ever lost from the eviction order.
    pub fn executed(&mut self, footprint: &[u64]) {
        let e: Vec<u64> = footprint
            .iter()
            .copied()
            .filter(|p| self.resident.contains(p))
            .collect();
        if e.is_empty() {
            return;
        }
        self.seq += 1;
        for &p in &e {
            self.owner.insert(p, self.seq);
        }
        self.fifo.push_back((self.seq, e));
        while self.fifo.len() > self.entries {
            let Some((old_seq, old)) = self.fifo.pop_front() else {
                break;
            };
            for p in old {
                if self.owner.get(&p) == Some(&old_seq) {
                    self.owner.insert(p, 0);
                    self.old.push(p);
                }
            }
        }
        if self.old.len() > 2 * self.capacity.max(1) {
            let owner = &self.owner;
            self.old.retain(|p| owner.get(p) == Some(&0));
        }
    }

    /// Pages evictable now (in the FIFO, resident, not guarded).
    pub fn evictable(&self, guard: &PageSet) -> usize {
        let guarded = guard.iter().filter(|p| self.owner.contains_key(p)).count();
        self.owner.len() - guarded
    }

    /// Evicts oldest-first until `need` pages are free or the FIFO holds
    /// nothing unguarded; returns the evicted pages (to demote, in order).
    pub fn evict_for(&mut self, need: usize, guard: &PageSet) -> Vec<u64> {
        let mut out = Vec::new();
        if self.free() < need && !self.old.is_empty() {
            let old = std::mem::take(&mut self.old);
            for p in old {
                if self.owner.get(&p) != Some(&0) {
                    continue;
                }
                if guard.contains(&p) || self.free() >= need {
                    self.old.push(p);
                } else {
                    self.owner.remove(&p);
                    self.resident.remove(&p);
                    out.push(p);
                }
            }
        }
        let mut i = 0;
        while self.free() < need && i < self.fifo.len() {
            let (seq, entry) = std::mem::take(&mut self.fifo[i]);
            let mut kept = Vec::new();
            for p in entry {
                if self.owner.get(&p) != Some(&seq) {
                    continue; // stale: a newer entry owns it, or evicted
                }
                if guard.contains(&p) || self.free() >= need {
                    kept.push(p);
                } else {
                    self.owner.remove(&p);
                    self.resident.remove(&p);
                    out.push(p);
                }
            }
            let empty = kept.is_empty();
            self.fifo[i] = (seq, kept);
            if empty {
                self.fifo.remove(i);
            } else {
                i += 1;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adopted_pages_are_evicted_first_until_a_task_uses_them() {
        let mut r = Residency::new(4, FIFO_ENTRIES);
        assert_eq!(r.adopt(&[1, 2, 3]), 3);
        r.admit(&[9]);
        r.executed(&[9, 2]); // page 2 now belongs to a FIFO entry
        let none = PageSet::default();
        assert_eq!(r.evictable(&none), 4);
        // the adopted pages not used since go first, then the FIFO entry
        assert_eq!(r.evict_for(2, &none), vec![1, 3]);
        let mut rest = r.evict_for(4, &none);
        rest.sort_unstable();
        assert_eq!(rest, vec![2, 9]);
    }

    #[test]
    fn admit_respects_capacity_and_regions_merge() {
        let mut r = Residency::new(4, FIFO_ENTRIES);
        assert_eq!(r.admit(&[5, 6, 6, 9]), 3);
        assert_eq!(r.admit(&[10, 11, 12]), 1);
        assert_eq!(r.free(), 0);
        assert_eq!(r.regions(), vec![(5, 2), (9, 2)]);
        r.release(&[6]);
        assert!(!r.contains(6) && r.contains(5));
    }

    #[test]
    fn eviction_is_oldest_task_first_and_skips_guard() {
        let mut r = Residency::new(6, FIFO_ENTRIES);
        r.admit(&[1, 2, 3, 4, 5, 6]);
        r.executed(&[1, 2, 99]); // 99 not resident: not recorded
        r.executed(&[3, 4]);
        r.executed(&[5, 6]);
        let guard: PageSet = [2].into_iter().collect();
        assert_eq!(r.evictable(&guard), 5);
        let ev = r.evict_for(2, &guard);
        // Oldest entry [1,2]: 1 goes, 2 is guarded; then 3 from the next.
        assert_eq!(ev, vec![1, 3]);
        assert_eq!(r.free(), 2);
        // Nothing more needed: nothing evicted.
        assert!(r.evict_for(2, &guard).is_empty());
        // Everything but the guard can go.
        let ev = r.evict_for(6, &guard);
        assert_eq!(ev, vec![4, 5, 6]);
        assert!(r.contains(2));
    }

    #[test]
    fn a_page_reused_by_a_later_task_moves_to_its_entry() {
        let mut r = Residency::new(4, FIFO_ENTRIES);
        r.admit(&[1, 2, 3]);
        r.executed(&[1, 2]);
        r.executed(&[2, 3]);
        let none = PageSet::default();
        assert_eq!(r.evictable(&none), 3);
        // Oldest entry now only owns page 1.
        assert_eq!(r.evict_for(2, &none), vec![1]);
        r.release(&[3]);
        assert_eq!(r.evictable(&none), 1);
        assert_eq!(r.evict_for(4, &none), vec![2]);
    }

    #[test]
    fn fifo_overflow_merges_instead_of_forgetting() {
        let mut r = Residency::new(100, 2);
        r.admit(&(0..10).collect::<Vec<_>>());
        r.executed(&[0]);
        r.executed(&[1]);
        r.executed(&[2]);
        assert_eq!(r.fifo.len(), 2);
        assert_eq!(r.evictable(&PageSet::default()), 3);
        assert_eq!(r.evict_for(93, &PageSet::default()), vec![0, 1, 2]);
        assert_eq!(r.evictable(&PageSet::default()), 0);
        assert_eq!(r.evict_for(93, &PageSet::default()), Vec::<u64>::new());
    }
}
