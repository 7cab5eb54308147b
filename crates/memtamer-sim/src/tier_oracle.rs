//! Hindsight baselines for `memtamer sim unimem --oracle` (issue 20: what
//! is attainable under a scenario's DRAM budget?; docs/notebook/unimem.md section 5,
//! "What is attainable: hindsight placements").
//!
//! No model: candidate placements are *run* in the simulator and the
//! fastest kept. Candidates are prefix fills (`tiering::oracle::fill`):
//! an order of objects, each given its leading pages up to what may be
//! used, until the rank's DRAM is full. A positional greedy search
//! ([`greedy_prefix`]) picks the order: for the first place every object is
//! tried (the rest in density order: the program's lines per page, its own
//! counts), the fastest is kept, then the second place, and so on while
//! DRAM is not full. Deterministic: the simulator is seeded and ties keep
//! the earlier candidate.
//!
//! * **static** (`oracle-static`): one placement for the whole run, at
//!   allocation; objects up to their whole size.
//! * **free moves** (`oracle-free`): per phase, up to the pages the phase
//!   touches, set at the phase's start with no copy and no time; the
//!   phases are searched one after the other (each with the others fixed),
//!   starting from every phase's density fill. A bound on phase-granular
//!   placement under the budget, not a policy.
//!
//! These are the best candidates *found*, not proven optima: an order
//! search cannot split DRAM between two objects other than as a prefix
//! fill, and the phases are searched once each.

use crate::config::phased::{PhasedProgram, PlacementSpec};
use crate::config::Platform;
use crate::error::SimError;
use crate::pool::parallel_map;
use crate::tier_run::{run_program, Outcome};
use crate::tiering::oracle::{density_order, fill, lines, touched_pages, with_next};
use crate::tiering::{page_sizes, PAGE};

/// Positional greedy over prefix-fill orders (see the module docs): `base`
/// the objects in their default order, `limit` the pages each may get,
/// `cap` DRAM pages; `eval` scores a batch of candidates (lower is better;
/// each batch holds fills not scored before). Returns the best fill found and its
/// score (`None` if nothing was evaluated: no object to place).
pub fn greedy_prefix<E>(
    base: &[usize],
    limit: &[u64],
    cap: u64,
    mut eval: E,
) -> Result<Option<(Vec<u64>, f64)>, SimError>
where
    E: FnMut(&[Vec<u64>]) -> Result<Vec<f64>, SimError>,
{
    let wanted: u64 = base.iter().filter_map(|&o| limit.get(o)).sum();
    let mut prefix: Vec<usize> = Vec::new();
    let mut best: Option<(Vec<u64>, f64)> = None;
    let mut seen: Vec<(Vec<u64>, f64)> = Vec::new();
    loop {
        let used: u64 = fill(&prefix, limit, cap).iter().sum();
        let rest: Vec<usize> = base
            .iter()
            .filter(|o| !prefix.contains(o))
            .copied()
            .collect();
        if rest.is_empty() || (!prefix.is_empty() && (used >= cap || used >= wanted)) {
            break;
        }
        let mut cands: Vec<(usize, Vec<u64>)> = Vec::new();
        for &r in &rest {
            let p = fill(&with_next(&prefix, r, base), limit, cap);
            if !cands.iter().any(|(_, q)| *q == p) {
                cands.push((r, p));
            }
        }
        let todo: Vec<Vec<u64>> = cands
            .iter()
            .filter(|c| !seen.iter().any(|(p, _)| *p == c.1))
            .map(|c| c.1.clone())
            .collect();
        if !todo.is_empty() {
            let s = eval(&todo)?;
            seen.extend(todo.into_iter().zip(s));
        }
        let scores: Vec<f64> = cands
            .iter()
            .map(|c| {
                seen.iter()
                    .find(|(p, _)| *p == c.1)
                    .map_or(f64::INFINITY, |x| x.1)
            })
            .collect();
        let mut i = 0;
        for (k, s) in scores.iter().enumerate() {
            if *s < scores[i] {
                i = k;
            }
        }
        let Some(&s) = scores.get(i) else { break };
        if best.as_ref().is_none_or(|b| s < b.1) {
            best = Some((cands[i].1.clone(), s));
        }
        prefix.push(cands[i].0);
    }
    Ok(best)
}

/// What one hindsight search found.
#[derive(Clone, Debug)]
pub struct Found {
    /// The best run (policy label `oracle-static` / `oracle-free`).
    pub outcome: Outcome,
    /// Simulator runs the search made.
    pub runs: usize,
}

/// Runs with memoisation: the same placement is simulated once.
struct Runner<'a> {
    platform: &'a Platform,
    prog: &'a PhasedProgram,
    ranks: u32,
    dram_bytes: u64,
    max_ms: f64,
    slow: &'a str,
    jobs: usize,
    free: bool,
    seen: Vec<(Vec<Vec<u64>>, Outcome)>,
}

