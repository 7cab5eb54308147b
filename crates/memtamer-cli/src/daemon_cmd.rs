//! `memtamer run`, `status`, `guard` and `restore`: the daemon's commands.

use memtamer_control::config::DaemonConfig;
use memtamer_control::daemon::{self, Daemon};
use std::path::Path;
use std::process::ExitCode;

/// `memtamer run --config FILE`: the foreground daemon.
pub fn run(
    config: &Path,
    proc_root: &Path,
    iterations: Option<u64>,
    no_guard: bool,
) -> Result<ExitCode, String> {
    let cfg = DaemonConfig::load(config).map_err(|e| e.to_string())?;
    let mut sources = memtamer_sense::sources::SourceConfig {
        media_period: std::time::Duration::from_millis(cfg.daemon.media_period_ms),
        ..memtamer_sense::sources::SourceConfig::from_env()?
    };
    // library reports come from the gate the shim and libmemtamer use
    if let Ok(name) = std::env::var("MEMTAMER_GATE") {
        sources.gate.name = name;
    }
    let journal = cfg.daemon.journal.clone();
    let socket = cfg.daemon.socket.clone();
    daemon::install_stop_handlers();
    let d = Daemon::start(cfg, proc_root, &sources).map_err(|e| e.to_string())?;
    // the guard restores the journal if this process dies without doing it
    let _guard = if no_guard {
        None
    } else {
        let exe =
            std::env::current_exe().map_err(|e| format!("cannot find own executable: {e}"))?;
        Some(
            daemon::guard_command(&exe, std::process::id(), &journal)
                .stdin(std::process::Stdio::null())
                .spawn()
                .map_err(|e| format!("cannot start the guard process: {e}"))?,
        )
    };
    eprintln!(
        "memtamer: running; status with `memtamer status --socket {}`",
        socket.display()
    );
    let summary = d.run(iterations).map_err(|e| e.to_string())?;
    eprintln!(
        "memtamer: stopped after {} iterations (mean {:.1} µs, max {:.1} µs, {} overruns); \
         {} actions, {} failed; restored {} changes ({} already gone, {} failed)",
        summary.stats.iterations,
        summary.stats.mean_us,
        summary.stats.max_us,
        summary.stats.overruns,
        summary.stats.actions,
        summary.stats.failed_actions,
        summary.restored,
        summary.restore_skipped,
        summary.restore_failed
    );
    Ok(if summary.restore_failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `memtamer status`: asks the daemon over its control socket.
pub fn status(socket: &Path, json: bool) -> Result<ExitCode, String> {
    let v = memtamer_control::socket::request_status(socket).map_err(|e| e.to_string())?;
    if json {
        println!("{v:#}");
        return Ok(ExitCode::SUCCESS);
    }
    let s = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => "-".into(),
        other => other.to_string(),
    };
    println!(
        "memtamer pid {}  up {:.0} s  policy {}  period {} µs{}",
        s(&v["pid"]),
        v["uptime_s"].as_f64().unwrap_or(0.0),
        s(&v["policy"]),
        s(&v["period_us"]),
        if v["dry_run"].as_bool() == Some(true) {
            "  (dry run)"
        } else {
            ""
        }
    );
    if let Some(i) = v.get("isolation").filter(|i| !i.is_null()) {
        println!(
            "isolation: {} state {}  write amplification {:.2}",
            s(&i["policy"]),
            s(&i["state"]),
            i["write_amplification"].as_f64().unwrap_or(0.0)
        );
    }
    if let Some(c) = v.get("core_spec").filter(|c| !c.is_null()) {
        println!(
            "core specialization: {} threads in the PM group",
            s(&c["pm_group_threads"])
        );
    }
    println!(
        "\n{:<16} {:<10} {:>6} {:>8} {:<12} {:>5}  pids",
        "JOB", "CLASS", "PROCS", "THREADS", "CPUS", "DUTY"
    );
    for j in v["jobs"].as_array().into_iter().flatten() {
        let pids: Vec<String> = j["pids"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| p.to_string())
            .collect();
        println!(
            "{:<16} {:<10} {:>6} {:>8} {:<12} {:>5}  {}",
            s(&j["name"]),
            s(&j["class"]),
            pids.len(),
            s(&j["threads"]),
            s(&j["cpus"]),
            j["duty_cycle"]
                .as_f64()
                .map_or("-".into(), |d| format!("{d:.2}")),
            pids.join(",")
        );
    }
    println!("\nsources:");
    for src in v["sources"].as_array().into_iter().flatten() {
        println!(
            "  {:<22} {:<4} {}",
            s(&src["source"]),
            if src["active"].as_bool() == Some(true) {
                "yes"
            } else {
                "no"
            },
            s(&src["detail"])
        );
    }
    let l = &v["loop"];
    println!(
        "\nloop: {} iterations, mean {:.1} µs, max {:.1} µs, {} overruns; {} actions ({} failed); journal {} pending",
        s(&l["iterations"]),
        l["mean_us"].as_f64().unwrap_or(0.0),
        l["max_us"].as_f64().unwrap_or(0.0),
        s(&l["overruns"]),
        s(&l["actions"]),
        s(&l["failed_actions"]),
        s(&v["journal"]["pending"])
    );
    println!("\nlast decisions:");
    for d in v["last_decisions"].as_array().into_iter().flatten() {
        for r in d["reasons"].as_array().into_iter().flatten() {
            println!("  +{:>8} ms  {}", s(&d["at_ms"]), s(r));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// "restored N changes (M already gone, K failed)" and the exit code: 1
/// when anything could not be undone.
fn report_restore(report: &memtamer_actuate::journal::RestoreReport) -> (String, ExitCode) {
    let line = format!(
        "restored {} changes ({} already gone, {} failed)",
        report.restored(),
        report.skipped(),
        report.failed()
    );
    let code = if report.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    };
    (line, code)
}

/// `memtamer guard --pid P --journal F`: waits for the daemon to die and
/// undoes whatever its journal still lists.
pub fn guard(pid: i32, journal: &Path) -> Result<ExitCode, String> {
    memtamer_actuate::guard::detach_from_terminal().map_err(|e| e.to_string())?;
    let report = memtamer_actuate::guard::run_guard(pid, journal).map_err(|e| e.to_string())?;
    let (line, code) = report_restore(&report);
    if report.restored() + report.failed() > 0 {
        eprintln!("memtamer guard: daemon {pid} died; {line}");
    }
    Ok(code)
}

/// `memtamer restore --journal F`: undoes a journal by hand (or from
/// systemd's ExecStopPost).
pub fn restore(journal: &Path) -> Result<ExitCode, String> {
    if !journal.exists() {
        println!("nothing to restore: {} does not exist", journal.display());
        return Ok(ExitCode::SUCCESS);
    }
    let report = memtamer_actuate::journal::restore_all(journal).map_err(|e| e.to_string())?;
    let (line, code) = report_restore(&report);
    println!("{line}");
    Ok(code)
}
