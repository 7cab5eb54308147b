//! `memtamer topology`: the host's scheduling-domain tree and memory-only
//! NUMA nodes, from sysfs.

use crate::error::{CliError, Outcome};
use std::path::Path;

/// Reads the topology under `sysfs` and prints it (as JSON with `json`).
pub fn run(sysfs: &Path, json: bool) -> Result<Outcome, CliError> {
    let t = memtamer_sense::topology::read_topology(sysfs)
        .map_err(CliError::sense("reading the topology"))?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&t).map_err(CliError::json("the topology"))?
        );
    } else {
        print!("{}", t.render());
    }
    Ok(Outcome::Success)
}
