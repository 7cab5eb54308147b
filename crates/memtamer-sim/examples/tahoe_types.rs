//! Per task type: where Tahoe's in-run prediction error comes from
//! (docs/notebook/tahoe.md "The representative's placement and the instances'
//! times"). Runs the `memtamer sim tahoe --recorded builtin` evaluation and
//! prints, for Tahoe's run of every benchmark and type: the predicted and
//! measured mean time of the predicted instances, their DRAM share, the
//! type's all-slow and all-DRAM means (reference runs), its true slope
//! `(T_slow - T_dram) / lines` against the fallback's β, and the
//! representative (task, measured ns, lines, lines served by DRAM).
//!
//! ```sh
//! cargo run --release -p memtamer-sim --example tahoe_types -- \
//!     tahoe-quarter-bw,tahoe-4x-latency thesis
//! ```

use memtamer_sim::tahoe_eval::{
    builtin_cases, evaluate, recorded, type_means, Case, ModelLearning, PartialForm,
};
use std::sync::Arc;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let plats: Vec<String> = args
        .get(1)
        .map_or("tahoe-quarter-bw,tahoe-4x-latency", |s| s.as_str())
        .split(',')
        .map(str::to_string)
        .collect();
    let learn_name = args.get(2).map_or("refined", |s| s.as_str());
    let learn = ModelLearning::parse(learn_name)
        .ok_or_else(|| format!("{learn_name}: expected thesis, slow-rep or refined"))?;
    let mut cases = builtin_cases(&[])?;
    // the CLI's defaults: --reuse 4 --shrink 16 --ratio 10
    let g = recorded::graph("heat-recorded", recorded::HEAT_RECORDING, 4, 16)?;
    cases.push(Case {
        graph: Arc::new(g),
        ratio: 10,
    });
    let measured = evaluate(
        &plats,
        &cases,
        1,
        2,
        PartialForm::ParallelTiers,
        None,
        learn,
        false,
        false,
    )?;
    println!("| platform | benchmark | type | tasks | predicted | predicted mean (ns) | measured mean (ns) | error | DRAM share | all-slow mean | all-DRAM mean | true slope ns/line | fallback beta | representative (task, ns, lines, DRAM lines) |");
    println!("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    for m in &measured {
        let Some(c) = cases.iter().find(|c| c.graph.name == m.bench) else {
            continue;
        };
        let g = &c.graph;
        let (Some(slow), Some(dram), Some(run)) = (
            m.runs.get("slow-only"),
            m.runs.get("dram-only"),
            m.runs.get("tahoe"),
        ) else {
            continue;
        };
        let s = type_means(g, &slow.records);
        let d = type_means(g, &dram.records);
        for ty in 0..g.types.len() {
            let (mut n, mut all, mut pred, mut meas, mut lines, mut dl) = (0, 0, 0.0, 0.0, 0, 0);
            let mut rep = String::new();
            for (t, r) in run.records.iter().enumerate() {
                if g.tasks[t].ty != ty {
                    continue;
                }
                all += 1;
                if r.profiled {
                    rep = format!("{t}, {:.0}, {}, {}", r.run_ns(), r.lines, r.dram_lines);
                }
                if let Some(p) = r.predicted_ns {
                    n += 1;
                    pred += p;
                    meas += r.run_ns();
                    lines += r.lines;
                    dl += r.dram_lines;
                }
            }
            if n == 0 {
                continue;
            }
            let k = n as f64;
            println!(
                "| {} | {} | {} | {all} | {n} | {:.0} | {:.0} | {:+.1}% | {:.2} | {:.0} | {:.0} | {:.2} | {:.2} | {rep} |",
                m.platform,
                m.bench,
                g.types[ty],
                pred / k,
                meas / k,
                (pred - meas) / meas.max(1e-9) * 100.0,
                dl as f64 / lines.max(1) as f64,
                s[ty].1,
                d[ty].1,
                (s[ty].1 - d[ty].1) / s[ty].0.max(1.0),
                m.beta_ns,
            );
        }
    }
    Ok(())
}
