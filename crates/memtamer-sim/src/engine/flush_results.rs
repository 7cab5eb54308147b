//! A flush job's counters over the measured window (a child of `flush.rs`).

use super::super::Engine;
use super::{FlushJobResult, FlushStats};
use crate::config::FlushMode;

impl Engine {
    /// Snapshot of the flush counters at the start of the measured window.
    pub(in crate::engine) fn flush_measure_start(&mut self) {
        let now = self.now;
        if let Some(u) = self.flush.as_mut() {
            for j in &mut u.jobs {
                j.base = j.stats;
                j.m_since = now;
            }
        }
    }

    /// The flush jobs' results over the measured window.
    pub(in crate::engine) fn flush_results(&mut self) -> Vec<FlushJobResult> {
        let now = self.now;
        let start = self.measure_start;
        let Some(u) = self.flush.as_mut() else {
            return Vec::new();
        };
        u.jobs
            .iter_mut()
            .map(|j| {
                let from = j.m_since.max(start);
                let mut area = j.stats.m_area;
                if now > from {
                    area += j.active as f64 * (now - from) as f64;
                }
                let s = j.stats;
                let b = j.base;
                let stats = FlushStats {
                    dirty: s.dirty - b.dirty,
                    clean: s.clean - b.clean,
                    nonresident: s.nonresident - b.nonresident,
                    in_flight: s.in_flight - b.in_flight,
                    proactive: s.proactive - b.proactive,
                    rfo: s.rfo - b.rfo,
                    evicted_dirty: s.evicted_dirty - b.evicted_dirty,
                    searches: s.searches - b.searches,
                    m_area: area - b.m_area,
                    dedicated: s.dedicated - b.dedicated,
                    flusher_batches: s.flusher_batches - b.flusher_batches,
                    self_drains: s.self_drains - b.self_drains,
                };
                let span = now.saturating_sub(start).max(1) as f64;
                FlushJobResult {
                    job: j.scenario_job,
                    flushers_avg: if j.mode == FlushMode::Eager {
                        0.0
                    } else {
                        stats.m_area / span
                    },
                    stats,
                    flushers_end: j.active as u64,
                    flushers_max: j.flushers.len() as u64,
                    searches: j.searches.clone(),
                }
            })
            .collect()
    }
}
