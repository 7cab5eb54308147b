//! Reading process facts from a proc filesystem.
//!
//! All access goes through a root directory ([`ProcFs::new`]), normally
//! `/proc`, so tests can run against a fake tree in a temporary directory.
//!
//! Processes vanish at any moment: a read failing with `ENOENT`/`ESRCH`
//! means the process is gone ([`ProcError::Gone`]), which a scan skips
//! silently. The text parsers live in `memtamer-linux` (one parser per proc
//! file for the whole workspace, tested exhaustively there); this module adds
//! what only the daemon needs: which parts of a process to read, the
//! consistency check across files, and the scan cache.

use memtamer_core::cpuset::CpuListError;
use memtamer_core::CpuSet;
use memtamer_linux::stat::PF_KTHREAD;
use memtamer_linux::{status, ParseError, ProcRoot};
use std::io;
use std::path::{Path, PathBuf};

pub use memtamer_linux::reader::parse_pid;
pub use memtamer_linux::CgroupEntry;
pub use memtamer_linux::DEFAULT_PROC_ROOT;

/// Why the text of a proc file could not be understood: a proc file's own
/// format (`memtamer_linux::ParseError`, naming the field or line), or a
/// CPU list the daemon's [`CpuSet`] cannot hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProcParseError {
    /// The text does not have the kernel's format.
    #[error(transparent)]
    Text(#[from] ParseError),
    /// `Cpus_allowed_list` did not parse (e.g. CPUs beyond the supported maximum).
    #[error("Cpus_allowed_list: {0}")]
    CpuList(#[from] CpuListError),
}

/// Why reading a process failed.
#[derive(Debug, thiserror::Error)]
pub enum ProcError {
    /// The process exited (or its pid was reused) while being read. Expected
    /// and harmless; scans skip it.
    #[error("process {pid} is gone")]
    Gone {
        /// The pid that was being read.
        pid: i32,
    },
    /// Reading a proc file or directory failed for another reason.
    #[error("{}: {source}", path.display())]
    Io {
        /// File or directory being read.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// A proc file had unexpected content.
    #[error("{}: {source}", path.display())]
    Parse {
        /// File being parsed.
        path: PathBuf,
        /// What was wrong.
        #[source]
        source: ProcParseError,
    },
}

impl ProcError {
    /// Whether this error only means the process is gone.
    pub fn is_gone(&self) -> bool {
        matches!(self, ProcError::Gone { .. })
    }
}

impl From<memtamer_linux::Error> for ProcError {
    fn from(e: memtamer_linux::Error) -> ProcError {
        match e {
            memtamer_linux::Error::Gone { pid, .. } => ProcError::Gone { pid },
            memtamer_linux::Error::Io { path, source } => ProcError::Io { path, source },
            memtamer_linux::Error::Parse { path, source } => ProcError::Parse {
                path,
                source: source.into(),
            },
        }
    }
}

/// What the daemon needs to know about a process to select and act on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessInfo {
    /// Process id.
    pub pid: i32,
    /// Start time in clock ticks since boot (stat field 22); with `pid`
    /// identifies the process across pid reuse.
    pub start_time: u64,
    /// Parent pid.
    pub ppid: i32,
    /// Scheduler state (`R`, `S`, `D`, `Z`, ...).
    pub state: char,
    /// Command name (at most 15 bytes, may contain spaces and parentheses;
    /// invalid UTF-8 replaced).
    pub comm: String,
    /// Target of the `exe` link; `None` when unreadable (kernel threads,
    /// zombies, other users' processes without permission). May end in
    /// `" (deleted)"` when the binary was replaced.
    pub exe: Option<PathBuf>,
    /// Cgroup memberships, one per hierarchy, in file order.
    pub cgroups: Vec<CgroupEntry>,
    /// Thread ids, ascending.
    pub threads: Vec<i32>,
    /// CPUs the process may run on (`Cpus_allowed_list`).
    pub cpus_allowed: CpuSet,
    /// Kernel thread (never managed): `PF_KTHREAD` set, or pid 2
    /// (`kthreadd`), or a child of pid 2 without an `exe`.
    pub kernel_thread: bool,
    /// Real and effective uid (`Uid:` of `status`); `None` when not read
    /// ([`Parts::uids`]) or unreadable. What a selector's `[job.require] uid` checks: unlike
    /// comm or exe, no user can choose another user's uid.
    pub uids: Option<Uids>,
}

/// A process's real and effective user ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Uids {
    /// Real uid: who started it.
    pub real: u32,
    /// Effective uid: whose rights it has now.
    pub effective: u32,
}

