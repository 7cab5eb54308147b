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

/// One frame of `memtamer top`.
pub fn frame(
    obs: &memtamer_core::Observation,
    snap: Option<&memtamer_gate::GateSnapshot>,
    sources: &[memtamer_sense::sources::SourceStatus],
    sort: TopSort,
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
                g.limit.map_or("unlimited".into(), |n| n.to_string()),
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
                comm: std::fs::read_to_string(format!("/proc/{}/task/{}/comm", t.job, t.tid))
                    .map(|c| c.trim().to_string())
                    .unwrap_or_else(|_| "?".into()),
                read: pm.read_bytes as f64 / secs / 1e6,
                write: pm.write_bytes as f64 / secs / 1e6,
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
        "PM READ MB/s",
        "PM WRITE MB/s",
        "AVG REQ",
        "WAIT %",
        "STATE",
        "SOURCE"
    );
    for r in &rows {
        out += &format!(
            "{:>7} {:>7} {:<16} {:>12.1} {:>12.1} {:>9} {:>7.1} {:<8} {}\n",
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
