//! In-place actuation on a cgroup memtamer does not own: a Kubernetes pod's
//! own cgroup, which the kubelet created and keeps writing.
//!
//! Moving a pod's processes into `memtamer/JOB` would take them out of the
//! pod's cgroup (its limits, memory accounting, eviction and the CPU
//! manager's cpuset). Here the processes stay where they are and memtamer
//! changes knobs of the pod-level cgroup instead, the level the kubelet
//! leaves alone between pod updates:
//!
//! * `cpuset.cpus` — refused when the kubelet's static CPU manager owns the
//!   pod's cpusets (a container under the pod carries its own
//!   `cpuset.cpus`): memtamer does not fight the kubelet
//!   ([`Error::KubeletOwned`]);
//! * CPU bandwidth (v2 `cpu.max`, v1 `cpu.cfs_quota_us`/`cpu.cfs_period_us`)
//!   — only ever **tightened**: the effective limit is the smaller of the
//!   budget and the kubelet's own limit, so a pod never gets more CPU than
//!   its spec allows;
//! * the freezer (v2 `cgroup.freeze`, v1 `freezer.state`).
//!
//! Every write is journaled first as [`Change::OwnedValue`] (original and
//! what was written) or [`Change::Frozen`], so the daemon on exit, the
//! guard after a crash or `memtamer restore` put the kubelet's values back;
//! a value the kubelet changed since is left as the kubelet wrote it.

use crate::cgroup::{cfs_values, cgroup_dir, format_cpu_max, quota_us, CgroupLayout, CgroupMode};
use crate::cgroupfs::{read_value, write_value};
use crate::change::{Change, ChangeKey, RestoreReport};
use crate::journal::Journal;
use crate::{Error, Result};
use memtamer_core::CpuSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// A pod's own cgroup, changed in place (see the module docs).
#[derive(Debug)]
pub struct InPlaceCgroup {
    mode: CgroupMode,
    /// v2: the one directory; v1: (controller, directory) for cpuset, cpu,
    /// freezer where mounted.
    dirs: Vec<(&'static str, PathBuf)>,
    journal: Arc<Journal>,
    /// Frozen by [`InPlaceCgroup::freeze`] and not thawed since.
    frozen: std::sync::atomic::AtomicBool,
}

/// Pure: whether a cgroup path is a pod's cgroup in the kubelet's tree (the
/// only cgroups this actuator writes in place).
pub fn is_pod_path(path: &str) -> bool {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let Some(root) = parts
        .iter()
        .position(|p| *p == "kubepods" || *p == "kubepods.slice")
    else {
        return false;
    };
    parts
        .last()
        .is_some_and(|l| parts.len() > root + 1 && (l.starts_with("pod") || l.contains("-pod")))
}

/// Pure: the cores a v2 `cpu.max` line allows (None: unlimited).
pub fn cores_of_cpu_max(text: &str) -> Option<f64> {
    let mut it = text.split_whitespace();
    let q = it.next()?.parse::<f64>().ok()?;
    let p = it.next()?.parse::<f64>().ok()?;
    (p > 0.0).then_some(q / p)
}

/// Pure: the cores v1 CFS values allow (None: unlimited, quota -1).
pub fn cores_of_cfs(quota: &str, period: &str) -> Option<f64> {
    let q = quota.trim().parse::<f64>().ok()?;
    let p = period.trim().parse::<f64>().ok()?;
    (q > 0.0 && p > 0.0).then_some(q / p)
}

/// Pure: the limit to write: the budget, never above the owner's limit.
pub fn tightened(budget: Option<f64>, owner: Option<f64>) -> Option<f64> {
    match (budget, owner) {
        (Some(b), Some(o)) => Some(b.min(o)),
        (b, o) => b.or(o),
    }
}

impl InPlaceCgroup {
    /// The pod cgroup `pod_path` (as in /proc/PID/cgroup, e.g.
    /// `/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod….slice`)
    /// in the mounted hierarchies. Refuses paths outside the kubelet's tree
    /// and pods whose cgroup does not exist.
    pub fn locate(
        layout: &CgroupLayout,
        pod_path: &str,
        journal: Arc<Journal>,
    ) -> Result<InPlaceCgroup> {
        if !is_pod_path(pod_path) || pod_path.split('/').any(|c| c == "..") {
            return Err(Error::Invalid(format!(
                "{pod_path:?} is not a pod cgroup of the kubelet's tree"
            )));
        }
        let (mode, dirs) = match (&layout.v2, layout.mode()) {
            (Some(v2), Some(CgroupMode::V2)) => (
                CgroupMode::V2,
                cgroup_dir(&v2.mount_point, &v2.root, pod_path)
                    .map(|d| vec![("", d)])
                    .unwrap_or_default(),
            ),
            _ => (
                CgroupMode::V1,
                ["cpuset", "cpu", "freezer"]
                    .into_iter()
                    .filter_map(|c| {
                        let h = layout.v1_hierarchy(c)?;
                        Some((c, cgroup_dir(&h.mount_point, &h.root, pod_path)?))
                    })
                    .collect(),
            ),
        };
        let dirs: Vec<_> = dirs.into_iter().filter(|(_, d)| d.is_dir()).collect();
        if dirs.is_empty() {
            return Err(Error::Invalid(format!(
                "pod cgroup {pod_path} not found in any mounted hierarchy"
            )));
        }
        Ok(InPlaceCgroup {
            mode,
            dirs,
            journal,
            frozen: false.into(),
        })
    }