impl ProcessInfo {
    /// Its identity across pid reuse.
    pub fn key(&self) -> memtamer_actuate::ProcessKey {
        memtamer_actuate::ProcessKey {
            pid: self.pid,
            start_time: self.start_time,
        }
    }
}

/// Where a thread runs and how much CPU it has used: what placement needs
/// (Ahn §3.3 balances by CPU load and places by current CPU).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadSched {
    /// CPU it last ran on (stat field 39).
    pub cpu: u32,
    /// User + system time in clock ticks (fields 14 and 15).
    pub cpu_ticks: u64,
    /// Time on a CPU in nanoseconds (`schedstat` field 1), when the kernel
    /// has it (CONFIG_SCHED_INFO): far finer than the ticks.
    pub run_ns: Option<u64>,
}

/// Parses the scheduling fields of `/proc/PID/task/TID/stat`
/// (`memtamer_linux::stat::parse_task_sched`); the run time is left out.
pub fn parse_thread_sched(text: &str) -> Result<ThreadSched, ProcParseError> {
    let t = memtamer_linux::stat::parse_task_sched(text)?;
    Ok(ThreadSched {
        cpu: t.processor,
        cpu_ticks: t.utime.saturating_add(t.stime),
        run_ns: None,
    })
}

/// Extracts `Cpus_allowed_list` from `/proc/PID/status`.
pub fn parse_status_cpus_allowed(text: &str) -> Result<CpuSet, ProcParseError> {
    Ok(CpuSet::parse_list(status::cpus_allowed_list(text)?)?)
}

/// Extracts the real and effective uid (the first two of the four ids on
/// the `Uid:` line) from `/proc/PID/status`.
pub fn parse_status_uids(text: &str) -> Result<Uids, ProcParseError> {
    let line = status::field(text, "Uid")?;
    let mut ids = line.split_whitespace().map(str::parse::<u32>);
    match (ids.next(), ids.next()) {
        (Some(Ok(real)), Some(Ok(effective))) => Ok(Uids { real, effective }),
        _ => Err(ParseError::BadField {
            field: "Uid",
            value: line.to_string(),
        }
        .into()),
    }
}

/// The result of scanning all processes: what could be read, plus per-process
/// failures that are not "gone" (so one odd process does not stop the scan).
#[derive(Debug, Default)]
pub struct Scan {
    /// Readable user-space processes, ascending pid.
    pub processes: Vec<ProcessInfo>,
    /// Processes that could not be read for a reason other than exiting.
    pub errors: Vec<ProcError>,
}

/// A proc filesystem at some root; tests point it at a fake tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcFs {
    proc: ProcRoot,
}

impl Default for ProcFs {
    /// The real `/proc`.
    fn default() -> Self {
        ProcFs::new(DEFAULT_PROC_ROOT)
    }
}

/// Which of the optional parts of a process a read takes: each is one more
/// proc file per process (several µs of kernel work each), and a periodic
/// rescan need read only those its selectors look at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parts {
    /// The `exe` link (exe selectors).
    pub exe: bool,
    /// `/proc/PID/cgroup` (cgroup and unit selectors).
    pub cgroups: bool,
    /// `Cpus_allowed_list` from `/proc/PID/status`.
    pub cpus_allowed: bool,
    /// Real and effective uid from `/proc/PID/status` (`[job.require] uid`).
    pub uids: bool,
}

