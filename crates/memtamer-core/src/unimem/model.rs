//! Unimem's performance models (thesis §3.4, Step 2).

use super::{ObjId, Tier};
use std::collections::BTreeMap;

/// What the models need to know about the machine. Bandwidths in B/s,
/// latencies in seconds. The constant factors are measured offline per
/// platform (STREAM for `cf_bw`, a pointer chaser for `cf_lat`), as
/// measured/predicted time (the digest's reading of the thesis's ratio).
#[derive(Clone, Debug, PartialEq)]
pub struct Platform {
    /// DRAM bandwidth.
    pub dram_bw: f64,
    /// Slow-tier bandwidth.
    pub slow_bw: f64,
    /// DRAM load latency.
    pub dram_lat: f64,
    /// Slow-tier load latency.
    pub slow_lat: f64,
    /// Cache-line size in bytes.
    pub cacheline: f64,
    /// Bandwidth of the helper thread's copy from the slow tier into DRAM
    /// (a promotion): Eq. 3.3's `mem_copy_bw` for the moves a phase waits
    /// for. Measured on promotions (`memtamer sim unimem`'s calibration:
    /// the eager placement; the runtime: its own promotions).
    pub copy_bw: f64,
    /// Bandwidth of the helper's copy from DRAM to the slow tier (an
    /// eviction), measured the same way on evictions. The thesis has one
    /// `mem_copy_bw` (Eq. 3.3), but the two directions differ where the slow
    /// tier's loads and stores do: Quartz-style latency emulation delays
    /// loads only, so at 4x latency an eviction (DRAM loads, slow-tier
    /// stores) copies about 2.2x faster than a promotion (docs/notebook/unimem.md,
    /// "Evictions charged only where a copy waits behind them", item 3).
    /// Where only one bandwidth is known, set both to it
    /// ([`Platform::with_copy_bw`]).
    pub evict_bw: f64,
    /// The slow tier's STREAM peak measured through Eq. 3.1: the base of the
    /// t1/t2 classification thresholds (§3.4.1: "t1% of the peak NVM
    /// bandwidth BW_peak"; an object that saturates the slow tier is
    /// bandwidth-bound there even if it would not saturate DRAM).
    pub bw_peak: f64,
    /// Constant factor of the bandwidth benefit.
    pub cf_bw: f64,
    /// Constant factor of the latency benefit.
    pub cf_lat: f64,
    /// Bandwidth-sensitive above this fraction of `bw_peak` (thesis t1 = 80%).
    pub t1: f64,
    /// Latency-sensitive below this fraction of `bw_peak` (thesis t2 = 10%).
    pub t2: f64,
    /// Whether the helper thread's copies overlap the computation (Fig.
    /// 3.5's `mem_comp_overlap` credit) or take a rank's CPU
    /// ([`CopyOverlap`]). Why a field: the searches charge copies from it
    /// alone, so the runtime on an oversubscribed node and the simulator
    /// run the same model.
    pub copy_overlap: CopyOverlap,
}

/// Whether the helper thread has a CPU of its own for its copies.
///
/// The thesis's Eq. 3.3 credits a copy with the execution time of the
/// phases it runs beside (`mem_comp_overlap`, Fig. 3.5): the helper thread
/// copies while the ranks compute (§3.1: "The helper thread runs
/// in parallel with the application, overlapping data movement with
/// application execution"), which assumes a CPU the ranks leave idle.
/// When a node runs as many ranks as the CPUs they may use, or more, the
/// copy's CPU time is taken from a rank and nothing is overlapped; every
/// copy then costs its full Eq. 3.3 time (docs/notebook/unimem.md, "Copies charged
/// as exposed when the ranks fill the CPUs").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CopyOverlap {
    /// The thesis's assumption: copies run beside the computation and are
    /// charged only where a phase waits for them.
    #[default]
    Overlapped,
    /// No CPU is left for the helper: each copy is charged in full.
    Exposed,
}

impl CopyOverlap {
    /// The rule: `node_ranks` ranks on a node whose ranks may use `cpus`
    /// CPUs leave the helper no CPU when `node_ranks >= cpus` (every CPU
    /// runs a rank's application thread). `cpus` 0 means unknown: the
    /// thesis's assumption holds (overlapped); `node_ranks` 0 counts as 1
    /// (a process outside MPI is one rank).
    pub fn of_node(node_ranks: u32, cpus: u32) -> Self {
        if cpus > 0 && node_ranks.max(1) >= cpus {
            CopyOverlap::Exposed
        } else {
            CopyOverlap::Overlapped
        }
    }

