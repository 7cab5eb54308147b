//! Proactive migration planning (thesis §4.3.5-4.3.6). Just before the
//! head of the ready queue runs, Tahoe (1) looks up which of its pages are
//! in DRAM and how much is free, (2) splits the DRAM it may use among the
//! head and the next co-running ready tasks (the ready queue is the
//! look-ahead, so a helper thread can migrate for them before they start),
//! (3) evicts the oldest FIFO footprints if needed, (4) promotes each
//! task's hottest re-based pages in one batch per task (one `move_pages`
//! call, one TLB flush: §4.3.6 optimisation 2).

use crate::fasthash::PageSet;
use crate::model::HybridModel;
use crate::profile::{ProfileDb, TypeProfile};
use crate::residency::Residency;
use crate::split::{split_dp, split_even};
use crate::task::{Task, TaskType};
use std::collections::HashMap;

/// Planner knobs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlanConfig {
    /// Page size in bytes (power of two).
    pub page: u64,
    /// Co-running tasks considered (head + look-ahead), the K of Eq. 4.1.
    pub corun: usize,
    /// Largest number of DP units (pages are grouped into units so the
    /// O(K C^2) DP stays cheap).
    pub max_units: usize,
}

impl Default for PlanConfig {
    fn default() -> Self {
        PlanConfig {
            page: 4096,
            corun: 4,
            max_units: 32,
        }
    }
}

/// One batch of page moves, carried out by one call (per task).
#[derive(Clone, Debug, PartialEq)]
pub struct Batch {
    /// Task the batch is for (0 for evictions).
    pub task: u64,
    /// Page numbers to move.
    pub pages: Vec<u64>,
    /// True: to DRAM; false: to the slow tier.
    pub to_dram: bool,
}

/// What to do for the head task.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    /// First instance of its type: run it as the representative, all data
    /// in the slow tier, and profile it.
    Profile,
    /// Another instance of a type whose representative is still running:
    /// nothing to go on yet.
    Wait,
    /// Known type: the batches (evictions first) and the predicted time of
    /// the head under the resulting placement (Eq. 4.4).
    Place {
        /// Moves, evictions first.
        batches: Vec<Batch>,
        /// Predicted head time, ns.
        predicted_ns: f64,
    },
}

/// Counters for the report.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PlanStats {
    /// Tasks decided.
    pub decisions: u64,
    /// Representatives profiled.
    pub profiled: u64,
    /// Pages planned into DRAM.
    pub promoted: u64,
    /// Pages planned out of DRAM.
    pub evicted: u64,
    /// Batches emitted.
    pub batches: u64,
}

/// The Tahoe planner: profiling database, model and DRAM state.
#[derive(Debug)]
pub struct Planner {
    cfg: PlanConfig,
    db: ProfileDb,
    model: HybridModel,
    dram: Residency,
    profiling: HashMap<TaskType, u64>,
    stats: PlanStats,
}

impl Planner {
    /// A planner for `dram_pages` of DRAM.
    pub fn new(cfg: PlanConfig, model: HybridModel, dram_pages: usize) -> Self {
        Planner {
            cfg,
            db: ProfileDb::new(),
            model,
            dram: Residency::new(dram_pages, crate::residency::FIFO_ENTRIES),
            profiling: HashMap::new(),
            stats: PlanStats::default(),
        }
    }

    /// Counters so far.
    pub fn stats(&self) -> PlanStats {
        self.stats
    }

    /// The profiling database.
    pub fn db(&self) -> &ProfileDb {
        &self.db
    }

    /// DRAM state.
    pub fn dram(&self) -> &Residency {
        &self.dram
    }

    /// Profiling only (placement off): picks representatives, returns
    /// `Profile`, `Wait`, or `Place` with no batches for a known type.
    pub fn observe(&mut self, head: &Task) -> Decision {
        let ty = head.task_type();
        if self.db.get(head).is_none() {
            if self.profiling.contains_key(&ty) {
                return Decision::Wait;
            }
            self.profiling.insert(ty, head.id);
            self.stats.profiled += 1;
            return Decision::Profile;
        }
        Decision::Place {
            batches: Vec::new(),
            predicted_ns: 0.0,
        }
    }

