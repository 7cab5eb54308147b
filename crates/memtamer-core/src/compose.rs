//! Composition of the control policies with one precedence (SYSTEM.md):
//! (1) isolation decides how much CPU a BE job may use (its budget: CPUs and
//! duty cycle); (2) placement decides where threads run; (3) concurrency
//! (core specialization; the PATS gate for cooperating processes) decides how
//! many PM-accessing threads run at once.
//!
//! Each knob has one owner: job budgets belong to isolation, the gate limit
//! to the gate policy, migrations to placement. A thread's affinity is the
//! one knob several components shape, so it is computed here and only here:
//! the job's budget, narrowed by placement's choice, narrowed by core
//! specialization's group; a lower-precedence narrowing that would leave no
//! CPU is dropped. See docs/control.md.

use crate::core_spec::CoreSpec;
use crate::isolation::Isolation;
pub use crate::policy::Hints;
use crate::{CoreBudget, CpuSet, Decision, JobId, Observation, Policy, ThreadId};
use std::collections::BTreeMap;

/// The daemon's (and the simulator's) composed policy.
pub struct Composite {
    name: String,
    isolation: Option<Isolation>,
    placement: Option<Box<dyn Policy>>,
    concurrency: Option<CoreSpec>,
    gate: Option<Box<dyn Policy>>,
    budgets: BTreeMap<JobId, CoreBudget>,
    placed: BTreeMap<ThreadId, CpuSet>,
    specialized: BTreeMap<ThreadId, CpuSet>,
    /// Core specialization works at a 200 ms timescale: it runs once per
    /// this period (on every PM writer seen since its last run) rather than
    /// in every window of a sub-millisecond isolation loop.
    concurrency_period_ns: u64,
    last_concurrency_ns: Option<u64>,
    pm_writers_since: std::collections::BTreeSet<ThreadId>,
    /// Fingerprint of the inputs of the last affinity merge, and windows
    /// since it ran: the merge is skipped while nothing changed (a fast
    /// isolation loop would otherwise redo it for every thread every window).
    merged: Option<(u64, u32)>,
    /// The caller's shape id ([`Hints::shape`]) and the fingerprint computed
    /// for it, reused while the id stays the same.
    shape_print: Option<(u64, u64)>,
}

/// The merge runs at least every this many windows even when its inputs look
/// unchanged (retries an affinity write that failed).
const REMERGE_WINDOWS: u32 = 100;

/// Default period of the core-specialization component.
pub const CONCURRENCY_PERIOD_NS: u64 = 10_000_000;

impl Composite {
    /// Composes the given components; any may be absent.
    pub fn new(
        isolation: Option<Isolation>,
        placement: Option<Box<dyn Policy>>,
        concurrency: Option<CoreSpec>,
        gate: Option<Box<dyn Policy>>,
    ) -> Composite {
        let mut parts: Vec<String> = Vec::new();
        if let Some(i) = &isolation {
            parts.push(Policy::name(i).to_string());
        }
        if let Some(p) = &placement {
            parts.push(p.name().to_string());
        }
        if concurrency.is_some() {
            parts.push("core-spec".into());
        }
        if let Some(g) = &gate {
            parts.push(g.name().to_string());
        }
        let name = if parts.is_empty() {
            "baseline".to_string()
        } else {
            parts.join("+")
        };
        Composite {
            name,
            isolation,
            placement,
            concurrency,
            gate,
            budgets: BTreeMap::new(),
            placed: BTreeMap::new(),
            specialized: BTreeMap::new(),
            concurrency_period_ns: CONCURRENCY_PERIOD_NS,
            last_concurrency_ns: None,
            pm_writers_since: Default::default(),
            merged: None,
            shape_print: None,
        }
    }

    /// Runs core specialization once per `ns` (0 = every window).
    pub fn with_concurrency_period(mut self, ns: u64) -> Composite {
        self.concurrency_period_ns = ns;
        self
    }

