//! One Unimem decision, from a closed profile to what the driver enforces
//! (the plan, its per-iteration moves and the one-time moves from the
//! current placement), and the thin thread that computes it off the
//! application thread.
//!
//! Why a thread: a decision searches (`leave_room`, knapsacks, schedule
//! replays) for up to `MEMTAMER_DECISION_SHARE` of the run, and on MG with
//! 2 ranks on this 2-CPU host that was 100-200 ms per decision on the
//! application thread, where a partner rank waits for it at the next MPI
//! call (docs/notebook/unimem.md, "Decisions off the application thread"). The
//! thesis runs decisions in the runtime (§3.3, §3.5); nothing needs the
//! application to wait: while the decision runs the program keeps its
//! current placement (nothing is moved, so the placement the decision
//! started from stays true), and the driver adopts the plan at the first
//! iteration top after it is ready.

use crate::unimem::plan::{decide_within, Plan, Problem};
use crate::unimem::schedule::{schedule_checked, Move};
use crate::unimem::transition::{transition, OnceMove};
use std::collections::BTreeSet;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What a decision hands the driver.
#[derive(Clone, Debug, PartialEq)]
pub struct Decided {
    /// The plan (per phase, the objects in DRAM).
    pub plan: Plan,
    /// Its moves per iteration ([`schedule_checked`]).
    pub moves: Vec<Move>,
    /// One-time moves from `start` to the plan ([`transition`]).
    pub once: Vec<OnceMove>,
}

/// The decision on `problem` from the placement `start` (pure but for
/// `more`, asked before each candidate of the bounded search: see
/// [`decide_within`]). The profile cannot tell writes from reads, so
/// every use counts as a write (a copy never starts in a phase that uses
/// its object while a later free phase exists).
pub fn decide(
    problem: &Problem,
    start: &BTreeSet<usize>,
    more: &mut dyn FnMut() -> bool,
) -> Decided {
    let plan = decide_within(problem, start, more);
    let uses: Vec<Vec<bool>> = (0..problem.sizes.len()).map(|o| problem.uses(o)).collect();
    let (moves, _) = schedule_checked(&plan.dram, &uses, &problem.sizes, problem.capacity);
    let once = transition(start, &plan.dram, &moves, &uses, &uses);
    Decided { plan, moves, once }
}

/// [`decide`] with a wall-clock budget (`None`: the whole search), timed
/// from the call.
pub fn decide_for(problem: &Problem, start: &BTreeSet<usize>, budget_s: Option<f64>) -> Decided {
    let deadline = budget_s.map(|b| Instant::now() + Duration::from_secs_f64(b));
    let mut more = || deadline.is_none_or(|d| Instant::now() < d);
    decide(problem, start, &mut more)
}

/// A decision being made: on a thread of its own, or already made (inline,
/// when asked for or when no thread could be started).
pub enum Pending {
    /// Computing on a thread, which also returns the CPU seconds it took.
    Thread(JoinHandle<(Decided, f64)>),
    /// Made; waiting to be adopted.
    Ready(Box<Decided>),
}

impl Pending {
    /// Starts deciding `problem` from `start` within `budget_s`: on a
    /// thread when `off_thread`, else (or when the thread cannot be
    /// started) right here.
    pub fn start(
        problem: Problem,
        start: BTreeSet<usize>,
        budget_s: Option<f64>,
        off_thread: bool,
    ) -> Self {
        if !off_thread {
            return Pending::Ready(Box::new(decide_for(&problem, &start, budget_s)));
        }
        // The problem and the placement move to the thread; they are
        // cheap to clone back when the thread cannot start.
        let (p2, s2) = (problem.clone(), start.clone());
        match std::thread::Builder::new()
            .name("mt-tier-decide".into())
            .spawn(move || {
                let c0 = thread_cpu_s();
                let d = decide_for(&p2, &s2, budget_s);
                (d, thread_cpu_s() - c0)
            }) {
            Ok(h) => Pending::Thread(h),
            Err(_) => Pending::Ready(Box::new(decide_for(&problem, &start, budget_s))),
        }
    }

    /// The decision if it is made, without waiting, with the CPU seconds
    /// its thread took (0 inline: the caller's clock has them); otherwise
    /// `self` back. A thread that panicked gives `Err(None)`: no plan, the
    /// program keeps its placement.
    pub fn try_take(self) -> Result<(Decided, f64), Option<Pending>> {
        match self {
            Pending::Ready(d) => Ok((*d, 0.0)),
            Pending::Thread(h) if h.is_finished() => h.join().map_err(|_| None),
            p => Err(Some(p)),
        }
    }
}

/// The calling thread's CPU time, s (`CLOCK_THREAD_CPUTIME_ID`): what a
/// thread computed, without the time it waited for a core. 0 if the clock
/// cannot be read.
pub(crate) fn thread_cpu_s() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec the call writes.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return 0.0;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::unimem::model::{ObjPhase, PhaseProfile, Platform};

    /// Two phases, two 2 MiB objects, DRAM for one: each phase sweeps
    /// its own object.
    fn problem() -> Problem {
        let phase = |o: usize| PhaseProfile {
            time: 0.01,
            samples: 100.0,
            objs: [(
                o,
                ObjPhase {
                    accesses: 1e6,
                    samples: 100.0,
                },
            )]
            .into_iter()
            .collect(),
        };
        Problem {
            sizes: vec![2 << 20, 2 << 20],
            phases: vec![phase(0), phase(1)],
            platform: Platform::emulated(10e9, 100e-9, 2.0, 4.0).with_copy_bw(1e15),
            capacity: 3 << 20,
            iterations: 100.0,
            exposure: Vec::new(),
        }
    }

    #[test]
    fn the_thread_decides_what_the_caller_would() {
        let start: BTreeSet<usize> = BTreeSet::new();
        let here = decide_for(&problem(), &start, None);
        let mut p = Pending::start(problem(), start.clone(), None, true);
        let there = loop {
            match p.try_take() {
                Ok((d, cpu)) => {
                    assert!(cpu >= 0.0);
                    break d;
                }
                Err(Some(q)) => {
                    p = q;
                    std::thread::yield_now();
                }
                Err(None) => panic!("the decision thread panicked"),
            }
        };
        assert_eq!(here, there);
        // inline: ready at once
        let inline = Pending::start(problem(), start, None, false);
        assert!(matches!(inline.try_take(), Ok((d, _)) if d == here));
    }

    #[test]
    fn one_time_moves_start_from_the_given_placement() {
        // from nothing in DRAM, the plan's first DRAM objects are promoted
        // once; from the plan's own start, fewer one-time moves
        let p = problem();
        let d = decide_for(&p, &BTreeSet::new(), None);
        assert!(!d.once.is_empty() || !d.moves.is_empty(), "{d:?}");
        let first: BTreeSet<usize> = d.plan.dram[0].clone();
        let again = decide_for(&p, &first, None);
        assert!(again.once.len() <= d.once.len(), "{again:?} vs {d:?}");
    }
}
