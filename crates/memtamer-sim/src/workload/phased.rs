//! The `phased` workload kind: one MPI rank of an iterative program
//! (`config::phased`) over tiered data objects (`workload::tiered`), with a
//! placement policy (`crate::tiering`) consulted at every phase boundary.
//!
//! A rank runs, per iteration, its phases in order. A phase:
//! 1. **start**: the policy queues moves for the helper and names objects
//!    whose moves must finish first; the rank waits for them (polling; the
//!    wait is the *exposed* migration time);
//! 2. **body**: the phase's lines, interleaved over its objects in
//!    proportion to their counts, 16 per step, each step preceded by its
//!    share of the phase's compute (compute and misses overlap, as in an
//!    out-of-order core); a line goes to wherever its page is now;
//! 3. **MPI call**: `Drain` (the call needs the data), then `comm_ns`;
//! 4. **end**: the policy gets the phase's line counts and time.
//!
//! One work unit per iteration. The rank records when each iteration ends;
//! the run's time is the slowest rank's last iteration end.

use super::tiered::{lock, TierHandle};
use super::{Op, OpBatch, Ps, LINE, NS};
use crate::config::phased::PhasedProgram;
use crate::config::Pattern;
use crate::rng::Rng;
use crate::tiering::{PhaseObs, PhasePolicy, PAGE};
use std::sync::{Arc, Mutex, MutexGuard};

/// Lines per step.
const STEP_LINES: u64 = 16;
/// Sleep while waiting for a move, or after the last iteration.
const POLL: Ps = 100 * NS;
/// Idle step after the program ended.
const DONE_IDLE: Ps = 1_000_000 * NS;

/// One access of a compiled phase.
#[derive(Clone, Debug)]
struct Access {
    obj: usize,
    lines: u64,
    rand: bool,
    /// Pointer chasing: each load waits for the previous one.
    dep: bool,
    write_fraction: f64,
}

/// A phase with object indices and line counts.
#[derive(Clone, Debug)]
struct Phase {
    access: Vec<Access>,
    /// Compute per line issued (ps); the whole compute if no lines.
    compute_per_line: f64,
    compute: Ps,
    comm: Ps,
}

/// Where a rank is.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Stage {
    Start,
    Wait { since: Ps },
    Body,
    Comm,
    End,
    Finished,
}

/// What a rank reports after a run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RankReport {
    /// Policy label.
    pub policy: String,
    /// What the policy decided.
    pub summary: String,
    /// Simulated time at the end of each iteration (ps).
    pub iteration_ends: Vec<Ps>,
    /// All iterations done by then.
    pub finished: Option<Ps>,
    /// Migration accounting.
    pub stats: super::tiered::TierStats,
    /// DRAM capacity given (bytes).
    pub capacity: u64,
    /// Lines served by DRAM and by the slow tier.
    pub dram_lines: u64,
    /// Lines served by the slow tier.
    pub slow_lines: u64,
    /// Each phase's time in the first iteration, s (what a profiler of
    /// that iteration sees).
    pub first_phase_times: Vec<f64>,
}

/// A rank's policy, shared by clones of the generator (never cloned while
/// running; the engine only moves generators).
type SharedPolicy = Arc<Mutex<Box<dyn PhasePolicy>>>;

/// One rank's program generator.
#[derive(Clone, Debug)]
pub struct PhasedRank {
    phases: Arc<Vec<Phase>>,
    iterations: u32,
    space: TierHandle,
    policy: SharedPolicy,
    stage: Stage,
    /// Objects the current phase waits for.
    wait: Vec<usize>,
    iter: u32,
    phase: usize,
    phase_start: Ps,
    /// Time the current phase waited for moves at its start.
    waited: Ps,
    /// Lines issued per access of the current phase.
    done: Vec<u64>,
    /// Sequential cursor per access (bytes).
    cursor: Vec<u64>,
    /// Write-mix accumulator per access.
    wacc: Vec<f64>,
    /// Lines per object in the current phase.
    lines: Vec<u64>,
    /// Per-object per-page lines since the policy's last scan.
    heat: Vec<Vec<u32>>,
    wants_heat: bool,
    report: RankReport,
}

