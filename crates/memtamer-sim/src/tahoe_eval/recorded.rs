//! A task program from a recording of the real OMPT tool
//! (`MEMTAMER_TAHOE_RECORD=FILE`, `memtamer_tahoe::record`: one line per
//! task type, `type,instances,mean_ns,pages`).
//!
//! A recording keeps per type only the instance count, the mean task time
//! and the pages its dependence objects span; it does not keep which
//! instances share data, nor the order. The graph built from it therefore
//! rests on stated assumptions, none fitted to a result:
//!
//! * each instance reads and writes its footprint once (`inout`, one
//!   sequential pass over one block of `pages` pages);
//! * the instances of a type cycle over `ceil(instances / reuse)` blocks of
//!   their own, so each block is used by `reuse` instances, one after the
//!   other (chained by their `inout` dependence);
//! * types are interleaved in creation order in proportion to their counts;
//! * every task is a child of the program's implicit task (the recording
//!   keeps no parent), so Tahoe's sibling scheduling leaves its order;
//! * compute: the recorded mean time spread over the task's lines (the
//!   recording host ran with data in DRAM, so this also counts its memory
//!   time: an upper estimate of compute);
//! * `shrink` divides every type's instance count and footprint (compute
//!   per line unchanged) so that a recording of a real-size run fits a
//!   simulation of a few million lines.

use crate::workload::taskgraph::{Arg, Block, Mode, Pattern, TaskDef, TaskGraph, IMPLICIT};
use crate::workload::tiered::PAGE;
use crate::workload::LINE;
use memtamer_tahoe::record::{parse, Row};

/// Builds the graph of a recording's text (see the module doc); `name`
/// names it, `reuse` is the instances per block, `shrink` the divisor of
/// instance counts and footprints.
pub fn graph(name: &str, text: &str, reuse: u64, shrink: u64) -> Result<TaskGraph, String> {
    let shrink = shrink.max(1);
    let rows: Vec<Row> = parse(text).map_err(|e| format!("{name}: {e}"))?;
    // a recording's values are measurements: none is negative
    for r in &rows {
        if r.mean_ns < 0.0 || r.pages < 0.0 {
            return Err(format!(
                "{name}: type {}: mean_ns {} and pages {} must be >= 0",
                r.ty, r.mean_ns, r.pages
            ));
        }
        // 1e30 ns saturated the simulated clock and wrapped it: the tasks
        // took no time and every policy tied at +0.0%
        if r.mean_ns > crate::config::workload_spec::MAX_NS {
            return Err(format!(
                "{name}: type {}: mean_ns {:e} must be at most {:e} (the simulated clock counts picoseconds in 64 bits)",
                r.ty,
                r.mean_ns,
                crate::config::workload_spec::MAX_NS
            ));
        }
    }
    let rows: Vec<Row> = rows
        .into_iter()
        .filter(|r| r.instances > 0)
        .map(|r| Row {
            instances: r.instances.div_ceil(shrink),
            // compute per line stays that of the recording
            mean_ns: r.mean_ns / r.pages.max(1.0) * (r.pages / shrink as f64).round().max(1.0),
            pages: (r.pages / shrink as f64).round().max(1.0),
            ..r
        })
        .collect();
    if rows.is_empty() {
        return Err(format!("{name}: no task type with instances"));
    }
    let reuse = reuse.max(1);
    within_limits(name, &rows, reuse, shrink)?;
    let mut g = TaskGraph {
        name: name.into(),
        arrays: Vec::new(),
        blocks: Vec::new(),
        types: Vec::new(),
        tasks: Vec::new(),
        iterations: 1,
        task_touched: Vec::new(),
        frees: Vec::new(),
    };
    let mut first = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        g.types.push(r.ty.clone());
        g.arrays.push(format!("type{i}"));
        first.push(g.blocks.len());
        let n = r.instances.div_ceil(reuse);
        let bytes = r.pages.round() as u64 * PAGE;
        g.blocks.extend((0..n).map(|_| Block { array: i, bytes }));
    }
    // interleave: instance k of type i at position k / instances_i
    let mut order: Vec<(f64, usize, u64)> = rows
        .iter()
        .enumerate()
        .flat_map(|(i, r)| (0..r.instances).map(move |k| (k as f64 / r.instances as f64, i, k)))
        .collect();
    order.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    for (_, i, k) in order {
        let r = &rows[i];
        let nblocks = r.instances.div_ceil(reuse);
        let block = first[i] + (k % nblocks) as usize;
        let lines = (r.pages.round() as u64 * PAGE / LINE).max(1);
        g.tasks.push(TaskDef {
            ty: i,
            args: vec![Arg {
                block,
                mode: Mode::InOut,
                pattern: Pattern::Seq,
                passes: 1.0,
            }],
            compute_ns_per_line: r.mean_ns / lines as f64,
            // a recording keeps no parents (all tasks siblings)
            parent: IMPLICIT,
        });
    }
    g.validate()?;
    Ok(g)
}

