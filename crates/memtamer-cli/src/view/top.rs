//! `memtamer top`'s frame and the host-wide rates `stat` shares: pure
//! functions of one observation window.

use crate::args::TopSort;

/// A window's host-wide figures, each unknown when its source is missing.
pub struct HostRates {
    /// DRAM GB/s from the iMC CAS counts.
    pub dram_gbps: Option<f64>,
    /// WPQ delay per channel, iMC cycles.
    pub wpq_cycles: Vec<f64>,
    /// PM media write GB/s over all DIMMs.
    pub media_write_gbps: Option<f64>,
}

impl HostRates {
    /// The rates of one observation window.
    pub fn of(obs: &memtamer_core::Observation) -> HostRates {
        let secs = (obs.duration_ns as f64 / 1e9).max(1e-9);
        HostRates {
            dram_gbps: obs.dram_cas().map(|c| c as f64 * 64.0 / secs / 1e9),
            wpq_cycles: obs
                .channels
                .iter()
                .filter_map(|c| c.wpq_delay_cycles())
                .collect(),
            media_write_gbps: (!obs.dimms.is_empty()).then(|| {
                let w: u64 = obs.dimms.iter().filter_map(|d| d.media_write_bytes).sum();
                w as f64 / secs / 1e9
            }),
        }
    }
}

