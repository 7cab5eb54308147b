//! Co-running flush jobs (thesis §6.5.4, "Heavily loaded system"): the
//! flush jobs of a scenario marked `coordinated` share one four-point search
//! over the sum of their flushed bytes, and the system-wide flusher count is
//! split between them by their throughput over the last window, with the
//! runtime's own pure code (`memtamer_ribbon::corun::Coordinator`). Without
//! it each Ribbon job runs its own search (`FlushJob::controller`).

use std::time::Duration;

use memtamer_ribbon::controller::ControlConfig;
use memtamer_ribbon::corun::{Coordinator, Registrant};

use super::Engine;
use crate::workload::{Ps, NS};

/// The coordinated flush jobs and their shared search.
pub(super) struct CorunSim {
    /// The search's settings: P4 = the coordinated jobs' hardware threads
    /// together (the machine they share), probe and T of the first job.
    cfg: ControlConfig,
    /// Hardware threads the coordinated jobs may use together.
    available: f64,
    /// Flush job indices, in the order they were added (the first steps the
    /// search on its tick).
    jobs: Vec<u32>,
    coordinator: Option<Coordinator>,
    /// The last plan's system-wide count, its M_i per job of `jobs`, and
    /// the proactive switch.
    total: usize,
    flushers: Vec<usize>,
    proactive: bool,
}

impl CorunSim {
    /// An empty group whose search probes `probe` per point and samples
    /// every `interval` in the steady state.
    pub(super) fn new(probe: Ps, interval: Ps) -> CorunSim {
        let mut cfg = ControlConfig::thesis(0);
        cfg.probe = Duration::from_nanos(probe / NS);
        cfg.interval = Duration::from_nanos(interval / NS);
        CorunSim {
            cfg,
            available: 0.0,
            jobs: Vec::new(),
            coordinator: None,
            total: 0,
            flushers: Vec::new(),
            proactive: false,
        }
    }

    /// Adds flush job `job` with `cores` hardware threads (its P4) of which
    /// `available` are free.
    pub(super) fn add(&mut self, job: u32, cores: usize, available: usize) {
        self.jobs.push(job);
        self.cfg.cores += cores;
        self.available += available as f64;
    }

    /// Whether flush job `j` is coordinated.
    pub(super) fn has(&self, j: u32) -> bool {
        self.jobs.contains(&j)
    }
}

