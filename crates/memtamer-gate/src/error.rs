//! Errors of the gate library.

use std::path::PathBuf;

/// Everything that can go wrong opening or configuring a gate.
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    /// The shared file could not be created, opened or mapped.
    #[error("gate file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The shared file was made by an incompatible memtamer version.
    #[error("gate file {path} is incompatible ({found}); remove it when no process uses it (memtamer gate remove)")]
    Incompatible {
        /// The file.
        path: PathBuf,
        /// What was found.
        found: String,
    },
    /// The shared file's fixed header words fail validation.
    #[error("gate file {path} is corrupt ({what}); check it with `memtamer gate check`, rebuild it with `memtamer gate repair` (or remove it when no process uses it)")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What failed.
        what: String,
    },
    /// The shared file is not one this process may trust.
    #[error("gate file {path} is not trusted: {why}")]
    Untrusted {
        /// The file.
        path: PathBuf,
        /// Why.
        why: String,
    },
    /// Every slot is held by a live thread.
    #[error("gate file {path}: all {slots} thread slots are in use by live threads")]
    SlotsFull {
        /// The file.
        path: PathBuf,
        /// Number of slots.
        slots: usize,
    },
    /// An environment variable or setting has a bad value.
    #[error("{key} = {value:?}: {expected}")]
    BadSetting {
        /// The variable or key.
        key: String,
        /// Its value.
        value: String,
        /// What would be accepted.
        expected: String,
    },
    /// A calibrated model file could not be used.
    #[error("{key}: model file {source}")]
    Model {
        /// The variable or key that named the file.
        key: String,
        /// What is wrong, with the file and line.
        source: memtamer_core::registry::ModelLoadError,
    },
}
