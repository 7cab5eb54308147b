//! PM I/O-aware task placement (Ahn et al., APSys'24, §3.3).
//!
//! Why: an OS balances CPU load but cannot see DAX PM I/O, so it may cluster
//! PM writers on one node (their remote writes then block the other node's
//! WPQ, Ahn Fig. 2a) or put two of them on SMT siblings (wasting the issue
//! slots a CPU-bound sibling could use during their stalls, Ahn Fig. 2b).
//!
//! [`plan`] is the paper's algorithm as a pure function of the topology and
//! each task's smoothed PM read and write load ([`crate::pm_load`], Ahn Eq. 1)
//! and CPU load. Top-down, from the NUMA level to the LLC level to the SMT
//! level, inside each parent group:
//!
//! 1. for the read load, then the write load (which overrides: it runs on
//!    the result of the read pass), find the groups with the largest and the
//!    smallest load sum and their difference Δ;
//! 2. *work swap*: exchange a task of the max group with a lighter task of
//!    the min group if that cuts Δ by more than 10% and the two tasks' CPU
//!    loads differ by at most `imbalance_pct` (17% at NUMA and LLC level, 10%
//!    at SMT level, Linux's defaults); best swap first, repeated;
//! 3. *work push*, when no swap is possible: move a task from the max group
//!    to the min group if that cuts Δ by more than 10% and the two groups'
//!    CPU loads per CPU stay within `imbalance_pct` of the larger;
//! 4. at the SMT level, then pair PM I/O tasks with CPU-bound tasks on
//!    sibling logical CPUs.
//!
//! Tasks move only inside their affinity mask (the user's, remembered from
//! the first observation) and not again within `min_residency_ns` of the
//! last placement decision about them (hysteresis). [`Placement`] wraps this
//! as a [`Policy`]: it keeps the EMA per thread, pins each moved thread to
//! its new CPU and holds PM I/O threads where they are (so that Linux's
//! balancer cannot undo the placement), and gives a pinned thread that
//! stopped PM I/O its own mask back once it has rested.
//!
//! A move, a hold and a release each change the thread's mask, so each
//! starts its residency clock (else a writer held in one period could be
//! moved by the next: flaky `scripts/check-placement`). Ahn has no
//! residency time, only the Eq. 1 EMA against "frequent task migrations"
//! (§3.2); `min_residency_ns` is memtamer's extra guard.

use serde::Serialize;

use crate::pm_load::{AHN_ALPHA, AHN_K};
use crate::topology::Topology;
use crate::{CpuSet, ThreadId};

mod policy;
pub use policy::{PlacedThread, Placement};

/// Bytes per PM operation counted by Ahn's off-core events (one cache line).
const LINE_BYTES: u64 = 64;

/// The knobs of the algorithm. Defaults are the paper's.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PlacementParams {
    /// Allowed CPU imbalance between NUMA nodes, as a fraction (Linux's
    /// `imbalance_pct` 117 for the NUMA and SMP domains: 0.17, Ahn §3.3).
    pub numa_imbalance: f64,
    /// Allowed CPU imbalance between LLC groups (0.17, Ahn §3.3).
    pub llc_imbalance: f64,
    /// Allowed CPU imbalance between SMT cores (Linux's 110: 0.10, Ahn §3.3).
    pub smt_imbalance: f64,
    /// A swap or push must cut Δ by more than this fraction (0.10, Ahn §3.3).
    pub min_delta_cut: f64,
    /// A task whose read + write load (Eq. 1 units) is below this is
    /// CPU-bound for the SMT pairing step. 1.0 is ~23 k PM line operations
    /// per second at 2.3 GHz: far below any real PM I/O task.
    pub pm_task_min_load: f64,
    /// How often the algorithm runs; also Eq. 1's profiling period (PM
    /// operations and run cycles are summed over it).
    pub period_ns: u64,
    /// After a placement decision about a task (a move, a hold on its CPU
    /// or a release to its own mask) the task is left alone at least this
    /// long (hysteresis; memtamer's, not Ahn's: the paper damps migrations
    /// with the Eq. 1 EMA only, §3.2).
    pub min_residency_ns: u64,
    /// At most this many task moves per run (a swap is two).
    pub max_moves_per_run: usize,
    /// EMA weight k (Ahn Eq. 1: 0.5).
    pub ema_k: f64,
    /// EMA scale α (Ahn Eq. 1: 100,000 for a period of 10^6 cycles).
    pub ema_alpha: f64,
    /// Core clock used to turn a window into cycles (Ahn Table 1: Xeon Gold
    /// 5218 at 2.3 GHz).
    pub cycles_per_ns: f64,
}

