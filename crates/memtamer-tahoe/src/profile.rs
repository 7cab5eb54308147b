//! Representative-task profiles (thesis §4.3.3): one instance per task type
//! runs with all data in the slow tier and is profiled; its per-page access
//! counts are stored *relative to the task's data objects* so that they can
//! be re-based onto sibling instances whose objects live elsewhere
//! (Figure 4.3: "these elements of `a[]` are hot").

use crate::error::TahoeError;
use crate::fasthash::TypeMap;
use crate::task::{Task, TaskType};

/// Hardware counters of the representative run, where a PMU exists
/// (inputs of the complete-placement model, §4.3.4).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Counters {
    /// Instructions retired by the task.
    pub instructions: f64,
    /// Instructions per cycle with all data in the slow tier.
    pub ipc: f64,
    /// Last-level-cache miss rate (misses / LLC accesses).
    pub llc_miss_rate: f64,
}

/// A run of bytes of one dependence object with one access count per page
/// (a "memory group", §4.3.3).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HotRange {
    /// Index of the dependence object (clause order).
    pub arg: usize,
    /// Byte offset from the object's start.
    pub offset: u64,
    /// Length in bytes.
    pub len: u64,
    /// Main-memory accesses per page of this range (group average).
    pub per_page: f64,
}

/// What Tahoe keeps per task type.
#[derive(Clone, Debug, PartialEq)]
pub struct TypeProfile {
    /// Measured run time of the representative, all data in the slow tier
    /// (T_c_NVM of Eq. 4.4), nanoseconds.
    pub t_slow_ns: f64,
    /// Total main-memory accesses of the representative (tot_mem_acc).
    pub total_accesses: f64,
    /// Counters, if the platform has a PMU.
    pub counters: Option<Counters>,
    /// Hot ranges, relative to the task's objects.
    pub ranges: Vec<HotRange>,
}

/// Merges consecutive pages whose counts differ by less than `tol` (thesis:
/// 10%) into groups; returns (first index, page count, group average).
/// Consecutive means adjacent page numbers: a gap ends a group.
pub fn memory_groups(pages: &[(u64, f64)], tol: f64) -> Vec<(usize, usize, f64)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < pages.len() {
        let (mut j, mut sum) = (i + 1, pages[i].1);
        while j < pages.len() && pages[j].0 == pages[j - 1].0 + 1 {
            let (a, b) = (pages[j - 1].1, pages[j].1);
            let big = a.abs().max(b.abs());
            if big > 0.0 && (a - b).abs() / big >= tol {
                break;
            }
            sum += b;
            j += 1;
        }
        out.push((i, j - i, sum / (j - i) as f64));
        i = j;
    }
    out
}

impl TypeProfile {
    /// Builds the profile of representative `rep` from sampled per-page
    /// counts (page numbers, any order; pages outside every object are
    /// dropped: they are not the task's data). `page` is the page size.
    pub fn from_samples(
        rep: &Task,
        samples: &[(u64, f64)],
        page: u64,
        t_slow_ns: f64,
        counters: Option<Counters>,
    ) -> Result<Self, TahoeError> {
        if page == 0 || !page.is_power_of_two() {
            return Err(TahoeError::PageSize(page as usize));
        }
        // Per argument: (page, count), page clipped to the object.
        let mut per_arg: Vec<Vec<(u64, f64)>> = vec![Vec::new(); rep.objects.len()];
        for &(p, c) in samples {
            if let Some(arg) = rep.objects.iter().position(|o| o.pages(page).contains(&p)) {
                per_arg[arg].push((p, c));
            }
        }
        let mut ranges = Vec::new();
        let mut total = 0.0;
        for (arg, mut v) in per_arg.into_iter().enumerate() {
            v.sort_by_key(|x| x.0);
            v.dedup_by(|b, a| {
                if a.0 == b.0 {
                    a.1 += b.1;
                    true
                } else {
                    false
                }
            });
            let o = rep.objects[arg];
            let end = o.addr + o.len.max(1);
            for (first, n, avg) in memory_groups(&v, 0.10) {
                let lo = (v[first].0 * page).max(o.addr);
                let hi = ((v[first + n - 1].0 + 1) * page).min(end);
                total += avg * n as f64;
                ranges.push(HotRange {
                    arg,
                    offset: lo - o.addr,
                    len: hi - lo,
                    per_page: avg,
                });
            }
        }
        Ok(TypeProfile {
            t_slow_ns,
            total_accesses: total,
            counters,
            ranges,
        })
    }

