//! `memtamer sim unimem`: Unimem and its baselines on the phased scenarios
//! (issue 20 item 5; docs/notebook/unimem.md "In the simulator").

use crate::error::{CliError, Outcome};
use memtamer_sim::config::phased::{ExposureSpec, FillSpec};
use memtamer_sim::tier_eval;

/// Runs every scenario under every policy on every platform and prints the
/// Markdown tables with the "Done when" figures; `oracle` adds the
/// hindsight baselines' columns (`memtamer_sim::tier_oracle`).
pub(super) fn run(
    platforms: &[String],
    scenarios: &[String],
    jobs: usize,
    oracle: bool,
    exposure: &str,
    fill: &str,
) -> Result<Outcome, CliError> {
    let sc = scenarios
        .iter()
        .map(|s| tier_eval::load_scenario(s))
        .collect::<Result<Vec<_>, _>>()?;
    // clap admits only these two
    let exposure = if exposure == "full" {
        ExposureSpec::Full
    } else {
        ExposureSpec::Measured
    };
    let fill = if fill == "off" {
        FillSpec::Off
    } else {
        FillSpec::Remainder
    };
    let res = tier_eval::evaluate_opts(&sc, platforms, jobs, oracle, exposure, fill)?;
    print!("{}", tier_eval::markdown(&res));
    Ok(Outcome::Success)
}

/// `--per-object`: every object's measured benefit of DRAM against the
/// model's, per (platform, scenario).
pub(super) fn per_object(
    platforms: &[String],
    scenarios: &[String],
    jobs: usize,
) -> Result<Outcome, CliError> {
    use memtamer_sim::tier_objects;
    for p in platforms {
        for s in scenarios {
            let sc = tier_eval::load_scenario(s)?;
            let rows = tier_objects::per_object(&sc, p, jobs)?;
            println!("{}", tier_objects::markdown(&sc.name, p, &rows));
        }
    }
    Ok(Outcome::Success)
}
