//! The numbers of issue 21's "Sim" line, from [`super::Measured`] runs.

use super::reuse::{reuse, Reuse};
use super::{type_means, Measured, RunOut};
use crate::workload::taskgraph::TaskGraph;
use memtamer_tahoe::model::t_partial;
use std::fmt::Write;

/// One row of the result table.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Platform.
    pub platform: String,
    /// Benchmark.
    pub bench: String,
    /// Makespans (ms) in [`POLICIES`] order.
    pub ms: [f64; 8],
    /// Time reduction of Tahoe vs unmanaged (1 - T_tahoe / T_unmanaged).
    pub vs_unmanaged: f64,
    /// Time reduction of Tahoe vs Unimem.
    pub vs_unimem: f64,
    /// Tahoe's time over the oracle's, minus 1.
    pub over_oracle: f64,
    /// Eq. 4.4 validation (thesis Table 4.3): |sum predicted - sum measured|
    /// / sum measured over the tasks of the round-robin run, each predicted
    /// from its type's measured all-slow and all-DRAM times and its own
    /// share of slow-tier line accesses.
    pub eq44_err: f64,
    /// Tahoe in-run: the same error for the head predictions of its
    /// decisions (Eq. 4.4 with the leave-one-out fallback model).
    pub tahoe_err: f64,
    /// Mean per-task |predicted - measured| / measured of those decisions.
    pub tahoe_task_err: f64,
    /// Tahoe: share of its copy time the workers waited for.
    pub tahoe_exposed: f64,
    /// Tahoe: GB moved.
    pub tahoe_gb_moved: f64,
    /// Fallback beta used (ns per line access).
    pub beta_ns: f64,
    /// Copy cost per page of the cost-benefit check (ns).
    pub copy_ns: f64,
    /// Time reduction of Tahoe without the check vs unmanaged.
    pub nocheck_vs_unmanaged: f64,
    /// The program's reuse at this DRAM size.
    pub reuse: Reuse,
    /// Which run the oracle column is (`super::ORACLE_CANDIDATES`).
    pub oracle_pick: String,
}

/// Column order of [`Row::ms`].
pub const POLICIES: [&str; 8] = [
    "unmanaged",
    "static",
    "unimem",
    "tahoe",
    "tahoe-nocheck",
    "oracle",
    "dram-only",
    "slow-only",
];

fn ms(m: &Measured, p: &str) -> f64 {
    m.runs.get(p).map_or(f64::NAN, |r| r.makespan_ms)
}

/// The Eq. 4.4 error of a run with the reference type times.
fn eq44(g: &TaskGraph, run: &RunOut, slow: &[(f64, f64)], dram: &[(f64, f64)]) -> (f64, f64) {
    let (mut pred, mut meas, mut per, mut n) = (0.0, 0.0, 0.0, 0usize);
    for (t, r) in run.records.iter().enumerate() {
        let ty = g.tasks[t].ty;
        let p = t_partial(
            slow[ty].1,
            dram[ty].1,
            (r.lines - r.dram_lines) as f64,
            r.lines as f64,
        );
        let m = r.run_ns();
        pred += p;
        meas += m;
        if m > 0.0 {
            per += (p - m).abs() / m;
            n += 1;
        }
    }
    ((pred - meas).abs() / meas.max(1e-9), per / n.max(1) as f64)
}

/// Tahoe's own predictions against its measured task times.
fn in_run(run: &RunOut) -> (f64, f64) {
    let (mut pred, mut meas, mut per, mut n) = (0.0, 0.0, 0.0, 0usize);
    for r in &run.records {
        if let Some(p) = r.predicted_ns {
            let m = r.run_ns();
            pred += p;
            meas += m;
            if m > 0.0 {
                per += (p - m).abs() / m;
                n += 1;
            }
        }
    }
    ((pred - meas).abs() / meas.max(1e-9), per / n.max(1) as f64)
}

