//! One run of a phased program under a placement on a simulated platform
//! (shared by the evaluation, `tier_eval`, and the calibration,
//! `tier_calib`).

use crate::config::phased::{PhasedProgram, PlacementSpec};
use crate::config::{JobSpec, Platform, Scenario, WorkloadSpec};
use crate::engine::{Engine, EngineConfig};
use crate::error::SimError;
use crate::workload::phased::RankReport;
use crate::workload::tiered::TierStats;

/// One run's outcome.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// Policy label.
    pub policy: String,
    /// Slowest rank's end of its last iteration, s.
    pub seconds: f64,
    /// Migration accounting summed over ranks.
    pub stats: TierStats,
    /// Share of lines served by DRAM.
    pub dram_line_share: f64,
    /// Lines the ranks issued (what Unimem's profiler counts: every miss
    /// a sample), summed over ranks.
    pub lines: u64,
    /// Rank 0's policy summary.
    pub summary: String,
    /// Rank 0's phase times in the first iteration, s.
    pub first_phase_times: Vec<f64>,
}

/// Runs `prog` with `ranks` ranks on `platform` under `placement`.
pub fn run_program(
    platform: &Platform,
    prog: &PhasedProgram,
    ranks: u32,
    dram_bytes: u64,
    placement: PlacementSpec,
    max_ms: f64,
    slow_region: &str,
) -> Result<Outcome, SimError> {
    let label = placement.label();
    let job = JobSpec {
        name: "ranks".into(),
        class: Default::default(),
        threads: 2 * ranks,
        cpus: Some(format!("0-{}", 2 * ranks - 1)),
        start_cpus: None,
        group: None,
        workload: WorkloadSpec::Phased {
            program: Box::new(prog.clone()),
            placement: Box::new(placement),
            dram_bytes,
            fast_region: "dram".into(),
            slow_region: slow_region.into(),
        },
    };
    let sc = Scenario::with_jobs("tiered", &platform.name, vec![job]);
    let cfg = EngineConfig {
        seed: sc.seed,
        warmup: 0,
        duration: (max_ms * 1e9) as u64,
        window: 1_000_000_000,
        sampler: None,
        trace_search: false,
    };
    let bad = |m: String| SimError::Invalid {
        file: platform.name.clone(),
        line: 0,
        key: "job".into(),
        message: m,
    };
    let engine = Engine::new(platform, &sc, &cfg).map_err(bad)?;
    let r = engine.run(&mut memtamer_core::Baseline);
    outcome(label, &r.ranks).map_err(|m| bad(format!("{m} within max_ms = {max_ms}")))
}

fn outcome(policy: String, ranks: &[RankReport]) -> Result<Outcome, String> {
    let mut end = 0u64;
    let mut st = TierStats::default();
    let (mut d, mut s) = (0u64, 0u64);
    for r in ranks {
        end = end.max(r.finished.ok_or("a rank did not finish")?);
        st.moves += r.stats.moves;
        st.pages_moved += r.stats.pages_moved;
        st.bytes_moved += r.stats.bytes_moved;
        st.copy_ps += r.stats.copy_ps;
        st.exposed_ps += r.stats.exposed_ps;
        st.evict_copy_ps += r.stats.evict_copy_ps;
        st.evict_exposed_ps += r.stats.evict_exposed_ps;
        st.promote_exposed_ps += r.stats.promote_exposed_ps;
        st.peak_dram_bytes = st.peak_dram_bytes.max(r.stats.peak_dram_bytes);
        d += r.dram_lines;
        s += r.slow_lines;
    }
    Ok(Outcome {
        policy,
        seconds: end as f64 * 1e-12,
        stats: st,
        dram_line_share: d as f64 / (d + s).max(1) as f64,
        lines: d + s,
        summary: ranks.first().map(|r| r.summary.clone()).unwrap_or_default(),
        first_phase_times: ranks
            .first()
            .map(|r| r.first_phase_times.clone())
            .unwrap_or_default(),
    })
}
