//! Published statistics: what the gate and every PA-thread did, readable by
//! any process (the daemon, `memtamer gate stats`, Prometheus).

use std::sync::atomic::Ordering;

use serde::Serialize;

use std::collections::HashMap;

use memtamer_core::{GateObs, ThreadObs};

use crate::gate::Gate;
use crate::shm::{SharedStats, HOLDING, RUNNING, UNLIMITED, WAITING};

/// One thread's request-level statistics (cumulative).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ThreadStats {
    /// Bytes read by requests that went through the gate (bypassed included).
    pub read_bytes: u64,
    /// Bytes written.
    pub write_bytes: u64,
    /// Read requests per size class (<256 B, <1 KiB, <4 KiB, >=4 KiB).
    pub reads_by_size: [u64; 4],
    /// Write requests per size class.
    pub writes_by_size: [u64; 4],
    /// Requests below the bypass size (never gated).
    pub bypassed: u64,
    /// Gated requests that had to wait.
    pub waited: u64,
    /// Total time spent waiting, nanoseconds.
    pub wait_ns_total: u64,
    /// Longest single wait, nanoseconds.
    pub wait_ns_max: u64,
    /// Admissions that reused capacity the thread still held (no lock).
    pub reused: u64,
}

impl ThreadStats {
    pub(crate) fn load(s: &SharedStats) -> ThreadStats {
        let l = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        ThreadStats {
            read_bytes: l(&s.read_bytes),
            write_bytes: l(&s.write_bytes),
            reads_by_size: std::array::from_fn(|i| l(&s.reads_by_size[i])),
            writes_by_size: std::array::from_fn(|i| l(&s.writes_by_size[i])),
            bypassed: l(&s.bypassed),
            waited: l(&s.waited),
            wait_ns_total: l(&s.wait_ns_total),
            wait_ns_max: l(&s.wait_ns_max),
            reused: l(&s.reused),
        }
    }

    /// The request-level view policies consume.
    pub fn access(&self) -> memtamer_core::AccessStats {
        memtamer_core::AccessStats {
            read_bytes: self.read_bytes,
            write_bytes: self.write_bytes,
            reads_by_size: self.reads_by_size,
            writes_by_size: self.writes_by_size,
        }
    }

    /// `self - earlier`, saturating (counters of a reused slot restart).
    pub fn since(&self, earlier: &ThreadStats) -> ThreadStats {
        let d = |a: u64, b: u64| a.saturating_sub(b);
        ThreadStats {
            read_bytes: d(self.read_bytes, earlier.read_bytes),
            write_bytes: d(self.write_bytes, earlier.write_bytes),
            reads_by_size: std::array::from_fn(|i| {
                d(self.reads_by_size[i], earlier.reads_by_size[i])
            }),
            writes_by_size: std::array::from_fn(|i| {
                d(self.writes_by_size[i], earlier.writes_by_size[i])
            }),
            bypassed: d(self.bypassed, earlier.bypassed),
            waited: d(self.waited, earlier.waited),
            wait_ns_total: d(self.wait_ns_total, earlier.wait_ns_total),
            wait_ns_max: self.wait_ns_max,
            reused: d(self.reused, earlier.reused),
        }
    }

    fn add(&mut self, o: &ThreadStats) {
        self.read_bytes += o.read_bytes;
        self.write_bytes += o.write_bytes;
        for i in 0..4 {
            self.reads_by_size[i] += o.reads_by_size[i];
            self.writes_by_size[i] += o.writes_by_size[i];
        }
        self.bypassed += o.bypassed;
        self.waited += o.waited;
        self.wait_ns_total += o.wait_ns_total;
        self.wait_ns_max = self.wait_ns_max.max(o.wait_ns_max);
        self.reused += o.reused;
    }
}

/// What a registered thread is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ThreadState {
    /// Between requests, or in a bypassed request.
    Idle,
    /// Blocked by the Selector.
    Waiting,
    /// Admitted.
    Running,
    /// Between requests, keeping its admission for the next one.
    Holding,
}

