//! `memtamer sim ...`: the memory-system simulator's commands.

use crate::args::SimCmd;
use crate::error::{CliError, Outcome};
use crate::format::{pick, progress, Format};
use memtamer_sim::config::{parse_value, SweepSpec};
use memtamer_sim::experiment::{self, load_scenario, CheckResult, RunOptions};
use memtamer_sim::{report, validate};

/// Runs one `sim` subcommand, printing in `format` (None: its default).
pub fn run(cmd: SimCmd, format: Option<Format>) -> Result<Outcome, CliError> {
    match cmd {
        SimCmd::List => {
            list(pick(
                "memtamer sim list",
                format,
                &[Format::Table, Format::Json, Format::Csv],
            )?)?;
            Ok(Outcome::Success)
        }
        SimCmd::Run {
            scenario,
            sets,
            sweeps,
            seed,
            report: dir,
            jobs,
            trace_search,
        } => {
            // the format first: a usage error before minutes of simulation
            let format = pick(
                "memtamer sim run",
                format,
                &[Format::Table, Format::Json, Format::Csv],
            )?;
            let s = load_scenario(&scenario)?;
            let mut opts = RunOptions {
                seed,
                jobs,
                progress: progress(),
                trace_search,
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
                    if list.iter().any(|s: &SweepSpec| s.key == k) {
                        // each point would take the later value only
                        return Err(CliError::Usage {
                            arg: format!("--sweep `{a}`"),
                            expected: format!("each key swept once; `{k}` is already swept"),
                        });
                    }
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
                _ => print!("{}", report::csv(&r)),
            }
            if trace_search && format != Format::Json {
                let text = search_text(&r);
                if format == Format::Csv {
                    eprint!("{text}");
                } else {
                    print!("{text}");
                }
            }
            if let Some(d) = dir {
                super::write_report(&d, &r.title.clone(), &[r])?;
            }
            // a scenario's checks are informative here (ablations break them on
            // purpose); `sim validate` is where they decide the exit code
            Ok(Outcome::Success)
        }
        SimCmd::Validate {
            scenarios,
            markdown,
            report: dir,
            jobs,
        } => {
            let format = pick(
                "memtamer sim validate",
                if markdown {
                    Some(Format::Markdown)
                } else {
                    format
                },
                &[Format::Table, Format::Markdown, Format::Json],
            )?;
            let v = if scenarios.is_empty() {
                validate::run_all_jobs(progress(), jobs)?
            } else {
                validate::Validation {
                    scenarios: validate::run_scenarios(&scenarios, progress(), jobs)?,
                    platforms: Vec::new(),
                }
            };
            match format {
                Format::Markdown => print!("{}", validate::markdown(&v)),
                Format::Json => println!(
                    "{}",
                    serde_json::to_string_pretty(&v).map_err(CliError::json("the validation"))?
                ),
                _ => print!("{}", validate::text(&v)),
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
        SimCmd::ComparePats { platforms, jobs } => {
            let format = pick(
                "memtamer sim compare-pats",
                format,
                &[Format::Markdown, Format::Json],
            )?;
            let rows = memtamer_sim::compare::compare_jobs(&platforms, progress(), jobs)?;
            if format == Format::Json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&rows)
                        .map_err(CliError::json("the comparison"))?
                );
            } else {
                print!("{}", memtamer_sim::compare::markdown(&rows));
            }
            Ok(Outcome::Success)
        }
        SimCmd::Placement { profiles, ns, jobs } => {
            let format = pick(
                "memtamer sim placement",
                format,
                &[Format::Markdown, Format::Json],
            )?;
            let cases = memtamer_sim::placement_eval::evaluate(&profiles, &ns, jobs, progress())?;
            if format == Format::Json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&cases).map_err(CliError::json("the cases"))?
                );
            } else {
                print!("{}", memtamer_sim::placement_eval::markdown(&cases));
            }
            Ok(Outcome::Success)
        }
        SimCmd::Ribbon { jobs, seed, seeds } => {
            pick("memtamer sim ribbon", format, &[Format::Markdown])?;
            if let Some(seeds) = seeds {
                return super::sim_ribbon::seeds(&seeds.0, jobs);
            }
            if let Some(seed) = seed {
                return super::sim_ribbon::one_seed(seed, jobs);
            }
            // progress (and the newline that ends its line) only on a terminal
            let show = progress();
            let cases = memtamer_sim::ribbon_eval::evaluate(jobs, show)?;
            if show {
                eprintln!();
            }
            print!("{}", memtamer_sim::ribbon_eval::markdown(&cases));
            let rows = memtamer_sim::ribbon_eval::evaluate_contention(jobs, show)?;
            if show {
                eprintln!();
            }
            println!();
            print!("{}", memtamer_sim::ribbon_eval::contention_markdown(&rows));
            Ok(Outcome::Success)
        }
        SimCmd::Unimem {
            platforms,
            scenarios,
            jobs,
            per_object,
            oracle,
            exposure,
            fill,
        } => {
            pick("memtamer sim unimem", format, &[Format::Markdown])?;
            if per_object {
                super::sim_unimem::per_object(&platforms, &scenarios, jobs)
            } else {
                super::sim_unimem::run(&platforms, &scenarios, jobs, oracle, &exposure, &fill)
            }
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
            partial_form,
            out_no_copy,
            out_fault_ns,
            model,
            first_touch,
            tahoe_touch,
            frees,
            check_slopes,
            dram_ratio,
        } => {
            pick("memtamer sim tahoe", format, &[Format::Markdown])?;
            super::sim_tahoe::run(super::sim_tahoe::Opts {
                platforms,
                benches,
                recorded,
                reuse,
                shrink,
                ratio,
                seed,
                jobs,
                partial_form,
                out_fault_ns: out_no_copy.then_some(out_fault_ns),
                model,
                first_touch,
                os_touch: tahoe_touch == "os",
                frees_never: frees == "never",
                rw_check: check_slopes == "rw",
                dram_ratio,
            })
        }
        SimCmd::Sampler { periods } => {
            pick("memtamer sim sampler", format, &[Format::Table])?;
            print!("{}", validate::sampler_accuracy(&periods)?);
            Ok(Outcome::Success)
        }
    }
}

