//! What the restore journal records: each change to the system with the
//! state it replaced ([`Change`]), its identity ([`ChangeKey`]), and what
//! happened when it was undone ([`Outcome`], [`RestoreReport`]).
//!
//! Plain data, shared by the modules that make changes (affinity, cgroup,
//! duty), the one that undoes them ([`crate::undo`]) and the journal file
//! ([`crate::journal`]); it imports none of them, which is what keeps the
//! crate free of import circles.

use memtamer_core::CpuSet;
use memtamer_linux::ProcessKey;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// One change to the system, recorded with what it replaced so that it can
/// be undone by a process that knows nothing else about the daemon's state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind")]
pub enum Change {
    /// A thread's CPU affinity was changed from `original`.
    ThreadAffinity {
        /// Process the thread belongs to.
        pid: i32,
        /// The thread.
        tid: i32,
        /// Start time of `pid`, to detect pid reuse.
        start_time: u64,
        /// Affinity before the first change.
        #[serde(with = "cpu_list")]
        original: CpuSet,
    },
    /// A process was moved into the managed cgroup `to` of one hierarchy.
    CgroupMove {
        /// The process.
        pid: i32,
        /// Its start time, to detect pid reuse.
        start_time: u64,
        /// Mount point of the hierarchy (a v1 controller mount or the v2 root).
        hierarchy: PathBuf,
        /// Absolute directory of the cgroup it was in before the first move.
        original: PathBuf,
        /// Absolute directory of the cgroup it was moved into (last move).
        to: PathBuf,
    },
    /// The daemon created this cgroup directory (remove it on restore).
    CgroupCreated {
        /// Absolute directory.
        path: PathBuf,
        /// Mount point of its hierarchy, where stray processes go if needed.
        hierarchy: PathBuf,
    },
    /// A cgroup file the daemon did not create was written.
    CgroupValue {
        /// The file.
        file: PathBuf,
        /// Its contents before the first write.
        original: String,
    },
    /// A file of a cgroup that someone else owns (a Kubernetes pod's, which
    /// the kubelet writes) was changed in place: restored only while it
    /// still holds what memtamer wrote, so a newer value of the owner (an
    /// in-place pod resize) is never overwritten with an older one.
    OwnedValue {
        /// The file.
        file: PathBuf,
        /// Its contents before the first write.
        original: String,
        /// What memtamer wrote last.
        written: String,
    },
    /// A cgroup was frozen (v2 `cgroup.freeze` or v1 `freezer.state`).
    Frozen {
        /// Absolute cgroup directory.
        cgroup: PathBuf,
    },
    /// A process may be SIGSTOPped by the duty cycler (SIGCONT it on restore).
    Stopped {
        /// The process.
        pid: i32,
        /// Its start time, to detect pid reuse.
        start_time: u64,
    },
}

/// What identifies "the same thing" across repeated changes, so that only the
/// first original is kept and a restore can be forgotten.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind")]
pub enum ChangeKey {
    /// Affinity of one thread of one process.
    ThreadAffinity {
        /// Process.
        pid: i32,
        /// Thread.
        tid: i32,
        /// Process start time.
        start_time: u64,
    },
    /// Membership of a process in one hierarchy.
    CgroupMove {
        /// Process.
        pid: i32,
        /// Process start time.
        start_time: u64,
        /// Hierarchy mount point.
        hierarchy: PathBuf,
    },
    /// A created cgroup directory.
    CgroupCreated {
        /// The directory.
        path: PathBuf,
    },
    /// A written cgroup file.
    CgroupValue {
        /// The file.
        file: PathBuf,
    },
    /// A file of someone else's cgroup, written in place.
    OwnedValue {
        /// The file.
        file: PathBuf,
    },
    /// A frozen cgroup.
    Frozen {
        /// The directory.
        cgroup: PathBuf,
    },
    /// A process that may be stopped.
    Stopped {
        /// Process.
        pid: i32,
        /// Process start time.
        start_time: u64,
    },
}

impl Change {
    /// The identity of the thing this change touched.
    pub fn key(&self) -> ChangeKey {
        match self {
            Change::ThreadAffinity {
                pid,
                tid,
                start_time,
                ..
            } => ChangeKey::ThreadAffinity {
                pid: *pid,
                tid: *tid,
                start_time: *start_time,
            },
            Change::CgroupMove {
                pid,
                start_time,
                hierarchy,
                ..
            } => ChangeKey::CgroupMove {
                pid: *pid,
                start_time: *start_time,
                hierarchy: hierarchy.clone(),
            },
            Change::CgroupCreated { path, .. } => ChangeKey::CgroupCreated { path: path.clone() },
            Change::CgroupValue { file, .. } => ChangeKey::CgroupValue { file: file.clone() },
            Change::OwnedValue { file, .. } => ChangeKey::OwnedValue { file: file.clone() },
            Change::Frozen { cgroup } => ChangeKey::Frozen {
                cgroup: cgroup.clone(),
            },
            Change::Stopped { pid, start_time } => ChangeKey::Stopped {
                pid: *pid,
                start_time: *start_time,
            },
        }
    }

