//! `memtamer serve-metrics`: sample the sensors every interval and serve the
//! latest window as Prometheus metrics over HTTP.

use crate::error::{CliError, Outcome};
use crate::metrics_server::{self, Page};
use std::sync::{Arc, Mutex};

/// Binds `listen`, starts the sampler thread, and serves until killed.
pub fn run(listen: &str, gate: &str, interval_ms: u64) -> Result<Outcome, CliError> {
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
    std::thread::spawn(move || {
        let mut sensors = memtamer_sense::sources::Sensors::open(&config);
        loop {
            std::thread::sleep(std::time::Duration::from_millis(interval_ms.max(1)));
            let obs = sensors.observe();
            let mut body = memtamer_sense::metrics::render(&obs, &sensors.status);
            if let Some(s) = sensors.gate_snapshot() {
                body += &s.prometheus();
            }
            *writer.lock().unwrap_or_else(|p| p.into_inner()) = body;
        }
    });
    metrics_server::serve(&listener, &page);
    Ok(Outcome::Success)
}