    /// The Fig. 3.5 overlap credit of a copy that may run beside phases
    /// taking `window` seconds: all of it when overlapped, none when
    /// exposed.
    pub fn credit(self, window: f64) -> f64 {
        match self {
            CopyOverlap::Overlapped => window,
            CopyOverlap::Exposed => 0.0,
        }
    }
}

impl Platform {
    /// The thesis's emulated platform: slow tier with `bw_div`× less
    /// bandwidth and `lat_mul`× the latency of DRAM (§3.6: 1/2 bandwidth,
    /// 4× latency), constant factors 1, t1 = 80%, t2 = 10% of the slow
    /// tier's peak bandwidth (§3.4.1).
    pub fn emulated(dram_bw: f64, dram_lat: f64, bw_div: f64, lat_mul: f64) -> Self {
        let slow_bw = dram_bw / bw_div;
        Platform {
            dram_bw,
            slow_bw,
            dram_lat,
            slow_lat: dram_lat * lat_mul,
            cacheline: 64.0,
            copy_bw: slow_bw,
            evict_bw: slow_bw,
            bw_peak: slow_bw,
            cf_bw: 1.0,
            cf_lat: 1.0,
            t1: 0.8,
            t2: 0.1,
            copy_overlap: CopyOverlap::Overlapped,
        }
    }

    /// This platform with one copy bandwidth for both directions (the
    /// thesis's single `mem_copy_bw` of Eq. 3.3; what a configuration or
    /// measurement that gives one value means).
    pub fn with_copy_bw(&self, bw: f64) -> Platform {
        Platform {
            copy_bw: bw,
            evict_bw: bw,
            ..self.clone()
        }
    }

    /// Eq. 3.3's `data_size / mem_copy_bw` for a copy of `size` bytes
    /// towards `to`: a promotion at [`Platform::copy_bw`], an eviction at
    /// [`Platform::evict_bw`].
    pub fn copy_secs(&self, size: f64, to: Tier) -> f64 {
        match to {
            Tier::Dram => size / self.copy_bw,
            Tier::Slow => size / self.evict_bw,
        }
    }
}

/// One object's profile in one phase.
#[derive(Clone, Debug, PartialEq)]
pub struct ObjPhase {
    /// `#data_access`: main-memory accesses (cache lines) in the phase.
    pub accesses: f64,
    /// `#samples_with_data_accesses`: samples that saw the object.
    pub samples: f64,
}

/// One phase's profile.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct PhaseProfile {
    /// Phase execution time (s).
    pub time: f64,
    /// `#samples` taken in the phase.
    pub samples: f64,
    /// The objects the phase touched (the knapsack candidates).
    pub objs: BTreeMap<ObjId, ObjPhase>,
}

/// How an object reacts to the slow tier (§3.4 classification).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sensitivity {
    /// Demand ≥ t1 of peak: benefit is the bandwidth one.
    Bandwidth,
    /// Demand < t2 of peak: benefit is the latency one.
    Latency,
    /// In between: the larger of the two.
    Both,
}

/// Eq. 3.1: the object's bandwidth demand, bytes accessed over the time
/// spent accessing it (its share of samples times the phase time).
pub fn bw_demand(accesses: f64, cacheline: f64, obj_samples: f64, samples: f64, time: f64) -> f64 {
    let t = if samples > 0.0 {
        obj_samples / samples * time
    } else {
        0.0
    };
    if t <= 0.0 {
        0.0
    } else {
        accesses * cacheline / t
    }
}

/// Classification by demand against `bw_peak`, the slow tier's peak (t1/t2,
/// §3.4.1; the thesis text's "between t1% and t1%" means t2 and t1).
pub fn classify(demand: f64, p: &Platform) -> Sensitivity {
    if demand >= p.t1 * p.bw_peak {
        Sensitivity::Bandwidth
    } else if demand < p.t2 * p.bw_peak {
        Sensitivity::Latency
    } else {
        Sensitivity::Both
    }
}

