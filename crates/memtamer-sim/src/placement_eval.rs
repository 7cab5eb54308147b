//! Ahn Table 2 against a brute-force optimum: every static layout of N
//! SPEC-like and N fio-like tasks over the two sockets (one task per physical
//! core, as Ahn §4.2 runs them) is simulated, and the separated, blended and
//! dynamic (`placement` policy) layouts are normalized to the best layout
//! for each task type, as the paper normalizes to "optimal placements".
//!
//! A layout is the number of SPEC tasks `k` and of FIO tasks `j` on socket 0
//! (the rest on socket 1): which cores inside a socket does not matter on
//! this platform (one LLC per socket, no SMT siblings used). The platform is
//! symmetric, so `(k, j)` and `(N - k, N - j)` are the same layout and only
//! one of them is run.

use crate::config::Scenario;
use crate::error::SimError;
use crate::experiment::{load_scenario, metrics, parallel_map, run_point};
use serde::Serialize;

/// The scenario the layouts are cut from.
const SCENARIO: &str = "ahn-table2";

/// Throughput of the two task types in one run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Throughput {
    /// SPEC-like tasks, thousands of iterations per second (sum).
    pub spec_kops: f64,
    /// fio-like tasks, PM write GB/s (sum).
    pub fio_gbps: f64,
}

/// SPEC tasks and FIO tasks on socket 0; the rest are on socket 1.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Layout {
    /// SPEC-like tasks on socket 0.
    pub spec_on_0: u32,
    /// fio-like tasks on socket 0.
    pub fio_on_0: u32,
}

/// One profile and task count.
#[derive(Clone, Debug, Serialize)]
pub struct Case {
    /// SPEC-like profile.
    pub profile: String,
    /// Tasks of each type.
    pub n: u32,
    /// Every SPEC on socket 0, every FIO on socket 1 (Linux-Separated).
    pub separated: Throughput,
    /// Half of each type on each socket (Linux-Blended).
    pub blended: Throughput,
    /// Started separated, placed by the `placement` policy.
    pub ours: Throughput,
    /// Best SPEC throughput over all layouts, and its layout.
    pub best_spec: (f64, Layout),
    /// Best FIO throughput over all layouts, and its layout.
    pub best_fio: (f64, Layout),
    /// Layouts simulated.
    pub layouts: usize,
}

impl Case {
    /// A throughput normalized to the best layout, per type (Ahn Table 2).
    pub fn normalized(&self, t: &Throughput) -> (f64, f64) {
        let r = |v: f64, best: f64| if best > 0.0 { v / best } else { 0.0 };
        (
            r(t.spec_kops, self.best_spec.0),
            r(t.fio_gbps, self.best_fio.0),
        )
    }
}

/// The distinct layouts of `n` + `n` tasks over two symmetric sockets.
pub fn layouts(n: u32) -> Vec<Layout> {
    let mut out = Vec::new();
    for k in 0..=n {
        for j in 0..=n {
            // (k, j) mirrors (n - k, n - j): keep the first of each pair
            if (k, j) <= (n - k, n - j) {
                out.push(Layout {
                    spec_on_0: k,
                    fio_on_0: j,
                });
            }
        }
    }
    out
}

fn layout_sets(l: Layout, n: u32) -> Vec<(String, toml::Value)> {
    let s = |v: &str| toml::Value::String(v.into());
    let i = |v: u32| toml::Value::Integer(i64::from(v));
    vec![
        ("job.spec0.threads".into(), i(l.spec_on_0)),
        ("job.spec0.cpus".into(), s("0-7")),
        ("job.fio0.threads".into(), i(l.fio_on_0)),
        ("job.fio0.cpus".into(), s("8-15")),
        ("job.spec1.threads".into(), i(n - l.spec_on_0)),
        ("job.spec1.cpus".into(), s("16-23")),
        ("job.fio1.threads".into(), i(n - l.fio_on_0)),
        ("job.fio1.cpus".into(), s("24-31")),
    ]
}

/// One run to do: which case, and a layout or the policy.
#[derive(Clone, Copy)]
enum What {
    Layout(Layout),
    Ours,
}

fn throughput(scenario: &Scenario) -> Result<Throughput, SimError> {
    let (platform, r) = run_point(scenario, None)?;
    let m = metrics(scenario, &platform, &r);
    Ok(Throughput {
        spec_kops: m.get("spec.kops").copied().unwrap_or(0.0),
        fio_gbps: m.get("fio.pm_write_gbps").copied().unwrap_or(0.0),
    })
}

