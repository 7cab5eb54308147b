//! The numbers of issue 21's "Sim" line, from [`super::Measured`] runs.

use super::outnocopy::OutNoCopy;
use super::reuse::{reuse, Reuse};
use super::{dram_access_share, type_means, Measured, RunOut, WORKERS};
use crate::workload::taskgraph::TaskGraph;
use crate::workload::tiered::PAGE;
use memtamer_tahoe::model::{t_partial, t_partial_parallel};
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
    /// Where the model error comes from ([`ModelErr`]).
    pub model: ModelErr,
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
    /// How much any placement could gain over first touch ([`Headroom`]).
    pub headroom: Headroom,
    /// Sibling scheduling's ablation ([`Siblings`]).
    pub siblings: Siblings,
    /// The `out` no-copy ablation, when it ran ([`OutNoCopy`]).
    pub out_no_copy: Option<OutNoCopy>,
}

/// Tahoe without and with sibling scheduling (thesis §4.3.6, Figure 4.6's
/// "optimized scheduling" step): makespans and how often consecutive
/// dispatches were siblings.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Siblings {
    /// Makespans (ms): `tahoe-nosib`, `tahoe`, `tahoe-nocheck-nosib`,
    /// `tahoe-nocheck`.
    pub ms: [f64; 4],
    /// Share of consecutive dispatches (by dispatch time) whose tasks
    /// have the same parent, in the same order of runs.
    pub adjacent: [f64; 4],
    /// Share of line accesses served from DRAM, same order.
    pub dram_acc: [f64; 4],
    /// Workers' busy share: task run time summed over the tasks, over
    /// the workers times the makespan (1: the run is throughput-bound,
    /// no worker ever idle), same order.
    pub busy: [f64; 4],
}

/// The runs of [`Siblings::ms`].
pub const SIBLING_RUNS: [&str; 4] = [
    "tahoe-nosib",
    "tahoe",
    "tahoe-nocheck-nosib",
    "tahoe-nocheck",
];

/// Share of consecutive dispatches of `r` (ordered by dispatch time, ties
/// by task) whose tasks share a parent (NaN without a run).
fn sibling_adjacency(g: &TaskGraph, r: Option<&RunOut>) -> f64 {
    let Some(r) = r.filter(|r| r.records.len() == g.tasks.len()) else {
        return f64::NAN;
    };
    let mut order: Vec<usize> = (0..g.tasks.len()).collect();
    order.sort_by_key(|&t| (r.records[t].dispatched, t));
    let same = order
        .windows(2)
        .filter(|w| g.tasks[w[0]].parent == g.tasks[w[1]].parent)
        .count();
    same as f64 / order.len().saturating_sub(1).max(1) as f64
}

/// Workers' busy share of a run (see [`Siblings::busy`]; NaN without one).
fn busy(r: Option<&RunOut>) -> f64 {
    let Some(r) = r else { return f64::NAN };
    let run: f64 = r.records.iter().map(|x| x.run_ns()).sum();
    run / (WORKERS as f64 * r.makespan_ms * 1e6)
}

impl Siblings {
    /// The ablation of one measured case on graph `g`.
    pub fn of(m: &Measured, g: &TaskGraph) -> Siblings {
        Siblings {
            ms: SIBLING_RUNS.map(|p| ms(m, p)),
            adjacent: SIBLING_RUNS.map(|p| sibling_adjacency(g, m.runs.get(p))),
            dram_acc: SIBLING_RUNS.map(|p| dram_access_share(m.runs.get(p))),
            busy: SIBLING_RUNS.map(|p| busy(m.runs.get(p))),
        }
    }
}

/// Why first touch leaves little to gain (issue 21, the 4x-latency
/// analysis): the slow tier's share of the time, how much of the accesses
/// first touch and full knowledge already serve from DRAM, and how the
/// co-running tasks' data compares with the DRAM.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Headroom {
    /// Memory-stall share of the all-slow run: `1 - T_dram_only /
    /// T_slow_only` (the part of its time the slow tier adds).
    pub stall: f64,
    /// The most any placement can gain over first touch: `1 -
    /// T_dram_only / T_unmanaged`.
    pub best_gain: f64,
    /// Share of line accesses served from DRAM under first touch.
    pub unmanaged_dram_acc: f64,
    /// The same under static placement (the whole run's hottest pages in
    /// DRAM: the hot data, with full knowledge).
    pub static_dram_acc: f64,
    /// DRAM as a share of the data (1 / Table 4.4's ratio).
    pub dram_of_data: f64,
    /// Mean distinct data of a task (its blocks, each rounded up to whole
    /// pages: what DRAM holds) times the 8 workers, over the DRAM.
    pub corun_of_dram: f64,
}

