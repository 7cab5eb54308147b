//! What a command can end in, and the exit code of each: 0 it worked, 1 it ran
//! but a check it makes FAILED, 2 the command line is wrong (clap's own code),
//! 3 it could not run (a file, the OS, a library). Scripts branch on these,
//! so each class has one code and `tests/exit_codes.rs` pins them.

use std::path::PathBuf;
use std::process::ExitCode;

/// Exit code of a command that ran and whose checks held.
pub const EXIT_OK: u8 = 0;
/// Exit code of a command that ran but a check it makes failed (a FAIL line of
/// `sim validate`, changes a restore could not undo).
pub const EXIT_FAILED: u8 = 1;
/// Exit code of a usage error: clap's code for a bad command line, also used
/// for arguments clap parses but that make no sense (`--set` without `=`).
pub const EXIT_USAGE: u8 = 2;
/// Exit code of a runtime error: the command could not do its work.
pub const EXIT_RUNTIME: u8 = 3;

/// How a command that returned normally ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Everything it checked held.
    Success,
    /// It ran to the end but a check failed (the output says which).
    CheckFailed,
    /// Pass on a child's exit status unchanged (`gate exec`).
    Child(u8),
}

impl Outcome {
    /// Success when `ok`, else a failed check.
    pub fn check(ok: bool) -> Outcome {
        if ok {
            Outcome::Success
        } else {
            Outcome::CheckFailed
        }
    }

    /// The process exit status.
    pub fn code(self) -> u8 {
        match self {
            Outcome::Success => EXIT_OK,
            Outcome::CheckFailed => EXIT_FAILED,
            Outcome::Child(c) => c,
        }
    }
}

impl From<Outcome> for ExitCode {
    fn from(o: Outcome) -> ExitCode {
        ExitCode::from(o.code())
    }
}

