//! The value types of the `flush` workload (issue 19 item 5; thesis ch. 6,
//! digest `shared/design/thesis-archtm-ribbon.md` §3): which program's flush
//! pattern the application threads follow, who executes their flushes, and
//! the checks of its values.

use serde::{Deserialize, Serialize};

/// The flush pattern of a `flush` workload's application threads (thesis
/// Table 6.4 workloads, reduced to what reaches the memory system).
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum FlushPattern {
    /// PMEMKV-like put with the value at a random place (a pool whose free
    /// blocks are scattered; `pmemkv-arena` is the placement of a pool
    /// filled by inserts): a value of `value_bytes` at a random 64 B-aligned
    /// place is stored, the rest of the operation (`compute_ns`: index
    /// update, allocator, transaction bookkeeping) runs, then the value's
    /// lines are flushed and one fence ends the operation (libpmemobj
    /// commit).
    #[default]
    Pmemkv,
    /// PMEMKV-like put as libpmemobj places it in a pool filled by inserts
    /// (dbench randomfill, thesis §6.5.1): each thread allocates from its
    /// own arena (PMDK `heap.c`, `heap_thread_arena_assign`), and a run's
    /// free blocks are handed out first-in first-out in address order
    /// (`container_seglists.c`: "the blocks inserted first are allocated
    /// first"), so a thread's values are appended one after another. A
    /// block is the value plus PMDK's 16 B allocation header, rounded up to
    /// the 16 B allocation granularity (`alloc_class.c` `ALLOC_BLOCK_SIZE`;
    /// PMDK's generated classes may round up to 5% more). The lines the block
    /// covers are stored, `compute_ns` runs, they are flushed, one fence;
    /// the line shared with the previous block is stored and flushed again.
    #[serde(rename = "pmemkv-arena")]
    PmemkvArena,
    /// One PMEMKV `cmap` put of a new key as its sources persist it
    /// (pmemkv `cmap::put` -> libpmemobj-cpp `concurrent_hash_map`
    /// `insert_new_node` in a `flat_transaction` -> PMDK libpmemobj `tx.c`,
    /// `memops.c`, `ulog.c`, `palloc.c`): `compute_ns` of CPU work, the
    /// bucket's lock line stored, the node and the value (`value_bytes` + 1)
    /// allocated from the thread's two runs (appended; each header written
    /// and flushed by libpmem itself), the node's lock persisted, two 8 B
    /// undo-log snapshots (two non-temporal lines + two drains each), the
    /// commit's flush of every range and drain, and the redo log that
    /// publishes the allocations (three drains; two bitmap words and the
    /// undo generation number flushed). 10 fences per put; docs/notebook/ribbon.md
    /// "What one cmap put persists, from the sources".
    #[serde(rename = "pmemkv-cmap")]
    PmemkvCmap,
    /// Fast&Fair-like B+-tree insert into a random leaf of `value_bytes`
    /// (FAST_FAIR `btree.h` `insert_key`): the node holds between half and
    /// all but one of its 16 B entries (a full node splits into two
    /// half-full ones), the key goes to a random position among them, the
    /// entries from there to the last shift right by one, and each line
    /// the shift writes is stored, flushed and fenced on its own, from the
    /// last line backwards (FAST's per-line clflush + mfence).
    Fastfair,
    /// streamcluster-like (NVthreads redo): `value_bytes` stored
    /// sequentially, `compute_ns`, then the whole block flushed, one fence.
    Streamcluster,
    /// Characterization: each operation flushes `value_bytes` of lines in
    /// the state `line_state` and fences (one unit = one 64 B line).
    Lines,
}

/// Who executes the application threads' flushes.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum FlushMode {
    /// Every application thread flushes its own lines (clwb + sfence):
    /// as many flushing threads as application threads.
    #[default]
    Eager,
    /// Ribbon (thesis §6.3.1): per-thread flush queues served by M flusher
    /// threads; M set by the four-point search of
    /// `memtamer_ribbon::controller` (the runtime's own controller).
    Ribbon,
    /// Ribbon's queues and flushers with M fixed at `flushers` (the oracle
    /// sweep).
    Fixed,
}

