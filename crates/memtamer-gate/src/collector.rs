//! The Collector (PATS §IV): every window it reads the request mix all
//! registered threads published, asks the policy for T_S and sets the
//! limit. One process in the system holds the collector lease at a time
//! ("one owner per knob"); if it dies or stalls, another takes over.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use memtamer_core::{Actuators, ApplyReport, Decision, GateLimit, Knob, Observation, Policy};

use crate::gate::Gate;
use crate::os;
use crate::stats::GateWindow;

/// A lease holder silent for this many windows (and at least 200 ms) is
/// replaced.
const LEASE_WINDOWS: u64 = 20;
/// Every this many windows the reaper also looks for zombies.
const THOROUGH_EVERY: u64 = 100;

/// The pure part of the collector: window deltas in, limit out.
pub struct CollectorCore {
    policy: Box<dyn Policy + Send>,
    window: GateWindow,
    last_ns: u64,
}

impl CollectorCore {
    /// A collector running `policy`.
    pub fn new(policy: Box<dyn Policy + Send>) -> CollectorCore {
        CollectorCore {
            policy,
            window: GateWindow::default(),
            last_ns: 0,
        }
    }

    /// One window: builds the observation from what changed since the last
    /// call and applies the policy's gate limit. Returns the observation and
    /// the limit it set, if any.
    pub fn tick(&mut self, gate: &Gate) -> (Observation, Option<GateLimit>) {
        let now = os::now_ns();
        let (mut threads, gate_obs) = self.window.next(&gate.snapshot());
        // the policy sees the threads that issued PM requests in the window
        threads.retain(|t| t.pm.is_some_and(|pm| pm.requests() > 0));
        let obs = Observation {
            start_ns: self.last_ns,
            duration_ns: now.saturating_sub(self.last_ns),
            threads,
            gate: Some(gate_obs),
            ..Default::default()
        };
        self.last_ns = now;
        let mix = obs.pm_total();
        if let (Some(s), Some(wr)) = (mix.average_request_bytes(), mix.write_ratio()) {
            let h = gate.header();
            h.last_avg_bytes.store(s.to_bits(), Ordering::Relaxed);
            h.last_write_ratio
                .store((wr + 1.0).to_bits(), Ordering::Relaxed);
        }
        let decision = self.policy.decide(&obs);
        // a gate policy decides nothing else; were it composed with one that
        // does, the report would say what the gate left undone
        let _report = GateActuator(gate).apply(&decision);
        (obs, decision.gate_limit)
    }
}

/// The gate as an [`Actuators`]: it owns `Decision::gate_limit` only (one
/// owner per knob, SYSTEM.md) and reports every other knob as ignored. The
/// collector applies its policy's decisions through it, and so does the
/// daemon when its `[gate]` section names a gate.
pub struct GateActuator<'a>(pub &'a Gate);

/// Why the gate leaves a knob alone.
pub const NOT_A_GATE_KNOB: &str = "the gate owns only gate_limit";

impl Actuators for GateActuator<'_> {
    fn apply(&mut self, decision: &Decision) -> ApplyReport {
        let mut report = ApplyReport::default();
        if let Some(limit) = decision.gate_limit {
            self.0.set_limit(match limit {
                GateLimit::Unlimited => None,
                GateLimit::Limit(n) => Some(n),
            });
            report.applied(Knob::GateLimit, 1);
        }
        for knob in [Knob::ThreadCpus, Knob::JobBudgets, Knob::Migrations] {
            report.ignore_knob(decision, knob, NOT_A_GATE_KNOB);
        }
        report
    }
}

/// Tries to hold the collector lease for this process; true if it does.
fn hold_lease(gate: &Gate, window: Duration) -> bool {
    let h = gate.header();
    let me = os::pid();
    let now = os::now_ns();
    let holder = h.collector_pid.load(Ordering::Acquire);
    if holder == me {
        h.collector_heartbeat_ns.store(now, Ordering::Release);
        return true;
    }
    let stale_after = (window.as_nanos() as u64 * LEASE_WINDOWS).max(200_000_000);
    // a heartbeat in the future is a corrupted word, not a live holder
    let beat = h.collector_heartbeat_ns.load(Ordering::Acquire);
    let stale = beat > now || now - beat > stale_after;
    if (holder == 0 || stale || !os::alive(holder, 0))
        && h.collector_pid
            .compare_exchange(holder, me, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    {
        h.collector_heartbeat_ns.store(now, Ordering::Release);
        return true;
    }
    false
}

/// A running collector thread; stops (and gives up the lease) on drop.
pub struct Collector {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl Collector {
    /// Starts the collector thread for `gate`. Every window it reaps dead
    /// threads, makes sure no held unit keeps a waiter out and heals what
    /// the slots prove inconsistent (`Gate::heal_state`); while it
    /// holds the lease it also runs `policy`.
    pub fn spawn(
        gate: Arc<Gate>,
        policy: Option<Box<dyn Policy + Send>>,
        window: Duration,
    ) -> std::io::Result<Collector> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let handle = std::thread::Builder::new()
            .name("memtamer-collector".into())
            .spawn(move || {
                let mut core = policy.map(CollectorCore::new);
                let mut until_thorough = THOROUGH_EVERY;
                while !flag.load(Ordering::Relaxed) {
                    until_thorough -= 1;
                    let thorough = until_thorough == 0;
                    if thorough {
                        until_thorough = THOROUGH_EVERY;
                    }
                    gate.reap_with(false, thorough);
                    gate.serve_waiters();
                    // a corrupted word the slots contradict (issue 22)
                    gate.heal_state();
                    if let Some(core) = core.as_mut() {
                        if hold_lease(&gate, window) {
                            core.tick(&gate);
                        }
                    }
                    std::thread::park_timeout(window);
                }
                let h = gate.header();
                let _ = h.collector_pid.compare_exchange(
                    os::pid(),
                    0,
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                );
            })?;
        Ok(Collector {
            stop,
            handle: Some(handle),
        })
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(handle) = self.handle.take() {
            handle.thread().unpark();
            let _ = handle.join();
        }
    }
}
