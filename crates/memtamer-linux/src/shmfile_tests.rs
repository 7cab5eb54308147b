use super::*;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

/// A fresh directory, removed when dropped.
struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Dir {
        let p = std::env::temp_dir().join(format!("mt-shmfile-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("mkdir");
        Dir(p)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn a_symlink_is_not_followed_and_its_target_not_created() {
    let dir = Dir::new("link");
    let target = dir.0.join("target");
    let link = dir.0.join("link");
    std::os::unix::fs::symlink(&target, &link).expect("symlink");
    let e = open_nofollow(&link, Some(0o600)).expect_err("followed a symlink");
    assert_eq!(e.raw_os_error(), Some(libc::ELOOP), "{e}");
    assert!(!target.exists(), "created the symlink's target");
    // to an existing file, too
    std::fs::write(&target, b"x").expect("write");
    assert!(open_nofollow(&link, None).is_err());
}

#[test]
fn open_creates_only_when_asked_and_never_truncates() {
    let dir = Dir::new("create");
    let path = dir.0.join("f");
    let e = open_nofollow(&path, None).expect_err("created without asking");
    assert_eq!(e.kind(), io::ErrorKind::NotFound);
    let f = open_nofollow(&path, Some(0o600)).expect("create");
    f.set_len(10).expect("size");
    drop(f);
    let f = open_nofollow(&path, Some(0o600)).expect("reopen");
    assert_eq!(f.metadata().expect("stat").len(), 10);
    set_mode(&f, 0o640, None).expect("chmod");
    let mode = std::fs::metadata(&path).expect("stat").permissions().mode() & 0o777;
    assert_eq!(mode, 0o640, "{mode:o}");
    assert!(trusted(&f).is_ok(), "our own regular file");
}

#[test]
fn only_a_regular_file_of_this_user_or_root_is_trusted() {
    assert!(check_owner(1000, 1000, true).is_ok());
    assert!(check_owner(0, 1000, true).is_ok());
    let e = check_owner(65534, 1000, true).expect_err("foreign owner");
    assert_eq!(
        e.to_string(),
        "owned by uid 65534, not by this user (1000) or root"
    );
    let e = check_owner(1000, 1000, false).expect_err("a FIFO");
    assert!(e.to_string().ends_with(", or not a regular file"), "{e}");
}

#[test]
fn a_file_given_to_another_user_is_refused() {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root to give a file to user nobody");
        return;
    }
    let dir = Dir::new("foreign");
    let path = dir.0.join("f");
    drop(open_nofollow(&path, Some(0o600)).expect("create"));
    std::os::unix::fs::chown(&path, Some(65534), Some(65534)).expect("chown nobody");
    let f = open_nofollow(&path, None).expect("open");
    let e = trusted(&f).expect_err("trusted nobody's file");
    assert!(matches!(e, TrustError::Foreign { uid: 65534, .. }), "{e:?}");
}

#[test]
fn a_shared_map_is_seen_by_a_second_mapping_and_unmapped_on_drop() {
    let dir = Dir::new("map");
    let path = dir.0.join("f");
    let f = open_nofollow(&path, Some(0o600)).expect("create");
    f.set_len(4096).expect("size");
    let a = SharedMap::new(&f, 4096).expect("map a");
    drop(f);
    let b = SharedMap::new(&open_nofollow(&path, None).expect("open"), 4096).expect("map b");
    assert_eq!((a.len(), a.is_empty()), (4096, false));
    assert_ne!(a.base(), b.base());
    // SAFETY: both are 4096-byte, page-aligned mappings of the same file.
    let (wa, wb) = unsafe {
        (
            &*(a.base() as *const AtomicU64),
            &*(b.base() as *const AtomicU64),
        )
    };
    wa.store(0xfeed, Ordering::Release);
    assert_eq!(wb.load(Ordering::Acquire), 0xfeed);
    let base = a.base() as u64;
    assert!(maps_file_at(std::process::id(), base, &path));
    drop(a);
    assert!(
        !maps_file_at(std::process::id(), base, &path),
        "still mapped"
    );
    assert!(maps_file_at(std::process::id(), b.base() as u64, &path));
    assert_eq!(std::fs::read(&path).expect("read")[0], 0xed);
}

#[test]
fn a_flock_excludes_a_second_open_file_until_dropped() {
    let dir = Dir::new("flock");
    let path = dir.0.join("f");
    let a = open_nofollow(&path, Some(0o600)).expect("create");
    let b = open_nofollow(&path, None).expect("open again");
    let guard = FlockGuard::exclusive(&a).expect("lock a");
    assert!(FlockGuard::try_exclusive(&b).expect("try b").is_none());
    // a blocking locker on another thread waits for the drop
    let (tx, rx) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let _g = FlockGuard::exclusive(&b).expect("lock b");
        tx.send(()).expect("send");
    });
    assert!(rx.try_recv().is_err(), "second locker got in");
    drop(guard);
    rx.recv()
        .expect("second locker got the lock after the drop");
    waiter.join().expect("join");
    assert!(FlockGuard::try_exclusive(&a).expect("try a").is_some());
}

#[test]
fn the_monotonic_clock_does_not_go_back() {
    let a = monotonic_ns();
    let b = monotonic_ns();
    assert!(a > 0 && b >= a);
}
