//! Typed errors of the simulator: every message names the file, and where
//! possible the line and the key, so a user can fix the input at once.

use thiserror::Error;

/// Errors from loading, validating or running a scenario.
#[derive(Debug, Error)]
pub enum SimError {
    /// The file is not valid TOML or does not fit the schema (unknown key, wrong type).
    #[error("{file}:{line}:{column}: {message}")]
    Parse {
        /// File name (or `<builtin:NAME>`).
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong, including the key where the parser knows it.
        message: String,
    },
    /// A value parsed but is out of range or inconsistent.
    #[error("{file}:{line}: key `{key}`: {message}")]
    Invalid {
        /// File name.
        file: String,
        /// 1-based line of the key (0 when unknown).
        line: usize,
        /// Dotted key path.
        key: String,
        /// Why the value is rejected.
        message: String,
    },
    /// A name (platform, scenario, job, workload) that does not exist.
    #[error("unknown {what} `{name}`; known: {known}")]
    Unknown {
        /// Kind of thing.
        what: &'static str,
        /// The name asked for.
        name: String,
        /// The names that exist.
        known: String,
    },
    /// A `--set`/`--sweep` argument that cannot be applied.
    #[error("override `{arg}`: {message}")]
    Override {
        /// The argument as given.
        arg: String,
        /// Why it cannot be applied.
        message: String,
    },
    /// A command-line `--set KEY=VALUE` or `--sweep` point that is refused
    /// (out of range, an unknown platform key): `arg` names it as typed
    /// (`--set duration_ms=-1`, `--sweep point duration_ms=nan`), so the
    /// message points at the command line, not at `<overrides>:0` or at the
    /// platform file's line (hostile-input round, docs/bad-input.md).
    #[error("{arg}: {message}")]
    Argument {
        /// The flag and its value(s).
        arg: String,
        /// Why it is refused.
        message: String,
    },
    /// A policy name the registry refuses (memtamer_core::registry).
    #[error(transparent)]
    Policy(#[from] memtamer_core::registry::RegistryError),
    /// A calibrated model file that cannot be loaded.
    #[error(transparent)]
    Model(#[from] memtamer_core::registry::ModelLoadError),
    /// Reading a file failed.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The path.
        path: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// Finds the 1-based line where `key` (last path segment) is assigned in `text`;
/// 0 when it cannot be found. Used to point validation errors at a line.
pub fn line_of_key(text: &str, key_path: &str) -> usize {
    let last = key_path.rsplit('.').next().unwrap_or(key_path);
    let last = last.split('[').next().unwrap_or(last);
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if let Some(rest) = t.strip_prefix(last) {
            if rest.trim_start().starts_with('=') {
                return i + 1;
            }
        }
    }
    0
}

/// Converts a byte offset in `text` to a 1-based (line, column).
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rfind('\n').map_or(offset, |p| offset - p - 1) + 1;
    (line, column)
}
