//! `memtamer sim compare-pats`: static PATS (Eq. 1), calibrated and adaptive
//! PATS against the Baseline on platforms none of them was tuned on, for
//! write, read-heavy and small-request mixes. Says where each wins.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::calibrate::probe_beside_pm;
use crate::config::{Rw, Scenario, SweepSpec};
use crate::error::SimError;
use crate::experiment::{run_scenario, RunOptions};

/// PM threads in every comparison (the PATS paper's largest count).
pub const PM_THREADS: u32 = 14;
/// A policy "protects DRAM" when memcpy keeps at least this share of its
/// throughput alone (the calibration tolerance).
pub const PROTECTED: f64 = 0.95;

/// The compared policies, Baseline first.
pub const POLICIES: [&str; 4] = ["baseline", "pats", "pats-calibrated", "pats-adaptive"];

/// One PM request mix.
#[derive(Clone, Copy, Debug)]
pub struct Mix {
    /// Label.
    pub name: &'static str,
    /// Direction.
    pub rw: Rw,
    /// Request size, bytes.
    pub request_bytes: u64,
}

/// The mixes compared: writes, reads, small writes.
pub const MIXES: [Mix; 3] = [
    Mix {
        name: "4 KB writes",
        rw: Rw::Write,
        request_bytes: 4096,
    },
    Mix {
        name: "4 KB reads",
        rw: Rw::Read,
        request_bytes: 4096,
    },
    Mix {
        name: "512 B writes",
        rw: Rw::Write,
        request_bytes: 512,
    },
];

/// One policy on one platform and mix.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Row {
    /// Platform.
    pub platform: String,
    /// Mix label.
    pub mix: &'static str,
    /// Policy.
    pub policy: String,
    /// memcpy throughput over its value with no PM thread.
    pub dram_kept: f64,
    /// Request-level PM throughput, GB/s.
    pub pm_gbps: f64,
    /// PM throughput over the Baseline's.
    pub pm_vs_baseline: f64,
}

fn scenario(platform: &str, mix: Mix, pm_threads: u32) -> Scenario {
    let mut s = probe_beside_pm(
        &format!("compare-{platform}"),
        platform,
        pm_threads,
        PM_THREADS,
        mix.rw,
        mix.request_bytes,
    );
    s.duration_ms = 4.0;
    s.warmup_ms = 1.0;
    s.policy_window_us = 100.0;
    s
}

/// Runs every platform x mix x policy.
pub fn compare(platforms: &[String], progress: bool) -> Result<Vec<Row>, SimError> {
    compare_jobs(platforms, progress, 0)
}

/// [`compare`] on `jobs` worker threads (0: all cores).
pub fn compare_jobs(
    platforms: &[String],
    progress: bool,
    jobs: usize,
) -> Result<Vec<Row>, SimError> {
    let opts = RunOptions {
        progress,
        jobs,
        ..Default::default()
    };
    let mut rows = Vec::new();
    for platform in platforms {
        for mix in MIXES {
            let alone = run_scenario(&scenario(platform, mix, 0), &opts)?;
            let alone = alone
                .points
                .first()
                .and_then(|p| p.metrics.get("probe.gbps").copied())
                .unwrap_or(0.0);
            let mut s = scenario(platform, mix, PM_THREADS);
            s.sweep = vec![SweepSpec {
                key: "policy".into(),
                values: POLICIES
                    .iter()
                    .map(|p| toml::Value::String((*p).into()))
                    .collect(),
            }];
            let r = run_scenario(&s, &opts)?;
            let pm_metric = match mix.rw {
                Rw::Write => "pm.request_write_gbps",
                Rw::Read => "pm.request_read_gbps",
            };
            let by_policy: BTreeMap<String, (f64, f64)> = r
                .points
                .iter()
                .filter_map(|p| {
                    let policy = p.params.get("policy")?.as_str()?.to_string();
                    let dram = p.metrics.get("probe.gbps").copied()?;
                    let pm = p.metrics.get(pm_metric).copied()?;
                    Some((policy, (dram, pm)))
                })
                .collect();
            let base_pm = by_policy.get("baseline").map_or(0.0, |v| v.1);
            for policy in POLICIES {
                let Some(&(dram, pm)) = by_policy.get(policy) else {
                    continue;
                };
                rows.push(Row {
                    platform: platform.clone(),
                    mix: mix.name,
                    policy: policy.into(),
                    dram_kept: if alone > 0.0 { dram / alone } else { 0.0 },
                    pm_gbps: pm,
                    pm_vs_baseline: if base_pm > 0.0 { pm / base_pm } else { 0.0 },
                });
            }
        }
    }
    Ok(rows)
}

