//! The pure Unimem placement core (thesis ch. 3; digest
//! `thesis-unimem-tahoe.md` §2): no OS calls, so every decision is unit
//! tested and the same code drives the simulator (`memtamer-sim`'s tiered workloads) and
//! the MPI runtime (`memtamer-tier`, which re-exports this module).
//!
//! * [`model`]: the sensitivity models (Eq. 3.1, 3.2, the unnumbered latency
//!   benefit, Eq. 3.3 with the Fig. 3.5 overlap window, Eq. 3.4).
//! * [`calibrate`]: fitting the constant factors `CF_bw`, `CF_lat` from
//!   STREAM-like and pointer-chasing runs timed in each tier (§3.4.1).
//! * [`exposure`]: the share of the modelled slow-tier cost each phase
//!   pays, measured from phase times under two placements.
//! * [`exposure_obj`]: which per-object exposures the placements a run
//!   measured identify (least squares, one unknown per object that moved).
//! * [`knapsack`]: 0/1 knapsack by dynamic programming.
//! * [`fill`]: the DRAM a plan of whole units leaves free, filled with the
//!   leading part of one more regular unit (§3.4.2's partition, one cut).
//! * [`plan`]: phase-local and cross-phase global search, keeping the
//!   better; initial placement; the 10% drift check (§3.4.2).
//! * [`schedule`]: the proactive migration schedule that issues each move
//!   as early as the object's and its victims' last uses allow.
//! * [`fifo`]: the helper thread's FIFO played over one iteration: the
//!   waits a schedule's copies cause, promotions and evictions apart.
//! * [`noise`]: the control-chart reading of phase-time noise (the drift
//!   monitor's and the regression guard's).
//! * [`regress`]: the measured regression guard: an adopted plan against
//!   the placement it replaced, keep or revert, and the plans rejected.
//! * [`transition`]: the one-time moves from the placement at a decision
//!   to the plan's, timed ahead of their use like the schedule's.

pub mod calibrate;
pub mod exposure;
pub mod exposure_obj;
pub mod fifo;
pub mod fill;
pub mod knapsack;
pub mod model;
pub mod noise;
pub mod plan;
pub mod profile_file;
pub mod regress;
pub mod schedule;
pub mod transition;

#[cfg(test)]
pub(crate) use plan::tests as plan_tests_support;

/// The two memory tiers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Tier {
    /// Fast, small: DRAM.
    Dram,
    /// Slow, large: NVM / CXL / emulated.
    Slow,
}

impl Tier {
    /// Lower-case name for logs and the CLI.
    pub fn name(self) -> &'static str {
        match self {
            Tier::Dram => "dram",
            Tier::Slow => "slow",
        }
    }
}

/// Index of an object in the problem's object table.
pub type ObjId = usize;
