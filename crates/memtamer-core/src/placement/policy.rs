//! Ahn's planner as a [`Policy`]: the per-thread Eq. 1 state, the period,
//! pins, holds, releases and the residency clock (split from `placement.rs`).

use std::collections::BTreeMap;

use serde::Serialize;

use super::{is_pm_load, plan, Move, PlacementParams, Task, LINE_BYTES};
use crate::pm_load::PmLoad;
use crate::topology::Topology;
use crate::{CpuSet, Decision, Observation, Policy, ThreadId};

/// One thread as the policy sees it, for `memtamer status`: an operator who
/// asks "why did it move my thread" needs the loads the plan compared.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct PlacedThread {
    /// Thread id.
    pub tid: ThreadId,
    /// The CPU this policy pinned it to (moved or held), if any.
    pub pinned: Option<u32>,
    /// Smoothed PM write load (Ahn Eq. 1, per cycle the thread ran).
    pub write: f64,
    /// Smoothed PM read load (Ahn Eq. 1).
    pub read: f64,
    /// Mean CPU use over the last period, in [0, 1] (1.0 until measured).
    pub cpu_load: f64,
    /// Whether the plan counts it as a PM I/O task (`pm_task_min_load`).
    pub pm_io: bool,
    /// Residency left before the plan may move, hold or release it again, ms
    /// (0: rested).
    pub rests_ms: u64,
}

/// What the policy remembers about a thread.
#[derive(Clone, Debug, Default)]
struct Tracked {
    load: PmLoad,
    /// CPU use since the last run: sum of utilization x window, and the
    /// windows' total length (a per-window figure is 0 or 1 under time
    /// slicing; the mean over the period is what Linux's load tracking sees).
    busy_ns: f64,
    measured_ns: f64,
    /// Wall time observed since the last run (for threads without a CPU
    /// figure: assumed running throughout).
    seen_ns: f64,
    /// PM line reads and writes since the last run.
    reads: u64,
    writes: u64,
    /// Mean CPU use over the last period (1.0 until measured).
    cpu_load: f64,
    /// The mask it had when first seen: the user's.
    user_mask: CpuSet,
    /// The CPU this policy pinned it to, if any.
    pinned: Option<u32>,
    /// End of the period of the last move, hold or release: the start of
    /// its residency time.
    last_move_ns: Option<u64>,
}

/// Ahn's placement as a [`Policy`]: every `period_ns` it smooths each
/// thread's PM load (Eq. 1, over the cycles the thread ran in the period),
/// runs [`plan`], and pins each moved thread to its new CPU. Shared by the
/// simulator and the daemon.
pub struct Placement {
    topology: Topology,
    params: PlacementParams,
    tracked: BTreeMap<ThreadId, Tracked>,
    last_run_ns: Option<u64>,
    /// Wall time observed before the first run: the first plan waits for a
    /// full period of counters, as every later one does.
    observed_before_first_ns: u64,
    last_moves: Vec<Move>,
}

impl Placement {
    /// A placement policy over `topology`.
    pub fn new(topology: Topology, params: PlacementParams) -> Placement {
        Placement {
            topology,
            params,
            tracked: BTreeMap::new(),
            last_run_ns: None,
            observed_before_first_ns: 0,
            last_moves: Vec::new(),
        }
    }

    /// The moves of the last run, for status reports and tests.
    pub fn last_moves(&self) -> &[Move] {
        &self.last_moves
    }

    /// The smoothed load of a thread, for status reports and tests.
    pub fn load_of(&self, tid: ThreadId) -> Option<PmLoad> {
        self.tracked.get(&tid).map(|t| t.load)
    }

    /// The parameters.
    pub fn params(&self) -> &PlacementParams {
        &self.params
    }

    /// Every tracked thread as of the last run, PM I/O threads first, then
    /// by write and read load, then by id (a stable order for status).
    pub fn threads(&self) -> Vec<PlacedThread> {
        let now = self.last_run_ns.unwrap_or(0);
        let min = self.params.pm_task_min_load;
        let mut v: Vec<PlacedThread> = self
            .tracked
            .iter()
            .map(|(&tid, tr)| PlacedThread {
                tid,
                pinned: tr.pinned,
                write: tr.load.write,
                read: tr.load.read,
                cpu_load: tr.cpu_load,
                pm_io: is_pm_load(tr.load.read, tr.load.write, min),
                rests_ms: tr.last_move_ns.map_or(0, |l| {
                    (l + self.params.min_residency_ns).saturating_sub(now) / 1_000_000
                }),
            })
            .collect();
        v.sort_by(|a, b| {
            b.pm_io
                .cmp(&a.pm_io)
                .then(b.write.total_cmp(&a.write))
                .then(b.read.total_cmp(&a.read))
                .then(a.tid.cmp(&b.tid))
        });
        v
    }
}

impl Policy for Placement {
    fn name(&self) -> &str {
        "placement"
    }

    fn placed_threads(&self) -> Vec<PlacedThread> {
        self.threads()
    }

