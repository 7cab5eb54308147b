//! Pinning the real runtime's flusher threads to the hardware threads
//! the application leaves idle (thesis §6.3.1: flushers run on idle
//! hardware threads), in the order of [`crate::placement::flusher_order`],
//! the same order the simulator uses, and its control and proactive
//! threads on the last of them ([`crate::placement::helper_cpus`]).
//!
//! Functional core: [`hw_threads`] turns the sysfs tree into
//! [`HwThread`]s and [`plan`] maps flusher ids to CPUs. Imperative shell:
//! [`Pinner`] reads the tree and the process's affinity mask once at
//! `ribbon_start`, and [`pin_self`] calls `sched_setaffinity` on the
//! flusher's own thread. A failure only counts (`Stats::pin_failures`) and
//! leaves the flusher on the process's whole mask: never an error for the
//! application.

use std::path::Path;

use memtamer_core::topology::Topology;
use memtamer_core::CpuSet;

use crate::placement::{flusher_order, helper_cpus, HelperCpus, HwThread};

/// Env var: `0` (or `off`) keeps the flushers unpinned; `1`/unset pins
/// them (docs/ribbon.md, "Where the real flushers run").
pub const ENV_PIN: &str = "MEMTAMER_RIBBON_PIN";
/// Where Linux exposes the CPU topology.
pub const SYSFS: &str = "/sys/devices/system";

/// The machine's hardware threads from the scheduling-domain tree: the
/// NUMA node stands for the socket (the two agree on the thesis's Cascade
/// Lake and on any host without sub-NUMA clustering), and each SMT core of
/// the tree gets an id unique across nodes.
pub fn hw_threads(t: &Topology) -> Vec<HwThread> {
    let mut out = Vec::new();
    let mut core = 0u32;
    for node in &t.nodes {
        for llc in &node.llcs {
            for c in &llc.cores {
                for cpu in c.cpus.iter() {
                    out.push(HwThread {
                        cpu: cpu as u32,
                        core,
                        socket: node.node,
                    });
                }
                core += 1;
            }
        }
    }
    out.sort_by_key(|t| t.cpu);
    out
}

/// CPUs no Ribbon thread may take: the application's (`busy`) and every CPU
/// outside the process's mask (`allowed`), so nothing is pinned outside it.
fn taken_cpus(threads: &[HwThread], allowed: &CpuSet, busy: &[u32]) -> Vec<u32> {
    let mut taken: Vec<u32> = busy.to_vec();
    taken.extend(
        threads
            .iter()
            .filter(|t| !allowed.contains(t.cpu as usize))
            .map(|t| t.cpu),
    );
    taken
}

/// The CPU of each of `flushers` flushers: flusher `f` gets
/// `order[f % order.len()]` of [`flusher_order`] (so flushers share CPUs
/// when there are fewer idle hardware threads than flushers), or None
/// (unpinned) when no hardware thread is idle. `busy` are the CPUs the
/// application threads run on; every CPU outside `allowed` (the process's
/// affinity mask) counts as busy too, so no flusher is ever pinned
/// outside the mask.
pub fn plan(
    threads: &[HwThread],
    allowed: &CpuSet,
    busy: &[u32],
    flushers: usize,
) -> Vec<Option<u32>> {
    let order = flusher_order(threads, &taken_cpus(threads, allowed, busy));
    (0..flushers)
        .map(|f| order.get(f % order.len().max(1)).copied())
        .collect()
}

/// The CPUs of the control and proactive threads
/// ([`helper_cpus`]), with every CPU outside `allowed` counted busy as in
/// [`plan`]; None for a thread means it stays on the process's mask.
pub fn helper_plan(threads: &[HwThread], allowed: &CpuSet, busy: &[u32]) -> HelperCpus {
    helper_cpus(threads, &taken_cpus(threads, allowed, busy))
}

/// Whether an `MEMTAMER_RIBBON_PIN` value asks for pinning (None: the
/// value is not understood).
pub fn parse_env(value: &str) -> Option<bool> {
    match value.trim() {
        "" | "1" | "on" => Some(true),
        "0" | "off" => Some(false),
        _ => None,
    }
}

/// What the flushers need to pin themselves: the machine's hardware
/// threads and the process's affinity mask, both read at start.
#[derive(Clone, Debug)]
pub struct Pinner {
    /// The machine's hardware threads ([`hw_threads`]).
    pub threads: Vec<HwThread>,
    /// The CPUs the process may use ([`process_affinity`]).
    pub allowed: CpuSet,
}

impl Pinner {
    /// Reads the topology under `sysfs` (normally [`SYSFS`]) and the
    /// process's affinity mask.
    pub fn read(sysfs: &Path) -> Result<Pinner, String> {
        let t = memtamer_linux::topology::read_topology(sysfs)?;
        let allowed = process_affinity().ok_or("sched_getaffinity failed")?;
        Ok(Pinner {
            threads: hw_threads(&t),
            allowed,
        })
    }
}

/// The process's CPU affinity mask: its main thread's (what `taskset` or
/// a cgroup cpuset gives the process), not the calling thread's, which an
/// application may have pinned to one CPU for itself.
pub fn process_affinity() -> Option<CpuSet> {
    // SAFETY: no arguments, cannot fail.
    affinity_of(unsafe { libc::getpid() })
}

