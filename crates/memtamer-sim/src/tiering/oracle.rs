//! Hindsight placements (issue 20: what is attainable under a scenario's
//! DRAM budget?). Not a policy a runtime could run: the placement is
//! chosen offline by evaluating candidates in the simulator itself
//! (`tier_oracle`), with the whole run known. Two kinds:
//!
//! * **static**: one set of leading pages per object, placed at allocation
//!   and never moved (attainable by any runtime that knew it);
//! * **free moves**: each phase's own set, put in place at the phase's start
//!   without copies and without time (`PhaseStart::place`): no runtime can
//!   do that, so it bounds every phase-granular placement (Unimem's included,
//!   thesis §3.4: decisions at phase boundaries) under the same DRAM budget.
//!
//! The candidates are prefix fills: objects in an order, each given its
//! leading pages up to what the phase touches, until DRAM is full. The
//! pure helpers below build them; `tier_oracle` searches over orders.

use super::{PhaseObs, PhasePolicy, PhaseStart, SpaceView, LINE_BYTES, PAGE};
use crate::config::phased::PhasedProgram;
use crate::config::Pattern;

/// A fixed per-phase placement (see the module docs).
#[derive(Clone, Debug, PartialEq)]
pub struct Oracle {
    pages: Vec<Vec<u64>>,
    free: bool,
    names: Vec<String>,
}

impl Oracle {
    /// `pages[phase][object]` leading DRAM pages; `free`: set each phase's
    /// pages at its start without copies (else phase 0's, at allocation,
    /// for the whole run); `names`: object names for the summary.
    pub fn new(pages: Vec<Vec<u64>>, free: bool, names: Vec<String>) -> Oracle {
        Oracle { pages, free, names }
    }

    fn set(&self, phase: usize) -> Vec<u64> {
        self.pages
            .get(phase)
            .or_else(|| self.pages.first())
            .cloned()
            .unwrap_or_default()
    }
}

impl PhasePolicy for Oracle {
    fn initial(&mut self) -> Vec<u64> {
        self.set(0)
    }

    fn phase_start(&mut self, _iter: u32, phase: usize, _v: &dyn SpaceView) -> PhaseStart {
        PhaseStart {
            place: self.free.then(|| self.set(phase)),
            ..PhaseStart::default()
        }
    }

    fn phase_end(&mut self, _iter: u32, _phase: usize, _obs: &PhaseObs, _v: &dyn SpaceView) {}

    fn summary(&self) -> String {
        let show = |p: &Vec<u64>| {
            p.iter()
                .enumerate()
                .filter(|(_, &n)| n > 0)
                .map(|(o, n)| format!("{} {n}", self.names.get(o).map_or("?", |s| s.as_str())))
                .collect::<Vec<_>>()
                .join(", ")
        };
        if self.free {
            let sets: Vec<String> = self.pages.iter().map(show).collect();
            format!(
                "hindsight, free moves, DRAM pages per phase [{}]",
                sets.join(" | ")
            )
        } else {
            format!("hindsight static, DRAM pages [{}]", show(&self.set(0)))
        }
    }
}

/// Pages of each object that phase `phase` touches: a sequential access
/// of `b` bytes reads the object from its start (wrapping), so its first
/// `min(b, size)` bytes; a random one the whole object.
pub fn touched_pages(prog: &PhasedProgram, phase: usize) -> Vec<u64> {
    let sizes = super::page_sizes(prog);
    let mut t = vec![0u64; prog.objects.len()];
    if let Some(ph) = prog.phases.get(phase) {
        for a in &ph.access {
            if let Some(o) = prog.object_index(&a.object) {
                let pages = match a.pattern {
                    Pattern::Rand => sizes[o] / PAGE,
                    _ => a.bytes.min(sizes[o]).div_ceil(PAGE),
                };
                t[o] = t[o].max(pages);
            }
        }
    }
    t
}

/// Lines each object gets in phase `phase` (`None`: a whole iteration).
pub fn lines(prog: &PhasedProgram, phase: Option<usize>) -> Vec<u64> {
    let mut l = vec![0u64; prog.objects.len()];
    for (k, ph) in prog.phases.iter().enumerate() {
        if phase.is_some_and(|p| p != k) {
            continue;
        }
        for a in &ph.access {
            if let Some(o) = prog.object_index(&a.object) {
                l[o] += a.bytes.div_ceil(LINE_BYTES);
            }
        }
    }
    l
}

