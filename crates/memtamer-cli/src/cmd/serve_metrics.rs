//! `memtamer serve-metrics`: sample the sensors every interval, accumulate
//! the windows into Prometheus counters and serve them over HTTP.

use crate::error::{CliError, Outcome};
use crate::metrics_server::{self, Page};
use memtamer_sense::metrics::{Exporter, ProcessLabels};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The job (process name) and cgroup v2 path of `pid` from /proc; empty
/// strings where the process is gone or the files are unreadable.
fn process_labels(pid: u32) -> ProcessLabels {
    let read = |f: &str| std::fs::read_to_string(format!("/proc/{pid}/{f}")).unwrap_or_default();
    let cgroup = read("cgroup")
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .unwrap_or("")
        .to_string();
    ProcessLabels {
        job: read("comm").trim().to_string(),
        cgroup,
    }
}

/// Binds `listen`, starts the sampler thread, and serves until killed.
pub fn run(
    listen: &str,
    gate: &str,
    interval_ms: u64,
    per_thread: bool,
) -> Result<Outcome, CliError> {
    let listener = std::net::TcpListener::bind(listen)
        .map_err(CliError::io(format!("cannot listen on {listen}")))?;
    let addr = listener
        .local_addr()
        .map_err(CliError::io(format!("cannot read the address of {listen}")))?;
    // settings errors stop the command here, before anything is served
    let config = super::source_config(gate)?;
    eprintln!("serving http://{addr}/metrics");
    let page: Page = Arc::new(Mutex::new(String::from("# no window yet\n")));
    let writer = Arc::clone(&page);
    let gate = gate.to_string();
    std::thread::spawn(move || {
        let mut sensors = memtamer_sense::sources::Sensors::open(&config);
        let mut exporter = Exporter::new(&gate, per_thread);
        // a process keeps its labels while it lives; the cache is dropped
        // when it grows past a bound so exited pids do not accumulate
        let mut known: HashMap<u32, ProcessLabels> = HashMap::new();
        loop {
            std::thread::sleep(std::time::Duration::from_millis(interval_ms.max(1)));
            let obs = sensors.observe();
            let snap = sensors.gate_snapshot();
            if known.len() > 4096 {
                known.clear();
            }
            let mut labels = |pid: u32| {
                known
                    .entry(pid)
                    .or_insert_with(|| process_labels(pid))
                    .clone()
            };
            exporter.add_window(&obs, snap.as_ref(), &mut labels);
            let body = exporter.render(&sensors.status, snap.as_ref());
            *writer.lock().unwrap_or_else(|p| p.into_inner()) = body;
        }
    });
    metrics_server::serve(&listener, &page);
    Ok(Outcome::Success)
}
