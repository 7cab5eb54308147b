//! Reading process facts from a proc filesystem.
//!
//! All access goes through a root directory ([`ProcFs::new`]), normally
//! `/proc`, so tests can run against a fake tree in a temporary directory.
//!
//! Processes vanish at any moment: a read failing with `ENOENT`/`ESRCH`
//! means the process is gone ([`ProcError::Gone`]), which a scan skips
//! silently. The text parsers are pure functions, tested exhaustively.

use memtamer_core::cpuset::CpuListError;
use memtamer_core::CpuSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The usual mount point of procfs.
pub const DEFAULT_PROC_ROOT: &str = "/proc";

/// `PF_KTHREAD` from the kernel's `include/linux/sched.h`: set in the `flags`
/// field of `/proc/PID/stat` for kernel threads.
const PF_KTHREAD: u32 = 0x0020_0000;

/// Why the text of a proc file could not be understood. Kept separate from
/// I/O errors so pure parsers can be tested without a filesystem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProcParseError {
    /// `stat` lacks the `(comm)` part.
    #[error("no '(comm)' in stat line")]
    StatNoComm,
    /// `stat` has fewer fields than needed (field 22, start time).
    #[error("stat has {found} fields after comm, need at least {needed}")]
    StatTooShort {
        /// Fields found after the comm.
        found: usize,
        /// Fields required after the comm.
        needed: usize,
    },
    /// A numeric or character field did not parse.
    #[error("field {field}: cannot parse {value:?}")]
    BadField {
        /// Name of the field.
        field: &'static str,
        /// Its text.
        value: String,
    },
    /// A `cgroup` line is not `ID:CONTROLLERS:PATH`.
    #[error("cgroup line {line_no}: expected ID:CONTROLLERS:PATH, got {line:?}")]
    CgroupLine {
        /// 1-based line number.
        line_no: usize,
        /// The line.
        line: String,
    },
    /// A required `status` field is absent.
    #[error("status has no {0} line")]
    MissingStatusField(&'static str),
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

/// One line of `/proc/PID/cgroup`: `hierarchy-ID:controller-list:path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupEntry {
    /// Hierarchy id; 0 is the cgroup v2 unified hierarchy.
    pub hierarchy_id: u32,
    /// Controllers bound to the hierarchy (`cpu`, `cpuset`, `name=systemd`);
    /// empty for cgroup v2.
    pub controllers: Vec<String>,
    /// Path of the process's cgroup relative to the hierarchy's mount.
    pub path: String,
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

/// The fields of `/proc/PID/stat` the daemon uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatFields {
    /// Field 1.
    pub pid: i32,
    /// Field 2, without the parentheses.
    pub comm: String,
    /// Field 3.
    pub state: char,
    /// Field 4.
    pub ppid: i32,
    /// Field 9 (`PF_*` flags).
    pub flags: u32,
    /// Field 20, threads in the process.
    pub num_threads: u32,
    /// Field 22, clock ticks since boot.
    pub start_time: u64,
}

fn field<T: std::str::FromStr>(name: &'static str, s: &str) -> Result<T, ProcParseError> {
    s.parse().map_err(|_| ProcParseError::BadField {
        field: name,
        value: s.to_string(),
    })
}

/// The fields of a `stat` line after the comm, which ends at byte `close`
/// (the LAST `)`); at least `needed` of them.
fn stat_fields_after(text: &str, close: usize, needed: usize) -> Result<Vec<&str>, ProcParseError> {
    let rest: Vec<&str> = text[close + 1..].split_ascii_whitespace().collect();
    if rest.len() < needed {
        return Err(ProcParseError::StatTooShort {
            found: rest.len(),
            needed,
        });
    }
    Ok(rest)
}

