//! `memtamer tier status`: the objects and placements of every rank of a
//! job that runs the tier runtime with `MEMTAMER_TIER_STATUS_DIR` set (issue
//! 20 item 6). The files and their checks are `memtamer_tier::status`; this
//! is the shell: read the directory, print, map problems to exit codes.

use crate::args::TierCmd;
use crate::error::{CliError, Outcome};
use crate::format::Format;
use memtamer_tier::status::{self, StatusError};
use std::path::{Path, PathBuf};

/// Runs one `tier` subcommand.
pub(crate) fn run(cmd: TierCmd, format: Format) -> Result<Outcome, CliError> {
    match cmd {
        TierCmd::Status { dir } => {
            let dir = dir
                .or_else(|| {
                    std::env::var_os("MEMTAMER_TIER_STATUS_DIR")
                        .filter(|d| !d.is_empty())
                        .map(PathBuf::from)
                })
                .ok_or_else(|| CliError::Usage {
                    arg: "memtamer tier status".into(),
                    expected:
                        "--dir DIR or MEMTAMER_TIER_STATUS_DIR (the directory the job was run with)"
                            .into(),
                })?;
            status_cmd(&dir, format)
        }
    }
}

fn status_cmd(dir: &Path, format: Format) -> Result<Outcome, CliError> {
    let found = status::read_dir(dir, &status::hostname(), status::pid_alive)?;
    if format == Format::Json {
        let ranks: Vec<serde_json::Value> = found
            .ranks
            .iter()
            .map(|(p, s)| {
                serde_json::json!({
                    "file": p.display().to_string(),
                    "status": s,
                })
            })
            .collect();
        let problems: Vec<String> = found.problems.iter().map(|e| e.to_string()).collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "dir": dir.display().to_string(),
                "ranks": ranks,
                "problems": problems,
            }))
            .map_err(CliError::json("the tier status"))?
        );
    } else {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        print!("{}", status::render_table(&found.ranks, now));
    }
    let mut problems = found.problems;
    match problems.len() {
        0 => Ok(Outcome::Success),
        1 => Err(CliError::TierStatus(problems.remove(0))),
        _ => Err(CliError::TierStatus(StatusError::Several(problems))),
    }
}
