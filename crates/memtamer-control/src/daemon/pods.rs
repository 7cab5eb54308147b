//! BE budgets for jobs that select Kubernetes pods, under
//! `isolation.actuator = "cgroup"`: the knobs of each pod's own cgroup are
//! changed in place ([`InPlaceCgroup`]) and no process is moved, because
//! the kubelet owns the pods' cgroups (docs/kubernetes.md).

use super::Daemon;
use crate::kubepods::parse_pod_cgroup;
use memtamer_actuate::inplace::InPlaceCgroup;
use memtamer_core::{ApplyReport, CoreBudget, Knob};
use memtamer_linux::{cgroup, ProcRoot};
use std::time::Duration;

/// A budget's cpuset was not applied: the kubelet's static CPU manager
/// owns the pod's cpusets (quota and freezer still are).
pub const CPU_MANAGER: &str = "cpuset owned by the kubelet's CPU manager (static policy)";
/// A managed process of a pod job is not in a pod's cgroup.
pub const NOT_IN_POD: &str = "process of a pod job outside the kubelet's cgroup tree";

/// Pure: the cores each of `pods` pods gets of a job's budget: the job's
/// share of its CPUs split evenly (None: no limit).
pub fn cores_per_pod(budget: &CoreBudget, pods: usize) -> Option<f64> {
    (budget.duty_cycle < 1.0)
        .then(|| budget.duty_cycle * budget.cpus.len().max(1) as f64 / pods.max(1) as f64)
}

impl Daemon {
    /// Finds the pod cgroup of every managed process of `job` not seen yet.
    fn ensure_pods(&mut self, job: usize, r: &mut ApplyReport) {
        let Some(layout) = &self.cgroup_layout else {
            return;
        };
        let alive: std::collections::BTreeSet<_> = self.managed.iter().map(|(k, _)| *k).collect();
        self.pod_members.retain(|k| alive.contains(k));
        let proc_root = ProcRoot::default();
        for k in self.job_processes(job) {
            if self.pod_members.contains(&k) {
                continue;
            }
            let pod_path = proc_root.cgroup(k.pid).ok().and_then(|lines| {
                [None, Some("cpuset"), Some("name=systemd")]
                    .into_iter()
                    .filter_map(|c| cgroup::path_for(&lines, c))
                    .find_map(parse_pod_cgroup)
                    .map(|p| p.pod_path)
            });
            let Some(pod_path) = pod_path else {
                r.ignored(Knob::JobBudgets, 1, NOT_IN_POD);
                continue;
            };
            let pods = self.pod_cgroups.entry(job).or_default();
            if let std::collections::btree_map::Entry::Vacant(slot) = pods.entry(pod_path) {
                match InPlaceCgroup::locate(layout, slot.key(), self.journal.clone()) {
                    Ok(cg) => {
                        slot.insert(cg);
                    }
                    Err(e) => {
                        eprintln!("memtamer: pod cgroup {}: {e}", slot.key());
                        continue;
                    }
                }
            }
            self.pod_members.insert(k);
        }
    }

    /// The job's budget on each of its pods' cgroups: cpuset (unless the
    /// CPU manager owns it), CPU bandwidth (tightened only), freezer.
    pub(super) fn act_budget_in_place(
        &mut self,
        job: usize,
        budget: &CoreBudget,
        r: &mut ApplyReport,
    ) {
        self.ensure_pods(job, r);
        let Some(pods) = self.pod_cgroups.get(&job) else {
            r.ignored(Knob::JobBudgets, 1, NOT_IN_POD);
            return;
        };
        let period = Duration::from_micros(self.cfg.isolation.duty_period_us.max(1000));
        let cores = cores_per_pod(budget, pods.len());
        let mut ok = true;
        for cg in pods.values() {
            match cg.set_cpus(&budget.cpus) {
                Ok(()) => {}
                Err(memtamer_actuate::Error::KubeletOwned { .. }) => {
                    r.ignored(Knob::JobBudgets, 1, CPU_MANAGER)
                }
                Err(_) => ok = false,
            }
            let res = if budget.duty_cycle <= 0.0 {
                cg.freeze()
            } else {
                cg.thaw()
                    .and_then(|()| cg.set_cpu_quota(cores, period).map(|_| ()))
            };
            ok &= res.is_ok();
        }
        if ok {
            r.applied(Knob::JobBudgets, 1);
            self.duties.insert(job, budget.duty_cycle);
        } else {
            r.ignored(Knob::JobBudgets, 1, super::act::FAILED);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memtamer_core::CpuSet;

    #[test]
    fn a_jobs_budget_is_split_over_its_pods() {
        let b = CoreBudget {
            cpus: CpuSet::parse_list("0-3").unwrap(),
            duty_cycle: 0.5,
        };
        assert_eq!(cores_per_pod(&b, 1), Some(2.0));
        assert_eq!(cores_per_pod(&b, 4), Some(0.5));
        assert_eq!(cores_per_pod(&b, 0), Some(2.0));
        let full = CoreBudget {
            duty_cycle: 1.0,
            ..b
        };
        assert_eq!(cores_per_pod(&full, 2), None);
    }
}
