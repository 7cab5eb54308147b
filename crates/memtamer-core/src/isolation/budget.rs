//! The knob the isolation controllers turn: the CPU budget of each BE job
//! (Dicio §4.2, after Caladan): throttling takes a core from a BE job (the
//! one whose CPU costs the PM most), relaxing gives one back (to the one
//! whose CPU costs it least), below one core a job is duty-cycled.

use super::*;

/// One BE job's budget as the controller tracks it.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct BeJob {
    /// CPUs owned by the job, in the order they were granted.
    cpus: Vec<u32>,
    /// Fraction of time it may run when it holds one core (duty mode), else 1.
    duty: f64,
    /// Whether it is in Dicio's duty-cycle mode.
    duty_mode: bool,
    /// Times (ns) it was throttled from one core to none.
    flips: VecDeque<u64>,
    /// Threads in the job (more cores than threads are useless).
    threads: usize,
    /// Estimated PM media bytes/s of the job while it runs on exactly one
    /// full core (sizes the duty cycle of Dicio's special case).
    one_core_estimate: f64,
    /// Smoothed estimated PM media bytes/s per unit of CPU share while it
    /// runs: what one more core of this job costs the PM (0 until attributed).
    intensity: f64,
    /// Whether any of its threads carried PM attribution this window.
    attributed: bool,
    /// Estimated media bytes of the window being attributed.
    window_bytes: f64,
    /// Last budget emitted, to emit only changes.
    emitted: Option<(CpuSet, u64)>,
}

impl BeJob {
    pub(super) fn share(&self) -> f64 {
        if self.cpus.is_empty() {
            0.0
        } else if self.duty_mode {
            self.duty
        } else {
            self.cpus.len() as f64
        }
    }
}

impl Isolation {
    pub(super) fn init_pool(&mut self, obs: &Observation) -> Vec<u32> {
        if let Some(p) = self.pool.take() {
            return p;
        }
        // the CPUs the BE jobs were given to begin with (so an operator's
        // exclusions, e.g. the SMT siblings of LC cores, hold), less LC's
        let class_of = |job: u32| obs.jobs.iter().find(|j| j.id == job).map(|j| j.class);
        let (mut lc_cpus, mut be_cpus) = (CpuSet::empty(), CpuSet::empty());
        for t in &obs.threads {
            let set = match class_of(t.job) {
                Some(JobClass::Lc) => &mut lc_cpus,
                Some(JobClass::Be) => &mut be_cpus,
                _ => continue,
            };
            for c in t.allowed.iter() {
                set.insert(c);
            }
        }
        obs.cpus
            .iter()
            .map(|c| c.cpu)
            .filter(|&c| be_cpus.is_empty() || be_cpus.contains(c as usize))
            .filter(|&c| !lc_cpus.contains(c as usize))
            .collect()
    }

    /// Tracks BE jobs appearing and leaving; new jobs get an even share of
    /// the free CPUs (at least one when one is free).
    pub(super) fn sync_jobs(&mut self, obs: &Observation, pool: &[u32]) {
        // the common case, every window: the same BE jobs as before
        let mut be = 0;
        let mut same = true;
        for j in obs.jobs.iter().filter(|j| j.class == JobClass::Be) {
            be += 1;
            match self.jobs.get_mut(&j.id) {
                Some(job) => job.threads = j.threads.len().max(1),
                None => {
                    same = false;
                    break;
                }
            }
        }
        if same && be == self.jobs.len() {
            return;
        }
        let present: Vec<(JobId, usize)> = obs
            .jobs
            .iter()
            .filter(|j| j.class == JobClass::Be)
            .map(|j| (j.id, j.threads.len().max(1)))
            .collect();
        self.jobs
            .retain(|id, _| present.iter().any(|(p, _)| p == id));
        let new: Vec<(JobId, usize)> = present
            .iter()
            .copied()
            .filter(|(id, _)| !self.jobs.contains_key(id))
            .collect();
        for (id, threads) in &present {
            if let Some(j) = self.jobs.get_mut(id) {
                j.threads = *threads;
            }
        }
        if new.is_empty() {
            return;
        }
        let free = self.free_cpus(pool);
        let each = (free.len() / new.len()).max(1);
        let mut next = free.into_iter();
        for (id, threads) in new {
            let mut cpus: Vec<u32> = next.by_ref().take(each.min(threads)).collect();
            if cpus.is_empty() {
                // more BE jobs than pool CPUs: share rather than start stopped
                cpus.extend(self.least_shared_cpu(pool));
            }
            self.jobs.insert(
                id,
                BeJob {
                    cpus,
                    duty: 1.0,
                    duty_mode: false,
                    flips: VecDeque::new(),
                    threads,
                    one_core_estimate: 0.0,
                    intensity: 0.0,
                    attributed: false,
                    window_bytes: 0.0,
                    emitted: None,
                },
            );
        }
    }

