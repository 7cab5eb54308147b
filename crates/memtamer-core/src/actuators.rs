//! The other half of the loop: something that carries a [`Decision`] out.
//!
//! The simulator, the Linux actuators of the daemon and the PATS gate's
//! collector each own some of a decision's knobs (SYSTEM.md: one owner per
//! knob). Each implements [`Actuators`] and says in its [`ApplyReport`] what
//! it did and what it ignored, so that no knob is dropped silently: a
//! decision part nobody applies shows up in `memtamer status` and in tests.

use crate::Decision;
use serde::{Deserialize, Serialize};

/// One knob of a [`Decision`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Knob {
    /// `Decision::gate_limit`: the PATS gate's admission limit.
    GateLimit,
    /// `Decision::thread_cpus`: per-thread affinity.
    ThreadCpus,
    /// `Decision::job_budgets`: per-job CPU sets and duty cycles.
    JobBudgets,
    /// `Decision::migrations`: move a thread to a CPU now.
    Migrations,
}

impl Knob {
    /// Every knob, in the order a decision lists them.
    pub const ALL: [Knob; 4] = [
        Knob::GateLimit,
        Knob::ThreadCpus,
        Knob::JobBudgets,
        Knob::Migrations,
    ];

    /// The field's name in [`Decision`].
    pub fn name(self) -> &'static str {
        match self {
            Knob::GateLimit => "gate_limit",
            Knob::ThreadCpus => "thread_cpus",
            Knob::JobBudgets => "job_budgets",
            Knob::Migrations => "migrations",
        }
    }

    /// How many actions of this knob `d` asks for.
    pub fn count_in(self, d: &Decision) -> usize {
        match self {
            Knob::GateLimit => usize::from(d.gate_limit.is_some()),
            Knob::ThreadCpus => d.thread_cpus.len(),
            Knob::JobBudgets => d.job_budgets.len(),
            Knob::Migrations => d.migrations.len(),
        }
    }
}

/// A part of a decision an actuator did not carry out, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ignored {
    /// Which knob.
    pub knob: Knob,
    /// How many of the knob's actions were ignored.
    pub count: usize,
    /// Why (e.g. "no gate in this daemon", "thread 42 has exited").
    pub reason: String,
}

/// What one [`Actuators::apply`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApplyReport {
    /// Actions carried out, per knob.
    pub applied: Vec<(Knob, usize)>,
    /// Actions not carried out, with the reason.
    pub ignored: Vec<Ignored>,
}

impl ApplyReport {
    /// Records `count` applied actions of `knob` (nothing when 0).
    pub fn applied(&mut self, knob: Knob, count: usize) {
        if count == 0 {
            return;
        }
        match self.applied.iter_mut().find(|(k, _)| *k == knob) {
            Some((_, n)) => *n += count,
            None => self.applied.push((knob, count)),
        }
    }

    /// Records `count` ignored actions of `knob` and why (nothing when 0).
    pub fn ignored(&mut self, knob: Knob, count: usize, reason: impl Into<String>) {
        if count == 0 {
            return;
        }
        self.ignored.push(Ignored {
            knob,
            count,
            reason: reason.into(),
        });
    }

    /// Records every action of `knob` in `d` as ignored, for actuators that
    /// do not own that knob at all.
    pub fn ignore_knob(&mut self, d: &Decision, knob: Knob, reason: &str) {
        self.ignored(knob, knob.count_in(d), reason);
    }

    /// Actions of `knob` applied.
    pub fn applied_count(&self, knob: Knob) -> usize {
        self.applied
            .iter()
            .filter(|(k, _)| *k == knob)
            .map(|(_, n)| n)
            .sum()
    }

    /// Actions of `knob` ignored.
    pub fn ignored_count(&self, knob: Knob) -> usize {
        self.ignored
            .iter()
            .filter(|i| i.knob == knob)
            .map(|i| i.count)
            .sum()
    }

    /// Whether everything asked for was carried out.
    pub fn is_complete(&self) -> bool {
        self.ignored.is_empty()
    }

    /// Appends another actuator's report (composed actuators).
    pub fn merge(&mut self, other: ApplyReport) {
        for (k, n) in other.applied {
            self.applied(k, n);
        }
        self.ignored.extend(other.ignored);
    }
}

/// Carries decisions out: the simulator's engine, the daemon's Linux
/// actuators (affinity, cgroups, duty cycles) and the gate's collector.
pub trait Actuators {
    /// Applies `decision` and reports, per knob, what was done and what was
    /// ignored (a knob this actuator does not own, a thread that is gone).
    fn apply(&mut self, decision: &Decision) -> ApplyReport;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CpuSet, GateLimit, Migration};

    fn decision() -> Decision {
        Decision {
            gate_limit: Some(GateLimit::Limit(3)),
            thread_cpus: vec![(1, CpuSet::first_n(2)), (2, CpuSet::first_n(2))],
            migrations: vec![Migration { tid: 1, to_cpu: 0 }],
            ..Default::default()
        }
    }

    #[test]
    fn knobs_count_their_actions() {
        let d = decision();
        let counts: Vec<usize> = Knob::ALL.iter().map(|k| k.count_in(&d)).collect();
        assert_eq!(counts, vec![1, 2, 0, 1]);
    }

    #[test]
    fn a_report_adds_up_per_knob_and_skips_zero() {
        let mut r = ApplyReport::default();
        r.applied(Knob::ThreadCpus, 1);
        r.applied(Knob::ThreadCpus, 1);
        r.applied(Knob::JobBudgets, 0);
        r.ignore_knob(&decision(), Knob::GateLimit, "no gate");
        r.ignore_knob(&decision(), Knob::JobBudgets, "never asked");
        assert_eq!(r.applied, vec![(Knob::ThreadCpus, 2)]);
        assert_eq!(r.ignored_count(Knob::GateLimit), 1);
        assert_eq!(r.ignored.len(), 1);
        assert!(!r.is_complete());
    }

    #[test]
    fn merged_reports_keep_both_sides() {
        let mut a = ApplyReport::default();
        a.applied(Knob::GateLimit, 1);
        let mut b = ApplyReport::default();
        b.applied(Knob::GateLimit, 1);
        b.ignored(Knob::Migrations, 2, "thread gone");
        a.merge(b);
        assert_eq!(a.applied_count(Knob::GateLimit), 2);
        assert_eq!(a.ignored_count(Knob::Migrations), 2);
    }
}
