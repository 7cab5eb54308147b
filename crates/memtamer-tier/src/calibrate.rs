//! The runtime's `calibrate` step: the thesis's per-platform calibration
//! of the models' constant factors (§3.4.1: STREAM for `CF_bw`, a
//! single-threaded pointer chaser for `CF_lat`), timed on this machine's
//! two backings. Each micro-benchmark runs over objects allocated in DRAM
//! and then over objects allocated in the slow tier; the pure fit
//! (`memtamer_core::unimem::calibrate::fit`) turns measured against
//! predicted slow-tier cost into the factors.
//!
//! `#data_access` is the kernel's own line count (3 arrays per triad pass,
//! one line per chase step): the fault-sampling profiler counts page
//! visits, not lines, so it cannot stand in for the thesis's LLC-miss
//! samples here. On a host whose slow tier is DRAM-backed (`/dev/shm`),
//! both factors come out near 0: the calibration then says, correctly,
//! that moving objects gains nothing.

use crate::unimem::calibrate::{fit, CalKind, CalRun, Factors};
use crate::unimem::model::Platform;
use crate::{MigrationStats, Tier, TierError, TierRuntime};
use std::time::Instant;

/// Sizes of the calibration runs.
#[derive(Clone, Debug, PartialEq)]
pub struct CalibrateConfig {
    /// Bytes of each of the triad's three arrays.
    pub stream_bytes: usize,
    /// Triad passes timed per tier.
    pub stream_passes: u32,
    /// Bytes of the pointer chaser's array (one pointer per 64 B line).
    pub chase_bytes: usize,
    /// Dependent loads timed per tier.
    pub chase_steps: u64,
}

impl CalibrateConfig {
    /// Sizes that fit a DRAM budget of `budget` bytes (the four arrays of
    /// one tier together take at most half of it), at most 16 MiB each
    /// (beyond a last-level cache).
    pub fn fitting(budget: usize) -> CalibrateConfig {
        let each = (budget / 8).clamp(64 * 1024, 16 << 20);
        CalibrateConfig {
            stream_bytes: each,
            stream_passes: 4,
            chase_bytes: each,
            chase_steps: (each as u64 / 64) * 4,
        }
    }
}

const LINE: usize = 64;

/// One triad pass `a = b + s * c` per `passes`; seconds per pass.
fn triad(rt: &TierRuntime, tier: Tier, bytes: usize, passes: u32) -> Result<f64, TierError> {
    let n = bytes / 8;
    let ptrs = rt.alloc_all(
        &[("cal.a", bytes), ("cal.b", bytes), ("cal.c", bytes)],
        tier,
    )?;
    // SAFETY: each pointer is a fresh mapping of at least `bytes` bytes,
    // 8-aligned (page-aligned), owned by this function until freed below.
    let (a, b, c) = unsafe {
        (
            std::slice::from_raw_parts_mut(ptrs[0] as *mut f64, n),
            std::slice::from_raw_parts_mut(ptrs[1] as *mut f64, n),
            std::slice::from_raw_parts_mut(ptrs[2] as *mut f64, n),
        )
    };
    a.fill(0.0);
    b.fill(1.0);
    c.fill(2.0);
    let s = std::hint::black_box(3.0);
    let t = Instant::now();
    for _ in 0..passes {
        for ((x, y), z) in a.iter_mut().zip(b.iter()).zip(c.iter()) {
            *x = y + s * z;
        }
        std::hint::black_box(&mut *a);
    }
    let secs = t.elapsed().as_secs_f64() / f64::from(passes.max(1));
    for p in ptrs {
        rt.free(p)?;
    }
    Ok(secs)
}

/// A random single cycle over `lines` (Sattolo), as next-line indices.
fn cycle(lines: usize, mut seed: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..lines).collect();
    for i in (1..lines).rev() {
        // splitmix64
        seed = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = seed;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        let j = ((z ^ (z >> 31)) % i as u64) as usize;
        order.swap(i, j);
    }
    let mut next = vec![0; lines];
    for k in 0..lines {
        next[order[k]] = order[(k + 1) % lines];
    }
    next
}

