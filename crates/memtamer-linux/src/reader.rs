//! Thin readers over a proc filesystem mounted at some root.
//!
//! Every read goes through a [`ProcRoot`], normally `/proc`, so tests run
//! against fake trees in a temporary directory. Processes vanish at any
//! moment: a read failing with `ENOENT`/`ESRCH` on a pid's file means the
//! process is gone ([`Error::Gone`]).

use crate::cgroup::{self, CgroupEntry};
use crate::identity::ProcessKey;
use crate::maps::{self, Region};
use crate::mountinfo::{self, MountLine};
use crate::stat::{self, Stat, TaskSched};
use crate::{Error, ParseError};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The usual mount point of procfs.
pub const DEFAULT_PROC_ROOT: &str = "/proc";

/// Reads a small proc file as text (invalid UTF-8 replaced: a comm may hold
/// any bytes). Unlike `fs::read` it does not ask for the file's size first
/// (proc files report 0) nor grow its buffer from a small probe: open, two
/// reads, close.
pub fn read_text(path: &Path) -> io::Result<String> {
    use std::io::Read;
    let mut f = fs::File::open(path)?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match f.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(String::from_utf8(buf)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
}

/// Whether a directory entry name is a pid (all ASCII digits, fits `i32`, > 0).
pub fn parse_pid(name: &str) -> Option<i32> {
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    name.parse().ok().filter(|p| *p > 0)
}

/// The error for a failed read of `path`: [`Error::Gone`] when it belongs to
/// process `pid` and the OS says it no longer exists, else [`Error::Io`].
pub fn gone_or_io(pid: Option<i32>, path: &Path, source: io::Error) -> Error {
    let gone = source.kind() == io::ErrorKind::NotFound
        || source.raw_os_error() == Some(libc::ESRCH)
        || source.raw_os_error() == Some(libc::ENOENT);
    match pid {
        Some(pid) if gone => Error::Gone {
            pid,
            path: path.to_path_buf(),
            source,
        },
        _ => Error::Io {
            path: path.to_path_buf(),
            source,
        },
    }
}

/// A proc filesystem at some root; tests point it at a fake tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcRoot {
    root: PathBuf,
}

impl Default for ProcRoot {
    /// The real `/proc`.
    fn default() -> Self {
        ProcRoot::new(DEFAULT_PROC_ROOT)
    }
}

impl ProcRoot {
    /// A proc filesystem mounted at `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        ProcRoot { root: root.into() }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `<root>/<pid>/<file>`; `file` may have several components
    /// (`task/TID/stat`).
    pub fn path(&self, pid: i32, file: &str) -> PathBuf {
        self.root.join(pid.to_string()).join(file)
    }

    /// The text of `<root>/<pid>/<file>`; [`Error::Gone`] if the process (or
    /// the thread named in `file`) no longer exists.
    pub fn read(&self, pid: i32, file: &str) -> Result<String, Error> {
        let path = self.path(pid, file);
        read_text(&path).map_err(|e| gone_or_io(Some(pid), &path, e))
    }

    /// [`ProcRoot::read`] then `parse`, a parse failure naming the file.
    pub fn parsed<T>(
        &self,
        pid: i32,
        file: &str,
        parse: impl FnOnce(&str) -> Result<T, ParseError>,
    ) -> Result<T, Error> {
        let text = self.read(pid, file)?;
        parse(&text).map_err(|source| Error::Parse {
            path: self.path(pid, file),
            source,
        })
    }

    /// `/proc/PID/stat`.
    pub fn stat(&self, pid: i32) -> Result<Stat, Error> {
        self.parsed(pid, "stat", stat::parse_stat)
    }

    /// The state (`R`, `S`, `Z`...) of thread `tid` of `pid`, from
    /// `/proc/PID/task/TID/stat` (see [`stat::parse_state`]).
    pub fn task_state(&self, pid: i32, tid: i32) -> Result<char, Error> {
        self.parsed(pid, &format!("task/{tid}/stat"), stat::parse_state)
    }