/// One frame of `memtamer top`; `comm(pid, tid)` names a thread (the caller
/// reads /proc, so the frame stays a pure function of its inputs).
pub fn frame(
    obs: &memtamer_core::Observation,
    snap: Option<&memtamer_gate::GateSnapshot>,
    sources: &[memtamer_sense::sources::SourceStatus],
    sort: TopSort,
    comm: impl Fn(u32, u32) -> String,
) -> String {
    let secs = (obs.duration_ns as f64 / 1e9).max(1e-9);
    let active: Vec<&str> = sources
        .iter()
        .filter(|s| s.active)
        .map(|s| s.source)
        .collect();
    let missing: Vec<&str> = sources
        .iter()
        .filter(|s| !s.active)
        .map(|s| s.source)
        .collect();
    let mut out = format!(
        "memtamer top · window {:.2} s · sources: {} · missing: {} (memtamer stat says why)\n",
        secs,
        if active.is_empty() {
            "none".into()
        } else {
            active.join(", ")
        },
        if missing.is_empty() {
            "none".into()
        } else {
            missing.join(", ")
        }
    );
    match &obs.gate {
        Some(g) => {
            out += &format!(
                "gate: T_S {}  in use {}  waiting {}\n",
                g.limit
                    .map_or(crate::format::UNLIMITED.into(), |n| n.to_string()),
                g.admitted,
                g.waiting
            )
        }
        None => out += "gate: unknown (no library reports)\n",
    }
    let host = HostRates::of(obs);
    let unknown = || "unknown".to_string();
    out += &format!(
        "DRAM {} · WPQ delay {} · media writes {}\n\n",
        host.dram_gbps
            .map_or_else(unknown, |g| format!("{g:.2} GB/s")),
        if host.wpq_cycles.is_empty() {
            unknown()
        } else {
            format!(
                "{:.0} cycles (max over channels)",
                host.wpq_cycles.iter().copied().fold(0.0, f64::max)
            )
        },
        host.media_write_gbps
            .map_or_else(unknown, |g| format!("{g:.2} GB/s"))
    );
    struct Row {
        pid: u32,
        tid: u32,
        comm: String,
        read: f64,
        write: f64,
        avg: Option<f64>,
        wait: f64,
        state: String,
        source: &'static str,
    }
    let mut rows: Vec<Row> = obs
        .threads
        .iter()
        .map(|t| {
            let pm = t.pm.unwrap_or_default();
            let state = snap
                .and_then(|s| s.threads.iter().find(|x| x.pid == t.job && x.tid == t.tid))
                .map_or("-".to_string(), |x| format!("{:?}", x.state).to_lowercase());
            Row {
                pid: t.job,
                tid: t.tid,
                comm: comm(t.job, t.tid),
                read: pm.read_bytes as f64 / secs / 1e9,
                write: pm.write_bytes as f64 / secs / 1e9,
                avg: pm.average_request_bytes(),
                wait: t.gate_wait_ns.unwrap_or(0) as f64 / obs.duration_ns.max(1) as f64 * 100.0,
                state,
                // library reports carry gate waits; sampled threads do not
                source: if t.gate_wait_ns.is_some() {
                    "library"
                } else {
                    "pebs"
                },
            }
        })
        .collect();
    rows.sort_by(|a, b| match sort {
        TopSort::Write => b.write.total_cmp(&a.write),
        TopSort::Read => b.read.total_cmp(&a.read),
        TopSort::Wait => b.wait.total_cmp(&a.wait),
        TopSort::Pid => (a.pid, a.tid).cmp(&(b.pid, b.tid)),
    });
    out += &format!(
        "{:>7} {:>7} {:<16} {:>12} {:>12} {:>9} {:>7} {:<8} {}\n",
        "PID",
        "TID",
        "COMM",
        "PM READ GB/s",
        "PM WRITE GB/s",
        "AVG REQ",
        "WAIT %",
        "STATE",
        "SOURCE"
    );
    for r in &rows {
        out += &format!(
            "{:>7} {:>7} {:<16} {:>12.3} {:>12.3} {:>9} {:>7.1} {:<8} {}\n",
            r.pid,
            r.tid,
            r.comm,
            r.read,
            r.write,
            r.avg.map_or("-".into(), |b| format!("{b:.0} B")),
            r.wait,
            r.state,
            r.source
        );
    }
    if rows.is_empty() {
        out += "  (no thread issued PM requests in this window)\n";
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use memtamer_core::{AccessStats, ChannelObs, GateObs, Observation, ThreadObs};
    use memtamer_sense::sources::SourceStatus;

    fn thread(job: u32, tid: u32, read: u64, write: u64, wait: Option<u64>) -> ThreadObs {
        ThreadObs {
            tid,
            job,
            pm: Some(AccessStats {
                read_bytes: read,
                write_bytes: write,
                writes_by_size: [0, 0, 0, write / 4096],
                ..Default::default()
            }),
            gate_wait_ns: wait,
            ..Default::default()
        }
    }

    fn window() -> Observation {
        Observation {
            duration_ns: 1_000_000_000,
            threads: vec![
                thread(10, 11, 5_000_000, 1_000_000, None),
                thread(20, 21, 0, 8_192_000, Some(250_000_000)),
            ],
            channels: vec![ChannelObs {
                cas_reads: Some(10_000_000),
                cas_writes: Some(5_625_000),
                pmm_wpq_occupancy: Some(900),
                pmm_wpq_inserts: Some(10),
                ..Default::default()
            }],
            gate: Some(GateObs {
                limit: Some(2),
                admitted: 1,
                waiting: 3,
            }),
            ..Default::default()
        }
    }

    #[test]
    fn host_rates_are_per_second_and_unknown_when_missing() {
        let r = HostRates::of(&window());
        // (10e6 + 5.625e6) CAS * 64 B over 1 s
        assert!((r.dram_gbps.unwrap() - 1.0).abs() < 1e-9);
        assert_eq!(r.wpq_cycles, vec![90.0]);
        assert_eq!(r.media_write_gbps, None);
        let empty = HostRates::of(&Observation::default());
        assert_eq!(empty.dram_gbps, None);
        assert!(empty.wpq_cycles.is_empty());
    }

    #[test]
    fn frame_sorts_rows_and_names_sources() {
        let sources = [
            SourceStatus {
                source: "library reports",
                active: true,
                detail: String::new(),
            },
            SourceStatus {
                source: "iMC counters",
                active: false,
                detail: String::new(),
            },
        ];
        let comm = |pid: u32, _tid: u32| format!("job{pid}");
        let text = frame(&window(), None, &sources, TopSort::Write, comm);
        assert!(text.contains("sources: library reports · missing: iMC counters"));
        assert!(text.contains("gate: T_S 2  in use 1  waiting 3"));
        assert!(text.contains("DRAM 1.00 GB/s · WPQ delay 90 cycles"));
        let rows: Vec<&str> = text.lines().filter(|l| l.contains(" job")).collect();
        assert_eq!(rows.len(), 2);
        // most PM writes first; the gated thread waited 25% of the window
        assert!(
            rows[0].contains("job20") && rows[0].contains("25.0") && rows[0].ends_with("library")
        );
        assert!(rows[1].contains("job10") && rows[1].ends_with("pebs"));
        let by_read = frame(&window(), None, &sources, TopSort::Read, comm);
        let first = by_read.lines().find(|l| l.contains(" job")).unwrap();
        assert!(first.contains("job10"));
        let idle = frame(&Observation::default(), None, &[], TopSort::Pid, comm);
        assert!(idle.contains("(no thread issued PM requests in this window)"));
        assert!(idle.contains("gate: unknown"));
    }
}
