//! The writing side of [`crate::status`]: a snapshot of a runtime (and its
//! Unimem loop) as a [`RankStatus`], published atomically in
//! `MEMTAMER_TIER_STATUS_DIR` when something a reader cares about changed
//! (a decision, completed or failed moves, objects allocated or freed).
//! Checked at each main-loop iteration and written at the finish; never per
//! access, so the cost is a few lock acquisitions per iteration.

use crate::driver::Driver;
use crate::status::{self, ObjectStatus, RankStatus, RunState, FORMAT, VERSION};
use crate::TierRuntime;
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

/// What changes when the document should be rewritten.
type Key = (u64, u64, u64, usize, u64, u64);

/// One process's status publisher.
#[derive(Debug)]
pub struct Publisher {
    dir: PathBuf,
    host: String,
    pid: u32,
    last: Option<Key>,
}

impl Publisher {
    /// A publisher writing into `dir`.
    pub fn new(dir: PathBuf) -> Self {
        Publisher {
            dir,
            host: status::hostname(),
            pid: std::process::id(),
            last: None,
        }
    }

    /// From `MEMTAMER_TIER_STATUS_DIR`; `None` when unset or empty
    /// (publishing is opt-in: no files appear unless asked for).
    pub fn from_env() -> Option<Self> {
        std::env::var_os("MEMTAMER_TIER_STATUS_DIR")
            .filter(|d| !d.is_empty())
            .map(|d| Self::new(PathBuf::from(d)))
    }

    /// The document for `rt` (and `driver`, absent with Unimem off) now.
    pub fn snapshot(
        &self,
        rt: &TierRuntime,
        driver: Option<&Driver>,
        rank: Option<(u32, u32)>,
        state: RunState,
    ) -> RankStatus {
        let st = rt.stats();
        let shares = driver.map(|d| d.access_shares());
        let ds = driver.map(|d| d.stats()).unwrap_or_default();
        let objects = rt
            .objects()
            .into_iter()
            .map(|o| ObjectStatus {
                access_share: shares.and_then(|s| s.get(&o.addr).copied()),
                name: o.name,
                size: o.size as u64,
                tier: o.tier.into(),
                migrating: o.migrating,
                moves: o.moves,
                bytes_moved: o.bytes_moved,
                exposed_ms: o.exposed_ns as f64 / 1e6,
            })
            .collect();
        RankStatus {
            format: FORMAT.into(),
            version: VERSION,
            host: self.host.clone(),
            pid: self.pid,
            rank: rank.map(|r| r.0),
            ranks: rank.map(|r| r.1),
            state,
            updated_unix_ms: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64),
            unimem: driver.is_some(),
            profiler: driver
                .and_then(|d| d.access.selection())
                .map(|s| s.describe()),
            dram_budget: rt.config().dram_budget as u64,
            dram_used: rt.dram_used() as u64,
            iterations: ds.iterations,
            decisions: ds.decisions,
            plan: ds.last_plan.map(|(k, _)| k),
            moves: st.moves,
            failed: st.failed,
            bytes_moved: st.bytes_moved,
            copy_ms: st.copy_ns as f64 / 1e6,
            exposed_ms: st.exposed_ns() as f64 / 1e6,
            to_dram: Some((&st.to_dram).into()),
            to_slow: Some((&st.to_slow).into()),
            last_move_error: rt.last_move_error(),
            alloc: crate::alloc_site::counts(),
            decisions_detail: driver.map(|d| {
                let h = d.config().helper;
                let (guard_reverts, guard_refused) = d.guard_reverts();
                status::DecisionsStatus {
                    copies_exposed: h.why().into(),
                    node_ranks: h.node_ranks,
                    cpus: h.cpus,
                    cpus_from: h.cpus_from().into(),
                    guard_reverts,
                    guard_refused,
                }
            }),
            objects,
        }
    }

    /// Writes the document now (`state` finished at the end of the run).
    pub fn publish(
        &mut self,
        rt: &TierRuntime,
        driver: Option<&Driver>,
        rank: Option<(u32, u32)>,
        state: RunState,
    ) -> std::io::Result<PathBuf> {
        let s = self.snapshot(rt, driver, rank, state);
        let name = s.file_name();
        let text = serde_json::to_string_pretty(&s).map_err(std::io::Error::other)?;
        status::write_atomic(&self.dir, &name, &text)?;
        self.last = Some(key(rt, driver));
        Ok(self.dir.join(name))
    }

    /// Publishes when a decision was made, moves completed or failed, or
    /// objects came or went since the last document; `Ok(None)` otherwise.
    pub fn maybe_publish(
        &mut self,
        rt: &TierRuntime,
        driver: Option<&Driver>,
        rank: Option<(u32, u32)>,
    ) -> std::io::Result<Option<PathBuf>> {
        if self.last == Some(key(rt, driver)) {
            return Ok(None);
        }
        self.publish(rt, driver, rank, RunState::Running).map(Some)
    }
}

fn key(rt: &TierRuntime, driver: Option<&Driver>) -> Key {
    let st = rt.stats();
    (
        driver.map_or(0, |d| d.stats().decisions),
        st.moves,
        st.failed,
        rt.object_count(),
        rt.dram_used() as u64,
        // a revert changes the placement without a decision
        driver.map_or(0, |d| d.guard_reverts().0),
    )
}