impl Default for PlacementParams {
    fn default() -> Self {
        PlacementParams {
            numa_imbalance: 0.17,
            llc_imbalance: 0.17,
            smt_imbalance: 0.10,
            min_delta_cut: 0.10,
            pm_task_min_load: 1.0,
            period_ns: 10_000_000,
            min_residency_ns: 100_000_000,
            max_moves_per_run: 64,
            ema_k: AHN_K,
            ema_alpha: AHN_ALPHA,
            cycles_per_ns: 2.3,
        }
    }
}

/// A level of the scheduling-domain tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Between NUMA nodes.
    Numa,
    /// Between LLC groups of one node.
    Llc,
    /// Between SMT cores of one LLC group.
    Smt,
}

/// Which load a move balanced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Metric {
    /// PM read load.
    Read,
    /// PM write load.
    Write,
}

/// How a task moved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MoveKind {
    /// One half of a work swap.
    Swap,
    /// A work push.
    Push,
    /// SMT pairing of a PM I/O task with a CPU-bound task.
    Pair,
}

/// One task as the planner sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Task {
    /// Thread id.
    pub id: ThreadId,
    /// Logical CPU it is on now.
    pub cpu: u32,
    /// PM read load (Ahn Eq. 1).
    pub read: f64,
    /// PM write load (Ahn Eq. 1).
    pub write: f64,
    /// Fraction of a CPU it uses, in [0, 1].
    pub cpu_load: f64,
    /// CPUs it may be placed on (the user's affinity mask).
    pub allowed: CpuSet,
    /// Whether the planner may move it (false: moved recently, or its mask
    /// is being shaped by someone else).
    pub movable: bool,
}

/// One planned task move.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Move {
    /// Thread id.
    pub id: ThreadId,
    /// CPU before.
    pub from: u32,
    /// CPU after.
    pub to: u32,
    /// Level whose balance it serves.
    pub level: Level,
    /// Load it balanced (`None` for SMT pairing).
    pub metric: Option<Metric>,
    /// Swap, push or pair.
    pub kind: MoveKind,
}

/// A load as the planner counts it: a negative or non-finite figure is 0.
fn counted(v: f64) -> f64 {
    if v.is_finite() {
        v.max(0.0)
    } else {
        0.0
    }
}

/// Whether read and write loads make a PM I/O task (else CPU-bound, for SMT
/// pairing and holds); the plan and the status view ask the same question.
fn is_pm_load(read: f64, write: f64, min_load: f64) -> bool {
    counted(read) + counted(write) >= min_load
}

impl Task {
    /// Its read or write load; a negative or non-finite figure counts as 0.
    fn load(&self, m: Metric) -> f64 {
        counted(match m {
            Metric::Read => self.read,
            Metric::Write => self.write,
        })
    }

    /// Whether it is a PM I/O task (else CPU-bound, for SMT pairing and holds).
    fn is_pm(&self, min_load: f64) -> bool {
        is_pm_load(self.read, self.write, min_load)
    }
}

impl Move {
    /// One line for `memtamer status` and reports.
    pub fn describe(&self) -> String {
        let what = match self.metric {
            Some(Metric::Read) => " read load",
            Some(Metric::Write) => " write load",
            None => "",
        };
        format!(
            "{:?} thread {} CPU {} -> {} ({:?}{})",
            self.kind, self.id, self.from, self.to, self.level, what
        )
        .to_lowercase()
    }
}

/// The planner's working state: where every task is now.
struct State<'a> {
    tasks: &'a [Task],
    cpu: Vec<u32>,
    moves: Vec<Move>,
    params: &'a PlacementParams,
}