fn ps_of(ns: f64) -> Ps {
    (ns * NS as f64).round().max(0.0) as Ps
}

impl PhasedRank {
    /// A rank running `prog` over `space` with `policy` (named `label`);
    /// applies the policy's initial placement.
    pub fn new(
        prog: &PhasedProgram,
        space: TierHandle,
        mut policy: Box<dyn PhasePolicy>,
        label: String,
    ) -> PhasedRank {
        let phases: Vec<Phase> = prog
            .phases
            .iter()
            .map(|p| {
                let access: Vec<Access> = p
                    .access
                    .iter()
                    .filter_map(|a| {
                        Some(Access {
                            obj: prog.object_index(&a.object)?,
                            lines: a.bytes.div_ceil(LINE),
                            rand: a.pattern == Pattern::Rand,
                            dep: a.dependent,
                            write_fraction: a.write_fraction,
                        })
                    })
                    .collect();
                let total: u64 = access.iter().map(|a| a.lines).sum();
                Phase {
                    compute_per_line: if total > 0 {
                        p.compute_ns * NS as f64 / total as f64
                    } else {
                        0.0
                    },
                    compute: ps_of(p.compute_ns),
                    comm: ps_of(p.comm_ns),
                    access,
                }
            })
            .collect();
        let init = policy.initial();
        let (capacity, heat) = {
            let mut s = lock(&space);
            s.set_initial(&init);
            let heat = s
                .objects()
                .iter()
                .map(|o| vec![0u32; o.page_count() as usize])
                .collect();
            (s.capacity(), heat)
        };
        let wants_heat = policy.wants_heat();
        PhasedRank {
            phases: Arc::new(phases),
            iterations: prog.iterations,
            space,
            policy: Arc::new(Mutex::new(policy)),
            stage: Stage::Start,
            wait: Vec::new(),
            iter: 0,
            phase: 0,
            phase_start: 0,
            waited: 0,
            done: Vec::new(),
            cursor: Vec::new(),
            wacc: Vec::new(),
            lines: vec![0; prog.objects.len()],
            heat,
            wants_heat,
            report: RankReport {
                policy: label,
                capacity,
                ..Default::default()
            },
        }
    }

    /// The rank's report so far (the engine collects it after a run).
    pub fn report(&self) -> RankReport {
        let mut r = self.report.clone();
        r.summary = self.policy().summary();
        r.stats = lock(&self.space).stats().clone();
        r
    }

    fn policy(&self) -> MutexGuard<'_, Box<dyn PhasePolicy>> {
        self.policy.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The next step's ops.
    pub(super) fn refill(&mut self, q: &mut OpBatch, rng: &mut Rng, now: Ps) {
        loop {
            match self.stage {
                Stage::Start => {
                    self.phase_start = now;
                    let n = self.phases[self.phase].access.len();
                    self.done = vec![0; n];
                    self.cursor = vec![0; n];
                    self.wacc = vec![0.0; n];
                    self.lines.iter_mut().for_each(|l| *l = 0);
                    let mut s = lock(&self.space);
                    let st = self
                        .policy
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .phase_start(self.iter, self.phase, &*s);
                    if let Some(pages) = &st.place {
                        s.place_prefix(pages);
                    }
                    for m in st.moves {
                        s.request(m);
                    }
                    drop(s);
                    self.wait = st.wait;
                    self.stage = Stage::Wait { since: now };
                }
                Stage::Wait { since } => {
                    let s = lock(&self.space);
                    if self.wait.iter().all(|&o| s.settled(o)) {
                        drop(s);
                        lock(&self.space).add_wait(since, now);
                        self.waited = now - since;
                        self.stage = Stage::Body;
                    } else {
                        q.push_back(Op::Compute(POLL));
                        return;
                    }
                }
                Stage::Body => {
                    if self.wants_heat {
                        let s = lock(&self.space);
                        let moves = self.policy.lock().unwrap_or_else(|e| e.into_inner()).tick(
                            now as f64 * 1e-12,
                            &mut self.heat,
                            &*s,
                        );
                        drop(s);
                        let mut s = lock(&self.space);
                        for m in moves {
                            s.request(m);
                        }
                    }
                    if self.body_step(q, rng) {
                        return;
                    }
                    q.push_back(Op::Drain);
                    self.stage = Stage::Comm;
                    return;
                }
                Stage::Comm => {
                    self.stage = Stage::End;
                    let c = self.phases[self.phase].comm;
                    if c > 0 {
                        q.push_back(Op::Compute(c));
                        return;
                    }
                }
                Stage::End => {
                    let obs = PhaseObs {
                        time: (now - self.phase_start) as f64 * 1e-12,
                        wait: self.waited as f64 * 1e-12,
                        lines: self.lines.clone(),
                    };
                    if self.iter == 0 {
                        self.report.first_phase_times.push(obs.time);
                    }
                    let s = lock(&self.space);
                    self.policy
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .phase_end(self.iter, self.phase, &obs, &*s);
                    drop(s);
                    self.phase += 1;
                    self.stage = Stage::Start;
                    if self.phase == self.phases.len() {
                        self.phase = 0;
                        self.iter += 1;
                        self.report.iteration_ends.push(now);
                        let bytes = self.lines_total() * LINE;
                        q.push_back(Op::Done { units: 1, bytes });
                        if self.iter >= self.iterations {
                            self.report.finished = Some(now);
                            lock(&self.space).close();
                            self.stage = Stage::Finished;
                        }
                        return;
                    }
                }
                Stage::Finished => {
                    q.push_back(Op::Compute(DONE_IDLE));
                    return;
                }
            }
        }
    }

