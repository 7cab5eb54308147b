//! What allocation-time placement ([`crate::alloc_site`]) reads of the
//! plan in force. A child module of [`crate::driver`], so that it reads the
//! driver's private state without widening it; its own file, so that
//! `driver.rs` stays within the layout limit.

use super::Driver;
use std::collections::BTreeSet;

impl Driver {
    /// Per phase of the plan in force, `(address, id)` of each object it
    /// holds in DRAM (empty without a plan: while profiling or deciding),
    /// the current phase and the boundaries so far. Why: a new object may
    /// take only the DRAM the plan leaves free in the phases it lives.
    pub fn plan_dram(&self) -> (Vec<Vec<(usize, u64)>>, usize, u64) {
        let at = |o: usize| Some((*self.addrs.get(o)?, *self.ids.get(o)?));
        let sets = self.plan.as_ref().map_or_else(Vec::new, |p| {
            let set = |s: &BTreeSet<usize>| s.iter().filter_map(|&o| at(o)).collect();
            p.dram.iter().map(set).collect()
        });
        (sets, self.phase, self.stats.boundaries)
    }
}