/// Most tasks a recording may become (after `shrink`): a million, far
/// beyond the built-in programs; a recording of more wants a larger
/// `--shrink`. A bad count (2^64 - 1 instances) aborted the process on a
/// failed allocation of the task list.
pub const MAX_TASKS: u64 = 1 << 20;
/// Most pages of one task's block (after `shrink`): 16 GiB. Larger values
/// overflowed the block's byte count (`pages * PAGE` in a u64).
pub const MAX_TASK_PAGES: f64 = (1u64 << 22) as f64;
/// Most bytes of all blocks (after `shrink`): 1 TiB.
pub const MAX_FOOTPRINT: u64 = 1 << 40;

/// Refuses a (shrunk) recording the simulator cannot hold, naming the type
/// and the limit, before anything is allocated for it.
fn within_limits(name: &str, rows: &[Row], reuse: u64, shrink: u64) -> Result<(), String> {
    let hint = format!("(at --shrink {shrink}; a larger --shrink divides it)");
    let mut tasks = 0u64;
    let mut bytes = 0u64;
    for r in rows {
        tasks = tasks.saturating_add(r.instances);
        if tasks > MAX_TASKS {
            return Err(format!(
                "{name}: type {}: more than {MAX_TASKS} tasks in all {hint}",
                r.ty
            ));
        }
        if r.pages > MAX_TASK_PAGES {
            return Err(format!(
                "{name}: type {}: {} pages per task, more than {MAX_TASK_PAGES} {hint}",
                r.ty, r.pages
            ));
        }
        // both factors are bounded above, so this cannot overflow
        bytes += r.instances.div_ceil(reuse) * r.pages.round() as u64 * PAGE;
        if bytes > MAX_FOOTPRINT {
            return Err(format!(
                "{name}: type {}: data blocks over {MAX_FOOTPRINT} bytes in all {hint}",
                r.ty
            ));
        }
    }
    Ok(())
}

/// The recording shipped with the simulator: the heat client
/// (`crates/memtamer-tahoe/clients/heat.c`) under the OMPT tool.
pub const HEAT_RECORDING: &str = include_str!("../../builtin/tahoe/heat-record.csv");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recording_becomes_reused_chained_blocks() {
        let text = "# a recording\n0x10(64),6,1000.0,2\n0x20(4096,4096),2,500.0,1\n";
        let g = graph("r", text, 4, 1).unwrap();
        assert_eq!(g.types.len(), 2);
        // type 0: 6 instances over 2 blocks; type 1: 2 instances over 1 block
        assert_eq!(g.blocks.len(), 3);
        assert_eq!(g.blocks[0].bytes, 2 * PAGE);
        assert_eq!(g.tasks.len(), 8);
        let preds = g.predecessors();
        // the third instance of type 0 reuses block 0 after the first
        let t0: Vec<usize> = (0..8).filter(|&t| g.tasks[t].ty == 0).collect();
        assert_eq!(g.tasks[t0[2]].args[0].block, g.tasks[t0[0]].args[0].block);
        assert!(preds[t0[2]].contains(&t0[0]));
        // compute: 1000 ns over 128 lines
        assert!((g.tasks[t0[0]].compute_ns_per_line - 1000.0 / 128.0).abs() < 1e-9);
        assert!(graph("e", "0x10(64),x,1,2\n", 4, 1)
            .unwrap_err()
            .contains("line 1"));
        // shrink 2: 3 instances of 1 page, same compute per line
        let h = graph("r", text, 4, 2).unwrap();
        assert_eq!(h.blocks[0].bytes, PAGE);
        assert!((h.tasks[0].compute_ns_per_line - 1000.0 / 128.0).abs() < 1e-9);
    }

    /// A recording with 2^64 - 1 instances, or 1e30 pages, aborted the
    /// process (a failed allocation, after `pages * PAGE` wrapped); a
    /// negative page count was taken as one page, and a negative time was
    /// reported as a bad page count. Each is refused, naming the type.
    #[test]
    fn absurd_recordings_are_refused_by_type() {
        let err = |text: &str| graph("r", text, 4, 16).unwrap_err();
        let e = err("f(1),18446744073709551615,2,3\n");
        assert!(e.contains("type f(1): more than 1048576 tasks"), "{e}");
        let e = err("f(1),10,2,1e30\n");
        assert!(
            e.contains("type f(1): ") && e.contains("pages per task"),
            "{e}"
        );
        let e = err("f(1),10,1e30,3\n");
        assert!(
            e.contains("type f(1): mean_ns 1e30 must be at most 1e15"),
            "{e}"
        );
        let e = err("f(1),10,2,-3\n");
        assert!(e.contains("type f(1): mean_ns 2 and pages -3"), "{e}");
        let e = err("f(1),10,-2,3\n");
        assert!(e.contains("type f(1): mean_ns -2 and pages 3"), "{e}");
        // 2^20 tasks of 2^22 pages: within each limit, not in all
        let e = graph("r", "f(1),1048576,2,4194304\n", 1, 1).unwrap_err();
        assert!(e.contains("bytes in all"), "{e}");
        // the limits leave the shipped recording far below them
        assert!(graph("r", HEAT_RECORDING, 1, 1).is_ok());
    }

    #[test]
    fn shipped_recording_parses() {
        let g = graph("heat-recorded", HEAT_RECORDING, 4, 16).unwrap();
        assert!(!g.tasks.is_empty());
    }
}