impl Engine {
    /// What flush job `j`'s tick sets: its flusher count and proactive
    /// switch, from its own controller or, for a coordinated job, from the
    /// shared search (stepped on the first coordinated job's tick). None:
    /// the job has no controller.
    pub(super) fn flush_decide(&mut self, j: u32) -> Option<(usize, bool)> {
        let now = self.now;
        let u = self.flush.as_mut()?;
        let Some(co) = u.corun.as_mut().filter(|c| c.has(j)) else {
            let job = u.jobs.get_mut(j as usize)?;
            let c = job.controller.as_mut()?;
            let before = c.searches();
            let d = c.observe(
                Duration::from_nanos(now / NS),
                job.flushed_bytes,
                job.app.len(),
                job.available,
            );
            job.stats.searches += c.searches() - before;
            if let Some(rec) = c.last_search() {
                match job.searches.last_mut() {
                    Some(last) if last.number == rec.number => {
                        if last != rec {
                            last.clone_from(rec);
                        }
                    }
                    _ => job.searches.push(rec.clone()),
                }
            }
            return Some((d.flushers, d.proactive));
        };
        let k = co.jobs.iter().position(|&x| x == j)?;
        if k == 0 {
            let at = Duration::from_nanos(now / NS);
            let regs: Vec<Registrant> = co
                .jobs
                .iter()
                .filter_map(|&x| u.jobs.get(x as usize).map(|fj| (x, fj)))
                .map(|(x, fj)| Registrant {
                    id: u64::from(x) + 1,
                    bytes: fj.flushed_bytes,
                    app_threads: fj.app.len(),
                    max_flushers: fj.flushers.len(),
                })
                .collect();
            let cfg = co.cfg.clone();
            let c = co
                .coordinator
                .get_or_insert_with(|| Coordinator::new(cfg, at, true));
            let before = c.searches();
            let plan = c.step(at, &regs, None, co.available);
            let searches = c.searches() - before;
            co.total = plan.total;
            co.flushers = plan.flushers;
            co.proactive = plan.proactive;
            if let Some(job) = u.jobs.get_mut(j as usize) {
                job.stats.searches += searches;
            }
        }
        let m = co.flushers.get(k).copied()?;
        Some((m, co.proactive))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Scenario;
    use crate::engine::EngineConfig;
    use crate::experiment::load_platform;

    /// Two flush jobs of 4 threads on halves of the thesis socket (12 cores
    /// with their SMT siblings each), Ribbon, coordinated or not.
    fn engine(coordinated: bool) -> Engine {
        let p = load_platform("thesis", &Default::default()).unwrap();
        let w = format!(
            "{{ kind = \"flush\", pattern = \"pmemkv\", mode = \"ribbon\", probe_us = 100.0, interval_us = 1000.0, coordinated = {coordinated} }}"
        );
        let text = format!(
            "name = \"t\"\ntitle = \"t\"\nplatform = \"thesis\"\nduration_ms = 1.0\n\
             [[job]]\nname = \"a\"\nthreads = 4\ncpus = \"0-11,24-35\"\nworkload = {w}\n\
             [[job]]\nname = \"b\"\nthreads = 4\ncpus = \"12-23,36-47\"\nworkload = {w}\n"
        );
        let s = Scenario::parse("t", &text).unwrap();
        Engine::new(&p, &s, &EngineConfig::for_tests()).unwrap()
    }

    /// Steps both jobs' decisions every 10 us for 40 ms of simulated time,
    /// job a flushing three times as many bytes as b; returns the decisions
    /// and the coordinated group's total of each step.
    fn drive(e: &mut Engine) -> Vec<(usize, usize, usize)> {
        let mut out = Vec::new();
        for _ in 0..4000 {
            e.now += 10_000 * NS;
            if let Some(u) = e.flush.as_mut() {
                u.jobs[0].flushed_bytes += 3 * 64 * 100;
                u.jobs[1].flushed_bytes += 64 * 100;
            }
            let a = e.flush_decide(0).expect("a decides").0;
            let b = e.flush_decide(1).expect("b decides").0;
            let total = e
                .flush
                .as_ref()
                .and_then(|u| u.corun.as_ref())
                .map_or(0, |c| c.total);
            out.push((a, b, total));
        }
        out
    }

    #[test]
    fn coordinated_jobs_split_one_system_wide_count_by_throughput() {
        let mut e = engine(true);
        let steps = drive(&mut e);
        for (i, &(a, b, total)) in steps.iter().enumerate() {
            assert_eq!(a + b, total, "step {i}");
            assert!(a >= 1 && b >= 1, "step {i}: {a} {b}");
        }
        // 3:1 throughput, within one flusher, once windows were measured
        let &(a, _, total) = steps.last().expect("steps");
        assert!(
            (a as f64 - 0.75 * total as f64).abs() <= 1.0,
            "{a} of {total}"
        );
        // P4 of the shared search is the two jobs' 48 hardware threads
        let cfg = &e
            .flush
            .as_ref()
            .and_then(|u| u.corun.as_ref())
            .expect("corun")
            .cfg;
        assert_eq!(cfg.cores, 48);
    }

    #[test]
    fn independent_jobs_each_run_their_own_search() {
        let mut e = engine(false);
        assert!(e.flush.as_ref().is_some_and(|u| u.corun.is_none()));
        let steps = drive(&mut e);
        // each starts its own search at its own P1 = 4: 8 flushers together
        assert_eq!((steps[0].0, steps[0].1), (4, 4));
    }

    #[test]
    fn coordinated_needs_ribbon() {
        let text = "name = \"t\"\ntitle = \"t\"\nplatform = \"thesis\"\nduration_ms = 1.0\n\
             [[job]]\nname = \"a\"\nthreads = 4\n\
             workload = { kind = \"flush\", pattern = \"pmemkv\", mode = \"eager\", coordinated = true }\n";
        let e = Scenario::parse("t", text).map(|_| ()).expect_err("refused");
        assert!(format!("{e}").contains("coordinated"), "{e}");
    }
}