impl Parts {
    /// Everything [`ProcessInfo`] holds.
    pub const ALL: Parts = Parts {
        exe: true,
        cgroups: true,
        cpus_allowed: true,
        uids: true,
    };
}

impl ProcFs {
    /// A proc filesystem mounted at `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        ProcFs {
            proc: ProcRoot::new(root),
        }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        self.proc.root()
    }

    fn parsed<T>(
        &self,
        pid: i32,
        file: &str,
        parse: impl FnOnce(&str) -> Result<T, ProcParseError>,
    ) -> Result<T, ProcError> {
        let text = self.proc.read(pid, file)?;
        parse(&text).map_err(|source| ProcError::Parse {
            path: self.proc.path(pid, file),
            source,
        })
    }

    /// All pids (numeric entries of the root), ascending. Fails only if the
    /// root itself cannot be listed.
    pub fn pids(&self) -> Result<Vec<i32>, ProcError> {
        Ok(self.proc.pids()?)
    }

    /// All pids with the inode number of their directory, ascending. The
    /// inode identifies the process: procfs gives a pid that was reused a
    /// new directory inode, so a scan can tell a new process from a known
    /// one without reading its files.
    pub fn pid_entries(&self) -> Result<Vec<(i32, u64)>, ProcError> {
        Ok(self.proc.pid_entries()?)
    }

    /// Thread ids of `pid`, ascending.
    pub fn threads(&self, pid: i32) -> Result<Vec<i32>, ProcError> {
        Ok(self.proc.tasks(pid)?)
    }

    /// Reads one process. [`ProcError::Gone`] if it exits during the read,
    /// including when its pid was reused meanwhile (detected by re-reading
    /// the start time at the end).
    pub fn process(&self, pid: i32) -> Result<ProcessInfo, ProcError> {
        self.process_parts(pid, Parts::ALL, |_| true)
    }

    /// [`ProcFs::process`] reading only `parts` of the optional fields, and
    /// the thread list only if `want_threads` says so of what was read
    /// before it (listing a process's threads costs more than its `stat`);
    /// what is not read is left empty. `exe` is still read for a child of
    /// pid 2 without `PF_KTHREAD`, to tell a kernel thread apart.
    pub fn process_parts(
        &self,
        pid: i32,
        parts: Parts,
        want_threads: impl FnOnce(&ProcessInfo) -> bool,
    ) -> Result<ProcessInfo, ProcError> {
        let stat = self.proc.stat(pid)?;
        let read_exe = parts.exe || (stat.ppid == 2 && stat.flags & PF_KTHREAD == 0);
        let exe = if read_exe { self.proc.exe(pid) } else { None };
        let cgroups = if parts.cgroups {
            self.proc.cgroup(pid)?
        } else {
            Vec::new()
        };
        let (cpus_allowed, uids) = if parts.cpus_allowed || parts.uids {
            let (c, u) = self.parsed(pid, "status", |t| {
                let c = if parts.cpus_allowed {
                    parse_status_cpus_allowed(t)?
                } else {
                    CpuSet::empty()
                };
                // a status without a Uid line (a fake tree) leaves it
                // unknown, which fails any uid requirement
                let u = if parts.uids {
                    parse_status_uids(t).ok()
                } else {
                    None
                };
                Ok((c, u))
            })?;
            (c, u)
        } else {
            (CpuSet::empty(), None)
        };
        let kernel_thread =
            stat.flags & PF_KTHREAD != 0 || pid == 2 || (stat.ppid == 2 && exe.is_none());
        let mut p = ProcessInfo {
            pid,
            start_time: stat.start_time,
            ppid: stat.ppid,
            state: stat.state,
            comm: stat.comm,
            exe,
            cgroups,
            threads: Vec::new(),
            cpus_allowed,
            kernel_thread,
            uids,
        };
        let threads = want_threads(&p);
        if threads {
            p.threads = self.threads(pid)?;
        }
        // more than `stat` read: make sure it all came from one process
        if read_exe || parts.cgroups || parts.cpus_allowed || parts.uids || threads {
            let again = self.proc.stat(pid)?;
            if again.start_time != stat.start_time {
                return Err(ProcError::Gone { pid });
            }
        }
        Ok(p)
    }

    /// Reads where thread `tid` of `pid` runs and its CPU time.
    pub fn thread_sched(&self, pid: i32, tid: i32) -> Result<ThreadSched, ProcError> {
        let mut s = self.parsed(pid, &format!("task/{tid}/stat"), parse_thread_sched)?;
        s.run_ns = self.proc.task_run_ns(pid, tid).ok();
        Ok(s)
    }

    /// Reads every user-space process: vanished processes and kernel threads
    /// are skipped, other per-process failures are collected in
    /// [`Scan::errors`]. Fails only if the root cannot be listed.
    pub fn scan(&self) -> Result<Scan, ProcError> {
        let mut scan = Scan::default();
        for pid in self.pids()? {
            match self.process(pid) {
                Ok(p) if p.kernel_thread => {}
                Ok(p) => scan.processes.push(p),
                Err(e) if e.is_gone() => {}
                Err(e) => scan.errors.push(e),
            }
        }
        Ok(scan)
    }
}