/// The winners of one platform and mix: among the policies that protect
/// DRAM, those within 2% of the best PM throughput; if none protects DRAM,
/// the one that keeps the most of it.
pub fn winners(rows: &[&Row]) -> Vec<String> {
    let protecting: Vec<&&Row> = rows
        .iter()
        .filter(|r| r.policy != "baseline" && r.dram_kept >= PROTECTED)
        .collect();
    if protecting.is_empty() {
        return rows
            .iter()
            .filter(|r| r.policy != "baseline")
            .max_by(|a, b| a.dram_kept.total_cmp(&b.dram_kept))
            .map(|r| vec![format!("{} (DRAM not protected)", r.policy)])
            .unwrap_or_default();
    }
    let best = protecting.iter().map(|r| r.pm_gbps).fold(0.0, f64::max);
    protecting
        .iter()
        .filter(|r| r.pm_gbps >= best * 0.98)
        .map(|r| r.policy.clone())
        .collect()
}

/// Markdown tables: every row, then the winners.
pub fn markdown(rows: &[Row]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{PM_THREADS} PM threads beside a single-thread DRAM memcpy. `DRAM kept` is memcpy over its value with no PM thread; a policy protects DRAM at >= {:.0}%.\n",
        PROTECTED * 100.0
    );
    let _ = writeln!(
        s,
        "| platform | mix | policy | DRAM kept | PM GB/s | PM vs Baseline |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|");
    for r in rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.1}% | {:.2} | {:.2}x |",
            r.platform,
            r.mix,
            r.policy,
            r.dram_kept * 100.0,
            r.pm_gbps,
            r.pm_vs_baseline
        );
    }
    let _ = writeln!(
        s,
        "\n**Where each wins** (most PM throughput while protecting DRAM; ties within 2%):\n"
    );
    let _ = writeln!(s, "| platform | mix | winners |");
    let _ = writeln!(s, "|---|---|---|");
    let mut keys: Vec<(&str, &str)> = rows.iter().map(|r| (r.platform.as_str(), r.mix)).collect();
    keys.dedup();
    for (platform, mix) in keys {
        let group: Vec<&Row> = rows
            .iter()
            .filter(|r| r.platform == platform && r.mix == mix)
            .collect();
        let _ = writeln!(s, "| {platform} | {mix} | {} |", winners(&group).join(", "));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(policy: &str, dram_kept: f64, pm_gbps: f64) -> Row {
        Row {
            platform: "p".into(),
            mix: "m",
            policy: policy.into(),
            dram_kept,
            pm_gbps,
            pm_vs_baseline: 1.0,
        }
    }

    #[test]
    fn winners_protect_dram_first_then_maximise_pm() {
        let rows = [
            row("baseline", 0.1, 3.0),
            row("pats", 0.99, 2.0),
            row("pats-calibrated", 0.97, 2.5),
            row("pats-adaptive", 0.96, 2.48),
        ];
        let refs: Vec<&Row> = rows.iter().collect();
        assert_eq!(winners(&refs), vec!["pats-calibrated", "pats-adaptive"]);
        let rows = [
            row("baseline", 0.1, 3.0),
            row("pats", 0.5, 2.0),
            row("pats-adaptive", 0.7, 1.0),
        ];
        let refs: Vec<&Row> = rows.iter().collect();
        assert_eq!(winners(&refs), vec!["pats-adaptive (DRAM not protected)"]);
    }
}
