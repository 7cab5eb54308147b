//! Placement policies for tiered data objects (issue 20 item 5): pure
//! decisions over a read-only view of where pages are, called by the
//! `phased` workload at phase boundaries (and, for time-driven policies, at
//! every step). The workload turns their [`MoveReq`]s into helper-thread
//! copies (`workload::tiered`).
//!
//! * [`unimem`]: the thesis's Unimem (ch. 3) on `memtamer_core::unimem`,
//!   the planner the MPI runtime uses too, with its global/local ablations.
//! * [`baseline`]: DRAM-only, slow-only, first-touch, static X-Mem-like.
//! * [`hotpage`]: a hot-page policy in the style of Linux tiering / TPP.
//!
//! Import direction: this module imports `config` and `memtamer_core`
//! only; `workload` imports it.

pub mod baseline;
pub mod hotpage;
pub mod oracle;
pub mod unimem;

use crate::config::phased::{ModelSpec, PhasedProgram, PlacementSpec};
use crate::config::Pattern;
pub use memtamer_core::unimem::Tier;
use std::fmt::Debug;

/// Placement granule: one 4 KiB page (what `move_pages` moves).
pub const PAGE: u64 = 4096;

/// Bytes of one cache line (one main-memory access).
pub const LINE_BYTES: u64 = 64;

/// A migration request: pages `first_page .. first_page + pages` of `obj`
/// to `to` (clipped to the object; pages already there are skipped).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MoveReq {
    /// Object index.
    pub obj: usize,
    /// First page.
    pub first_page: u64,
    /// Number of pages (`u64::MAX`: to the end of the object).
    pub pages: u64,
    /// Destination tier.
    pub to: Tier,
}

impl MoveReq {
    /// The whole object to `to` (Unimem moves objects, §3.5).
    pub fn whole(obj: usize, to: Tier) -> MoveReq {
        MoveReq {
            obj,
            first_page: 0,
            pages: u64::MAX,
            to,
        }
    }
}

/// What a policy may see of the placement (implemented by the workload's
/// `TierSpace`).
pub trait SpaceView {
    /// DRAM capacity of this rank, bytes.
    fn capacity(&self) -> u64;
    /// Bytes in DRAM now (promotions in flight included).
    fn dram_bytes(&self) -> u64;
    /// No move queued or in flight.
    fn idle(&self) -> bool;
    /// Pages of `obj`.
    fn page_count(&self, obj: usize) -> u64;
    /// Tier of page `page` of `obj`.
    fn page_tier(&self, obj: usize, page: u64) -> Tier;
    /// No move of `obj` queued or in flight.
    fn settled(&self, obj: usize) -> bool;
}

/// Whole object `obj` is in DRAM.
pub fn all_in_dram(v: &dyn SpaceView, obj: usize) -> bool {
    (0..v.page_count(obj)).all(|p| v.page_tier(obj, p) == Tier::Dram)
}

/// What one phase did, as the program measured it (ground truth: a
/// sampling rate of one, every LLC miss).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PhaseObs {
    /// Phase time from its start (waits included) to the end of its MPI call, s.
    pub time: f64,
    /// Of it, the time waited at the phase's start for moves to finish, s.
    pub wait: f64,
    /// Lines (main-memory accesses) per object.
    pub lines: Vec<u64>,
}

/// What a phase start asks of the program.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PhaseStart {
    /// Moves to queue now, in order.
    pub moves: Vec<MoveReq>,
    /// Objects whose moves must be finished before the phase runs.
    pub wait: Vec<usize>,
    /// Leading DRAM pages per object, set now without copying and without
    /// time (only the hindsight bound [`oracle::Oracle`] asks for it).
    pub place: Option<Vec<u64>>,
}

/// A placement policy (one per rank).
pub trait PhasePolicy: Send + Debug {
    /// Leading pages of each object that start in DRAM (0: all slow).
    fn initial(&mut self) -> Vec<u64>;
    /// Start of phase `phase` of iteration `iter`.
    fn phase_start(&mut self, iter: u32, phase: usize, v: &dyn SpaceView) -> PhaseStart;
    /// End of phase `phase` of iteration `iter`.
    fn phase_end(&mut self, iter: u32, phase: usize, obs: &PhaseObs, v: &dyn SpaceView);
    /// Called at every step with simulated time (s) and per-object,
    /// per-page line counts since the policy last cleared them
    /// (time-driven policies); returns moves to queue.
    fn tick(&mut self, _now: f64, _heat: &mut [Vec<u32>], _v: &dyn SpaceView) -> Vec<MoveReq> {
        Vec::new()
    }
    /// Whether the program must count per-page heat for [`Self::tick`].
    fn wants_heat(&self) -> bool {
        false
    }
    /// One line on what was decided (for reports).
    fn summary(&self) -> String {
        String::new()
    }
}

/// Object sizes rounded up to whole pages.
pub fn page_sizes(prog: &PhasedProgram) -> Vec<u64> {
    prog.objects
        .iter()
        .map(|o| o.bytes.div_ceil(PAGE) * PAGE)
        .collect()
}