    fn lines_total(&self) -> u64 {
        self.phases
            .iter()
            .flat_map(|p| p.access.iter())
            .map(|a| a.lines)
            .sum()
    }

    /// One step of the phase body; false when the phase has no lines left
    /// (then nothing was pushed, except a phase with only compute pushes
    /// its compute once).
    fn body_step(&mut self, q: &mut OpBatch, rng: &mut Rng) -> bool {
        let ph = &self.phases[self.phase];
        // the access least far along (proportional interleave)
        let next = ph
            .access
            .iter()
            .enumerate()
            .filter(|(k, a)| self.done[*k] < a.lines)
            .min_by(|(k1, a1), (k2, a2)| {
                let f1 = self.done[*k1] as f64 / a1.lines as f64;
                let f2 = self.done[*k2] as f64 / a2.lines as f64;
                f1.total_cmp(&f2).then(k1.cmp(k2))
            })
            .map(|(k, _)| k);
        let Some(k) = next else {
            if ph.access.is_empty() && ph.compute > 0 && self.done.is_empty() {
                self.done.push(1);
                q.push_back(Op::Compute(ph.compute));
                return true;
            }
            return false;
        };
        let a = &ph.access[k];
        let n = STEP_LINES.min(a.lines - self.done[k]);
        let c = (ph.compute_per_line * n as f64).round() as Ps;
        if c > 0 {
            q.push_back(Op::Compute(c));
        }
        let s = lock(&self.space);
        let size = s.objects()[a.obj].size;
        for _ in 0..n {
            let off = if a.rand {
                rng.below(size.div_ceil(LINE)) * LINE
            } else {
                let o = self.cursor[k] % size;
                self.cursor[k] += LINE;
                o
            };
            let addr = s.line_addr(a.obj, off);
            self.wacc[k] += a.write_fraction;
            let write = self.wacc[k] >= 1.0;
            if write {
                self.wacc[k] -= 1.0;
                q.push_back(Op::StoreTemporal { addr, flush: false });
            } else {
                q.push_back(Op::Load {
                    addr,
                    dep: a.dep,
                    stream: !a.rand,
                });
            }
            if s.objects()[a.obj].tier_at(off) == crate::tiering::Tier::Dram {
                self.report.dram_lines += 1;
            } else {
                self.report.slow_lines += 1;
            }
            if self.wants_heat {
                if let Some(h) = self.heat[a.obj].get_mut((off / PAGE) as usize) {
                    *h = h.saturating_add(1);
                }
            }
        }
        self.lines[a.obj] += n;
        self.done[k] += n;
        true
    }
}
