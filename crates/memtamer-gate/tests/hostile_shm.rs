//! Issue 22 item 2: the shared /dev/shm state is not trusted blindly. A
//! corrupted word never hangs a process, a planted symlink is not followed,
//! the mode does not follow the umask, and a file another user created is
//! refused.

use std::os::unix::fs::{FileExt, MetadataExt, PermissionsExt};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use memtamer_gate::{Admission, Gate, GateOptions};

const PATIENCE: Duration = Duration::from_secs(20);

// Byte offsets of header words in the shared file (shm.rs `Header`, repr(C)).
const BYPASS: u64 = 20;
const LOCK: u64 = 64;
const LIMIT: u64 = 128;
const SERVING: u64 = 132;
const QUEUE_START: u64 = 144;
const QUEUE_LEN: u64 = 148;

fn options(tag: &str, limit: u32) -> GateOptions {
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    GateOptions {
        name: format!("hostile-shm-{}-{tag}-{n}", std::process::id()),
        initial_limit: limit,
        ..GateOptions::default()
    }
}

struct Cleanup(std::path::PathBuf);
impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn poke(o: &GateOptions, offset: u64, bytes: &[u8]) {
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(o.path())
        .expect("open gate file");
    f.write_at(bytes, offset).expect("poke");
}

/// One 4 KiB request from a fresh thread, which then exits (giving back
/// a unit it holds); None if it hangs.
fn request(gate: &Arc<Gate>) -> Option<Admission> {
    let (tx, rx) = mpsc::channel();
    let g = Arc::clone(gate);
    let t = std::thread::spawn(move || {
        let me = g.register().expect("register");
        let a = me.enter(4096, true).admission;
        drop(me);
        let _ = tx.send(a);
    });
    let a = rx.recv_timeout(PATIENCE).ok()?;
    t.join().expect("requester");
    Some(a)
}

/// Corrupts one word of a fresh gate (limit 2) and checks that a request
/// is still admitted properly (not merely let through after the bound) and
/// that the state is sane afterwards.
fn survives(tag: &str, offset: u64, bytes: &[u8]) {
    let o = options(tag, 2);
    let gate = Gate::open(&o).expect("open");
    let _c = Cleanup(o.path());
    poke(&o, offset, bytes);
    let a = request(&gate).unwrap_or_else(|| panic!("{tag}: a corrupted word hangs the gate"));
    assert!(
        matches!(a, Admission::Immediate | Admission::Waited(_)),
        "{tag}: {a:?}"
    );
    let snap = gate.snapshot();
    assert_eq!(snap.serving, 0, "{tag}");
    assert_eq!(snap.waiting, 0, "{tag}");
    assert!(
        snap.limit.is_some_and(|l| l >= 1),
        "{tag}: {:?}",
        snap.limit
    );
}

#[test]
fn a_queue_length_of_2_pow_32_minus_1_does_not_hang() {
    survives("qlen", QUEUE_LEN, &u32::MAX.to_ne_bytes());
}

#[test]
fn a_queue_start_out_of_bounds_does_not_hang() {
    survives("qstart", QUEUE_START, &u32::MAX.to_ne_bytes());
}

#[test]
fn a_huge_serving_count_is_repaired() {
    survives("serving", SERVING, &1000u32.to_ne_bytes());
}

#[test]
fn a_zero_limit_is_repaired() {
    survives("limit0", LIMIT, &0u32.to_ne_bytes());
}

#[test]
fn a_lock_word_naming_a_live_process_does_not_hang() {
    // pid 1, tid 1: alive forever, never releases
    survives("lock", LOCK, &((1u64 << 32) | 1).to_ne_bytes());
}

#[test]
fn a_corrupted_bypass_size_is_refused_not_obeyed() {
    let o = options("bypass", 2);
    drop(Gate::open(&o).expect("create"));
    let _c = Cleanup(o.path());
    poke(&o, BYPASS, &u32::MAX.to_ne_bytes());
    match Gate::open(&o) {
        Err(e) => assert!(e.to_string().contains("corrupt"), "{e}"),
        Ok(g) => panic!(
            "opened a gate whose bypass is {}",
            g.snapshot().bypass_bytes
        ),
    }
}

#[test]
fn a_planted_symlink_is_not_followed() {
    let o = options("symlink", 2);
    let target = std::env::temp_dir().join(format!("mt-symlink-target-{}", std::process::id()));
    let _ = std::fs::remove_file(&target);
    std::os::unix::fs::symlink(&target, o.path()).expect("plant symlink");
    let _c = Cleanup(o.path());
    assert!(Gate::open(&o).is_err(), "opened through a symlink");
    assert!(!target.exists(), "created the symlink's target");
}

#[test]
fn the_mode_does_not_follow_the_umask() {
    let o = options("mode", 2);
    // SAFETY: umask only changes this process's creation mask.
    let old = unsafe { libc::umask(0) };
    let gate = Gate::open(&o);
    // SAFETY: as above.
    unsafe { libc::umask(old) };
    let _c = Cleanup(o.path());
    drop(gate.expect("open"));
    let mode = std::fs::metadata(o.path())
        .expect("stat")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600, "mode {mode:o}");
}

#[test]
fn a_gate_file_squatted_by_another_user_is_refused() {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root to give a file to user nobody");
        return;
    }
    let o = options("squat", 2);
    drop(Gate::open(&o).expect("create"));
    let _c = Cleanup(o.path());
    std::os::unix::fs::chown(o.path(), Some(65534), Some(65534)).expect("chown nobody");
    assert_eq!(std::fs::metadata(o.path()).expect("stat").uid(), 65534);
    assert!(Gate::open(&o).is_err(), "trusted a file owned by nobody");
}
