//! Typed errors of the Tahoe core.

/// What can go wrong in the pure core (bad input, untrainable data).
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum TahoeError {
    /// A model was asked to fit on too few or degenerate samples.
    #[error("cannot fit {model}: {why}")]
    Fit {
        /// Which model.
        model: &'static str,
        /// Why (e.g. "needs >= 3 samples, got 1").
        why: String,
    },
    /// A profile refers to an argument the task does not have.
    #[error("profile of type {ty} names argument {arg}, task has {have}")]
    BadArgument {
        /// Task type, printed.
        ty: String,
        /// Argument index in the profile.
        arg: usize,
        /// Arguments of the task.
        have: usize,
    },
    /// A recording line could not be parsed.
    #[error("recording line {line}: {why}")]
    Record {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        why: String,
    },
    /// A counter-model file could not be parsed.
    #[error("counter model line {line}: {why}")]
    ModelFile {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        why: String,
    },
    /// Page size zero or not a power of two.
    #[error("page size {0} is not a power of two")]
    PageSize(usize),
}