/// Eq. 3.2: time saved by serving the bytes from DRAM instead of the slow tier.
pub fn benefit_bw(accesses: f64, p: &Platform) -> f64 {
    let bytes = accesses * p.cacheline;
    (bytes / p.slow_bw - bytes / p.dram_bw) * p.cf_bw
}

/// The latency benefit (thesis "Equation 3.4.1", unnumbered next to Eq. 3.2).
pub fn benefit_lat(accesses: f64, p: &Platform) -> f64 {
    (accesses * p.slow_lat - accesses * p.dram_lat) * p.cf_lat
}

/// `BFT_data_obj`: the benefit of the object being in DRAM in this phase,
/// with its classification.
pub fn benefit(o: &ObjPhase, phase: &PhaseProfile, p: &Platform) -> (Sensitivity, f64) {
    let s = classify(
        bw_demand(
            o.accesses,
            p.cacheline,
            o.samples,
            phase.samples,
            phase.time,
        ),
        p,
    );
    let b = match s {
        Sensitivity::Bandwidth => benefit_bw(o.accesses, p),
        Sensitivity::Latency => benefit_lat(o.accesses, p),
        Sensitivity::Both => benefit_bw(o.accesses, p).max(benefit_lat(o.accesses, p)),
    };
    (s, b.max(0.0))
}

/// Number of phases just before phase `i` (cyclically: the program
/// iterates) that do not reference `obj` (Fig. 3.5: the copy can start at
/// the beginning of phase `i - d`). 0 when phase `i - 1` uses it; `n - 1`
/// when only phase `i` does.
pub fn free_phases_before(uses: &[bool], i: usize) -> usize {
    let n = uses.len();
    (1..n).take_while(|d| !uses[(i + n - d) % n]).count()
}

/// `mem_comp_overlap` (Fig. 3.5): execution time of the `d` phases before
/// phase `i` in which the copy can run.
pub fn overlap_time(times: &[f64], i: usize, d: usize) -> f64 {
    let n = times.len();
    (1..=d).map(|k| times[(i + n - k) % n]).sum()
}

/// Eq. 3.3: the exposed part of a copy of `size` bytes.
pub fn move_cost(size: f64, copy_bw: f64, overlap: f64) -> f64 {
    (size / copy_bw - overlap).max(0.0)
}