    /// The directories written (for logs and tests).
    pub fn dirs(&self) -> Vec<&Path> {
        self.dirs.iter().map(|(_, d)| d.as_path()).collect()
    }

    fn file_for(&self, controller: &str, name: &str) -> Result<PathBuf> {
        let dir = match self.mode {
            CgroupMode::V2 => self.dirs.first(),
            CgroupMode::V1 => self.dirs.iter().find(|(c, _)| *c == controller),
        }
        .map(|(_, d)| d)
        .ok_or_else(|| Error::ControllerMissing {
            controller: controller.into(),
            detail: "not mounted for this pod".into(),
        })?;
        let f = dir.join(name);
        if !f.exists() {
            return Err(Error::ControllerMissing {
                controller: controller.into(),
                detail: format!("{} does not exist", f.display()),
            });
        }
        Ok(f)
    }

    /// Journals (first original wins, last write kept) then writes; a file
    /// that already holds `value` is left alone (the daemon re-applies its
    /// budget every window).
    fn write_owned(&self, file: &Path, value: &str) -> Result<()> {
        let original = read_value(file)?;
        if crate::undo::same_value(&original, value) {
            return Ok(());
        }
        self.journal.record(Change::OwnedValue {
            file: file.to_path_buf(),
            original,
            written: value.to_string(),
        })?;
        write_value(file, value)
    }

    /// The value the owner (kubelet) had set: the journaled original if
    /// memtamer already wrote the file, else the file itself.
    fn owner_value(&self, file: &Path) -> Result<String> {
        let key = ChangeKey::OwnedValue {
            file: file.to_path_buf(),
        };
        match self.journal.pending().into_iter().find(|c| c.key() == key) {
            Some(Change::OwnedValue { original, .. }) => Ok(original),
            _ => read_value(file),
        }
    }

    /// A container cgroup under the pod with a cpuset of its own: the
    /// static CPU manager assigns containers exclusive or shared-pool
    /// cpusets (v2: non-empty `cpuset.cpus`; v1: one differing from the
    /// pod's), and the kubelet reconciles them.
    pub fn cpu_manager_owner(&self) -> Result<Option<(PathBuf, String)>> {
        let Ok(pod_file) = self.file_for("cpuset", "cpuset.cpus") else {
            return Ok(None);
        };
        let pod = read_value(&pod_file)?;
        let Some(dir) = pod_file.parent() else {
            return Ok(None);
        };
        let rd = std::fs::read_dir(dir).map_err(|source| Error::Fs {
            op: "readdir",
            path: dir.to_path_buf(),
            source,
        })?;
        for e in rd.flatten() {
            let f = e.path().join("cpuset.cpus");
            let Ok(v) = read_value(&f) else { continue };
            let owned = match self.mode {
                CgroupMode::V2 => !v.trim().is_empty(),
                CgroupMode::V1 => v.trim() != pod.trim(),
            };
            if owned {
                return Ok(Some((e.path(), v.trim().to_string())));
            }
        }
        Ok(None)
    }