    /// Decides for `head` with `ready` the queue behind it (FIFO order)
    /// and `active` the tasks now running (their pages are guarded).
    pub fn decide(&mut self, head: &Task, ready: &[Task], active: &[Task]) -> Decision {
        self.stats.decisions += 1;
        match self.observe(head) {
            Decision::Place { .. } => {}
            d => return d,
        }
        let ty = head.task_type();
        let page = self.cfg.page;
        // Co-runners: the head plus the next known-type ready tasks.
        let mut group: Vec<(&Task, &TypeProfile)> = Vec::new();
        for t in std::iter::once(head).chain(ready.iter()) {
            if group.len() >= self.cfg.corun.max(1) {
                break;
            }
            if let Some(p) = self.db.get(t) {
                group.push((t, p));
            }
        }
        let mut guard = PageSet::default();
        for t in active.iter().chain(group.iter().map(|g| g.0)) {
            guard.extend(t.footprint(page));
        }
        // Hot pages per co-runner, not yet resident.
        let mut hot: Vec<Vec<(u64, f64)>> = Vec::new();
        let mut base_slow: Vec<f64> = Vec::new();
        for (t, p) in &group {
            let v = p.rebase(t, page).unwrap_or_default();
            base_slow.push(
                v.iter()
                    .filter(|(pg, _)| !self.dram.contains(*pg))
                    .map(|x| x.1)
                    .sum(),
            );
            hot.push(
                v.into_iter()
                    .filter(|(pg, _)| !self.dram.contains(*pg))
                    .collect(),
            );
        }
        let avail = self.dram.free() + self.dram.evictable(&guard);
        let want: usize = hot.iter().map(Vec::len).sum();
        let avail = avail.min(want);
        let unit = avail.div_ceil(self.cfg.max_units.max(1)).max(1);
        let cap_units = avail / unit;
        let same_type = group.iter().all(|g| g.0.task_type() == ty);
        let units = if same_type {
            split_even(group.len(), cap_units)
        } else {
            let curves: Vec<Vec<f64>> = group
                .iter()
                .zip(&hot)
                .zip(&base_slow)
                .map(|(((_, p), h), &slow0)| {
                    let n = h.len().div_ceil(unit);
                    let mut slow = slow0;
                    let mut c = vec![self.model.t_partial(p, slow)];
                    for u in 0..n {
                        for x in h.iter().skip(u * unit).take(unit) {
                            slow -= x.1;
                        }
                        c.push(self.model.t_partial(p, slow));
                    }
                    c
                })
                .collect();
            split_dp(&curves, cap_units).units
        };
        // Evict, then promote, head first.
        let mut batches = Vec::new();
        let mut promote: Vec<(u64, Vec<u64>)> = Vec::new();
        let mut dedup = PageSet::default();
        for (((t, _), h), &u) in group.iter().zip(&hot).zip(&units) {
            let pages: Vec<u64> = h
                .iter()
                .map(|x| x.0)
                .filter(|p| dedup.insert(*p))
                .take(u * unit)
                .collect();
            promote.push((t.id, pages));
        }
        let need: usize = promote.iter().map(|p| p.1.len()).sum();
        let ev = self.dram.evict_for(need, &guard);
        if !ev.is_empty() {
            self.stats.evicted += ev.len() as u64;
            batches.push(Batch {
                task: 0,
                pages: ev,
                to_dram: false,
            });
        }
        let mut predicted_ns = 0.0;
        for (i, (id, mut pages)) in promote.into_iter().enumerate() {
            let room = self.dram.free();
            pages.truncate(room);
            self.dram.admit(&pages);
            if i == 0 {
                let (t, p) = group[0];
                let slow: f64 = p
                    .rebase(t, page)
                    .unwrap_or_default()
                    .iter()
                    .filter(|(pg, _)| !self.dram.contains(*pg))
                    .map(|x| x.1)
                    .sum();
                predicted_ns = self.model.t_partial(p, slow);
            }
            if !pages.is_empty() {
                self.stats.promoted += pages.len() as u64;
                self.stats.batches += 1;
                batches.push(Batch {
                    task: id,
                    pages,
                    to_dram: true,
                });
            }
        }
        if batches.first().is_some_and(|b| !b.to_dram) {
            self.stats.batches += 1;
        }
        Decision::Place {
            batches,
            predicted_ns,
        }
    }

    /// A promotion failed in the shell: forget those pages.
    pub fn failed(&mut self, pages: &[u64]) {
        self.dram.release(pages);
    }

    /// `task` finished after `ns`. A representative's profile is stored
    /// (`samples`: per-page counts if a sampler ran, else uniform); every
    /// task's DRAM pages join the FIFO.
    pub fn completed(&mut self, task: &Task, ns: f64, samples: Option<&[(u64, f64)]>) {
        let ty = task.task_type();
        if self.profiling.get(&ty) == Some(&task.id) {
            self.profiling.remove(&ty);
            let page = self.cfg.page;
            let prof = match samples {
                Some(s) => TypeProfile::from_samples(task, s, page, ns, None)
                    .unwrap_or_else(|_| TypeProfile::uniform(task, page, ns, None)),
                None => TypeProfile::uniform(task, page, ns, None),
            };
            self.db.insert(ty, prof);
        }
        if self.dram.used() > 0 {
            self.dram.executed(&task.footprint(self.cfg.page));
        }
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
