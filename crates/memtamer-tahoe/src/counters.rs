//! Hardware counters of tasks (thesis §4.3.4): the complete-placement
//! model's inputs are a task's IPC and last-level-cache miss rate with all
//! its data in the slow tier; its output is the all-DRAM IPC, from which
//! `T_c_DRAM = T_c_NVM * IPC_slow / IPC_dram` (same instruction count).
//!
//! Pure: the OMPT tool reads the counters (one perf group per worker
//! thread, `memtamer_linux::perf_event`) and hands each task's summed
//! deltas here as [`TaskCounts`]; the counter model it predicts with comes
//! from a model file ([`format_model`] / [`parse_model`]) fitted offline
//! on recordings by [`fit_counter_models`] (the thesis trains offline too).

use crate::error::TahoeError;
use crate::model::{Ann, CompleteModel, HybridModel, LinearAccess, LinearIpc, ANN_WEIGHTS};
use crate::profile::{Counters, TypeProfile};
use crate::record::Row;

/// Raw event counts of one task instance: the sum of the counter deltas
/// over the intervals it ran. In the tool's `sw` mode the four slots hold
/// software stand-ins (task-clock, cpu-clock, page-faults, minor-faults)
/// that exercise the same pipeline without a PMU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaskCounts {
    /// Instructions retired.
    pub instructions: u64,
    /// Core cycles.
    pub cycles: u64,
    /// LLC references.
    pub llc_refs: u64,
    /// LLC misses.
    pub llc_misses: u64,
}

impl TaskCounts {
    /// The counts between two group readings in slot order (instructions,
    /// cycles, LLC references, LLC misses). A counter that went backwards
    /// (never, for a counting event) gives 0, not a wrapped huge delta.
    pub fn between(before: &[u64; 4], now: &[u64; 4]) -> TaskCounts {
        let d = |i: usize| now[i].saturating_sub(before[i]);
        TaskCounts {
            instructions: d(0),
            cycles: d(1),
            llc_refs: d(2),
            llc_misses: d(3),
        }
    }

    /// Adds another interval of the same task.
    pub fn add(&mut self, o: &TaskCounts) {
        self.instructions = self.instructions.saturating_add(o.instructions);
        self.cycles = self.cycles.saturating_add(o.cycles);
        self.llc_refs = self.llc_refs.saturating_add(o.llc_refs);
        self.llc_misses = self.llc_misses.saturating_add(o.llc_misses);
    }

    /// The model's inputs: IPC = instructions / cycles and the LLC miss
    /// rate = misses / references (the conventional "miss rate"; the
    /// thesis names the quantity without a formula), clamped to 1 since
    /// the two events are counted by different hardware. None when the
    /// task retired no instructions or no cycles were counted (the group
    /// was not scheduled on the PMU while it ran): nothing was measured.
    pub fn counters(&self) -> Option<Counters> {
        if self.instructions == 0 || self.cycles == 0 {
            return None;
        }
        let rate = if self.llc_refs > 0 {
            (self.llc_misses as f64 / self.llc_refs as f64).min(1.0)
        } else {
            0.0
        };
        Some(Counters {
            instructions: self.instructions as f64,
            ipc: self.instructions as f64 / self.cycles as f64,
            llc_miss_rate: rate,
        })
    }
}

/// A counter model as a model file's one line: `linear B1 B2 EPS` (Eq.
/// 4.3's coefficients) or `ann W...` ([`ANN_WEIGHTS`] numbers in
/// [`Ann::weights`] order), after a comment naming what it is.
pub fn format_model(m: &CompleteModel) -> String {
    let nums: Vec<f64> = match m {
        CompleteModel::Linear(l) => vec![l.b1, l.b2, l.eps],
        CompleteModel::Ann(a) => a.weights(),
    };
    let body: Vec<String> = nums.iter().map(|x| format!("{x:e}")).collect();
    format!(
        "# memtamer-tahoe counter model (thesis Sec. 4.3.4): all-DRAM IPC from (IPC, LLC miss rate) all-slow\n{} {}\n",
        m.name(),
        body.join(" ")
    )
}

