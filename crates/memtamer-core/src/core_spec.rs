//! Core specialization for PM writers (KIT thesis §5.2.2, §5.3.2).
//!
//! Threads seen storing to PM join a sticky "PM core group" and may run only
//! on its few CPUs; every other managed thread joins the general group. A
//! thread leaves the PM group when it has not been seen storing to PM for
//! `pm_expiry_ns` (200 ms in the thesis) and falls back to the general set; it
//! leaves the general group, and gets back the affinity it had before memtamer
//! touched it, when it has not been seen at all for `general_expiry_ns` (60 s).
//! Fewer cores for PM writers means fewer concurrent PM writers (the Optane
//! sweet spot) and the other cores free for CPU-bound work (thesis Fig. 5.3/5.4).

use crate::{CpuSet, Decision, JobClass, Observation, ThreadId};
use std::collections::{BTreeMap, BTreeSet};

/// Groups and expiries of core specialization.
#[derive(Clone, Debug, PartialEq)]
pub struct CoreSpecParams {
    /// CPUs of the PM core group (a subset of `general_cpus`).
    pub pm_cpus: CpuSet,
    /// CPUs every other managed thread may use.
    pub general_cpus: CpuSet,
    /// A PM-group thread not seen storing to PM for this long leaves the
    /// group (thesis §5.3.2: 200 ms, sticky until then).
    pub pm_expiry_ns: u64,
    /// A thread not seen at all for this long gets its own affinity back
    /// (thesis §5.3.2: 60 s).
    pub general_expiry_ns: u64,
    /// Whether latency-critical jobs are specialized too (default no: an LC
    /// job is protected by isolation, not packed onto the PM cores).
    pub include_lc: bool,
}

impl CoreSpecParams {
    /// The thesis's configuration: `pm_cpus` out of `general_cpus`, 200 ms
    /// and 60 s expiries.
    pub fn new(pm_cpus: CpuSet, general_cpus: CpuSet) -> CoreSpecParams {
        CoreSpecParams {
            pm_cpus,
            general_cpus,
            pm_expiry_ns: 200_000_000,
            general_expiry_ns: 60_000_000_000,
            include_lc: false,
        }
    }
}

/// Which group a thread is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    /// Seen storing to PM recently: runs on the PM cores only.
    Pm,
    /// Managed, not a PM writer: runs on the general set.
    General,
}

#[derive(Clone, Debug, PartialEq)]
struct Member {
    group: Group,
    /// Last time a PM store was seen (PM group) or the thread was seen (general).
    last_seen_ns: u64,
    /// Affinity before memtamer first changed it, restored on expiry.
    original: CpuSet,
}

/// The core-specialization policy.
#[derive(Clone, Debug)]
pub struct CoreSpec {
    params: CoreSpecParams,
    members: BTreeMap<ThreadId, Member>,
}

impl CoreSpec {
    /// A policy with `params`.
    pub fn new(params: CoreSpecParams) -> CoreSpec {
        CoreSpec {
            params,
            members: BTreeMap::new(),
        }
    }

    /// Group of a thread, if it is managed.
    pub fn group_of(&self, tid: ThreadId) -> Option<Group> {
        self.members.get(&tid).map(|m| m.group)
    }

    /// Number of threads in the PM group now.
    pub fn pm_group_size(&self) -> usize {
        self.members
            .values()
            .filter(|m| m.group == Group::Pm)
            .count()
    }

    /// One step: join, refresh, expire.
    pub fn decide(&mut self, obs: &Observation) -> Decision {
        self.decide_marked(obs, &BTreeSet::new())
    }

