//! One Ribbon instance's registration in the co-running registry
//! ([`crate::coshm`]) and what its control thread does with it each tick
//! (thesis §6.5.4): publish N_i and the flushed-bytes counter, try to hold
//! the coordinator lease, and, as the coordinator, run the four-point
//! search over the sum of every registrant's counter and write each one's
//! M_i ([`crate::corun::Coordinator`]); then read its own M_i. The control
//! thread applies that M_i instead of running its own search. Time comes in
//! as an argument (CLOCK_MONOTONIC ns) so tests can drive ticks directly.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::controller::ControlConfig;
use crate::corun::{Coordinator, Registrant};
use crate::coshm::{CorunError, Registry, SLOTS, UNASSIGNED};
use crate::error::{MAX_APP_THREADS, MAX_FLUSHERS};
use crate::idle::CpuTimes;

/// A heartbeat older than this (the thesis's control interval T = 1 s)
/// ends the coordinator's lease, excludes a registrant from the split, and
/// makes an assignment stale.
pub(crate) const STALE_NS: u64 = 1_000_000_000;
/// A coordinator heartbeat older than this makes the others check whether
/// its process still lives (a killed coordinator is replaced after this,
/// not after the whole lease).
pub(crate) const DEAD_CHECK_NS: u64 = 100_000_000;
/// A registrant silent this long whose process no longer maps the
/// registry (it exec'd) loses its slot.
pub(crate) const EXEC_STALE_NS: u64 = 10_000_000_000;
/// The coordinator reaps dead registrants at most this often.
const REAP_EVERY_NS: u64 = 200_000_000;

/// What the control thread hands in each tick.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct TickInput {
    /// This instance's cumulative flushed bytes (flushes plus proactive).
    pub bytes: u64,
    /// Its registered queues (N_i).
    pub app_threads: usize,
    /// A machine-wide write counter, when this process has one (the iMC's).
    pub machine_bytes: Option<u64>,
    /// A fresh CPU-time sample ([`crate::idle::sample`]), at most every
    /// 100 ms; None between samples or with idle detection off.
    pub cpu: Option<CpuTimes>,
}

/// What the control thread applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Assignment {
    /// M_i, already clamped to this instance's flusher threads.
    pub flushers: usize,
    /// The coordinator's proactive switch.
    pub proactive: bool,
}

/// A registration; dropping it releases the lease (if held) and the slot.
pub(crate) struct Member {
    reg: Registry,
    slot: usize,
    id: u64,
    max_flushers: usize,
    cfg: ControlConfig,
    detect_idle: bool,
    coordinator: Option<Coordinator>,
    t0_ns: u64,
    /// The coordinator's last CPU sample with the registrants' summed ticks,
    /// and its idle estimate.
    cpu_last: Option<CpuTimes>,
    available: f64,
    /// Times this instance took the lease, and found its slot taken away.
    pub(crate) leases_taken: u64,
    pub(crate) rejoins: u64,
}

impl Member {
    /// Opens the registry at `path` and claims a slot for an instance with
    /// `max_flushers` flusher threads; `cfg` is its controller's settings,
    /// used as the coordinator's (P4 = the machine's hardware threads).
    pub fn join(
        path: &Path,
        max_flushers: usize,
        cfg: ControlConfig,
        detect_idle: bool,
        now_ns: u64,
    ) -> Result<Member, CorunError> {
        let reg = Registry::open(path)?;
        let available = cfg.cores as f64;
        let mut m = Member {
            reg,
            slot: 0,
            id: 0,
            max_flushers,
            cfg,
            detect_idle,
            coordinator: None,
            t0_ns: now_ns,
            cpu_last: None,
            available,
            leases_taken: 0,
            rejoins: 0,
        };
        m.claim(now_ns)?;
        Ok(m)
    }

    /// This registration's id (unique for the registry's life).
    #[cfg(test)]
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The slot index it holds.
    #[cfg(test)]
    pub fn slot(&self) -> usize {
        self.slot
    }

    /// Whether it held the coordinator lease at its last tick.
    pub fn is_coordinator(&self) -> bool {
        self.coordinator.is_some()
    }

    /// The registry's last system-wide flusher count.
    pub fn m_total(&self) -> usize {
        self.reg.header().m_total.load(Ordering::Relaxed) as usize
    }