/// Parses a model file ([`format_model`]); `#` and blank lines are
/// skipped, exactly one model line is expected. An error names the line.
pub fn parse_model(text: &str) -> Result<CompleteModel, TahoeError> {
    let mut found: Option<CompleteModel> = None;
    let mut last = 0;
    for (i, line) in text.lines().enumerate() {
        last = i + 1;
        let l = line.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let bad = |why: String| TahoeError::ModelFile { line: i + 1, why };
        if found.is_some() {
            return Err(bad("a second model line (one model per file)".into()));
        }
        let mut words = l.split_whitespace();
        let kind = words.next().unwrap_or_default();
        let nums = words
            .enumerate()
            .map(|(k, w)| match w.parse::<f64>() {
                Ok(x) if x.is_finite() => Ok(x),
                _ => Err(bad(format!(
                    "number {} ({w}) is not a finite number",
                    k + 1
                ))),
            })
            .collect::<Result<Vec<f64>, TahoeError>>()?;
        found = Some(match kind {
            "linear" => match nums[..] {
                [b1, b2, eps] => CompleteModel::Linear(LinearIpc { b1, b2, eps }),
                _ => return Err(bad(format!("linear needs 3 numbers, got {}", nums.len()))),
            },
            "ann" => match Ann::from_weights(&nums) {
                Some(a) => CompleteModel::Ann(Box::new(a)),
                None => {
                    return Err(bad(format!(
                        "ann needs {ANN_WEIGHTS} numbers, got {}",
                        nums.len()
                    )))
                }
            },
            k => return Err(bad(format!("unknown model `{k}` (expected linear|ann)"))),
        });
    }
    found.ok_or(TahoeError::ModelFile {
        line: last,
        why: "no model line".into(),
    })
}

/// One joined task type of a counter fit.
#[derive(Clone, Debug, PartialEq)]
pub struct CounterFitRow {
    /// Task type.
    pub ty: String,
    /// Measured all-DRAM time, ns.
    pub measured_ns: f64,
    /// Eq. 4.3's all-DRAM time, ns (None: the fit failed or its IPC
    /// prediction was not positive).
    pub linear_ns: Option<f64>,
    /// The ANN's all-DRAM time, ns (None likewise).
    pub ann_ns: Option<f64>,
}

/// Both counter models fitted on one pair of recordings.
#[derive(Debug)]
pub struct CounterFit {
    /// Eq. 4.3 by least squares, or why not (fewer than 3 types, collinear).
    pub linear: Result<LinearIpc, TahoeError>,
    /// The ANN and its training mean squared error (IPC^2), or why not.
    pub ann: Result<(Ann, f64), TahoeError>,
    /// Per joined type: measured vs each model's all-DRAM time.
    pub rows: Vec<CounterFitRow>,
}