/// One registered thread.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ThreadSnapshot {
    /// Slot index.
    pub slot: usize,
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Current state.
    pub state: ThreadState,
    /// Size of the current (or last) request, bytes.
    pub request_bytes: u64,
    /// Cumulative statistics.
    pub stats: ThreadStats,
}

/// The whole gate at one moment.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GateSnapshot {
    /// Shared file.
    pub path: String,
    /// T_S now (None: unlimited).
    pub limit: Option<u32>,
    /// Units of capacity in use now (Serving-Thread count): requests in
    /// flight plus units idle threads hold for their next request.
    pub serving: u32,
    /// Threads waiting now.
    pub waiting: u32,
    /// Most requests ever in flight at once, and the limit at that moment.
    pub peak_serving: u32,
    /// The limit when the peak was reached.
    pub limit_at_peak: Option<u32>,
    /// Gated requests admitted (through the lock or by reusing a held unit).
    pub admissions: u64,
    /// Of those, admitted after waiting.
    pub contended_admissions: u64,
    /// Capacity taken back from threads that died, stopped or exec'd while
    /// admitted.
    pub reclaimed: u64,
    /// Slots freed because their thread died.
    pub reaped_slots: u64,
    /// Times the state was rebuilt: locks taken over from a dead owner,
    /// out-of-bounds words, online heals at the admission bound.
    pub lock_repairs: u64,
    /// Limit changes.
    pub limit_changes: u64,
    /// Waiters that proceeded ungated after the admission bound (a holder
    /// that neither ends its request nor dies, or a stuck lock).
    pub overdue: u64,
    /// Requests below this size are never gated.
    pub bypass_bytes: u32,
    /// Process holding the collector lease.
    pub collector_pid: Option<u32>,
    /// The collector's last window: average request size and write ratio.
    pub last_avg_request_bytes: Option<f64>,
    /// Write ratio of the collector's last window.
    pub last_write_ratio: Option<f64>,
    /// Registered threads.
    pub threads: Vec<ThreadSnapshot>,
    /// Sum over threads that have exited.
    pub retired: ThreadStats,
}

impl GateSnapshot {
    /// Statistics of all threads, live and exited.
    pub fn total(&self) -> ThreadStats {
        let mut t = self.retired;
        for th in &self.threads {
            t.add(&th.stats);
        }
        t
    }

    /// Prometheus text exposition of the gate.
    pub fn prometheus(&self) -> String {
        use std::fmt::Write;
        let mut out = String::new();
        let mut gauge = |name: &str, help: &str, kind: &str, v: f64| {
            let _ = writeln!(out, "# HELP memtamer_gate_{name} {help}");
            let _ = writeln!(out, "# TYPE memtamer_gate_{name} {kind}");
            let _ = writeln!(out, "memtamer_gate_{name} {v}");
        };
        let total = self.total();
        gauge(
            "limit",
            "Admission limit T_S (-1: unlimited).",
            "gauge",
            self.limit.map_or(-1.0, f64::from),
        );
        gauge(
            "serving",
            "Admitted PM requests in flight.",
            "gauge",
            self.serving.into(),
        );
        gauge(
            "waiting",
            "Threads waiting at the gate.",
            "gauge",
            self.waiting.into(),
        );
        gauge(
            "peak_serving",
            "Most PM requests ever in flight at once.",
            "gauge",
            self.peak_serving.into(),
        );
        gauge(
            "admissions_total",
            "Gated PM requests admitted.",
            "counter",
            self.admissions as f64,
        );
        gauge(
            "contended_admissions_total",
            "Admissions that waited.",
            "counter",
            self.contended_admissions as f64,
        );
        gauge(
            "reclaimed_total",
            "Capacity reclaimed from dead, stopped or exec'd threads.",
            "counter",
            self.reclaimed as f64,
        );
        gauge(
            "overdue_total",
            "Requests that proceeded unadmitted after the admission bound.",
            "counter",
            self.overdue as f64,
        );
        gauge(
            "read_bytes_total",
            "PM bytes read through the gate.",
            "counter",
            total.read_bytes as f64,
        );
        gauge(
            "write_bytes_total",
            "PM bytes written through the gate.",
            "counter",
            total.write_bytes as f64,
        );
        gauge(
            "wait_seconds_total",
            "Time threads spent waiting.",
            "counter",
            total.wait_ns_total as f64 / 1e9,
        );
        gauge(
            "threads",
            "Registered PA-threads.",
            "gauge",
            self.threads.len() as f64,
        );
        out
    }
}

