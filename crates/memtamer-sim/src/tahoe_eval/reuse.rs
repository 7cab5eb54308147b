//! How much data reuse a task program offers a DRAM of a given size
//! (issue 21 item 3): placement can only pay where a block is used again
//! before the DRAM must give it up. The measure is a bound that no policy
//! sees: an LRU cache of `capacity` bytes at block granularity, fed the
//! program's line accesses in task creation order, and the share of those
//! accesses it would serve (a block's first use is always a miss; a task's
//! passes after its first over a block that fits the DRAM are hits).

use crate::workload::taskgraph::TaskGraph;
use crate::workload::tiered::PAGE;
use crate::workload::LINE;

/// Reuse facts of one program at one DRAM size.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Reuse {
    /// Mean number of tasks that use a block.
    pub users_per_block: f64,
    /// Share of line accesses to a block whose LRU stack distance (bytes of
    /// other blocks used since its last use, plus its own) fits the DRAM.
    pub lru_hits: f64,
}

/// The [`Reuse`] of `g` with `capacity` bytes of DRAM.
pub fn reuse(g: &TaskGraph, capacity: u64) -> Reuse {
    let size: Vec<u64> = g
        .blocks
        .iter()
        .map(|b| b.bytes.div_ceil(PAGE) * PAGE)
        .collect();
    let mut last: Vec<Option<usize>> = vec![None; g.blocks.len()];
    let mut users = vec![0u64; g.blocks.len()];
    let (mut hits, mut total) = (0u64, 0u64);
    for (t, task) in g.tasks.iter().enumerate() {
        let mut seen: Vec<usize> = Vec::new();
        for a in &task.args {
            let lines = g.arg_lines(a);
            total += lines;
            let b = a.block;
            if seen.contains(&b) {
                hits += lines;
                continue;
            }
            // passes after the first over a block that fits the DRAM
            let first = lines.min(g.blocks[b].bytes.div_ceil(LINE));
            if size[b] <= capacity {
                hits += lines - first;
            }
            let lines = first;
            seen.push(b);
            users[b] += 1;
            if let Some(l) = last[b] {
                let dist: u64 = (0..g.blocks.len())
                    .filter(|&o| last[o].is_some_and(|x| x > l || (x == l && o != b)))
                    .map(|o| size[o])
                    .sum::<u64>()
                    + size[b];
                if dist <= capacity {
                    hits += lines;
                }
            }
        }
        for &b in &seen {
            last[b] = Some(t);
        }
    }
    let used = users.iter().filter(|&&u| u > 0).count().max(1);
    Reuse {
        users_per_block: users.iter().sum::<u64>() as f64 / used as f64,
        lru_hits: hits as f64 / total.max(1) as f64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::taskgraph::{Arg, Block, Mode, Pattern, TaskDef, IMPLICIT};

    fn g(uses: &[usize]) -> TaskGraph {
        TaskGraph {
            name: "t".into(),
            arrays: vec!["a".into()],
            blocks: (0..4)
                .map(|_| Block {
                    array: 0,
                    bytes: PAGE,
                })
                .collect(),
            types: vec!["x".into()],
            tasks: uses
                .iter()
                .map(|&b| TaskDef {
                    ty: 0,
                    args: vec![Arg {
                        block: b,
                        mode: Mode::In,
                        pattern: Pattern::Seq,
                        passes: 1.0,
                    }],
                    parent: IMPLICIT,
                    compute_ns_per_line: 0.0,
                })
                .collect(),
            iterations: 1,
            task_touched: Vec::new(),
            frees: Vec::new(),
        }
    }

    #[test]
    fn reuse_counts_only_within_the_dram() {
        // 0 1 2 3 0: block 0's reuse has a stack distance of 4 pages
        let prog = g(&[0, 1, 2, 3, 0]);
        assert_eq!(reuse(&prog, 4 * PAGE).lru_hits, 0.2);
        assert_eq!(reuse(&prog, 3 * PAGE).lru_hits, 0.0);
        assert_eq!(reuse(&prog, 4 * PAGE).users_per_block, 1.25);
        // 0 0 0: two of three accesses reuse at distance 1
        let hot = g(&[0, 0, 0]);
        assert!((reuse(&hot, PAGE).lru_hits - 2.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn passes_after_the_first_hit_only_if_the_block_fits() {
        // one task, 4 passes over a one-page block: 3 of 4 served
        let mut prog = g(&[0]);
        prog.tasks[0].args[0].passes = 4.0;
        assert!((reuse(&prog, PAGE).lru_hits - 0.75).abs() < 1e-12);
        assert_eq!(reuse(&prog, PAGE - LINE).lru_hits, 0.0);
    }
}
