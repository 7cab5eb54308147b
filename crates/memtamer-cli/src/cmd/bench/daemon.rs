//! `memtamer bench daemon`: the daemon's CPU cost at a 1 ms loop with 100
//! managed threads (issue target: under 2% of one core), against an empty
//! loop that only sleeps to the same deadlines, measured in the same run.

use memtamer_control::config::DaemonConfig;
use memtamer_control::daemon::Daemon;

use crate::error::CliError;
use std::time::{Duration, Instant};

/// CPU seconds (user + system) this process has used.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF with a valid pointer.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 * 1e-6;
    t(ru.ru_utime) + t(ru.ru_stime)
}

/// CPU share of one core used by `f` over its wall time.
fn measure(f: impl FnOnce() -> Result<(), CliError>) -> Result<(f64, f64), CliError> {
    let (c0, w0) = (cpu_seconds(), Instant::now());
    f()?;
    let wall = w0.elapsed().as_secs_f64();
    Ok(((cpu_seconds() - c0) / wall, wall))
}

/// The hidden worker: `threads` threads that wake every 10 ms, forever.
pub fn worker(threads: usize) -> ! {
    for _ in 1..threads {
        std::thread::spawn(|| loop {
            std::thread::sleep(Duration::from_millis(10));
        });
    }
    loop {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Runs the benchmark and returns its report.
pub fn run(seconds: f64, threads: usize, period_us: u64) -> Result<String, CliError> {
    let exe = std::env::current_exe().map_err(CliError::io("cannot locate memtamer"))?;
    let mut child = std::process::Command::new(exe)
        .args(["bench", "daemon-worker", "--threads", &threads.to_string()])
        .spawn()
        .map_err(CliError::io("cannot start the worker"))?;
    let dir = std::env::temp_dir().join(format!("memtamer-bench-daemon-{}", std::process::id()));
    let result = (|| -> Result<String, CliError> {
        std::fs::create_dir_all(&dir)
            .map_err(CliError::io(format!("cannot create {}", dir.display())))?;
        // wait until the worker has all its threads
        let t0 = Instant::now();
        while std::fs::read_dir(format!("/proc/{}/task", child.id()))
            .map(|d| d.count())
            .unwrap_or(0)
            < threads
        {
            if t0.elapsed() > Duration::from_secs(10) {
                return Err(CliError::Bench(
                    "the worker did not start its threads".into(),
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let text = format!(
            "[daemon]\nperiod_us = {period_us}\nsocket = \"{d}/control.sock\"\njournal = \"{d}/journal\"\n\n\
             [isolation]\npolicy = \"dicio\"\n\n[core_spec]\nenabled = true\npm_cpus = 1\n\n\
             [[job]]\nname = \"bench\"\nclass = \"be\"\nmatch = {{ pid = [{pid}] }}\n",
            d = dir.display(),
            pid = child.id()
        );
        let cfg = DaemonConfig::parse(&text, "bench.toml")?;
        let iterations = (seconds * 1e6 / period_us as f64) as u64;
        // the baseline: a loop that only sleeps to the same deadlines
        let (idle_cpu, idle_wall) = measure(|| {
            let period = Duration::from_micros(period_us);
            let mut next = Instant::now();
            for _ in 0..iterations {
                next += period;
                let now = Instant::now();
                if next > now {
                    std::thread::sleep(next - now);
                }
            }
            Ok(())
        })?;
        let sources = memtamer_sense::sources::SourceConfig::from_env()
            .map_err(CliError::sense("sensing settings"))?;
        let daemon = Daemon::start(cfg, std::path::Path::new("/proc"), &sources)?;
        let mut summary = None;
        let (daemon_cpu, daemon_wall) = measure(|| {
            summary = Some(daemon.run(Some(iterations))?);
            Ok(())
        })?;
        let s =
            summary.ok_or_else(|| CliError::Bench("the daemon loop returned no summary".into()))?;
        Ok(format!(
            "daemon loop: {iterations} iterations at {period_us} µs, {threads} managed threads \
             (1 BE job, Dicio + core specialization)\n\
             {:<28} {:>10} {:>10}\n\
             {:<28} {:>9.2}% {:>9.2}s\n\
             {:<28} {:>9.2}% {:>9.2}s\n\
             daemon / empty loop CPU: {:.1}x; daemon CPU above the empty loop: {:.2}% of one core (target < 2%)\n\
             sleeping and waking costs this host {:.1} µs of CPU per wake-up (the empty loop's share / its rate)\n\
             per iteration: mean {:.1} µs, max {:.1} µs, {} overruns; {} actions; \
             {} /proc rescans of {:.0} µs each; observe {:.1} µs, decide {:.1} µs\n",
            "", "CPU/core", "wall",
            "empty loop (sleep only)", idle_cpu * 100.0, idle_wall,
            "daemon", daemon_cpu * 100.0, daemon_wall,
            daemon_cpu / idle_cpu.max(1e-9),
            (daemon_cpu - idle_cpu).max(0.0) * 100.0,
            idle_cpu * idle_wall / iterations.max(1) as f64 * 1e6,
            s.stats.mean_us,
            s.stats.max_us,
            s.stats.overruns,
            s.stats.actions,
            s.stats.rescans,
            s.stats.rescan_mean_us,
            s.stats.observe_mean_us,
            s.stats.decide_mean_us,
        ))
    })();
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
    result
}