    /// The scheduling fields of `/proc/PID/task/TID/stat`.
    pub fn task_sched(&self, pid: i32, tid: i32) -> Result<TaskSched, Error> {
        self.parsed(pid, &format!("task/{tid}/stat"), stat::parse_task_sched)
    }

    /// The run time in ns from `/proc/PID/task/TID/schedstat`.
    pub fn task_run_ns(&self, pid: i32, tid: i32) -> Result<u64, Error> {
        self.parsed(pid, &format!("task/{tid}/schedstat"), stat::parse_schedstat)
    }

    /// `/proc/PID/cgroup`.
    pub fn cgroup(&self, pid: i32) -> Result<Vec<CgroupEntry>, Error> {
        self.parsed(pid, "cgroup", cgroup::parse)
    }

    /// `/proc/PID/maps`, sorted by start address.
    pub fn maps(&self, pid: i32) -> Result<Vec<Region>, Error> {
        self.parsed(pid, "maps", |t| Ok(maps::parse(t)?))
    }

    /// `/proc/PID/status` text (see [`crate::status`] for its fields).
    pub fn status(&self, pid: i32) -> Result<String, Error> {
        self.read(pid, "status")
    }

    /// The target of `/proc/PID/exe`; `None` when unreadable (kernel
    /// threads, zombies, other users' processes without permission).
    pub fn exe(&self, pid: i32) -> Option<PathBuf> {
        fs::read_link(self.path(pid, "exe")).ok()
    }

    /// The mounts seen by the reading process (`<root>/self/mountinfo`);
    /// malformed lines are skipped (see [`mountinfo::parse`]).
    pub fn self_mountinfo(&self) -> Result<Vec<MountLine>, Error> {
        let path = self.root.join("self").join("mountinfo");
        let text = read_text(&path).map_err(|e| gone_or_io(None, &path, e))?;
        Ok(mountinfo::parse(&text))
    }

    /// Thread ids of `pid` (`/proc/PID/task`), ascending. Needed because
    /// affinity is per thread and a process may create threads at any time.
    pub fn tasks(&self, pid: i32) -> Result<Vec<i32>, Error> {
        let path = self.path(pid, "task");
        let mut tids = Vec::new();
        let entries = fs::read_dir(&path).map_err(|e| gone_or_io(Some(pid), &path, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| gone_or_io(Some(pid), &path, e))?;
            if let Some(tid) = entry.file_name().to_str().and_then(parse_pid) {
                tids.push(tid);
            }
        }
        tids.sort_unstable();
        Ok(tids)
    }

    /// Whether `tid` is (still) a thread of `pid`: guards against touching a
    /// tid that has since been reused by another process.
    pub fn task_exists(&self, pid: i32, tid: i32) -> bool {
        self.path(pid, &format!("task/{tid}")).exists()
    }

    /// All pids with the inode number of their directory, ascending. The
    /// inode identifies the process: procfs gives a pid that was reused a
    /// new directory inode. Fails only if the root cannot be listed.
    pub fn pid_entries(&self) -> Result<Vec<(i32, u64)>, Error> {
        use std::os::unix::fs::DirEntryExt;
        let io_err = |source| Error::Io {
            path: self.root.clone(),
            source,
        };
        let mut pids = Vec::new();
        for entry in fs::read_dir(&self.root).map_err(io_err)? {
            let entry = entry.map_err(io_err)?;
            if let Some(pid) = entry.file_name().to_str().and_then(parse_pid) {
                pids.push((pid, entry.ino()));
            }
        }
        pids.sort_unstable();
        Ok(pids)
    }

    /// All pids (numeric entries of the root), ascending.
    pub fn pids(&self) -> Result<Vec<i32>, Error> {
        Ok(self.pid_entries()?.into_iter().map(|(p, _)| p).collect())
    }

