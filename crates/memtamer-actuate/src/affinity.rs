//! Journaled per-thread CPU affinity: [`pin_thread`] and [`unpin_thread`].
//!
//! The daemon pins individual threads, so affinity is always read and set per
//! tid, and every pin is journaled with the original affinity first. The
//! unjournaled system calls live in [`crate::sched`] and process identity in
//! [`crate::process`]; both are re-exported here, where callers have always
//! found them.

use crate::journal::{Change, ChangeKey, Journal};
pub use crate::process::{
    check_alive, list_threads, process_start_time, read_proc_stat, thread_belongs_to, ProcHandle,
    ProcessKey,
};
pub use crate::sched::{set_thread_affinity, thread_affinity};
use crate::{Error, Result};
use memtamer_core::CpuSet;

/// The journaled way for the daemon to pin a thread: records the thread's
/// current affinity (only the first time; later pins keep that original)
/// BEFORE changing it, so the guard can restore it if the daemon dies.
/// Checks that `tid` belongs to the process `key` first.
pub fn pin_thread(journal: &Journal, key: ProcessKey, tid: i32, cpus: &CpuSet) -> Result<()> {
    if cpus.is_empty() {
        return Err(Error::Invalid(format!("empty CPU set for thread {tid}")));
    }
    check_alive(key)?;
    if !thread_belongs_to(key.pid, tid) {
        return Err(Error::Invalid(format!(
            "thread {tid} is not a thread of process {}",
            key.pid
        )));
    }
    let original = thread_affinity(tid)?;
    journal.record(Change::ThreadAffinity {
        pid: key.pid,
        tid,
        start_time: key.start_time,
        original,
    })?;
    set_thread_affinity(tid, cpus)
}

/// Undoes [`pin_thread`] now (the daemon no longer wants the pin): restores
/// the journaled original and forgets the record. Returns `false` if there
/// was nothing journaled or the thread/process is gone (record dropped).
pub fn unpin_thread(journal: &Journal, key: ProcessKey, tid: i32) -> Result<bool> {
    let wanted = ChangeKey::ThreadAffinity {
        pid: key.pid,
        tid,
        start_time: key.start_time,
    };
    let original = journal.pending().into_iter().find_map(|c| match c {
        Change::ThreadAffinity { original, .. } if c.key() == wanted => Some(original),
        _ => None,
    });
    let Some(original) = original else {
        return Ok(false);
    };
    let restored = if key.is_alive() && thread_belongs_to(key.pid, tid) {
        match set_thread_affinity(tid, &original) {
            Ok(()) => true,
            Err(Error::Sys { source, .. }) if source.raw_os_error() == Some(libc::ESRCH) => false,
            Err(e) => return Err(e),
        }
    } else {
        false
    };
    journal.forget(&wanted)?;
    Ok(restored)
}
