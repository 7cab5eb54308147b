//! `memtamer top`: a live per-thread view of PM traffic and gate state.

use crate::args::TopSort;
use crate::error::{CliError, Outcome};
use crate::view::top::frame;

/// A thread's name from /proc ("?" once it is gone).
fn comm(pid: u32, tid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm"))
        .map(|c| c.trim().to_string())
        .unwrap_or_else(|_| "?".into())
}

/// Redraws a frame every `interval_ms` (prints one and returns with `once`).
pub fn run(gate: &str, interval_ms: u64, sort: TopSort, once: bool) -> Result<Outcome, CliError> {
    let mut sensors = super::sensors_for(gate)?;
    loop {
        std::thread::sleep(std::time::Duration::from_millis(interval_ms.max(1)));
        let obs = sensors.observe();
        let text = frame(
            &obs,
            sensors.gate_snapshot().as_ref(),
            &sensors.status,
            sort,
            comm,
        );
        if once {
            print!("{text}");
            return Ok(Outcome::Success);
        }
        print!("\x1b[H\x1b[2J{text}");
    }
}
