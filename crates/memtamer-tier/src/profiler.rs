//! PMU-free access profiling by protection-fault sampling.
//!
//! The thesis samples LLC misses with PEBS/IBS (§3.4, Step 1). Where no PMU
//! is reachable (VMs, containers, this machine), we sample the way Linux's
//! NUMA balancing does with hinting faults: at every *tick* the profiler maps
//! `k` random pages of each object `PROT_NONE`; the first touch of such a
//! page faults, the handler (`guard`) counts it and gives the page back.
//!
//! Estimator (pure, [`estimate_visits`]): if `f` of the `a` pages armed at a
//! tick faulted before the next tick, a fraction `f/a` of the object's `P`
//! pages was touched in that interval, so it saw about `P·f/a` page visits.
//! Summed over intervals this estimates the object's page visits; an
//! object's *access share* is its share of the sum. The estimate counts a
//! page at most once per interval, so the tick must be short compared with
//! the time between two visits of the same page (true for streaming phases;
//! hot pages revisited within one interval are undercounted).

use crate::guard::SLOTS;
use crate::registry::Registry;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering::SeqCst;

/// Page visits implied by `faults` out of `armed` sampled pages of an
/// object of `pages` pages, for one interval (0 when nothing was armed).
pub fn estimate_visits(faults: u64, armed: u64, pages: usize) -> f64 {
    if armed == 0 {
        0.0
    } else {
        faults.min(armed) as f64 / armed as f64 * pages as f64
    }
}

/// Normalises estimates into shares (all zero when the total is zero).
pub fn shares(values: &[f64]) -> Vec<f64> {
    let total: f64 = values.iter().sum();
    values
        .iter()
        .map(|v| if total > 0.0 { v / total } else { 0.0 })
        .collect()
}

/// What the profiler learnt about one object.
#[derive(Clone, Debug, PartialEq)]
pub struct ObjectEstimate {
    /// Object address.
    pub addr: usize,
    /// Object name.
    pub name: String,
    /// Size in pages.
    pub pages: usize,
    /// Sampling faults taken.
    pub faults: u64,
    /// Page armings made.
    pub armed: u64,
    /// Estimated page visits ([`estimate_visits`] summed over intervals).
    pub visits: f64,
    /// Share of all objects' estimated visits.
    pub share: f64,
}

#[derive(Clone, Debug, Default)]
struct Acc {
    faults: u64,
    armed: u64,
    visits: f64,
    /// Intervals counted into `visits` (allocation-time placement's
    /// density, [`crate::alloc_place`]).
    ticks: u64,
    /// Pages armed at the last tick (the denominator for the next one).
    last_armed: u64,
    /// Slot fault counter at the last tick.
    last_count: u64,
}

/// Sampling state: which object got how many armings and faults.
#[derive(Debug)]
pub struct Profiler {
    rng: u64,
    acc: BTreeMap<usize, Acc>,
}

impl Profiler {
    /// A profiler whose page choice is reproducible from `seed`.
    pub fn new(seed: u64) -> Self {
        Profiler {
            rng: seed | 1,
            acc: BTreeMap::new(),
        }
    }