    /// A profile without page samples: every page of every object is
    /// equally hot (used when no sampler ran; the access total then is the
    /// object page count, so Eq. 4.4 weighs pages by footprint share).
    pub fn uniform(rep: &Task, page: u64, t_slow_ns: f64, counters: Option<Counters>) -> Self {
        let ranges: Vec<HotRange> = rep
            .objects
            .iter()
            .enumerate()
            .map(|(arg, o)| HotRange {
                arg,
                offset: 0,
                len: o.len.max(1),
                per_page: 1.0,
            })
            .collect();
        let total = rep
            .objects
            .iter()
            .map(|o| o.pages(page).count() as f64)
            .sum();
        TypeProfile {
            t_slow_ns,
            total_accesses: total,
            counters,
            ranges,
        }
    }

    /// Re-bases the hot ranges onto `task` (a sibling of the same type):
    /// returns (page number, predicted accesses) sorted hottest first, ties
    /// by page. A page shared by two ranges sums their counts.
    pub fn rebase(&self, task: &Task, page: u64) -> Result<Vec<(u64, f64)>, TahoeError> {
        let acc = self.rebase_within(task, page, None)?;
        let mut v: Vec<(u64, f64)> = acc.into_iter().collect();
        v.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        Ok(v)
    }

    /// [`TypeProfile::rebase`] of the pages in `wanted` (sorted; None:
    /// every page), unsorted (the same per-page sums): for callers that sum
    /// over pages and need no hottest-first order, such as the
    /// cost-benefit check's reuse scan
    /// ([`crate::benefit::future_savings_of`]). Each range visits only the
    /// wanted pages inside it.
    pub fn rebase_within(
        &self,
        task: &Task,
        page: u64,
        wanted: Option<&[u64]>,
    ) -> Result<crate::fasthash::PageMap<f64>, TahoeError> {
        let mut acc: crate::fasthash::PageMap<f64> = Default::default();
        for r in &self.ranges {
            let o = task
                .objects
                .get(r.arg)
                .ok_or_else(|| TahoeError::BadArgument {
                    ty: task.task_type().to_string(),
                    arg: r.arg,
                    have: task.objects.len(),
                })?;
            if r.offset >= o.len.max(1) || r.len == 0 {
                continue;
            }
            let lo = o.addr + r.offset;
            let hi = (lo + r.len).min(o.addr + o.len.max(1));
            let (first, last) = (lo / page, (hi - 1) / page);
            match wanted {
                None => {
                    for p in first..=last {
                        *acc.entry(p).or_insert(0.0) += r.per_page;
                    }
                }
                Some(w) => {
                    let from = w.partition_point(|&p| p < first);
                    let to = w.partition_point(|&p| p <= last);
                    for &p in w.get(from..to).unwrap_or_default() {
                        *acc.entry(p).or_insert(0.0) += r.per_page;
                    }
                }
            }
        }
        Ok(acc)
    }
}

/// The profiling database: task type -> profile (§4.3.3).
#[derive(Debug, Default)]
pub struct ProfileDb {
    map: TypeMap<TypeProfile>,
}

impl ProfileDb {
    /// Empty database.
    pub fn new() -> Self {
        Self::default()
    }

    /// The profile of `task`'s type, if a representative has run.
    pub fn get(&self, task: &Task) -> Option<&TypeProfile> {
        self.map.get(&task.task_type())
    }

    /// Stores the representative's profile (the first one wins: later
    /// instances reuse it, as in the thesis).
    pub fn insert(&mut self, ty: TaskType, p: TypeProfile) {
        self.map.entry(ty).or_insert(p);
    }

    /// Replaces the all-slow time T_c_NVM of `task`'s type (an estimate
    /// refined from measured instances, `PlanConfig::refine`); false if
    /// the type has no profile or `ns` is not a positive number.
    pub fn set_t_slow(&mut self, task: &Task, ns: f64) -> bool {
        match self.map.get_mut(&task.task_type()) {
            Some(p) if ns.is_finite() && ns > 0.0 => {
                p.t_slow_ns = ns;
                true
            }
            _ => false,
        }
    }