/// Geometric mean of `f` over the rows, skipping values that are not
/// finite and positive (a run that did not happen); 1 when none is left.
fn geomean(rs: &[&Row], f: &dyn Fn(&Row) -> f64) -> f64 {
    let v: Vec<f64> = rs
        .iter()
        .map(|r| f(r))
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect();
    (v.iter().map(|x| x.ln()).sum::<f64>() / v.len().max(1) as f64).exp()
}

impl Headroom {
    /// The headroom of one measured case on graph `g`.
    pub fn of(m: &Measured, g: &TaskGraph) -> Headroom {
        let (dram, slow, un) = (ms(m, "dram-only"), ms(m, "slow-only"), ms(m, "unmanaged"));
        let data = g.footprint();
        let mut foot = 0u64;
        for t in &g.tasks {
            let mut bl: Vec<usize> = t.args.iter().map(|a| a.block).collect();
            bl.sort_unstable();
            bl.dedup();
            foot += bl
                .iter()
                .map(|&b| g.blocks[b].bytes.div_ceil(PAGE) * PAGE)
                .sum::<u64>();
        }
        let mean = foot as f64 / g.tasks.len().max(1) as f64;
        let cap = m.capacity.max(1) as f64;
        Headroom {
            stall: 1.0 - dram / slow,
            best_gain: 1.0 - dram / un,
            unmanaged_dram_acc: dram_access_share(m.runs.get("unmanaged")),
            static_dram_acc: dram_access_share(m.runs.get("static")),
            dram_of_data: cap / data.max(1) as f64,
            corun_of_dram: WORKERS as f64 * mean / cap,
        }
    }
}

/// The model-error breakdown of one case (issue 21: error per benchmark
/// and its cause). Signed biases are (sum predicted - sum measured) / sum
/// measured: positive means the model predicts too long.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ModelErr {
    /// Eq. 4.4 on the round-robin run: signed bias.
    pub eq44_bias: f64,
    /// Mean share of the round-robin run's line accesses in the slow tier.
    pub rr_slow_share: f64,
    /// The same run predicted with the tiers serving in parallel,
    /// `max(p * T_slow, T_dram)` (a task's slow-tier traffic alone at the
    /// all-slow rate, never faster than all-DRAM): |error| of the sums.
    /// The form `sim tahoe` plans with by default
    /// (`memtamer_tahoe::model::PartialForm::ParallelTiers`).
    pub parallel_err: f64,
    /// Tahoe's in-run predictions: signed bias.
    pub tahoe_bias: f64,
    /// The fallback's all-DRAM prediction `T_slow - beta * accesses` with
    /// the leave-one-out beta against the measured all-DRAM type means,
    /// signed, summed over the tasks (the part of Tahoe's error that is
    /// beta's).
    pub fallback_bias: f64,
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

/// Eq. 4.4 on a run with the reference type times: (|error| of the sums,
/// signed bias, mean slow share, |error| of the parallel-tiers form).
fn eq44(
    g: &TaskGraph,
    run: &RunOut,
    slow: &[(f64, f64)],
    dram: &[(f64, f64)],
) -> (f64, f64, f64, f64) {
    let (mut pred, mut par, mut meas, mut share, mut n) = (0.0, 0.0, 0.0, 0.0, 0usize);
    for (t, r) in run.records.iter().enumerate() {
        let ty = g.tasks[t].ty;
        let slow_acc = (r.lines - r.dram_lines) as f64;
        pred += t_partial(slow[ty].1, dram[ty].1, slow_acc, r.lines as f64);
        let p = slow_acc / (r.lines as f64).max(1.0);
        par += t_partial_parallel(slow[ty].1, dram[ty].1, slow_acc, r.lines as f64);
        meas += r.run_ns();
        share += p;
        n += 1;
    }
    let m = meas.max(1e-9);
    (
        (pred - meas).abs() / m,
        (pred - meas) / m,
        share / n.max(1) as f64,
        (par - meas).abs() / m,
    )
}

/// The fallback's signed all-DRAM bias (see [`ModelErr::fallback_bias`]).
fn fallback_bias(g: &TaskGraph, beta: f64, slow: &[(f64, f64)], dram: &[(f64, f64)]) -> f64 {
    let (mut pred, mut meas) = (0.0, 0.0);
    for t in &g.tasks {
        let (s, d) = (slow[t.ty], dram[t.ty]);
        pred += (s.1 - beta * s.0).max(0.0);
        meas += d.1;
    }
    (pred - meas) / meas.max(1e-9)
}