/// Parses `/proc/PID/stat`. The comm may contain spaces and `)`, so it spans
/// from the first `(` to the LAST `)`; the rest is split on whitespace.
pub fn parse_stat(text: &str) -> Result<StatFields, ProcParseError> {
    let open = text.find('(').ok_or(ProcParseError::StatNoComm)?;
    let close = text.rfind(')').ok_or(ProcParseError::StatNoComm)?;
    if close < open {
        return Err(ProcParseError::StatNoComm);
    }
    let pid = field("pid", text[..open].trim())?;
    let comm = text[open + 1..close].to_string();
    // rest[0] is field 3; field 22 is rest[19].
    let rest = stat_fields_after(text, close, 20)?;
    let mut state_chars = rest[0].chars();
    let state = match (state_chars.next(), state_chars.next()) {
        (Some(c), None) => c,
        _ => {
            return Err(ProcParseError::BadField {
                field: "state",
                value: rest[0].to_string(),
            })
        }
    };
    Ok(StatFields {
        pid,
        comm,
        state,
        ppid: field("ppid", rest[1])?,
        flags: field("flags", rest[6])?,
        num_threads: field("num_threads", rest[17])?,
        start_time: field("starttime", rest[19])?,
    })
}

/// Parses `/proc/PID/cgroup`. Paths may contain `:`, so each line is split
/// at its first two colons only. Blank lines are ignored.
pub fn parse_cgroup(text: &str) -> Result<Vec<CgroupEntry>, ProcParseError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = || ProcParseError::CgroupLine {
            line_no: i + 1,
            line: line.to_string(),
        };
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(ctl), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(bad());
        };
        let hierarchy_id = id.parse().map_err(|_| bad())?;
        out.push(CgroupEntry {
            hierarchy_id,
            controllers: ctl
                .split(',')
                .filter(|c| !c.is_empty())
                .map(String::from)
                .collect(),
            path: path.to_string(),
        });
    }
    Ok(out)
}

/// Extracts `Cpus_allowed_list` from `/proc/PID/status`.
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

/// Parses `/proc/PID/task/TID/schedstat`: run time (ns), wait time (ns),
/// timeslices; returns the run time.
pub fn parse_schedstat(text: &str) -> Result<u64, ProcParseError> {
    field("run_ns", text.split_ascii_whitespace().next().unwrap_or(""))
}

/// Parses the scheduling fields of `/proc/PID/task/TID/stat`.
pub fn parse_thread_sched(text: &str) -> Result<ThreadSched, ProcParseError> {
    let close = text.rfind(')').ok_or(ProcParseError::StatNoComm)?;
    // rest[0] is field 3: utime (14) is rest[11], stime (15) rest[12],
    // processor (39) rest[36]
    let rest = stat_fields_after(text, close, 37)?;
    let utime: u64 = field("utime", rest[11])?;
    let stime: u64 = field("stime", rest[12])?;
    Ok(ThreadSched {
        cpu: field("processor", rest[36])?,
        cpu_ticks: utime.saturating_add(stime),
        run_ns: None,
    })
}

pub fn parse_status_cpus_allowed(text: &str) -> Result<CpuSet, ProcParseError> {
    let value = text
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .ok_or(ProcParseError::MissingStatusField("Cpus_allowed_list"))?;
    Ok(CpuSet::parse_list(value.trim())?)
}

/// Whether a directory entry name is a pid (all ASCII digits, fits `i32`, > 0).
pub fn parse_pid(name: &str) -> Option<i32> {
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    name.parse().ok().filter(|p| *p > 0)
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
    root: PathBuf,
}

impl Default for ProcFs {
    /// The real `/proc`.
    fn default() -> Self {
        ProcFs::new(DEFAULT_PROC_ROOT)
    }
}

/// Reads a small proc file as text (invalid UTF-8 replaced). Unlike
/// `fs::read` it does not ask for the file's size first (proc files report
/// 0) nor grow its buffer from a small probe: open, two reads, close.
fn read_text(path: &Path) -> io::Result<String> {
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
}

impl Parts {
    /// Everything [`ProcessInfo`] holds.
    pub const ALL: Parts = Parts {
        exe: true,
        cgroups: true,
        cpus_allowed: true,
    };
}

