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
    /// Time stalled on memory in the epoch (blocked on a full miss queue,
    /// a dependent load or a drain): the engine's `STALLS_L2_PENDING`.
    pub(super) stall: Ps,
    /// When the current stall began.
    pub(super) stall_since: Ps,
    /// Loads served by the thread's own socket's memory.
    pub(super) local_loads: u64,
    /// Loads served by another socket's memory (the emulated NVM).
    pub(super) remote_loads: u64,
    /// A synchronisation point (a drain) ends the epoch.
    pub(super) due: bool,
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
        let d = q.delay(&th.qz);
        th.qz = QuartzEpoch {
            start: now,
            ..Default::default()
        };
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
    fn the_longest_epoch_is_kept_in_picoseconds() {
        assert_eq!(q().max_epoch, 10_000_000);
    }
}