/// What each registered thread did between two snapshots of a gate, in
/// the policy interface's terms. Threads are matched by (slot, pid, tid),
/// so a reused slot starts from zero.
#[derive(Clone, Debug, Default)]
pub struct GateWindow {
    last: HashMap<(usize, u32, u32), ThreadStats>,
}

impl GateWindow {
    /// Every registered thread's traffic since the previous call (all of it
    /// on the first), and the gate's state now.
    pub fn next(&mut self, snap: &GateSnapshot) -> (Vec<ThreadObs>, GateObs) {
        let mut seen = HashMap::with_capacity(snap.threads.len());
        let threads = snap
            .threads
            .iter()
            .map(|t| {
                let key = (t.slot, t.pid, t.tid);
                let delta = self.last.get(&key).map_or(t.stats, |p| t.stats.since(p));
                seen.insert(key, t.stats);
                ThreadObs {
                    tid: t.tid,
                    job: t.pid,
                    pm: Some(delta.access()),
                    gate_wait_ns: Some(delta.wait_ns_total),
                    ..Default::default()
                }
            })
            .collect();
        self.last = seen;
        let gate = GateObs {
            limit: snap.limit,
            admitted: snap.serving,
            waiting: snap.waiting,
        };
        (threads, gate)
    }
}

impl Gate {
    /// Reads every published figure (a consistent-enough view: counters are
    /// read one by one without stopping the threads).
    pub fn snapshot(&self) -> GateSnapshot {
        let h = self.header();
        let l32 = |a: &std::sync::atomic::AtomicU32| a.load(Ordering::Relaxed);
        let l64 = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        let limit = |v: u32| (v != UNLIMITED).then_some(v);
        let threads: Vec<ThreadSnapshot> = (0..self.slots_in_use())
            .filter_map(|i| {
                let slot = self.slot(i);
                let pid = l32(&slot.owner_pid);
                (pid != 0).then(|| ThreadSnapshot {
                    slot: i,
                    pid,
                    tid: l32(&slot.owner_tid),
                    state: match l32(&slot.state) {
                        WAITING => ThreadState::Waiting,
                        RUNNING => ThreadState::Running,
                        HOLDING => ThreadState::Holding,
                        _ => ThreadState::Idle,
                    },
                    request_bytes: l64(&slot.req_bytes),
                    stats: ThreadStats::load(&slot.stats),
                })
            })
            .collect();
        let f = |bits: u64| (bits != 0).then(|| f64::from_bits(bits));
        let retired = ThreadStats::load(&h.retired);
        let reused = retired.reused
            + threads
                .iter()
                .map(|t: &ThreadSnapshot| t.stats.reused)
                .sum::<u64>();
        GateSnapshot {
            path: self.path().display().to_string(),
            limit: limit(l32(&h.limit)),
            serving: l32(&h.serving),
            waiting: l32(&h.queue_len),
            peak_serving: l32(&h.peak_serving),
            limit_at_peak: limit(l32(&h.limit_at_peak)),
            admissions: l64(&h.admissions) + reused,
            contended_admissions: l64(&h.contended_admissions),
            reclaimed: l64(&h.reclaimed),
            reaped_slots: l64(&h.reaped_slots),
            lock_repairs: l64(&h.lock_repairs),
            limit_changes: l64(&h.limit_changes),
            overdue: l64(&h.overdue),
            bypass_bytes: l32(&h.bypass_bytes),
            collector_pid: Some(l32(&h.collector_pid)).filter(|p| *p != 0),
            last_avg_request_bytes: f(l64(&h.last_avg_bytes)),
            last_write_ratio: f(l64(&h.last_write_ratio)).map(|w| w - 1.0),
            threads,
            retired,
        }
    }
}
