//! Sense and report: the observation the policies see each window (built
//! from the sensors and the managed threads), the scheduler samples
//! placement needs, and the status document of `memtamer ctl status`.

use super::{Daemon, SchedSample};
use memtamer_core::{CpuObs, JobObs, Observation, Policy, ThreadObs};
use std::collections::BTreeMap;
use std::time::Instant;

/// At most this many placement threads in the status document (PM I/O
/// threads first, then pinned ones; the document is read every second).
const PLACEMENT_SHOWN: usize = 32;

impl Daemon {
    /// The sensors' window mapped onto the configured jobs: fills `self.obs`,
    /// reusing its thread and job lists.
    pub(super) fn observe(&mut self) {
        let mut raw = self.sensors.observe();
        if self.obs_stale {
            self.obs = self.skeleton();
            self.obs_stale = false;
            self.obs_shape += 1;
            self.obs_reported.clear();
        }
        let obs = &mut self.obs;
        for i in self.obs_reported.drain(..) {
            if let Some(t) = obs.threads.get_mut(i) {
                t.pm = None;
                t.dram = None;
                t.gate_wait_ns = None;
            }
        }
        // sources name the process in `job`: keep only managed threads
        for t in raw.threads.drain(..) {
            let Ok(i) = obs.threads.binary_search_by_key(&t.tid, |x| x.tid) else {
                continue;
            };
            let Some(tr) = self.threads.get(&(t.tid as i32)) else {
                continue;
            };
            if tr.key.pid as u32 != t.job {
                continue;
            }
            let e = &mut obs.threads[i];
            let was_clear = e.pm.is_none() && e.dram.is_none() && e.gate_wait_ns.is_none();
            e.pm = match (e.pm.take(), t.pm) {
                (Some(mut a), Some(b)) => {
                    a.add(&b);
                    Some(a)
                }
                (a, b) => a.or(b),
            };
            e.dram = e.dram.take().or(t.dram);
            e.gate_wait_ns = e.gate_wait_ns.or(t.gate_wait_ns);
            // listed once, when it first carries something this window
            if was_clear && (e.pm.is_some() || e.dram.is_some() || e.gate_wait_ns.is_some()) {
                self.obs_reported.push(i);
            }
        }
        let end_ns = self.started.elapsed().as_nanos() as u64;
        obs.start_ns = end_ns.saturating_sub(raw.duration_ns);
        obs.duration_ns = raw.duration_ns;
        obs.channels = raw.channels;
        obs.dimms = raw.dimms;
        obs.gate = raw.gate;
    }

    /// The parts of an observation that change only on a rescan or an
    /// affinity change: threads (sorted by tid), jobs, CPUs.
    pub(super) fn skeleton(&self) -> Observation {
        let threads = self
            .threads
            .iter()
            .map(|(&tid, tr)| {
                let s = self.sched.get(&tid);
                ThreadObs {
                    tid: tid as u32,
                    job: tr.job as u32,
                    allowed: tr.allowed,
                    cpu: s.map(|s| s.cpu),
                    cpu_util: s.and_then(|s| s.util),
                    ..Default::default()
                }
            })
            .collect();
        let jobs = self
            .cfg
            .jobs
            .iter()
            .enumerate()
            .map(|(i, j)| JobObs {
                id: i as u32,
                name: j.name.clone(),
                class: j.class,
                threads: self
                    .threads
                    .iter()
                    .filter(|(_, t)| t.job == i)
                    .map(|(&tid, _)| tid as u32)
                    .collect(),
                work_units: None,
                latency_ns: None,
            })
            // a job with no process now is absent, so policies free its budget
            .filter(|j| !j.threads.is_empty())
            .collect();
        Observation {
            threads,
            jobs,
            cpus: self
                .online
                .iter()
                .map(|c| CpuObs {
                    cpu: c as u32,
                    utilization: None,
                })
                .collect(),
            ..Default::default()
        }
    }