    fn claim(&mut self, now_ns: u64) -> Result<(), CorunError> {
        let pid = std::process::id();
        let start = memtamer_linux::ProcessKey::of(pid as i32)
            .map(|k| k.start_time)
            .unwrap_or(0);
        for attempt in 0..2 {
            for i in 0..SLOTS {
                let s = self.reg.slot(i);
                if s.owner_pid
                    .compare_exchange(0, pid, Ordering::AcqRel, Ordering::Relaxed)
                    .is_err()
                {
                    continue;
                }
                let id = self.reg.header().next_id.fetch_add(1, Ordering::AcqRel) + 1;
                s.start_time.store(start, Ordering::Relaxed);
                s.map_base.store(self.reg.base(), Ordering::Relaxed);
                s.beat_ns.store(now_ns, Ordering::Relaxed);
                s.bytes.store(0, Ordering::Relaxed);
                s.cpu_ticks.store(0, Ordering::Relaxed);
                s.app_threads.store(0, Ordering::Relaxed);
                s.max_flushers
                    .store(self.max_flushers as u32, Ordering::Relaxed);
                s.assigned.store(UNASSIGNED, Ordering::Relaxed);
                s.assigned_ns.store(0, Ordering::Relaxed);
                s.id.store(id, Ordering::Release);
                s.live.store(1, Ordering::Release);
                self.slot = i;
                self.id = id;
                return Ok(());
            }
            if attempt == 0 {
                // every slot taken: free the dead ones, then look again
                self.reg.reap(now_ns, EXEC_STALE_NS);
            }
        }
        Err(CorunError::Full {
            path: self.reg.path.clone(),
        })
    }

    /// Whether this registration still holds its slot (a corrupted word or a
    /// reaper that misjudged it may have freed it).
    fn holds_slot(&self) -> bool {
        let s = self.reg.slot(self.slot);
        s.id.load(Ordering::Acquire) == self.id
            && s.owner_pid.load(Ordering::Acquire) == std::process::id()
    }