/// Simulates every layout (and the dynamic policy) for each profile and `n`
/// (even, at most 8) on `jobs` worker threads (0 = all cores).
pub fn evaluate(
    profiles: &[String],
    ns: &[u32],
    jobs: usize,
    progress: bool,
) -> Result<Vec<Case>, SimError> {
    let base = load_scenario(SCENARIO)?;
    let mut runs: Vec<(usize, What, Scenario)> = Vec::new();
    let mut cases: Vec<(String, u32)> = Vec::new();
    for p in profiles {
        for &n in ns {
            if n == 0 || n % 2 != 0 || n > 8 {
                return Err(SimError::Invalid {
                    file: SCENARIO.into(),
                    line: 0,
                    key: "n".into(),
                    message: format!("task counts must be even and in 2..=8, got {n}"),
                });
            }
            let c = cases.len();
            cases.push((p.clone(), n));
            let profile = ("profile".to_string(), toml::Value::String(p.clone()));
            for l in layouts(n) {
                let mut sets = vec![profile.clone()];
                sets.extend(layout_sets(l, n));
                runs.push((c, What::Layout(l), base.with_overrides(&sets)?));
            }
            let ours = [
                profile.clone(),
                ("n".into(), toml::Value::Integer(i64::from(n))),
                ("placement".into(), toml::Value::String("ours".into())),
            ];
            runs.push((c, What::Ours, base.with_overrides(&ours)?));
        }
    }
    let results = parallel_map(
        &runs,
        jobs,
        progress.then_some(("placement", "runs")),
        |_, (_, _, s)| throughput(s),
    )?;
    let mut out: Vec<Case> = cases
        .iter()
        .map(|(p, n)| Case {
            profile: p.clone(),
            n: *n,
            separated: Throughput::default(),
            blended: Throughput::default(),
            ours: Throughput::default(),
            best_spec: (0.0, Layout::default()),
            best_fio: (0.0, Layout::default()),
            layouts: 0,
        })
        .collect();
    if results.len() != runs.len() {
        return Err(SimError::Invalid {
            file: SCENARIO.into(),
            line: 0,
            key: "run".into(),
            message: "a worker did not report".into(),
        });
    }
    for ((c, what, _), t) in runs.iter().zip(results) {
        let case = &mut out[*c];
        match what {
            What::Ours => case.ours = t,
            What::Layout(l) => {
                case.layouts += 1;
                // (N, 0) is run as its mirror (0, N)
                let (k, j) = (l.spec_on_0, l.fio_on_0);
                if (k, j) == (case.n, 0) || (k, j) == (0, case.n) {
                    case.separated = t;
                }
                if l.spec_on_0 == case.n / 2 && l.fio_on_0 == case.n / 2 {
                    case.blended = t;
                }
                if t.spec_kops > case.best_spec.0 {
                    case.best_spec = (t.spec_kops, *l);
                }
                if t.fio_gbps > case.best_fio.0 {
                    case.best_fio = (t.fio_gbps, *l);
                }
            }
        }
    }
    Ok(out)
}

/// Average and largest loss of "ours" against the best layouts, over both
/// task types of every case (Ahn: 3.3% and 4.9%).
pub fn ours_loss(cases: &[Case]) -> (f64, f64) {
    let losses: Vec<f64> = cases
        .iter()
        .flat_map(|c| {
            let (s, f) = c.normalized(&c.ours);
            [1.0 - s, 1.0 - f]
        })
        .collect();
    if losses.is_empty() {
        return (0.0, 0.0);
    }
    let avg = losses.iter().sum::<f64>() / losses.len() as f64;
    let max = losses.iter().copied().fold(f64::MIN, f64::max);
    (avg, max)
}

/// Ahn Table 2's numbers (Separated / Ours, SPEC / FIO) for 2, 4, 8 tasks.
fn paper(profile: &str, n: u32) -> Option<[f64; 4]> {
    let rows: [(&str, [[f64; 4]; 3]); 6] = [
        (
            "xalancbmk",
            [
                [0.987, 0.843, 0.995, 0.999],
                [0.900, 0.379, 0.986, 0.982],
                [0.753, 0.195, 0.962, 0.961],
            ],
        ),
        (
            "perlbench",
            [
                [0.997, 0.856, 0.999, 0.993],
                [0.866, 0.404, 0.987, 0.992],
                [0.483, 0.163, 0.968, 0.984],
            ],
        ),
        (
            "x264",
            [
                [0.967, 0.850, 0.996, 0.997],
                [0.764, 0.381, 0.980, 0.984],
                [0.370, 0.171, 0.975, 0.944],
            ],
        ),
        (
            "mcf",
            [
                [0.875, 0.824, 0.997, 0.994],
                [0.386, 0.397, 0.996, 0.993],
                [0.065, 0.194, 0.990, 0.974],
            ],
        ),
        (
            "omnetpp",
            [
                [0.677, 0.809, 0.973, 0.998],
                [0.262, 0.397, 0.990, 0.992],
                [0.058, 0.199, 0.958, 0.974],
            ],
        ),
        (
            "fotonik3d",
            [
                [0.665, 0.744, 0.993, 0.979],
                [0.201, 0.453, 0.994, 0.994],
                [0.027, 0.277, 0.948, 0.964],
            ],
        ),
    ];
    let i = match n {
        2 => 0,
        4 => 1,
        8 => 2,
        _ => return None,
    };
    rows.iter().find(|(p, _)| *p == profile).map(|(_, v)| {
        let [ss, sf, os, of] = v[i];
        [ss, sf, os, of]
    })
}