/// What a periodic rescan remembers between calls, so that a process seen
/// before costs one read of its `stat` (which also reveals an exec: the
/// comm changes) instead of six files, and a kernel thread nothing.
#[derive(Debug)]
pub struct ScanCache {
    entries: std::collections::HashMap<i32, Cached>,
    /// The optional parts read and compared.
    parts: Parts,
    /// How often a cached process is checked again (see [`FULL_REFRESH`]),
    /// and the pid directory listed at least.
    refresh: std::time::Duration,
    /// The pid counter ([`ProcFs::last_pid`]) read just before the last
    /// listing of the pids, and when that was.
    listed: Option<(u64, std::time::Instant)>,
    /// Whether the proc filesystem is that of our own pid namespace (its
    /// pid counter is the one `last_pid` reads); found at the first scan.
    own_namespace: Option<bool>,
}

impl Default for ScanCache {
    /// Every part, checked every [`FULL_REFRESH`].
    fn default() -> Self {
        ScanCache::new(Parts::ALL)
    }
}

impl ScanCache {
    /// A cache whose scans read and check only `parts`.
    pub fn new(parts: Parts) -> ScanCache {
        ScanCache {
            entries: Default::default(),
            parts,
            refresh: FULL_REFRESH,
            listed: None,
            own_namespace: None,
        }
    }

    /// The same with cached processes checked every `refresh` instead of
    /// [`FULL_REFRESH`] (tests use zero: every scan checks).
    pub fn with_refresh(mut self, refresh: std::time::Duration) -> ScanCache {
        self.refresh = refresh;
        self
    }
}

/// One process as a [`ScanCache`] remembers it.
#[derive(Debug)]
struct Cached {
    info: ProcessInfo,
    /// When it was last read or checked.
    checked: std::time::Instant,
    /// Inode of its `/proc` directory then (another inode: another process).
    ino: u64,
    /// `PF_KTHREAD` (or kthreadd): never read again.
    kthread: bool,
}

/// A cached user process is checked again at least this often: its `stat`,
/// and the parts the cache reads (cgroup moves, an exec that keeps the comm).
pub const FULL_REFRESH: std::time::Duration = std::time::Duration::from_secs(1);

impl ProcFs {
    /// The last pid the kernel handed out (the last field of `loadavg`):
    /// every new process and thread takes one, so while it stays the same
    /// nothing was created. It counts in the reader's pid namespace.
    pub fn last_pid(&self) -> Option<u64> {
        self.proc.last_pid()
    }

