//! `memtamer run`, `status`, `guard` and `restore`: the daemon's commands.

use memtamer_control::config::DaemonConfig;
use memtamer_control::daemon::{self, Daemon};
use std::os::fd::AsFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::error::{CliError, Outcome};

/// Set by SIGHUP: the loop stops (undoing everything, as on SIGTERM), then
/// `run` reloads the config and starts again.
static RELOAD: AtomicBool = AtomicBool::new(false);

extern "C" fn on_reload_signal(_sig: libc::c_int) {
    RELOAD.store(true, Ordering::SeqCst);
    daemon::request_stop();
}

/// `memtamer run --check-config`: load and validate, print the warnings.
pub fn check_config(config: &Path) -> Result<Outcome, CliError> {
    let cfg = DaemonConfig::load(config)?;
    for w in &cfg.warnings {
        eprintln!("memtamer: {}: warning: {w}", config.display());
    }
    println!("{}: ok ({} jobs)", config.display(), cfg.jobs.len());
    Ok(Outcome::Success)
}

/// `memtamer run --config FILE`: the foreground daemon. SIGHUP reloads the
/// config: the running daemon undoes its changes and stops, the new config is
/// loaded (the old one is kept when the new one is invalid) and a new daemon
/// starts.
pub fn run(
    config: &Path,
    proc_root: &Path,
    iterations: Option<u64>,
    no_guard: bool,
) -> Result<Outcome, CliError> {
    let mut cfg = DaemonConfig::load(config)?;
    loop {
        let outcome = run_once(cfg.clone(), proc_root, iterations, no_guard)?;
        if !RELOAD.swap(false, Ordering::SeqCst) {
            return Ok(outcome);
        }
        match DaemonConfig::load(config) {
            Ok(new) => {
                eprintln!("memtamer: SIGHUP: reloaded {}", config.display());
                cfg = new;
            }
            Err(e) => eprintln!("memtamer: SIGHUP: {e}; keeping the previous config"),
        }
        daemon::clear_stop();
    }
}