/// Lines per object per phase of one iteration, with the pattern of the
/// last access naming the object (a program rarely mixes patterns on one
/// object in one phase).
pub fn static_lines(prog: &PhasedProgram) -> Vec<Vec<(u64, Pattern)>> {
    prog.phases
        .iter()
        .map(|ph| {
            let mut v = vec![(0u64, Pattern::Seq); prog.objects.len()];
            for a in &ph.access {
                if let Some(o) = prog.object_index(&a.object) {
                    v[o].0 += a.bytes.div_ceil(LINE_BYTES);
                    v[o].1 = a.pattern;
                }
            }
            v
        })
        .collect()
}

/// Builds the policy `spec` names for one rank of `prog` with `capacity`
/// bytes of DRAM.
pub fn build(spec: &PlacementSpec, prog: &PhasedProgram, capacity: u64) -> Box<dyn PhasePolicy> {
    match spec {
        PlacementSpec::DramOnly => Box::new(baseline::Fixed::all(prog, Tier::Dram)),
        PlacementSpec::SlowOnly => Box::new(baseline::Fixed::all(prog, Tier::Slow)),
        PlacementSpec::FirstTouch => Box::new(baseline::Fixed::first_touch(prog, capacity)),
        PlacementSpec::Eager => Box::new(baseline::Eager::new(prog, capacity)),
        PlacementSpec::EagerEvict => Box::new(baseline::Eager::evicting(prog, capacity)),
        // X-Mem has its own offline model: Unimem's constant factors are
        // not its (the baseline stays what it was before calibration)
        PlacementSpec::Static { model } => Box::new(baseline::Fixed::xmem(
            prog,
            capacity,
            &unimem::platform(&ModelSpec {
                cf_bw: 1.0,
                cf_lat: 1.0,
                ..model.clone()
            }),
        )),
        PlacementSpec::Unimem {
            model,
            search,
            initial_placement,
            profile_iterations,
        } => Box::new(
            unimem::UnimemPolicy::new(
                prog,
                capacity,
                unimem::platform(model),
                *search,
                *initial_placement,
                *profile_iterations,
            )
            .with_measured_exposure(model.exposure == crate::config::phased::ExposureSpec::Measured)
            .with_fill(model.fill == crate::config::phased::FillSpec::Remainder),
        ),
        PlacementSpec::Pinned { dram } => Box::new(baseline::Fixed::pinned(prog, dram)),
        PlacementSpec::Oracle { pages, free_moves } => {
            let names = prog.objects.iter().map(|o| o.name.clone()).collect();
            Box::new(oracle::Oracle::new(pages.clone(), *free_moves, names))
        }
        PlacementSpec::HotPage {
            scan_us,
            max_pages_per_scan,
        } => Box::new(hotpage::HotPage::new(
            prog,
            capacity,
            scan_us * 1e-6,
            *max_pages_per_scan,
        )),
    }
}

#[cfg(test)]
pub(crate) mod test_support {
    use super::*;
    use crate::config::phased::{AccessSpec, ObjectSpec, PhaseSpec};

    /// A view over explicit page tiers.
    #[derive(Debug, Default)]
    pub struct View {
        pub pages: Vec<Vec<Tier>>,
        pub capacity: u64,
        pub busy: bool,
    }

    impl SpaceView for View {
        fn capacity(&self) -> u64 {
            self.capacity
        }
        fn dram_bytes(&self) -> u64 {
            self.pages
                .iter()
                .flatten()
                .filter(|&&t| t == Tier::Dram)
                .count() as u64
                * PAGE
        }
        fn idle(&self) -> bool {
            !self.busy
        }
        fn page_count(&self, obj: usize) -> u64 {
            self.pages[obj].len() as u64
        }
        fn page_tier(&self, obj: usize, page: u64) -> Tier {
            self.pages[obj][page as usize]
        }
        fn settled(&self, _obj: usize) -> bool {
            !self.busy
        }
    }

    /// A platform model with round numbers (10 / 5 GB/s, 100 / 400 ns),
    /// so a test's expected benefits can be worked out by hand.
    pub fn model() -> ModelSpec {
        ModelSpec {
            dram_bw: 10e9,
            slow_bw: 5e9,
            dram_lat: 100e-9,
            slow_lat: 400e-9,
            copy_bw: 5e9,
            evict_bw: None,
            cf_bw: 1.0,
            cf_lat: 1.0,
            exposure: Default::default(),
            fill: Default::default(),
        }
    }

    /// A program: objects of `sizes` pages; each phase lists (obj, lines, rand).
    pub fn program(sizes: &[u64], phases: &[&[(usize, u64, bool)]]) -> PhasedProgram {
        PhasedProgram {
            objects: sizes
                .iter()
                .enumerate()
                .map(|(i, s)| ObjectSpec {
                    name: format!("o{i}"),
                    bytes: s * PAGE,
                })
                .collect(),
            phases: phases
                .iter()
                .enumerate()
                .map(|(i, acc)| PhaseSpec {
                    name: format!("p{i}"),
                    compute_ns: 0.0,
                    comm_ns: 0.0,
                    access: acc
                        .iter()
                        .map(|&(o, lines, rand)| AccessSpec {
                            object: format!("o{o}"),
                            bytes: lines * LINE_BYTES,
                            pattern: if rand { Pattern::Rand } else { Pattern::Seq },
                            write_fraction: 0.0,
                            dependent: false,
                        })
                        .collect(),
                })
                .collect(),
            iterations: 10,
        }
    }
}
