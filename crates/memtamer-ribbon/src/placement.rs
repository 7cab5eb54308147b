//! Which hardware threads Ribbon's flusher threads take (thesis §6.3.1:
//! "the number of flushing threads is subject to the number of idle
//! threads"; the flushers run beside the application on the hardware
//! threads it leaves idle).
//!
//! Pure: the caller gives the machine's hardware threads (from sysfs
//! topology, or the simulator's platform) and the ones the application
//! occupies. The order puts flushers where they disturb the application
//! least: on the application's socket first (thesis §6.5.1 runs on one
//! socket "to eliminate NUMA effects"), there on physical cores with no
//! application thread (one hardware thread per core), then on the other
//! hardware threads of those cores (sharing a core with another flusher),
//! and only then on the SMT siblings of application cores, which share the
//! core's fill buffers and execution ports with the application
//! (docs/notebook/ribbon.md "What bounds Ribbon at 24 threads", item 3).

/// One hardware thread of the machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HwThread {
    /// Logical CPU number (what `sched_setaffinity` takes).
    pub cpu: u32,
    /// Physical core id, unique across sockets.
    pub core: u32,
    /// Socket (package) id.
    pub socket: u32,
}

/// The hardware threads in the order flushers take them: flusher `f`
/// runs on `order[f % order.len()]`. Busy hardware threads (the
/// application's) are left out; an empty result means no idle hardware
/// thread (Ribbon then flushes on the application threads, thesis
/// §6.3.1). The home socket is the one holding most busy threads (the
/// lowest id on a tie, or the lowest socket when nothing is busy).
pub fn flusher_order(threads: &[HwThread], busy: &[u32]) -> Vec<u32> {
    let is_busy = |t: &HwThread| busy.contains(&t.cpu);
    let busy_core = |core: u32| threads.iter().any(|t| t.core == core && is_busy(t));
    let mut sockets: Vec<u32> = threads.iter().map(|t| t.socket).collect();
    sockets.sort_unstable();
    sockets.dedup();
    let load = |s: u32| {
        threads
            .iter()
            .filter(|t| t.socket == s && is_busy(t))
            .count()
    };
    // most busy threads first, then the lowest id
    sockets.sort_by_key(|&s| (std::cmp::Reverse(load(s)), s));
    let mut idle: Vec<HwThread> = threads.iter().copied().filter(|t| !is_busy(t)).collect();
    idle.sort_by_key(|t| t.cpu);
    let mut order = Vec::with_capacity(idle.len());
    for &s in &sockets {
        let here: Vec<HwThread> = idle.iter().copied().filter(|t| t.socket == s).collect();
        // 1: one hardware thread of each core without application threads
        let mut first_of_core: Vec<u32> = Vec::new();
        for t in here.iter().filter(|t| !busy_core(t.core)) {
            if !first_of_core.contains(&t.core) {
                first_of_core.push(t.core);
                order.push(t.cpu);
            }
        }
        // 2: the other hardware threads of those cores
        for t in here.iter().filter(|t| !busy_core(t.core)) {
            if !order.contains(&t.cpu) {
                order.push(t.cpu);
            }
        }
        // 3: the idle siblings of application cores
        for t in here.iter().filter(|t| busy_core(t.core)) {
            order.push(t.cpu);
        }
    }
    order
}

/// Where Ribbon's control and proactive threads run (None: unpinned).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HelperCpus {
    /// The proactive flushing thread's hardware thread.
    pub proactive: Option<u32>,
    /// The control thread's hardware thread.
    pub control: Option<u32>,
}

/// The hardware threads of the control and proactive threads: the last
/// ones of [`flusher_order`] on the application's socket, so the flushers
/// reach them last, and never the SMT sibling of an application core while
/// a core without application threads is idle there.
///
/// Why: thesis §6.3.1 runs Ribbon's threads on the hardware threads the
/// application leaves idle ("the number of flushing threads is subject to
/// the number of idle threads"), and §6.3.2 keeps "the proactive thread and
/// flushing threads as two independent groups", synchronization-free; a
/// helper left where the scheduler puts it competes with a flusher or an
/// application thread for a CPU instead (docs/notebook/ribbon.md, "Where the control
/// and proactive threads run"). The home socket is [`flusher_order`]'s
/// first (thesis §6.5.1 runs on one socket "to eliminate NUMA effects"; a
/// proactive `clwb` from another socket would snoop across the
/// interconnect). The proactive thread takes the last such hardware
/// thread, the control thread the one before it; with a single one they
/// share it (the control thread wakes once per tick, every 1-50 ms). Both
/// None when no hardware thread is idle.
pub fn helper_cpus(threads: &[HwThread], busy: &[u32]) -> HelperCpus {
    let order = flusher_order(threads, busy);
    let socket_of = |cpu: u32| threads.iter().find(|t| t.cpu == cpu).map(|t| t.socket);
    let Some(home) = order.first().and_then(|&c| socket_of(c)) else {
        return HelperCpus {
            proactive: None,
            control: None,
        };
    };
    let core_of = |cpu: u32| threads.iter().find(|t| t.cpu == cpu).map(|t| t.core);
    let busy_core = |core: Option<u32>| busy.iter().any(|&b| core.is_some() && core_of(b) == core);
    let here: Vec<u32> = order
        .iter()
        .copied()
        .filter(|&c| socket_of(c) == Some(home))
        .collect();
    let free_core: Vec<u32> = here
        .iter()
        .copied()
        .filter(|&c| !busy_core(core_of(c)))
        .collect();
    // from the end of the order: idle cores' threads first, the
    // application cores' siblings only when no core is idle
    let pool = if free_core.is_empty() {
        here
    } else {
        free_core
    };
    let mut from_end = pool.iter().rev().copied();
    let proactive = from_end.next();
    let control = from_end.next().or(proactive);
    HelperCpus { proactive, control }
}

