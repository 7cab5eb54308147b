//! The daemon's Linux actuation as an [`Actuators`]: every knob of a
//! [`Decision`] has an owner here (SYSTEM.md: one owner per knob), and what
//! is not carried out is reported, counted in the loop statistics and
//! logged once per reason, never dropped silently:
//!
//! * `gate_limit`: written to the shared gate named by `[gate]`
//!   ([`memtamer_gate::GateActuator`]);
//! * `thread_cpus`: per-thread affinity, journaled first;
//! * `job_budgets`: BE budgets through the duty cycler or a cgroup per job;
//! * `migrations`: the thread is moved now by narrowing its affinity to the
//!   target CPU and widening it back (the kernel moves a thread off CPUs it
//!   may no longer use, and leaves it where it is when the set widens).

use super::Daemon;
use memtamer_actuate::affinity;
use memtamer_actuate::cgroup::ManagedCgroup;
use memtamer_actuate::journal::Change;
use memtamer_core::{Actuators, ApplyReport, CpuSet, Decision, JobClass, Knob};
use memtamer_gate::GateActuator;
use std::time::Duration;

/// `daemon.dry_run`: decide and log, act on nothing.
pub const DRY_RUN: &str = "dry run";
/// A system call or journal write failed (thread gone, permission).
pub const FAILED: &str = "failed (thread or process gone, or no permission)";
/// No `[gate]` section: the daemon owns no gate.
pub const NO_GATE: &str = "no [gate] section names a gate";
/// The decision names a thread the daemon does not manage (or that exited).
pub const NOT_MANAGED: &str = "thread not managed (or exited)";
/// The thread belongs to a job of class `unmanaged`.
pub const UNMANAGED_JOB: &str = "thread of an unmanaged job";
/// Budgets are for BE jobs only.
pub const NOT_BE: &str = "budget for a job that is not BE";
/// Duty cycles need the duty cycler (not started with isolation off).
pub const NO_DUTY: &str = "no duty cycler (isolation off)";
/// A migration to a CPU the thread may not use.
pub const OUTSIDE_AFFINITY: &str = "target CPU outside the thread's affinity";

impl Actuators for Daemon {
    fn apply(&mut self, d: &Decision) -> ApplyReport {
        let mut r = ApplyReport::default();
        if self.cfg.daemon.dry_run {
            for knob in Knob::ALL {
                r.ignore_knob(d, knob, DRY_RUN);
            }
            return r;
        }
        self.apply_gate_limit(d, &mut r);
        // a cgroup's cpuset resets its tasks' affinity: budgets go first there,
        // and the per-thread narrowing after
        let cgroup = self.cgroup_layout.is_some();
        if cgroup {
            self.act_budgets_cgroup(d, &mut r);
        }
        self.act_thread_cpus(d, &mut r);
        if !cgroup {
            self.act_budgets_duty(d, &mut r);
        }
        self.act_migrations(d, &mut r);
        r
    }
}

impl Daemon {
    /// Folds a report into the loop statistics and logs each new reason for
    /// ignoring a knob once.
    pub(super) fn account(&mut self, r: &ApplyReport) {
        self.stats.actions += r.applied.iter().map(|(_, n)| *n as u64).sum::<u64>();
        for i in &r.ignored {
            if i.reason == FAILED {
                self.stats.failed_actions += i.count as u64;
            }
            let key = format!("{}: {}", i.knob.name(), i.reason);
            let n = self.stats.ignored.entry(key).or_insert(0);
            if *n == 0 && i.reason != DRY_RUN {
                eprintln!(
                    "memtamer: {} not applied: {} (counted in status: loop.ignored)",
                    i.knob.name(),
                    i.reason
                );
            }
            *n += i.count as u64;
        }
    }

    fn apply_gate_limit(&mut self, d: &Decision, r: &mut ApplyReport) {
        if d.gate_limit.is_none() {
            return;
        }
        match &self.gate {
            Some(gate) => r.merge(GateActuator(gate).apply(&Decision {
                gate_limit: d.gate_limit,
                ..Default::default()
            })),
            None => r.ignore_knob(d, Knob::GateLimit, NO_GATE),
        }
    }