/// `steps` dependent loads along a random cycle of lines; seconds.
fn chase(rt: &TierRuntime, tier: Tier, bytes: usize, steps: u64) -> Result<f64, TierError> {
    let lines = (bytes / LINE).max(2);
    let p = rt.alloc(lines * LINE, "cal.chase", tier)?;
    let words = lines * LINE / 8;
    // SAFETY: a fresh, page-aligned mapping of `lines * LINE` bytes, owned
    // here until freed below.
    let w = unsafe { std::slice::from_raw_parts_mut(p as *mut usize, words) };
    for (i, n) in cycle(lines, 0x5eed).into_iter().enumerate() {
        w[i * LINE / 8] = n;
    }
    let mut at = 0usize;
    let t = Instant::now();
    for _ in 0..steps {
        at = w[at * LINE / 8];
    }
    std::hint::black_box(at);
    let secs = t.elapsed().as_secs_f64();
    rt.free(p)?;
    Ok(secs)
}

/// Runs the calibration on `rt`'s two tiers and fits the factors for the
/// model `p` (the thesis: "given a hardware platform, CF_bw and CF_lat need
/// to be calculated only once"). Needs `4 × max(stream, chase)` bytes of
/// DRAM budget free; `TierError::DramFull` otherwise.
pub fn calibrate(
    rt: &TierRuntime,
    p: &Platform,
    cfg: &CalibrateConfig,
) -> Result<(Factors, Vec<CalRun>), TierError> {
    let mut runs = Vec::new();
    let stream = |tier| triad(rt, tier, cfg.stream_bytes, cfg.stream_passes);
    let (d, s) = (stream(Tier::Dram)?, stream(Tier::Slow)?);
    runs.push(CalRun {
        kind: CalKind::Bandwidth,
        accesses: (3 * cfg.stream_bytes / LINE) as f64,
        dram_s: d,
        slow_s: s,
    });
    let ch = |tier| chase(rt, tier, cfg.chase_bytes, cfg.chase_steps);
    let (d, s) = (ch(Tier::Dram)?, ch(Tier::Slow)?);
    runs.push(CalRun {
        kind: CalKind::Latency,
        accesses: cfg.chase_steps as f64,
        dram_s: d,
        slow_s: s,
    });
    let f = fit(&runs, p)?;
    Ok((f, runs))
}

/// Round trips (one promotion, one eviction each) that
/// [`copy_bandwidths`] times: a few, so the calibration stays short.
pub const COPY_ROUNDS: u32 = 3;

/// Measures the two copy bandwidths of the unimem model
/// (`Platform::copy_bw` for promotions, `Platform::evict_bw` for
/// evictions; Eq. 3.3 per direction, docs/notebook/unimem.md "A copy bandwidth per
/// direction") on this host: one object of `bytes`, allocated in the slow
/// tier and filled, is moved to DRAM and back [`COPY_ROUNDS`] times
/// through the registry's real moves (write-protect, copy, remap), each
/// on the calling thread. The result's `to_dram` / `to_slow`
/// ([`crate::DirectionStats::bandwidth`]) are the two bandwidths. The
/// object is freed on every path. Needs `bytes` of DRAM budget free.
pub fn copy_bandwidths(rt: &TierRuntime, bytes: usize) -> Result<MigrationStats, TierError> {
    let p = rt.alloc(bytes, "cal.copy", Tier::Slow)?;
    let run = || -> Result<MigrationStats, TierError> {
        // SAFETY: a fresh mapping of at least `bytes` bytes, owned here
        // until freed below; touched so that the copies read real pages.
        unsafe { std::ptr::write_bytes(p, 0x5a, bytes) };
        let mut st = MigrationStats::default();
        for _ in 0..COPY_ROUNDS {
            for to in [Tier::Dram, Tier::Slow] {
                let r = rt.migrate_now(p, to)?;
                st.record(r.bytes as u64, r.copy_ns, r.to);
            }
        }
        Ok(st)
    };
    let st = run();
    rt.free(p)?;
    st
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cycle_visits_every_line_once() {
        for n in [2, 3, 17, 1000] {
            let next = cycle(n, 7);
            let mut seen = vec![false; n];
            let mut at = 0;
            for _ in 0..n {
                assert!(!seen[at], "line {at} visited twice (n = {n})");
                seen[at] = true;
                at = next[at];
            }
            assert_eq!(at, 0, "not one cycle (n = {n})");
        }
    }

    #[test]
    fn fitting_sizes_fit_the_budget() {
        let c = CalibrateConfig::fitting(64 << 20);
        assert_eq!(c.stream_bytes, 8 << 20);
        assert!(3 * c.stream_bytes <= 64 << 20);
        assert_eq!(CalibrateConfig::fitting(1 << 40).stream_bytes, 16 << 20);
        assert_eq!(CalibrateConfig::fitting(0).chase_bytes, 64 * 1024);
    }
}
