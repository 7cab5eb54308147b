//! Helpers for the integration tests: self-cleaning temp dirs and child
//! processes, /proc readers, and skip checks for root/cgroup requirements.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// A directory under the system temp dir, removed (recursively) on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let p = std::env::temp_dir().join(format!(
            "memtamer-actuate-it-{tag}-{}-{n}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A child process that is SIGCONTed, killed and reaped on drop, even when
/// an assertion failed.
pub struct ChildGuard(pub Child);

impl ChildGuard {
    pub fn spawn(cmd: &str, args: &[&str]) -> ChildGuard {
        ChildGuard(Command::new(cmd).args(args).spawn().expect("spawn child"))
    }
    /// `sleep 30`.
    pub fn sleeper() -> ChildGuard {
        Self::spawn("sleep", &["30"])
    }
    /// A shell busy loop that uses a whole CPU.
    pub fn burner() -> ChildGuard {
        Self::spawn("sh", &["-c", "while :; do :; done"])
    }
    pub fn pid(&self) -> i32 {
        self.0.id() as i32
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        unsafe {
            libc::kill(self.pid(), libc::SIGCONT);
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn is_root() -> bool {
    unsafe { libc::geteuid() == 0 }
}

/// Field 3 of /proc/PID/stat.
pub fn state(pid: i32) -> char {
    memtamer_actuate::affinity::read_proc_stat(pid)
        .map(|s| s.state)
        .unwrap_or('?')
}

/// utime + stime of `pid`, in seconds.
pub fn cpu_seconds(pid: i32) -> f64 {
    let st = memtamer_actuate::affinity::read_proc_stat(pid).unwrap();
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    (st.utime + st.stime) as f64 / hz
}

/// Fraction of one CPU that `pid` used over `window`.
pub fn cpu_share(pid: i32, window: Duration) -> f64 {
    let c0 = cpu_seconds(pid);
    let t0 = Instant::now();
    std::thread::sleep(window);
    let used = cpu_seconds(pid) - c0;
    used / t0.elapsed().as_secs_f64()
}

/// Polls `cond` every 5 ms until it holds or `timeout` passes.
pub fn wait_until(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}