    /// The pool CPU the fewest BE jobs hold (first in pool order on ties).
    pub(super) fn least_shared_cpu(&self, pool: &[u32]) -> Option<u32> {
        pool.iter()
            .copied()
            .min_by_key(|c| self.jobs.values().filter(|j| j.cpus.contains(c)).count())
    }

    pub(super) fn free_cpus(&self, pool: &[u32]) -> Vec<u32> {
        pool.iter()
            .copied()
            .filter(|c| !self.jobs.values().any(|j| j.cpus.contains(c)))
            .collect()
    }

    /// Per-job attribution: estimated media bytes/s from each BE job's
    /// request-level PM traffic (writes amplified by the recent WA). Returns
    /// the PM write bytes of every thread that reports PM traffic, if any
    /// does (the same pass: a fast loop walks the threads once). Only the
    /// threads `reporting` lists are looked at, all when it is `None`.
    pub(super) fn attribute(
        &mut self,
        obs: &Observation,
        reporting: Option<&[usize]>,
        secs: f64,
    ) -> Option<f64> {
        for j in self.jobs.values_mut() {
            j.attributed = false;
            j.window_bytes = 0.0;
        }
        let wa = self.write_amplification;
        let mut known = false;
        let mut thread_writes = 0.0;
        let hints = crate::policy::Hints {
            shape: None,
            reporting,
        };
        for t in hints.reporting_threads(obs) {
            if let Some(pm) = &t.pm {
                known = true;
                thread_writes += pm.write_bytes as f64;
                if let Some(j) = self.jobs.get_mut(&t.job) {
                    j.attributed = true;
                    j.window_bytes += pm.write_bytes as f64 * wa + pm.read_bytes as f64;
                }
            }
        }
        for j in self.jobs.values_mut() {
            if j.attributed {
                let now = j.window_bytes / secs;
                let share = j.share();
                if share > 0.0 {
                    // EMA over ~8 windows: enough to rank jobs, quick to
                    // follow phases
                    let per_core = now / share;
                    j.intensity = if j.intensity == 0.0 {
                        per_core
                    } else {
                        0.875 * j.intensity + 0.125 * per_core
                    };
                }
                if j.cpus.len() == 1 && !j.duty_mode {
                    j.one_core_estimate = if j.one_core_estimate == 0.0 {
                        now
                    } else {
                        0.5 * j.one_core_estimate + 0.5 * now
                    };
                }
            }
        }
        known.then_some(thread_writes)
    }

    /// Throttle: the running BE job whose CPU costs the PM most (estimated
    /// media bytes/s per core; with no attribution, the job holding the most
    /// CPU) loses a core or part of its duty cycle.
    pub(super) fn throttle(&mut self, now: u64, reasons: &mut Vec<String>, why: &str) {
        let attributed = self.jobs.values().any(|j| j.attributed);
        let target = self
            .jobs
            .iter()
            .filter(|(_, j)| j.share() > 0.0)
            .max_by(|(ia, a), (ib, b)| {
                let ka = if attributed { a.intensity } else { a.share() };
                let kb = if attributed { b.intensity } else { b.share() };
                ka.total_cmp(&kb).then(ib.cmp(ia))
            })
            .map(|(&id, _)| id);
        let Some(id) = target else {
            return;
        };
        let kind = self.kind;
        let p = self.params.clone();
        let Some(j) = self.jobs.get_mut(&id) else {
            return;
        };
        if j.duty_mode {
            j.duty *= 0.5;
            if j.duty < p.min_duty {
                j.cpus.clear();
                j.duty = p.min_duty;
            }
            reasons.push(format!(
                "throttle job {id}: duty cycle {:.2} ({why})",
                j.duty
            ));
        } else if j.cpus.len() > 1 {
            j.cpus.pop();
            reasons.push(format!("throttle job {id}: {} cores ({why})", j.cpus.len()));
        } else {
            let last = j.cpus.pop();
            j.flips.push_back(now);
            while j
                .flips
                .front()
                .is_some_and(|&t| now.saturating_sub(t) > p.oscillation_window_ns)
            {
                j.flips.pop_front();
            }
            reasons.push(format!("throttle job {id}: stopped ({why})"));
            if kind == IsolationKind::Dicio && j.flips.len() >= p.oscillation_flips {
                // §4.3 special case: one thread saturates PM; give it x of a
                // core, x from its estimated media use against T_mediawrite
                let one_core = j.one_core_estimate / 1e9;
                j.cpus.extend(last);
                j.duty = if one_core > 0.0 {
                    (p.media_write_gbps * 0.9 / one_core).clamp(p.min_duty, 0.95)
                } else {
                    0.5
                };
                j.duty_mode = true;
                j.flips.clear();
                reasons.push(format!(
                    "job {id} oscillates between 1 and 0 cores: duty cycle {:.2}",
                    j.duty
                ));
            }
        }
        self.state = ControlState::Throttling;
    }

