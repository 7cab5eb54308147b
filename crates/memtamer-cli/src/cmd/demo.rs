//! `memtamer demo`: the simulated PATS platform, DRAM throughput collapsing
//! as PM writers are added, under each policy.

use crate::error::{CliError, Outcome};
use crate::format::Format;
use memtamer_sim::experiment::{self, load_scenario, RunOptions};
use std::path::Path;

/// Runs the `demo` scenario and prints its pivot (and an HTML report into `report`).
pub fn run(report: Option<&Path>, format: Format) -> Result<Outcome, CliError> {
    let s = load_scenario("demo")?;
    let opts = RunOptions {
        progress: crate::format::progress(),
        ..Default::default()
    };
    let r = experiment::run_scenario(&s, &opts)?;
    if format == Format::Json {
        println!(
            "{}",
            serde_json::to_string_pretty(&r).map_err(CliError::json("the result"))?
        );
    } else {
        print!("{}", crate::view::demo::pivot(&r));
        println!("\nTry: memtamer sim run pats-fig10 · memtamer sim validate --report report/ · memtamer gate exec -- <libpmem program>");
    }
    if let Some(d) = report {
        super::write_report(d, "memtamer demo", &[r])?;
    }
    Ok(Outcome::Success)
}