    /// Number of task types profiled.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// No type profiled yet.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Iterates over (type, profile).
    pub fn iter(&self) -> impl Iterator<Item = (&TaskType, &TypeProfile)> {
        self.map.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::{Access, DataObject};

    const P: u64 = 4096;

    fn task(id: u64, addrs: &[(u64, u64)]) -> Task {
        Task {
            id,
            code: 0x42,
            objects: addrs
                .iter()
                .map(|&(addr, len)| DataObject {
                    addr,
                    len,
                    access: Access::InOut,
                })
                .collect(),
        }
    }

    #[test]
    fn groups_merge_within_ten_percent_and_split_on_gaps() {
        let pages = [(10, 100.0), (11, 95.0), (12, 50.0), (14, 50.0), (15, 0.0)];
        let g = memory_groups(&pages, 0.10);
        assert_eq!(g.len(), 4);
        assert_eq!((g[0].0, g[0].1), (0, 2));
        assert!((g[0].2 - 97.5).abs() < 1e-9);
        assert_eq!((g[1].0, g[1].1), (2, 1));
        assert_eq!((g[2].0, g[2].1), (3, 1));
        assert_eq!((g[3].0, g[3].1), (4, 1));
        // Exactly 10% apart does not merge.
        assert_eq!(memory_groups(&[(0, 100.0), (1, 90.0)], 0.10).len(), 2);
        assert!(memory_groups(&[], 0.1).is_empty());
        // Zero counts merge with each other.
        assert_eq!(memory_groups(&[(0, 0.0), (1, 0.0)], 0.1).len(), 1);
    }

    #[test]
    fn rebase_moves_hot_pages_with_the_object() {
        // Representative: arg0 at page 100..104, arg1 at page 200..202.
        let rep = task(1, &[(100 * P, 4 * P), (200 * P, 2 * P)]);
        let samples = [(101, 50.0), (102, 52.0), (201, 7.0), (999, 1e9)];
        let prof = TypeProfile::from_samples(&rep, &samples, P, 1e6, None).unwrap();
        assert_eq!(prof.ranges.len(), 2);
        assert!((prof.total_accesses - 109.0).abs() < 1e-9);
        // Sibling: arg0 at 500, arg1 at 50.
        let sib = task(2, &[(500 * P, 4 * P), (50 * P, 2 * P)]);
        let hot = prof.rebase(&sib, P).unwrap();
        assert_eq!(hot, vec![(501, 51.0), (502, 51.0), (51, 7.0)]);
    }

    #[test]
    fn rebase_handles_unaligned_objects() {
        // Object starts mid-page: offset is relative to the object start.
        let rep = task(1, &[(10 * P + 100, 3 * P)]);
        let prof = TypeProfile::from_samples(&rep, &[(10, 5.0)], P, 1.0, None).unwrap();
        assert_eq!(prof.ranges[0].offset, 0);
        assert_eq!(prof.ranges[0].len, P - 100);
        let sib = task(2, &[(20 * P + 4000, 3 * P)]);
        // Bytes [0, P-100) of the sibling span pages 20 and 21.
        assert_eq!(prof.rebase(&sib, P).unwrap(), vec![(20, 5.0), (21, 5.0)]);
    }

    #[test]
    fn rebase_rejects_missing_argument_and_bad_page() {
        let rep = task(1, &[(0, P), (P, P)]);
        let prof = TypeProfile::uniform(&rep, P, 1.0, None);
        let short = task(2, &[(0, P)]);
        assert!(matches!(
            prof.rebase(&short, P),
            Err(TahoeError::BadArgument {
                arg: 1,
                have: 1,
                ..
            })
        ));
        assert_eq!(
            TypeProfile::from_samples(&rep, &[], 3000, 1.0, None),
            Err(TahoeError::PageSize(3000))
        );
    }

    #[test]
    fn uniform_profile_covers_every_page() {
        let rep = task(1, &[(0, 2 * P), (8 * P, 1)]);
        let prof = TypeProfile::uniform(&rep, P, 1.0, None);
        assert_eq!(prof.total_accesses, 3.0);
        let hot = prof.rebase(&rep, P).unwrap();
        assert_eq!(hot, vec![(0, 1.0), (1, 1.0), (8, 1.0)]);
    }

    #[test]
    fn database_keeps_first_representative() {
        let mut db = ProfileDb::new();
        let t = task(1, &[(0, P)]);
        assert!(db.get(&t).is_none());
        db.insert(t.task_type(), TypeProfile::uniform(&t, P, 1.0, None));
        db.insert(t.task_type(), TypeProfile::uniform(&t, P, 2.0, None));
        let sib = task(2, &[(9 * P, P)]);
        assert_eq!(db.get(&sib).unwrap().t_slow_ns, 1.0);
        assert_eq!(db.len(), 1);
        assert!(db.get(&task(3, &[(0, 2 * P)])).is_none());
    }
}
