//! The real runtime pins its flushers (issue 19): on this host, each
//! flusher thread's affinity is the CPU `pin::plan` gives it, inside the
//! process's mask, or the whole mask when no CPU is idle.

use super::*;
use crate::pin::{affinity_of, plan, Pinner, SYSFS};
use memtamer_core::CpuSet;
use std::path::PathBuf;

/// Waits (bounded; it takes microseconds) until every flusher thread has
/// run and reported its tid; returns the tids.
fn flusher_tids(r: &Ribbon) -> Vec<i32> {
    let s = &r.shared;
    for _ in 0..20_000 {
        let tids: Vec<i32> = s
            .flusher_tids
            .iter()
            .map(|t| t.load(Ordering::Relaxed))
            .collect();
        if tids.iter().all(|&t| t != 0) {
            return tids;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    panic!("flusher threads never started");
}

/// Waits (bounded) until every flusher's affinity equals `want`; returns
/// what they have at the end.
fn settle(tids: &[i32], want: &[CpuSet]) -> Vec<CpuSet> {
    let mut got = Vec::new();
    for _ in 0..20_000 {
        got = tids
            .iter()
            .map(|&t| affinity_of(t).expect("sched_getaffinity of a flusher"))
            .collect();
        if got == want {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    got
}

/// The stats once `done` holds (bounded wait): a pin counts after its
/// `sched_setaffinity` returns, and the thread may first wait to run on
/// its new CPU, so a thread can have its affinity before its count.
fn stats_when(r: &Ribbon, done: impl Fn(&Stats) -> bool) -> Stats {
    let mut st = r.stats();
    for _ in 0..20_000 {
        if done(&st) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
        st = r.stats();
    }
    st
}

fn pinned_config(flushers: usize, sysfs: Option<PathBuf>) -> Config {
    let mut c = Config::new(2, 64);
    c.flushers = Flushers::Fixed(flushers);
    c.executor = Executor {
        flush: |_, _| {},
        fence: || {},
    };
    c.pin = sysfs;
    c
}

#[test]
fn two_flushers_are_each_pinned_to_one_idle_cpu_inside_the_process_mask() {
    let process = crate::pin::process_affinity().unwrap();
    let pinner = Pinner::read(std::path::Path::new(SYSFS)).unwrap();
    assert_eq!(pinner.allowed, process);
    // This (application) thread stays on one CPU, so it is the only busy
    // one whatever the scheduler does between start and registration.
    let mine = crate::pin::current_affinity().unwrap();
    let app_cpu = process.iter().next().unwrap();
    assert!(crate::pin::pin_self(&CpuSet::single(app_cpu)));
    let ribbon = Ribbon::start(pinned_config(2, Some(SYSFS.into()))).unwrap();
    let producer = ribbon.producer();
    assert!(producer.has_queue());
    let busy = ribbon.shared.busy_cpus();
    assert_eq!(busy, vec![app_cpu as u32], "the application's CPU");
    let want_cpus = plan(&pinner.threads, &process, &busy, 2);
    let want: Vec<CpuSet> = want_cpus
        .iter()
        .map(|c| c.map_or(process, |c| CpuSet::single(c as usize)))
        .collect();
    let tids = flusher_tids(&ribbon);
    let got = settle(&tids, &want);
    assert_eq!(got, want, "busy {busy:?}, plan {want_cpus:?}");
    let idle = process
        .iter()
        .filter(|&c| !busy.contains(&(c as u32)))
        .count();
    for (cpu, set) in want_cpus.iter().zip(&got) {
        if idle > 0 {
            // an idle CPU exists: each flusher is on exactly one of them
            let c = cpu.expect("an idle CPU but the flusher is unpinned");
            assert_eq!(set.len(), 1);
            assert!(process.contains(c as usize), "CPU {c} outside {process:?}");
            assert!(!busy.contains(&c), "flusher on the application's CPU {c}");
        } else {
            assert_eq!(*set, process);
        }
    }
    let st = stats_when(&ribbon, |s| s.pins >= 1);
    assert!(st.pins >= 1, "{st:?}");
    assert_eq!(st.pin_failures, 0);
    drop(producer);
    ribbon.stop();
    assert!(crate::pin::pin_self(&mine));
}

#[test]
fn pinning_off_or_without_topology_leaves_flushers_on_the_process_mask() {
    let process = crate::pin::process_affinity().unwrap();
    for (sysfs, failures) in [(None, 0), (Some(PathBuf::from("/nonexistent-sysfs")), 1)] {
        let ribbon = Ribbon::start(pinned_config(2, sysfs.clone())).unwrap();
        let producer = ribbon.producer();
        let tids = flusher_tids(&ribbon);
        // give the flushers many rounds to (wrongly) pin themselves
        std::thread::sleep(std::time::Duration::from_millis(20));
        for t in tids {
            assert_eq!(affinity_of(t), Some(process), "sysfs {sysfs:?}");
        }
        let st = ribbon.stats();
        assert_eq!((st.pins, st.pin_failures), (0, failures), "sysfs {sysfs:?}");
        drop(producer);
        ribbon.stop();
    }
}

/// Waits (bounded) until the control and proactive threads have run and
/// reported their tids.
fn helper_tids(r: &Ribbon) -> [i32; 2] {
    let s = &r.shared;
    for _ in 0..20_000 {
        let t = [0, 1].map(|i| s.helper_tids[i].load(Ordering::Relaxed));
        if t.iter().all(|&t| t != 0) {
            return t;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    panic!("control or proactive thread never started");
}

fn adaptive_config(sysfs: Option<PathBuf>) -> Config {
    let mut c = pinned_config(1, sysfs);
    c.flushers = Flushers::Adaptive;
    c.cores = 2;
    c.detect_idle = false;
    c.control = crate::controller::ControlConfig {
        p1: 1,
        ..crate::controller::ControlConfig::thesis(2)
    };
    c.sampler = Some(Box::new(crate::proactive::Recorded::new(Vec::new())));
    c
}

#[test]
fn the_control_and_proactive_threads_are_pinned_to_their_planned_cpus() {
    let process = crate::pin::process_affinity().unwrap();
    let pinner = Pinner::read(std::path::Path::new(SYSFS)).unwrap();
    let mine = crate::pin::current_affinity().unwrap();
    let app_cpu = process.iter().next().unwrap();
    assert!(crate::pin::pin_self(&CpuSet::single(app_cpu)));
    let ribbon = Ribbon::start(adaptive_config(Some(SYSFS.into()))).unwrap();
    let producer = ribbon.producer();
    let busy = ribbon.shared.busy_cpus();
    assert_eq!(busy, vec![app_cpu as u32], "the application's CPU");
    let h = crate::pin::helper_plan(&pinner.threads, &process, &busy);
    let want: Vec<CpuSet> = [h.control, h.proactive]
        .iter()
        .map(|c| c.map_or(process, |c| CpuSet::single(c as usize)))
        .collect();
    let tids = helper_tids(&ribbon);
    let got = settle(&tids, &want);
    assert_eq!(got, want, "busy {busy:?}, plan {h:?}");
    if process.len() > 1 {
        // an idle CPU exists: each helper is on one, never the application's
        for c in [h.control, h.proactive] {
            let c = c.expect("an idle CPU but the helper is unpinned");
            assert!(process.contains(c as usize) && c != app_cpu as u32);
        }
        let st = stats_when(&ribbon, |s| s.helper_pins >= 2);
        assert!(st.helper_pins >= 2, "{st:?}");
    }
    assert_eq!(ribbon.stats().pin_failures, 0);
    drop(producer);
    ribbon.stop();
    assert!(crate::pin::pin_self(&mine));
}

#[test]
fn pinning_off_leaves_the_control_and_proactive_threads_on_the_process_mask() {
    let process = crate::pin::process_affinity().unwrap();
    let ribbon = Ribbon::start(adaptive_config(None)).unwrap();
    let producer = ribbon.producer();
    let tids = helper_tids(&ribbon);
    std::thread::sleep(std::time::Duration::from_millis(20));
    for t in tids {
        assert_eq!(affinity_of(t), Some(process));
    }
    assert_eq!(ribbon.stats().helper_pins, 0);
    drop(producer);
    ribbon.stop();
}