impl Row {
    /// The row of one measured case; `g` is its graph.
    pub fn of(m: &Measured, g: &TaskGraph) -> Row {
        let v: Vec<f64> = POLICIES.iter().map(|p| ms(m, p)).collect();
        let t = v[3];
        let (eq44_err, tahoe_err, tahoe_task_err) = match (
            m.runs.get("slow-only"),
            m.runs.get("dram-only"),
            m.runs.get("round-robin"),
            m.runs.get("tahoe"),
        ) {
            (Some(s), Some(d), Some(rr), Some(th)) => {
                let (s, d) = (type_means(g, &s.records), type_means(g, &d.records));
                let (e, _) = eq44(g, rr, &s, &d);
                let (te, tt) = in_run(th);
                (e, te, tt)
            }
            _ => (f64::NAN, f64::NAN, f64::NAN),
        };
        let th = m.runs.get("tahoe");
        Row {
            platform: m.platform.clone(),
            bench: m.bench.clone(),
            ms: [v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]],
            vs_unmanaged: 1.0 - t / v[0],
            vs_unimem: 1.0 - t / v[2],
            over_oracle: t / v[5] - 1.0,
            eq44_err,
            tahoe_err,
            tahoe_task_err,
            tahoe_exposed: th.map_or(f64::NAN, |r| 1.0 - r.tier.overlap_share()),
            tahoe_gb_moved: th.map_or(f64::NAN, |r| r.tier.bytes_moved as f64 / 1e9),
            beta_ns: m.beta_ns,
            copy_ns: m.copy_ns_per_page,
            nocheck_vs_unmanaged: 1.0 - v[4] / v[0],
            reuse: reuse(g, m.capacity),
            oracle_pick: m.oracle_pick.clone(),
        }
    }
}

fn pct(x: f64) -> String {
    format!("{:+.1}%", 100.0 * x)
}

/// Markdown tables: makespans, the Done-when ratios and model errors per
/// platform, with the geometric-mean time ratio over benchmarks.
pub fn markdown(rows: &[Row]) -> String {
    let mut s = String::new();
    let mut plats: Vec<&str> = rows.iter().map(|r| r.platform.as_str()).collect();
    plats.dedup();
    for p in plats {
        let rs: Vec<&Row> = rows.iter().filter(|r| r.platform == p).collect();
        let _ = writeln!(s, "#### {p}\n");
        let _ = writeln!(
            s,
            "| Benchmark | {} (ms) | oracle's pick | tasks per block | LRU-reusable accesses |",
            POLICIES.join(" | ")
        );
        let _ = writeln!(s, "|---|{}---|---:|---:|", "---:|".repeat(POLICIES.len()));
        for r in &rs {
            let cells: Vec<String> = r.ms.iter().map(|x| format!("{x:.3}")).collect();
            let _ = writeln!(
                s,
                "| {} | {} | {} | {:.2} | {:.0}% |",
                r.bench,
                cells.join(" | "),
                r.oracle_pick,
                r.reuse.users_per_block,
                100.0 * r.reuse.lru_hits
            );
        }
        let _ = writeln!(
            s,
            "\n| Benchmark | Tahoe vs unmanaged | vs Unimem | vs oracle (time over) | no-check Tahoe vs unmanaged | Eq. 4.4 error (round-robin run) | Tahoe's prediction error (sum / per task) | beta ns/line | copy ns/page | exposed copy | GB moved |"
        );
        let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        for r in &rs {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {:.1}% | {:.1}% / {:.1}% | {:.2} | {:.0} | {:.0}% | {:.3} |",
                r.bench,
                pct(r.vs_unmanaged),
                pct(r.vs_unimem),
                pct(r.over_oracle),
                pct(r.nocheck_vs_unmanaged),
                100.0 * r.eq44_err,
                100.0 * r.tahoe_err,
                100.0 * r.tahoe_task_err,
                r.beta_ns,
                r.copy_ns,
                100.0 * r.tahoe_exposed,
                r.tahoe_gb_moved,
            );
        }
        let gm = |f: &dyn Fn(&Row) -> f64| -> f64 {
            let v: Vec<f64> = rs
                .iter()
                .map(|r| f(r))
                .filter(|x| x.is_finite() && *x > 0.0)
                .collect();
            (v.iter().map(|x| x.ln()).sum::<f64>() / v.len().max(1) as f64).exp()
        };
        let _ = writeln!(
            s,
            "| **geomean** | {} | {} | {} | {} | | | | | | |\n",
            pct(1.0 - gm(&|r| r.ms[3] / r.ms[0])),
            pct(1.0 - gm(&|r| r.ms[3] / r.ms[2])),
            pct(gm(&|r| r.ms[3] / r.ms[5]) - 1.0),
            pct(1.0 - gm(&|r| r.ms[4] / r.ms[0])),
        );
    }
    s
}
