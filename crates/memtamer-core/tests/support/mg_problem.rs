//! The decision problems MG's driver builds at 4 ranks on this 2-CPU host,
//! from profiles recorded by the real runtime (`MEMTAMER_TIER_PROFILE_OUT`
//! with `mt_mg 128 16`, docs/notebook/unimem.md, "A decision's CPU"),
//! shared by the golden-plan test and the decision bench. The problem is
//! built as `memtamer-tier`'s `Driver::start_decision` builds it: the
//! profile's page-rounded sizes and phases (a phase's samples = its
//! objects' faults, as the fault sampler counts them), the 16 MiB node
//! budget over 4 ranks, `MEMTAMER_ITERS`' default 100, and the default
//! platform (10 GB/s, 100 ns; slow tier 1/2 bandwidth, 4x latency).

#![allow(dead_code)]

use memtamer_core::unimem::model::{CopyOverlap, ObjPhase, PhaseProfile, Platform};
use memtamer_core::unimem::plan::{initial_placement_max_refs, Problem};
use std::collections::BTreeSet;

/// The recorded profiles: (name, text).
pub const PROFILES: [(&str, &str); 2] = [
    (
        "mg128-4ranks-rank1-iter1",
        include_str!("../fixtures/mg128-4ranks-rank1-iter1.profile"),
    ),
    (
        "mg128-4ranks-rank0-iter12",
        include_str!("../fixtures/mg128-4ranks-rank0-iter12.profile"),
    ),
];

/// Object sizes and phases of a `memtamer-phase-profile v2` text.
pub fn parse(text: &str) -> (Vec<u64>, Vec<PhaseProfile>) {
    let mut names: Vec<String> = Vec::new();
    let mut sizes = Vec::new();
    let mut phases: Vec<PhaseProfile> = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.first().copied() {
            Some("object") => {
                names.push(f[1].to_string());
                sizes.push(f[2].parse().expect("object size"));
            }
            Some("phase") => phases.push(PhaseProfile {
                time: f[2].parse::<f64>().expect("phase time") * 1e-9,
                samples: 0.0,
                objs: Default::default(),
            }),
            Some("access") => {
                let o = names.iter().position(|n| n == f[1]).expect("known object");
                let samples: f64 = f[3].parse().expect("samples");
                let ph = phases.last_mut().expect("access after a phase");
                ph.samples += samples;
                ph.objs.insert(
                    o,
                    ObjPhase {
                        accesses: f[2].parse().expect("lines"),
                        samples,
                    },
                );
            }
            _ => {}
        }
    }
    (sizes, phases)
}

/// The driver's default platform (`memtamer_tier::platform::default_platform`).
pub fn platform(copy_overlap: CopyOverlap) -> Platform {
    Platform {
        copy_overlap,
        ..Platform::emulated(10e9, 100e-9, 2.0, 4.0)
    }
}

/// One decision to make: a name, the problem and the placement it starts from.
pub struct Case {
    /// Profile, platform and start, for the reports.
    pub name: String,
    /// The problem.
    pub problem: Problem,
    /// Objects in DRAM when the decision starts.
    pub start: BTreeSet<usize>,
}

/// Every recorded profile under three platforms (copies exposed at the
/// configured bandwidth, the 4-rank first decision; exposed at bandwidths
/// measured on this host, the recalibration's; overlapped, 1 rank's) and
/// two starts (nothing in DRAM; the initial placement by references).
pub fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    for (pname, text) in PROFILES {
        let (sizes, phases) = parse(text);
        let platforms = [
            ("exposed", platform(CopyOverlap::Exposed)),
            ("exposed-measured", {
                let mut p = platform(CopyOverlap::Exposed);
                p.copy_bw = 0.6e9;
                p.evict_bw = 1.2e9;
                p
            }),
            ("overlapped", platform(CopyOverlap::Overlapped)),
        ];
        let capacity = (16u64 << 20) / 4;
        let refs: Vec<f64> = (0..sizes.len())
            .map(|o| {
                phases
                    .iter()
                    .filter_map(|p| p.objs.get(&o))
                    .map(|x| x.accesses)
                    .sum()
            })
            .collect();
        let starts = [
            ("empty", BTreeSet::new()),
            ("refs", initial_placement_max_refs(&sizes, &refs, capacity)),
        ];
        for (plname, pl) in &platforms {
            for (sname, start) in &starts {
                out.push(Case {
                    name: format!("{pname}/{plname}/{sname}"),
                    problem: Problem {
                        sizes: sizes.clone(),
                        phases: phases.clone(),
                        platform: pl.clone(),
                        capacity,
                        iterations: 100.0,
                        exposure: Vec::new(),
                    },
                    start: start.clone(),
                });
            }
        }
    }
    out
}
