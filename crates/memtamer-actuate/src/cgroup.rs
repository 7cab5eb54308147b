//! cgroup discovery and per-job managed cgroups, for both cgroup v2
//! (unified) and v1 (one mount per controller) hosts.
//!
//! The layout is discovered by parsing `/proc/self/mountinfo` (path given by
//! the caller, so tests use fake roots). A [`ManagedCgroup`] lives at
//! `<mount>/memtamer/<job>` (one dir per hierarchy on v1) and journals every
//! step — directories it creates, parent values it changes, processes it
//! moves and where they came from, freezes — before doing it, so that
//! [`ManagedCgroup::remove`], [`crate::Journal::restore_all`] or the guard
//! can put everything back.

pub use crate::cgroupfs::parse_controller_list;
use crate::cgroupfs::{read_procs, read_value, write_value};
use crate::change::{Change, ChangeKey, RestoreReport};
use crate::journal::Journal;
use crate::process::{check_alive, ProcessKey};
use crate::{Error, Result};
use memtamer_core::CpuSet;
use memtamer_linux::{cgroup, ProcRoot};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Name of the directory, directly under each hierarchy's mount point, that
/// holds all of memtamer's cgroups.
pub const MEMTAMER_DIR: &str = "memtamer";

/// Default CFS period for CPU quotas: the kernel's default, 100 ms.
pub const DEFAULT_QUOTA_PERIOD: Duration = Duration::from_millis(100);

/// One line of `/proc/PID/mountinfo`, reduced to what cgroup discovery needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountEntry {
    /// Path within the filesystem that is mounted (field 4), e.g. "/".
    pub root: String,
    /// Where it is mounted (field 5).
    pub mount_point: PathBuf,
    /// Filesystem type after the " - " separator, e.g. "cgroup2".
    pub fs_type: String,
    /// Per-superblock options, e.g. ["rw", "cpu", "cpuacct"].
    pub super_options: Vec<String>,
}

/// Pure: parses mountinfo text (`memtamer_linux::mountinfo`). Malformed
/// lines are skipped (skipping beats failing discovery on one odd mount).
pub fn parse_mountinfo(text: &str) -> Vec<MountEntry> {
    memtamer_linux::mountinfo::parse(text)
        .into_iter()
        .map(|m| MountEntry {
            root: m.root,
            mount_point: PathBuf::from(m.mount_point),
            fs_type: m.fs_type,
            super_options: m
                .super_options
                .split(',')
                .filter(|o| !o.is_empty())
                .map(str::to_string)
                .collect(),
        })
        .collect()
}

/// A cgroup v1 hierarchy (one mount, one or more co-mounted controllers).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct V1Hierarchy {
    /// Mount point, e.g. /sys/fs/cgroup/cpu.
    pub mount_point: PathBuf,
    /// Cgroup path that the mount shows as its root ("/" outside containers).
    pub root: String,
    /// Controllers bound to it, e.g. ["cpu", "cpuacct"].
    pub controllers: Vec<String>,
}

/// The cgroup v2 (unified) mount.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct V2Mount {
    /// Mount point, e.g. /sys/fs/cgroup.
    pub mount_point: PathBuf,
    /// Cgroup path that the mount shows as its root.
    pub root: String,
    /// Controllers available at the mount root (`cgroup.controllers`).
    pub controllers: Vec<String>,
}

/// Which cgroup API a [`ManagedCgroup`] uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CgroupMode {
    /// Per-controller v1 hierarchies (cpuset, cpu, freezer).
    V1,
    /// The unified v2 hierarchy.
    V2,
}

impl CgroupMode {
    /// The freezer knob of this API: (controller, file, frozen value,
    /// thawed value). One place for both actuators (per-job cgroups and
    /// pods' own cgroups).
    pub fn freezer_knob(self) -> (&'static str, &'static str, &'static str, &'static str) {
        match self {
            CgroupMode::V2 => ("freezer", "cgroup.freeze", "1", "0"),
            CgroupMode::V1 => ("freezer", "freezer.state", "FROZEN", "THAWED"),
        }
    }
}

