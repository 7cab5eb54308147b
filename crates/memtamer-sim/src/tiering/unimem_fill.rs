//! The remainder fill in the simulated Unimem (`unimem::fill`;
//! docs/notebook/unimem.md section 5, "Partial units"): the DRAM a decided
//! plan leaves free in every phase gets the leading pages of one more
//! regular unit, cut off as a unit of its own.

use super::*;
use memtamer_core::unimem::fill::fill_remainder;

impl UnimemPolicy {
    /// The decision's plan `dram` of `problem` (from the units in `start`)
    /// with the room it leaves free in every phase filled, when the fill is
    /// on: while `unimem::fill::fill_remainder` finds a regular unit whose
    /// leading pages in that room are predicted faster, the unit is cut
    /// there (its index keeps the leading pages, the rest becomes the last
    /// unit; sizes, the §3.4.2 opt. 2 reference counts and the profile
    /// divided by pages) and the leading pages join every phase's set.
    /// Returns the problem, plan and start over the units after the cuts,
    /// and the decision text (empty when nothing was filled). A whole unit
    /// that fits is added uncut; after a cut the room is under a page.
    pub(super) fn fill_plan(
        &mut self,
        problem: Problem,
        dram: Vec<BTreeSet<ObjId>>,
        start: BTreeSet<ObjId>,
    ) -> (Problem, Vec<BTreeSet<ObjId>>, BTreeSet<ObjId>, String) {
        let (mut p, mut d, mut s) = (problem, dram, start);
        if !self.fill {
            return (p, d, s, String::new());
        }
        let mut text = Vec::new();
        // each round adds one unit to every phase's set: bounded by the units
        for _ in 0..self.units.len() {
            let divisible: Vec<bool> = self
                .units
                .iter()
                .map(|u| self.regular.get(u.obj).copied().unwrap_or(false))
                .collect();
            let Some(f) = fill_remainder(&p, &d, &s, &divisible, super::super::PAGE) else {
                break;
            };
            let un = self.units[f.unit];
            if f.rest.is_some() {
                let pages = f.prefix / super::super::PAGE;
                self.units[f.unit] = Unit {
                    pages,
                    part: true,
                    ..un
                };
                self.units.push(Unit {
                    first: un.first + pages,
                    pages: un.pages - pages,
                    part: true,
                    ..un
                });
                let share = pages as f64 / un.pages as f64;
                let refs = self.refs[f.unit];
                self.refs[f.unit] = refs * share;
                self.refs.push(refs * (1.0 - share));
                self.chunk_lines.push(0);
            }
            text.push(format!(
                "{} ({} KiB; predicted {:.3} -> {:.3} ms)",
                self.units[f.unit].label(),
                f.prefix / 1024,
                f.before * 1e3,
                f.after * 1e3
            ));
            self.sizes = f.problem.sizes.clone();
            self.profile = f.problem.phases.clone();
            (p, d, s) = (f.problem, f.dram, f.start);
        }
        let text = if text.is_empty() {
            String::new()
        } else {
            format!(", filled the DRAM left free with {}", text.join(", "))
        };
        (p, d, s, text)
    }
}
