//! The engine's port to a policy: each window it builds an
//! [`Observation`] from the components' counters (media counters only as of
//! the last delayed snapshot) and applies the policy's [`Decision`] as the
//! simulator's [`Actuators`], reporting what it ignored.

use super::pmdimm::DimmCounters;
use super::ChannelCounters;
use super::{diff_stats, Engine};
use crate::workload::{Ps, NS};
use memtamer_core::AccessStats;
use memtamer_core::{
    Actuators, ApplyReport, ChannelObs, CpuObs, Decision, DimmObs, GateLimit, GateObs, JobObs,
    Knob, Observation, ThreadObs,
};

/// What the policy port keeps between windows: counters as of the last
/// observation (an observation reports differences) and the delayed media
/// counter snapshots (ACPI: `pm.media_counter_delay_ms`).
#[derive(Default)]
pub(super) struct PortState {
    /// Per thread: PM, DRAM, gate wait, run time.
    pub(super) last_obs_threads: Vec<(AccessStats, AccessStats, Ps, Ps)>,
    /// Per channel.
    pub(super) last_obs_channels: Vec<ChannelCounters>,
    /// Per CPU, busy time.
    pub(super) last_obs_cpu_busy: Vec<Ps>,
    /// Per job, work units.
    pub(super) last_obs_units: Vec<u64>,
    /// The last media counter snapshot, per DIMM.
    pub(super) media_snap: Vec<DimmCounters>,
    /// The one before it.
    pub(super) media_snap_prev: Vec<DimmCounters>,
    /// When the last snapshot was taken.
    pub(super) media_snap_time: Ps,
    /// When the one before it was taken.
    pub(super) media_snap_prev_time: Ps,
    /// Delay between snapshots.
    pub(super) media_delay: Ps,
}

impl Engine {
    #[inline(never)] // cold: keeps the event loop's frame small
    pub(super) fn observe(&mut self) -> Observation {
        let now = self.now;
        let mut threads = Vec::with_capacity(self.threads.len());
        for (i, th) in self.threads.iter().enumerate() {
            let (pm0, dram0, gw0, rt0) = self.port.last_obs_threads[i];
            let rt = th.run_time + if th.on_cpu { now - th.run_since } else { 0 };
            threads.push(ThreadObs {
                tid: i as u32,
                job: th.job,
                cpu: Some(th.cpu),
                allowed: th.allowed,
                pm: Some(diff_stats(&th.pm, &pm0)),
                dram: Some(diff_stats(&th.dram, &dram0)),
                cpu_util: Some((rt - rt0) as f64 / self.window as f64),
                gate_wait_ns: Some((th.gate_wait - gw0) / NS),
            });
            self.port.last_obs_threads[i] = (th.pm, th.dram, th.gate_wait, rt);
        }
        let mut jobs = Vec::new();
        for j in 0..self.job_names.len() {
            let units: u64 = self.job_threads[j]
                .iter()
                .map(|&t| self.threads[t as usize].units)
                .sum();
            jobs.push(JobObs {
                id: j as u32,
                name: self.job_names[j].clone(),
                class: self.job_class[j],
                threads: self.job_threads[j].clone(),
                work_units: Some((units - self.port.last_obs_units[j]) as f64),
                latency_ns: {
                    let h = std::mem::take(&mut self.job_window_latency[j]);
                    match (h.quantile(0.5), h.quantile(0.99), h.quantile(0.999)) {
                        (Some(a), Some(b), Some(c)) => Some([a as f64, b as f64, c as f64]),
                        _ => None,
                    }
                },
            });
            self.port.last_obs_units[j] = units;
        }
        let now_ch = self.channel_counters_now();
        let channels = now_ch
            .iter()
            .enumerate()
            .map(|(i, k)| {
                let b = self.port.last_obs_channels[i];
                ChannelObs {
                    socket: self.channels[i].socket,
                    channel: i as u32,
                    cas_reads: Some(k.cas_reads - b.cas_reads),
                    cas_writes: Some(k.cas_writes - b.cas_writes),
                    pmm_rpq_occupancy: Some(k.pmm_rpq_occupancy - b.pmm_rpq_occupancy),
                    pmm_rpq_inserts: Some(k.pmm_rpq_inserts - b.pmm_rpq_inserts),
                    pmm_wpq_occupancy: Some(k.pmm_wpq_occupancy - b.pmm_wpq_occupancy),
                    pmm_wpq_inserts: Some(k.pmm_wpq_inserts - b.pmm_wpq_inserts),
                }
            })
            .collect();
        self.port.last_obs_channels = now_ch;
        // media counters: only the last completed (delayed) snapshot is visible
        let dimms = (0..self.dimms.len())
            .map(|d| {
                let have = self.port.media_snap_time > 0;
                let a = self.port.media_snap.get(d).copied().unwrap_or_default();
                let b = self
                    .port
                    .media_snap_prev
                    .get(d)
                    .copied()
                    .unwrap_or_default();
                DimmObs {
                    dimm: d as u32,
                    media_read_bytes: have.then(|| a.media_read_bytes - b.media_read_bytes),
                    media_write_bytes: have.then(|| a.media_write_bytes - b.media_write_bytes),
                    interval_ns: have
                        .then(|| (self.port.media_snap_time - self.port.media_snap_prev_time) / NS),
                    age_ns: have.then(|| (now - self.port.media_snap_time) / NS),
                }
            })
            .collect();
        let cpus = (0..self.cpus.len())
            .map(|c| {
                let cpu = &self.cpus[c];
                let busy = cpu.busy
                    + if cpu.current.is_some() {
                        now - cpu.busy_since
                    } else {
                        0
                    };
                let u = (busy - self.port.last_obs_cpu_busy[c]) as f64 / self.window as f64;
                self.port.last_obs_cpu_busy[c] = busy;
                CpuObs {
                    cpu: c as u32,
                    utilization: Some(u.min(1.0)),
                }
            })
            .collect();
        Observation {
            start_ns: (now.saturating_sub(self.window)) / NS,
            duration_ns: self.window / NS,
            threads,
            jobs,
            channels,
            dimms,
            cpus,
            gate: Some(GateObs {
                limit: self.gate.limit(),
                admitted: self.gate.admitted(),
                waiting: self.gate.waiting(),
            }),
        }
    }
}

