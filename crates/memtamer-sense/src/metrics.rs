//! Prometheus text exposition of the sensed windows and the source list.
//!
//! Prometheus computes rates itself (`rate(x_total[1m])`), so byte figures
//! are exported as monotonic counters accumulated over every window since
//! start, never as private per-window rates. Series are labelled by gate,
//! job (the process name) and cgroup, which stay bounded on a host; pid and
//! tid labels, one series per thread ever seen, only on request
//! ([`Exporter::new`] `per_thread`). Unknown figures are left out, never
//! exported as 0. The gate's own gauges and counters come from
//! `GateSnapshot::prometheus` (one owner per family).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use memtamer_core::Observation;
use memtamer_gate::GateSnapshot;

use crate::sources::SourceStatus;

fn family(out: &mut String, name: &str, help: &str, kind: &str) {
    let _ = writeln!(out, "# HELP memtamer_{name} {help}");
    let _ = writeln!(out, "# TYPE memtamer_{name} {kind}");
}

/// A label value escaped as the text format requires (backslash, quote,
/// newline).
fn esc(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Who a process is, for labels: its job (process name) and cgroup.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct ProcessLabels {
    /// The job: the process name (`/proc/PID/comm`), or the daemon's job name.
    pub job: String,
    /// The cgroup v2 path (`/proc/PID/cgroup`), empty if unknown.
    pub cgroup: String,
}

/// Upper bounds of the gate wait-time histogram, seconds: 1 µs to 1 s, a
/// decade apart (PM request service times are µs; a wait of 1 s is a stall).
pub const WAIT_BUCKETS: [f64; 7] = [1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0];

/// A cumulative Prometheus histogram.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Histogram {
    /// Observations at or below each [`WAIT_BUCKETS`] bound (not cumulative).
    pub buckets: [u64; WAIT_BUCKETS.len()],
    /// All observations (the `+Inf` bucket).
    pub count: u64,
    /// Sum of the observations, seconds.
    pub sum: f64,
}

impl Histogram {
    /// Records `n` observations of `secs` each.
    pub fn observe_n(&mut self, secs: f64, n: u64) {
        if let Some(i) = WAIT_BUCKETS.iter().position(|b| secs <= *b) {
            self.buckets[i] += n;
        }
        self.count += n;
        self.sum += secs * n as f64;
    }
}

/// Label set of a PM counter series.
type SeriesKey = (ProcessLabels, Option<(u32, u32)>);

/// Accumulates windows into counters and renders them. Pure: the caller
/// supplies the observation, the gate snapshot and the labels of each pid.
#[derive(Clone, Debug, Default)]
pub struct Exporter {
    gate: String,
    per_thread: bool,
    pm_read: BTreeMap<SeriesKey, u64>,
    pm_write: BTreeMap<SeriesKey, u64>,
    dram_read: BTreeMap<(u32, u32), u64>,
    dram_write: BTreeMap<(u32, u32), u64>,
    media_write: BTreeMap<String, u64>,
    wpq_delay: BTreeMap<(u32, u32), f64>,
    wait: BTreeMap<ProcessLabels, Histogram>,
    /// Per (pid, tid): (waited, wait_ns_total) at the previous snapshot.
    prev_wait: BTreeMap<(u32, u32), (u64, u64)>,
}

impl Exporter {
    /// An exporter for the gate named `gate`; `per_thread` adds pid and tid
    /// labels (one series per thread: for debugging, not for a fleet).
    pub fn new(gate: &str, per_thread: bool) -> Exporter {
        Exporter {
            gate: gate.to_string(),
            per_thread,
            ..Default::default()
        }
    }