    /// Reads every managed thread's CPU and CPU time (placement's inputs).
    pub(super) fn sample_sched(&mut self) {
        let now = Instant::now();
        self.last_sched = Some(now);
        // SAFETY: sysconf has no memory-safety preconditions
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        let hz = if hz > 0 { hz as f64 } else { 100.0 };
        let mut next = BTreeMap::new();
        for (&tid, tr) in &self.threads {
            let Ok(now_s) = self.procfs.thread_sched(tr.key.pid, tid) else {
                continue;
            };
            let util = self.sched.get(&tid).and_then(|prev| {
                let secs = now.duration_since(prev.at).as_secs_f64();
                (secs > 0.0).then(|| {
                    let used = match (now_s.run_ns, prev.run_ns) {
                        (Some(a), Some(b)) => a.saturating_sub(b) as f64 / 1e9,
                        _ => now_s.cpu_ticks.saturating_sub(prev.ticks) as f64 / hz,
                    };
                    (used / secs).clamp(0.0, 1.0)
                })
            });
            next.insert(
                tid,
                SchedSample {
                    cpu: now_s.cpu,
                    ticks: now_s.cpu_ticks,
                    run_ns: now_s.run_ns,
                    at: now,
                    util,
                },
            );
        }
        self.sched = next;
    }

    pub(super) fn publish(&self) {
        let jobs: Vec<serde_json::Value> = self
            .cfg
            .jobs
            .iter()
            .enumerate()
            .map(|(i, j)| {
                let pids: Vec<i32> = self
                    .managed
                    .iter()
                    .filter(|(_, k)| *k == i)
                    .map(|(p, _)| p.pid)
                    .collect();
                let threads = self.threads.values().filter(|t| t.job == i).count();
                let budget = self.policy.budgets().get(&(i as u32));
                serde_json::json!({
                    "name": j.name,
                    "class": j.class,
                    "pids": pids,
                    "threads": threads,
                    "cpus": budget.map(|b| b.cpus.to_string()),
                    "duty_cycle": budget.map(|b| b.duty_cycle),
                    "pods_in_place": self.pod_cgroups.get(&i).map(|p| p.len()),
                })
            })
            .collect();
        let isolation = self.policy.isolation().map(|i| {
            serde_json::json!({
                "policy": Policy::name(i),
                "state": format!("{:?}", i.state()),
                "write_amplification": i.write_amplification(),
            })
        });
        let core_spec = self
            .policy
            .concurrency()
            .map(|c| serde_json::json!({ "pm_group_threads": c.pm_group_size() }));
        // the API server's view of the node's pods (selection by label)
        let kubernetes = self.node_pods.as_ref().and_then(|n| n.view()).map(|v| {
            serde_json::json!({
                "pods": v.pods.len(),
                "good_polls": v.good_polls,
                "failing_for": v.failing_for,
                "last_error": v.last_error,
                "rejected": v.rejected.iter().map(|e| e.to_string()).collect::<Vec<_>>(),
            })
        });
        // placement's view: the PM I/O threads and the threads it pinned
        // (what an operator asks about), with the loads the plan compared
        let placement = self.policy.has_placement().then(|| {
            let all = self.policy.placed_threads();
            let shown: Vec<serde_json::Value> = all
                .iter()
                .filter(|t| t.pm_io || t.pinned.is_some())
                .take(PLACEMENT_SHOWN)
                .map(|t| {
                    let job = self
                        .threads
                        .get(&(t.tid as i32))
                        .and_then(|tr| self.cfg.jobs.get(tr.job))
                        .map(|j| j.name.clone());
                    serde_json::json!({
                        "tid": t.tid,
                        "job": job,
                        "pinned": t.pinned,
                        "write": t.write,
                        "read": t.read,
                        "cpu_load": t.cpu_load,
                        "pm_io": t.pm_io,
                        "rests_ms": t.rests_ms,
                    })
                })
                .collect();
            serde_json::json!({ "tracked": all.len(), "threads": shown })
        });
        let doc = serde_json::json!({
            "pid": std::process::id(),
            "uptime_s": self.started.elapsed().as_secs_f64(),
            "period_us": self.cfg.daemon.period_us,
            "dry_run": self.cfg.daemon.dry_run,
            "policy": self.policy.name(),
            "sources": self.sensors.status,
            "jobs": jobs,
            "isolation": isolation,
            "core_spec": core_spec,
            "placement": placement,
            "kubernetes": kubernetes,
            "journal": {
                "path": self.journal.path(),
                "pending": self.journal.pending().len(),
            },
            "loop": self.stats,
            "last_decisions": self.shown,
        });
        self.published.publish(doc.to_string());
    }
}