    /// Tries to hold the coordinator lease: renewed if it is ours, taken if
    /// nobody holds it, its holder's registration is gone, its heartbeat is
    /// older than [`STALE_NS`] (a dead, stopped or hung coordinator), or,
    /// sooner, its heartbeat is older than [`DEAD_CHECK_NS`] and its process
    /// (pid and start time) no longer lives.
    fn hold_lease(&mut self, now_ns: u64) -> bool {
        let h = self.reg.header();
        let cur = h.lease.load(Ordering::Acquire);
        if cur == self.id {
            h.lease_beat_ns.store(now_ns, Ordering::Release);
            return true;
        }
        let beat = h.lease_beat_ns.load(Ordering::Acquire);
        // a heartbeat far in the future is a corrupted word, not a live holder
        let fresh =
            beat <= now_ns.saturating_add(STALE_NS) && now_ns.saturating_sub(beat) <= STALE_NS;
        let holder = (0..SLOTS).find(|&i| {
            let s = self.reg.slot(i);
            cur != 0 && s.id.load(Ordering::Acquire) == cur && s.live.load(Ordering::Acquire) == 1
        });
        let holder_dead = holder.is_some_and(|i| {
            let s = self.reg.slot(i);
            now_ns.saturating_sub(beat) > DEAD_CHECK_NS
                && !memtamer_linux::ProcessKey {
                    pid: s.owner_pid.load(Ordering::Acquire) as i32,
                    start_time: s.start_time.load(Ordering::Acquire),
                }
                .is_alive()
        });
        let holder = holder.is_some() && !holder_dead;
        if (!holder || !fresh)
            && h.lease
                .compare_exchange(cur, self.id, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        {
            h.lease_beat_ns.store(now_ns, Ordering::Release);
            if cur != 0 {
                h.takeovers.fetch_add(1, Ordering::Relaxed);
            }
            self.leases_taken += 1;
            return true;
        }
        false
    }

    /// One control tick at `now_ns`: publish, hold or contend for the
    /// lease, coordinate if holding it, and return this instance's fresh
    /// assignment (None: none yet, or the coordinator's is stale; the caller
    /// keeps its flusher count). An error means the registry is corrupt:
    /// the caller drops the registration and runs its own search.
    pub fn tick(
        &mut self,
        now_ns: u64,
        input: &TickInput,
    ) -> Result<Option<Assignment>, CorunError> {
        self.reg.check()?;
        if !self.holds_slot() {
            self.rejoins += 1;
            self.coordinator = None;
            self.claim(now_ns)?;
        }
        let s = self.reg.slot(self.slot);
        s.app_threads.store(
            input.app_threads.min(MAX_APP_THREADS) as u32,
            Ordering::Relaxed,
        );
        s.bytes.store(input.bytes, Ordering::Relaxed);
        if let Some(c) = input.cpu {
            s.cpu_ticks.store(c.own, Ordering::Relaxed);
        }
        s.beat_ns.store(now_ns, Ordering::Release);
        if self.hold_lease(now_ns) {
            self.coordinate(now_ns, input);
        } else {
            self.coordinator = None;
        }
        let s = self.reg.slot(self.slot);
        let m = s.assigned.load(Ordering::Acquire);
        let at = s.assigned_ns.load(Ordering::Acquire);
        if m == UNASSIGNED
            || now_ns.saturating_sub(at) > STALE_NS
            || at > now_ns.saturating_add(STALE_NS)
        {
            return Ok(None);
        }
        Ok(Some(Assignment {
            flushers: (m as usize).min(self.max_flushers),
            proactive: self.reg.header().proactive.load(Ordering::Relaxed) != 0,
        }))
    }

    /// The coordinator's step: reap, read the live registrants, run the
    /// search over their summed counters, write each one's M_i.
    fn coordinate(&mut self, now_ns: u64, input: &TickInput) {
        let h = self.reg.header();
        if now_ns.saturating_sub(h.last_reap_ns.load(Ordering::Relaxed)) >= REAP_EVERY_NS {
            h.last_reap_ns.store(now_ns, Ordering::Relaxed);
            self.reg.reap(now_ns, EXEC_STALE_NS);
        }
        let now = Duration::from_nanos(now_ns.saturating_sub(self.t0_ns));
        let cfg = self.cfg.clone();
        let co = self
            .coordinator
            .get_or_insert_with(|| Coordinator::new(cfg, now, true));
        let mut slots = Vec::new();
        let mut regs = Vec::new();
        let mut ticks = 0u64;
        for i in 0..SLOTS {
            let s = self.reg.slot(i);
            if s.live.load(Ordering::Acquire) != 1 {
                continue;
            }
            let beat = s.beat_ns.load(Ordering::Acquire);
            if now_ns.saturating_sub(beat) > STALE_NS || beat > now_ns.saturating_add(STALE_NS) {
                continue; // stopped or hung: no share until it beats again
            }
            let id = s.id.load(Ordering::Acquire);
            if id == 0 {
                continue;
            }
            ticks = ticks.wrapping_add(s.cpu_ticks.load(Ordering::Relaxed));
            slots.push(i);
            regs.push(Registrant {
                id,
                bytes: s.bytes.load(Ordering::Relaxed),
                app_threads: (s.app_threads.load(Ordering::Relaxed) as usize).min(MAX_APP_THREADS),
                max_flushers: (s.max_flushers.load(Ordering::Relaxed) as usize).min(MAX_FLUSHERS),
            });
        }
        if self.detect_idle {
            if let Some(c) = input.cpu {
                // processes other than the registrants: busy minus every
                // registrant's own time (their flushers do not count)
                let now_cpu = CpuTimes { own: ticks, ..c };
                if let Some(a) = self
                    .cpu_last
                    .and_then(|last| crate::idle::available(self.cfg.cores, last, now_cpu))
                {
                    self.available = a;
                }
                self.cpu_last = Some(now_cpu);
            }
        }
        let plan = co.step(now, &regs, input.machine_bytes, self.available);
        for (k, &i) in slots.iter().enumerate() {
            let s = self.reg.slot(i);
            let m = plan.flushers.get(k).copied().unwrap_or(0);
            s.assigned.store(m as u32, Ordering::Relaxed);
            s.assigned_ns.store(now_ns, Ordering::Release);
        }
        h.m_total.store(plan.total as u32, Ordering::Relaxed);
        h.proactive
            .store(u32::from(plan.proactive), Ordering::Relaxed);
        h.decisions.fetch_add(1, Ordering::Relaxed);
    }

    /// Searches the coordinator ran while this instance held the lease.
    pub fn searches(&self) -> u64 {
        self.coordinator.as_ref().map_or(0, Coordinator::searches)
    }

    /// Leaves without releasing anything, as a process that dies inside the
    /// registry does (tests of the takeover and the reaper).
    #[cfg(test)]
    pub fn abandon(self) {
        std::mem::forget(self);
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        let h = self.reg.header();
        let _ = h
            .lease
            .compare_exchange(self.id, 0, Ordering::AcqRel, Ordering::Relaxed);
        self.reg.free(self.slot, self.id);
    }
}

#[cfg(test)]
#[path = "comember_tests.rs"]
mod tests;