    /// Relax: the BE job whose CPU costs the PM least (lowest media bytes/s
    /// per core, so jobs without PM traffic first; the one holding the least
    /// CPU on ties, and always without attribution) gets a core, or more duty
    /// cycle: the mirror of [`Isolation::throttle`]. Relaxing the job holding
    /// the least CPU instead hands the heaviest writer back the core it just
    /// lost, and under lasting contention the light jobs pay for it
    /// (docs/control.md). When no CPU is free, the job holding the most
    /// cores gives one up if it has two more than the target.
    pub(super) fn relax(&mut self, pool: &[u32], reasons: &mut Vec<String>, why: &str) -> bool {
        let target = self
            .jobs
            .iter()
            .filter(|(_, j)| j.duty_mode || j.cpus.len() < j.threads)
            .min_by(|(ia, a), (ib, b)| {
                a.intensity
                    .total_cmp(&b.intensity)
                    .then(a.share().total_cmp(&b.share()))
                    .then(ia.cmp(ib))
            })
            .map(|(&id, _)| id);
        let Some(id) = target else {
            return false;
        };
        let free = self.free_cpus(pool);
        let self_least = self.least_shared_cpu(pool);
        if let Some(j) = self.jobs.get_mut(&id) {
            if j.duty_mode {
                if j.cpus.is_empty() {
                    match free.first().copied().or(self_least) {
                        Some(c) => j.cpus.push(c),
                        None => return false,
                    }
                }
                j.duty = (j.duty * 1.25).min(1.0);
                if j.duty >= 1.0 {
                    j.duty_mode = false;
                    j.duty = 1.0;
                }
                reasons.push(format!("relax job {id}: duty cycle {:.2} ({why})", j.duty));
                self.state = ControlState::Relaxing;
                return true;
            }
        }
        let cpu = match free.first() {
            Some(&c) => Some(c),
            None => {
                let target_len = self.jobs.get(&id).map_or(0, |j| j.cpus.len());
                let donor = self
                    .jobs
                    .iter()
                    .filter(|(&d, j)| d != id && j.cpus.len() > target_len + 1)
                    .max_by_key(|(&d, j)| (j.cpus.len(), std::cmp::Reverse(d)))
                    .map(|(&d, _)| d);
                donor
                    .and_then(|d| self.jobs.get_mut(&d).and_then(|j| j.cpus.pop()))
                    // more BE jobs than pool CPUs: a job with none shares one
                    .or_else(|| {
                        if target_len == 0 {
                            self.least_shared_cpu(pool)
                        } else {
                            None
                        }
                    })
            }
        };
        let Some(cpu) = cpu else {
            return false;
        };
        if let Some(j) = self.jobs.get_mut(&id) {
            j.cpus.push(cpu);
            reasons.push(format!("relax job {id}: {} cores ({why})", j.cpus.len()));
        }
        self.state = ControlState::Relaxing;
        true
    }

    /// Budgets that changed since the last emission.
    pub(super) fn emit(&mut self, pool: &[u32], d: &mut Decision) {
        for (&id, j) in self.jobs.iter_mut() {
            let mut cpus = CpuSet::empty();
            for &c in &j.cpus {
                cpus.insert(c as usize);
            }
            let duty = if j.cpus.is_empty() {
                0.0
            } else if j.duty_mode {
                j.duty
            } else {
                1.0
            };
            if cpus.is_empty() {
                // stopped: keep it where it was, at duty 0
                cpus = j
                    .emitted
                    .map(|(s, _)| s)
                    .filter(|s| !s.is_empty())
                    .unwrap_or_else(|| {
                        pool.first()
                            .map_or(CpuSet::empty(), |&c| CpuSet::single(c as usize))
                    });
                if cpus.len() > 1 {
                    let first = cpus.iter().next().unwrap_or(0);
                    cpus = CpuSet::single(first);
                }
            }
            let key = (cpus, duty.to_bits());
            if j.emitted != Some(key) {
                j.emitted = Some(key);
                d.job_budgets.push((
                    id,
                    CoreBudget {
                        cpus,
                        duty_cycle: duty,
                    },
                ));
            }
        }
    }
}
