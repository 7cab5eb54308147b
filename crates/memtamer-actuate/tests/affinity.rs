//! Real per-thread affinity changes on a child process.
mod common;

use common::ChildGuard;
use common::TempDir;
use memtamer_actuate::affinity::{
    list_threads, pin_thread, process_start_time, set_thread_affinity, thread_affinity,
    unpin_thread,
};
use memtamer_actuate::{Change, Error, Journal, ProcessKey};
use memtamer_core::CpuSet;

#[test]
fn change_read_back_and_restore_child_affinity() {
    let child = ChildGuard::sleeper();
    let pid = child.pid();
    let tids = list_threads(pid).unwrap();
    assert_eq!(tids, vec![pid]);
    let original = thread_affinity(pid).unwrap();
    assert!(!original.is_empty());
    let first = original.iter().next().unwrap();
    let mut target = CpuSet::empty();
    target.insert(first);
    set_thread_affinity(pid, &target).unwrap();
    assert_eq!(thread_affinity(pid).unwrap(), target);
    // The kernel's own view agrees.
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    assert!(
        status.contains(&format!("Cpus_allowed_list:\t{first}\n")),
        "{status}"
    );
    set_thread_affinity(pid, &original).unwrap();
    assert_eq!(thread_affinity(pid).unwrap(), original);
}

#[test]
fn start_time_identifies_the_child() {
    let child = ChildGuard::sleeper();
    let key = ProcessKey::of(child.pid()).unwrap();
    assert_eq!(process_start_time(child.pid()).unwrap(), key.start_time);
    assert!(key.is_alive());
    drop(child);
    assert!(!key.is_alive());
    assert!(matches!(
        process_start_time(key.pid),
        Err(Error::Read { .. })
    ));
}

#[test]
fn errors_name_the_thread() {
    let err = thread_affinity(i32::MAX).unwrap_err();
    assert!(
        matches!(err, Error::Sys { id, .. } if id == i32::MAX),
        "{err}"
    );
    // CPUs that do not exist are refused by the kernel, not by a panic.
    let child = ChildGuard::sleeper();
    let mut bogus = CpuSet::empty();
    bogus.insert(255);
    assert!(set_thread_affinity(child.pid(), &bogus).is_err());
}

#[test]
fn pin_journals_first_original_and_unpin_restores_it() {
    let dir = TempDir::new("pin");
    let journal = Journal::open(&dir.path().join("journal")).unwrap();
    let child = ChildGuard::sleeper();
    let key = ProcessKey::of(child.pid()).unwrap();
    let original = thread_affinity(child.pid()).unwrap();
    let mut one = CpuSet::empty();
    one.insert(original.iter().next().unwrap());
    pin_thread(&journal, key, child.pid(), &one).unwrap();
    assert_eq!(thread_affinity(child.pid()).unwrap(), one);
    // A second pin keeps the first original in the journal.
    pin_thread(&journal, key, child.pid(), &original).unwrap();
    pin_thread(&journal, key, child.pid(), &one).unwrap();
    assert_eq!(
        journal.pending(),
        vec![Change::ThreadAffinity {
            pid: key.pid,
            tid: key.pid,
            start_time: key.start_time,
            original
        }]
    );
    // A tid that is not a thread of the process is refused.
    assert!(matches!(
        pin_thread(&journal, key, std::process::id() as i32, &one),
        Err(Error::Invalid(_))
    ));
    assert!(unpin_thread(&journal, key, child.pid()).unwrap());
    assert_eq!(thread_affinity(child.pid()).unwrap(), original);
    assert!(journal.pending().is_empty());
    assert!(!unpin_thread(&journal, key, child.pid()).unwrap());
}
