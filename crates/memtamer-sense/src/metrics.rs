//! Prometheus text exposition of one `Observation` and the source list.
//! Unknown figures are left out, never exported as 0. The gate's own
//! metrics come from `GateSnapshot::prometheus` (one owner per family).

use std::fmt::Write as _;

use memtamer_core::Observation;

use crate::sources::SourceStatus;

fn family(out: &mut String, name: &str, help: &str, kind: &str) {
    let _ = writeln!(out, "# HELP memtamer_{name} {help}");
    let _ = writeln!(out, "# TYPE memtamer_{name} {kind}");
}

/// Renders the metrics of one window (rates per second over its duration).
pub fn render(obs: &Observation, sources: &[SourceStatus]) -> String {
    let mut out = String::new();
    let secs = (obs.duration_ns as f64 / 1e9).max(1e-9);
    family(
        &mut out,
        "source_active",
        "1 if the sensing source is active on this host.",
        "gauge",
    );
    for s in sources {
        let _ = writeln!(
            out,
            "memtamer_source_active{{source=\"{}\"}} {}",
            s.source,
            u8::from(s.active)
        );
    }
    let threads: Vec<_> = obs
        .threads
        .iter()
        .filter_map(|t| Some((t, t.pm?)))
        .collect();
    if !threads.is_empty() {
        family(
            &mut out,
            "pm_read_bytes_per_second",
            "PM bytes read per second by the thread (library reports).",
            "gauge",
        );
        for (t, pm) in &threads {
            let _ = writeln!(
                out,
                "memtamer_pm_read_bytes_per_second{{pid=\"{}\",tid=\"{}\"}} {}",
                t.job,
                t.tid,
                pm.read_bytes as f64 / secs
            );
        }
        family(
            &mut out,
            "pm_write_bytes_per_second",
            "PM bytes written per second by the thread (library reports).",
            "gauge",
        );
        for (t, pm) in &threads {
            let _ = writeln!(
                out,
                "memtamer_pm_write_bytes_per_second{{pid=\"{}\",tid=\"{}\"}} {}",
                t.job,
                t.tid,
                pm.write_bytes as f64 / secs
            );
        }
    }
    let chans: Vec<_> = obs
        .channels
        .iter()
        .filter_map(|c| Some((c, c.cas_reads? + c.cas_writes?)))
        .collect();
    if !chans.is_empty() {
        family(
            &mut out,
            "dram_bytes_per_second",
            "DRAM bytes per second on the channel (iMC CAS counts x 64).",
            "gauge",
        );
        for (c, cas) in &chans {
            let _ = writeln!(
                out,
                "memtamer_dram_bytes_per_second{{socket=\"{}\",channel=\"{}\"}} {}",
                c.socket,
                c.channel,
                *cas as f64 * 64.0 / secs
            );
        }
    }
    let wpq: Vec<_> = obs
        .channels
        .iter()
        .filter_map(|c| Some((c, c.wpq_delay_cycles()?)))
        .collect();
    if !wpq.is_empty() {
        family(
            &mut out,
            "wpq_delay_cycles",
            "Average PM write-pending-queue delay in iMC cycles (Dicio 4.1).",
            "gauge",
        );
        for (c, d) in &wpq {
            let _ = writeln!(
                out,
                "memtamer_wpq_delay_cycles{{socket=\"{}\",channel=\"{}\"}} {d}",
                c.socket, c.channel
            );
        }
    }
    let dimms: Vec<_> = obs
        .dimms
        .iter()
        .filter_map(|d| Some((d, d.media_write_bytes?, d.interval_ns?)))
        .collect();
    if !dimms.is_empty() {
        family(
            &mut out,
            "dimm_media_write_bytes_per_second",
            "Media bytes written per second by the PM DIMM (ipmctl).",
            "gauge",
        );
        for (d, bytes, ns) in &dimms {
            let _ = writeln!(
                out,
                "memtamer_dimm_media_write_bytes_per_second{{dimm=\"{}\"}} {}",
                d.dimm,
                *bytes as f64 / (*ns as f64 / 1e9).max(1e-9)
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use memtamer_core::{AccessStats, ChannelObs, ThreadObs};

    #[test]
    fn known_figures_are_exported_and_unknown_ones_are_not() {
        let mut pm = AccessStats::default();
        pm.record(4096, true);
        let obs = Observation {
            duration_ns: 500_000_000,
            threads: vec![ThreadObs {
                tid: 8,
                job: 7,
                pm: Some(pm),
                ..Default::default()
            }],
            channels: vec![ChannelObs {
                socket: 0,
                channel: 1,
                cas_reads: Some(10),
                cas_writes: Some(0),
                ..Default::default()
            }],
            ..Default::default()
        };
        let sources = [SourceStatus {
            source: "iMC counters",
            active: true,
            detail: String::new(),
        }];
        let text = render(&obs, &sources);
        assert!(
            text.contains("memtamer_pm_write_bytes_per_second{pid=\"7\",tid=\"8\"} 8192"),
            "{text}"
        );
        assert!(
            text.contains("memtamer_dram_bytes_per_second{socket=\"0\",channel=\"1\"} 1280"),
            "{text}"
        );
        assert!(text.contains("memtamer_source_active{source=\"iMC counters\"} 1"));
        assert!(
            !text.contains("wpq_delay"),
            "unknown WPQ delay is not exported"
        );
        assert!(!text.contains("gate_limit"), "no gate, no gate metrics");
        // every sample line belongs to a family announced before it
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let name = line.split(['{', ' ']).next().unwrap_or("");
            assert!(text.contains(&format!("# TYPE {name} ")), "{name}");
        }
    }
}