/// Everything that stops a command, with what it was doing. The library
/// errors already name their file, key or path; the CLI adds the step.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// An argument clap accepted but that cannot be used.
    #[error("{arg}: expected {expected}")]
    Usage {
        /// The argument as given (with its flag).
        arg: String,
        /// What would be accepted.
        expected: String,
    },
    /// `--format F` on a command that cannot print F.
    #[error("{command} cannot print --format {format}; it prints: {supported}")]
    FormatUnsupported {
        /// The command, as typed (`memtamer top`).
        command: String,
        /// The refused format.
        format: &'static str,
        /// The formats it prints.
        supported: String,
    },
    /// The simulator rejected a scenario, platform or override, or failed to run it.
    #[error(transparent)]
    Sim(#[from] memtamer_sim::SimError),
    /// The gate library failed (opening a gate file, a setting, host calibration).
    #[error("{context}: {source}")]
    Gate {
        /// What the CLI was doing.
        context: String,
        /// The library's error (boxed: it is the largest of the library errors).
        source: Box<memtamer_gate::GateError>,
    },
    /// No gate file of that name (gates are only created by their users).
    #[error("no gate named {name:?}: {} does not exist (it is created by the first PA-thread that uses it)", path.display())]
    NoGate {
        /// The gate name.
        name: String,
        /// The file looked for.
        path: PathBuf,
    },
    /// `gate remove` while live threads still use the gate.
    #[error("{live} live threads use gate {name:?}; stop them first")]
    GateBusy {
        /// The gate name.
        name: String,
        /// Registered live threads.
        live: usize,
    },
    /// The libpmem shim is not installed beside the binary.
    #[error("libmemtamer_pmem_shim.so is not next to {} (build it: cargo build --release -p memtamer-pmem-shim)", exe.display())]
    ShimMissing {
        /// This executable.
        exe: PathBuf,
    },
    /// The daemon config could not be loaded (the error names file, line and key).
    #[error(transparent)]
    Config(#[from] memtamer_control::config::ConfigError),
    /// The daemon could not start or its loop failed.
    #[error("daemon: {0}")]
    Daemon(#[from] memtamer_control::daemon::DaemonError),
    /// The daemon's control socket could not be asked.
    #[error("status: {0}")]
    Socket(#[from] memtamer_control::socket::SocketError),
    /// Restoring a journal, or detaching the guard, failed.
    #[error("{context}: {source}")]
    Actuate {
        /// What the CLI was doing.
        context: String,
        /// The actuation library's error.
        source: memtamer_actuate::Error,
    },
    /// A sensing step failed (its library reports errors as text).
    #[error("{context}: {message}")]
    Sense {
        /// What the CLI was doing.
        context: &'static str,
        /// The library's message.
        message: String,
    },
    /// A file or process operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done, with the path or program.
        context: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// A result could not be serialized.
    #[error("cannot write {what} as JSON: {source}")]
    Json {
        /// What was being written.
        what: &'static str,
        /// The serializer's error.
        source: serde_json::Error,
    },
    /// A calibrated model could not be serialized.
    #[error("cannot write the model as TOML: {0}")]
    Toml(#[from] toml::ser::Error),
    /// A tier status directory or file cannot be shown (each error names its file).
    #[error("tier status: {0}")]
    TierStatus(#[from] memtamer_tier::status::StatusError),
    /// The tier runtime refused or failed a step (e.g. its calibration).
    #[error("tier {context}: {source}")]
    Tier {
        /// What was being done.
        context: &'static str,
        /// The runtime's error.
        source: memtamer_tier::TierError,
    },
    /// A benchmark could not take its measurement.
    #[error("bench: {0}")]
    Bench(String),
}

impl CliError {
    /// The exit code of this error's class: usage errors 2, the rest 3.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage { .. } | CliError::FormatUnsupported { .. } => EXIT_USAGE,
            // a name or override typed on the command line
            CliError::Sim(
                memtamer_sim::SimError::Unknown { .. }
                | memtamer_sim::SimError::Override { .. }
                | memtamer_sim::SimError::Argument { .. },
            ) => EXIT_USAGE,
            _ => EXIT_RUNTIME,
        }
    }

    /// An I/O error with what was being done.
    pub fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> CliError {
        let context = context.into();
        move |source| CliError::Io { context, source }
    }

    /// A gate library error with what was being done.
    pub fn gate(context: impl Into<String>) -> impl FnOnce(memtamer_gate::GateError) -> CliError {
        let context = context.into();
        move |source| CliError::Gate {
            context,
            source: Box::new(source),
        }
    }

    /// A JSON serialization error naming what was written.
    pub fn json(what: &'static str) -> impl FnOnce(serde_json::Error) -> CliError {
        move |source| CliError::Json { what, source }
    }

    /// A sensing library error (text) with what was being done.
    pub fn sense(context: &'static str) -> impl FnOnce(String) -> CliError {
        move |message| CliError::Sense { context, message }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_have_distinct_codes() {
        let usage = CliError::Usage {
            arg: "--set x".into(),
            expected: "KEY=VALUE".into(),
        };
        let unknown = CliError::Sim(memtamer_sim::SimError::Unknown {
            what: "scenario",
            name: "nope".into(),
            known: "demo".into(),
        });
        let runtime = CliError::io("cannot read /x")(std::io::Error::other("boom"));
        assert_eq!(usage.exit_code(), 2);
        assert_eq!(unknown.exit_code(), 2);
        assert_eq!(runtime.exit_code(), 3);
        assert_eq!(Outcome::Success.code(), 0);
        assert_eq!(Outcome::CheckFailed.code(), 1);
        assert_eq!(Outcome::check(false), Outcome::CheckFailed);
        assert_eq!(Outcome::Child(7).code(), 7);
    }

    #[test]
    fn messages_keep_their_context() {
        let e = CliError::io("cannot write report/index.html")(std::io::Error::other("disk full"));
        assert_eq!(e.to_string(), "cannot write report/index.html: disk full");
        let e = CliError::Usage {
            arg: "--set abc".into(),
            expected: "KEY=VALUE".into(),
        };
        assert_eq!(e.to_string(), "--set abc: expected KEY=VALUE");
    }
}
