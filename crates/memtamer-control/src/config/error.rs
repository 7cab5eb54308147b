//! Errors of the daemon config, and the key paths they name.

use std::fmt;

// ---------------------------------------------------------------------------
// Errors

/// Which stage rejected the config; lets callers and tests tell a typo in the
/// TOML from a wrong value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Not valid TOML.
    Syntax,
    /// Valid TOML but wrong shape: unknown key, missing key, wrong type.
    Schema,
    /// Right shape, unacceptable value.
    Value,
}

/// Why a config could not be loaded. Every error about the content names the
/// file, line, column and dotted key path so the operator can jump to it.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("{file}: cannot read config: {source}")]
    Read {
        /// The path as given.
        file: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The content is wrong.
    #[error("{file}:{line}:{column}: {key}: {message}")]
    Invalid {
        /// File name as given to [`DaemonConfig::parse`].
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based column, in characters.
        column: usize,
        /// Dotted key path, e.g. `job[1].class`.
        key: String,
        /// What is wrong.
        message: String,
        /// Which stage found it.
        kind: ErrorKind,
    },
}

impl ConfigError {
    /// The dotted key path of a content error (`None` for read errors).
    pub fn key(&self) -> Option<&str> {
        match self {
            ConfigError::Invalid { key, .. } => Some(key),
            ConfigError::Read { .. } => None,
        }
    }
    /// `(line, column)` of a content error.
    pub fn position(&self) -> Option<(usize, usize)> {
        match self {
            ConfigError::Invalid { line, column, .. } => Some((*line, *column)),
            ConfigError::Read { .. } => None,
        }
    }
    /// The stage that rejected a content error.
    pub fn kind(&self) -> Option<ErrorKind> {
        match self {
            ConfigError::Invalid { kind, .. } => Some(*kind),
            ConfigError::Read { .. } => None,
        }
    }
}

/// One step of a [`KeyPath`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    /// A table key.
    Key(String),
    /// An array index.
    Index(usize),
}

/// A dotted key path such as `job[1].match.comm`, used both to name the key
/// in an error and to find its position in the text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyPath(pub Vec<Segment>);

impl KeyPath {
    /// This path extended by a key.
    pub fn key(&self, k: &str) -> KeyPath {
        let mut p = self.clone();
        p.0.push(Segment::Key(k.to_string()));
        p
    }
    /// This path extended by an array index.
    pub fn index(&self, i: usize) -> KeyPath {
        let mut p = self.clone();
        p.0.push(Segment::Index(i));
        p
    }
}

impl fmt::Display for KeyPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("(top level)");
        }
        for (i, s) in self.0.iter().enumerate() {
            match s {
                Segment::Key(k) if i == 0 => f.write_str(k)?,
                Segment::Key(k) => write!(f, ".{k}")?,
                Segment::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

pub(super) fn root() -> KeyPath {
    KeyPath::default()
}