/// Tahoe's own predictions against its measured task times: (|error| of
/// the sums, mean per-task |error|, signed bias).
fn in_run(run: &RunOut) -> (f64, f64, f64) {
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
    let m = meas.max(1e-9);
    (
        (pred - meas).abs() / m,
        per / n.max(1) as f64,
        (pred - meas) / m,
    )
}

impl Row {
    /// The row of one measured case; `g` is its graph.
    pub fn of(m: &Measured, g: &TaskGraph) -> Row {
        let v: Vec<f64> = POLICIES.iter().map(|p| ms(m, p)).collect();
        let t = v[3];
        let nan = ModelErr {
            eq44_bias: f64::NAN,
            rr_slow_share: f64::NAN,
            parallel_err: f64::NAN,
            tahoe_bias: f64::NAN,
            fallback_bias: f64::NAN,
        };
        let (eq44_err, tahoe_err, tahoe_task_err, model) = match (
            m.runs.get("slow-only"),
            m.runs.get("dram-only"),
            m.runs.get("round-robin"),
            m.runs.get("tahoe"),
        ) {
            (Some(s), Some(d), Some(rr), Some(th)) => {
                let (s, d) = (type_means(g, &s.records), type_means(g, &d.records));
                let (e, eb, share, pe) = eq44(g, rr, &s, &d);
                let (te, tt, tb) = in_run(th);
                let model = ModelErr {
                    eq44_bias: eb,
                    rr_slow_share: share,
                    parallel_err: pe,
                    tahoe_bias: tb,
                    fallback_bias: fallback_bias(g, m.beta_ns, &s, &d),
                };
                (e, te, tt, model)
            }
            _ => (f64::NAN, f64::NAN, f64::NAN, nan),
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
            model,
            tahoe_exposed: th.map_or(f64::NAN, |r| 1.0 - r.tier.overlap_share()),
            tahoe_gb_moved: th.map_or(f64::NAN, |r| r.tier.bytes_moved as f64 / 1e9),
            beta_ns: m.beta_ns,
            copy_ns: m.copy_ns_per_page,
            nocheck_vs_unmanaged: 1.0 - v[4] / v[0],
            reuse: reuse(g, m.capacity),
            oracle_pick: m.oracle_pick.clone(),
            headroom: Headroom::of(m, g),
            siblings: Siblings::of(m, g),
            out_no_copy: OutNoCopy::of(m, g),
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
        let gm = |f: &dyn Fn(&Row) -> f64| geomean(&rs, f);
        let _ = writeln!(
            s,
            "| **geomean** | {} | {} | {} | {} | | | | | | |\n",
            pct(1.0 - gm(&|r| r.ms[3] / r.ms[0])),
            pct(1.0 - gm(&|r| r.ms[3] / r.ms[2])),
            pct(gm(&|r| r.ms[3] / r.ms[5]) - 1.0),
            pct(1.0 - gm(&|r| r.ms[4] / r.ms[0])),
        );
        let _ = writeln!(
            s,
            "Model error by benchmark (signed: + = predicts too long):\n\n| Benchmark | Eq. 4.4 round-robin: error | bias | slow share | parallel-tiers form error | Tahoe in-run: error | bias | fallback all-DRAM bias (beta) |"
        );
        let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|---:|");
        for r in &rs {
            let e = &r.model;
            let _ = writeln!(
                s,
                "| {} | {:.1}% | {} | {:.2} | {:.1}% | {:.1}% | {} | {} |",
                r.bench,
                100.0 * r.eq44_err,
                pct(e.eq44_bias),
                e.rr_slow_share,
                100.0 * e.parallel_err,
                100.0 * r.tahoe_err,
                pct(e.tahoe_bias),
                pct(e.fallback_bias),
            );
        }
        let _ = writeln!(
            s,
            "\nHeadroom over first touch (why it does as well):\n\n| Benchmark | memory stall (1 - dram-only / slow-only) | best gain (1 - dram-only / unmanaged) | DRAM / data | accesses from DRAM: unmanaged | static | 8 co-running tasks' data / DRAM |"
        );
        let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|");
        for r in &rs {
            let h = &r.headroom;
            let _ = writeln!(
                s,
                "| {} | {:.0}% | {:.0}% | {:.0}% | {:.0}% | {:.0}% | {:.2} |",
                r.bench,
                100.0 * h.stall,
                100.0 * h.best_gain,
                100.0 * h.dram_of_data,
                100.0 * h.unmanaged_dram_acc,
                100.0 * h.static_dram_acc,
                h.corun_of_dram,
            );
        }
        let _ = writeln!(
            s,
            "\nSibling scheduling (thesis §4.3.6; Figure 4.6's last step): Tahoe without (`-nosib`) and with it; its share of the gain = (T_nosib - T) / (T_unmanaged - T), Figure 4.6's normalisation, where Tahoe gains:\n\n| Benchmark | tahoe-nosib vs unmanaged | tahoe vs unmanaged | sibling gain (1 - T / T_nosib) | share of Tahoe's gain | no-check: -nosib vs unmanaged | no-check vs unmanaged | no-check sibling gain | sibling dispatches in a row: -nosib / with | accesses from DRAM: -nosib / with | workers busy: -nosib / with |"
        );
        let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        for r in &rs {
            let b = &r.siblings;
            let un = r.ms[0];
            let share = |nosib: f64, sib: f64| {
                if un - sib > 0.0 {
                    pct((nosib - sib) / (un - sib))
                } else {
                    "n/a".to_string()
                }
            };
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {:.0}% / {:.0}% | {:.1}% / {:.1}% | {:.1}% / {:.1}% |",
                r.bench,
                pct(1.0 - b.ms[0] / un),
                pct(1.0 - b.ms[1] / un),
                pct(1.0 - b.ms[1] / b.ms[0]),
                share(b.ms[0], b.ms[1]),
                pct(1.0 - b.ms[2] / un),
                pct(1.0 - b.ms[3] / un),
                pct(1.0 - b.ms[3] / b.ms[2]),
                100.0 * b.adjacent[0],
                100.0 * b.adjacent[1],
                100.0 * b.dram_acc[0],
                100.0 * b.dram_acc[1],
                100.0 * b.busy[0],
                100.0 * b.busy[1],
            );
        }
        out_no_copy_table(&mut s, &rs);
        let _ = writeln!(s);
    }
    s
}

