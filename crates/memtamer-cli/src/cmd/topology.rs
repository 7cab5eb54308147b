//! `memtamer topology`: the host's scheduling-domain tree and memory-only
//! NUMA nodes, from sysfs.

use crate::error::{CliError, Outcome};
use crate::format::Format;
use std::path::Path;

/// Reads the topology under `sysfs` and prints it as a tree or JSON.
pub fn run(sysfs: &Path, format: Format) -> Result<Outcome, CliError> {
    let t = memtamer_sense::topology::read_topology(sysfs)
        .map_err(CliError::sense("reading the topology"))?;
    if format == Format::Json {
        println!(
            "{}",
            serde_json::to_string_pretty(&t).map_err(CliError::json("the topology"))?
        );
    } else {
        print!("{}", t.render());
    }
    Ok(Outcome::Success)
}
