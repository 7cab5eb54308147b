//! `memtamer sim tahoe`: Tahoe and its comparison systems on task-graph
//! programs in the simulator (issue 21 item 4; docs/tahoe.md "In the simulator").

use crate::error::{CliError, Outcome};
use memtamer_sim::tahoe_eval::{builtin_cases, evaluate, markdown, recorded, Case, Row};
use memtamer_sim::tahoe_eval::{ModelLearning, PartialForm};
use memtamer_sim::SimError;
use std::sync::Arc;

/// The command's options (see `args.rs`).
pub(super) struct Opts {
    pub platforms: Vec<String>,
    pub benches: Vec<String>,
    pub recorded: Option<String>,
    pub reuse: u64,
    pub shrink: u64,
    pub ratio: u64,
    pub seed: u64,
    pub jobs: usize,
    pub partial_form: String,
    /// `--out-no-copy` with its page-fault time (ns); None: off.
    pub out_fault_ns: Option<f64>,
    /// `--model`: where Tahoe's all-slow times come from.
    pub model: String,
    /// `--first-touch`: `source` (arrays a program leaves untouched until
    /// its tasks are first touched by them) or `alloc` (every array at the
    /// start, in allocation order: the tables before 2026-11-27).
    pub first_touch: String,
    /// `--tahoe-touch os`: the OS places Tahoe's run-time first touches in
    /// free DRAM and Tahoe adopts them (an ablation; false: the thesis's
    /// slow-tier start, §4.3.5).
    pub os_touch: bool,
    /// `--frees never`: no array is freed before the program ends (the
    /// tables before branch `tahoeft`); false: the sources' frees.
    pub frees_never: bool,
    /// `--check-slopes rw`: the check prices loads and stores with their own
    /// slopes; false (`one`, the default): one slope per type, the check as
    /// before branch `tahoera`.
    pub rw_check: bool,
    /// `--dram-ratio NAME=N`: a benchmark's data bytes per DRAM byte in
    /// place of its Table 4.4 ratio (a probe; docs/notebook/tahoe.md "The setup
    /// against the thesis").
    pub dram_ratio: Vec<String>,
}

/// Runs the evaluation and prints its tables. A recorded program is
/// evaluated beside the built-in benchmarks, which train its model
/// (leave-one-out).
pub(super) fn run(o: Opts) -> Result<Outcome, CliError> {
    let form = PartialForm::parse(&o.partial_form).ok_or_else(|| SimError::Invalid {
        file: "command line".into(),
        line: 0,
        key: "--partial-form".into(),
        message: format!("{:?}: expected additive or parallel", o.partial_form),
    })?;
    let learn = ModelLearning::parse(&o.model).ok_or_else(|| SimError::Invalid {
        file: "command line".into(),
        line: 0,
        key: "--model".into(),
        message: format!("{:?}: expected thesis, slow-rep or refined", o.model),
    })?;
    let mut cases = builtin_cases(&o.benches)?;
    match o.first_touch.as_str() {
        "source" => {}
        "alloc" => {
            for c in &mut cases {
                Arc::make_mut(&mut c.graph).task_touched.clear();
            }
        }
        other => {
            return Err(SimError::Invalid {
                file: "command line".into(),
                line: 0,
                key: "--first-touch".into(),
                message: format!("{other:?}: expected source or alloc"),
            }
            .into())
        }
    }
    if o.frees_never {
        for c in &mut cases {
            Arc::make_mut(&mut c.graph).frees.clear();
        }
    }
    if let Some(r) = &o.recorded {
        let (name, text) = if r == "builtin" {
            (
                "heat-recorded".to_string(),
                recorded::HEAT_RECORDING.to_string(),
            )
        } else {
            let text = std::fs::read_to_string(r).map_err(|source| SimError::Io {
                path: r.clone(),
                source,
            })?;
            (format!("recorded:{r}"), text)
        };
        let g = recorded::graph(&name, &text, o.reuse, o.shrink).map_err(|message| {
            SimError::Invalid {
                file: r.clone(),
                line: 0,
                key: "recording".into(),
                message,
            }
        })?;
        cases.push(Case {
            graph: Arc::new(g),
            ratio: o.ratio,
        });
    }
    for spec in &o.dram_ratio {
        let bad = |message: String| SimError::Invalid {
            file: "command line".into(),
            line: 0,
            key: "--dram-ratio".into(),
            message,
        };
        let (name, n) = spec
            .split_once('=')
            .ok_or_else(|| bad(format!("{spec:?}: expected NAME=N")))?;
        let n: u64 = n
            .parse()
            .ok()
            .filter(|&n| n >= 1)
            .ok_or_else(|| bad(format!("{spec:?}: N must be an integer >= 1")))?;
        let c = cases
            .iter_mut()
            .find(|c| c.graph.name == name)
            .ok_or_else(|| bad(format!("{spec:?}: no benchmark {name:?} in this run")))?;
        c.ratio = n;
    }
    // --out-fault-ns is finite and >= 0 (checked by its parser, args.rs)
    let measured = evaluate(
        &o.platforms,
        &cases,
        o.seed,
        o.jobs,
        form,
        o.out_fault_ns,
        learn,
        o.os_touch,
        o.rw_check,
    )?;
    let rows: Vec<Row> = measured
        .iter()
        .filter_map(|m| {
            let c = cases.iter().find(|c| c.graph.name == m.bench)?;
            Some(Row::of(m, &c.graph))
        })
        .collect();
    print!("{}", markdown(&rows));
    Ok(Outcome::Success)
}