/// Where the cgroup hierarchies are mounted on this host, so the actuators
/// know whether to speak v1 or v2 and which files to use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CgroupLayout {
    /// v1 hierarchies that carry at least one controller.
    pub v1: Vec<V1Hierarchy>,
    /// The v2 mount, if any.
    pub v2: Option<V2Mount>,
}

/// The v1 controllers a managed cgroup uses.
const V1_CONTROLLERS: [&str; 3] = ["cpuset", "cpu", "freezer"];

impl CgroupLayout {
    /// Pure: the layout described by mountinfo text. v2 controllers are left
    /// empty (they live in a file; see [`CgroupLayout::discover`]).
    pub fn from_mountinfo(text: &str) -> CgroupLayout {
        let mut layout = CgroupLayout::default();
        for m in parse_mountinfo(text) {
            match m.fs_type.as_str() {
                "cgroup2" if layout.v2.is_none() => {
                    layout.v2 = Some(V2Mount {
                        mount_point: m.mount_point,
                        root: m.root,
                        controllers: Vec::new(),
                    })
                }
                "cgroup" => {
                    let controllers: Vec<String> = m
                        .super_options
                        .iter()
                        .filter(|o| {
                            !matches!(o.as_str(), "rw" | "ro")
                                && !o.starts_with("name=")
                                && !o.contains('=')
                                && !matches!(
                                    o.as_str(),
                                    "noprefix" | "clone_children" | "xattr" | "cpuset_v2_mode"
                                )
                        })
                        .cloned()
                        .collect();
                    if controllers.is_empty()
                        || layout.v1.iter().any(|h| h.controllers == controllers)
                    {
                        continue; // named-only hierarchy or a bind mount of one we have
                    }
                    layout.v1.push(V1Hierarchy {
                        mount_point: m.mount_point,
                        root: m.root,
                        controllers,
                    });
                }
                _ => {}
            }
        }
        layout
    }

    /// Reads `mountinfo` (normally `/proc/self/mountinfo`) and, for v2, the
    /// root's `cgroup.controllers`.
    pub fn discover(mountinfo: &Path) -> Result<CgroupLayout> {
        let text = fs::read_to_string(mountinfo).map_err(|source| Error::Read {
            path: mountinfo.to_path_buf(),
            source,
        })?;
        let mut layout = CgroupLayout::from_mountinfo(&text);
        if let Some(v2) = &mut layout.v2 {
            // A missing file just means no controllers (e.g. an odd mount).
            if let Ok(t) = fs::read_to_string(v2.mount_point.join("cgroup.controllers")) {
                v2.controllers = parse_controller_list(&t);
            }
        }
        Ok(layout)
    }

    /// The v1 hierarchy carrying `controller`, if mounted.
    pub fn v1_hierarchy(&self, controller: &str) -> Option<&V1Hierarchy> {
        self.v1
            .iter()
            .find(|h| h.controllers.iter().any(|c| c == controller))
    }

    /// Which API to use: v1 when any of cpuset/cpu/freezer is on a v1
    /// hierarchy (those controllers cannot then be used from v2), else v2.
    pub fn mode(&self) -> Option<CgroupMode> {
        if V1_CONTROLLERS
            .iter()
            .any(|c| self.v1_hierarchy(c).is_some())
        {
            Some(CgroupMode::V1)
        } else if self.v2.is_some() {
            Some(CgroupMode::V2)
        } else {
            None
        }
    }
}