    fn next(&mut self) -> u64 {
        // xorshift64*: cheap, good enough for picking pages.
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Forgets accumulated counts (armed pages stay armed until next tick).
    pub fn reset(&mut self) {
        for a in self.acc.values_mut() {
            *a = Acc {
                last_armed: a.last_armed,
                last_count: a.last_count,
                ..Acc::default()
            };
        }
    }

    /// Closes the interval that began at the previous tick (disarm, count)
    /// and arms `k` fresh random pages per object (`k = 0`: arm nothing).
    /// Objects being migrated are skipped: their interval is dropped.
    pub fn tick(&mut self, reg: &mut Registry, k: usize) {
        let page = reg.page();
        let addrs: Vec<usize> = reg.objects.keys().copied().collect();
        self.acc.retain(|a, _| reg.objects.contains_key(a));
        for addr in addrs {
            let Some(o) = reg.objects.get(&addr) else {
                continue;
            };
            if o.migrating {
                if let Some(a) = self.acc.get_mut(&addr) {
                    a.last_armed = 0;
                }
                continue;
            }
            let (slot, pages) = (o.slot, o.len / page);
            reg.disarm(addr);
            let count = SLOTS[slot].faults.load(SeqCst);
            let acc = self.acc.entry(addr).or_default();
            let f = count.saturating_sub(acc.last_count);
            if acc.last_armed > 0 {
                acc.faults += f;
                acc.armed += acc.last_armed;
                acc.visits += estimate_visits(f, acc.last_armed, pages);
                acc.ticks += 1;
            }
            acc.last_count = count;
            let want = k.min(pages);
            let mut chosen = BTreeSet::new();
            if want == pages {
                chosen.extend(0..pages);
            } else {
                while chosen.len() < want {
                    let r = (self.next() % pages as u64) as usize;
                    chosen.insert(r);
                }
            }
            let Some(o) = reg.objects.get_mut(&addr) else {
                continue;
            };
            let mut armed = 0;
            for i in chosen {
                let p = addr + i * page;
                if crate::backing::protect(p, page, libc::PROT_NONE, &o.name).is_ok() {
                    o.armed.push(p);
                    armed += 1;
                }
            }
            if let Some(a) = self.acc.get_mut(&addr) {
                a.last_armed = armed;
            }
        }
    }

    /// Forgets the object at `addr` (it was freed) and returns its
    /// estimated page visits since the last [`Profiler::reset`] and the
    /// intervals they cover (`None`: never sampled). An object allocated
    /// at the same address later starts from nothing.
    ///
    /// Call it before the registry frees the object: the interval since the
    /// last tick is closed here (its faults counted as at a tick), since a
    /// short-lived object has most of its samples in its last interval.
    pub fn forget(&mut self, reg: &Registry, addr: usize) -> Option<(f64, u64)> {
        let mut a = self.acc.remove(&addr)?;
        if let Some(o) = reg.objects.get(&addr).filter(|o| !o.migrating) {
            if a.last_armed > 0 {
                let f = SLOTS[o.slot]
                    .faults
                    .load(SeqCst)
                    .saturating_sub(a.last_count);
                a.visits += estimate_visits(f, a.last_armed, o.len / reg.page());
                a.ticks += 1;
            }
        }
        Some((a.visits, a.ticks))
    }

    /// Estimates per object, in address order.
    pub fn estimates(&self, reg: &Registry) -> Vec<ObjectEstimate> {
        let page = reg.page();
        let mut out: Vec<ObjectEstimate> = self
            .acc
            .iter()
            .filter_map(|(&addr, a)| {
                let o = reg.objects.get(&addr)?;
                Some(ObjectEstimate {
                    addr,
                    name: o.name.clone(),
                    pages: o.len / page,
                    faults: a.faults,
                    armed: a.armed,
                    visits: a.visits,
                    share: 0.0,
                })
            })
            .collect();
        let s = shares(&out.iter().map(|e| e.visits).collect::<Vec<_>>());
        for (e, s) in out.iter_mut().zip(s) {
            e.share = s;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimator_scales_by_object_size() {
        assert_eq!(estimate_visits(0, 0, 100), 0.0);
        assert_eq!(estimate_visits(2, 8, 100), 25.0);
        assert_eq!(estimate_visits(8, 8, 16), 16.0);
        // A spurious extra fault cannot push the estimate above every page.
        assert_eq!(estimate_visits(9, 8, 16), 16.0);
    }

    #[test]
    fn shares_normalise() {
        assert_eq!(shares(&[1.0, 3.0]), vec![0.25, 0.75]);
        assert_eq!(shares(&[0.0, 0.0]), vec![0.0, 0.0]);
    }
}