/// One daemon lifetime with `cfg`, until a stop (or reload) signal.
fn run_once(
    cfg: DaemonConfig,
    proc_root: &Path,
    iterations: Option<u64>,
    no_guard: bool,
) -> Result<Outcome, CliError> {
    let mut sources = memtamer_sense::sources::SourceConfig {
        media_period: std::time::Duration::from_millis(cfg.daemon.media_period_ms),
        ..memtamer_sense::sources::SourceConfig::from_env()
            .map_err(CliError::sense("sensing settings"))?
    };
    // library reports come from the gate the shim and libmemtamer use
    if let Ok(name) = std::env::var("MEMTAMER_GATE") {
        sources.gate.name = name;
    }
    let journal = cfg.daemon.journal.clone();
    let socket = cfg.daemon.socket.clone();
    daemon::install_stop_handlers();
    // SAFETY: the handler only stores to atomics (async-signal-safe).
    unsafe {
        libc::signal(
            libc::SIGHUP,
            on_reload_signal as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
    }
    let watchdog = std::time::Duration::from_millis(cfg.daemon.watchdog_ms);
    let mut d = Daemon::start(cfg, proc_root, &sources)?;
    // the guard restores the journal if this process dies without doing
    // it, or stops making progress (its watchdog reads our heartbeat)
    let _guard = if no_guard {
        None
    } else {
        let exe = std::env::current_exe().map_err(CliError::io("cannot find own executable"))?;
        let mut child = daemon::guard_command(&exe, std::process::id(), &journal, Some(watchdog))
            .stdin(std::process::Stdio::piped())
            .spawn()
            .map_err(CliError::io("cannot start the guard process"))?;
        if let Some(pipe) = child.stdin.take() {
            let beat = memtamer_actuate::watchdog::Heartbeat::new(
                pipe.into(),
                memtamer_actuate::watchdog::Heartbeat::gap_for(watchdog),
            )
            .map_err(|source| CliError::Actuate {
                context: "the guard's heartbeat pipe".into(),
                source,
            })?;
            d.set_heartbeat(beat);
        }
        Some(child)
    };
    eprintln!(
        "memtamer: running; status with `memtamer status --socket {}`",
        socket.display()
    );
    let summary = d.run(iterations)?;
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
    Ok(Outcome::check(summary.restore_failed == 0))
}

/// `memtamer status`: asks the daemon over its control socket.
pub fn status(socket: &Path, format: crate::format::Format) -> Result<Outcome, CliError> {
    let v = memtamer_control::socket::request_status(socket)?;
    if format == crate::format::Format::Json {
        println!("{v:#}");
        return Ok(Outcome::Success);
    }
    print!("{}", crate::view::status::text(&v));
    Ok(Outcome::Success)
}

/// "restored N changes (M already gone, K failed)" and the outcome: a
/// failed check when anything could not be undone.
fn report_restore(report: &memtamer_actuate::journal::RestoreReport) -> (String, Outcome) {
    let line = format!(
        "restored {} changes ({} already gone, {} failed)",
        report.restored(),
        report.skipped(),
        report.failed()
    );
    (line, Outcome::check(report.is_ok()))
}

/// `memtamer guard --pid P --journal F [--watchdog-ms N]`: waits for the
/// daemon to die and undoes whatever its journal still lists; with a
/// watchdog, also kills and undoes a daemon whose heartbeat (on stdin)
/// stopped for N ms.
pub fn guard(pid: i32, journal: &Path, watchdog_ms: Option<u64>) -> Result<Outcome, CliError> {
    use memtamer_actuate::watchdog::{self, Ended};
    let fail = |context: String| {
        move |source: memtamer_actuate::Error| CliError::Actuate { context, source }
    };
    memtamer_actuate::guard::detach_from_terminal()
        .map_err(fail("guard: detaching from the terminal".into()))?;
    let (report, why) = match watchdog_ms {
        None => (
            memtamer_actuate::guard::run_guard(pid, journal)
                .map_err(fail(format!("guard of daemon {pid}")))?,
            "died".to_string(),
        ),
        Some(ms) => {
            let stdin = std::io::stdin()
                .as_fd()
                .try_clone_to_owned()
                .map_err(CliError::io("guard: the heartbeat pipe (stdin)"))?;
            let w = watchdog::watch(pid, journal, &stdin, Duration::from_millis(ms))
                .map_err(fail(format!("guard of daemon {pid}")))?;
            let why = match w.ended {
                Ended::Exited => "died".to_string(),
                Ended::Stalled { silent } => format!(
                    "made no progress for {} ms (stopped or hung) and was killed",
                    silent.as_millis()
                ),
            };
            (w.report, why)
        }
    };
    let (line, code) = report_restore(&report);
    if report.restored() + report.failed() > 0 || why != "died" {
        eprintln!("memtamer guard: daemon {pid} {why}; {line}");
    }
    Ok(code)
}

/// `memtamer restore --journal F`: undoes a journal by hand (or from
/// systemd's ExecStopPost).
pub fn restore(journal: &Path) -> Result<Outcome, CliError> {
    if !journal.exists() {
        println!("nothing to restore: {} does not exist", journal.display());
        return Ok(Outcome::Success);
    }
    let report =
        memtamer_actuate::journal::restore_all(journal).map_err(|source| CliError::Actuate {
            context: format!("restoring {}", journal.display()),
            source,
        })?;
    let (line, code) = report_restore(&report);
    println!("{line}");
    for failure in failures(&report) {
        eprintln!("memtamer: {failure}");
    }
    // The journal's own warnings (a corrupt or torn line, a held lock) were
    // dropped: a journal of garbage printed "restored 0 changes" and exit
    // 0. A corrupt line in the middle may have been a change that is now
    // not undone, so it fails the restore (exit 1); a torn final line is
    // what a crash mid-write leaves and only warns.
    let mut corrupt = false;
    for w in &report.warnings {
        eprintln!("memtamer: warning: {}: {w}", journal.display());
        corrupt |= w.starts_with("ignored corrupt journal line");
    }
    Ok(if corrupt { Outcome::CheckFailed } else { code })
}

/// One line per change that could not be undone: the journal record and why.
fn failures(report: &memtamer_actuate::journal::RestoreReport) -> Vec<String> {
    use memtamer_actuate::journal::Outcome as Undo;
    report
        .entries
        .iter()
        .filter_map(|(change, outcome)| match outcome {
            Undo::Failed(why) => Some(format!(
                "could not undo {}: {why}",
                serde_json::to_string(change).unwrap_or_else(|_| format!("{change:?}"))
            )),
            _ => None,
        })
        .collect()
}