/// Pure: the directory under `mount_point` for cgroup `path`, given the
/// mount's root (non-"/" inside containers). `None` if the cgroup is not
/// visible through this mount.
pub fn cgroup_dir(mount_point: &Path, mount_root: &str, path: &str) -> Option<PathBuf> {
    let root = mount_root.trim_end_matches('/');
    let rel = if root.is_empty() {
        path
    } else if path == root {
        ""
    } else {
        match path.strip_prefix(root) {
            Some(r) if r.starts_with('/') => r,
            _ => return None,
        }
    };
    let rel = rel.trim_start_matches('/');
    Some(if rel.is_empty() {
        mount_point.to_path_buf()
    } else {
        mount_point.join(rel)
    })
}

/// Pure: the CFS quota in microseconds for `cores` CPUs over `period_us`.
/// At least 1000 µs (the kernel minimum); cores must be finite and > 0.
pub fn quota_us(cores: f64, period_us: u64) -> std::result::Result<u64, String> {
    if !cores.is_finite() || cores <= 0.0 {
        return Err(format!(
            "CPU quota must be a positive number of cores, got {cores}"
        ));
    }
    let q = (cores * period_us as f64).round();
    Ok(if q > u64::MAX as f64 {
        u64::MAX
    } else {
        (q as u64).max(1000)
    })
}

/// Pure: the v2 `cpu.max` line, "QUOTA PERIOD" or "max PERIOD".
pub fn format_cpu_max(quota_us: Option<u64>, period_us: u64) -> String {
    match quota_us {
        Some(q) => format!("{q} {period_us}"),
        None => format!("max {period_us}"),
    }
}

/// Pure: the v1 (`cpu.cfs_quota_us`, `cpu.cfs_period_us`) values; -1 = unlimited.
pub fn cfs_values(quota_us: Option<u64>, period_us: u64) -> (i64, u64) {
    (
        quota_us.map_or(-1, |q| i64::try_from(q).unwrap_or(i64::MAX)),
        period_us,
    )
}

/// Pure: whether a job name is safe as a single directory name.
pub fn valid_job_name(job: &str) -> bool {
    !job.is_empty()
        && job.len() <= 200
        && job != "."
        && job != ".."
        && job
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '@'))
}

/// The directory of one hierarchy that a managed cgroup occupies.
#[derive(Debug, Clone)]
struct ManagedDir {
    mount_point: PathBuf,
    mount_root: String,
    controllers: Vec<String>,
    dir: PathBuf,
}

/// A cgroup (one per hierarchy on v1) owned by the daemon for one job:
/// created on demand, every change journaled first, and removed — with its
/// processes moved back where they came from — by [`ManagedCgroup::remove`].
/// Dropping it does NOT undo anything; the journal's `restore_all` does.
#[derive(Debug)]
pub struct ManagedCgroup {
    job: String,
    mode: CgroupMode,
    dirs: Vec<ManagedDir>,
    journal: Arc<Journal>,
}