    /// The process this change was made on, if it was made on one.
    pub fn process(&self) -> Option<ProcessKey> {
        match self {
            Change::ThreadAffinity {
                pid, start_time, ..
            }
            | Change::CgroupMove {
                pid, start_time, ..
            }
            | Change::Stopped { pid, start_time } => Some(ProcessKey {
                pid: *pid,
                start_time: *start_time,
            }),
            _ => None,
        }
    }
}

/// Combines a live record with a new change of the same key: the FIRST
/// original always wins. Returns the record to write if anything else needs
/// updating (a cgroup move's destination, an owned value's last write),
/// else `None`.
pub fn merge(existing: &Change, new: &Change) -> Option<Change> {
    match (existing, new) {
        (
            Change::OwnedValue {
                file,
                original,
                written: old,
            },
            Change::OwnedValue { written: new, .. },
        ) if old != new => Some(Change::OwnedValue {
            file: file.clone(),
            original: original.clone(),
            written: new.clone(),
        }),
        (Change::CgroupMove { to: old_to, .. }, Change::CgroupMove { to: new_to, .. })
            if old_to != new_to =>
        {
            let mut merged = existing.clone();
            if let Change::CgroupMove { to, .. } = &mut merged {
                to.clone_from(new_to);
            }
            Some(merged)
        }
        _ => None,
    }
}

/// What happened to one change during a restore.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The original state was put back.
    Restored,
    /// Nothing to do or nothing safe to do (process exited, pid reused, already removed...).
    Skipped(String),
    /// The restore was attempted and failed.
    Failed(String),
}

/// The result of undoing journaled changes: per-change outcomes plus warnings
/// (torn lines...). A restore never stops at the first problem; it reports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RestoreReport {
    /// Each change, in the order it was undone, and what happened.
    pub entries: Vec<(Change, Outcome)>,
    /// Problems with the journal itself.
    pub warnings: Vec<String>,
}

impl RestoreReport {
    /// Number of changes that were undone.
    pub fn restored(&self) -> usize {
        self.count(|o| matches!(o, Outcome::Restored))
    }
    /// Number of changes skipped (process gone, pid reused, already undone).
    pub fn skipped(&self) -> usize {
        self.count(|o| matches!(o, Outcome::Skipped(_)))
    }
    /// Number of changes that could not be undone.
    pub fn failed(&self) -> usize {
        self.count(|o| matches!(o, Outcome::Failed(_)))
    }
    /// True when nothing failed (skips and warnings are fine).
    pub fn is_ok(&self) -> bool {
        self.failed() == 0
    }
    fn count(&self, f: impl Fn(&Outcome) -> bool) -> usize {
        self.entries.iter().filter(|(_, o)| f(o)).count()
    }
    pub(crate) fn absorb(&mut self, other: RestoreReport) {
        self.entries.extend(other.entries);
        self.warnings.extend(other.warnings);
    }
}

impl std::fmt::Display for RestoreReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "restored {}, skipped {}, failed {}",
            self.restored(),
            self.skipped(),
            self.failed()
        )?;
        for (c, o) in &self.entries {
            if !matches!(o, Outcome::Restored) {
                writeln!(f, "  {o:?}: {c:?}")?;
            }
        }
        for w in &self.warnings {
            writeln!(f, "  warning: {w}")?;
        }
        Ok(())
    }
}

/// Pure: the order in which to undo `changes`: newest first, except that
/// thaws and SIGCONTs come before everything else — getting processes
/// running again matters most, and a frozen task cannot be moved promptly.
pub fn undo_order(changes: &[Change]) -> Vec<&Change> {
    let (mut first, rest): (Vec<&Change>, Vec<&Change>) = changes
        .iter()
        .rev()
        .partition(|c| matches!(c, Change::Frozen { .. } | Change::Stopped { .. }));
    first.extend(rest);
    first
}

/// Serializes a [`CpuSet`] as its human-readable list ("0-3,8") so journals
/// can be read and fixed by hand.
mod cpu_list {
    use memtamer_core::CpuSet;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(set: &CpuSet, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&set.to_string())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<CpuSet, D::Error> {
        let text = String::deserialize(d)?;
        CpuSet::parse_list(&text).map_err(serde::de::Error::custom)
    }
}
