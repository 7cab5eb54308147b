//! Building a flush workload's Ribbon part: its flush job, its flusher and
//! proactive threads (simulated threads of the same job, on the job's
//! CPUs), and the controller's ticks.

use super::cpu::{Thread, ThreadStart};
use super::flush::{FlushJob, FlushJobSpec, FlushRole, FlushUnit};
use super::flush_corun::CorunSim;
use super::{Engine, EvKind};
use crate::config::{FlushMode, JobSpec, Platform, WorkloadSpec};
use crate::rng::Rng;
use crate::workload::{Generator, Ps, NS};
use memtamer_core::CpuSet;
use memtamer_ribbon::placement::{flusher_order, helper_cpus, HwThread};

/// Where a job's threads go (the engine's round-robin placement).
pub(super) struct Placement<'a> {
    /// CPUs the job may use.
    pub(super) allowed: CpuSet,
    /// CPUs its threads start on, round-robin, when `fixed`.
    pub(super) list: &'a [u32],
    /// Threads start on `list` (else on the machine-wide round-robin).
    pub(super) fixed: bool,
    /// Logical CPUs of the machine.
    pub(super) ncpus: u32,
    /// The run's seed.
    pub(super) seed: u64,
}

fn ps(ns_val: f64) -> Ps {
    (ns_val * NS as f64).round().max(0.0) as Ps
}

impl Engine {
    /// Makes job `j` (a flush workload whose application threads exist) a
    /// flush job: flusher threads (P4 for Ribbon, M when fixed) and a
    /// proactive thread if asked for.
    pub(super) fn add_flush_job(
        &mut self,
        p: &Platform,
        j: usize,
        job: &JobSpec,
        place: &Placement,
        next_cpu: &mut u32,
    ) -> Result<(), String> {
        let WorkloadSpec::Flush {
            mode,
            flushers,
            proactive,
            sample_period,
            cores,
            probe_us,
            interval_us,
            coordinated,
            inline_when_dedicated,
            interior_probes,
            ..
        } = &job.workload
        else {
            return Ok(());
        };
        if self.flush.is_none() {
            let need = |what: &str| {
                format!(
                    "job {}: a flush workload needs cpu.{what} in platform {} (see docs/ribbon.md)",
                    job.name, p.name
                )
            };
            let llc = p.cpu.llc_bytes.ok_or_else(|| need("llc_bytes"))?;
            let clean = p.cpu.clwb_clean_ns.ok_or_else(|| need("clwb_clean_ns"))?;
            self.flush = Some(FlushUnit::new(llc, ps(clean)));
        }
        let app = self.job_threads[j].clone();
        let ncpus_job = place
            .allowed
            .iter()
            .filter(|&c| c < place.ncpus as usize)
            .count();
        let spec = FlushJobSpec {
            scenario_job: j,
            mode: *mode,
            fixed: *flushers,
            proactive: *proactive,
            sample_period: *sample_period,
            cores: if *cores == 0 {
                ncpus_job
            } else {
                *cores as usize
            },
            probe: ps(probe_us * 1e3),
            interval: ps(interval_us * 1e3),
            available: ncpus_job,
            inline_when_dedicated: *inline_when_dedicated,
            interior_probes: *interior_probes,
            trace_search: self.trace_search,
        };
        let fi = self.flush.as_ref().map_or(0, |u| u.jobs.len()) as u32;
        let mut fj = FlushJob::new(&spec, app.clone());
        for (q, &tid) in app.iter().enumerate() {
            let th = &mut self.threads[tid as usize];
            th.flush_role = FlushRole::App {
                job: fi,
                queue: q as u32,
            };
            // the PATS gate limits threads that flush themselves
            th.gated = *mode == FlushMode::Eager;
        }
        // pinned jobs: flusher f pinned, as the runtime's `pin::plan` pins
        // it, to the f-th hardware thread of the runtime's order (idle
        // cores of the application's socket, their siblings, then the
        // application cores' siblings) and kept there; the proactive
        // thread pinned to the last idle hardware thread of that order
        // (`placement::helper_cpus`: apart from the flushers, thesis
        // §6.3.2's "two independent groups"). The control thread is no
        // simulated thread here (its ticks are events that take no CPU),
        // so only the proactive thread has a place to take. `busy` is the
        // application threads' CPUs when they start, the snapshot the
        // runtime takes when each registers its queue.
        let (hw, busy) = self.helper_hw(place, &app);
        let order = flusher_order(&hw, &busy);
        let mut index = app.len();
        for f in 0..FlushJob::flusher_threads(&spec) {
            let cpu = order.get(f % order.len().max(1)).copied();
            let tid = self.spawn_helper(
                j,
                place,
                (index, cpu, true),
                next_cpu,
                FlushRole::Flusher {
                    job: fi,
                    index: f as u32,
                },
            );
            index += 1;
            fj.add_flusher(tid);
            if let Some(c) = cpu {
                fj.pins.push((tid, c));
            }
        }
        if *proactive {
            let cpu = helper_cpus(&hw, &busy).proactive;
            let tid = self.spawn_helper(
                j,
                place,
                (index, cpu, true),
                next_cpu,
                FlushRole::Proactive { job: fi },
            );
            fj.proactive_tid = Some(tid);
            if let Some(c) = cpu {
                fj.pins.push((tid, c));
            }
        }
        if let Some(u) = self.flush.as_mut() {
            u.jobs.push(fj);
            if *coordinated {
                u.corun
                    .get_or_insert_with(|| CorunSim::new(spec.probe, spec.interval))
                    .add(fi, spec.cores, spec.available);
            }
        }
        Ok(())
    }

