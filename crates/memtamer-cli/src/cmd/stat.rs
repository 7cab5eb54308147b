//! `memtamer stat`: which sensing sources are active on this host (and why
//! the others are not), then one Observation per interval.

use crate::error::{CliError, Outcome};
use crate::format::Format;
use crate::view::top::HostRates;

/// Prints the sources, then `count` observations (0: until interrupted).
pub fn run(gate: &str, interval_ms: u64, count: u64, format: Format) -> Result<Outcome, CliError> {
    let json = format == Format::Json;
    let mut sensors = super::sensors_for(gate)?;
    if json {
        println!(
            "{}",
            serde_json::to_string(&sensors.status).map_err(CliError::json("the source list"))?
        );
    } else {
        println!("sources:");
        for s in &sensors.status {
            println!(
                "  {:<20} {:<8} {}",
                s.source,
                if s.active { "active" } else { "missing" },
                s.detail
            );
        }
        // Ribbon's controller (docs/ribbon.md): the signal a Ribbon process
        // on this host reads, the same choice the shim makes.
        let root = super::source_config(gate)?.pmu_root;
        let (_, ribbon) = memtamer_sense::ribbon::choose_bandwidth(&root);
        println!(
            "ribbon bandwidth signal: {} ({})",
            ribbon.name, ribbon.detail
        );
    }
    let mut n = 0;
    while count == 0 || n < count {
        std::thread::sleep(std::time::Duration::from_millis(interval_ms.max(1)));
        let obs = sensors.observe();
        n += 1;
        if json {
            println!(
                "{}",
                serde_json::to_string(&obs).map_err(CliError::json("an observation"))?
            );
            continue;
        }
        let secs = obs.duration_ns as f64 / 1e9;
        let pm = obs.pm_total();
        let gbps = |b: u64| b as f64 / secs.max(1e-9) / 1e9;
        let host = HostRates::of(&obs);
        let pm_known = obs.gate.is_some()
            || sensors
                .status
                .iter()
                .any(|s| s.active && s.source.starts_with("PEBS"));
        let pm_text = if pm_known {
            format!(
                "PM read {:.3} GB/s write {:.3} GB/s ({} threads)",
                gbps(pm.read_bytes),
                gbps(pm.write_bytes),
                obs.threads.len()
            )
        } else {
            "PM unknown".to_string()
        };
        println!(
            "{:.2} s: {pm_text} · DRAM {} · WPQ delay {} · media {}",
            secs,
            host.dram_gbps
                .map_or("unknown".into(), |g| format!("{g:.3} GB/s")),
            if host.wpq_cycles.is_empty() {
                "unknown".into()
            } else {
                let cycles: Vec<String> =
                    host.wpq_cycles.iter().map(|d| format!("{d:.0}")).collect();
                format!("{} cycles", cycles.join("/"))
            },
            host.media_write_gbps
                .map_or("unknown".into(), |g| format!("write {g:.3} GB/s"))
        );
    }
    Ok(Outcome::Success)
}