impl State<'_> {
    fn load(&self, i: usize, m: Metric) -> f64 {
        self.tasks[i].load(m)
    }

    fn cpu_load(&self, i: usize) -> f64 {
        let c = self.tasks[i].cpu_load;
        if c.is_finite() {
            c.clamp(0.0, 1.0)
        } else {
            1.0
        }
    }

    fn is_pm(&self, i: usize) -> bool {
        self.tasks[i].is_pm(self.params.pm_task_min_load)
    }

    fn can_move(&self, i: usize) -> bool {
        self.tasks[i].movable && self.moves.len() < self.params.max_moves_per_run
    }

    fn members(&self, group: &CpuSet) -> Vec<usize> {
        (0..self.tasks.len())
            .filter(|&i| group.contains(self.cpu[i] as usize))
            .collect()
    }

    fn sum(&self, group: &CpuSet, m: Metric) -> f64 {
        self.members(group).iter().map(|&i| self.load(i, m)).sum()
    }

    /// CPU load per CPU of a group.
    fn cpu_density(&self, group: &CpuSet) -> f64 {
        let n = group.len().max(1) as f64;
        self.members(group)
            .iter()
            .map(|&i| self.cpu_load(i))
            .sum::<f64>()
            / n
    }

    fn load_on_cpu(&self, cpu: usize) -> f64 {
        (0..self.tasks.len())
            .filter(|&i| self.cpu[i] as usize == cpu)
            .map(|i| self.cpu_load(i))
            .sum()
    }

    /// Where task `i` would land in `group` when pushed: the least loaded
    /// allowed CPU, then the least loaded core (an idle core beats an idle
    /// sibling), then a core whose tasks are of the other kind (PM next to
    /// CPU-bound), then the lowest id.
    fn landing_cpu(&self, i: usize, group: &CpuSet, topo: &Topology) -> Option<u32> {
        let allowed = self.tasks[i].allowed.intersect(group);
        let pm = self.is_pm(i);
        allowed
            .iter()
            .map(|c| {
                let core = core_of(topo, c as u32).unwrap_or_else(|| CpuSet::single(c));
                let core_load: f64 = core.iter().map(|s| self.load_on_cpu(s)).sum();
                let same_kind = (0..self.tasks.len())
                    .any(|j| j != i && core.contains(self.cpu[j] as usize) && self.is_pm(j) == pm);
                (self.load_on_cpu(c), core_load, same_kind, c)
            })
            .min_by(|a, b| {
                a.0.total_cmp(&b.0)
                    .then(a.1.total_cmp(&b.1))
                    .then(a.2.cmp(&b.2))
                    .then(a.3.cmp(&b.3))
            })
            .map(|(_, _, _, c)| c as u32)
    }

    fn record(&mut self, i: usize, to: u32, level: Level, metric: Option<Metric>, kind: MoveKind) {
        let from = self.cpu[i];
        if from == to {
            return;
        }
        self.cpu[i] = to;
        self.moves.push(Move {
            id: self.tasks[i].id,
            from,
            to,
            level,
            metric,
            kind,
        });
    }

    /// Ahn §3.3 steps 1-3 for one metric among sibling `groups`.
    fn balance(&mut self, topo: &Topology, groups: &[CpuSet], m: Metric, level: Level, pct: f64) {
        if groups.len() < 2 {
            return;
        }
        // every applied move shrinks the sum of squared group loads, so this
        // terminates; the bound is a guard against float corner cases
        for _ in 0..(4 * self.tasks.len() + 16) {
            let sums: Vec<f64> = groups.iter().map(|g| self.sum(g, m)).collect();
            let (Some(hi), Some(lo)) = (argmax(&sums), argmin(&sums)) else {
                return;
            };
            let delta = sums[hi] - sums[lo];
            if hi == lo || delta <= f64::EPSILON {
                return;
            }
            if let Some((a, b)) = self.best_swap(groups[hi], groups[lo], sums[hi], sums[lo], m, pct)
            {
                let (ca, cb) = (self.cpu[a], self.cpu[b]);
                let to_a = if self.tasks[a].allowed.contains(cb as usize) {
                    Some(cb)
                } else {
                    self.landing_cpu(a, &groups[lo], topo)
                };
                let to_b = if self.tasks[b].allowed.contains(ca as usize) {
                    Some(ca)
                } else {
                    self.landing_cpu(b, &groups[hi], topo)
                };
                if let (Some(ta), Some(tb)) = (to_a, to_b) {
                    self.record(a, ta, level, Some(m), MoveKind::Swap);
                    self.record(b, tb, level, Some(m), MoveKind::Swap);
                    continue;
                }
            }
            if let Some((a, to)) = self.best_push(topo, groups[hi], groups[lo], delta, m, pct) {
                self.record(a, to, level, Some(m), MoveKind::Push);
                continue;
            }
            return;
        }
    }

    /// The swap that cuts Δ the most, if one cuts it by more than
    /// `min_delta_cut` with the two tasks' CPU loads within `pct`.
    fn best_swap(
        &self,
        hi: CpuSet,
        lo: CpuSet,
        s_hi: f64,
        s_lo: f64,
        m: Metric,
        pct: f64,
    ) -> Option<(usize, usize)> {
        if self.moves.len() + 2 > self.params.max_moves_per_run {
            return None;
        }
        let delta = s_hi - s_lo;
        let limit = (1.0 - self.params.min_delta_cut) * delta;
        let mut best: Option<(f64, f64, usize, usize)> = None;
        for a in self.members(&hi) {
            let la = self.load(a, m);
            if !self.can_move(a) || la <= 0.0 || self.tasks[a].allowed.intersect(&lo).is_empty() {
                continue;
            }
            for b in self.members(&lo) {
                let lb = self.load(b, m);
                if !self.can_move(b) || lb >= la || self.tasks[b].allowed.intersect(&hi).is_empty()
                {
                    continue;
                }
                let (ca, cb) = (self.cpu_load(a), self.cpu_load(b));
                if (ca - cb).abs() > pct * ca.max(cb) {
                    continue;
                }
                let after = ((s_hi - la + lb) - (s_lo + la - lb)).abs();
                if after >= limit {
                    continue;
                }
                let key = (after, (ca - cb).abs(), a, b);
                if best.is_none_or(|b0| (key.0, key.1) < (b0.0, b0.1)) {
                    best = Some(key);
                }
            }
        }
        best.map(|(_, _, a, b)| (a, b))
    }

    /// The push that cuts Δ the most, if one cuts it by more than
    /// `min_delta_cut` and leaves the groups' CPU loads within `pct`.
    fn best_push(
        &self,
        topo: &Topology,
        hi: CpuSet,
        lo: CpuSet,
        delta: f64,
        m: Metric,
        pct: f64,
    ) -> Option<(usize, u32)> {
        let limit = (1.0 - self.params.min_delta_cut) * delta;
        let (d_hi, d_lo) = (self.cpu_density(&hi), self.cpu_density(&lo));
        let (n_hi, n_lo) = (hi.len().max(1) as f64, lo.len().max(1) as f64);
        let mut best: Option<(f64, usize, u32)> = None;
        for a in self.members(&hi) {
            let la = self.load(a, m);
            if !self.can_move(a) || la <= 0.0 {
                continue;
            }
            let after = (delta - 2.0 * la).abs();
            if after >= limit {
                continue;
            }
            let ca = self.cpu_load(a);
            let (h, l) = (d_hi - ca / n_hi, d_lo + ca / n_lo);
            if (h - l).abs() > pct * h.max(l) + 1e-12 {
                continue;
            }
            let Some(to) = self.landing_cpu(a, &lo, topo) else {
                continue;
            };
            if best.is_none_or(|b| after < b.0) {
                best = Some((after, a, to));
            }
        }
        best.map(|(_, a, to)| (a, to))
    }

    /// Ahn §3.3, SMT level: a PM I/O task and a CPU-bound task share a
    /// physical core rather than two of a kind. Swaps a PM task of a core
    /// running two or more of them with a CPU-bound task of a core running
    /// two or more CPU-bound tasks and no PM task; or moves a CPU-bound task
    /// of such a core onto the idle sibling of a core running one PM task
    /// alone, when that does not make the cores' CPU loads more unequal.
    fn pair(&mut self, cores: &[CpuSet]) {
        for _ in 0..(2 * self.tasks.len() + 4) {
            let busy = |s: &State, i: usize| s.cpu_load(i) > 0.0;
            let kinds: Vec<(Vec<usize>, Vec<usize>)> = cores
                .iter()
                .map(|c| {
                    let ms = self.members(c);
                    let pm = ms.iter().copied().filter(|&i| self.is_pm(i)).collect();
                    let cpu = ms
                        .iter()
                        .copied()
                        .filter(|&i| !self.is_pm(i) && busy(self, i))
                        .collect();
                    (pm, cpu)
                })
                .collect();
            let crowded_pm = kinds.iter().position(|(p, _)| p.len() >= 2);
            let crowded_cpu = kinds.iter().position(|(p, c)| p.is_empty() && c.len() >= 2);
            let Some(y) = crowded_cpu else { return };
            let mut done = false;
            if let Some(x) = crowded_pm {
                // the lightest PM task of x for a CPU-bound task of y
                'outer: for &a in kinds[x].0.iter().rev() {
                    for &b in &kinds[y].1 {
                        let (ca, cb) = (self.cpu_load(a), self.cpu_load(b));
                        let (pa, pb) = (self.cpu[a], self.cpu[b]);
                        if self.can_move(a)
                            && self.can_move(b)
                            && self.moves.len() + 2 <= self.params.max_moves_per_run
                            && (ca - cb).abs() <= self.params.smt_imbalance * ca.max(cb)
                            && self.tasks[a].allowed.contains(pb as usize)
                            && self.tasks[b].allowed.contains(pa as usize)
                        {
                            self.record(a, pb, Level::Smt, None, MoveKind::Pair);
                            self.record(b, pa, Level::Smt, None, MoveKind::Pair);
                            done = true;
                            break 'outer;
                        }
                    }
                }
            }
            if !done {
                // a lone PM task with an idle sibling takes a CPU-bound task
                let load = |s: &State, c: &CpuSet| -> f64 {
                    s.members(c).iter().map(|&i| s.cpu_load(i)).sum()
                };
                let ly = load(self, &cores[y]);
                'lone: for (x, (pm, cpu)) in kinds.iter().enumerate() {
                    if pm.len() != 1 || !cpu.is_empty() || x == y {
                        continue;
                    }
                    let cx = cores[x];
                    let lx = load(self, &cx);
                    for &b in &kinds[y].1 {
                        let cb = self.cpu_load(b);
                        if ((ly - cb) - (lx + cb)).abs() > (ly - lx).abs() + 1e-12
                            || !self.can_move(b)
                        {
                            continue;
                        }
                        let free = cx
                            .iter()
                            .filter(|&c| self.tasks[b].allowed.contains(c))
                            .find(|&c| self.load_on_cpu(c) <= 0.0);
                        if let Some(to) = free {
                            self.record(b, to as u32, Level::Smt, None, MoveKind::Pair);
                            done = true;
                            break 'lone;
                        }
                    }
                }
            }
            if !done {
                return;
            }
        }
    }
}