    /// A pinned job's hardware threads (its CPU list) and the CPUs its
    /// application threads run on, for `memtamer_ribbon::placement`'s
    /// `flusher_order` and `helper_cpus`; both empty when the job is not
    /// pinned (its helpers then take the machine-wide round-robin).
    fn helper_hw(&self, place: &Placement, app: &[u32]) -> (Vec<HwThread>, Vec<u32>) {
        if !place.fixed || place.list.is_empty() {
            return (Vec::new(), Vec::new());
        }
        let hw: Vec<HwThread> = place
            .list
            .iter()
            .filter_map(|&cpu| {
                let core = self.cpus.get(cpu as usize)?.core;
                let socket = self.cores.get(core as usize)?.socket;
                Some(HwThread { cpu, core, socket })
            })
            .collect();
        let busy: Vec<u32> = app
            .iter()
            .filter_map(|&t| self.threads.get(t as usize).map(|th| th.cpu))
            .collect();
        (hw, busy)
    }

    /// A flusher or proactive thread of job `j`: the `at.0`-th thread of
    /// the job, on CPU `at.1` when the job is pinned, and kept there (its
    /// allowed set that one CPU, as `sched_setaffinity` keeps the runtime's)
    /// when `at.2`; else (no idle CPU: the runtime leaves the thread on the
    /// process's mask) it may move within the job's CPUs when it wakes.
    fn spawn_helper(
        &mut self,
        j: usize,
        place: &Placement,
        at: (usize, Option<u32>, bool),
        next_cpu: &mut u32,
        role: FlushRole,
    ) -> u32 {
        let tid = self.threads.len() as u32;
        let (index, pinned, keep) = at;
        let cpu = if let Some(c) = pinned {
            c
        } else if place.fixed && !place.list.is_empty() {
            place.list[index % place.list.len()]
        } else {
            let c = *next_cpu % place.ncpus.max(1);
            *next_cpu += 1;
            c
        };
        self.threads.push(Thread::new(ThreadStart {
            job: j as u32,
            gen: Generator::flush_agent(),
            rng: Rng::new(place.seed, tid as u64 + 1),
            cpu,
            allowed: match pinned {
                Some(c) if keep => CpuSet::single(c as usize),
                _ => place.allowed,
            },
            gated: false,
            arrival_mean_ps: 0.0,
            flush_role: role,
        }));
        self.job_threads[j].push(tid);
        tid
    }

    /// The first controller tick of every Ribbon flush job.
    pub(super) fn start_flush_ticks(&mut self) {
        let ticks: Vec<(u32, Ps)> = self.flush.as_ref().map_or(Vec::new(), |u| {
            u.jobs
                .iter()
                .enumerate()
                .filter(|(_, j)| j.has_controller())
                .map(|(i, j)| (i as u32, j.tick))
                .collect()
        });
        for (j, t) in ticks {
            self.push(t, EvKind::FlushTick(j));
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::config::Scenario;
    use crate::engine::EngineConfig;
    use crate::experiment::load_platform;

    /// A pinned Ribbon job of `n` application threads on the thesis socket
    /// (24 cores x 2), with proactive flushing.
    pub(crate) fn engine(n: u32) -> Engine {
        let p = load_platform("thesis", &Default::default()).unwrap();
        let text = format!(
            "name = \"t\"\ntitle = \"t\"\nplatform = \"thesis\"\nduration_ms = 1.0\n\
             [[job]]\nname = \"app\"\nthreads = {n}\ncpus = \"0-47\"\n\
             workload = {{ kind = \"flush\", pattern = \"pmemkv\", mode = \"ribbon\", proactive = true }}\n"
        );
        let s = Scenario::parse("t", &text).unwrap();
        let cfg = EngineConfig::for_tests();
        Engine::new(&p, &s, &cfg).unwrap()
    }

    fn role_cpus(e: &Engine, want: impl Fn(FlushRole) -> bool) -> Vec<(u32, CpuSet)> {
        e.threads
            .iter()
            .filter(|t| want(t.flush_role))
            .map(|t| (t.cpu, t.allowed))
            .collect()
    }

    #[test]
    fn the_proactive_thread_is_pinned_to_the_last_idle_core_thread_not_beside_flusher_0() {
        for (n, want) in [(4u32, 47u32), (24, 47)] {
            let e = engine(n);
            let pro = role_cpus(&e, |r| matches!(r, FlushRole::Proactive { .. }));
            assert_eq!(pro, vec![(want, CpuSet::single(want as usize))], "N = {n}");
            let fl = role_cpus(&e, |r| matches!(r, FlushRole::Flusher { .. }));
            // flusher 0 takes the order's first CPU (N = 4: idle core 4;
            // N = 24: sibling 24), the proactive thread another one
            assert_eq!(fl[0].0, if n == 4 { 4 } else { 24 }, "N = {n}");
            assert_ne!(fl[0].0, want);
        }
    }

    #[test]
    fn each_flusher_is_kept_on_its_cpu_of_the_runtime_order() {
        // N = 4 on 0-3: the order is idle cores 4..23, their siblings
        // 28..47, then the application's siblings 24..27 (docs/notebook/ribbon.md,
        // "Where the control and proactive threads run"); flusher f gets
        // order[f] and only that CPU, as `pin::plan` + `sched_setaffinity`
        // give the runtime's flusher f
        let e = engine(4);
        let fl = role_cpus(&e, |r| matches!(r, FlushRole::Flusher { .. }));
        let order: Vec<u32> = (4..24).chain(28..48).chain(24..28).collect();
        assert_eq!(fl.len(), 48, "P4 = the job's 48 CPUs");
        for (f, (cpu, allowed)) in fl.iter().enumerate() {
            let want = order[f % order.len()];
            assert_eq!(*cpu, want, "flusher {f}");
            assert_eq!(*allowed, CpuSet::single(want as usize), "flusher {f}");
        }
    }
}