/// The state of the lines a `lines` characterization flushes.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum LineState {
    /// Stored just before (modified in the core's cache): clwb writes it back.
    #[default]
    Dirty,
    /// Written back before and still cached: clwb only looks it up.
    Clean,
    /// In no cache: clwb needs the home agent's directory lookup.
    Nonresident,
}

/// Largest `value_bytes` of a flush workload (16 MiB).
pub const MAX_FLUSH_BYTES: u64 = 1 << 24;
/// Most flusher threads a flush workload may ask for.
pub const MAX_FLUSHERS: u32 = 1024;

/// Checks a flush workload's values; on error the key and why.
#[allow(clippy::too_many_arguments)]
pub(super) fn validate_flush(
    pattern: FlushPattern,
    value_bytes: u64,
    compute_ns: f64,
    mode: FlushMode,
    flushers: u32,
    sample_period: u64,
    probe_us: f64,
    interval_us: f64,
) -> Result<(), (&'static str, String)> {
    if !(64..=MAX_FLUSH_BYTES).contains(&value_bytes) {
        return Err((
            "value_bytes",
            format!("value_bytes must be in [64, {MAX_FLUSH_BYTES}], got {value_bytes}"),
        ));
    }
    if pattern == FlushPattern::Fastfair && !value_bytes.is_multiple_of(64) {
        return Err((
            "value_bytes",
            format!("a fastfair node is whole lines: value_bytes must be a multiple of 64, got {value_bytes}"),
        ));
    }
    if !(compute_ns.is_finite() && compute_ns >= 0.0) {
        return Err((
            "compute_ns",
            format!("compute_ns must be >= 0, got {compute_ns}"),
        ));
    }
    super::workload_spec::check_max_ns("compute_ns", compute_ns)?;
    match mode {
        FlushMode::Fixed if flushers == 0 || flushers > MAX_FLUSHERS => {
            return Err((
                "flushers",
                format!("mode = \"fixed\" needs flushers in [1, {MAX_FLUSHERS}], got {flushers}"),
            ))
        }
        FlushMode::Eager if flushers != 0 => {
            return Err((
                "flushers",
                "flushers is for mode = \"fixed\" (eager: the application threads flush)".into(),
            ))
        }
        _ => {}
    }
    if sample_period == 0 {
        return Err(("sample_period", "sample_period must be >= 1".into()));
    }
    for (k, v) in [("probe_us", probe_us), ("interval_us", interval_us)] {
        if !(v.is_finite() && v >= 1.0) {
            return Err((k, format!("{k} must be >= 1 µs, got {v}")));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(p: FlushPattern, bytes: u64, mode: FlushMode, m: u32) -> Result<(), &'static str> {
        validate_flush(p, bytes, 0.0, mode, m, 1, 100.0, 1000.0).map_err(|e| e.0)
    }

    #[test]
    fn bad_values_name_their_key() {
        assert_eq!(
            ok(FlushPattern::Pmemkv, 32, FlushMode::Eager, 0),
            Err("value_bytes")
        );
        assert_eq!(
            ok(FlushPattern::Fastfair, 100, FlushMode::Eager, 0),
            Err("value_bytes")
        );
        assert_eq!(
            ok(FlushPattern::Pmemkv, 256, FlushMode::Fixed, 0),
            Err("flushers")
        );
        assert_eq!(
            ok(FlushPattern::Pmemkv, 256, FlushMode::Eager, 3),
            Err("flushers")
        );
        assert_eq!(ok(FlushPattern::Pmemkv, 256, FlushMode::Fixed, 3), Ok(()));
        assert_eq!(
            validate_flush(
                FlushPattern::Lines,
                64,
                -1.0,
                FlushMode::Eager,
                0,
                1,
                100.0,
                1.0
            )
            .map_err(|e| e.0),
            Err("compute_ns")
        );
        assert_eq!(
            validate_flush(
                FlushPattern::Lines,
                64,
                0.0,
                FlushMode::Ribbon,
                0,
                0,
                100.0,
                1.0
            )
            .map_err(|e| e.0),
            Err("sample_period")
        );
        assert_eq!(
            validate_flush(
                FlushPattern::Lines,
                64,
                0.0,
                FlushMode::Ribbon,
                0,
                1,
                0.0,
                1.0
            )
            .map_err(|e| e.0),
            Err("probe_us")
        );
    }
}