fn argmax(v: &[f64]) -> Option<usize> {
    (0..v.len()).reduce(|a, b| if v[b] > v[a] { b } else { a })
}

fn argmin(v: &[f64]) -> Option<usize> {
    (0..v.len()).reduce(|a, b| if v[b] < v[a] { b } else { a })
}

/// The SMT core (sibling set) of `cpu`.
fn core_of(topo: &Topology, cpu: u32) -> Option<CpuSet> {
    topo.nodes
        .iter()
        .flat_map(|n| n.llcs.iter())
        .flat_map(|l| l.cores.iter())
        .find(|c| c.cpus.contains(cpu as usize))
        .map(|c| c.cpus)
}

/// Ahn §3.3: the moves that balance PM read, then write load top-down
/// through the tree and pair PM I/O with CPU-bound tasks on SMT siblings.
/// Tasks on CPUs the topology does not know are left alone. Deterministic:
/// the same inputs give the same moves.
pub fn plan(topo: &Topology, tasks: &[Task], params: &PlacementParams) -> Vec<Move> {
    let known: Vec<Task> = tasks
        .iter()
        .copied()
        .filter(|t| topo.nodes.iter().any(|n| n.cpus.contains(t.cpu as usize)))
        .collect();
    let mut st = State {
        tasks: &known,
        cpu: known.iter().map(|t| t.cpu).collect(),
        moves: Vec::new(),
        params,
    };
    let nodes: Vec<CpuSet> = topo.nodes.iter().map(|n| n.cpus).collect();
    for m in [Metric::Read, Metric::Write] {
        st.balance(topo, &nodes, m, Level::Numa, params.numa_imbalance);
    }
    for node in &topo.nodes {
        let llcs: Vec<CpuSet> = node.llcs.iter().map(|l| l.cpus).collect();
        for m in [Metric::Read, Metric::Write] {
            st.balance(topo, &llcs, m, Level::Llc, params.llc_imbalance);
        }
    }
    for node in &topo.nodes {
        for llc in &node.llcs {
            let cores: Vec<CpuSet> = llc.cores.iter().map(|c| c.cpus).collect();
            for m in [Metric::Read, Metric::Write] {
                st.balance(topo, &cores, m, Level::Smt, params.smt_imbalance);
            }
            st.pair(&cores);
        }
    }
    collapse(st.moves)
}

/// One move per task: from where it was to where it ends (a task moved at
/// two levels migrates once); tasks that end where they began drop out.
fn collapse(moves: Vec<Move>) -> Vec<Move> {
    let mut out: Vec<Move> = Vec::new();
    for m in moves {
        match out.iter_mut().position(|o| o.id == m.id) {
            Some(p) => {
                let o = &mut out[p];
                o.to = m.to;
                o.level = m.level;
                o.metric = m.metric;
                o.kind = m.kind;
            }
            None => out.push(m),
        }
    }
    out.retain(|m| m.from != m.to);
    out
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod residency_tests;