impl ManagedCgroup {
    /// Creates (or re-adopts, if this journal created it) the cgroup for
    /// `job`. On v2 this enables +cpuset/+cpu in the parents'
    /// `cgroup.subtree_control` where available (journaled, so undone later);
    /// on v1 it initialises `cpuset.cpus`/`cpuset.mems` from the parent,
    /// which v1 requires before any task can join.
    pub fn create(
        layout: &CgroupLayout,
        job: &str,
        journal: Arc<Journal>,
    ) -> Result<ManagedCgroup> {
        if !valid_job_name(job) {
            return Err(Error::Invalid(format!(
                "job name {job:?} is not usable as a cgroup name"
            )));
        }
        let mode = layout.mode().ok_or_else(|| Error::ControllerMissing {
            controller: "cpuset/cpu/freezer".into(),
            detail: "no cgroup v1 or v2 mount found".into(),
        })?;
        let mut mc = ManagedCgroup {
            job: job.to_string(),
            mode,
            dirs: Vec::new(),
            journal,
        };
        match mode {
            CgroupMode::V2 => {
                let Some(v2) = &layout.v2 else {
                    return Err(Error::ControllerMissing {
                        controller: "cgroup2".into(),
                        detail: "no cgroup2 mount".into(),
                    });
                };
                let base = v2.mount_point.clone();
                let parent = base.join(MEMTAMER_DIR);
                mc.ensure_dir(&parent, &base)?;
                for ctrl in ["cpuset", "cpu"] {
                    if v2.controllers.iter().any(|c| c == ctrl) {
                        mc.enable_v2_controller(&base, ctrl)?;
                        mc.enable_v2_controller(&parent, ctrl)?;
                    }
                }
                let dir = parent.join(job);
                mc.ensure_dir(&dir, &base)?;
                mc.dirs.push(ManagedDir {
                    mount_point: base,
                    mount_root: v2.root.clone(),
                    controllers: Vec::new(),
                    dir,
                });
            }
            CgroupMode::V1 => {
                let mut seen: Vec<PathBuf> = Vec::new();
                for ctrl in V1_CONTROLLERS {
                    let Some(h) = layout.v1_hierarchy(ctrl) else {
                        continue;
                    };
                    if seen.contains(&h.mount_point) {
                        continue;
                    }
                    seen.push(h.mount_point.clone());
                    let base = h.mount_point.clone();
                    let parent = base.join(MEMTAMER_DIR);
                    let dir = parent.join(job);
                    let is_cpuset = h.controllers.iter().any(|c| c == "cpuset");
                    mc.ensure_dir(&parent, &base)?;
                    if is_cpuset {
                        inherit_cpuset(&base, &parent)?;
                    }
                    mc.ensure_dir(&dir, &base)?;
                    if is_cpuset {
                        inherit_cpuset(&parent, &dir)?;
                    }
                    mc.dirs.push(ManagedDir {
                        mount_point: base,
                        mount_root: h.root.clone(),
                        controllers: h.controllers.clone(),
                        dir,
                    });
                }
            }
        }
        Ok(mc)
    }