/// Linux's numbering of `sockets` x `cores_per_socket` cores with
/// `threads_per_core` hardware threads: CPUs `0..cores` are each core's
/// first hardware thread, the next `cores` their second, and so on (the
/// layout of the thesis's Cascade Lake and of the simulator's platforms).
pub fn linux_numbering(
    sockets: u32,
    cores_per_socket: u32,
    threads_per_core: u32,
) -> Vec<HwThread> {
    let cores = sockets * cores_per_socket;
    (0..cores * threads_per_core)
        .map(|cpu| {
            let core = cpu % cores;
            HwThread {
                cpu,
                core,
                socket: core / cores_per_socket.max(1),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(a: u32, b: u32) -> Vec<u32> {
        (a..b).collect()
    }

    #[test]
    fn thesis_socket_at_four_application_threads_uses_idle_cores_then_their_siblings() {
        let m = linux_numbering(1, 24, 2);
        let order = flusher_order(&m, &range(0, 4));
        let mut want = range(4, 24);
        want.extend(range(28, 48));
        want.extend(range(24, 28));
        assert_eq!(order, want);
    }

    #[test]
    fn thesis_socket_at_twenty_four_application_threads_has_only_siblings() {
        let m = linux_numbering(1, 24, 2);
        assert_eq!(flusher_order(&m, &range(0, 24)), range(24, 48));
        assert!(flusher_order(&m, &range(0, 48)).is_empty());
    }

    #[test]
    fn the_application_socket_comes_before_the_other() {
        // two sockets of 4 cores x 2: cores 0-3 on socket 0, 4-7 on 1
        let m = linux_numbering(2, 4, 2);
        assert_eq!(m[5].socket, 1);
        assert_eq!(m[9].core, 1);
        let order = flusher_order(&m, &[4, 5]);
        // socket 1: idle cores 6, 7; their siblings 14, 15; then the
        // application cores' siblings 12, 13; then socket 0
        assert_eq!(&order[..6], &[6, 7, 14, 15, 12, 13]);
        assert_eq!(&order[6..], &[0, 1, 2, 3, 8, 9, 10, 11]);
    }

    #[test]
    fn without_smt_or_load_every_core_is_taken_in_order() {
        let m = linux_numbering(1, 8, 1);
        assert_eq!(flusher_order(&m, &[]), range(0, 8));
        assert_eq!(flusher_order(&m, &[2, 5]), vec![0, 1, 3, 4, 6, 7]);
    }

    #[test]
    fn helpers_take_the_last_idle_core_threads_of_the_application_socket() {
        let m = linux_numbering(1, 24, 2);
        // N = 4: flushers take 4..23, 28..47, 24..27; the helpers the last
        // two threads of idle cores, not 24..27 (application siblings)
        let h = helper_cpus(&m, &range(0, 4));
        assert_eq!((h.proactive, h.control), (Some(47), Some(46)));
        // N = 24: only application siblings are idle, so they take those
        let h = helper_cpus(&m, &range(0, 24));
        assert_eq!((h.proactive, h.control), (Some(47), Some(46)));
        // nothing idle: unpinned
        let h = helper_cpus(&m, &range(0, 48));
        assert_eq!((h.proactive, h.control), (None, None));
    }

    #[test]
    fn helpers_avoid_application_siblings_while_a_core_is_idle() {
        // 4 cores x 2 (core k: CPUs k and k + 4); the application on
        // cores 0-2 leaves core 3 idle: the helpers take its CPUs 7 and 3,
        // not the idle siblings 4-6 of application cores
        let m = linux_numbering(1, 4, 2);
        let h = helper_cpus(&m, &[0, 1, 2]);
        assert_eq!((h.proactive, h.control), (Some(7), Some(3)));
        // an application thread on CPU 7 makes core 3 busy too: only
        // siblings are idle, and the helpers take the last of them
        let h = helper_cpus(&m, &[0, 1, 2, 7]);
        assert_eq!((h.proactive, h.control), (Some(6), Some(5)));
        let h = helper_cpus(&m, &[0, 1, 2, 3]);
        assert_eq!((h.proactive, h.control), (Some(7), Some(6)));
        // no SMT, one idle core: shared
        let m = linux_numbering(1, 4, 1);
        let h = helper_cpus(&m, &[0, 1, 2]);
        assert_eq!((h.proactive, h.control), (Some(3), Some(3)));
    }

    #[test]
    fn helpers_stay_on_the_application_socket() {
        let m = linux_numbering(2, 4, 2);
        // application on socket 1 (CPUs 4, 5): its idle cores 6, 7 and
        // their siblings 14, 15; the order's last there are 15, 14
        let h = helper_cpus(&m, &[4, 5]);
        assert_eq!((h.proactive, h.control), (Some(15), Some(14)));
        // socket 1 full: siblings 12..15 of application cores, although
        // socket 0 is all idle
        let h = helper_cpus(&m, &[4, 5, 6, 7]);
        assert_eq!((h.proactive, h.control), (Some(15), Some(14)));
    }

    #[test]
    fn every_idle_thread_appears_once() {
        let m = linux_numbering(2, 6, 2);
        for busy in [vec![], vec![0, 13], range(0, 12), vec![3, 15, 20]] {
            let mut o = flusher_order(&m, &busy);
            assert!(o.iter().all(|c| !busy.contains(c)));
            let n = o.len();
            o.sort_unstable();
            o.dedup();
            assert_eq!(n, o.len());
            assert_eq!(n, 24 - busy.len());
        }
    }
}
