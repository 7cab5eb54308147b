//! Which command-line argument an error of a run's overrides comes from.
//! `RunOptions::sets` are `--set`s and `RunOptions::sweep` the `--sweep`s
//! of `memtamer sim run`: an error they cause is a usage error
//! ([`SimError::Argument`], exit 2) naming the argument, while an error of
//! the scenario or platform file keeps its FILE:LINE (exit 3). Before
//! (hostile-input round, docs/bad-input.md, 2026-11-27): `--set
//! duration_ms=-1` said `<overrides>:0`, `--set platform.nope.x=1` said
//! `<builtin platform pats>:0:0: after overrides` and both exited 3, while an
//! unknown key exited 2.

use crate::error::SimError;
use crate::point_check::covers;

/// `--set k=v` for each of `sets`, space-separated.
pub fn set_args<'a>(sets: impl IntoIterator<Item = &'a (String, toml::Value)>) -> String {
    sets.into_iter()
        .map(|(k, v)| format!("--set {k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `--sweep point k=v, ..` for a point of command-line sweeps.
pub fn sweep_point_arg(point: &[(String, toml::Value)]) -> String {
    let kv: Vec<String> = point.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("--sweep point {}", kv.join(", "))
}

/// The sets whose key is `key` or ends in its last segment (`job.fio.threads`
/// for a validation key `threads`); all of them when none matches.
fn culprits<'a>(sets: &'a [(String, toml::Value)], key: &str) -> Vec<&'a (String, toml::Value)> {
    let last = key.rsplit('.').next().unwrap_or(key);
    let last = last.split('[').next().unwrap_or(last);
    let hit: Vec<_> = sets
        .iter()
        .filter(|(k, _)| k == key || k.rsplit('.').next() == Some(last))
        .collect();
    if hit.is_empty() {
        sets.iter().collect()
    } else {
        hit
    }
}

/// The message of `e` without a file position that the overrides made
/// meaningless (`<overrides>:0`, the platform file's line of a key the
/// command line set).
fn bare_message(e: SimError) -> String {
    match e {
        SimError::Invalid { key, message, .. } => format!("key `{key}`: {message}"),
        SimError::Parse { message, .. } => message
            .strip_prefix("after overrides: ")
            .unwrap_or(&message)
            .to_string(),
        SimError::Override { message, .. } => message,
        e => e.to_string(),
    }
}

/// An error of `Scenario::with_overrides(sets)` with command-line `sets`,
/// as the `--set` that caused it.
pub fn from_sets(e: SimError, sets: &[(String, toml::Value)]) -> SimError {
    let arg = match &e {
        SimError::Invalid { key, .. } => set_args(culprits(sets, key)),
        SimError::Override { arg, .. } => {
            let one = sets.iter().filter(|(k, v)| *arg == format!("{k}={v}"));
            let one = set_args(one);
            if one.is_empty() {
                set_args(sets)
            } else {
                one
            }
        }
        SimError::Parse { .. } => set_args(sets),
        _ => return e,
    };
    SimError::Argument {
        arg,
        message: bare_message(e),
    }
}

/// An error of one point's overrides or platform, named by the command-line
/// argument behind it: the `--sweep` point when the sweeps are the command
/// line's (`cli_sweep`) and the point sets `prefix` keys (or any key when
/// `prefix` is empty), else the `--set`s of `prefix` keys; an error neither
/// caused stays as it is (the file's).
pub fn at_point(
    e: SimError,
    point: &[(String, toml::Value)],
    cli_sweep: bool,
    sets: &[(String, toml::Value)],
    prefix: &str,
) -> SimError {
    let arg = if cli_sweep && point.iter().any(|(k, _)| k.starts_with(prefix)) {
        sweep_point_arg(point)
    } else {
        let mine: Vec<_> = sets.iter().filter(|(k, _)| k.starts_with(prefix)).collect();
        if mine.is_empty() || prefix.is_empty() {
            return e;
        }
        set_args(mine)
    };
    SimError::Argument {
        arg,
        message: bare_message(e),
    }
}

/// An error of a point's key `path` (`job.fio.workload.region`) that its
/// platform may cause as well (a region the platform lacks): named by the
/// `--sweep` point or the `--set`s that set `path` or a table above it
/// (`job.fio.workload`), else by those that set the platform; an error
/// neither caused stays as it is (the file's).
pub fn at_key(
    e: SimError,
    point: &[(String, toml::Value)],
    cli_sweep: bool,
    sets: &[(String, toml::Value)],
    path: &str,
) -> SimError {
    let named = |hit: &dyn Fn(&str) -> bool| {
        if cli_sweep && point.iter().any(|(k, _)| hit(k)) {
            return Some(sweep_point_arg(point));
        }
        let mine: Vec<_> = sets.iter().filter(|(k, _)| hit(k)).collect();
        (!mine.is_empty()).then(|| set_args(mine))
    };
    let sets_path = |k: &str| covers(k, path);
    let sets_platform = |k: &str| covers("platform", k);
    match named(&sets_path).or_else(|| named(&sets_platform)) {
        Some(arg) => SimError::Argument {
            arg,
            message: bare_message(e),
        },
        None => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(k: &str, v: toml::Value) -> (String, toml::Value) {
        (k.to_string(), v)
    }

    #[test]
    fn a_range_error_names_its_set_without_a_file_position() {
        let sets = [
            set("seed", toml::Value::Integer(3)),
            set("duration_ms", toml::Value::Integer(-1)),
        ];
        let e = from_sets(
            SimError::Invalid {
                file: "<overrides>".into(),
                line: 0,
                key: "duration_ms".into(),
                message: "must be in (0, 60000]".into(),
            },
            &sets,
        );
        assert_eq!(
            e.to_string(),
            "--set duration_ms=-1: key `duration_ms`: must be in (0, 60000]"
        );
    }

    #[test]
    fn a_file_error_at_a_point_stays_the_files() {
        let e = SimError::Invalid {
            file: "a.toml".into(),
            line: 3,
            key: "memory.wpq_entries".into(),
            message: "must be > 0".into(),
        };
        let e = at_point(e, &[], false, &[set("seed", 1.into())], "platform");
        assert_eq!(
            e.to_string(),
            "a.toml:3: key `memory.wpq_entries`: must be > 0"
        );
    }
}