    /// One step where the threads in `also_writing` count as PM writers
    /// besides those `obs` shows writing: a caller that runs this policy
    /// less often than it observes passes every writer seen since the last
    /// step, rather than a copy of the observation with the writers marked.
    pub fn decide_marked(
        &mut self,
        obs: &Observation,
        also_writing: &BTreeSet<ThreadId>,
    ) -> Decision {
        let now = obs.start_ns + obs.duration_ns;
        let p = &self.params;
        let mut d = Decision::default();
        let managed = |class: JobClass| match class {
            JobClass::Be => true,
            JobClass::Lc => p.include_lc,
            JobClass::Unmanaged => false,
        };
        let class_of: BTreeMap<u32, JobClass> = obs.jobs.iter().map(|j| (j.id, j.class)).collect();
        for t in &obs.threads {
            if !class_of.get(&t.job).copied().is_some_and(managed) {
                continue;
            }
            let writes_pm =
                t.pm.as_ref().is_some_and(|s| s.write_bytes > 0) || also_writing.contains(&t.tid);
            match self.members.get_mut(&t.tid) {
                None => {
                    let group = if writes_pm { Group::Pm } else { Group::General };
                    let set = if writes_pm { p.pm_cpus } else { p.general_cpus };
                    self.members.insert(
                        t.tid,
                        Member {
                            group,
                            last_seen_ns: now,
                            original: t.allowed,
                        },
                    );
                    if t.allowed != set {
                        d.thread_cpus.push((t.tid, set));
                    }
                    d.reasons.push(format!(
                        "thread {} joins the {} group",
                        t.tid,
                        if writes_pm { "PM" } else { "general" }
                    ));
                }
                Some(m) => {
                    if writes_pm {
                        m.last_seen_ns = now;
                        if m.group != Group::Pm {
                            m.group = Group::Pm;
                            d.thread_cpus.push((t.tid, p.pm_cpus));
                            d.reasons
                                .push(format!("thread {} stores to PM: PM group", t.tid));
                        }
                    } else if m.group == Group::General {
                        m.last_seen_ns = now;
                    }
                    // a PM-group thread not writing PM stays (sticky) until expiry
                }
            }
        }
        let mut seen: Vec<ThreadId> = obs.threads.iter().map(|t| t.tid).collect();
        seen.sort_unstable();
        let mut gone = Vec::new();
        for (&tid, m) in self.members.iter_mut() {
            let idle = now.saturating_sub(m.last_seen_ns);
            match m.group {
                Group::Pm if idle > p.pm_expiry_ns => {
                    m.group = Group::General;
                    m.last_seen_ns = now;
                    if seen.binary_search(&tid).is_ok() {
                        d.thread_cpus.push((tid, p.general_cpus));
                    }
                    d.reasons.push(format!(
                        "thread {tid}: no PM store for {} ms, back to the general set",
                        p.pm_expiry_ns / 1_000_000
                    ));
                }
                Group::General if idle > p.general_expiry_ns => {
                    if seen.binary_search(&tid).is_ok() {
                        d.thread_cpus.push((tid, m.original));
                    }
                    d.reasons.push(format!(
                        "thread {tid}: unseen for {} s, own affinity restored",
                        p.general_expiry_ns / 1_000_000_000
                    ));
                    gone.push(tid);
                }
                _ => {}
            }
        }
        for tid in gone {
            self.members.remove(&tid);
        }
        d
    }
}