/// `sim list`: the built-in platforms and scenarios with their descriptions.
fn list(format: Format) -> Result<(), CliError> {
    let mut rows: Vec<(&str, &str, String)> = Vec::new();
    for (n, t) in experiment::PLATFORMS {
        let d = memtamer_sim::Platform::parse(n, t)
            .map(|p| p.description)
            .unwrap_or_default();
        rows.push(("platform", n, d));
    }
    for (n, t) in experiment::SCENARIOS {
        let d = memtamer_sim::Scenario::parse(n, t)
            .map(|s| s.title)
            .unwrap_or_default();
        rows.push(("scenario", n, d));
    }
    match format {
        Format::Json => {
            let v: Vec<serde_json::Value> = rows
                .iter()
                .map(|(k, n, d)| serde_json::json!({"kind": k, "name": n, "description": d}))
                .collect();
            println!(
                "{}",
                serde_json::to_string_pretty(&v).map_err(CliError::json("the list"))?
            );
        }
        Format::Csv => {
            println!("kind,name,description");
            for (k, n, d) in &rows {
                println!("{k},{n},{}", csv_field(d));
            }
        }
        _ => {
            for (kind, width) in [("platform", 12), ("scenario", 20)] {
                println!("{kind}s:");
                for (_, n, d) in rows.iter().filter(|r| r.0 == kind) {
                    println!("  {n:<width$} {d}");
                }
            }
        }
    }
    Ok(())
}

/// One CSV field (RFC 4180): quoted when it holds a comma, quote or newline.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
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

/// `--trace-search` as text: each point's swept values, then its searches.
fn search_text(r: &experiment::ScenarioResult) -> String {
    let mut out = String::new();
    for p in &r.points {
        let at: Vec<String> = p.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        out.push_str(&format!("\n# searches at {}\n", at.join(" ")));
        if p.searches.is_empty() {
            out.push_str("(no Ribbon controller of its own)\n");
        }
        for s in &p.searches {
            out.push_str(&s.text());
            out.push('\n');
        }
    }
    out
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
