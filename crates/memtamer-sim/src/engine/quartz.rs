//! Quartz-style latency emulation (`[quartz]`, see `config::quartz`): per
//! thread, the epoch's memory stall time and its local / remote loads; at
//! an epoch's end the thread spins for Quartz's delay. Off (no `[quartz]`)
//! the counters are kept but never read, so results do not change.

use super::cpu::Block;
use super::Engine;
use crate::config::quartz::QuartzParams;
use crate::workload::{Ps, NS};

/// The model's constants.
#[derive(Clone, Copy, Debug)]
pub(super) struct Quartz {
    target_ns: f64,
    local_ns: f64,
    remote_ns: f64,
    max_epoch: Ps,
}

/// One thread's current epoch.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct QuartzEpoch {
    /// When the epoch began.
    pub(super) start: Ps,
    /// Time in the epoch stalled on memory (blocked on a full miss queue, a
    /// dependent load or a drain) while a load miss is outstanding: the
    /// engine's `CYCLE_ACTIVITY:STALLS_L2_PENDING`, which counts stalls with
    /// a demand *load* pending only (a core held up by its stores' RFOs is
    /// a store-buffer resource stall, not counted by Quartz).
    pub(super) stall: Ps,
    /// Up to when `stall` is counted.
    pub(super) stall_since: Ps,
    /// Blocked on memory now.
    pub(super) stalled: bool,
    /// Load misses (loads and memcpy sources) outstanding now.
    pub(super) loads_out: u32,
    /// Loads served by the thread's own socket's memory.
    pub(super) local_loads: u64,
    /// Loads served by another socket's memory (the emulated NVM).
    pub(super) remote_loads: u64,
    /// A synchronisation point (a drain) ends the epoch.
    pub(super) due: bool,
}

impl QuartzEpoch {
    /// Brings `stall` up to `now`.
    fn settle(&mut self, now: Ps) {
        if self.stalled && self.loads_out > 0 {
            self.stall += now - self.stall_since;
        }
        self.stall_since = now;
    }

    /// The thread blocks on memory (`true`) or goes on (`false`).
    pub(super) fn set_stalled(&mut self, now: Ps, on: bool) {
        self.settle(now);
        self.stalled = on;
    }

    /// A load miss was issued.
    pub(super) fn load_issued(&mut self, now: Ps) {
        self.settle(now);
        self.loads_out += 1;
    }

    /// A load miss completed, from another socket's memory or not.
    pub(super) fn load_done(&mut self, now: Ps, remote: bool) {
        self.settle(now);
        self.loads_out = self.loads_out.saturating_sub(1);
        if remote {
            self.remote_loads += 1;
        } else {
            self.local_loads += 1;
        }
    }

    /// The next epoch, from `now` (what is outstanding carries over).
    fn next(&self, now: Ps) -> QuartzEpoch {
        QuartzEpoch {
            start: now,
            stall_since: now,
            stalled: self.stalled,
            loads_out: self.loads_out,
            ..Default::default()
        }
    }
}

impl Quartz {
    pub(super) fn new(p: &QuartzParams) -> Quartz {
        Quartz {
            target_ns: p.target_ns,
            local_ns: p.hw_local_ns,
            remote_ns: p.hw_remote_ns,
            max_epoch: (p.max_epoch_us * 1000.0 * NS as f64).round().max(1.0) as Ps,
        }
    }

    /// The delay ending epoch `e` (ps): the stalls attributed to remote
    /// loads by `loads x latency` (quartz `src/lib/cpu/haswell.h`, read of
    /// `remote_dram`), times `(target - hw) / hw` (quartz
    /// `src/lib/model_lat.c`, `create_latency_epoch`). Every simulated miss
    /// goes to memory, so Quartz's LLC hit / miss weighting is 1. No loads:
    /// no delay (Quartz returns 0 too).
    pub(super) fn delay(&self, e: &QuartzEpoch) -> Ps {
        let remote = e.remote_loads as f64 * self.remote_ns;
        let den = remote + e.local_loads as f64 * self.local_ns;
        if den <= 0.0 {
            return 0;
        }
        let stalls = e.stall as f64 * remote / den;
        (stalls * (self.target_ns - self.remote_ns) / self.remote_ns).round() as Ps
    }
}

impl Engine {
    /// Ends thread `tid`'s epoch when it is due (a drain passed, or the
    /// longest epoch elapsed) and spins it for the delay. True when the
    /// thread now spins (the caller returns; the pending op waits).
    #[inline]
    pub(super) fn quartz_epoch(&mut self, tid: u32) -> bool {
        let Some(q) = self.quartz else {
            return false;
        };
        let now = self.now;
        let th = &mut self.threads[tid as usize];
        if !th.qz.due && now - th.qz.start < q.max_epoch {
            return false;
        }
        th.qz.set_stalled(now, false);
        let d = q.delay(&th.qz);
        th.qz = th.qz.next(now);
        if d == 0 {
            return false;
        }
        // a spin timed by rdtscp: wall-clock exact, not stretched by SMT
        th.block = Block::Compute;
        th.wake_gen += 1;
        th.compute_left = now + d;
        let g = th.wake_gen;
        self.push(now + d, super::EvKind::ThreadRun(tid, g));
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q() -> Quartz {
        Quartz::new(&QuartzParams {
            target_ns: 324.0,
            hw_local_ns: 81.0,
            hw_remote_ns: 141.0,
            max_epoch_us: 10.0,
        })
    }

    #[test]
    fn delay_is_remote_stalls_times_the_latency_ratio() {
        let e = QuartzEpoch {
            stall: 141_000,
            remote_loads: 10,
            ..Default::default()
        };
        // all loads remote: 141 ns of stalls become 324 - 141 = 183 ns more
        assert_eq!(q().delay(&e), 183_000);
        // as many local loads: the remote share is 141 / (141 + 81)
        let e2 = QuartzEpoch {
            local_loads: 10,
            ..e
        };
        let want = 141_000.0 * 141.0 / 222.0 * 183.0 / 141.0;
        assert!((q().delay(&e2) as f64 - want).abs() < 1.0);
        // only local loads, or none: no delay
        let e3 = QuartzEpoch {
            remote_loads: 0,
            ..e2
        };
        assert_eq!(q().delay(&e3), 0);
        assert_eq!(q().delay(&QuartzEpoch::default()), 0);
    }

    #[test]
    fn only_stalls_with_a_load_outstanding_count() {
        let mut e = QuartzEpoch::default();
        // stalled with no load out (e.g. on stores' RFOs): not counted
        e.set_stalled(0, true);
        e.set_stalled(100, false);
        assert_eq!(e.stall, 0);
        // a load out, running: not counted; stalled: counted until it is back
        e.load_issued(100);
        e.set_stalled(150, true);
        e.load_done(250, true);
        e.set_stalled(300, false);
        assert_eq!(e.stall, 100);
        assert_eq!((e.remote_loads, e.local_loads, e.loads_out), (1, 0, 0));
        // the next epoch keeps what is outstanding, not the counts
        e.load_issued(300);
        let n = e.next(400);
        assert_eq!(
            (n.start, n.stall, n.loads_out, n.remote_loads),
            (400, 0, 1, 0)
        );
    }

    #[test]
    fn the_longest_epoch_is_kept_in_picoseconds() {
        assert_eq!(q().max_epoch, 10_000_000);
    }
}
