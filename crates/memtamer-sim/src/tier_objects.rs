//! What one object in DRAM really buys, against what Unimem's model
//! predicts for it (issue 20; docs/notebook/unimem.md, "One-time moves
//! overlapped, per-object benefit"): the
//! slow-only run against one run per object with only that object in DRAM
//! (`PlacementSpec::Pinned`), beside the thesis's benefit (Eq. 3.1
//! classification, Eq. 3.2 or the latency benefit, constant factors as the
//! planner uses them) summed over the phases and iterations, from the
//! profile Unimem's profiler would take of the slow-only run's first
//! iteration (every line a sample; the phase times measured).

use crate::config::phased::{ModelSpec, PhasedProgram, PlacementSpec};
use crate::config::Platform;
use crate::error::SimError;
use crate::tier_calib::calibrate;
use crate::tier_eval::{load_platform, slow_region, TierScenario};
use crate::tier_run::run_program;
use crate::tiering::{static_lines, unimem};
use memtamer_core::unimem::model::{
    benefit, benefit_bw, benefit_lat, ObjPhase, PhaseProfile, Sensitivity,
};

/// One object's measured and modelled benefit of DRAM over a whole run.
#[derive(Clone, Debug, PartialEq)]
pub struct ObjBenefit {
    /// Object name.
    pub name: String,
    /// Slow-only time minus the time with only this object in DRAM, s.
    pub measured: f64,
    /// The planner's benefit (classified per phase), s.
    pub predicted: f64,
    /// Eq. 3.2 alone (bandwidth benefit), s.
    pub bw: f64,
    /// The latency benefit alone, s.
    pub lat: f64,
    /// Classification per phase that touches it (`B`, `L`, `X` = both).
    pub classes: String,
}

/// The model's per-object benefit over `iterations` from one profiled
/// iteration: `lines[i][o]` lines of object `o` in phase `i` (every line a
/// sample, as the simulator's profiler counts), `times[i]` phase `i`'s time.
pub fn predicted(
    lines: &[Vec<u64>],
    times: &[f64],
    model: &ModelSpec,
    iterations: f64,
) -> Vec<(f64, f64, f64, String)> {
    let p = unimem::platform(model);
    let nobj = lines.first().map_or(0, |l| l.len());
    (0..nobj)
        .map(|o| {
            let (mut b, mut bw, mut lat, mut cls) = (0.0, 0.0, 0.0, String::new());
            for (ph, t) in lines.iter().zip(times) {
                let n = ph[o];
                if n == 0 {
                    continue;
                }
                let prof = PhaseProfile {
                    time: *t,
                    samples: ph.iter().sum::<u64>() as f64,
                    objs: Default::default(),
                };
                let op = ObjPhase {
                    accesses: n as f64,
                    samples: n as f64,
                };
                let (s, x) = benefit(&op, &prof, &p);
                b += x;
                bw += benefit_bw(n as f64, &p);
                lat += benefit_lat(n as f64, &p);
                cls.push(match s {
                    Sensitivity::Bandwidth => 'B',
                    Sensitivity::Latency => 'L',
                    Sensitivity::Both => 'X',
                });
            }
            (b * iterations, bw * iterations, lat * iterations, cls)
        })
        .collect()
}

/// Runs the slow-only baseline and one pinned run per object of `sc` on
/// platform `pname` (calibrated first, as `tier_eval::evaluate` does) and
/// returns each object's measured and predicted benefit.
pub fn per_object(
    sc: &TierScenario,
    pname: &str,
    jobs: usize,
) -> Result<Vec<ObjBenefit>, SimError> {
    let p: Platform = load_platform(pname)?;
    let slow = slow_region(&p);
    let model = calibrate(&p, sc.ranks, slow)?.model;
    let prog: &PhasedProgram = sc.program();
    let mut pols = vec![PlacementSpec::SlowOnly];
    pols.extend(prog.objects.iter().map(|o| PlacementSpec::Pinned {
        dram: vec![o.name.clone()],
    }));
    let runs = crate::runner::parallel_map(&pols, jobs, Some((pname, "runs")), |_, pol| {
        run_program(
            &p,
            prog,
            sc.ranks,
            sc.dram_bytes(),
            pol.clone(),
            sc.max_ms,
            slow,
        )
    })?;
    let base = &runs[0];
    let lines: Vec<Vec<u64>> = static_lines(prog)
        .iter()
        .map(|ph| ph.iter().map(|x| x.0).collect())
        .collect();
    let pred = predicted(
        &lines,
        &base.first_phase_times,
        // `calibrate` already sets `CF_lat` = 1, as the planner plans
        &model,
        prog.iterations as f64,
    );
    Ok(prog
        .objects
        .iter()
        .zip(runs.iter().skip(1))
        .zip(pred)
        .map(|((o, r), (predicted, bw, lat, classes))| ObjBenefit {
            name: o.name.clone(),
            measured: base.seconds - r.seconds,
            predicted,
            bw,
            lat,
            classes,
        })
        .collect())
}

/// Markdown table of [`per_object`]'s rows (ms).
pub fn markdown(scenario: &str, platform: &str, rows: &[ObjBenefit]) -> String {
    let mut s = format!(
        "#### {scenario} on {platform}: benefit of one object in DRAM (whole run)\n\n\
         | object | measured ms | model ms (planner) | classes | Eq. 3.2 only ms | latency only ms | model / measured |\n\
         |---|---|---|---|---|---|---|\n"
    );
    for r in rows {
        let ratio = if r.measured.abs() > 1e-9 {
            format!("{:.2}", r.predicted / r.measured)
        } else {
            "-".into()
        };
        s += &format!(
            "| {} | {:.3} | {:.3} | {} | {:.3} | {:.3} | {} |\n",
            r.name,
            r.measured * 1e3,
            r.predicted * 1e3,
            r.classes,
            r.bw * 1e3,
            r.lat * 1e3,
            ratio
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tiering::test_support::model;

    #[test]
    fn a_pinned_object_must_exist() {
        let prog = crate::tiering::test_support::program(&[1, 1], &[&[(0, 1, false)]]);
        let pin = |n: &str| PlacementSpec::Pinned {
            dram: vec![n.into()],
        };
        assert!(pin("o1").validate_for(&prog).is_ok());
        let (key, why) = pin("nope").validate_for(&prog).unwrap_err();
        assert_eq!(key, "placement");
        assert!(why.contains("`nope`"), "{why}");
    }

    #[test]
    fn predicted_sums_the_classified_benefit_over_phases_and_iterations() {
        // phase 0: object 0 streams 1e6 lines (64 MB) in 1 ms: 64 GB/s,
        // bandwidth class; phase 1: object 1, 10 lines in 1 s: latency
        let lines = vec![vec![1_000_000, 0], vec![0, 10]];
        let times = vec![1e-3, 1.0];
        let r = predicted(&lines, &times, &model(), 2.0);
        // Eq. 3.2: 64 MB at 5 vs 10 GB/s = 6.4 ms per iteration
        assert!((r[0].0 - 2.0 * 6.4e-3).abs() < 1e-9, "{r:?}");
        assert_eq!(r[0].3, "B");
        // 10 accesses x 300 ns per iteration
        assert!((r[1].0 - 2.0 * 3e-6).abs() < 1e-12, "{r:?}");
        assert_eq!(r[1].3, "L");
        assert!((r[1].1 - 2.0 * benefit_bw(10.0, &unimem::platform(&model()))).abs() < 1e-15);
    }
}