    /// The last pid the kernel handed out (the last field of `loadavg`):
    /// every new process and thread takes one, so while it stays the same
    /// nothing was created. It counts in the reader's pid namespace.
    pub fn last_pid(&self) -> Option<u64> {
        let text = read_text(&self.root.join("loadavg")).ok()?;
        text.split_ascii_whitespace().last()?.parse().ok()
    }

    /// The pid `<root>/self` names: the reader's own pid when this is the
    /// proc filesystem of its own pid namespace.
    pub fn self_pid(&self) -> Option<u32> {
        fs::read_link(self.root.join("self"))
            .ok()
            .and_then(|t| t.to_str().and_then(|t| t.parse().ok()))
    }

    /// The identity of the process now running as `pid`.
    pub fn process_key(&self, pid: i32) -> Result<ProcessKey, Error> {
        let st = self.stat(pid)?;
        Ok(ProcessKey {
            pid,
            start_time: st.start_time,
        })
    }

    /// Whether the process `key` still exists and is not a zombie (a zombie
    /// can no longer be changed or restored).
    pub fn is_alive(&self, key: ProcessKey) -> bool {
        self.stat(key.pid)
            .is_ok_and(|st| st.start_time == key.start_time && !st.is_dead())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A temporary directory removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new() -> TempDir {
            static N: AtomicUsize = AtomicUsize::new(0);
            let p = std::env::temp_dir().join(format!(
                "memtamer-linux-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = fs::remove_dir_all(&p);
            fs::create_dir_all(&p).unwrap();
            TempDir(p)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    const TAIL: &str =
        "1 1 1 0 -1 4194560 0 0 0 0 1 2 0 0 20 0 2 0 777 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 5 0";

    fn fake(root: &Path) {
        let p = root.join("42");
        fs::create_dir_all(p.join("task/42")).unwrap();
        fs::create_dir_all(p.join("task/43")).unwrap();
        fs::create_dir_all(root.join("7")).unwrap();
        fs::create_dir_all(root.join("self")).unwrap();
        fs::create_dir_all(root.join("net")).unwrap();
        fs::write(p.join("stat"), format!("42 (a) b) S {TAIL}\n")).unwrap();
        fs::write(p.join("task/43/stat"), format!("43 (w) R {TAIL}\n")).unwrap();
        fs::write(p.join("task/43/schedstat"), "1000 2 3\n").unwrap();
        fs::write(p.join("cgroup"), "0::/a\nnot a line\n").unwrap();
        fs::write(
            p.join("maps"),
            "10-20 rw-p 0 00:00 0 [heap]\n30-40 r--p 0 00:00 9 /x (deleted)\n",
        )
        .unwrap();
        fs::write(p.join("status"), "Cpus_allowed_list:\t0-1\n").unwrap();
        fs::write(root.join("7/stat"), format!("7 (z) Z {TAIL}\n")).unwrap();
        fs::write(
            root.join("self/mountinfo"),
            "1 0 0:1 / /mnt/a\\040b rw - ext4 /dev/pmem0 rw,dax\n",
        )
        .unwrap();
        fs::write(root.join("loadavg"), "0.1 0.2 0.3 1/200 4321\n").unwrap();
    }

    #[test]
    fn reads_a_fake_tree() {
        let tmp = TempDir::new();
        fake(&tmp.0);
        let r = ProcRoot::new(&tmp.0);
        assert_eq!(r.pids().unwrap(), vec![7, 42]);
        let st = r.stat(42).unwrap();
        assert_eq!(st.comm, "a) b");
        assert_eq!(st.num_threads, 2);
        assert_eq!(r.tasks(42).unwrap(), vec![42, 43]);
        assert!(r.task_exists(42, 43) && !r.task_exists(42, 44));
        assert_eq!(r.task_sched(42, 43).unwrap().processor, 5);
        assert_eq!(r.task_state(42, 43).unwrap(), 'R');
        assert!(r.task_state(42, 44).unwrap_err().is_gone());
        assert_eq!(r.task_run_ns(42, 43).unwrap(), 1000);
        let maps = r.maps(42).unwrap();
        assert_eq!(maps[1].path, "/x (deleted)");
        assert_eq!(
            crate::status::cpus_allowed_list(&r.status(42).unwrap()),
            Ok("0-1")
        );
        assert_eq!(r.self_mountinfo().unwrap()[0].mount_point, "/mnt/a b");
        assert_eq!(r.last_pid(), Some(4321));
        assert_eq!(r.exe(42), None);
        let key = r.process_key(42).unwrap();
        assert_eq!(key.start_time, 777);
        assert!(r.is_alive(key));
        assert!(!r.is_alive(ProcessKey {
            pid: 42,
            start_time: 778
        }));
        assert!(!r.is_alive(r.process_key(7).unwrap()), "zombie");
        assert!(!r.is_alive(ProcessKey {
            pid: 8,
            start_time: 777
        }));
    }

    #[test]
    fn errors_name_the_file_and_line() {
        let tmp = TempDir::new();
        fake(&tmp.0);
        let r = ProcRoot::new(&tmp.0);
        let e = r.cgroup(42).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "{}: cgroup line 2: expected ID:CONTROLLERS:PATH, got \"not a line\"",
                tmp.0.join("42/cgroup").display()
            )
        );
        assert!(!e.is_gone());
        let gone = r.stat(99).unwrap_err();
        assert!(gone.is_gone(), "{gone}");
        assert!(gone.to_string().contains("99/stat"), "{gone}");
        assert!(r.tasks(99).unwrap_err().is_gone());
        fs::write(tmp.0.join("42/maps"), "10-20 rw-p 0 00:00 x\n").unwrap();
        assert_eq!(
            r.maps(42).unwrap_err().to_string(),
            format!(
                "{}: maps line 1: bad inode",
                tmp.0.join("42/maps").display()
            )
        );
        let missing = ProcRoot::new(tmp.0.join("nope"));
        assert!(matches!(missing.pids(), Err(Error::Io { .. })));
        assert!(matches!(missing.self_mountinfo(), Err(Error::Io { .. })));
    }

    #[test]
    fn gone_only_for_a_pid_s_vanished_file() {
        let x = Path::new("x");
        assert!(gone_or_io(Some(1), x, io::Error::from_raw_os_error(libc::ESRCH)).is_gone());
        assert!(!gone_or_io(Some(1), x, io::Error::from_raw_os_error(libc::EACCES)).is_gone());
        assert!(!gone_or_io(None, x, io::Error::from_raw_os_error(libc::ENOENT)).is_gone());
    }

    #[test]
    fn pid_names() {
        assert_eq!(parse_pid("1"), Some(1));
        assert_eq!(parse_pid("4194304"), Some(4194304));
        for bad in ["", "self", "0", "-1", "+1", "1a", " 1", "99999999999"] {
            assert_eq!(parse_pid(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_live_kernel_s_format() {
        let r = ProcRoot::default();
        let pid = std::process::id() as i32;
        let key = r.process_key(pid).unwrap();
        assert!(r.is_alive(key));
        assert!(r.tasks(pid).unwrap().contains(&pid));
        assert_eq!(r.self_pid(), Some(std::process::id()));
        let tid = unsafe { libc::syscall(libc::SYS_gettid) } as i32;
        assert!((r.task_sched(pid, tid).unwrap().processor as usize) < 1 << 16);
        let cg = r.cgroup(pid).unwrap();
        assert!(!cg.is_empty());
        let maps = r.maps(pid).unwrap();
        assert!(maps.iter().any(|m| m.path == "[stack]"));
        assert!(!r.self_mountinfo().unwrap().is_empty());
        let st = r.stat(pid).unwrap();
        assert_eq!(st.pid, pid);
        assert!(!st.is_kernel_thread());
    }
}
