//! The human view of a gate snapshot (`memtamer gate stats`).

use memtamer_gate::{GateSnapshot, ThreadState};

fn human_bytes(b: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", units[u])
    }
}

/// The human view of a snapshot.
pub fn table(s: &GateSnapshot) -> String {
    let total = s.total();
    let limit = s
        .limit
        .map_or(crate::format::UNLIMITED.to_string(), |n| n.to_string());
    let mut out = format!(
        "gate {}\n  limit T_S {limit}   serving {}   waiting {}   peak {} (limit then {})\n",
        s.path,
        s.serving,
        s.waiting,
        s.peak_serving,
        s.limit_at_peak
            .map_or(crate::format::UNLIMITED.to_string(), |n| n.to_string()),
    );
    out += &format!(
        "  admitted {} ({} after waiting)   bypassed {}   reclaimed from dead threads {}   lock repairs {}\n",
        s.admissions, s.contended_admissions, total.bypassed, s.reclaimed, s.lock_repairs
    );
    let mix = match (s.last_avg_request_bytes, s.last_write_ratio) {
        (Some(b), Some(w)) => format!("S = {b:.0} B, Wr = {w:.2}"),
        _ => "no traffic yet".into(),
    };
    out += &format!(
        "  collector pid {}   last window {mix}   limit changes {}\n",
        s.collector_pid.map_or("-".to_string(), |p| p.to_string()),
        s.limit_changes
    );
    out += &format!(
        "  total: read {}  written {}  waited {:.3} s\n\n",
        human_bytes(total.read_bytes),
        human_bytes(total.write_bytes),
        total.wait_ns_total as f64 / 1e9
    );
    out += "   pid    tid  state    req B    read   written  <256B 256B-1K 1K-4K  >=4K  waited  wait ms  max wait us\n";
    for t in &s.threads {
        let st = &t.stats;
        let by = |i: usize| st.reads_by_size[i] + st.writes_by_size[i];
        out += &format!(
            "{:>6} {:>6}  {:<7} {:>6} {:>9} {:>9} {:>6} {:>6} {:>6} {:>6} {:>7} {:>8.1} {:>12.1}\n",
            t.pid,
            t.tid,
            match t.state {
                ThreadState::Idle => "idle",
                ThreadState::Waiting => "waiting",
                ThreadState::Running => "running",
                ThreadState::Holding => "holding",
            },
            t.request_bytes,
            human_bytes(st.read_bytes),
            human_bytes(st.write_bytes),
            by(0),
            by(1),
            by(2),
            by(3),
            st.waited,
            st.wait_ns_total as f64 / 1e6,
            st.wait_ns_max as f64 / 1e3,
        );
    }
    if s.threads.is_empty() {
        out += "   (no registered threads)\n";
    }
    out
}
