//! The daemon's TOML configuration (`memtamer run --config FILE`).
//!
//! Parsing happens in three steps, each of which reports errors as
//! `FILE:LINE:COLUMN: KEY.PATH: why`:
//!
//! 1. the text is read into a span-carrying tree ([`KeyPath`] → byte range),
//!    which only fails on TOML syntax errors;
//! 2. it is deserialized with serde into raw structs that deny unknown keys
//!    at every level (type errors and unknown keys are located through the
//!    tree);
//! 3. values are validated and converted into [`DaemonConfig`]; each check
//!    names the [`KeyPath`] it concerns and the tree gives its location.
//!
//! Every default is listed in the doc comments of the fields below and in
//! the `DEFAULT_*` constants.

mod error;
mod raw;
mod span;
mod types;
mod validate;

pub use crate::select::JobMatch;
pub use error::{ConfigError, ErrorKind, KeyPath, Segment};
pub use types::*;

use error::root;
use raw::RawConfig;
use span::{locate, position_of, textual_path, Node};
use std::path::Path;
use validate::validate;

impl DaemonConfig {
    /// Reads and parses the file at `path`; errors name it as given.
    pub fn load(path: impl AsRef<Path>) -> Result<DaemonConfig, ConfigError> {
        let path = path.as_ref();
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            file: file.clone(),
            source,
        })?;
        DaemonConfig::parse(&text, &file)
    }

    /// Parses and validates config text; `file_name` is only used in errors.
    pub fn parse(text: &str, file_name: &str) -> Result<DaemonConfig, ConfigError> {
        let ctx = Ctx { text, file_name };
        let tree = match toml::from_str::<Node>(text) {
            Ok(t) => t.filled(),
            Err(e) => {
                let pos = e.span().map_or(0, |s| s.start);
                let key = textual_path(text, pos);
                return Err(ctx.error_at(pos, key, clean_message(e.message()), ErrorKind::Syntax));
            }
        };
        let locs = tree.flatten();
        let raw = toml::from_str::<RawConfig>(text).map_err(|e| {
            let message = clean_message(e.message());
            let (pos, mut path) = match e.span() {
                Some(span) => (span.start, locate(&locs, &span)),
                None => (0, root()),
            };
            if let Some(missing) = quoted_after(&message, "missing field") {
                path = path.key(&missing);
            }
            ctx.error_at(pos, path.to_string(), message, ErrorKind::Schema)
        })?;
        validate(raw).map_err(|(path, message)| {
            let pos = position_of(&locs, &path);
            ctx.error_at(pos, path.to_string(), message, ErrorKind::Value)
        })
    }
}

struct Ctx<'a> {
    text: &'a str,
    file_name: &'a str,
}

impl Ctx<'_> {
    fn error_at(&self, pos: usize, key: String, message: String, kind: ErrorKind) -> ConfigError {
        let (line, column) = line_col(self.text, pos);
        ConfigError::Invalid {
            file: self.file_name.to_string(),
            line,
            column,
            key,
            message,
            kind,
        }
    }
}

/// 1-based line and character column of byte offset `pos` (clamped).
fn line_col(text: &str, pos: usize) -> (usize, usize) {
    let mut pos = pos.min(text.len());
    while !text.is_char_boundary(pos) {
        pos -= 1;
    }
    let before = &text[..pos];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (
        before.matches('\n').count() + 1,
        before[line_start..].chars().count() + 1,
    )
}

fn clean_message(m: &str) -> String {
    let m = m.trim();
    if m.is_empty() {
        // toml gives no message for some inputs, e.g. `key = ` at the end.
        "invalid or incomplete TOML".to_string()
    } else {
        m.replace('\n', "; ")
    }
}

/// The first backquoted word after `prefix` in a serde message, e.g.
/// ``missing field `name` `` → `name`.
fn quoted_after(message: &str, prefix: &str) -> Option<String> {
    let rest = message.strip_prefix(prefix)?.trim_start();
    let rest = rest.strip_prefix('`')?;
    rest.find('`').map(|end| rest[..end].to_string())
}

#[cfg(test)]
mod tests {
    use super::span::span_protocol;
    use super::*;
    use memtamer_core::isolation::IsolationParams;
    use memtamer_core::JobClass;
    use std::path::PathBuf;

    const MINIMAL: &str = "[[job]]\nname = \"a\"\nclass = \"lc\"\n[job.match]\ncomm = \"a\"\n";

