//! Thin OS helpers: ids, clocks, futexes and liveness checks.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Once;
use std::time::Duration;

/// Bumped in every child after fork, so cached ids are refreshed.
static FORK_EPOCH: AtomicU64 = AtomicU64::new(1);
static ATFORK: Once = Once::new();

/// Whether this process is registered for `MEMBARRIER_CMD_GLOBAL_EXPEDITED`,
/// which lets its threads keep a unit of capacity without a fence (see
/// [`remote_barrier`]).
static FENCE_FREE: AtomicBool = AtomicBool::new(false);

/// membarrier(2) commands (linux/membarrier.h).
const MEMBARRIER_CMD_GLOBAL_EXPEDITED: libc::c_long = 1 << 1;
const MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED: libc::c_long = 1 << 2;

/// Registers this process as a target of other processes' expedited
/// barriers. Only a raw syscall: safe to call in a fork child handler.
fn register_membarrier() {
    // SAFETY: membarrier takes no pointers; failure is reported by rc.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_membarrier,
            MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED,
            0 as libc::c_long,
            0 as libc::c_long,
        )
    };
    FENCE_FREE.store(rc == 0, Ordering::Release);
}

extern "C" fn after_fork_in_child() {
    FORK_EPOCH.fetch_add(1, Ordering::Relaxed);
    // the registration belongs to the parent's address space
    register_membarrier();
}

thread_local! {
    /// (fork epoch, pid, tid) of the calling thread.
    static IDS: Cell<(u64, u32, u32)> = const { Cell::new((0, 0, 0)) };
}

/// Registers the fork handler and this process's membarrier registration
/// (once per process; `Gate::open` calls it).
pub(crate) fn watch_forks() {
    ATFORK.call_once(|| {
        register_membarrier();
        // SAFETY: registering a handler that only touches atomics and makes
        // one raw syscall.
        unsafe { libc::pthread_atfork(None, None, Some(after_fork_in_child)) };
    });
}

/// Whether threads of this process may keep a unit of capacity between
/// requests with plain stores only: true when the process is registered for
/// other processes' expedited memory barriers ([`remote_barrier`]), which
/// is what makes taking such a unit back safe.
pub(crate) fn fence_free() -> bool {
    FENCE_FREE.load(Ordering::Acquire)
}

/// A full memory barrier on every running thread of every process
/// registered by [`watch_forks`] (membarrier `GLOBAL_EXPEDITED`). After it
/// returns, each such thread's stores made before the barrier are visible
/// here, and its loads after it see our stores made before the call. This
/// is the slow half of an asymmetric Dekker handshake: the fast half (a
/// thread reusing its held unit) then needs no fence, which matters because
/// on x86 a fence right after libpmem's non-temporal stores waits for them
/// to reach memory. False if the kernel refuses (no membarrier).
pub(crate) fn remote_barrier() -> bool {
    // SAFETY: membarrier takes no pointers; failure is reported by rc.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_membarrier,
            MEMBARRIER_CMD_GLOBAL_EXPEDITED,
            0 as libc::c_long,
            0 as libc::c_long,
        )
    };
    rc == 0
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

/// CLOCK_MONOTONIC in nanoseconds: one clock for every process (the
/// heartbeats and heal times in the gate file compare across processes).
pub use memtamer_linux::shmfile::monotonic_ns as now_ns;

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

/// What the gate needs to know about a slot's owner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Liveness {
    /// Gone, or a zombie (a killed process its parent has not waited for
    /// still answers signals, but will never end its request).
    Dead,
    /// Stopped by a signal or a tracer (`T`/`t`): alive, but it cannot make
    /// progress, so a unit it holds is taken back (issue 22).
    Stopped,
    /// Anything else, including a task whose state cannot be read (another
    /// user's, under hidepid): not known to be dead.
    Alive,
}

/// The liveness of thread `tid` of process `pid` (`tid` 0: the process):
/// a signal-0 probe, then the task state in /proc/PID/task/TID/stat through
/// `memtamer_linux` (the comm may contain spaces). Assumes one pid
/// namespace for all gate users.
pub fn liveness(pid: u32, tid: u32) -> Liveness {
    if pid == 0 {
        return Liveness::Dead;
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
    if !exists {
        return Liveness::Dead;
    }
    let task = if tid == 0 { pid } else { tid };
    match memtamer_linux::ProcRoot::default().task_state(pid as i32, task as i32) {
        Ok('Z' | 'X' | 'x') => Liveness::Dead,
        Ok('T' | 't') => Liveness::Stopped,
        Ok(_) | Err(memtamer_linux::Error::Parse { .. }) => Liveness::Alive,
        Err(_) => Liveness::Dead,
    }
}

/// Whether thread `tid` of process `pid` is on a CPU or waiting for one
/// (`R`), or in an uninterruptible wait (`D`): busy, as a lock owner that
/// was preempted inside its critical section is. False if the state cannot
/// be read.
pub fn runnable(pid: u32, tid: u32) -> bool {
    let task = if tid == 0 { pid } else { tid };
    matches!(
        memtamer_linux::ProcRoot::default().task_state(pid as i32, task as i32),
        Ok('R' | 'D')
    )
}

/// Whether thread `tid` of process `pid` still exists and is not a zombie
/// (`tid` 0: the process). A stopped thread is alive.
pub fn alive(pid: u32, tid: u32) -> bool {
    liveness(pid, tid) != Liveness::Dead
}

/// Whether process `pid` still maps the gate file `path` at `base`: false
/// once it has exec'd (a new image keeps the pid, and the main thread keeps
/// its tid, but not the mappings), or unmapped it. True when /proc/PID/maps
/// cannot be read (another user's process): not known to be gone.
pub use memtamer_linux::shmfile::maps_file_at as maps_gate;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_caller_is_alive_and_a_reaped_child_is_not() {
        assert!(alive(pid(), tid()));
        assert!(alive(pid(), 0));
        let mut child = std::process::Command::new("true")
            .spawn()
            .expect("spawn true");
        let id = child.id();
        child.wait().expect("wait");
        assert!(!alive(id, id));
        assert!(!alive(0, 0));
    }

    #[test]
    fn a_zombie_is_dead() {
        let mut child = std::process::Command::new("true")
            .spawn()
            .expect("spawn true");
        let id = child.id();
        // not waited for: it becomes a zombie
        let t0 = now_ns();
        while alive(id, id) && now_ns() - t0 < 2_000_000_000 {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(!alive(id, id));
        child.wait().expect("wait");
    }
}