    /// The managed, not-unmanaged thread `tid`, or why not.
    fn actionable(&self, tid: i32) -> Result<(), &'static str> {
        let tr = self.threads.get(&tid).ok_or(NOT_MANAGED)?;
        // never touch a thread of an unmanaged job
        if self.cfg.jobs.get(tr.job).map(|j| j.class) == Some(JobClass::Unmanaged) {
            return Err(UNMANAGED_JOB);
        }
        Ok(())
    }

    /// Journals thread `tid`'s original affinity before it is changed.
    fn journal_affinity(&self, tid: i32) -> bool {
        let Some(tr) = self.threads.get(&tid) else {
            return false;
        };
        let change = Change::ThreadAffinity {
            pid: tr.key.pid,
            tid,
            start_time: tr.key.start_time,
            original: tr.original,
        };
        self.journal.record(change).is_ok()
    }

    fn act_thread_cpus(&mut self, d: &Decision, r: &mut ApplyReport) {
        for (tid, set) in &d.thread_cpus {
            let tid = *tid as i32;
            if let Err(why) = self.actionable(tid) {
                r.ignored(Knob::ThreadCpus, 1, why);
                continue;
            }
            if !self.journal_affinity(tid) {
                r.ignored(Knob::ThreadCpus, 1, FAILED);
                continue;
            }
            match affinity::set_thread_affinity(tid, set) {
                Ok(()) => {
                    if let Some(tr) = self.threads.get_mut(&tid) {
                        tr.allowed = *set;
                    }
                    r.applied(Knob::ThreadCpus, 1);
                    self.obs_stale = true;
                }
                Err(_) => r.ignored(Knob::ThreadCpus, 1, FAILED),
            }
        }
    }

    /// Moves each thread to its target CPU now: affinity narrowed to that
    /// CPU (the kernel migrates it), then widened back to what it was.
    fn act_migrations(&mut self, d: &Decision, r: &mut ApplyReport) {
        for m in &d.migrations {
            let tid = m.tid as i32;
            if let Err(why) = self.actionable(tid) {
                r.ignored(Knob::Migrations, 1, why);
                continue;
            }
            let Some(allowed) = self.threads.get(&tid).map(|t| t.allowed) else {
                continue;
            };
            if !allowed.contains(m.to_cpu as usize) {
                r.ignored(Knob::Migrations, 1, OUTSIDE_AFFINITY);
                continue;
            }
            let mut to = CpuSet::empty();
            to.insert(m.to_cpu as usize);
            let moved = self.journal_affinity(tid)
                && affinity::set_thread_affinity(tid, &to).is_ok()
                && affinity::set_thread_affinity(tid, &allowed).is_ok();
            if moved {
                r.applied(Knob::Migrations, 1);
            } else {
                r.ignored(Knob::Migrations, 1, FAILED);
            }
        }
    }

    /// The decision's budgets for BE jobs (a policy never budgets anything
    /// else, but the daemon does not rely on it); the rest is reported.
    fn be_budgets(
        &self,
        d: &Decision,
        r: &mut ApplyReport,
    ) -> Vec<(usize, memtamer_core::CoreBudget)> {
        let mut out = Vec::new();
        for (job, b) in &d.job_budgets {
            let job = *job as usize;
            if self.cfg.jobs.get(job).map(|j| j.class) == Some(JobClass::Be) {
                out.push((job, *b));
            } else {
                r.ignored(Knob::JobBudgets, 1, NOT_BE);
            }
        }
        out
    }

    /// Budgets through the duty cycler (the CPUs come with the per-thread
    /// affinities the composed policy emitted).
    fn act_budgets_duty(&mut self, d: &Decision, r: &mut ApplyReport) {
        for (job, budget) in self.be_budgets(d, r) {
            let (Some(duty), Some(jc)) = (&self.duty, self.cfg.jobs.get(job)) else {
                r.ignored(Knob::JobBudgets, 1, NO_DUTY);
                continue;
            };
            let want = budget.duty_cycle;
            let res = if want >= 1.0 {
                duty.clear(&jc.name)
            } else {
                duty.set(&jc.name, self.job_processes(job), want)
                    .map(|_| ())
            };
            match res {
                Ok(()) => {
                    self.duties.insert(job, want);
                    r.applied(Knob::JobBudgets, 1);
                }
                Err(_) => r.ignored(Knob::JobBudgets, 1, FAILED),
            }
        }
    }

    /// Budgets through a cgroup per BE job: cpuset for the cores, CFS quota
    /// for a duty cycle, the freezer for a stopped job.
    fn act_budgets_cgroup(&mut self, d: &Decision, r: &mut ApplyReport) {
        for (job, budget) in self.be_budgets(d, r) {
            // a pod's processes stay in the kubelet's cgroups
            if self
                .cfg
                .jobs
                .get(job)
                .is_some_and(|j| j.matcher.selects_pods())
            {
                self.act_budget_in_place(job, &budget, r);
                continue;
            }
            if let Err(()) = self.ensure_cgroup(job) {
                r.ignored(Knob::JobBudgets, 1, FAILED);
                continue;
            }
            let Some(cg) = self.cgroups.get(&job) else {
                r.ignored(Knob::JobBudgets, 1, FAILED);
                continue;
            };
            let period = Duration::from_micros(self.cfg.isolation.duty_period_us.max(1000));
            let mut res = cg.set_cpus(&budget.cpus);
            if budget.duty_cycle <= 0.0 {
                res = res.and_then(|()| cg.freeze());
            } else {
                if cg.is_frozen().unwrap_or(false) {
                    res = res.and_then(|()| cg.thaw());
                }
                let cores = (budget.duty_cycle < 1.0)
                    .then(|| budget.duty_cycle * budget.cpus.len().max(1) as f64);
                res = res.and_then(|()| cg.set_cpu_quota(cores, period));
            }
            match res {
                Ok(()) => {
                    r.applied(Knob::JobBudgets, 1);
                    self.duties.insert(job, budget.duty_cycle);
                }
                Err(_) => r.ignored(Knob::JobBudgets, 1, FAILED),
            }
            // a cpuset change resets its tasks' affinity: read it back
            for (&tid, tr) in self.threads.iter_mut().filter(|(_, t)| t.job == job) {
                if let Ok(now) = affinity::thread_affinity(tid) {
                    tr.allowed = now;
                }
            }
            self.obs_stale = true;
        }
    }

    /// Creates job `job`'s cgroup if needed and moves in every managed
    /// process of the job not yet in it.
    pub(super) fn ensure_cgroup(&mut self, job: usize) -> Result<(), ()> {
        let (Some(layout), Some(jc)) = (&self.cgroup_layout, self.cfg.jobs.get(job)) else {
            return Err(());
        };
        if !self.cgroups.contains_key(&job) {
            let cg =
                ManagedCgroup::create(layout, &jc.name, self.journal.clone()).map_err(|_| ())?;
            self.cgroups.insert(job, cg);
        }
        let members = self.job_processes(job);
        let Some(cg) = self.cgroups.get(&job) else {
            return Err(());
        };
        for k in members {
            if !self.cgroup_members.contains(&k) && cg.add_process(k).is_ok() {
                self.cgroup_members.insert(k);
            }
        }
        Ok(())
    }
}