/// The `out` no-copy ablation's table ([`OutNoCopy`]), if it ran.
fn out_no_copy_table(s: &mut String, rs: &[&Row]) {
    if rs.iter().all(|r| r.out_no_copy.is_none()) {
        return;
    }
    let _ = writeln!(
        s,
        "\n`out` blocks written whole placed in DRAM without a copy (beyond the thesis, §4.3.7; `tahoe-outnocopy`):\n\n| Benchmark | tasks writing a block whole | pages of such blocks / all pages | tahoe vs unmanaged | tahoe-outnocopy vs unmanaged | gain (1 - T / T_tahoe) | pages promoted: tahoe / outnocopy (without a copy) | accesses from DRAM: tahoe / outnocopy |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|---:|");
    let nan = OutNoCopy {
        ms: [f64::NAN; 2],
        dram_acc: [f64::NAN; 2],
        ..OutNoCopy::default()
    };
    for r in rs {
        let o = r.out_no_copy.unwrap_or(nan);
        let un = r.ms[0];
        let _ = writeln!(
            s,
            "| {} | {:.0}% | {:.0}% | {} | {} | {} | {} / {} ({}) | {:.1}% / {:.1}% |",
            r.bench,
            100.0 * o.task_share,
            100.0 * o.page_share,
            pct(1.0 - o.ms[0] / un),
            pct(1.0 - o.ms[1] / un),
            pct(1.0 - o.ms[1] / o.ms[0]),
            o.promoted[0],
            o.promoted[1],
            o.fresh,
            100.0 * o.dram_acc[0],
            100.0 * o.dram_acc[1],
        );
    }
    let gm = |f: &dyn Fn(&Row) -> f64| geomean(rs, f);
    let out = |r: &Row| r.out_no_copy.map_or(f64::NAN, |o| o.ms[1]);
    let _ = writeln!(
        s,
        "\n| geomean | vs unmanaged | vs Unimem | vs oracle (time over) |\n|---|---:|---:|---:|\n| tahoe | {} | {} | {} |\n| tahoe-outnocopy | {} | {} | {} |",
        pct(1.0 - gm(&|r| r.ms[3] / r.ms[0])),
        pct(1.0 - gm(&|r| r.ms[3] / r.ms[2])),
        pct(gm(&|r| r.ms[3] / r.ms[5]) - 1.0),
        pct(1.0 - gm(&|r| out(r) / r.ms[0])),
        pct(1.0 - gm(&|r| out(r) / r.ms[2])),
        pct(gm(&|r| out(r) / r.ms[5]) - 1.0),
    );
}
