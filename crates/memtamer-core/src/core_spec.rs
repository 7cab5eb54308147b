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

use crate::policy::Hints;
use crate::{CpuSet, Decision, JobClass, Observation, ThreadId, ThreadObs};
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
    /// In the last observation walked: its thread is there at all, and it
    /// is there in a managed job (seen, in the general group's terms).
    present: bool,
    seen: bool,
}

/// The core-specialization policy.
#[derive(Clone, Debug)]
pub struct CoreSpec {
    params: CoreSpecParams,
    members: BTreeMap<ThreadId, Member>,
    /// The caller's shape id ([`Hints::shape`]) at the last step.
    last_shape: Option<u64>,
}

impl CoreSpec {
    /// A policy with `params`.
    pub fn new(params: CoreSpecParams) -> CoreSpec {
        CoreSpec {
            params,
            members: BTreeMap::new(),
            last_shape: None,
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
        self.decide_hinted(obs, &BTreeSet::new(), Hints::default())
    }

    /// One step where the threads in `also_writing` count as PM writers
    /// besides those `obs` shows writing (a caller that runs this policy
    /// less often than it observes passes every writer seen since the last
    /// step, rather than a copy of the observation with the writers
    /// marked), with what the caller knows about `obs` ([`Hints`]): while
    /// the shape id is that of the last step and no thread writes PM, the
    /// threads are not walked (the step is then only the members' expiry).
    /// The decision is the same as without hints.
    pub fn decide_hinted(
        &mut self,
        obs: &Observation,
        also_writing: &BTreeSet<ThreadId>,
        hints: Hints<'_>,
    ) -> Decision {
        let now = obs.start_ns + obs.duration_ns;
        let same_shape = hints.shape.is_some() && hints.shape == self.last_shape;
        self.last_shape = hints.shape;
        let quiet = same_shape
            && also_writing.is_empty()
            && !hints
                .reporting_threads(obs)
                .any(|t| t.pm.as_ref().is_some_and(|s| s.write_bytes > 0));
        let mut d = if quiet {
            Decision::default()
        } else {
            self.walk(obs, also_writing, now)
        };
        self.expire(&mut d, now, quiet);
        d
    }

    /// The walk over the threads: joins, PM stores, the general group's
    /// "seen"; marks which members are present.
    fn walk(&mut self, obs: &Observation, also_writing: &BTreeSet<ThreadId>, now: u64) -> Decision {
        let p = &self.params;
        let mut d = Decision::default();
        for m in self.members.values_mut() {
            m.present = false;
            m.seen = false;
        }
        let managed = |class: Option<JobClass>| match class {
            Some(JobClass::Be) => true,
            Some(JobClass::Lc) => p.include_lc,
            Some(JobClass::Unmanaged) | None => false,
        };
        // threads come grouped by job: remember the last lookup
        let mut last_job: Option<(u32, Option<JobClass>)> = None;
        let mut class_of = |job: u32| match last_job {
            Some((j, c)) if j == job => c,
            _ => {
                let c = obs.jobs.iter().find(|j| j.id == job).map(|j| j.class);
                last_job = Some((job, c));
                c
            }
        };
        let writes = |t: &ThreadObs| {
            t.pm.as_ref().is_some_and(|s| s.write_bytes > 0) || also_writing.contains(&t.tid)
        };
        // threads in ascending tid order (the daemon's) are matched with the
        // members in one merge walk, new members inserted after it; any
        // other order looks each thread up
        let ascending = obs.threads.windows(2).all(|w| w[0].tid < w[1].tid);
        if ascending {
            let mut joined = Vec::new();
            let mut members = self.members.iter_mut().peekable();
            for t in &obs.threads {
                while members.next_if(|(&tid, _)| tid < t.tid).is_some() {}
                let mut m = members.next_if(|(&tid, _)| tid == t.tid).map(|(_, m)| m);
                if let Some(m) = m.as_mut() {
                    m.present = true;
                }
                if !managed(class_of(t.job)) {
                    continue;
                }
                if let Some(new) = step_thread(p, t, writes(t), m, now, &mut d) {
                    joined.push((t.tid, new));
                }
            }
            self.members.extend(joined);
        } else {
            for t in &obs.threads {
                let mut m = self.members.get_mut(&t.tid);
                if let Some(m) = m.as_mut() {
                    m.present = true;
                }
                if !managed(class_of(t.job)) {
                    continue;
                }
                if let Some(new) = step_thread(p, t, writes(t), m, now, &mut d) {
                    self.members.insert(t.tid, new);
                }
            }
        }
        d
    }

    /// Expiry of every member; in a `quiet` step (no walk) a member that
    /// the last walk saw in a managed job counts as seen now, as the walk
    /// would have counted it.
    fn expire(&mut self, d: &mut Decision, now: u64, quiet: bool) {
        let p = &self.params;
        let mut gone = Vec::new();
        for (&tid, m) in self.members.iter_mut() {
            if quiet && m.seen && m.group == Group::General {
                m.last_seen_ns = now;
            }
            let idle = now.saturating_sub(m.last_seen_ns);
            match m.group {
                Group::Pm if idle > p.pm_expiry_ns => {
                    m.group = Group::General;
                    m.last_seen_ns = now;
                    if m.present {
                        d.thread_cpus.push((tid, p.general_cpus));
                    }
                    d.reasons.push(format!(
                        "thread {tid}: no PM store for {} ms, back to the general set",
                        p.pm_expiry_ns / 1_000_000
                    ));
                }
                Group::General if idle > p.general_expiry_ns => {
                    if m.present {
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
    }
}

/// One managed thread's step: join (returns the new member, for the caller
/// to insert) or refresh its membership `m`.
fn step_thread(
    p: &CoreSpecParams,
    t: &ThreadObs,
    writes_pm: bool,
    m: Option<&mut Member>,
    now: u64,
    d: &mut Decision,
) -> Option<Member> {
    match m {
        None => {
            let group = if writes_pm { Group::Pm } else { Group::General };
            let set = if writes_pm { p.pm_cpus } else { p.general_cpus };
            if t.allowed != set {
                d.thread_cpus.push((t.tid, set));
            }
            d.reasons.push(format!(
                "thread {} joins the {} group",
                t.tid,
                if writes_pm { "PM" } else { "general" }
            ));
            Some(Member {
                group,
                last_seen_ns: now,
                original: t.allowed,
                present: true,
                seen: true,
            })
        }
        Some(m) => {
            m.seen = true;
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
            None
        }
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
    fn thread_order_and_hints_do_not_change_decisions() {
        // the merge walk (threads in ascending tid order), the lookups (any
        // other order) and the steps without a walk (hinted: same shape, no
        // writer) give the same groups and changes
        let mut p = params();
        p.pm_expiry_ns = 5 * MS;
        p.general_expiry_ns = 20 * MS;
        let (mut up, mut down, mut hinted) = (
            CoreSpec::new(p.clone()),
            CoreSpec::new(p.clone()),
            CoreSpec::new(p),
        );
        let sorted = |d: &Decision| {
            let mut c = d.thread_cpus.clone();
            c.sort_by_key(|(t, _)| *t);
            let mut r = d.reasons.clone();
            r.sort();
            (c, r)
        };
        let (mut expired, mut rejoined) = (false, false);
        for ms in 1..=80u64 {
            // threads 10..30 come and go; every 7th writes PM now and then;
            // thread 25 belongs to the LC job
            let threads: Vec<(u32, u32, bool)> = (10..30u32)
                .filter(|&t| !(ms > 30 && ms < 60 && t.is_multiple_of(3)))
                .map(|t| {
                    (
                        t,
                        u32::from(t == 25),
                        (u64::from(t) + ms).is_multiple_of(7) && ms < 40,
                    )
                })
                .collect();
            let o = obs(ms, &threads);
            let mut rev = o.clone();
            rev.threads.reverse();
            let (a, b) = (up.decide(&o), down.decide(&rev));
            assert_eq!(sorted(&a), sorted(&b), "at {ms} ms");
            // the thread set changes at 31 and 60 ms; every thread reports
            let shape = u64::from(ms > 30) + u64::from(ms >= 60);
            let all: Vec<usize> = (0..o.threads.len()).collect();
            let c = hinted.decide_hinted(
                &o,
                &BTreeSet::new(),
                Hints {
                    shape: Some(shape),
                    reporting: Some(&all),
                },
            );
            assert_eq!(a, c, "hinted, at {ms} ms");
            expired |= a
                .reasons
                .iter()
                .any(|r| r.contains("own affinity restored"));
            rejoined |= ms >= 60 && a.reasons.iter().any(|r| r.contains("joins"));
            for tid in 10..30 {
                assert_eq!(
                    up.group_of(tid),
                    down.group_of(tid),
                    "thread {tid} at {ms} ms"
                );
                assert_eq!(
                    up.group_of(tid),
                    hinted.group_of(tid),
                    "thread {tid} at {ms} ms"
                );
            }
        }
        assert_eq!(up.pm_group_size(), down.pm_group_size());
        assert_eq!(
            (expired, rejoined),
            (true, true),
            "the sequence exercises expiry"
        );
    }

    #[test]
    fn a_quiet_step_with_the_same_shape_does_not_walk_the_threads() {
        let mut cs = CoreSpec::new(params());
        let hints = |shape| Hints {
            shape: Some(shape),
            reporting: Some(&[]),
        };
        cs.decide_hinted(&obs(1, &[(10, 0, false)]), &BTreeSet::new(), hints(7));
        // the caller's shape id is trusted: a thread added without a new id
        // is not seen (the daemon bumps the id whenever its threads change)
        let two = obs(2, &[(10, 0, false), (11, 0, false)]);
        let d = cs.decide_hinted(&two, &BTreeSet::new(), hints(7));
        assert!(d.reasons.is_empty());
        assert_eq!(cs.group_of(11), None);
        // a new id, or a PM writer, makes it walk
        let d = cs.decide_hinted(&two, &BTreeSet::new(), hints(8));
        assert_eq!(cs.group_of(11), Some(Group::General), "{d:?}");
        let three = obs(3, &[(10, 0, false), (11, 0, false), (12, 0, false)]);
        cs.decide_hinted(&three, &BTreeSet::from([10]), hints(8));
        assert_eq!(cs.group_of(10), Some(Group::Pm));
        assert_eq!(cs.group_of(12), Some(Group::General));
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