impl Runner<'_> {
    fn run(&mut self, cands: &[Vec<Vec<u64>>]) -> Result<Vec<f64>, SimError> {
        let todo: Vec<Vec<Vec<u64>>> = cands
            .iter()
            .filter(|c| !self.seen.iter().any(|(p, _)| p == *c))
            .cloned()
            .collect();
        let res = parallel_map(&todo, self.jobs, None, |_, pages| {
            run_program(
                self.platform,
                self.prog,
                self.ranks,
                self.dram_bytes,
                PlacementSpec::Oracle {
                    pages: pages.clone(),
                    free_moves: self.free,
                },
                self.max_ms,
                self.slow,
            )
        })?;
        self.seen.extend(todo.into_iter().zip(res));
        Ok(cands
            .iter()
            .map(|c| {
                self.seen
                    .iter()
                    .find(|(p, _)| p == c)
                    .map_or(f64::INFINITY, |(_, o)| o.seconds)
            })
            .collect())
    }

    fn best(self) -> Option<Found> {
        let runs = self.seen.len();
        let mut best: Option<Outcome> = None;
        for (_, o) in self.seen {
            if best.as_ref().is_none_or(|b| o.seconds < b.seconds) {
                best = Some(o);
            }
        }
        best.map(|mut outcome| {
            outcome.summary = format!("{} (best of {runs} runs)", outcome.summary);
            Found { outcome, runs }
        })
    }
}

/// The two hindsight searches for one scenario on one platform: (static,
/// free moves). `dram_bytes` is one rank's DRAM, as every policy gets it.
#[allow(clippy::too_many_arguments)]
pub fn search(
    platform: &Platform,
    prog: &PhasedProgram,
    ranks: u32,
    dram_bytes: u64,
    max_ms: f64,
    slow: &str,
    jobs: usize,
) -> Result<(Found, Found), SimError> {
    let cap = dram_bytes / PAGE;
    let runner = |free| Runner {
        platform,
        prog,
        ranks,
        dram_bytes,
        max_ms,
        slow,
        jobs,
        free,
        seen: Vec::new(),
    };
    let none = || SimError::Invalid {
        file: platform.name.clone(),
        line: 0,
        key: "program".into(),
        message: "the hindsight search found no placement to run".into(),
    };

    // static: whole objects, the iteration's lines per page
    let whole: Vec<u64> = page_sizes(prog).iter().map(|s| s / PAGE).collect();
    let base = density_order(&lines(prog, None), &whole);
    let mut st = runner(false);
    greedy_prefix(&base, &whole, cap, |c| {
        let cands: Vec<Vec<Vec<u64>>> = c.iter().map(|p| vec![p.clone()]).collect();
        st.run(&cands)
    })?;
    if st.seen.is_empty() {
        st.run(&[vec![fill(&base, &whole, cap)]])?;
    }
    let st = st.best().ok_or_else(none)?;

    // free moves: each phase's touched pages, one phase at a time
    let n = prog.phases.len();
    let touched: Vec<Vec<u64>> = (0..n).map(|k| touched_pages(prog, k)).collect();
    let mut cur: Vec<Vec<u64>> = (0..n)
        .map(|k| {
            let order = density_order(&lines(prog, Some(k)), &touched[k]);
            fill(&order, &touched[k], cap)
        })
        .collect();
    let mut fr = runner(true);
    let mut cur_s = fr.run(std::slice::from_ref(&cur))?[0];
    for k in 0..n {
        if touched[k].iter().sum::<u64>() <= cap {
            continue;
        }
        let base = density_order(&lines(prog, Some(k)), &touched[k]);
        let found = greedy_prefix(&base, &touched[k], cap, |c| {
            let cands: Vec<Vec<Vec<u64>>> = c
                .iter()
                .map(|p| {
                    let mut v = cur.clone();
                    v[k] = p.clone();
                    v
                })
                .collect();
            fr.run(&cands)
        })?;
        if let Some((p, s)) = found {
            if s < cur_s {
                cur[k] = p;
                cur_s = s;
            }
        }
    }
    let fr = fr.best().ok_or_else(none)?;
    Ok((st, fr))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A score that is known in advance: the sum over objects of
    /// `weight[o]` per page left out of DRAM.
    fn cost(weight: &[f64]) -> impl Fn(&[u64], &[u64]) -> f64 + '_ {
        move |pages: &[u64], limit: &[u64]| {
            (0..weight.len())
                .map(|o| weight[o] * (limit[o] - pages[o]) as f64)
                .sum()
        }
    }

    #[test]
    fn greedy_finds_the_heaviest_objects_against_the_base_order() {
        // base order puts the light object first; the heaviest per page
        // is object 2, then 0
        let limit = [2, 2, 2];
        let c = cost(&[3.0, 1.0, 5.0]);
        let mut batches = Vec::new();
        let best = greedy_prefix(&[1, 0, 2], &limit, 3, |cands| {
            batches.push(cands.len());
            Ok(cands.iter().map(|p| c(p, &limit)).collect())
        })
        .unwrap_or_default();
        assert_eq!(best, Some((vec![1, 0, 2], 5.0)));
        // first place: 3 distinct candidates; second: 2, of which one was
        // the first place's best and is not run again; then DRAM is full
        assert_eq!(batches, vec![3, 1]);
    }

    #[test]
    fn everything_fits_in_one_evaluation() {
        let limit = [1, 1];
        let mut calls = 0;
        let best = greedy_prefix(&[0, 1], &limit, 5, |cands| {
            calls += 1;
            Ok(vec![1.0; cands.len()])
        })
        .unwrap_or_default();
        assert_eq!(best, Some((vec![1, 1], 1.0)));
        assert_eq!(calls, 1);
    }

    #[test]
    fn nothing_to_place_evaluates_nothing() {
        let best = greedy_prefix(&[], &[3], 5, |_| Ok(vec![])).unwrap_or_default();
        assert_eq!(best, None);
    }
}