    /// The isolation component, for status reports.
    pub fn isolation(&self) -> Option<&Isolation> {
        self.isolation.as_ref()
    }

    /// The placement component's per-thread view, for status reports
    /// (empty without placement).
    pub fn placed_threads(&self) -> Vec<crate::placement::PlacedThread> {
        self.placement
            .as_ref()
            .map_or_else(Vec::new, |p| p.placed_threads())
    }

    /// Whether a placement component runs.
    pub fn has_placement(&self) -> bool {
        self.placement.is_some()
    }

    /// The core-specialization component, for status reports.
    pub fn concurrency(&self) -> Option<&CoreSpec> {
        self.concurrency.as_ref()
    }

    /// Current budget of each throttled job.
    pub fn budgets(&self) -> &BTreeMap<JobId, CoreBudget> {
        &self.budgets
    }
}

/// A cheap summary of the threads, jobs and affinities an observation
/// carries: equal summaries mean the affinity merge would give the same result.
fn fingerprint(obs: &Observation) -> u64 {
    // FxHash-style mixing: not cryptographic, only a change detector
    let mix = |h: u64, x: u64| (h.rotate_left(5) ^ x).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    let mut h = mix(0, obs.jobs.len() as u64);
    for t in &obs.threads {
        h = mix(h, (u64::from(t.tid) << 32) | u64::from(t.job));
        for w in t.allowed.words() {
            h = mix(h, w);
        }
    }
    h
}

/// Narrows `base` by each constraint in precedence order, skipping any that
/// would leave no CPU.
pub fn merge_affinity(base: Option<CpuSet>, constraints: &[Option<CpuSet>]) -> Option<CpuSet> {
    let mut cur = base;
    for c in constraints.iter().flatten() {
        let next = match cur {
            Some(b) => b.intersect(c),
            None => *c,
        };
        if !next.is_empty() {
            cur = Some(next);
        }
    }
    cur
}

impl Policy for Composite {
    fn name(&self) -> &str {
        &self.name
    }

    fn decide(&mut self, obs: &Observation) -> Decision {
        self.decide_hinted(obs, Hints::default())
    }
}