/// The calling thread's CPU affinity mask.
pub fn current_affinity() -> Option<CpuSet> {
    affinity_of(0)
}

/// Thread `tid`'s CPU affinity mask (0: the caller), through
/// memtamer-actuate's system-call wrapper (the daemon's too).
pub fn affinity_of(tid: i32) -> Option<CpuSet> {
    memtamer_actuate::sched::thread_affinity(tid).ok()
}

/// Restricts the calling thread to `cpus`; false when it is refused (an
/// empty set, a CPU gone offline, a cgroup cpuset that shrank).
pub fn pin_self(cpus: &CpuSet) -> bool {
    memtamer_actuate::sched::set_thread_affinity(0, cpus).is_ok()
}

/// The CPU the calling thread runs on now (None if unknown): an
/// application thread's CPU when it registers its queue.
pub fn current_cpu() -> Option<u32> {
    // SAFETY: no arguments, no memory.
    let c = unsafe { libc::sched_getcpu() };
    u32::try_from(c).ok()
}

/// The calling thread's kernel thread id (for tests and diagnostics).
pub fn current_tid() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::gettid() }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2 sockets x 2 cores x 2 SMT, numbered as Linux does (memtamer-linux's
    /// fake sysfs host): cores 0,1 on socket 0 are CPUs 0,1 and 4,5.
    fn fake_host() -> (std::path::PathBuf, Pinner) {
        let root = std::env::temp_dir().join(format!(
            "mt-ribbon-pin-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        memtamer_linux::topology::write_fake_host(&root, 2, 2).unwrap();
        let t = memtamer_linux::topology::read_topology(&root).unwrap();
        let p = Pinner {
            threads: hw_threads(&t),
            allowed: CpuSet::parse_list("0-7").unwrap(),
        };
        (root, p)
    }

    #[test]
    fn the_sysfs_tree_becomes_linux_numbered_hardware_threads() {
        let (root, p) = fake_host();
        let want: Vec<(u32, u32)> = p.threads.iter().map(|t| (t.cpu, t.socket)).collect();
        assert_eq!(
            want,
            vec![
                (0, 0),
                (1, 0),
                (2, 1),
                (3, 1),
                (4, 0),
                (5, 0),
                (6, 1),
                (7, 1)
            ]
        );
        // siblings share a core id, different cores differ
        let core = |c: usize| p.threads[c].core;
        assert_eq!(core(0), core(4));
        assert_eq!(core(3), core(7));
        assert_ne!(core(0), core(1));
        assert_ne!(core(1), core(2));
        let _ = std::fs::remove_dir_all(root);
    }

    #[test]
    fn flushers_take_the_idle_core_then_siblings_then_the_other_socket() {
        let (root, p) = fake_host();
        // the application on CPU 0 (socket 0, core 0)
        let got = plan(&p.threads, &p.allowed, &[0], 7);
        // idle core 1 (CPU 1), its sibling 5, core 0's sibling 4, then socket 1
        let want = [1, 5, 4, 2, 3, 6, 7].map(Some).to_vec();
        assert_eq!(got, want);
        let _ = std::fs::remove_dir_all(root);
    }

    #[test]
    fn never_outside_the_process_mask_and_shared_when_short() {
        let (root, p) = fake_host();
        let allowed = CpuSet::parse_list("0,1,4").unwrap();
        let got = plan(&p.threads, &allowed, &[0], 4);
        // only 1 and 4 are idle and allowed: flushers 2 and 3 share them
        assert_eq!(got, vec![Some(1), Some(4), Some(1), Some(4)]);
        // everything allowed is busy: unpinned
        assert_eq!(plan(&p.threads, &allowed, &[0, 1, 4], 2), vec![None, None]);
        let _ = std::fs::remove_dir_all(root);
    }

    #[test]
    fn helpers_take_the_last_idle_cpu_of_the_application_socket() {
        let (root, p) = fake_host();
        // the application on CPU 0: socket 0's order is 1, 5, 4; the idle
        // core 1 holds 1 and 5, so proactive on 5, control on 1
        let h = helper_plan(&p.threads, &p.allowed, &[0]);
        assert_eq!((h.proactive, h.control), (Some(5), Some(1)));
        // inside a mask of {0, 1, 4}: core 1's CPU 5 is outside, so only
        // 1 and 4 are left (both on cores counted busy): the last is 4
        let allowed = CpuSet::parse_list("0,1,4").unwrap();
        let h = helper_plan(&p.threads, &allowed, &[0]);
        assert_eq!((h.proactive, h.control), (Some(4), Some(1)));
        let h = helper_plan(&p.threads, &allowed, &[0, 1, 4]);
        assert_eq!((h.proactive, h.control), (None, None));
        let _ = std::fs::remove_dir_all(root);
    }

    #[test]
    fn the_env_switch_parses() {
        assert_eq!(parse_env("0"), Some(false));
        assert_eq!(parse_env(" off "), Some(false));
        assert_eq!(parse_env("1"), Some(true));
        assert_eq!(parse_env(""), Some(true));
        assert_eq!(parse_env("maybe"), None);
    }

    #[test]
    fn this_thread_can_read_and_restore_its_mask() {
        let mask = current_affinity().unwrap();
        assert!(!mask.is_empty());
        assert!(pin_self(&mask));
        assert_eq!(current_affinity(), Some(mask));
        assert!(mask.contains(current_cpu().unwrap() as usize));
    }
}