    /// Whether this proc filesystem shows our own pid namespace (`self`
    /// names our pid), so that [`ProcFs::last_pid`] counts its tasks.
    fn is_own_namespace(&self) -> bool {
        self.proc.self_pid() == Some(std::process::id())
    }

    /// Like [`ProcFs::scan`], but reuses what `cache` knows, and reads only
    /// the cache's [`Parts`]. A pid whose directory has another inode than
    /// when it was cached is another process, read in full. A process
    /// checked less than the cache's refresh period ago is not read at all,
    /// unless `want_threads` holds for it (the daemon's managed and
    /// selected processes): then its `stat` is read (an exec changes the
    /// comm there, and forces a full read) and its thread list. At the
    /// refresh, `stat` and the cache's parts are read again and compared; a
    /// full read follows only if one changed. A full read lists the threads
    /// only if `want_threads` holds for what it read before them. Thread
    /// lists are therefore current only for processes `want_threads`
    /// accepts, and empty for others never wanted. Kernel threads are
    /// recognised from `stat` alone and, as they never exec, not read again.
    ///
    /// While the pid counter ([`ProcFs::last_pid`]) has not moved since the
    /// last listing of the pids, no process or thread was created: the
    /// known pids are scanned without listing them again (an exited
    /// unwatched process drops out at the next listing, at the latest after
    /// the refresh period), and a watched process whose `stat` shows as many
    /// threads as it had keeps its thread list without a listing.
    pub fn scan_cached(
        &self,
        cache: &mut ScanCache,
        want_threads: impl Fn(&ProcessInfo) -> bool,
    ) -> Result<Scan, ProcError> {
        let now = std::time::Instant::now();
        let (parts, refresh) = (cache.parts, cache.refresh);
        let own = *cache
            .own_namespace
            .get_or_insert_with(|| self.is_own_namespace());
        // read before listing: a task created during the listing moves it
        let counter = if own { self.last_pid() } else { None };
        let nothing_created = match (counter, cache.listed) {
            (Some(c), Some((was, at))) => c == was && now.duration_since(at) < refresh,
            _ => false,
        };
        let pids = if nothing_created {
            let mut known: Vec<(i32, u64)> =
                cache.entries.iter().map(|(&pid, e)| (pid, e.ino)).collect();
            known.sort_unstable();
            known
        } else {
            let listed = self.pid_entries()?;
            cache.listed = counter.map(|c| (c, now));
            listed
        };
        let mut scan = Scan::default();
        let mut seen = std::collections::HashSet::new();
        for (pid, ino) in pids {
            seen.insert(pid);
            // a pid reused since it was cached: forget the old process
            if cache.entries.get(&pid).is_some_and(|e| e.ino != ino) {
                cache.entries.remove(&pid);
            }
            let (due, kthread, watched) = match cache.entries.get(&pid) {
                Some(e) => (
                    now.duration_since(e.checked) >= refresh,
                    e.kthread,
                    !e.info.kernel_thread && want_threads(&e.info),
                ),
                None => (true, false, false),
            };
            // a kernel thread stays one; a known process that is not watched
            // costs nothing until its refresh (an exec into a selected
            // program is seen then)
            if kthread || (!watched && !due) {
                if let Some(e) = cache.entries.get(&pid) {
                    if !e.info.kernel_thread {
                        scan.processes.push(e.info.clone());
                    }
                }
                continue;
            }
            let stat = match self.proc.stat(pid).map_err(ProcError::from) {
                Ok(s) => s,
                Err(e) if e.is_gone() => {
                    cache.entries.remove(&pid);
                    continue;
                }
                Err(e) => {
                    scan.errors.push(e);
                    continue;
                }
            };
            if stat.flags & PF_KTHREAD != 0 || pid == 2 {
                // remembered, so that the next rescans skip it
                cache.entries.insert(
                    pid,
                    Cached {
                        info: ProcessInfo {
                            pid,
                            start_time: stat.start_time,
                            ppid: stat.ppid,
                            state: stat.state,
                            comm: stat.comm,
                            exe: None,
                            cgroups: Vec::new(),
                            threads: Vec::new(),
                            cpus_allowed: CpuSet::empty(),
                            kernel_thread: true,
                            uids: None,
                        },
                        checked: now,
                        ino,
                        kthread: true,
                    },
                );
                continue;
            }
            // the same process, no exec seen, and at its refresh none of the
            // parts read changed either: no full read
            let same = match cache.entries.get(&pid) {
                Some(e)
                    if !e.info.kernel_thread
                        && e.info.start_time == stat.start_time
                        && e.info.comm == stat.comm =>
                {
                    !due || self.parts_unchanged(&e.info, parts)
                }
                _ => false,
            };
            if same {
                if let Some(e) = cache.entries.get_mut(&pid) {
                    e.info.state = stat.state;
                    if due {
                        e.checked = now;
                    }
                    // nothing created and no thread gone: the same threads
                    let unchanged = nothing_created
                        && !e.info.threads.is_empty()
                        && e.info.threads.len() == stat.num_threads as usize;
                    if watched && !unchanged {
                        match self.threads(pid) {
                            Ok(t) => e.info.threads = t,
                            Err(err) if err.is_gone() => continue,
                            Err(err) => {
                                scan.errors.push(err);
                                continue;
                            }
                        }
                    }
                    scan.processes.push(e.info.clone());
                }
                continue;
            }
            match self.process_parts(pid, parts, |p| !p.kernel_thread && want_threads(p)) {
                Ok(p) => {
                    if !p.kernel_thread {
                        scan.processes.push(p.clone());
                    }
                    cache.entries.insert(
                        pid,
                        Cached {
                            info: p,
                            checked: now,
                            ino,
                            kthread: false,
                        },
                    );
                }
                Err(e) if e.is_gone() => {
                    cache.entries.remove(&pid);
                }
                Err(e) => scan.errors.push(e),
            }
        }
        cache.entries.retain(|pid, _| seen.contains(pid));
        Ok(scan)
    }

