//! The `out` no-copy ablation's table (docs/notebook/tahoe.md, "Out blocks placed
//! without a copy"): Tahoe against the same Tahoe placing the `out` blocks
//! its tasks write whole in DRAM without copying them
//! ([`super::policy::TahoePolicy::with_out_no_copy`]), beyond the thesis
//! (§4.3.7: "we do not distinguish memory read and write").

use super::policy::overwrites;
use super::{dram_access_share, Measured, RunOut};
use crate::workload::taskgraph::TaskGraph;
use crate::workload::tiered::PAGE;
use std::collections::BTreeSet;

/// The run of the ablation.
pub const OUT_RUN: &str = "tahoe-outnocopy";

/// Tahoe without and with `out` blocks placed without a copy, on one case.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct OutNoCopy {
    /// Makespans (ms): `tahoe`, `tahoe-outnocopy`.
    pub ms: [f64; 2],
    /// Share of tasks with at least one block they write whole.
    pub task_share: f64,
    /// Whole pages of the blocks some task writes whole, over all pages
    /// of the program's blocks.
    pub page_share: f64,
    /// Pages promoted (copied or not), same order of runs.
    pub promoted: [u64; 2],
    /// Of the ablation's promotions, pages placed without a copy.
    pub fresh: u64,
    /// Share of line accesses served from DRAM, same order.
    pub dram_acc: [f64; 2],
}

fn promoted(r: Option<&RunOut>) -> u64 {
    r.and_then(|r| r.counters.iter().find(|c| c.0 == "promoted_pages"))
        .map_or(0, |c| c.1 as u64)
}

impl OutNoCopy {
    /// The ablation of one measured case on graph `g` (None: not run).
    pub fn of(m: &Measured, g: &TaskGraph) -> Option<OutNoCopy> {
        let out = m.runs.get(OUT_RUN)?;
        let base = m.runs.get("tahoe");
        let mut blocks = BTreeSet::new();
        let mut tasks = 0usize;
        for t in &g.tasks {
            let w: Vec<usize> = t
                .args
                .iter()
                .filter(|a| overwrites(&t.args, a))
                .map(|a| a.block)
                .collect();
            tasks += usize::from(!w.is_empty());
            blocks.extend(w);
        }
        let whole: u64 = blocks.iter().map(|&b| g.blocks[b].bytes / PAGE).sum();
        let all: u64 = g.blocks.iter().map(|b| b.bytes.div_ceil(PAGE)).sum();
        Some(OutNoCopy {
            ms: [base.map_or(f64::NAN, |r| r.makespan_ms), out.makespan_ms],
            task_share: tasks as f64 / g.tasks.len().max(1) as f64,
            page_share: whole as f64 / all.max(1) as f64,
            promoted: [promoted(base), promoted(Some(out))],
            fresh: out.tier.pages_fresh,
            dram_acc: [dram_access_share(base), dram_access_share(Some(out))],
        })
    }
}