    /// Restricts the pod to `cpus`, unless the CPU manager owns its cpusets.
    pub fn set_cpus(&self, cpus: &CpuSet) -> Result<()> {
        if cpus.is_empty() {
            return Err(Error::Invalid("empty CPU set for a pod".into()));
        }
        if let Some((container, value)) = self.cpu_manager_owner()? {
            return Err(Error::KubeletOwned {
                path: container,
                why: format!(
                    "cpuset.cpus {value:?} is set by the kubelet's CPU manager (static policy); memtamer leaves the pod's cpuset alone"
                ),
            });
        }
        self.write_owned(&self.file_for("cpuset", "cpuset.cpus")?, &cpus.to_string())
    }

    /// Limits the pod to `cores` CPUs' worth of time per `period`, never
    /// above the kubelet's own limit; `None` gives the kubelet's limit back.
    /// Returns the cores now allowed (None: unlimited).
    pub fn set_cpu_quota(&self, cores: Option<f64>, period: Duration) -> Result<Option<f64>> {
        let period_us = u64::try_from(period.as_micros()).unwrap_or(u64::MAX);
        if !(1000..=1_000_000).contains(&period_us) {
            return Err(Error::Invalid(format!(
                "CFS period must be 1 ms..1 s, got {period:?}"
            )));
        }
        match self.mode {
            CgroupMode::V2 => {
                let file = self.file_for("cpu", "cpu.max")?;
                let owner = self.owner_value(&file)?;
                let want = tightened(cores, cores_of_cpu_max(&owner));
                if cores.is_none() {
                    self.write_owned(&file, owner.trim())?;
                    return Ok(cores_of_cpu_max(&owner));
                }
                let q = want
                    .map(|c| quota_us(c, period_us))
                    .transpose()
                    .map_err(Error::Invalid)?;
                self.write_owned(&file, &format_cpu_max(q, period_us))?;
                Ok(want)
            }
            CgroupMode::V1 => {
                let qf = self.file_for("cpu", "cpu.cfs_quota_us")?;
                let pf = self.file_for("cpu", "cpu.cfs_period_us")?;
                let (oq, op) = (self.owner_value(&qf)?, self.owner_value(&pf)?);
                let owner = cores_of_cfs(&oq, &op);
                if cores.is_none() {
                    // quota first: the owner's period may be shorter
                    self.write_owned(&qf, "-1")?;
                    self.write_owned(&pf, op.trim())?;
                    self.write_owned(&qf, oq.trim())?;
                    return Ok(owner);
                }
                let want = tightened(cores, owner);
                let q = want
                    .map(|c| quota_us(c, period_us))
                    .transpose()
                    .map_err(Error::Invalid)?;
                let (q, p) = cfs_values(q, period_us);
                self.write_owned(&qf, "-1")?;
                self.write_owned(&pf, &p.to_string())?;
                self.write_owned(&qf, &q.to_string())?;
                Ok(want)
            }
        }
    }

    fn freezer(&self) -> Result<(PathBuf, &'static str, &'static str)> {
        let (ctrl, file, on, off) = self.mode.freezer_knob();
        Ok((self.file_for(ctrl, file)?, on, off))
    }

    /// Freezes the pod (journaled: the guard thaws it after a crash).
    pub fn freeze(&self) -> Result<()> {
        let (file, on, _) = self.freezer()?;
        let dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
        self.journal.record(Change::Frozen { cgroup: dir })?;
        write_value(&file, on)?;
        self.frozen
            .store(true, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }

    /// Thaws the pod and drops the journal record; a no-op unless frozen
    /// by [`InPlaceCgroup::freeze`].
    pub fn thaw(&self) -> Result<()> {
        if !self.frozen.load(std::sync::atomic::Ordering::Relaxed) {
            return Ok(());
        }
        let (file, _, off) = self.freezer()?;
        write_value(&file, off)?;
        let dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
        self.frozen
            .store(false, std::sync::atomic::Ordering::Relaxed);
        self.journal.forget(&ChangeKey::Frozen { cgroup: dir })
    }

    /// Puts back everything this actuator changed on the pod.
    pub fn restore(&self) -> Result<RestoreReport> {
        let dirs: Vec<PathBuf> = self.dirs.iter().map(|(_, d)| d.clone()).collect();
        self.journal.restore_where(|c| match c {
            Change::OwnedValue { file, .. } => {
                file.parent().is_some_and(|p| dirs.iter().any(|d| d == p))
            }
            Change::Frozen { cgroup } => dirs.contains(cgroup),
            _ => false,
        })
    }
}

#[cfg(test)]
#[path = "inplace_tests.rs"]
mod tests;
