//! Undoing journaled changes: puts back what a [`Change`] recorded, as far
//! as it is still safe (the process is the same one, the cgroup still
//! exists), and says what happened in an [`Outcome`].
//!
//! Uses only the low-level primitives ([`crate::sched`], [`crate::process`],
//! [`crate::cgroupfs`]), never the modules that record changes, so the
//! journal can call it without an import circle.

use crate::cgroupfs::{
    parse_controller_list, read_procs, read_value, remove_cgroup_dir, write_value,
};
use crate::change::{undo_order, Change, Outcome, RestoreReport};
use crate::process::{thread_belongs_to, ProcHandle, ProcessKey};
use crate::sched::set_thread_affinity;
use crate::Error;

/// Pure: the `+ctrl`/`-ctrl` writes that turn the `current` contents of a
/// v2 `cgroup.subtree_control` back into `original` (the file cannot simply
/// be overwritten). Disables come first.
pub fn subtree_control_diff(original: &str, current: &str) -> Vec<String> {
    let orig = parse_controller_list(original);
    let cur = parse_controller_list(current);
    let mut out: Vec<String> = cur
        .iter()
        .filter(|c| !orig.contains(c))
        .map(|c| format!("-{c}"))
        .collect();
    out.extend(
        orig.iter()
            .filter(|c| !cur.contains(c))
            .map(|c| format!("+{c}")),
    );
    out
}

/// Whether a cgroup file's contents are the value written: the kernel
/// echoes values in its own format (`cpuset.cpus` "0-3" for "0,1,2,3",
/// `cpu.max` "max 100000"), so compare CPU lists as sets and the rest as
/// whitespace-separated words.
pub fn same_value(now: &str, written: &str) -> bool {
    let (a, b) = (now.trim(), written.trim());
    if a == b {
        return true;
    }
    match (
        memtamer_core::CpuSet::parse_list(a),
        memtamer_core::CpuSet::parse_list(b),
    ) {
        (Ok(x), Ok(y)) if !a.contains(' ') && !b.contains(' ') => x == y,
        _ => a.split_whitespace().eq(b.split_whitespace()),
    }
}

fn gone(e: &Error) -> bool {
    match e {
        Error::ProcessGone { .. } => true,
        Error::Sys { source, .. } | Error::Write { source, .. } => {
            source.raw_os_error() == Some(libc::ESRCH)
        }
        _ => false,
    }
}

/// Undoes one change. `all` is every live change, used to find where stray
/// processes in a created cgroup came from.
pub(crate) fn undo(change: &Change, all: &[Change]) -> Outcome {
    let gone_msg = "process exited or its pid was reused".to_string();
    match change {
        Change::ThreadAffinity {
            pid, tid, original, ..
        } => {
            if !change.process().is_some_and(|k| k.is_alive()) {
                return Outcome::Skipped(gone_msg);
            }
            if !thread_belongs_to(*pid, *tid) {
                return Outcome::Skipped("thread exited".into());
            }
            match set_thread_affinity(*tid, original) {
                Ok(()) => Outcome::Restored,
                Err(e) if gone(&e) => Outcome::Skipped("thread exited".into()),
                Err(e) => Outcome::Failed(e.to_string()),
            }
        }
        Change::CgroupMove {
            pid, original, to, ..
        } => {
            if !change.process().is_some_and(|k| k.is_alive()) {
                return Outcome::Skipped(gone_msg);
            }
            match read_procs(to) {
                Ok(pids) if !pids.contains(pid) => {
                    return Outcome::Skipped(format!(
                        "no longer in {} (moved by someone else)",
                        to.display()
                    ))
                }
                Ok(_) => {}
                Err(_) => return Outcome::Skipped(format!("{} no longer exists", to.display())),
            }
            match write_value(&original.join("cgroup.procs"), &pid.to_string()) {
                Ok(()) => Outcome::Restored,
                Err(e) if gone(&e) => Outcome::Skipped(gone_msg),
                Err(e) => Outcome::Failed(e.to_string()),
            }
        }
        Change::CgroupCreated { path, hierarchy } => {
            if !path.is_dir() {
                return Outcome::Skipped("already removed".into());
            }
            // Processes forked inside the cgroup after we moved their parent
            // in: send them where the job's processes came from.
            let fallback = all
                .iter()
                .find_map(|c| match c {
                    Change::CgroupMove { to, original, .. } if to == path => Some(original.clone()),
                    _ => None,
                })
                .unwrap_or_else(|| hierarchy.clone());
            if let Ok(strays) = read_procs(path) {
                for p in strays {
                    let _ = write_value(&fallback.join("cgroup.procs"), &p.to_string());
                }
            }
            match remove_cgroup_dir(path) {
                Ok(()) => Outcome::Restored,
                Err(e) => Outcome::Failed(e.to_string()),
            }
        }
        Change::CgroupValue { file, original } => {
            if !file.exists() {
                return Outcome::Skipped("file no longer exists".into());
            }
            let is_subtree =
                file.file_name().and_then(|n| n.to_str()) == Some("cgroup.subtree_control");
            let result = if is_subtree {
                read_value(file).and_then(|cur| {
                    subtree_control_diff(original, &cur)
                        .iter()
                        .try_for_each(|w| write_value(file, w))
                })
            } else {
                write_value(file, original.trim())
            };
            match result {
                Ok(()) => Outcome::Restored,
                Err(e) => Outcome::Failed(e.to_string()),
            }
        }
        Change::OwnedValue {
            file,
            original,
            written,
        } => {
            let now = match read_value(file) {
                Ok(v) => v,
                Err(_) => return Outcome::Skipped("file no longer exists".into()),
            };
            if !same_value(&now, written) {
                return Outcome::Skipped(format!(
                    "changed by its owner since (now {:?}, memtamer wrote {:?}): left as is",
                    now.trim(),
                    written.trim()
                ));
            }
            match write_value(file, original.trim()) {
                Ok(()) => Outcome::Restored,
                Err(e) => Outcome::Failed(e.to_string()),
            }
        }
        Change::Frozen { cgroup } => {
            if !cgroup.is_dir() {
                return Outcome::Skipped("cgroup no longer exists".into());
            }
            let result = if cgroup.join("cgroup.freeze").exists() {
                write_value(&cgroup.join("cgroup.freeze"), "0")
            } else if cgroup.join("freezer.state").exists() {
                write_value(&cgroup.join("freezer.state"), "THAWED")
            } else {
                return Outcome::Failed(format!("{} has no freezer file", cgroup.display()));
            };
            match result {
                Ok(()) => Outcome::Restored,
                Err(e) => Outcome::Failed(e.to_string()),
            }
        }
        Change::Stopped { pid, start_time } => {
            let key = ProcessKey {
                pid: *pid,
                start_time: *start_time,
            };
            match ProcHandle::open(key).and_then(|h| h.signal(libc::SIGCONT)) {
                Ok(()) => Outcome::Restored,
                Err(e) if gone(&e) => Outcome::Skipped(gone_msg),
                Err(e) => Outcome::Failed(e.to_string()),
            }
        }
    }
}

