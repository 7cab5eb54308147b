//! Per-thread CPU affinity system calls (`sched_getaffinity`,
//! `sched_setaffinity`). Unjournaled: [`crate::affinity`] journals before
//! calling them, and [`crate::undo`] calls them to put an original back.

use crate::{last_os_error, Error, Result};
use memtamer_core::cpuset::MAX_CPUS;
use memtamer_core::CpuSet;

// Every CPU a `CpuSet` can hold fits a `cpu_set_t` (both are 1024 wide).
const _: () = assert!(MAX_CPUS <= 8 * std::mem::size_of::<libc::cpu_set_t>());

fn to_cpu_set_t(cpus: &CpuSet) -> libc::cpu_set_t {
    // SAFETY: cpu_set_t is a plain bitmask; all-zero is the valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for cpu in cpus.iter() {
        // SAFETY: cpu < MAX_CPUS <= CPU_SETSIZE (asserted above).
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    set
}

fn from_cpu_set_t(set: &libc::cpu_set_t) -> CpuSet {
    let mut cpus = CpuSet::empty();
    for cpu in 0..MAX_CPUS {
        // SAFETY: cpu < MAX_CPUS <= CPU_SETSIZE (asserted above).
        if unsafe { libc::CPU_ISSET(cpu, set) } {
            cpus.insert(cpu);
        }
    }
    cpus
}

/// The CPUs thread `tid` may run on (`sched_getaffinity`), read before
/// changing it so it can be journaled and restored.
pub fn thread_affinity(tid: i32) -> Result<CpuSet> {
    // SAFETY: zeroed cpu_set_t is valid; the kernel writes at most its size.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let rc =
        unsafe { libc::sched_getaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Err(Error::Sys {
            op: "sched_getaffinity",
            id: tid,
            source: last_os_error(),
        });
    }
    Ok(from_cpu_set_t(&set))
}

/// Restricts thread `tid` to `cpus` (`sched_setaffinity`). An empty set is
/// rejected here rather than by the kernel, with a clearer message.
pub fn set_thread_affinity(tid: i32, cpus: &CpuSet) -> Result<()> {
    if cpus.is_empty() {
        return Err(Error::Invalid(format!("empty CPU set for thread {tid}")));
    }
    let set = to_cpu_set_t(cpus);
    // SAFETY: `set` is a valid, initialised cpu_set_t of the given size.
    let rc = unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc != 0 {
        return Err(Error::Sys {
            op: "sched_setaffinity",
            id: tid,
            source: last_os_error(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_affinity_is_rejected() {
        let tid = std::process::id() as i32;
        assert!(matches!(
            set_thread_affinity(tid, &CpuSet::empty()),
            Err(Error::Invalid(_))
        ));
    }

    #[test]
    fn cpu_set_conversion_round_trips() {
        let s = CpuSet::parse_list("0,3-5,255").unwrap();
        assert_eq!(from_cpu_set_t(&to_cpu_set_t(&s)), s);
    }
}
