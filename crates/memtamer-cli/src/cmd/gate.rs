//! `memtamer gate ...`: inspect and steer the system-wide PATS gate, and run
//! programs under the libpmem shim.

use std::path::{Path, PathBuf};
use std::time::Duration;

use memtamer_gate::{Gate, GateConfig, GateOptions};

use crate::args::GateCmd;
use crate::error::{CliError, Outcome};
use crate::format::{pick, Format};
use crate::view::gate::table;

/// Runs one `gate` subcommand.
pub fn run(cmd: GateCmd, format: Option<Format>) -> Result<Outcome, CliError> {
    if !matches!(cmd, GateCmd::Stats { .. }) {
        // the other gate commands print messages, not data
        pick("memtamer gate (other than stats)", format, &[])?;
    }
    match cmd {
        GateCmd::Stats { which, watch } => {
            let format = pick(
                "memtamer gate stats",
                format,
                &[Format::Table, Format::Json, Format::Prometheus],
            )?;
            // the arguments first: a usage error whether or not the gate exists
            // (1e300 passed the old finite-and-positive check and panicked
            // in Duration::from_secs_f64)
            let every = match watch {
                Some(secs) => match Duration::try_from_secs_f64(secs) {
                    Ok(d) if secs > 0.0 => Some(d),
                    _ => {
                        return Err(CliError::Usage {
                            arg: format!("--watch {secs:?}"),
                            expected: "a positive number of seconds".into(),
                        })
                    }
                },
                None => None,
            };
            let g = open_existing(&which.name, &which.dir)?;
            // show live threads only: free the slots of dead ones first
            g.reap(true);
            if let Some(every) = every {
                redraw_forever(&g, every);
            }
            let snap = g.snapshot();
            match format {
                Format::Json => println!(
                    "{}",
                    serde_json::to_string_pretty(&snap)
                        .map_err(CliError::json("the gate snapshot"))?
                ),
                Format::Prometheus => print!("{}", snap.prometheus()),
                _ => print!("{}", table(&snap)),
            }
            Ok(Outcome::Success)
        }
        GateCmd::SetLimit { which, limit } => {
            let value = match limit.trim() {
                crate::format::UNLIMITED => None,
                n => Some(
                    n.parse::<u32>()
                        .ok()
                        .filter(|n| *n >= 1 && *n < u32::MAX)
                        .ok_or_else(|| CliError::Usage {
                            arg: format!("limit {n:?}"),
                            expected: "a whole number >= 1 or `unlimited`".into(),
                        })?,
                ),
            };
            open_existing(&which.name, &which.dir)?.set_limit(value);
            Ok(Outcome::Success)
        }
        GateCmd::ResetPeak { which } => {
            open_existing(&which.name, &which.dir)?.reset_peak();
            Ok(Outcome::Success)
        }
        GateCmd::Check { which } => integrity(&which.name, &which.dir, false),
        GateCmd::Repair { which } => integrity(&which.name, &which.dir, true),
        GateCmd::Hostile(args) => super::hostile::run(args),
        GateCmd::Remove { which } => {
            remove(&which.name, &which.dir)?;
            Ok(Outcome::Success)
        }
        GateCmd::Exec {
            name,
            policy,
            interleave,
            ribbon,
            ribbon_flushers,
            cmd,
        } => {
            let mut env = Vec::new();
            if let Some(n) = name {
                env.push(("MEMTAMER_GATE".to_string(), n));
            }
            if let Some(p) = policy {
                env.push(("MEMTAMER_GATE_POLICY".to_string(), p));
            }
            if let Some(n) = interleave {
                env.push(("MEMTAMER_PM_INTERLEAVE".to_string(), n.to_string()));
            }
            if ribbon || ribbon_flushers.is_some() {
                env.push(("MEMTAMER_RIBBON".to_string(), "1".to_string()));
            }
            if let Some(m) = ribbon_flushers {
                env.push(("MEMTAMER_RIBBON_FLUSHERS".to_string(), m));
            }
            exec(&env, &cmd)
        }
    }
}

/// Opens an existing gate (never creates one: a typo must not make a new gate).
fn open_existing(name: &str, dir: &Path) -> Result<std::sync::Arc<Gate>, CliError> {
    let options = GateOptions {
        name: name.to_string(),
        dir: dir.to_path_buf(),
        ..GateOptions::default()
    };
    let path = options.path();
    if !path.exists() {
        return Err(CliError::NoGate {
            name: name.to_string(),
            path,
        });
    }
    Gate::open(&options).map_err(CliError::gate(format!("opening gate {name:?}")))
}

