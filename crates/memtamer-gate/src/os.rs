//! Thin OS helpers: ids, clocks, futexes and liveness checks.

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Once;
use std::time::Duration;

/// Bumped in every child after fork, so cached ids are refreshed.
static FORK_EPOCH: AtomicU64 = AtomicU64::new(1);
static ATFORK: Once = Once::new();

extern "C" fn after_fork_in_child() {
    FORK_EPOCH.fetch_add(1, Ordering::Relaxed);
}

thread_local! {
    /// (fork epoch, pid, tid) of the calling thread.
    static IDS: Cell<(u64, u32, u32)> = const { Cell::new((0, 0, 0)) };
}

/// Registers the fork handler (once per process; `Gate::open` calls it).
pub(crate) fn watch_forks() {
    ATFORK.call_once(|| {
        // SAFETY: registering a handler that only touches an atomic.
        unsafe { libc::pthread_atfork(None, None, Some(after_fork_in_child)) };
    });
}

/// The current fork epoch; changes in a forked child.
pub(crate) fn fork_epoch() -> u64 {
    FORK_EPOCH.load(Ordering::Relaxed)
}

fn ids() -> (u32, u32) {
    watch_forks();
    let epoch = fork_epoch();
    IDS.with(|cell| {
        let (e, pid, tid) = cell.get();
        if e == epoch {
            return (pid, tid);
        }
        // SAFETY: getpid/gettid cannot fail.
        let pid = unsafe { libc::getpid() } as u32;
        let tid = unsafe { libc::syscall(libc::SYS_gettid) } as u32;
        cell.set((epoch, pid, tid));
        (pid, tid)
    })
}

/// Process id of the caller.
pub fn pid() -> u32 {
    ids().0
}

/// Thread id of the caller.
pub fn tid() -> u32 {
    ids().1
}

/// The lock word naming the calling thread (pid << 32 | tid).
pub(crate) fn lock_word() -> u64 {
    let (pid, tid) = ids();
    (u64::from(pid) << 32) | u64::from(tid)
}

/// CLOCK_MONOTONIC in nanoseconds: one clock for every process.
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid pointer to a timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

pub(crate) fn yield_now() {
    // SAFETY: no arguments.
    unsafe { libc::sched_yield() };
}

/// Sleeps while `*word == expected`, at most `timeout` (shared futex: works
/// across processes mapping the same file).
pub(crate) fn futex_wait(word: &AtomicU32, expected: u32, timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: word is a valid, aligned u32 in shared memory; ts outlives the call.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            &ts as *const libc::timespec,
            std::ptr::null::<u32>(),
            0u32,
        )
    };
}

/// Wakes every sleeper on `word`.
pub(crate) fn futex_wake(word: &AtomicU32) {
    // SAFETY: word is a valid, aligned u32.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE,
            i32::MAX,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            0u32,
        )
    };
}

/// Whether thread `tid` of process `pid` still exists (`tid` 0: the
/// process). `thorough` also treats zombies as dead by reading
/// /proc/PID/task/TID/stat. Assumes one pid namespace for all gate users.
pub fn alive(pid: u32, tid: u32, thorough: bool) -> bool {
    if pid == 0 {
        return false;
    }
    // SAFETY: signal 0 only checks existence and permission.
    let rc = unsafe {
        if tid == 0 {
            libc::kill(pid as libc::pid_t, 0) as libc::c_long
        } else {
            libc::syscall(
                libc::SYS_tgkill,
                pid as libc::c_long,
                tid as libc::c_long,
                0,
            )
        }
    };
    let exists = rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    if !exists || !thorough {
        return exists;
    }
    let task = if tid == 0 { pid } else { tid };
    match std::fs::read_to_string(format!("/proc/{pid}/task/{task}/stat")) {
        // the state follows the parenthesised comm, which may contain spaces
        Ok(stat) => !matches!(
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.trim_start().chars().next()),
            Some('Z') | Some('X')
        ),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_caller_is_alive_and_a_reaped_child_is_not() {
        assert!(alive(pid(), tid(), true));
        assert!(alive(pid(), 0, true));
        let mut child = std::process::Command::new("true")
            .spawn()
            .expect("spawn true");
        let id = child.id();
        child.wait().expect("wait");
        assert!(!alive(id, id, true));
        assert!(!alive(0, 0, false));
    }

    #[test]
    fn a_zombie_is_dead_only_when_thorough() {
        let mut child = std::process::Command::new("true")
            .spawn()
            .expect("spawn true");
        let id = child.id();
        // not waited for: it becomes a zombie
        let t0 = now_ns();
        while alive(id, id, true) && now_ns() - t0 < 2_000_000_000 {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(!alive(id, id, true));
        assert!(alive(id, id, false));
        child.wait().expect("wait");
    }
}
