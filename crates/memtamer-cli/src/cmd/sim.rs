//! `memtamer sim ...`: the memory-system simulator's commands.

use crate::args::{Format, SimCmd};
use crate::error::{CliError, Outcome};
use memtamer_sim::config::{parse_value, SweepSpec};
use memtamer_sim::experiment::{self, load_scenario, CheckResult, RunOptions};
use memtamer_sim::{report, validate};

/// Runs one `sim` subcommand.
pub fn run(cmd: SimCmd) -> Result<Outcome, CliError> {
    match cmd {
        SimCmd::List => {
            list();
            Ok(Outcome::Success)
        }
        SimCmd::Run {
            scenario,
            sets,
            sweeps,
            seed,
            format,
            report: dir,
            jobs,
        } => {
            let s = load_scenario(&scenario)?;
            let mut opts = RunOptions {
                seed,
                jobs,
                progress: true,
                ..Default::default()
            };
            for a in &sets {
                let (k, v) = parse_kv("--set", a)?;
                opts.sets.push((k, parse_value(&v)));
            }
            if !sweeps.is_empty() {
                let mut list = Vec::new();
                for a in &sweeps {
                    let (k, v) = parse_kv("--sweep", a)?;
                    let values = v.split(',').map(|x| parse_value(x.trim())).collect();
                    list.push(SweepSpec { key: k, values });
                }
                opts.sweep = Some(list);
            }
            let r = experiment::run_scenario(&s, &opts)?;
            match format {
                Format::Table => print!("{}", report::table(&r)),
                Format::Json => println!(
                    "{}",
                    serde_json::to_string_pretty(&r).map_err(CliError::json("the result"))?
                ),
                Format::Csv => print!("{}", report::csv(&r)),
            }
            if let Some(d) = dir {
                super::write_report(&d, &r.title.clone(), &[r])?;
            }
            // a scenario's checks are informative here (ablations break them on
            // purpose); `sim validate` is where they decide the exit code
            Ok(Outcome::Success)
        }
        SimCmd::Validate {
            markdown,
            report: dir,
        } => {
            let v = validate::run_all(true)?;
            if markdown {
                print!("{}", validate::markdown(&v));
            } else {
                print!("{}", validate::text(&v));
            }
            if let Some(d) = dir {
                super::write_report(&d, "memtamer simulator validation", &v.scenarios)?;
            }
            let failed = failed_checks(
                v.scenarios
                    .iter()
                    .map(|r| (r.scenario.as_str(), &r.checks[..])),
            );
            if !failed.is_empty() {
                eprintln!(
                    "memtamer: {} check(s) FAILED: {}",
                    failed.len(),
                    failed.join(", ")
                );
            }
            Ok(Outcome::check(failed.is_empty()))
        }
        SimCmd::ComparePats { platforms } => {
            let rows = memtamer_sim::compare::compare(&platforms, true)?;
            eprintln!();
            print!("{}", memtamer_sim::compare::markdown(&rows));
            Ok(Outcome::Success)
        }
        SimCmd::Placement { profiles, ns, jobs } => {
            let cases = memtamer_sim::placement_eval::evaluate(&profiles, &ns, jobs, true)?;
            print!("{}", memtamer_sim::placement_eval::markdown(&cases));
            Ok(Outcome::Success)
        }
        SimCmd::Tahoe {
            platforms,
            benches,
            recorded,
            reuse,
            shrink,
            ratio,
            seed,
            jobs,
        } => super::sim_tahoe::run(super::sim_tahoe::Opts {
            platforms,
            benches,
            recorded,
            reuse,
            shrink,
            ratio,
            seed,
            jobs,
        }),
        SimCmd::Sampler { periods } => {
            print!("{}", validate::sampler_accuracy(&periods)?);
            Ok(Outcome::Success)
        }
    }
}

/// `sim list`: the built-in platforms and scenarios with their descriptions.
fn list() {
    println!("platforms:");
    for (n, t) in experiment::PLATFORMS {
        let d = memtamer_sim::Platform::parse(n, t)
            .map(|p| p.description)
            .unwrap_or_default();
        println!("  {n:<12} {d}");
    }
    println!("scenarios:");
    for (n, t) in experiment::SCENARIOS {
        let d = memtamer_sim::Scenario::parse(n, t)
            .map(|s| s.title)
            .unwrap_or_default();
        println!("  {n:<20} {d}");
    }
}

/// Splits a `KEY=VALUE` argument of `flag`; anything else is a usage error.
fn parse_kv(flag: &str, arg: &str) -> Result<(String, String), CliError> {
    arg.split_once('=')
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .ok_or_else(|| CliError::Usage {
            arg: format!("{flag} `{arg}`"),
            expected: "KEY=VALUE".into(),
        })
}

/// `scenario: check` of every check that did not pass (the FAIL lines).
fn failed_checks<'a>(
    results: impl IntoIterator<Item = (&'a str, &'a [CheckResult])>,
) -> Vec<String> {
    results
        .into_iter()
        .flat_map(|(scenario, checks)| {
            checks
                .iter()
                .filter(|c| !c.pass)
                .map(move |c| format!("{scenario}: {}", c.name))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(name: &str, pass: bool) -> CheckResult {
        CheckResult {
            name: name.into(),
            value: Some(1.0),
            min: Some(0.5),
            max: None,
            pass,
        }
    }

    #[test]
    fn a_fail_line_fails_validate() {
        let a = [check("collapse", true), check("recovery", false)];
        let b = [check("peak", true)];
        let failed = failed_checks([("pats-fig10", &a[..]), ("dicio-fig5", &b[..])]);
        assert_eq!(failed, vec!["pats-fig10: recovery".to_string()]);
        assert_eq!(Outcome::check(failed.is_empty()), Outcome::CheckFailed);
        let none = failed_checks([("dicio-fig5", &b[..])]);
        assert_eq!(Outcome::check(none.is_empty()), Outcome::Success);
    }

    #[test]
    fn key_value_arguments() {
        assert_eq!(
            parse_kv("--set", " duration_ms = 10 ").unwrap(),
            ("duration_ms".to_string(), "10".to_string())
        );
        let e = parse_kv("--set", "duration_ms").unwrap_err();
        assert_eq!(e.exit_code(), crate::error::EXIT_USAGE);
        assert_eq!(e.to_string(), "--set `duration_ms`: expected KEY=VALUE");
    }
}
