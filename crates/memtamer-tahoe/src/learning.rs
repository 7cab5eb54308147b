//! How Tahoe learns a task type's all-slow time T_c_NVM (thesis §4.3.3
//! profiles one representative; docs/notebook/tahoe.md "The representative's
//! placement and the instances' times"): one choice shared by the
//! simulator's Tahoe (`memtamer sim tahoe --model`) and the OMPT tool
//! (`MEMTAMER_TAHOE_MODEL`).

/// Where Tahoe's all-slow time per type T_c_NVM comes from (docs/notebook/tahoe.md
/// "The representative's placement and the instances' times"; `memtamer
/// sim tahoe --model`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ModelLearning {
    /// As the thesis's planner (§4.3.3): the first instance is the
    /// representative wherever its pages are, its time (the fallback
    /// model inverted for the accesses DRAM served) is T_c_NVM for the run.
    Thesis,
    /// The representative is an instance whose pages are all in the slow
    /// tier (up to a bound of instances passed over: two waves of workers), so T_c_NVM is
    /// measured, as the thesis's representative runs "with all data in
    /// NVM"; kept for the run.
    SlowRep,
    /// [`ModelLearning::SlowRep`], and every completed instance's measured
    /// time, inverted through the model at its slow share, refines T_c_NVM
    /// ([`crate::plan::PlanConfig::refine`]). The default.
    #[default]
    Refined,
}

impl ModelLearning {
    /// Parses `thesis`, `slow-rep` or `refined` (the command line).
    pub fn parse(s: &str) -> Option<ModelLearning> {
        match s {
            "thesis" => Some(ModelLearning::Thesis),
            "slow-rep" => Some(ModelLearning::SlowRep),
            "refined" => Some(ModelLearning::Refined),
            _ => None,
        }
    }

    /// The planner's (`rep_skip`, `refine`) for this choice, passing
    /// over at most `skip` instances (two waves of workers: the
    /// simulator's 16, the OMPT tool's `2 * OMP_NUM_THREADS`).
    pub fn planner_knobs(self, skip: usize) -> (usize, bool) {
        match self {
            ModelLearning::Thesis => (0, false),
            ModelLearning::SlowRep => (skip, false),
            ModelLearning::Refined => (skip, true),
        }
    }
}