    /// Creates `dir` if missing, journaling it first. An existing dir is
    /// fine for the shared parent, but a job dir must be ours (in the
    /// journal) — we never adopt a cgroup someone else made.
    fn ensure_dir(&self, dir: &Path, hierarchy: &Path) -> Result<()> {
        let change = Change::CgroupCreated {
            path: dir.to_path_buf(),
            hierarchy: hierarchy.to_path_buf(),
        };
        if dir.is_dir() {
            let is_parent = dir.file_name().and_then(|n| n.to_str()) == Some(MEMTAMER_DIR)
                && dir.parent() == Some(hierarchy);
            let ours = self.journal.pending().iter().any(|c| c == &change);
            if is_parent || ours {
                return Ok(());
            }
            return Err(Error::Invalid(format!(
                "cgroup {} already exists and was not created through this journal",
                dir.display()
            )));
        }
        self.journal.record(change.clone())?;
        match fs::create_dir(dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                // Someone else made it between our check and mkdir: not ours.
                self.journal.forget(&change.key())?;
                Ok(())
            }
            Err(source) => {
                let _ = self.journal.forget(&change.key());
                Err(Error::Fs {
                    op: "mkdir",
                    path: dir.to_path_buf(),
                    source,
                })
            }
        }
    }

    fn enable_v2_controller(&self, dir: &Path, ctrl: &str) -> Result<()> {
        let file = dir.join("cgroup.subtree_control");
        let current = read_value(&file)?;
        if parse_controller_list(&current).iter().any(|c| c == ctrl) {
            return Ok(());
        }
        self.journal.record(Change::CgroupValue {
            file: file.clone(),
            original: current,
        })?;
        write_value(&file, &format!("+{ctrl}"))
    }

    /// The job this cgroup belongs to.
    pub fn job(&self) -> &str {
        &self.job
    }

    /// Whether this cgroup speaks v1 or v2.
    pub fn mode(&self) -> CgroupMode {
        self.mode
    }

    /// The cgroup directories (one on v2, one per used hierarchy on v1).
    pub fn dirs(&self) -> Vec<&Path> {
        self.dirs.iter().map(|d| d.dir.as_path()).collect()
    }

    /// The directory that carries `controller`, or the v2 directory.
    fn dir_for(&self, controller: &str) -> Result<&Path> {
        let found = match self.mode {
            CgroupMode::V2 => self.dirs.first(),
            CgroupMode::V1 => self
                .dirs
                .iter()
                .find(|d| d.controllers.iter().any(|c| c == controller)),
        };
        found
            .map(|d| d.dir.as_path())
            .ok_or_else(|| Error::ControllerMissing {
                controller: controller.to_string(),
                detail: format!("no hierarchy for job {}", self.job),
            })
    }

    /// The file `name` for `controller`, which must exist (else the
    /// controller is not enabled here).
    fn file_for(&self, controller: &str, name: &str) -> Result<PathBuf> {
        let f = self.dir_for(controller)?.join(name);
        if !f.exists() {
            return Err(Error::ControllerMissing {
                controller: controller.to_string(),
                detail: format!("{} does not exist", f.display()),
            });
        }
        Ok(f)
    }

    /// Moves process `key` (all its threads) into this cgroup, after
    /// journaling, per hierarchy, the cgroup it came from.
    pub fn add_process(&self, key: ProcessKey) -> Result<()> {
        check_alive(key)?;
        let proc_root = ProcRoot::default();
        let path = proc_root.path(key.pid, "cgroup");
        let lines = proc_root.cgroup(key.pid)?;
        for d in &self.dirs {
            let lookup = match self.mode {
                CgroupMode::V2 => None,
                CgroupMode::V1 => d.controllers.first().map(String::as_str),
            };
            let original = cgroup::path_for(&lines, lookup)
                .and_then(|p| cgroup_dir(&d.mount_point, &d.mount_root, p))
                .ok_or_else(|| Error::Parse {
                    what: path.display().to_string(),
                    reason: format!(
                        "no cgroup of pid {} visible under {}",
                        key.pid,
                        d.mount_point.display()
                    ),
                })?;
            if original == d.dir {
                continue;
            }
            self.journal.record(Change::CgroupMove {
                pid: key.pid,
                start_time: key.start_time,
                hierarchy: d.mount_point.clone(),
                original,
                to: d.dir.clone(),
            })?;
            write_value(&d.dir.join("cgroup.procs"), &key.pid.to_string()).map_err(
                |e| match &e {
                    Error::Write { source, .. } if source.raw_os_error() == Some(libc::ESRCH) => {
                        Error::ProcessGone {
                            pid: key.pid,
                            start_time: key.start_time,
                        }
                    }
                    _ => e,
                },
            )?;
        }
        Ok(())
    }

    /// The pids currently in this cgroup (first directory).
    pub fn procs(&self) -> Result<Vec<i32>> {
        match self.dirs.first() {
            Some(d) => read_procs(&d.dir),
            None => Ok(Vec::new()),
        }
    }

    /// Restricts the job to `cpus` (`cpuset.cpus`).
    pub fn set_cpus(&self, cpus: &CpuSet) -> Result<()> {
        if cpus.is_empty() {
            return Err(Error::Invalid(format!(
                "empty CPU set for job {}",
                self.job
            )));
        }
        write_value(&self.file_for("cpuset", "cpuset.cpus")?, &cpus.to_string())
    }

    /// Limits the job to `cores` CPUs' worth of time per `period` (CFS
    /// bandwidth); `None` removes the limit. v2 `cpu.max`, v1
    /// `cpu.cfs_period_us` + `cpu.cfs_quota_us`.
    pub fn set_cpu_quota(&self, cores: Option<f64>, period: Duration) -> Result<()> {
        let period_us = u64::try_from(period.as_micros()).unwrap_or(u64::MAX);
        if !(1000..=1_000_000).contains(&period_us) {
            return Err(Error::Invalid(format!(
                "CFS period must be 1 ms..1 s, got {period:?}"
            )));
        }
        let quota = cores
            .map(|c| quota_us(c, period_us))
            .transpose()
            .map_err(Error::Invalid)?;
        match self.mode {
            CgroupMode::V2 => write_value(
                &self.file_for("cpu", "cpu.max")?,
                &format_cpu_max(quota, period_us),
            ),
            CgroupMode::V1 => {
                let (q, p) = cfs_values(quota, period_us);
                let quota_file = self.file_for("cpu", "cpu.cfs_quota_us")?;
                // Lift the limit first so the period change can't be rejected
                // against the old quota, then set period, then quota.
                write_value(&quota_file, "-1")?;
                write_value(&self.file_for("cpu", "cpu.cfs_period_us")?, &p.to_string())?;
                write_value(&quota_file, &q.to_string())
            }
        }
    }

    fn freeze_file(&self) -> Result<(PathBuf, &'static str, &'static str)> {
        let (ctrl, file, on, off) = self.mode.freezer_knob();
        Ok((self.file_for(ctrl, file)?, on, off))
    }

    fn freezer_dir(&self) -> Result<PathBuf> {
        Ok(self.dir_for("freezer")?.to_path_buf())
    }

    /// Freezes every task in the job (journaled, so a dead daemon's guard thaws it).
    /// The kernel completes the freeze asynchronously; see [`ManagedCgroup::is_frozen`].
    pub fn freeze(&self) -> Result<()> {
        let (file, on, _) = self.freeze_file()?;
        self.journal.record(Change::Frozen {
            cgroup: self.freezer_dir()?,
        })?;
        write_value(&file, on)
    }

    /// Thaws the job and drops the journal record.
    pub fn thaw(&self) -> Result<()> {
        let (file, _, off) = self.freeze_file()?;
        write_value(&file, off)?;
        self.journal.forget(&ChangeKey::Frozen {
            cgroup: self.freezer_dir()?,
        })
    }

    /// Whether the freeze has completed (v2 `cgroup.events` "frozen 1", v1
    /// `freezer.state` FROZEN).
    pub fn is_frozen(&self) -> Result<bool> {
        match self.mode {
            CgroupMode::V2 => {
                let text = read_value(&self.dir_for("freezer")?.join("cgroup.events"))?;
                Ok(text.lines().any(|l| l.trim() == "frozen 1"))
            }
            CgroupMode::V1 => {
                let (file, _, _) = self.freeze_file()?;
                Ok(read_value(&file)?.trim() == "FROZEN")
            }
        }
    }

    /// Undoes this job's changes: thaws, moves every process back to the
    /// cgroup it came from (skipping exited/reused pids; strays forked
    /// inside go where the job's processes came from), removes the
    /// directories. Shared parents (`memtamer/`, subtree_control) are left
    /// to the journal's final `restore_all`. Failed steps stay journaled.
    pub fn remove(self) -> Result<RestoreReport> {
        let dirs: Vec<PathBuf> = self.dirs.iter().map(|d| d.dir.clone()).collect();
        self.journal.restore_where(|c| match c {
            Change::Frozen { cgroup } => dirs.contains(cgroup),
            Change::CgroupMove { to, .. } => dirs.contains(to),
            Change::CgroupCreated { path, .. } => dirs.contains(path),
            _ => false,
        })
    }
}

/// v1 cpuset: a new cgroup starts with empty cpus/mems and refuses tasks;
/// copy them from its parent when empty.
fn inherit_cpuset(parent: &Path, child: &Path) -> Result<()> {
    for name in ["cpuset.mems", "cpuset.cpus"] {
        let cur = read_value(&child.join(name))?;
        if cur.trim().is_empty() {
            let v = read_value(&parent.join(name))?;
            write_value(&child.join(name), v.trim())?;
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "cgroup_tests.rs"]
mod tests;