    /// Adds one window. `labels(pid)` names the job and cgroup of a process.
    ///
    /// The wait histogram comes from the gate's per-thread counters, which
    /// hold the number of waits and their total time but not each wait: the
    /// waits of one thread in one window are recorded at their mean.
    pub fn add_window(
        &mut self,
        obs: &Observation,
        gate: Option<&GateSnapshot>,
        labels: &mut dyn FnMut(u32) -> ProcessLabels,
    ) {
        for t in &obs.threads {
            let Some(pm) = t.pm else { continue };
            let key = (labels(t.job), self.per_thread.then_some((t.job, t.tid)));
            *self.pm_read.entry(key.clone()).or_default() += pm.read_bytes;
            *self.pm_write.entry(key).or_default() += pm.write_bytes;
        }
        self.wpq_delay.clear();
        for c in &obs.channels {
            let at = (c.socket, c.channel);
            if let Some(r) = c.cas_reads {
                *self.dram_read.entry(at).or_default() += r * 64;
            }
            if let Some(w) = c.cas_writes {
                *self.dram_write.entry(at).or_default() += w * 64;
            }
            if let Some(d) = c.wpq_delay_cycles() {
                self.wpq_delay.insert(at, d);
            }
        }
        for d in &obs.dimms {
            if let Some(b) = d.media_write_bytes {
                *self.media_write.entry(d.dimm.to_string()).or_default() += b;
            }
        }
        if let Some(g) = gate {
            let mut seen = BTreeMap::new();
            for th in &g.threads {
                let now = (th.stats.waited, th.stats.wait_ns_total);
                let (w0, ns0) = self
                    .prev_wait
                    .get(&(th.pid, th.tid))
                    .copied()
                    .unwrap_or((0, 0));
                seen.insert((th.pid, th.tid), now);
                // a reused slot restarts its counters: take them from zero
                let (dw, dns) = if now.0 >= w0 && now.1 >= ns0 {
                    (now.0 - w0, now.1 - ns0)
                } else {
                    now
                };
                if dw > 0 {
                    let mean = dns as f64 / 1e9 / dw as f64;
                    self.wait
                        .entry(labels(th.pid))
                        .or_default()
                        .observe_n(mean, dw);
                }
            }
            self.prev_wait = seen;
        }
    }