impl crate::Policy for CoreSpec {
    fn name(&self) -> &str {
        "core-spec"
    }
    fn decide(&mut self, obs: &Observation) -> Decision {
        CoreSpec::decide(self, obs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{AccessStats, JobObs, ThreadObs};

    const MS: u64 = 1_000_000;

    fn params() -> CoreSpecParams {
        CoreSpecParams::new(
            CpuSet::parse_list("0-2").unwrap(),
            CpuSet::parse_list("0-15").unwrap(),
        )
    }

    /// Window ending at `end_ms`; `threads` = (tid, job, writes PM).
    fn obs(end_ms: u64, threads: &[(u32, u32, bool)]) -> Observation {
        Observation {
            start_ns: end_ms * MS - MS,
            duration_ns: MS,
            threads: threads
                .iter()
                .map(|&(tid, job, w)| ThreadObs {
                    tid,
                    job,
                    allowed: CpuSet::first_n(32),
                    pm: Some(AccessStats {
                        write_bytes: if w { 4096 } else { 0 },
                        ..Default::default()
                    }),
                    ..Default::default()
                })
                .collect(),
            jobs: vec![
                JobObs {
                    id: 0,
                    class: JobClass::Be,
                    ..Default::default()
                },
                JobObs {
                    id: 1,
                    class: JobClass::Lc,
                    ..Default::default()
                },
                JobObs {
                    id: 2,
                    class: JobClass::Unmanaged,
                    ..Default::default()
                },
            ],
            ..Default::default()
        }
    }

    fn set_of(d: &Decision, tid: u32) -> Option<CpuSet> {
        d.thread_cpus
            .iter()
            .find(|(t, _)| *t == tid)
            .map(|(_, s)| *s)
    }

    #[test]
    fn pm_writers_go_to_the_pm_cores_others_to_the_general_set() {
        let mut cs = CoreSpec::new(params());
        let d = cs.decide(&obs(1, &[(10, 0, true), (11, 0, false)]));
        assert_eq!(set_of(&d, 10), Some(CpuSet::parse_list("0-2").unwrap()));
        assert_eq!(set_of(&d, 11), Some(CpuSet::parse_list("0-15").unwrap()));
        assert_eq!(cs.group_of(10), Some(Group::Pm));
        assert_eq!(cs.pm_group_size(), 1);
        // nothing new: nothing emitted
        let d = cs.decide(&obs(2, &[(10, 0, true), (11, 0, false)]));
        assert!(d.thread_cpus.is_empty());
    }

    #[test]
    fn lc_and_unmanaged_threads_are_never_touched_unless_lc_is_included() {
        let mut cs = CoreSpec::new(params());
        let d = cs.decide(&obs(1, &[(20, 1, true), (30, 2, true)]));
        assert!(d.thread_cpus.is_empty());
        let mut p = params();
        p.include_lc = true;
        let mut cs = CoreSpec::new(p);
        let d = cs.decide(&obs(1, &[(20, 1, true), (30, 2, true)]));
        assert_eq!(d.thread_cpus.len(), 1);
        assert_eq!(d.thread_cpus[0].0, 20);
    }

    #[test]
    fn pm_group_is_sticky_until_200ms_without_pm_stores() {
        let mut cs = CoreSpec::new(params());
        cs.decide(&obs(1, &[(10, 0, true)]));
        // stops writing PM: stays for 200 ms
        for ms in 2..=201 {
            let d = cs.decide(&obs(ms, &[(10, 0, false)]));
            assert!(d.thread_cpus.is_empty(), "left early at {ms} ms");
        }
        let d = cs.decide(&obs(202, &[(10, 0, false)]));
        assert_eq!(set_of(&d, 10), Some(CpuSet::parse_list("0-15").unwrap()));
        assert_eq!(cs.group_of(10), Some(Group::General));
        // writing again brings it back at once
        let d = cs.decide(&obs(203, &[(10, 0, true)]));
        assert_eq!(set_of(&d, 10), Some(CpuSet::parse_list("0-2").unwrap()));
    }

    #[test]
    fn a_pm_store_refreshes_the_expiry() {
        let mut cs = CoreSpec::new(params());
        cs.decide(&obs(1, &[(10, 0, true)]));
        cs.decide(&obs(150, &[(10, 0, true)]));
        let d = cs.decide(&obs(300, &[(10, 0, false)]));
        assert!(d.thread_cpus.is_empty(), "150 ms since the last PM store");
        let d = cs.decide(&obs(351, &[(10, 0, false)]));
        assert!(set_of(&d, 10).is_some());
    }

    #[test]
    fn unseen_threads_get_their_own_affinity_back_after_60s() {
        let mut cs = CoreSpec::new(params());
        let mut o = obs(1, &[(11, 0, false)]);
        o.threads[0].allowed = CpuSet::parse_list("4-7").unwrap();
        cs.decide(&o);
        // unseen for 60 s: dropped; seen again later it rejoins
        let d = cs.decide(&obs(60_002, &[]));
        assert!(
            d.thread_cpus.is_empty(),
            "an unseen thread is not written to"
        );
        assert_eq!(cs.group_of(11), None);
        // a thread seen only now and then keeps its membership
        let mut cs = CoreSpec::new(params());
        cs.decide(&o);
        cs.decide(&obs(59_000, &[(11, 0, false)]));
        let d = cs.decide(&obs(60_002, &[(11, 0, false)]));
        assert!(d.thread_cpus.is_empty());
        assert_eq!(cs.group_of(11), Some(Group::General));
    }

    #[test]
    fn a_thread_that_leaves_management_gets_its_affinity_back_at_expiry() {
        let mut p = params();
        p.general_expiry_ns = 10 * MS;
        let mut cs = CoreSpec::new(p);
        let mut o = obs(1, &[(11, 0, false)]);
        o.threads[0].allowed = CpuSet::parse_list("4-7").unwrap();
        cs.decide(&o);
        // the thread exec'd into a program no job selects (job 2 is
        // unmanaged): it is no longer refreshed, and at expiry it gets back
        // the affinity it had before memtamer touched it
        let mut o2 = obs(12, &[(11, 2, false)]);
        o2.threads[0].allowed = CpuSet::parse_list("0-15").unwrap();
        let d = cs.decide(&o2);
        assert_eq!(set_of(&d, 11), Some(CpuSet::parse_list("4-7").unwrap()));
    }
}