    /// Whether the `parts` of `p` read again are what the cache holds (a
    /// read that fails counts as a change: the full read reports it).
    fn parts_unchanged(&self, p: &ProcessInfo, parts: Parts) -> bool {
        let pid = p.pid;
        (!parts.exe || self.proc.exe(pid) == p.exe)
            && (!parts.cgroups || self.proc.cgroup(pid).is_ok_and(|c| c == p.cgroups))
            && (!parts.cpus_allowed
                || self
                    .parsed(pid, "status", parse_status_cpus_allowed)
                    .is_ok_and(|c| c == p.cpus_allowed))
            // a setuid() keeps comm and exe: seen here, at the refresh
            && (!parts.uids
                || self
                    .parsed(pid, "status", |t| Ok(parse_status_uids(t).ok()))
                    .is_ok_and(|u| u == p.uids))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn thread_sched_reads_processor_and_cpu_time() {
        let line = stat_line("42", "a) b", TAIL);
        let s = parse_thread_sched(&line).expect("parse");
        // TAIL: utime 12, stime 34, processor 3
        assert_eq!(s.cpu_ticks, 46);
        assert_eq!(s.cpu, 3);
        assert!(matches!(
            parse_thread_sched("1 (x) S 1 2 3"),
            Err(ProcParseError::Text(ParseError::StatTooShort { .. }))
        ));
        assert!(parse_thread_sched("no comm").is_err());
        let bad = stat_line("42", "x", &TAIL.replace(" 17 3 0", " 17 x 0"));
        assert!(parse_thread_sched(&bad).is_err());
        // the live kernel's format
        let me = ProcFs::new("/proc");
        let pid = std::process::id() as i32;
        let tid = unsafe { libc::syscall(libc::SYS_gettid) } as i32;
        let live = me.thread_sched(pid, tid).expect("own thread");
        assert!((live.cpu as usize) < memtamer_core::cpuset::MAX_CPUS);
    }

    fn stat_line(pid: &str, comm: &str, tail: &str) -> String {
        format!("{pid} ({comm}) {tail}")
    }
    // Fields 3..=22 and a few more, as the kernel prints them.
    const TAIL: &str = "S 1 1234 1234 0 -1 4194560 1000 0 0 0 12 34 0 0 20 0 3 0 987654 123456 789 18446744073709551615 1 1 0 0 0 0 0 4096 1 0 0 0 17 3 0 0 0 0 0";

    #[test]
    fn status_cpus() {
        let text =
            "Name:\tx\nCpus_allowed:\tff\nCpus_allowed_list:\t0-3,8\nMems_allowed_list:\t0\n";
        assert_eq!(
            parse_status_cpus_allowed(text).unwrap().to_string(),
            "0-3,8"
        );
        assert_eq!(
            parse_status_cpus_allowed("Name:\tx\n"),
            Err(ProcParseError::Text(ParseError::MissingStatusField(
                "Cpus_allowed_list"
            )))
        );
        assert!(matches!(
            parse_status_cpus_allowed("Cpus_allowed_list:\t0-4096\n"),
            Err(ProcParseError::CpuList(_))
        ));
    }

    #[test]
    fn status_uids() {
        let text = "Name:\tx\nUmask:\t0022\nUid:\t1000\t0\t0\t0\nGid:\t5\t5\t5\t5\n";
        assert_eq!(
            parse_status_uids(text).unwrap(),
            Uids {
                real: 1000,
                effective: 0
            }
        );
        assert!(parse_status_uids("Name:\tx\n").is_err());
        assert!(parse_status_uids("Uid:\t1000\n").is_err());
        assert!(parse_status_uids("Uid:\tx\t0\t0\t0\n").is_err());
        // the live kernel's format
        let me = ProcFs::new("/proc")
            .process(std::process::id() as i32)
            .unwrap();
        // SAFETY: getuid and geteuid have no preconditions.
        let (r, e) = unsafe { (libc::getuid(), libc::geteuid()) };
        assert_eq!(
            me.uids,
            Some(Uids {
                real: r,
                effective: e
            })
        );
    }

    #[test]
    fn error_messages_name_the_file() {
        let e = ProcError::Parse {
            path: PathBuf::from("/proc/1/stat"),
            source: ParseError::StatNoComm.into(),
        };
        assert_eq!(e.to_string(), "/proc/1/stat: no '(comm)' in stat line");
        assert!(!e.is_gone());
        assert!(ProcError::Gone { pid: 3 }.is_gone());
    }

    #[test]
    fn linux_errors_keep_their_kind_and_file() {
        let tmp = std::env::temp_dir().join(format!("memtamer-procfs-unit-{}", std::process::id()));
        let _ = fs::remove_dir_all(&tmp);
        fs::create_dir_all(tmp.join("5")).unwrap();
        fs::write(tmp.join("5/stat"), "5 no comm\n").unwrap();
        fs::write(tmp.join("5/cgroup"), "0::/\nbogus\n").unwrap();
        let proc = ProcRoot::new(&tmp);
        let e = ProcError::from(proc.stat(5).unwrap_err());
        assert!(matches!(
            &e,
            ProcError::Parse { path, source: ProcParseError::Text(ParseError::StatNoComm) }
                if path == &tmp.join("5/stat")
        ));
        let e = ProcError::from(proc.cgroup(5).unwrap_err());
        assert!(
            e.to_string()
                .ends_with("cgroup line 2: expected ID:CONTROLLERS:PATH, got \"bogus\""),
            "{e}"
        );
        assert!(matches!(
            ProcError::from(proc.stat(6).unwrap_err()),
            ProcError::Gone { pid: 6 }
        ));
        let e = ProcError::from(ProcRoot::new(tmp.join("none")).pids().unwrap_err());
        assert!(matches!(e, ProcError::Io { .. }));
        let _ = fs::remove_dir_all(&tmp);
    }
}