    /// The exposition text: build info, sources, the counters so far, the
    /// wait histogram, then the gate's own families from `gate`.
    pub fn render(&self, sources: &[SourceStatus], gate: Option<&GateSnapshot>) -> String {
        let mut out = String::new();
        family(
            &mut out,
            "build_info",
            "Version of the running memtamer (always 1).",
            "gauge",
        );
        let _ = writeln!(
            out,
            "memtamer_build_info{{version=\"{}\"}} 1",
            env!("CARGO_PKG_VERSION")
        );
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
                esc(s.source),
                u8::from(s.active)
            );
        }
        let pm_labels = |(p, thread): &SeriesKey| {
            let mut l = format!(
                "gate=\"{}\",job=\"{}\",cgroup=\"{}\"",
                esc(&self.gate),
                esc(&p.job),
                esc(&p.cgroup)
            );
            if let Some((pid, tid)) = thread {
                let _ = write!(l, ",pid=\"{pid}\",tid=\"{tid}\"");
            }
            l
        };
        for (name, help, series) in [
            (
                "pm_read_bytes_total",
                "PM bytes read (library reports).",
                &self.pm_read,
            ),
            (
                "pm_write_bytes_total",
                "PM bytes written (library reports).",
                &self.pm_write,
            ),
        ] {
            if series.is_empty() {
                continue;
            }
            family(&mut out, name, help, "counter");
            for (k, v) in series {
                let _ = writeln!(out, "memtamer_{name}{{{}}} {v}", pm_labels(k));
            }
        }
        for (name, help, series) in [
            (
                "dram_read_bytes_total",
                "DRAM bytes read on the channel (iMC CAS x 64 B).",
                &self.dram_read,
            ),
            (
                "dram_write_bytes_total",
                "DRAM bytes written on the channel (iMC CAS x 64 B).",
                &self.dram_write,
            ),
        ] {
            if series.is_empty() {
                continue;
            }
            family(&mut out, name, help, "counter");
            for ((socket, channel), v) in series {
                let _ = writeln!(
                    out,
                    "memtamer_{name}{{socket=\"{socket}\",channel=\"{channel}\"}} {v}"
                );
            }
        }
        if !self.wpq_delay.is_empty() {
            family(&mut out, "wpq_delay_cycles", "Average PM write-pending-queue delay in iMC cycles over the last window (Dicio 4.1).", "gauge");
            for ((socket, channel), d) in &self.wpq_delay {
                let _ = writeln!(
                    out,
                    "memtamer_wpq_delay_cycles{{socket=\"{socket}\",channel=\"{channel}\"}} {d}"
                );
            }
        }
        if !self.media_write.is_empty() {
            family(
                &mut out,
                "dimm_media_write_bytes_total",
                "Media bytes written by the PM DIMM (ipmctl).",
                "counter",
            );
            for (dimm, v) in &self.media_write {
                let _ = writeln!(
                    out,
                    "memtamer_dimm_media_write_bytes_total{{dimm=\"{}\"}} {v}",
                    esc(dimm)
                );
            }
        }
        if !self.wait.is_empty() {
            family(&mut out, "gate_wait_seconds", "Time a gated PM request waited for admission (per thread and window, at the window's mean).", "histogram");
            for (p, h) in &self.wait {
                let l = format!(
                    "gate=\"{}\",job=\"{}\",cgroup=\"{}\"",
                    esc(&self.gate),
                    esc(&p.job),
                    esc(&p.cgroup)
                );
                let mut cum = 0;
                for (b, n) in WAIT_BUCKETS.iter().zip(h.buckets) {
                    cum += n;
                    let _ = writeln!(
                        out,
                        "memtamer_gate_wait_seconds_bucket{{{l},le=\"{b}\"}} {cum}"
                    );
                }
                let _ = writeln!(
                    out,
                    "memtamer_gate_wait_seconds_bucket{{{l},le=\"+Inf\"}} {}",
                    h.count
                );
                let _ = writeln!(out, "memtamer_gate_wait_seconds_sum{{{l}}} {}", h.sum);
                let _ = writeln!(out, "memtamer_gate_wait_seconds_count{{{l}}} {}", h.count);
            }
        }
        if let Some(g) = gate {
            out += &g.prometheus();
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memtamer_core::{AccessStats, ChannelObs, ThreadObs};
    use memtamer_gate::{ThreadSnapshot, ThreadState, ThreadStats};

    fn window(write: u64) -> Observation {
        let mut pm = AccessStats::default();
        pm.record(write, true);
        Observation {
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
        }
    }

    fn snapshot(waited: u64, wait_ns: u64) -> GateSnapshot {
        GateSnapshot {
            path: "/dev/shm/memtamer-gate-x".into(),
            limit: Some(4),
            serving: 0,
            waiting: 0,
            peak_serving: 4,
            limit_at_peak: Some(4),
            admissions: 10,
            contended_admissions: waited,
            reclaimed: 0,
            reaped_slots: 0,
            lock_repairs: 0,
            overdue: 0,
            limit_changes: 0,
            bypass_bytes: 256,
            collector_pid: None,
            last_avg_request_bytes: None,
            last_write_ratio: None,
            threads: vec![ThreadSnapshot {
                slot: 0,
                pid: 7,
                tid: 8,
                state: ThreadState::Idle,
                request_bytes: 0,
                stats: ThreadStats {
                    waited,
                    wait_ns_total: wait_ns,
                    ..Default::default()
                },
            }],
            retired: ThreadStats::default(),
        }
    }

    fn labels(pid: u32) -> ProcessLabels {
        ProcessLabels {
            job: format!("db{pid}"),
            cgroup: "/system.slice/db.service".into(),
        }
    }

    #[test]
    fn windows_accumulate_into_counters_with_bounded_labels() {
        let sources = [SourceStatus {
            source: "iMC counters",
            active: true,
            detail: String::new(),
        }];
        let mut e = Exporter::new("default", false);
        e.add_window(&window(4096), None, &mut labels);
        e.add_window(&window(1000), None, &mut labels);
        let text = e.render(&sources, None);
        let pm = "memtamer_pm_write_bytes_total{gate=\"default\",job=\"db7\",cgroup=\"/system.slice/db.service\"} 5096";
        assert!(text.contains(pm), "{text}");
        assert!(!text.contains("tid="), "no per-thread labels by default");
        assert!(
            text.contains("memtamer_dram_read_bytes_total{socket=\"0\",channel=\"1\"} 1280"),
            "{text}"
        );
        assert!(text.contains("memtamer_build_info{version=\""));
        assert!(text.contains("memtamer_source_active{source=\"iMC counters\"} 1"));
        assert!(
            !text.contains("wpq_delay"),
            "unknown WPQ delay is not exported"
        );
        assert!(!text.contains("gate_limit"), "no gate, no gate metrics");
        assert!(
            !text.contains("per_second"),
            "Prometheus computes the rates"
        );
        // every sample line belongs to a family announced before it
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let name = line.split(['{', ' ']).next().unwrap_or("");
            let base = name
                .trim_end_matches("_bucket")
                .trim_end_matches("_sum")
                .trim_end_matches("_count");
            assert!(text.contains(&format!("# TYPE {base} ")), "{name}");
        }
        let mut debug = Exporter::new("default", true);
        debug.add_window(&window(4096), None, &mut labels);
        assert!(debug
            .render(&[], None)
            .contains(",pid=\"7\",tid=\"8\"} 4096"));
    }

    #[test]
    fn gate_waits_fill_a_cumulative_histogram() {
        let mut e = Exporter::new("g", false);
        // 10 waits of 5 us in the first window, 2 of 50 ms in the second
        e.add_window(
            &Observation::default(),
            Some(&snapshot(10, 50_000)),
            &mut labels,
        );
        e.add_window(
            &Observation::default(),
            Some(&snapshot(12, 50_000 + 100_000_000)),
            &mut labels,
        );
        let text = e.render(&[], Some(&snapshot(12, 100_050_000)));
        let l = "gate=\"g\",job=\"db7\",cgroup=\"/system.slice/db.service\"";
        for (le, n) in [
            ("0.000001", 0),
            ("0.00001", 10),
            ("0.01", 10),
            ("0.1", 12),
            ("+Inf", 12),
        ] {
            let line = format!("memtamer_gate_wait_seconds_bucket{{{l},le=\"{le}\"}} {n}");
            assert!(text.contains(&line), "{line}\n{text}");
        }
        assert!(text.contains(&format!("memtamer_gate_wait_seconds_count{{{l}}} 12")));
        assert!(
            text.contains("memtamer_gate_limit 4"),
            "the gate's own families follow"
        );
        // a slot reused by a new thread restarts from zero, never negative
        e.add_window(
            &Observation::default(),
            Some(&snapshot(1, 1_000)),
            &mut labels,
        );
        assert!(e
            .render(&[], None)
            .contains(&format!("memtamer_gate_wait_seconds_count{{{l}}} 13")));
    }

    /// The exposition passes Prometheus's own parser and linter
    /// (`promtool check metrics`, apt `prometheus`; scripts/test installs it).
    #[test]
    fn promtool_accepts_the_exposition() {
        use std::io::Write;
        let mut e = Exporter::new("default", false);
        e.add_window(&window(4096), Some(&snapshot(10, 50_000)), &mut labels);
        let text = e.render(
            &[SourceStatus {
                source: "iMC counters",
                active: true,
                detail: String::new(),
            }],
            Some(&snapshot(10, 50_000)),
        );
        let child = std::process::Command::new("promtool")
            .args(["check", "metrics"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn();
        let mut child = child.expect("promtool is needed (apt-get install prometheus)");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(text.as_bytes())
            .expect("write");
        let out = child.wait_with_output().expect("promtool runs");
        assert!(
            out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(),
            "promtool: {}{}\n{text}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(esc("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