/// Where the shim library is, wherever memtamer was installed: next to the
/// binary (cargo's target dir), then the library directories relative to it
/// (`PREFIX/bin` -> `PREFIX/lib[64]/memtamer`, as `make install` and the
/// .deb place it), then the libdir compiled in (`MEMTAMER_LIBDIR` at build
/// time).
pub fn shim_path() -> Result<PathBuf, CliError> {
    let exe = std::env::current_exe().map_err(CliError::io("cannot locate memtamer"))?;
    let dir = exe.parent().unwrap_or(Path::new("/"));
    let name = "libmemtamer_pmem_shim.so";
    let mut candidates = vec![
        dir.join(name),
        dir.join("../lib/memtamer").join(name),
        dir.join("../lib64/memtamer").join(name),
        dir.join("../lib").join(name),
    ];
    if let Some(libdir) = option_env!("MEMTAMER_LIBDIR") {
        candidates.push(Path::new(libdir).join("memtamer").join(name));
    }
    candidates
        .into_iter()
        .find(|c| c.exists())
        .ok_or(CliError::ShimMissing { exe })
}

/// `memtamer gate exec`: runs a program with the shim preloaded.
fn exec(env: &[(String, String)], cmd: &[String]) -> Result<Outcome, CliError> {
    let (program, args) = cmd.split_first().ok_or_else(|| CliError::Usage {
        arg: "gate exec".into(),
        expected: "a command after --".into(),
    })?;
    let shim = shim_path()?;
    let preload = match std::env::var("LD_PRELOAD") {
        Ok(old) if !old.is_empty() => format!("{}:{old}", shim.display()),
        _ => shim.display().to_string(),
    };
    // check the settings here, where the error can name them
    let lookup = |k: &str| {
        env.iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
            .or_else(|| std::env::var(k).ok())
    };
    GateConfig::from_lookup(lookup).map_err(CliError::gate("gate exec settings"))?;
    let status = std::process::Command::new(program)
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("LD_PRELOAD", preload)
        .status()
        .map_err(CliError::io(format!("cannot run {program}")))?;
    // the program's own status (1 when a signal ended it)
    Ok(Outcome::Child(
        status.code().unwrap_or(1).clamp(0, 255) as u8
    ))
}

/// `memtamer gate stats --watch`: redraws every `every` until interrupted.
fn redraw_forever(gate: &Gate, every: Duration) -> ! {
    loop {
        print!("\x1b[H\x1b[2J{}", table(&gate.snapshot()));
        std::thread::sleep(every);
    }
}

/// `gate check` (read only; fails when something is wrong) or `gate repair`.
fn integrity(name: &str, dir: &Path, repair: bool) -> Result<Outcome, CliError> {
    let options = GateOptions {
        name: name.to_string(),
        dir: dir.to_path_buf(),
        ..GateOptions::default()
    };
    let path = options.path();
    let found = if repair {
        memtamer_gate::integrity::repair(&options)
    } else {
        memtamer_gate::integrity::check(&options)
    }
    .map_err(CliError::gate(format!("checking gate {name:?}")))?;
    for problem in &found {
        println!("{}: {problem}", path.display());
    }
    match (found.is_empty(), repair) {
        (true, _) => println!("{}: ok", path.display()),
        (false, true) => println!("{}: repaired", path.display()),
        (false, false) => return Ok(Outcome::CheckFailed),
    }
    Ok(Outcome::Success)
}

/// Removes a gate file, refusing while live threads use it.
fn remove(name: &str, dir: &Path) -> Result<(), CliError> {
    let gate = match open_existing(name, dir) {
        Err(CliError::Gate { source, .. })
            if matches!(*source, memtamer_gate::GateError::Incompatible { .. }) =>
        {
            // A file of another memtamer version's layout: this version cannot
            // count its users, and they need not be counted: unlinking leaves
            // their mappings intact, and this version's processes create a
            // fresh file (a stale one would otherwise disable their gate).
            let path = GateOptions {
                name: name.to_string(),
                dir: dir.to_path_buf(),
                ..GateOptions::default()
            }
            .path();
            std::fs::remove_file(&path)
                .map_err(CliError::io(format!("cannot remove {}", path.display())))?;
            eprintln!(
                "removed {} ({source}); processes of the other version keep their mapping",
                path.display()
            );
            return Ok(());
        }
        other => other?,
    };
    gate.reap(true);
    let live = gate.snapshot().threads.len();
    if live > 0 {
        return Err(CliError::GateBusy {
            name: name.to_string(),
            live,
        });
    }
    std::fs::remove_file(gate.path()).map_err(CliError::io(format!(
        "cannot remove {}",
        gate.path().display()
    )))
}