/// The simulated machine owns every knob of a decision: the PATS gate's
/// limit, per-job CPU sets and duty cycles, per-thread affinity and
/// migrations. What it ignores is what names a thread, job or CPU that does
/// not exist, or a migration outside a thread's allowed set.
impl Actuators for Engine {
    #[inline(never)] // cold: keeps the event loop's frame small
    fn apply(&mut self, d: &Decision) -> ApplyReport {
        let mut report = ApplyReport::default();
        if let Some(limit) = d.gate_limit {
            self.gate.set_limit(match limit {
                GateLimit::Unlimited => None,
                GateLimit::Limit(n) => Some(n),
            });
            self.gate_release();
            report.applied(Knob::GateLimit, 1);
        }
        // a job's budget first; per-thread affinities (placement, core
        // specialization) then narrow it, as the composed policy computed
        for (job, budget) in &d.job_budgets {
            let Some(ts) = self.job_threads.get(*job as usize).cloned() else {
                report.ignored(Knob::JobBudgets, 1, format!("no job {job}"));
                continue;
            };
            let mut cpus_ok = true;
            for t in ts {
                cpus_ok &= self.set_affinity(t, budget.cpus).is_ok();
            }
            self.set_duty(*job, budget.duty_cycle);
            if cpus_ok {
                report.applied(Knob::JobBudgets, 1);
            } else {
                report.ignored(
                    Knob::JobBudgets,
                    1,
                    format!("job {job}: none of its CPUs exists (duty cycle applied)"),
                );
            }
        }
        for (tid, set) in &d.thread_cpus {
            match self.set_affinity(*tid, *set) {
                Ok(()) => report.applied(Knob::ThreadCpus, 1),
                Err(why) => report.ignored(Knob::ThreadCpus, 1, format!("thread {tid}: {why}")),
            }
        }
        for m in &d.migrations {
            match self.migrate(m.tid, m.to_cpu) {
                Ok(()) => report.applied(Knob::Migrations, 1),
                Err(why) => report.ignored(
                    Knob::Migrations,
                    1,
                    format!("thread {} to CPU {}: {why}", m.tid, m.to_cpu),
                ),
            }
        }
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{JobSpec, Scenario, WorkloadSpec};
    use crate::engine::EngineConfig;
    use crate::experiment::load_platform;
    use memtamer_core::{CoreBudget, CpuSet, Migration};

    /// Two threads of one compute job on `ahn` (2 sockets x 16 cores x 2).
    fn engine() -> Engine {
        let p = load_platform("ahn", &Default::default()).unwrap();
        let job = JobSpec {
            name: "c".into(),
            class: Default::default(),
            threads: 2,
            cpus: Some("0-3".into()),
            start_cpus: None,
            group: None,
            workload: WorkloadSpec::Cpu {
                compute_ns: Some(100.0),
                mem_lines: None,
                pattern: None,
                profile: None,
                region: "dram".into(),
            },
        };
        let s = Scenario::with_jobs("t", "ahn", vec![job]);
        let cfg = EngineConfig::for_tests();
        Engine::new(&p, &s, &cfg).unwrap()
    }

    #[test]
    fn the_engine_applies_every_knob_and_reports_what_names_nothing() {
        let mut e = engine();
        let d = Decision {
            gate_limit: Some(GateLimit::Limit(0)),
            thread_cpus: vec![
                (0, CpuSet::parse_list("2").unwrap()),
                (7, CpuSet::first_n(1)),
            ],
            job_budgets: vec![(
                0,
                CoreBudget {
                    cpus: CpuSet::parse_list("0-3").unwrap(),
                    duty_cycle: 1.0,
                },
            )],
            migrations: vec![
                Migration { tid: 1, to_cpu: 3 },
                Migration { tid: 1, to_cpu: 9 },
            ],
            reasons: vec![],
        };
        let r = Actuators::apply(&mut e, &d);
        // a gate limit is at least 1
        assert_eq!(e.gate.limit(), Some(1));
        assert_eq!(r.applied_count(Knob::GateLimit), 1);
        assert_eq!(r.applied_count(Knob::JobBudgets), 1);
        // thread 7 does not exist
        assert_eq!(r.applied_count(Knob::ThreadCpus), 1);
        assert_eq!(r.ignored_count(Knob::ThreadCpus), 1);
        assert_eq!(e.threads[0].cpu, 2);
        // CPU 9 is outside thread 1's allowed set (0-3)
        assert_eq!(r.applied_count(Knob::Migrations), 1);
        assert_eq!(r.ignored_count(Knob::Migrations), 1);
        assert_eq!(e.threads[1].cpu, 3);
        assert!(!r.is_complete());
        assert!(r.ignored.iter().any(|i| i.reason.contains("thread 7")));
    }
}