    fn decide(&mut self, obs: &Observation) -> Decision {
        let p = &self.params;
        let end = obs.start_ns + obs.duration_ns;
        for t in &obs.threads {
            let tr = self.tracked.entry(t.tid).or_insert_with(|| Tracked {
                user_mask: t.allowed,
                ..Default::default()
            });
            let (r, w) = t.pm.as_ref().map_or((0, 0), |s| {
                (s.read_bytes / LINE_BYTES, s.write_bytes / LINE_BYTES)
            });
            tr.reads += r;
            tr.writes += w;
            tr.seen_ns += obs.duration_ns as f64;
            if let Some(u) = t.cpu_util.filter(|u| u.is_finite()) {
                tr.busy_ns += u.clamp(0.0, 1.0) * obs.duration_ns as f64;
                tr.measured_ns += obs.duration_ns as f64;
            }
        }
        if self.tracked.len() > obs.threads.len() {
            let mut live: Vec<ThreadId> = obs.threads.iter().map(|t| t.tid).collect();
            live.sort_unstable();
            self.tracked.retain(|t, _| live.binary_search(t).is_ok());
        }
        // The first plan, too, needs a full period of counters: a daemon's
        // first window can be a few ms long, and Eq. 1 over it ranks writers
        // by which of them happened to publish in it (a swap that clustered
        // three of four equal writers: flaky `scripts/check-placement`).
        let due = match self.last_run_ns {
            Some(l) => end.saturating_sub(l) >= p.period_ns,
            None => {
                self.observed_before_first_ns = self
                    .observed_before_first_ns
                    .saturating_add(obs.duration_ns);
                self.observed_before_first_ns >= p.period_ns
            }
        };
        if !due {
            return Decision::default();
        }
        self.last_run_ns = Some(end);
        for tr in self.tracked.values_mut() {
            // Ahn Eq. 1 over the period, per cycle the thread RAN (Ahn
            // profiles each task on the core it runs on): a thread waiting
            // for its time slice keeps its load instead of decaying
            let ran_ns = if tr.measured_ns > 0.0 {
                tr.busy_ns / tr.measured_ns * tr.seen_ns
            } else {
                tr.seen_ns
            };
            let cycles = (ran_ns * p.cycles_per_ns).round() as u64;
            tr.load
                .update(tr.reads, tr.writes, cycles, p.ema_k, p.ema_alpha); // Ahn Eq. 1
            tr.cpu_load = if tr.measured_ns > 0.0 {
                tr.busy_ns / tr.measured_ns
            } else {
                1.0
            };
            tr.busy_ns = 0.0;
            tr.measured_ns = 0.0;
            tr.seen_ns = 0.0;
            tr.reads = 0;
            tr.writes = 0;
        }
        let tasks: Vec<Task> = obs
            .threads
            .iter()
            .filter_map(|t| {
                let tr = self.tracked.get(&t.tid)?;
                let ours = tr.pinned.map(|c| CpuSet::single(c as usize));
                let pinned_here = ours.is_some() && Some(t.allowed) == ours;
                // a thread pinned by us is where we put it, whatever an
                // older CPU sample says
                let cpu = if pinned_here { tr.pinned } else { t.cpu }?;
                let mask_ok = t.allowed == tr.user_mask || pinned_here;
                let rested = tr
                    .last_move_ns
                    .is_none_or(|l| end.saturating_sub(l) >= p.min_residency_ns);
                Some(Task {
                    id: t.tid,
                    cpu,
                    read: tr.load.read,
                    write: tr.load.write,
                    cpu_load: tr.cpu_load,
                    allowed: tr.user_mask,
                    movable: mask_ok && rested,
                })
            })
            .collect();
        let moves = plan(&self.topology, &tasks, &self.params);
        let mut d = Decision::default();
        for m in &moves {
            if let Some(tr) = self.tracked.get_mut(&m.id) {
                tr.pinned = Some(m.to);
                tr.last_move_ns = Some(end);
            }
            d.thread_cpus.push((m.id, CpuSet::single(m.to as usize)));
            d.reasons.push(m.describe());
        }
        // Linux's balancer must not undo the placement: a PM I/O thread is
        // held on its CPU even when it did not move. A pinned thread that no
        // longer does PM I/O gets its own mask back once it has rested, so
        // Linux balances its CPU load again. Both start the residency time,
        // as a move does (module doc).
        for t in &tasks {
            if moves.iter().any(|m| m.id == t.id) || !t.movable {
                continue;
            }
            let Some(tr) = self.tracked.get_mut(&t.id) else {
                continue;
            };
            match (t.is_pm(p.pm_task_min_load), tr.pinned) {
                (true, None) if tr.user_mask.contains(t.cpu as usize) => {
                    tr.pinned = Some(t.cpu);
                    tr.last_move_ns = Some(end);
                    d.thread_cpus.push((t.id, CpuSet::single(t.cpu as usize)));
                    d.reasons
                        .push(format!("hold thread {} on cpu {} (pm i/o)", t.id, t.cpu));
                }
                (false, Some(_)) => {
                    tr.pinned = None;
                    tr.last_move_ns = Some(end);
                    d.thread_cpus.push((t.id, tr.user_mask));
                    d.reasons.push(format!(
                        "release thread {} to cpus {} (no pm i/o)",
                        t.id, tr.user_mask
                    ));
                }
                _ => {}
            }
        }
        self.last_moves = moves;
        d
    }
}