impl Composite {
    /// [`Policy::decide`] with what the caller knows about `obs` beyond its
    /// content (see [`Hints`]); the decision is the same as without them.
    pub fn decide_hinted(&mut self, obs: &Observation, hints: Hints<'_>) -> Decision {
        let mut out = Decision::default();
        let mut policy_moved = false;
        // the change detector's summary, computed again only when the
        // caller's shape id changed
        let print = match (hints.shape, self.shape_print) {
            (Some(id), Some((seen, p))) if id == seen => p,
            (id, _) => {
                let p = fingerprint(obs);
                self.shape_print = id.map(|id| (id, p));
                p
            }
        };
        if self.concurrency.is_some() {
            for t in hints.reporting_threads(obs) {
                if t.pm.as_ref().is_some_and(|p| p.write_bytes > 0) {
                    self.pm_writers_since.insert(t.tid);
                }
            }
        }
        if let Some(iso) = self.isolation.as_mut() {
            let d = iso.decide_hinted(obs, hints.reporting);
            for (job, b) in &d.job_budgets {
                self.budgets.insert(*job, *b);
            }
            out.job_budgets = d.job_budgets;
            out.reasons
                .extend(d.reasons.into_iter().map(|r| format!("isolation: {r}")));
        }
        if let Some(pl) = self.placement.as_mut() {
            let d = pl.decide(obs);
            policy_moved |= !d.thread_cpus.is_empty();
            for (t, s) in d.thread_cpus {
                self.placed.insert(t, s);
            }
            out.migrations = d.migrations;
            out.reasons
                .extend(d.reasons.into_iter().map(|r| format!("placement: {r}")));
        }
        if let Some(cs) = self.concurrency.as_mut() {
            let end = obs.start_ns + obs.duration_ns;
            let due = self
                .last_concurrency_ns
                .is_none_or(|l| end.saturating_sub(l) >= self.concurrency_period_ns);
            if due {
                // one step for the whole period, with every thread seen
                // writing PM in any window of it
                let d = cs.decide_hinted(obs, &self.pm_writers_since, hints);
                self.pm_writers_since.clear();
                self.last_concurrency_ns = Some(end);
                policy_moved |= !d.thread_cpus.is_empty();
                for (t, s) in d.thread_cpus {
                    self.specialized.insert(t, s);
                }
                out.reasons
                    .extend(d.reasons.into_iter().map(|r| format!("core-spec: {r}")));
            }
        }
        if let Some(g) = self.gate.as_mut() {
            let d = g.decide(obs);
            out.gate_limit = d.gate_limit;
            out.reasons
                .extend(d.reasons.into_iter().map(|r| format!("gate: {r}")));
        }
        // forget threads and jobs that are gone (the thread set can only
        // have changed when the summary did)
        let threads_changed = self.merged.is_none_or(|(p, _)| p != print);
        if threads_changed && self.placed.len() + self.specialized.len() > 0 {
            let mut live: Vec<ThreadId> = obs.threads.iter().map(|t| t.tid).collect();
            live.sort_unstable();
            self.placed.retain(|t, _| live.binary_search(t).is_ok());
            self.specialized
                .retain(|t, _| live.binary_search(t).is_ok());
        }
        self.budgets
            .retain(|j, _| obs.jobs.iter().any(|o| o.id == *j));
        if self.budgets.is_empty()
            && self.placed.is_empty()
            && self.specialized.is_empty()
            && out.migrations.is_empty()
        {
            return out;
        }

        let changed = !out.job_budgets.is_empty() || policy_moved;
        match self.merged {
            Some((p, n)) if p == print && !changed && n < REMERGE_WINDOWS => {
                self.merged = Some((p, n + 1));
                return out;
            }
            _ => self.merged = Some((print, 0)),
        }
        for t in &obs.threads {
            let base = self.budgets.get(&t.job).map(|b| b.cpus);
            let want = merge_affinity(
                base,
                &[
                    self.placed.get(&t.tid).copied(),
                    self.specialized.get(&t.tid).copied(),
                ],
            );
            if let Some(set) = want {
                if set != t.allowed {
                    out.thread_cpus.push((t.tid, set));
                }
            }
        }
        // a migration outside the thread's final set would be undone at once
        out.migrations.retain(|m| {
            out.thread_cpus
                .iter()
                .find(|(t, _)| *t == m.tid)
                .map(|(_, s)| *s)
                .or_else(|| {
                    obs.threads
                        .iter()
                        .find(|t| t.tid == m.tid)
                        .map(|t| t.allowed)
                })
                .is_some_and(|s| s.contains(m.to_cpu as usize))
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core_spec::CoreSpecParams;
    use crate::isolation::{IsolationKind, IsolationParams};
    use crate::{AccessStats, ChannelObs, CpuObs, JobClass, JobObs, Migration, ThreadObs};

    fn set(s: &str) -> CpuSet {
        CpuSet::parse_list(s).unwrap()
    }

    #[test]
    fn merge_narrows_in_precedence_order_and_skips_empty_results() {
        assert_eq!(merge_affinity(None, &[None, None]), None);
        assert_eq!(
            merge_affinity(Some(set("2-7")), &[None, None]),
            Some(set("2-7"))
        );
        assert_eq!(
            merge_affinity(Some(set("2-7")), &[Some(set("4-5")), Some(set("5-9"))]),
            Some(set("5"))
        );
        // core spec's PM cores 0-1 lie outside the budget: the budget wins
        assert_eq!(
            merge_affinity(Some(set("2-7")), &[None, Some(set("0-1"))]),
            Some(set("2-7"))
        );
        assert_eq!(
            merge_affinity(None, &[None, Some(set("0-1"))]),
            Some(set("0-1"))
        );
    }

    /// A placement stand-in that pins thread 1 to CPU 3 and asks to migrate
    /// thread 2 to CPU 0.
    struct Pin;
    impl Policy for Pin {
        fn name(&self) -> &str {
            "pin"
        }
        fn decide(&mut self, _obs: &Observation) -> Decision {
            Decision {
                thread_cpus: vec![(1, set("3"))],
                migrations: vec![
                    Migration { tid: 2, to_cpu: 0 },
                    Migration { tid: 2, to_cpu: 5 },
                ],
                ..Default::default()
            }
        }
    }

    fn obs() -> Observation {
        Observation {
            start_ns: 0,
            duration_ns: 10_000,
            threads: vec![
                ThreadObs {
                    tid: 0,
                    job: 0,
                    allowed: set("0-1"),
                    ..Default::default()
                },
                ThreadObs {
                    tid: 1,
                    job: 1,
                    allowed: set("0-7"),
                    pm: Some(AccessStats::default()),
                    ..Default::default()
                },
                ThreadObs {
                    tid: 2,
                    job: 1,
                    allowed: set("0-7"),
                    pm: Some(AccessStats {
                        write_bytes: 1 << 20,
                        ..Default::default()
                    }),
                    ..Default::default()
                },
            ],
            jobs: vec![
                JobObs {
                    id: 0,
                    class: JobClass::Lc,
                    threads: vec![0],
                    ..Default::default()
                },
                JobObs {
                    id: 1,
                    class: JobClass::Be,
                    threads: vec![1, 2],
                    ..Default::default()
                },
            ],
            channels: vec![ChannelObs {
                cas_reads: Some(0),
                cas_writes: Some(0),
                pmm_wpq_inserts: Some(1),
                pmm_wpq_occupancy: Some(10),
                ..Default::default()
            }],
            cpus: (0..8)
                .map(|c| CpuObs {
                    cpu: c,
                    utilization: Some(0.5),
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn budget_then_placement_then_core_spec() {
        let iso = Isolation::new(IsolationKind::Dicio, IsolationParams::default(), None);
        let cs = CoreSpec::new(CoreSpecParams::new(set("6-7"), set("0-7")));
        let mut c = Composite::new(Some(iso), Some(Box::new(Pin)), Some(cs), None);
        assert_eq!(c.name(), "dicio+pin+core-spec");
        let d = c.decide(&obs());
        // BE budget: CPUs 2-7 (LC holds 0-1); 2 threads -> 2 cores: 2-3
        assert_eq!(d.job_budgets.len(), 1);
        let budget = d.job_budgets[0].1.cpus;
        assert_eq!(budget, set("2-3"));
        let get = |t: u32| d.thread_cpus.iter().find(|(x, _)| *x == t).map(|(_, s)| *s);
        // thread 1: placement pins it to 3, inside the budget
        assert_eq!(get(1), Some(set("3")));
        // thread 2 writes PM: core spec wants 6-7, outside the budget: budget wins
        assert_eq!(get(2), Some(set("2-3")));
        // the LC thread is untouched
        assert_eq!(get(0), None);
        // migrations outside the final set are dropped
        assert!(d.migrations.is_empty(), "{:?}", d.migrations);
    }

    #[test]
    fn without_isolation_core_spec_owns_the_affinity() {
        let cs = CoreSpec::new(CoreSpecParams::new(set("6-7"), set("0-7")));
        let mut c = Composite::new(None, None, Some(cs), None);
        let d = c.decide(&obs());
        let get = |t: u32| d.thread_cpus.iter().find(|(x, _)| *x == t).map(|(_, s)| *s);
        assert_eq!(get(2), Some(set("6-7")));
        assert_eq!(
            get(1),
            None,
            "general set == current affinity: nothing to do"
        );
        // applied: the next window sees the new affinity and emits nothing
        let mut o = obs();
        o.threads[2].allowed = set("6-7");
        let d = c.decide(&o);
        assert!(d.thread_cpus.is_empty(), "{:?}", d.thread_cpus);
    }

    #[test]
    fn core_spec_runs_once_per_period_on_every_writer_seen_in_it() {
        let cs = CoreSpec::new(CoreSpecParams::new(set("6-7"), set("0-7")));
        let mut c = Composite::new(None, None, Some(cs), None);
        // first window: runs; thread 2 writes PM
        let d = c.decide(&obs());
        assert_eq!(d.thread_cpus.len(), 1);
        // 10 µs windows: thread 1 writes PM in one of them, not at the end
        let mut o = obs();
        o.threads[2].allowed = set("6-7");
        o.threads[2].pm = Some(AccessStats::default());
        let mut wrote = o.clone();
        wrote.threads[1].pm = Some(AccessStats {
            write_bytes: 64,
            ..Default::default()
        });
        let mut moved = false;
        for i in 1..=1001u64 {
            let mut w = if i == 5 { wrote.clone() } else { o.clone() };
            w.start_ns = i * 10_000;
            let d = c.decide(&w);
            if d.thread_cpus
                .iter()
                .any(|(t, s)| *t == 1 && *s == set("6-7"))
            {
                assert!(
                    i * 10_000 + 10_000 >= CONCURRENCY_PERIOD_NS,
                    "ran early at window {i}"
                );
                moved = true;
                break;
            }
        }
        assert!(moved, "a PM store in a skipped window was forgotten");
    }

    #[test]
    fn hints_do_not_change_decisions() {
        // 40 BE threads; windows of 1 ms where a few threads write PM now
        // and then, the iMC reports heavy traffic for a while (isolation
        // throttles), and the thread set and an affinity change twice
        let composite = || {
            let iso = Isolation::new(
                IsolationKind::Dicio,
                IsolationParams::default(),
                Some((0..8).collect()),
            );
            let cs = CoreSpec::new(CoreSpecParams::new(set("6-7"), set("0-7")));
            Composite::new(Some(iso), None, Some(cs), None)
        };
        let (mut plain, mut hinted) = (composite(), composite());
        let mut base = obs();
        base.threads = (10..50)
            .map(|tid| ThreadObs {
                tid,
                job: 1,
                allowed: set("0-7"),
                ..Default::default()
            })
            .collect();
        base.jobs = vec![JobObs {
            id: 1,
            class: JobClass::Be,
            threads: (10..50).collect(),
            ..Default::default()
        }];
        base.channels.clear();
        let mut shape = 0;
        let mut decisions = 0;
        for w in 0..600u64 {
            if w == 200 {
                base.threads.pop();
                shape += 1;
            }
            if w == 400 {
                base.threads[3].allowed = set("6-7");
                shape += 1;
            }
            let mut o = base.clone();
            o.start_ns = w * 1_000_000;
            o.duration_ns = 1_000_000;
            let mut reporting = Vec::new();
            for (i, t) in o.threads.iter_mut().enumerate() {
                // PM writers in the first half only: later core
                // specialization steps are quiet, and the PM group expires
                if w < 300 && (u64::from(t.tid) + w).is_multiple_of(37) {
                    t.pm = Some(AccessStats {
                        write_bytes: 4096 * (w % 5),
                        ..Default::default()
                    });
                    reporting.push(i);
                }
            }
            if (100..150).contains(&w) {
                o.channels = vec![ChannelObs {
                    pmm_wpq_inserts: Some(1000),
                    pmm_wpq_occupancy: Some(1_000_000),
                    ..Default::default()
                }];
            }
            let a = plain.decide(&o);
            let b = hinted.decide_hinted(
                &o,
                Hints {
                    shape: Some(shape),
                    reporting: Some(&reporting),
                },
            );
            assert_eq!(a, b, "window {w}");
            decisions += usize::from(!a.is_noop());
        }
        assert!(decisions > 10, "the sequence exercises the policies");
    }

    #[test]
    fn an_empty_composite_is_the_baseline() {
        let mut c = Composite::new(None, None, None, None);
        assert_eq!(c.name(), "baseline");
        assert!(c.decide(&obs()).is_noop());
    }
}
