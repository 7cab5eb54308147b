//! `memtamer sim ribbon --seed N` / `--seeds A,B,...`: issue 19's simulator
//! tables for another seed, or for several with a Done-when summary over
//! them (docs/notebook/ribbon.md "The Done-when lines over seeds"). Without either
//! flag `sim.rs` runs the scenarios' own seed as before.

use crate::error::{CliError, Outcome};
use crate::format::progress;
use memtamer_sim::ribbon_eval::{contention_markdown, markdown};
use memtamer_sim::ribbon_seeds::{evaluate_seeds, over_seeds, over_seeds_markdown, SeedRun};

/// Prints one seed's tables, laid out as the default run prints them.
fn tables(r: &SeedRun) {
    print!("{}", markdown(&r.cases));
    println!();
    print!("{}", contention_markdown(&r.contention));
}

/// `--seed N`: the default run's tables with every point at seed `seed`.
pub(super) fn one_seed(seed: u64, jobs: usize) -> Result<Outcome, CliError> {
    let runs = evaluate_seeds(&[seed], jobs, progress())?;
    for r in &runs {
        tables(r);
    }
    Ok(Outcome::Success)
}

/// `--seeds A,B,...`: each seed's tables under a heading, then the
/// Done-when lines per seed with their mean / min / max.
pub(super) fn seeds(seeds: &[u64], jobs: usize) -> Result<Outcome, CliError> {
    let runs = evaluate_seeds(seeds, jobs, progress())?;
    for r in &runs {
        println!("### seed {}", r.seed);
        println!();
        tables(r);
        println!();
    }
    let list: Vec<String> = seeds.iter().map(u64::to_string).collect();
    println!("### Done-when lines over seeds {}", list.join(", "));
    println!();
    print!("{}", over_seeds_markdown(&over_seeds(&runs)));
    Ok(Outcome::Success)
}
