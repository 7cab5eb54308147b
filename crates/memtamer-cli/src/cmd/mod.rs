//! One module per subcommand; `run` dispatches the parsed command line. Each
//! command returns an `Outcome` or a typed `CliError`; `main` maps both to
//! exit codes.

use crate::args::{Cli, Cmd};
use crate::error::{CliError, Outcome};
use crate::format::{pick, with_json_alias, Format};
use memtamer_sim::ScenarioResult;
use std::path::Path;

mod assets;
mod bench;
mod calibrate;
mod daemon;
mod demo;
mod gate;
mod hostile;
mod serve_metrics;
mod sim;
mod sim_ribbon;
mod sim_tahoe;
mod sim_unimem;
mod stat;
mod tier;
mod top;
mod topology;

/// Runs one parsed command line.
pub fn run(cli: Cli) -> Result<Outcome, CliError> {
    let f = cli.format;
    // commands that print no data refuse every --format
    let none = |command: &str| pick(command, f, &[]).map(|_| ());
    match cli.cmd {
        Cmd::Demo { report } => demo::run(
            report.as_deref(),
            pick("memtamer demo", f, &[Format::Table, Format::Json])?,
        ),
        Cmd::Sim { cmd } => sim::run(cmd, f),
        Cmd::Calibrate(args) => calibrate::run(
            args,
            pick("memtamer calibrate", f, &[Format::Table, Format::Json])?,
        ),
        Cmd::Bench { cmd } => {
            // benchmark reports are ratio tables for people
            pick("memtamer bench", f, &[Format::Table])?;
            bench::run(cmd)
        }
        Cmd::Gate { cmd } => gate::run(cmd, f),
        Cmd::Run {
            config,
            proc_root,
            iterations,
            no_guard,
            check_config,
        } => {
            none("memtamer run")?;
            if check_config {
                return daemon::check_config(&config);
            }
            daemon::run(&config, &proc_root, iterations, no_guard)
        }
        Cmd::Status { socket, json } => daemon::status(
            &socket,
            pick(
                "memtamer status",
                with_json_alias(f, json)?,
                &[Format::Table, Format::Json],
            )?,
        ),
        Cmd::Guard {
            pid,
            journal,
            watchdog_ms,
        } => {
            none("memtamer guard")?;
            daemon::guard(pid, &journal, watchdog_ms)
        }
        Cmd::Restore { journal } => {
            none("memtamer restore")?;
            daemon::restore(&journal)
        }
        Cmd::Topology { sysfs, json } => topology::run(
            &sysfs,
            pick(
                "memtamer topology",
                with_json_alias(f, json)?,
                &[Format::Table, Format::Json],
            )?,
        ),
        Cmd::Top {
            gate,
            interval_ms,
            sort,
            once,
        } => {
            // a live view; `serve-metrics` and `stat --format json` are for machines
            pick("memtamer top", f, &[Format::Table])?;
            top::run(&gate, interval_ms, sort, once)
        }
        Cmd::ServeMetrics {
            listen,
            gate,
            interval_ms,
            per_thread,
        } => {
            none("memtamer serve-metrics (it serves Prometheus text over HTTP)")?;
            serve_metrics::run(&listen, &gate, interval_ms, per_thread)
        }
        Cmd::Tier { cmd } => tier::run(
            cmd,
            pick("memtamer tier", f, &[Format::Table, Format::Json])?,
        ),
        Cmd::GenerateAssets { out } => {
            none("memtamer generate-assets")?;
            assets::run(&out)
        }
        Cmd::Stat {
            gate,
            interval_ms,
            count,
            json,
        } => stat::run(
            &gate,
            interval_ms,
            count,
            pick(
                "memtamer stat",
                with_json_alias(f, json)?,
                &[Format::Table, Format::Json],
            )?,
        ),
    }
}

/// The sensing configuration of `stat`, `top` and `serve-metrics`: the
/// environment's settings, reading library reports of gate `gate`.
fn source_config(gate: &str) -> Result<memtamer_sense::sources::SourceConfig, CliError> {
    let mut config = memtamer_sense::sources::SourceConfig::from_env()
        .map_err(CliError::sense("sensing settings"))?;
    config.gate = memtamer_gate::GateOptions {
        name: gate.to_string(),
        ..Default::default()
    };
    Ok(config)
}

/// Opens every sensing source this host has (missing ones are reported in
/// `Sensors::status`, not errors).
fn sensors_for(gate: &str) -> Result<memtamer_sense::sources::Sensors, CliError> {
    Ok(memtamer_sense::sources::Sensors::open(&source_config(
        gate,
    )?))
}

/// Writes `index.html` and one SVG per plot of each result into `dir`.
fn write_report(dir: &Path, title: &str, results: &[ScenarioResult]) -> Result<(), CliError> {
    use memtamer_sim::report;
    std::fs::create_dir_all(dir)
        .map_err(CliError::io(format!("cannot create {}", dir.display())))?;
    let path = dir.join("index.html");
    std::fs::write(&path, report::html(title, results))
        .map_err(CliError::io(format!("cannot write {}", path.display())))?;
    for r in results {
        for (i, svg) in report::scenario_svgs(r).iter().enumerate() {
            let p = dir.join(format!("{}-{}.svg", r.scenario, i + 1));
            std::fs::write(&p, svg)
                .map_err(CliError::io(format!("cannot write {}", p.display())))?;
        }
    }
    eprintln!("report: {}", path.display());
    Ok(())
}
