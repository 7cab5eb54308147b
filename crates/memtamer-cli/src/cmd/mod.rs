//! One module per subcommand; `run` dispatches the parsed command line. Each
//! command returns an `Outcome` or a typed `CliError`; `main` maps both to
//! exit codes.

use crate::args::{Cli, Cmd};
use crate::error::{CliError, Outcome};
use memtamer_sim::ScenarioResult;
use std::path::Path;

mod bench;
mod calibrate;
mod daemon;
mod demo;
mod gate;
mod serve_metrics;
mod sim;
mod sim_tahoe;
mod stat;
mod top;
mod topology;

/// Runs one parsed command line.
pub fn run(cli: Cli) -> Result<Outcome, CliError> {
    match cli.cmd {
        Cmd::Demo { report } => demo::run(report.as_deref()),
        Cmd::Sim { cmd } => sim::run(cmd),
        Cmd::Calibrate(args) => calibrate::run(args),
        Cmd::Bench { cmd } => bench::run(cmd),
        Cmd::Gate { cmd } => gate::run(cmd),
        Cmd::Run {
            config,
            proc_root,
            iterations,
            no_guard,
        } => daemon::run(&config, &proc_root, iterations, no_guard),
        Cmd::Status { socket, json } => daemon::status(&socket, json),
        Cmd::Guard { pid, journal } => daemon::guard(pid, &journal),
        Cmd::Restore { journal } => daemon::restore(&journal),
        Cmd::Topology { sysfs, json } => topology::run(&sysfs, json),
        Cmd::Top {
            gate,
            interval_ms,
            sort,
            once,
        } => top::run(&gate, interval_ms, sort, once),
        Cmd::ServeMetrics {
            listen,
            gate,
            interval_ms,
            per_thread,
        } => serve_metrics::run(&listen, &gate, interval_ms, per_thread),
        Cmd::Stat {
            gate,
            interval_ms,
            count,
            json,
        } => stat::run(&gate, interval_ms, count, json),
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