fn gone_or_io(pid: Option<i32>, path: &Path, source: io::Error) -> ProcError {
    let gone = source.kind() == io::ErrorKind::NotFound
        || source.raw_os_error() == Some(libc::ESRCH)
        || source.raw_os_error() == Some(libc::ENOENT);
    match pid {
        Some(pid) if gone => ProcError::Gone { pid },
        _ => ProcError::Io {
            path: path.to_path_buf(),
            source,
        },
    }
}

impl ProcFs {
    /// A proc filesystem mounted at `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        ProcFs { root: root.into() }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn pid_path(&self, pid: i32, file: &str) -> PathBuf {
        self.root.join(pid.to_string()).join(file)
    }

    fn read(&self, pid: i32, file: &str) -> Result<String, ProcError> {
        let path = self.pid_path(pid, file);
        read_text(&path).map_err(|e| gone_or_io(Some(pid), &path, e))
    }

    fn parsed<T>(
        &self,
        pid: i32,
        file: &str,
        parse: impl FnOnce(&str) -> Result<T, ProcParseError>,
    ) -> Result<T, ProcError> {
        let text = self.read(pid, file)?;
        parse(&text).map_err(|source| ProcError::Parse {
            path: self.pid_path(pid, file),
            source,
        })
    }

    /// All pids (numeric entries of the root), ascending. Fails only if the
    /// root itself cannot be listed.
    pub fn pids(&self) -> Result<Vec<i32>, ProcError> {
        Ok(self
            .pid_entries()?
            .into_iter()
            .map(|(pid, _)| pid)
            .collect())
    }

    /// All pids with the inode number of their directory, ascending. The
    /// inode identifies the process: procfs gives a pid that was reused a
    /// new directory inode, so a scan can tell a new process from a known
    /// one without reading its files.
    pub fn pid_entries(&self) -> Result<Vec<(i32, u64)>, ProcError> {
        use std::os::unix::fs::DirEntryExt;
        let io_err = |source| ProcError::Io {
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

    /// Thread ids of `pid`, ascending.
    pub fn threads(&self, pid: i32) -> Result<Vec<i32>, ProcError> {
        let path = self.pid_path(pid, "task");
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
        let stat = self.parsed(pid, "stat", parse_stat)?;
        let read_exe = parts.exe || (stat.ppid == 2 && stat.flags & PF_KTHREAD == 0);
        let exe = if read_exe {
            fs::read_link(self.pid_path(pid, "exe")).ok()
        } else {
            None
        };
        let cgroups = if parts.cgroups {
            self.parsed(pid, "cgroup", parse_cgroup)?
        } else {
            Vec::new()
        };
        let cpus_allowed = if parts.cpus_allowed {
            self.parsed(pid, "status", parse_status_cpus_allowed)?
        } else {
            CpuSet::empty()
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
        };
        let threads = want_threads(&p);
        if threads {
            p.threads = self.threads(pid)?;
        }
        // more than `stat` read: make sure it all came from one process
        if read_exe || parts.cgroups || parts.cpus_allowed || threads {
            let again = self.parsed(pid, "stat", parse_stat)?;
            if again.start_time != stat.start_time {
                return Err(ProcError::Gone { pid });
            }
        }
        Ok(p)
    }

    /// Reads where thread `tid` of `pid` runs and its CPU time.
    pub fn thread_sched(&self, pid: i32, tid: i32) -> Result<ThreadSched, ProcError> {
        let mut s = self.parsed(pid, &format!("task/{tid}/stat"), parse_thread_sched)?;
        s.run_ns = self
            .parsed(pid, &format!("task/{tid}/schedstat"), parse_schedstat)
            .ok();
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
        let text = read_text(&self.root.join("loadavg")).ok()?;
        text.split_ascii_whitespace().last()?.parse().ok()
    }

    /// Whether this proc filesystem shows our own pid namespace (`self`
    /// names our pid), so that [`ProcFs::last_pid`] counts its tasks.
    fn is_own_namespace(&self) -> bool {
        fs::read_link(self.root.join("self"))
            .ok()
            .and_then(|t| t.to_str().and_then(|t| t.parse::<u32>().ok()))
            == Some(std::process::id())
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
            let stat = match self.parsed(pid, "stat", parse_stat) {
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
        (!parts.exe || fs::read_link(self.pid_path(pid, "exe")).ok() == p.exe)
            && (!parts.cgroups
                || self
                    .parsed(pid, "cgroup", parse_cgroup)
                    .is_ok_and(|c| c == p.cgroups))
            && (!parts.cpus_allowed
                || self
                    .parsed(pid, "status", parse_status_cpus_allowed)
                    .is_ok_and(|c| c == p.cpus_allowed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_sched_reads_processor_and_cpu_time() {
        let line = stat_line("42", "a) b", TAIL);
        let s = parse_thread_sched(&line).expect("parse");
        // TAIL: utime 12, stime 34, processor 3
        assert_eq!(s.cpu_ticks, 46);
        assert_eq!(s.cpu, 3);
        assert!(matches!(
            parse_thread_sched("1 (x) S 1 2 3"),
            Err(ProcParseError::StatTooShort { .. })
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
        assert_eq!(parse_schedstat("167579456 9725208 399\n"), Ok(167579456));
        assert!(parse_schedstat("").is_err());
        assert!(parse_schedstat("x 1 2").is_err());
    }

    fn stat_line(pid: &str, comm: &str, tail: &str) -> String {
        format!("{pid} ({comm}) {tail}")
    }
    // Fields 3..=22 and a few more, as the kernel prints them.
    const TAIL: &str = "S 1 1234 1234 0 -1 4194560 1000 0 0 0 12 34 0 0 20 0 3 0 987654 123456 789 18446744073709551615 1 1 0 0 0 0 0 4096 1 0 0 0 17 3 0 0 0 0 0";

    #[test]
    fn stat_plain() {
        let s = parse_stat(&stat_line("42", "memcached", TAIL)).unwrap();
        assert_eq!(
            s,
            StatFields {
                pid: 42,
                comm: "memcached".into(),
                state: 'S',
                ppid: 1,
                flags: 4194560,
                num_threads: 3,
                start_time: 987654
            }
        );
    }

    #[test]
    fn stat_comm_with_spaces_and_parens() {
        for comm in [
            "a b",
            "x) S 9 9",
            "(",
            ")",
            "()",
            ") (",
            "",
            "tmux: server",
            "a\nb",
        ] {
            let s = parse_stat(&stat_line("7", comm, TAIL)).unwrap();
            assert_eq!(s.comm, comm);
            assert_eq!(s.ppid, 1, "{comm:?}");
            assert_eq!(s.start_time, 987654, "{comm:?}");
        }
    }

    #[test]
    fn stat_kernel_thread_flags() {
        let tail = TAIL.replacen("4194560", "2129984", 1); // PF_KTHREAD | ...
        let s = parse_stat(&stat_line("3", "rcu_gp", &tail)).unwrap();
        assert_ne!(s.flags & PF_KTHREAD, 0);
    }

    #[test]
    fn stat_trailing_newline_and_exact_length() {
        let exact: Vec<&str> = TAIL.split(' ').take(20).collect();
        let s = parse_stat(&format!("1 (init) {}\n", exact.join(" "))).unwrap();
        assert_eq!(s.start_time, 987654);
    }

    #[test]
    fn stat_errors() {
        assert_eq!(parse_stat(""), Err(ProcParseError::StatNoComm));
        assert_eq!(parse_stat("1 init S 0"), Err(ProcParseError::StatNoComm));
        assert_eq!(parse_stat("1 )x( S"), Err(ProcParseError::StatNoComm));
        assert_eq!(
            parse_stat("1 (x) S 0 1"),
            Err(ProcParseError::StatTooShort {
                found: 3,
                needed: 20
            })
        );
        let short: Vec<&str> = TAIL.split(' ').take(19).collect();
        assert!(matches!(
            parse_stat(&stat_line("1", "x", &short.join(" "))),
            Err(ProcParseError::StatTooShort { found: 19, .. })
        ));
        assert!(matches!(
            parse_stat(&stat_line("x", "x", TAIL)),
            Err(ProcParseError::BadField { field: "pid", .. })
        ));
        assert!(matches!(
            parse_stat(&stat_line("1", "x", &TAIL.replacen("S 1", "SS 1", 1))),
            Err(ProcParseError::BadField { field: "state", .. })
        ));
        assert!(matches!(
            parse_stat(&stat_line("1", "x", &TAIL.replacen("S 1", "S -", 1))),
            Err(ProcParseError::BadField { field: "ppid", .. })
        ));
        assert!(matches!(
            parse_stat(&stat_line("1", "x", &TAIL.replace("987654", "-5"))),
            Err(ProcParseError::BadField {
                field: "starttime",
                ..
            })
        ));
        assert!(matches!(
            parse_stat(&stat_line("1", "x", &TAIL.replace("4194560", "x"))),
            Err(ProcParseError::BadField { field: "flags", .. })
        ));
    }

    #[test]
    fn cgroup_v1_v2_hybrid() {
        let text = "12:cpuset:/c\n11:cpu,cpuacct:/system.slice/a.service\n1:name=systemd:/system.slice/a.service\n0::/system.slice/a.service\n";
        let c = parse_cgroup(text).unwrap();
        assert_eq!(c.len(), 4);
        assert_eq!(c[1].hierarchy_id, 11);
        assert_eq!(c[1].controllers, vec!["cpu", "cpuacct"]);
        assert_eq!(c[2].controllers, vec!["name=systemd"]);
        assert_eq!(c[3].hierarchy_id, 0);
        assert!(c[3].controllers.is_empty());
        assert_eq!(c[3].path, "/system.slice/a.service");
    }

    #[test]
    fn cgroup_path_with_colons_and_blank_lines() {
        let c = parse_cgroup("0::/a:b:c\n\n").unwrap();
        assert_eq!(
            c,
            vec![CgroupEntry {
                hierarchy_id: 0,
                controllers: vec![],
                path: "/a:b:c".into()
            }]
        );
        assert_eq!(parse_cgroup("").unwrap(), vec![]);
        assert_eq!(parse_cgroup("0::").unwrap()[0].path, "");
    }

    #[test]
    fn cgroup_errors() {
        assert_eq!(
            parse_cgroup("0::/\nbogus\n"),
            Err(ProcParseError::CgroupLine {
                line_no: 2,
                line: "bogus".into()
            })
        );
        assert!(parse_cgroup("0:/x").is_err());
        assert!(parse_cgroup("x::/x").is_err());
        assert!(parse_cgroup("-1::/x").is_err());
    }

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
            Err(ProcParseError::MissingStatusField("Cpus_allowed_list"))
        );
        assert!(matches!(
            parse_status_cpus_allowed("Cpus_allowed_list:\t0-999\n"),
            Err(ProcParseError::CpuList(_))
        ));
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
    fn error_messages_name_the_file() {
        let e = ProcError::Parse {
            path: PathBuf::from("/proc/1/stat"),
            source: ProcParseError::StatNoComm,
        };
        assert_eq!(e.to_string(), "/proc/1/stat: no '(comm)' in stat line");
        assert!(!e.is_gone());
        assert!(ProcError::Gone { pid: 3 }.is_gone());
        assert!(gone_or_io(
            Some(1),
            Path::new("x"),
            io::Error::from_raw_os_error(libc::ESRCH)
        )
        .is_gone());
        assert!(!gone_or_io(
            Some(1),
            Path::new("x"),
            io::Error::from_raw_os_error(libc::EACCES)
        )
        .is_gone());
        assert!(!gone_or_io(
            None,
            Path::new("x"),
            io::Error::from_raw_os_error(libc::ENOENT)
        )
        .is_gone());
    }
}