/// The evaluation table as Markdown (docs/placement.md).
pub fn markdown(cases: &[Case]) -> String {
    let mut s = String::from(
        "| profile | N | layouts | SPEC sep / blend / ours | FIO sep / blend / ours | paper SPEC sep / ours | paper FIO sep / ours |\n|---|---|---|---|---|---|---|\n",
    );
    for c in cases {
        let (ss, sf) = c.normalized(&c.separated);
        let (bs, bf) = c.normalized(&c.blended);
        let (os, of) = c.normalized(&c.ours);
        let p = paper(&c.profile, c.n).map_or_else(
            || ("-".to_string(), "-".to_string()),
            |[a, b, x, y]| (format!("{a:.3} / {x:.3}"), format!("{b:.3} / {y:.3}")),
        );
        s += &format!(
            "| {} | {} | {} | {ss:.3} / {bs:.3} / {os:.3} | {sf:.3} / {bf:.3} / {of:.3} | {} | {} |\n",
            c.profile, c.n, c.layouts, p.0, p.1
        );
    }
    let (avg, max) = ours_loss(cases);
    s += &format!(
        "\nOurs against the best layout per task type: average loss {:.1}%, largest {:.1}% (Ahn: 3.3% and 4.9%).\n",
        avg * 100.0,
        max * 100.0
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_cover_every_split_once_up_to_mirroring() {
        // n = 2: (k, j) in 0..=2 squared is 9 layouts; (1, 1) is its own mirror
        let l = layouts(2);
        assert_eq!(l.len(), 5);
        assert!(l.contains(&Layout {
            spec_on_0: 0,
            fio_on_0: 2
        }));
        assert!(!l.contains(&Layout {
            spec_on_0: 2,
            fio_on_0: 0
        }));
        assert_eq!(layouts(8).len(), 41); // (81 + the self-mirrored (4, 4)) / 2
        for n in [2u32, 4, 8] {
            for a in layouts(n) {
                let mirror = Layout {
                    spec_on_0: n - a.spec_on_0,
                    fio_on_0: n - a.fio_on_0,
                };
                assert!(mirror == a || !layouts(n).contains(&mirror));
            }
        }
    }

    #[test]
    fn normalization_and_losses() {
        let t = |s, f| Throughput {
            spec_kops: s,
            fio_gbps: f,
        };
        let c = Case {
            profile: "mcf".into(),
            n: 2,
            separated: t(50.0, 4.0),
            blended: t(100.0, 8.0),
            ours: t(95.0, 8.0),
            best_spec: (100.0, Layout::default()),
            best_fio: (8.0, Layout::default()),
            layouts: 5,
        };
        assert_eq!(c.normalized(&c.separated), (0.5, 0.5));
        let (avg, max) = ours_loss(std::slice::from_ref(&c));
        assert!((avg - 0.025).abs() < 1e-12 && (max - 0.05).abs() < 1e-12);
        assert!(markdown(&[c]).contains("| mcf | 2 | 5 | 0.500 / 1.000 / 0.950 |"));
        assert_eq!(ours_loss(&[]), (0.0, 0.0));
    }

    #[test]
    fn odd_or_large_task_counts_are_rejected() {
        assert!(evaluate(&["mcf".into()], &[3], 1, false).is_err());
        assert!(evaluate(&["mcf".into()], &[10], 1, false).is_err());
    }

    #[test]
    fn two_plus_two_finds_the_blended_layout_and_ours_reaches_it() {
        let cases = evaluate(&["fotonik3d".into()], &[2], 0, false).expect("runs");
        let c = &cases[0];
        assert_eq!(c.layouts, 5);
        assert!(c.separated.spec_kops > 0.0 && c.blended.fio_gbps > 0.0);
        let (bs, bf) = c.normalized(&c.blended);
        let (os, of) = c.normalized(&c.ours);
        // the dynamic policy ends where blended is (within noise of one run)
        assert!((os - bs).abs() < 0.02 && (of - bf).abs() < 0.02, "{c:?}");
    }
}