/// Objects with lines, densest first (lines per page of `limit`, the pages
/// they may get), ties by index: the order an oracle search starts from
/// (no model: only the program's own access counts).
pub fn density_order(lines: &[u64], limit: &[u64]) -> Vec<usize> {
    let mut v: Vec<usize> = (0..lines.len())
        .filter(|&o| lines[o] > 0 && limit.get(o).copied().unwrap_or(0) > 0)
        .collect();
    let d = |o: usize| lines[o] as f64 / limit[o] as f64;
    v.sort_by(|&a, &b| d(b).total_cmp(&d(a)).then(a.cmp(&b)));
    v
}

/// Fills `capacity_pages` of DRAM with the objects of `order`, each up to
/// its `limit` pages from its start: leading DRAM pages per object.
pub fn fill(order: &[usize], limit: &[u64], capacity_pages: u64) -> Vec<u64> {
    let mut left = capacity_pages;
    let mut pages = vec![0u64; limit.len()];
    for &o in order {
        let Some(&l) = limit.get(o) else { continue };
        let n = l.saturating_sub(pages[o]).min(left);
        pages[o] += n;
        left -= n;
    }
    pages
}

/// The order `prefix`, then `next`, then the rest of `base` (without
/// repeats): one candidate of the positional search.
pub fn with_next(prefix: &[usize], next: usize, base: &[usize]) -> Vec<usize> {
    let mut v = prefix.to_vec();
    v.push(next);
    v.extend(
        base.iter()
            .filter(|o| !v.contains(o))
            .copied()
            .collect::<Vec<_>>(),
    );
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tiering::test_support::program;

    #[test]
    fn fill_takes_objects_in_order_up_to_their_limits() {
        assert_eq!(fill(&[2, 0, 1], &[4, 4, 3], 5), vec![2, 0, 3]);
        assert_eq!(fill(&[1], &[4, 4, 3], 5), vec![0, 4, 0]);
        assert_eq!(fill(&[0, 0, 7], &[4], 9), vec![4]);
        assert_eq!(fill(&[0, 1], &[4, 4], 0), vec![0, 0]);
    }

    #[test]
    fn densest_first_and_untouched_objects_left_out() {
        // lines per page: 1.0, 4.0, 0 (untouched), 4.0 -> 1 and 3 tie by index
        assert_eq!(density_order(&[4, 8, 0, 4], &[4, 2, 2, 1]), vec![1, 3, 0]);
        assert_eq!(density_order(&[4, 8], &[0, 2]), vec![1]);
    }

    #[test]
    fn with_next_keeps_the_prefix_and_the_rest_in_base_order() {
        assert_eq!(with_next(&[3], 1, &[0, 1, 2, 3]), vec![3, 1, 0, 2]);
        assert_eq!(with_next(&[], 2, &[0, 1, 2]), vec![2, 0, 1]);
    }

    #[test]
    fn touched_pages_and_lines_come_from_the_program() {
        // object 0: 3 pages; a sequential pass of 1 page and one of 2;
        // object 1: 2 pages, untouched in phase 1
        let l = PAGE / LINE_BYTES;
        let prog = program(
            &[3, 2],
            &[&[(0, l, false), (1, 2 * l, true)], &[(0, 2 * l, false)]],
        );
        assert_eq!(touched_pages(&prog, 0), vec![1, 2]);
        assert_eq!(touched_pages(&prog, 1), vec![2, 0]);
        assert_eq!(touched_pages(&prog, 9), vec![0, 0]);
        assert_eq!(lines(&prog, Some(0)), vec![l, 2 * l]);
        assert_eq!(lines(&prog, None), vec![3 * l, 2 * l]);
    }

    #[test]
    fn free_moves_place_each_phase_and_static_only_at_allocation() {
        use crate::tiering::test_support::View;
        let v = View::default();
        let mut free = Oracle::new(vec![vec![1, 0], vec![0, 2]], true, vec![]);
        assert_eq!(free.initial(), vec![1, 0]);
        assert_eq!(free.phase_start(0, 1, &v).place, Some(vec![0, 2]));
        assert!(free.summary().contains("free moves"));
        let mut fixed = Oracle::new(vec![vec![1, 0]], false, vec!["a".into(), "b".into()]);
        assert_eq!(fixed.initial(), vec![1, 0]);
        assert_eq!(fixed.phase_start(3, 2, &v), PhaseStart::default());
        assert_eq!(fixed.summary(), "hindsight static, DRAM pages [a 1]");
    }

    #[test]
    fn an_oracle_without_pages_is_refused() {
        use crate::config::phased::PlacementSpec;
        let bad = PlacementSpec::Oracle {
            pages: vec![],
            free_moves: false,
        };
        assert!(bad.validate().is_err());
        let ok = PlacementSpec::Oracle {
            pages: vec![vec![1]],
            free_moves: true,
        };
        assert_eq!(ok.validate(), Ok(()));
        assert_eq!(ok.label(), "oracle-free");
    }
}
