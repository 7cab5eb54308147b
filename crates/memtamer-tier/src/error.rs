//! Typed errors of the tiering runtime: every OS failure carries the call and
//! the object it was made for, so a user sees *which* allocation failed and why.

use crate::Tier;

/// Everything that can go wrong in the tiering layer.
#[derive(Debug, thiserror::Error)]
pub enum TierError {
    /// A system call failed; `what` names the call and its object.
    #[error("{what}: {source}")]
    Os {
        /// The call and the object it was made for.
        what: String,
        /// The errno the kernel returned.
        #[source]
        source: std::io::Error,
    },
    /// `free`/`migrate` of an address the registry never handed out.
    #[error("unknown object address {addr:#x} (not returned by mt_tier_malloc, or already freed)")]
    UnknownObject {
        /// The address passed in.
        addr: usize,
    },
    /// A zero-byte allocation (it would alias the next object's address).
    #[error("object '{name}': size 0 is not allowed")]
    ZeroSize {
        /// The object's name.
        name: String,
    },
    /// The object does not fit in the DRAM budget left.
    #[error(
        "object '{name}' ({bytes} B) does not fit in DRAM: {free} B of the {budget} B budget free"
    )]
    DramFull {
        /// The object's name.
        name: String,
        /// Its size (page-rounded).
        bytes: usize,
        /// DRAM budget bytes still free.
        free: usize,
        /// The whole budget.
        budget: usize,
    },
    /// A DRAM budget that is 0 or larger than the machine's memory.
    #[error("DRAM budget {budget} B is invalid: {why}")]
    BadBudget {
        /// The budget asked for.
        budget: usize,
        /// Why it is refused.
        why: String,
    },
    /// More live objects than the fault handler's lock-free table holds.
    #[error("too many live objects: the fault table holds {max}")]
    TooManyObjects {
        /// The table's capacity.
        max: usize,
    },
    /// Migration to the tier the object is already in.
    #[error("object '{name}' is already in {tier:?}")]
    AlreadyThere {
        /// The object's name.
        name: String,
        /// Its tier.
        tier: Tier,
    },
    /// The helper thread is gone (it panicked or was shut down).
    #[error("migration helper thread is not running")]
    HelperGone,
    /// A configuration value from the environment could not be parsed.
    #[error("environment variable {key}={value:?}: {why}")]
    BadEnv {
        /// The variable.
        key: &'static str,
        /// Its value.
        value: String,
        /// What is wrong with it.
        why: String,
    },
    /// The constant factors could not be fitted from the calibration runs.
    #[error("calibration: {0}")]
    Calibration(#[from] crate::unimem::calibrate::CalError),
}

impl TierError {
    /// The last OS error, labelled with the call that produced it.
    pub(crate) fn last_os(what: impl Into<String>) -> Self {
        TierError::Os {
            what: what.into(),
            source: std::io::Error::last_os_error(),
        }
    }
}