    #[test]
    fn defaults() {
        let c = DaemonConfig::parse(MINIMAL, "m.toml").unwrap();
        assert_eq!(c.daemon.period_us, DEFAULT_PERIOD_US);
        assert_eq!(c.daemon.media_period_ms, DEFAULT_MEDIA_PERIOD_MS);
        assert_eq!(c.daemon.socket, PathBuf::from(DEFAULT_SOCKET));
        assert_eq!(c.daemon.journal, PathBuf::from(DEFAULT_JOURNAL));
        assert!(!c.daemon.dry_run);
        assert_eq!(c.isolation.policy, IsolationPolicy::Dicio);
        assert_eq!(c.isolation.params, IsolationParams::default());
        assert_eq!(c.isolation.duty_period_us, DEFAULT_DUTY_PERIOD_US);
        assert_eq!(c.isolation.be_cpus, CpuChoice::All);
        assert!(!c.core_spec.enabled);
        assert_eq!(c.core_spec.pm_cpus, PmCpus::Count(DEFAULT_PM_CPUS));
        assert_eq!(c.core_spec.pm_expiry_ms, DEFAULT_PM_EXPIRY_MS);
        assert_eq!(c.core_spec.general_expiry_ms, DEFAULT_GENERAL_EXPIRY_MS);
        assert!(!c.placement.enabled);
        assert_eq!(c.jobs.len(), 1);
        assert_eq!(c.jobs[0].class, JobClass::Lc);
        assert_eq!(c.jobs[0].cpus, None);
    }

    #[test]
    fn policy_names_round_trip() {
        for (n, p) in IsolationPolicy::ALL {
            assert_eq!(p.name(), n);
            assert!(ISOLATION_POLICIES.contains(&n), "{n} is a registry name");
        }
    }

    #[test]
    fn line_col_counts_characters() {
        assert_eq!(line_col("", 0), (1, 1));
        assert_eq!(line_col("ab\ncd", 3), (2, 1));
        assert_eq!(line_col("ab\ncd", 4), (2, 2));
        assert_eq!(line_col("é = 1", 3), (1, 3));
        assert_eq!(line_col("é", 1), (1, 1), "inside a character");
        assert_eq!(line_col("ab", 99), (1, 3), "clamped");
    }

    #[test]
    fn key_path_display() {
        assert_eq!(root().to_string(), "(top level)");
        assert_eq!(
            root()
                .key("job")
                .index(1)
                .key("match")
                .key("pid")
                .index(0)
                .to_string(),
            "job[1].match.pid[0]"
        );
    }

    #[test]
    fn value_missing_at_end_of_file() {
        let e = DaemonConfig::parse("[daemon]\nperiod_us = ", "m.toml").unwrap_err();
        assert_eq!(
            e.to_string(),
            "m.toml:2:13: daemon.period_us: invalid or incomplete TOML"
        );
    }

    #[test]
    fn quoted_after_extracts_names() {
        assert_eq!(
            quoted_after("missing field `name`", "missing field"),
            Some("name".into())
        );
        assert_eq!(quoted_after("missing field name", "missing field"), None);
        assert_eq!(quoted_after("other", "missing field"), None);
        assert_eq!(quoted_after("missing field `", "missing field"), None);
    }

    #[test]
    fn textual_paths() {
        let t = "a = 1\n[daemon]\nperiod_us = x\n[[job]]\n[[job]]\nname = ?\n[job.match]\ncomm = ?\n[[job]]\n";
        let at = |needle: &str| textual_path(t, t.find(needle).unwrap());
        assert_eq!(at("a ="), "a");
        assert_eq!(at("x\n"), "daemon.period_us");
        assert_eq!(at("?"), "job[1].name");
        assert_eq!(at("comm"), "job[1].match.comm");
        assert_eq!(at("[job.match]"), "job[1].match");
        assert_eq!(textual_path(t, t.len()), "job[2]");
        assert_eq!(textual_path(t, t.len() - 3), "job[2]");
        assert_eq!(textual_path("", 5), "(top level)");
        assert_eq!(textual_path("[[x", 1), "x[0]");
        assert_eq!(textual_path("[a]\n[b # c\n", 6), "b");
        assert_eq!(textual_path("[a]\n[ ]\n", 5), "(top level)");
        assert_eq!(textual_path("[a]\n[[]]\n", 5), "(top level)");
    }

    #[test]
    fn span_protocol_is_captured() {
        let p = span_protocol().unwrap();
        assert_eq!(p.fields.len(), 3);
    }

    #[test]
    fn tree_handles_implicit_tables_and_dotted_keys() {
        let text = "a.b.c = 1\n[x.y]\nz = [1, {q = 2}]\n[[arr]]\nk.l = 'v'\n";
        let tree = toml::from_str::<Node>(text).unwrap().filled();
        let locs = tree.flatten();
        let find = |p: &str| {
            locs.iter()
                .find(|l| l.path.to_string() == p)
                .map(|l| l.span.clone())
        };
        for p in [
            "a",
            "a.b",
            "a.b.c",
            "x",
            "x.y",
            "x.y.z",
            "x.y.z[1].q",
            "arr[0]",
            "arr[0].k.l",
        ] {
            assert!(find(p).flatten().is_some(), "{p}");
        }
        let q = text.find("2}").unwrap();
        assert_eq!(locate(&locs, &(q..q + 1)).to_string(), "x.y.z[1].q");
    }
}