/// Joins the all-slow and all-DRAM recordings by type, keeps the types
/// with counters in both, and fits Eq. 4.3 and trains the ANN on
/// (IPC_slow, LLC miss rate_slow) -> IPC_dram, one sample per type (the
/// thesis trains on every task; a recording keeps per-type means). The
/// ANN trains for `epochs` passes from `seed` (deterministic). Error when
/// no type has counters in both.
pub fn fit_counter_models(
    slow: &[Row],
    dram: &[Row],
    epochs: usize,
    seed: u64,
) -> Result<CounterFit, TahoeError> {
    let pairs: Vec<(&Row, &Row, f64, f64, f64)> = slow
        .iter()
        .filter_map(|s| {
            let d = dram.iter().find(|d| d.ty == s.ty)?;
            let (sc, dc) = (s.counters?, d.counters?);
            Some((s, d, sc.ipc, sc.llc_miss_rate, dc.ipc))
        })
        .collect();
    if pairs.is_empty() {
        return Err(TahoeError::Fit {
            model: "counter models",
            why: "no task type carries counters in both recordings".into(),
        });
    }
    let samples: Vec<(f64, f64, f64)> = pairs.iter().map(|p| (p.2, p.3, p.4)).collect();
    let linear = LinearIpc::fit(&samples);
    let ann = {
        let mut a = Ann::new(seed);
        a.train(&samples, epochs, 0.01, seed).map(|mse| (a, mse))
    };
    let t_dram = |m: Option<CompleteModel>, s: &Row, ipc: f64, miss: f64| {
        let h = HybridModel {
            counters: m,
            fallback: LinearAccess { beta_ns: 0.0 },
            form: Default::default(),
        };
        h.counter_t_dram(&TypeProfile {
            t_slow_ns: s.mean_ns,
            total_accesses: s.pages,
            counters: Some(Counters {
                instructions: 0.0,
                ipc,
                llc_miss_rate: miss,
            }),
            ranges: Vec::new(),
        })
    };
    let rows = pairs
        .iter()
        .map(|&(s, d, ipc, miss, _)| CounterFitRow {
            ty: s.ty.clone(),
            measured_ns: d.mean_ns,
            linear_ns: linear
                .as_ref()
                .ok()
                .and_then(|l| t_dram(Some(CompleteModel::Linear(*l)), s, ipc, miss)),
            ann_ns: ann.as_ref().ok().and_then(|(a, _)| {
                t_dram(Some(CompleteModel::Ann(Box::new(a.clone()))), s, ipc, miss)
            }),
        })
        .collect();
    Ok(CounterFit { linear, ann, rows })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::parse;

    #[test]
    fn deltas_sum_to_ipc_and_miss_rate_and_nothing_measured_is_none() {
        let a = TaskCounts::between(&[100, 1000, 10, 1], &[1100, 3000, 50, 21]);
        assert_eq!(
            a,
            TaskCounts {
                instructions: 1000,
                cycles: 2000,
                llc_refs: 40,
                llc_misses: 20
            }
        );
        let mut t = a;
        t.add(&TaskCounts::between(&[0; 4], &[1000, 0, 60, 0]));
        let c = t.counters().unwrap();
        assert_eq!((c.instructions, c.ipc, c.llc_miss_rate), (2000.0, 1.0, 0.2));
        // a counter going backwards is no delta
        assert_eq!(TaskCounts::between(&[5; 4], &[1; 4]), TaskCounts::default());
        assert_eq!(TaskCounts::default().counters(), None);
        let no_cycles = TaskCounts {
            instructions: 5,
            ..Default::default()
        };
        assert_eq!(no_cycles.counters(), None);
        // no LLC references: rate 0; misses above references: clamped
        let c = TaskCounts {
            instructions: 5,
            cycles: 10,
            llc_refs: 0,
            llc_misses: 3,
        };
        assert_eq!(c.counters().unwrap().llc_miss_rate, 0.0);
        let c = TaskCounts { llc_refs: 1, ..c };
        assert_eq!(c.counters().unwrap().llc_miss_rate, 1.0);
    }

    #[test]
    fn model_files_round_trip_and_errors_name_the_line() {
        let l = CompleteModel::Linear(LinearIpc {
            b1: 1.25,
            b2: -0.5,
            eps: 0.1,
        });
        match parse_model(&format_model(&l)).unwrap() {
            CompleteModel::Linear(p) => assert_eq!((p.b1, p.b2, p.eps), (1.25, -0.5, 0.1)),
            m => panic!("{m:?}"),
        }
        let a = Ann::new(5);
        match parse_model(&format_model(&CompleteModel::Ann(Box::new(a.clone())))).unwrap() {
            CompleteModel::Ann(p) => assert_eq!(*p, a),
            m => panic!("{m:?}"),
        }
        for (text, line, why) in [
            ("# c\n\nlinear 1 2\n", 3, "linear needs 3 numbers, got 2"),
            ("linear 1 x 3\n", 1, "number 2 (x) is not a finite number"),
            (
                "linear 1 inf 3\n",
                1,
                "number 2 (inf) is not a finite number",
            ),
            ("ann 1 2 3\n", 1, "ann needs 91 numbers, got 3"),
            (
                "cubic 1\n",
                1,
                "unknown model `cubic` (expected linear|ann)",
            ),
            (
                "linear 1 2 3\nlinear 1 2 3\n",
                2,
                "a second model line (one model per file)",
            ),
            ("# only\n# comments\n", 2, "no model line"),
        ] {
            assert_eq!(
                parse_model(text).unwrap_err(),
                TahoeError::ModelFile {
                    line,
                    why: why.into()
                },
                "{text}"
            );
        }
    }

    /// A recorded pair of runs with counters (fixtures/record-*.csv):
    /// all-DRAM IPC follows `ipc_dram = 1.2 * ipc + 2 * miss + 0.1`
    /// exactly (Eq. 4.3's form), so the linear fit recovers it and
    /// predicts the DRAM times; type e lacks counters in the DRAM run and
    /// f is an old-format line in both.
    const SLOW: &str = include_str!("../fixtures/record-slow.csv");
    const DRAM: &str = include_str!("../fixtures/record-dram.csv");

    #[test]
    fn a_short_line_in_a_recorded_file_names_its_line() {
        let e = parse(include_str!("../fixtures/record-bad.csv")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "recording line 3: expected type,instances,mean_ns,pages[,ipc,llc_miss_rate]"
        );
    }

    #[test]
    fn recordings_with_counters_fit_eq_4_3_and_train_the_ann() {
        let slow = parse(SLOW).unwrap();
        let dram = parse(DRAM).unwrap();
        let f = fit_counter_models(&slow, &dram, 2000, 7).unwrap();
        // types a-d carry counters in both runs; e and f do not
        let tys: Vec<&str> = f.rows.iter().map(|r| r.ty.as_str()).collect();
        assert_eq!(tys, ["a(8)", "b(8)", "c(8)", "d(8)"]);
        let l = f.linear.as_ref().unwrap();
        assert!(
            (l.b1 - 1.2).abs() < 1e-6 && (l.b2 - 2.0).abs() < 1e-6,
            "{l:?}"
        );
        assert!((l.eps - 0.1).abs() < 1e-6, "{l:?}");
        for r in &f.rows {
            let e = (r.linear_ns.unwrap() - r.measured_ns).abs() / r.measured_ns;
            assert!(e < 1e-3, "{r:?}");
        }
        let (_, mse) = f.ann.as_ref().unwrap();
        assert!(mse.is_finite());
        assert!(f.rows.iter().all(|r| r.ann_ns.is_some_and(|t| t > 0.0)));
        // the fitted model written and read back predicts the same
        let m = parse_model(&format_model(&CompleteModel::Linear(*l))).unwrap();
        assert!((m.predict(0.5, 0.1) - l.predict(0.5, 0.1)).abs() < 1e-12);
    }

    #[test]
    fn a_representatives_counters_reach_the_profile_and_the_prediction() {
        use crate::plan::{Decision, PlanConfig, Planner};
        use crate::task::{Access, DataObject, Task};
        let task = |id: u64, at: u64| Task {
            id,
            code: 7,
            objects: vec![DataObject {
                addr: at << 12,
                len: 4 << 12,
                access: Access::InOut,
            }],
        };
        let run = |m: Option<CompleteModel>, c: Option<Counters>| {
            let model = HybridModel {
                counters: m,
                fallback: LinearAccess { beta_ns: 10.0 },
                form: Default::default(),
            };
            let mut pl = Planner::new(PlanConfig::default(), model, 100);
            assert_eq!(pl.decide(&task(1, 0), &[], &[]), Decision::Profile);
            pl.completed_counted(&task(1, 0), 1000.0, None, c);
            let (_, prof) = pl.db().iter().next().unwrap();
            assert_eq!(prof.counters, c);
            (pl.model().counter_t_dram(prof), pl.predict(&task(2, 10)))
        };
        let c = TaskCounts {
            instructions: 500,
            cycles: 1000,
            llc_refs: 10,
            llc_misses: 5,
        }
        .counters();
        // IPC 0.5 predicted to double in DRAM: T_c_DRAM = 500 ns
        let double = CompleteModel::Linear(LinearIpc {
            b1: 2.0,
            b2: 0.0,
            eps: 0.0,
        });
        assert_eq!(run(Some(double.clone()), c).0, Some(500.0));
        // without counters, or without a counter model: the fallback,
        // and the same prediction both ways
        let (none, fallback) = run(Some(double), None);
        assert_eq!(none, None);
        assert_eq!(run(None, c), (None, fallback));
    }

    #[test]
    fn too_few_counted_types_say_why() {
        let slow = parse(SLOW).unwrap();
        // only old-format lines in the DRAM run: nothing to fit on
        let old: String = DRAM
            .lines()
            .map(|l| l.split(',').take(4).collect::<Vec<_>>().join(",") + "\n")
            .collect();
        let dram = parse(&old).unwrap();
        let e = fit_counter_models(&slow, &dram, 10, 1).unwrap_err();
        assert!(
            e.to_string().contains("no task type carries counters"),
            "{e}"
        );
        // two counted types: the ANN trains, Eq. 4.3 needs three
        let dram = parse(DRAM).unwrap();
        let f = fit_counter_models(&slow[..2], &dram, 50, 1).unwrap();
        assert!(matches!(f.linear, Err(TahoeError::Fit { .. })));
        assert!(f.ann.is_ok());
        assert!(f.rows.iter().all(|r| r.linear_ns.is_none()));
    }
}