/// Eq. 3.4: the knapsack value of bringing an object into DRAM.
pub fn weight(bft: f64, cost: f64, extra_cost: f64) -> f64 {
    bft - cost - extra_cost
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plat() -> Platform {
        Platform::emulated(10e9, 100e-9, 2.0, 4.0)
    }

    #[test]
    fn eq_3_1_worked_example() {
        // Digest §2.5: a 10 s phase, 1e7 samples, 1e5 of them on the object:
        // 0.1 s of access time. 1e8 lines of 64 B in 0.1 s = 64 GB/s.
        let bw = bw_demand(1e8, 64.0, 1e5, 1e7, 10.0);
        assert!((bw - 64e9).abs() < 1.0);
        assert_eq!(bw_demand(1e8, 64.0, 0.0, 1e7, 10.0), 0.0);
        assert_eq!(bw_demand(1e8, 64.0, 5.0, 0.0, 10.0), 0.0);
    }

    #[test]
    fn classification_thresholds() {
        // §3.4.1: t1 = 80%, t2 = 10% "of the peak NVM bandwidth": this
        // platform's slow tier peaks at 5 GB/s (DRAM 10 GB/s / 2).
        let p = plat();
        assert_eq!(p.bw_peak, p.slow_bw);
        assert_eq!(classify(4e9, &p), Sensitivity::Bandwidth);
        assert_eq!(classify(3.99e9, &p), Sensitivity::Both);
        assert_eq!(classify(0.5e9, &p), Sensitivity::Both);
        assert_eq!(classify(0.49e9, &p), Sensitivity::Latency);
    }

    #[test]
    fn classification_is_against_the_slow_tiers_peak() {
        // 4.5 GB/s saturates the 5 GB/s slow tier (bandwidth-sensitive)
        // although it is under 80% of DRAM's 10 GB/s; 0.6 GB/s is over 10%
        // of the slow tier's peak but under 10% of DRAM's.
        let p = plat();
        assert_eq!(classify(4.5e9, &p), Sensitivity::Bandwidth);
        assert_eq!(classify(0.6e9, &p), Sensitivity::Both);
    }

    #[test]
    fn benefits() {
        let p = plat();
        // 1e6 lines = 64 MB: 12.8 ms at 5 GB/s vs 6.4 ms at 10 GB/s.
        assert!((benefit_bw(1e6, &p) - 6.4e-3).abs() < 1e-12);
        // 1e6 accesses at 400 ns vs 100 ns.
        assert!((benefit_lat(1e6, &p) - 0.3).abs() < 1e-12);
        let ph = PhaseProfile {
            time: 1.0,
            samples: 1000.0,
            objs: Default::default(),
        };
        // Low demand -> latency benefit.
        let (s, b) = benefit(
            &ObjPhase {
                accesses: 1e6,
                samples: 1000.0,
            },
            &ph,
            &p,
        );
        assert_eq!(s, Sensitivity::Latency);
        assert!((b - 0.3).abs() < 1e-12);
        // 64 MB in 1 ms of access time = 64 GB/s: bandwidth.
        let (s, b) = benefit(
            &ObjPhase {
                accesses: 1e6,
                samples: 1.0,
            },
            &ph,
            &p,
        );
        assert_eq!(s, Sensitivity::Bandwidth);
        assert!((b - 6.4e-3).abs() < 1e-12);
        // In between: the max (latency dominates here).
        let (s, b) = benefit(
            &ObjPhase {
                accesses: 1e6,
                samples: 20.0,
            },
            &ph,
            &p,
        );
        assert_eq!((s, b), (Sensitivity::Both, benefit_lat(1e6, &p)));
    }

    #[test]
    fn overlap_window_fig_3_5() {
        // Object used in phases 0 and 3 of 5.
        let uses = [true, false, false, true, false];
        assert_eq!(free_phases_before(&uses, 3), 2); // phases 1, 2
        assert_eq!(free_phases_before(&uses, 0), 1); // phase 4 (wraps)
        assert_eq!(free_phases_before(&[true, true], 1), 0);
        assert_eq!(free_phases_before(&[false, false, true], 2), 2);
        let times = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(overlap_time(&times, 3, 2), 5.0);
        assert_eq!(overlap_time(&times, 0, 1), 5.0);
        assert_eq!(overlap_time(&times, 0, 0), 0.0);
    }

    #[test]
    fn copy_time_per_direction() {
        // Eq. 3.3's size / copy_bw, with the eviction's own bandwidth
        let mut p = plat();
        p.copy_bw = 1e9;
        p.evict_bw = 2e9;
        assert_eq!(p.copy_secs(4e9, Tier::Dram), 4.0);
        assert_eq!(p.copy_secs(4e9, Tier::Slow), 2.0);
        let one = p.with_copy_bw(4e9);
        assert_eq!((one.copy_bw, one.evict_bw), (4e9, 4e9));
    }

    #[test]
    fn helper_has_no_cpu_when_ranks_fill_them() {
        use CopyOverlap::*;
        // 4 ranks on 2 CPUs (this VM's MG at 4 ranks), 2 on 2: exposed
        assert_eq!(CopyOverlap::of_node(4, 2), Exposed);
        assert_eq!(CopyOverlap::of_node(2, 2), Exposed);
        // 1 rank on 2 CPUs: the helper has the other one
        assert_eq!(CopyOverlap::of_node(1, 2), Overlapped);
        assert_eq!(CopyOverlap::of_node(15, 16), Overlapped);
        // a rank bound to one CPU shares it with its helper
        assert_eq!(CopyOverlap::of_node(1, 1), Exposed);
        // outside MPI (0 ranks known) is one rank
        assert_eq!(CopyOverlap::of_node(0, 1), Exposed);
        assert_eq!(CopyOverlap::of_node(0, 2), Overlapped);
        // CPUs unknown: the thesis's assumption
        assert_eq!(CopyOverlap::of_node(64, 0), Overlapped);
        assert_eq!(CopyOverlap::default(), Overlapped);
        assert_eq!((Overlapped.credit(0.5), Exposed.credit(0.5)), (0.5, 0.0));
    }

    #[test]
    fn eq_3_3_and_3_4() {
        assert_eq!(move_cost(10e9, 5e9, 0.5), 1.5);
        assert_eq!(move_cost(10e9, 5e9, 3.0), 0.0);
        assert_eq!(weight(2.0, 0.5, 0.25), 1.25);
    }
}