/// Undoes `changes` in [`undo_order`].
/// Where a replay may write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Anywhere the records say (the daemon's own, live journal).
    Any,
    /// Only inside a mounted cgroup filesystem (v1 or v2): a journal read
    /// back from disk (the guard, `memtamer restore`) names its paths, and
    /// replay runs as root (issue 22).
    CgroupMounts,
    /// Only under this directory (tests on a fake cgroup tree).
    Under(std::path::PathBuf),
}

/// statfs(2) magic numbers of cgroup v2 and v1 (linux/magic.h).
const CGROUP2_SUPER_MAGIC: i64 = 0x6367_7270;
const CGROUP_SUPER_MAGIC: i64 = 0x0027_e0eb;

/// Whether `path` lies on a cgroup filesystem: statfs of the nearest
/// existing ancestor (a removed cgroup's directory may be gone).
fn on_cgroup_fs(path: &std::path::Path) -> bool {
    let Some(existing) = path.ancestors().find(|p| p.exists()) else {
        return false;
    };
    let Ok(c) = std::ffi::CString::new(existing.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: zeroed statfs is a valid out-parameter; c is NUL-terminated.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return false;
    }
    matches!(st.f_type as i64, CGROUP2_SUPER_MAGIC | CGROUP_SUPER_MAGIC)
}

/// The first path `change` would write that `scope` does not allow.
fn outside(change: &Change, scope: &Scope) -> Option<std::path::PathBuf> {
    let paths: Vec<&std::path::Path> = match change {
        Change::CgroupMove {
            hierarchy,
            original,
            to,
            ..
        } => vec![hierarchy, original, to],
        Change::CgroupCreated { path, hierarchy } => vec![path, hierarchy],
        Change::CgroupValue { file, .. } | Change::OwnedValue { file, .. } => vec![file],
        Change::Frozen { cgroup } => vec![cgroup],
        _ => Vec::new(),
    }
    .into_iter()
    .map(|p| p.as_path())
    .collect();
    paths
        .into_iter()
        .find(|p| match scope {
            Scope::Any => false,
            Scope::CgroupMounts => {
                p.components().any(|c| c == std::path::Component::ParentDir) || !on_cgroup_fs(p)
            }
            Scope::Under(root) => {
                p.components().any(|c| c == std::path::Component::ParentDir) || !p.starts_with(root)
            }
        })
        .map(|p| p.to_path_buf())
}

/// `undo_all`, refusing (as Failed, touching nothing) every change that
/// would write outside `scope`.
pub(crate) fn undo_all_within(changes: &[Change], scope: &Scope) -> RestoreReport {
    let (allowed, refused): (Vec<Change>, Vec<Change>) = changes
        .iter()
        .cloned()
        .partition(|c| outside(c, scope).is_none());
    let mut report = undo_all(&allowed);
    for c in refused.into_iter().rev() {
        let why = format!(
            "refused: {} is not under a cgroup mount",
            outside(&c, scope)
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        );
        report.entries.push((c, Outcome::Failed(why)));
    }
    report
}

pub(crate) fn undo_all(changes: &[Change]) -> RestoreReport {
    let mut report = RestoreReport::default();
    for change in undo_order(changes) {
        let outcome = undo(change, changes);
        report.entries.push((change.clone(), outcome));
    }
    report
}
