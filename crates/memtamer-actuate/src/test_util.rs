//! Helpers shared by the unit tests: a self-deleting temp dir (no tempfile
//! dependency) and a child process that is always killed and reaped.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicUsize, Ordering};

static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// A directory under the system temp dir, removed (recursively) on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let p =
            std::env::temp_dir().join(format!("memtamer-actuate-{tag}-{}-{n}", std::process::id()));
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

/// A child process killed (SIGCONT first, in case it is stopped) and reaped on drop.
pub struct ChildGuard(pub Child);

impl ChildGuard {
    pub fn spawn(cmd: &str, args: &[&str]) -> ChildGuard {
        ChildGuard(Command::new(cmd).args(args).spawn().unwrap())
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
