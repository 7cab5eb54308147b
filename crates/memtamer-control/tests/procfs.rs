//! procfs against a fake proc tree in a temporary directory, and against the
//! real /proc for the test process itself.

use memtamer_control::config::JobMatch;
use memtamer_control::procfs::{ProcError, ProcFs, ProcParseError};
use memtamer_control::select::{classify, classify_keyed, diff, ProcessKey, Selector};
use memtamer_linux::ParseError;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A temporary directory removed on drop (no tempfile dependency needed).
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let p = std::env::temp_dir().join(format!(
            "memtamer-procfs-{}-{}",
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

struct FakeProc<'a> {
    pid: i32,
    comm: &'a str,
    ppid: i32,
    flags: u32,
    start: u64,
    exe: Option<&'a str>,
    cgroup: &'a str,
    cpus: &'a str,
    threads: &'a [i32],
}

impl Default for FakeProc<'_> {
    fn default() -> Self {
        FakeProc {
            pid: 100,
            comm: "proc",
            ppid: 1,
            flags: 4194560,
            start: 5000,
            exe: Some("/usr/bin/proc"),
            cgroup: "0::/system.slice/proc.service\n",
            cpus: "0-7",
            threads: &[],
        }
    }
}

fn stat_text(pid: i32, comm: &str, ppid: i32, flags: u32, start: u64) -> String {
    stat_text_threads(pid, comm, ppid, flags, start, 1)
}

/// A stat line whose field 20 says `threads` threads.
fn stat_text_threads(
    pid: i32,
    comm: &str,
    ppid: i32,
    flags: u32,
    start: u64,
    threads: usize,
) -> String {
    format!(
        "{pid} ({comm}) S {ppid} {pid} {pid} 0 -1 {flags} 100 0 0 0 5 6 0 0 20 0 {threads} 0 {start} 1000 100 \
         18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 2 0 0 0 0 0\n"
    )
}

fn write_proc(root: &Path, p: &FakeProc) {
    let dir = root.join(p.pid.to_string());
    fs::create_dir_all(dir.join("task")).unwrap();
    fs::write(
        dir.join("stat"),
        stat_text(p.pid, p.comm, p.ppid, p.flags, p.start),
    )
    .unwrap();
    fs::write(dir.join("comm"), format!("{}\n", p.comm)).unwrap();
    fs::write(dir.join("cgroup"), p.cgroup).unwrap();
    fs::write(
        dir.join("status"),
        format!(
            "Name:\t{}\nState:\tS (sleeping)\nCpus_allowed:\tff\nCpus_allowed_list:\t{}\n",
            p.comm, p.cpus
        ),
    )
    .unwrap();
    if let Some(exe) = p.exe {
        symlink(exe, dir.join("exe")).unwrap();
    }
    let threads: Vec<i32> = if p.threads.is_empty() {
        vec![p.pid]
    } else {
        p.threads.to_vec()
    };
    for t in threads {
        fs::create_dir_all(dir.join("task").join(t.to_string())).unwrap();
    }
}

#[test]
fn reads_one_process() {
    let tmp = TempDir::new();
    write_proc(
        &tmp.0,
        &FakeProc {
            pid: 4242,
            comm: "my (weird) comm)",
            threads: &[4250, 4242, 4243],
            cgroup:
                "12:cpuset:/\n1:name=systemd:/system.slice/x.service\n0::/system.slice/x.service\n",
            cpus: "0-3,8",
            ..Default::default()
        },
    );
    let p = ProcFs::new(&tmp.0).process(4242).unwrap();
    assert_eq!(p.pid, 4242);
    assert_eq!(p.comm, "my (weird) comm)");
    assert_eq!(p.ppid, 1);
    assert_eq!(p.state, 'S');
    assert_eq!(p.start_time, 5000);
    assert_eq!(p.exe, Some(PathBuf::from("/usr/bin/proc")));
    assert_eq!(p.threads, vec![4242, 4243, 4250]);
    assert_eq!(p.cpus_allowed.to_string(), "0-3,8");
    assert_eq!(p.cgroups.len(), 3);
    assert_eq!(p.cgroups[1].controllers, vec!["name=systemd"]);
    assert!(!p.kernel_thread);
}

#[test]
fn missing_exe_is_none() {
    let tmp = TempDir::new();
    write_proc(
        &tmp.0,
        &FakeProc {
            exe: None,
            ..Default::default()
        },
    );
    let p = ProcFs::new(&tmp.0).process(100).unwrap();
    assert_eq!(p.exe, None);
    assert!(!p.kernel_thread);
}

#[test]
fn pids_lists_numeric_entries_only() {
    let tmp = TempDir::new();
    for pid in [300, 2, 1, 45] {
        write_proc(
            &tmp.0,
            &FakeProc {
                pid,
                ..Default::default()
            },
        );
    }
    for other in ["self", "sys", "0", "12a"] {
        fs::create_dir_all(tmp.0.join(other)).unwrap();
    }
    fs::write(tmp.0.join("uptime"), "1 2\n").unwrap();
    assert_eq!(ProcFs::new(&tmp.0).pids().unwrap(), vec![1, 2, 45, 300]);
}

#[test]
fn vanished_process_is_gone() {
    let tmp = TempDir::new();
    let fs_ = ProcFs::new(&tmp.0);
    assert!(matches!(fs_.process(77), Err(ProcError::Gone { pid: 77 })));
    // Exited between reading stat and cgroup.
    write_proc(
        &tmp.0,
        &FakeProc {
            pid: 78,
            ..Default::default()
        },
    );
    fs::remove_file(tmp.0.join("78/cgroup")).unwrap();
    assert!(fs_.process(78).unwrap_err().is_gone());
    // Exited before its task directory was listed.
    write_proc(
        &tmp.0,
        &FakeProc {
            pid: 79,
            ..Default::default()
        },
    );
    fs::remove_dir_all(tmp.0.join("79/task")).unwrap();
    assert!(fs_.process(79).unwrap_err().is_gone());
}

#[test]
fn bad_content_is_a_parse_error_naming_the_file() {
    let tmp = TempDir::new();
    write_proc(
        &tmp.0,
        &FakeProc {
            pid: 5,
            ..Default::default()
        },
    );
    fs::write(tmp.0.join("5/stat"), "5 garbage").unwrap();
    let err = ProcFs::new(&tmp.0).process(5).unwrap_err();
    match &err {
        ProcError::Parse { path, source } => {
            assert_eq!(path, &tmp.0.join("5/stat"));
            assert_eq!(source, &ProcParseError::Text(ParseError::StatNoComm));
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(err.to_string().contains("5/stat"), "{err}");
}

#[test]
fn scan_skips_kernel_threads_and_gone_and_collects_errors() {
    let tmp = TempDir::new();
    let root = &tmp.0;
    write_proc(
        root,
        &FakeProc {
            pid: 1,
            ppid: 0,
            comm: "systemd",
            ..Default::default()
        },
    );
    write_proc(
        root,
        &FakeProc {
            pid: 2,
            ppid: 0,
            comm: "kthreadd",
            exe: None,
            ..Default::default()
        },
    );
    write_proc(
        root,
        &FakeProc {
            pid: 3,
            ppid: 2,
            comm: "rcu_gp",
            exe: None,
            ..Default::default()
        },
    );
    // Kernel thread recognized by PF_KTHREAD alone (e.g. in a container where
    // kthreadd is not visible).
    write_proc(
        root,
        &FakeProc {
            pid: 4,
            ppid: 0,
            comm: "kworker/0:1",
            exe: None,
            flags: 0x0020_8040,
            ..Default::default()
        },
    );
    write_proc(
        root,
        &FakeProc {
            pid: 10,
            comm: "memcached",
            ..Default::default()
        },
    );
    write_proc(
        root,
        &FakeProc {
            pid: 11,
            comm: "zombie",
            exe: None,
            ..Default::default()
        },
    );
    fs::create_dir_all(root.join("12")).unwrap(); // vanished: empty dir
    write_proc(
        root,
        &FakeProc {
            pid: 13,
            ..Default::default()
        },
    );
    fs::write(root.join("13/status"), "Name:\tx\n").unwrap(); // broken
    write_proc(
        root,
        &FakeProc {
            pid: 14,
            cpus: "0-4095",
            ..Default::default()
        },
    ); // more CPUs than a CpuSet (1024) holds

    let scan = ProcFs::new(root).scan().unwrap();
    let pids: Vec<i32> = scan.processes.iter().map(|p| p.pid).collect();
    assert_eq!(pids, vec![1, 10, 11]);
    assert_eq!(scan.errors.len(), 2);
    assert!(scan
        .errors
        .iter()
        .all(|e| matches!(e, ProcError::Parse { .. })));
    assert!(matches!(
        &scan.errors[0],
        ProcError::Parse {
            source: ProcParseError::Text(ParseError::MissingStatusField(_)),
            ..
        }
    ));
    assert!(matches!(
        &scan.errors[1],
        ProcError::Parse {
            source: ProcParseError::CpuList(_),
            ..
        }
    ));
}

#[test]
fn scan_of_missing_root_fails_naming_it() {
    let err = ProcFs::new("/nonexistent/proc").scan().unwrap_err();
    assert!(matches!(err, ProcError::Io { .. }));
    assert!(err.to_string().starts_with("/nonexistent/proc: "), "{err}");
}

#[test]
fn fake_tree_end_to_end_with_selection_and_diff() {
    let tmp = TempDir::new();
    let root = &tmp.0;
    write_proc(
        root,
        &FakeProc {
            pid: 10,
            comm: "memcached",
            start: 1,
            ..Default::default()
        },
    );
    write_proc(
        root,
        &FakeProc {
            pid: 11,
            comm: "fio",
            start: 2,
            ..Default::default()
        },
    );
    write_proc(
        root,
        &FakeProc {
            pid: 12,
            comm: "bash",
            start: 3,
            ..Default::default()
        },
    );
    let procfs = ProcFs::new(root);
    let jobs = vec![
        Selector::compile(&JobMatch {
            comm: Some("memcached".into()),
            ..Default::default()
        })
        .unwrap(),
        Selector::compile(&JobMatch {
            comm: Some("fio".into()),
            ..Default::default()
        })
        .unwrap(),
    ];
    let first = procfs.scan().unwrap().processes;
    assert_eq!(classify(&first, &jobs), vec![(10, 0), (11, 1)]);
    let prev: Vec<(ProcessKey, usize)> = classify_keyed(&first, &jobs)
        .into_iter()
        .filter_map(|(k, j)| j.map(|j| (k, j)))
        .collect();

    // fio exits and its pid is reused by a new fio; bash execs memcached.
    fs::remove_dir_all(root.join("11")).unwrap();
    write_proc(
        root,
        &FakeProc {
            pid: 11,
            comm: "fio",
            start: 9,
            ..Default::default()
        },
    );
    fs::write(root.join("12/stat"), stat_text(12, "memcached", 1, 0, 3)).unwrap();
    let second = procfs.scan().unwrap().processes;
    let d = diff(&prev, &classify_keyed(&second, &jobs));
    let key = |pid, start_time| ProcessKey { pid, start_time };
    assert_eq!(d.exited, vec![(key(11, 2), 1)]);
    assert_eq!(d.appeared, vec![(key(11, 9), 1), (key(12, 3), 0)]);
    assert_eq!(d.unchanged, vec![(key(10, 1), 0)]);
}

#[test]
fn real_proc_self() {
    let procfs = ProcFs::default();
    assert_eq!(procfs.root(), Path::new("/proc"));
    let me = std::process::id() as i32;
    let p = procfs.process(me).unwrap();
    assert_eq!(p.pid, me);
    assert!(p.start_time > 0);
    assert!(p.ppid > 0 || me == 1);
    assert!(!p.comm.is_empty());
    let comm = fs::read_to_string(format!("/proc/{me}/comm")).unwrap();
    assert_eq!(p.comm, comm.trim_end_matches('\n'));
    let exe = std::env::current_exe().unwrap();
    assert_eq!(p.exe.as_deref(), Some(exe.as_path()));
    assert!(p.threads.contains(&me));
    assert!(!p.cpus_allowed.is_empty());
    assert!(!p.cgroups.is_empty());
    assert!(matches!(p.state, 'R' | 'S'));
    assert!(!p.kernel_thread);

    let scan = procfs.scan().unwrap();
    let found = scan.processes.iter().find(|q| q.pid == me).unwrap();
    assert_eq!(found.start_time, p.start_time);
    assert!(scan
        .processes
        .iter()
        .all(|q| !q.kernel_thread && q.pid != 2));

    let sel = Selector::compile(&JobMatch {
        pid: vec![me],
        ..Default::default()
    })
    .unwrap();
    assert_eq!(classify(&scan.processes, &[sel]), vec![(me, 0)]);
    let sel = Selector::compile(&JobMatch {
        exe: Some(exe.to_string_lossy().into_owned()),
        ..Default::default()
    })
    .unwrap();
    assert!(classify(&scan.processes, &[sel]).contains(&(me, 0)));
}

/// Process 300, `fio`, one thread: the process the cached-scan tests watch.
fn write_fio_300(root: &Path) {
    write_proc(
        root,
        &FakeProc {
            pid: 300,
            comm: "fio",
            threads: &[300],
            ..Default::default()
        },
    );
}

/// Process 300 execs: its stat now names `fio-worker`.
fn exec_fio_300_as_worker(root: &Path) {
    fs::write(
        root.join("300/stat"),
        stat_text(300, "fio-worker", 1, 4194560, 5000),
    )
    .unwrap();
}

#[test]
fn cached_scan_rereads_only_stat_until_an_exec_or_new_thread() {
    use memtamer_control::procfs::ScanCache;
    let tmp = TempDir::new();
    write_fio_300(&tmp.0);
    write_proc(
        &tmp.0,
        &FakeProc {
            pid: 2,
            comm: "kthreadd",
            ppid: 0,
            flags: 0x0020_8040,
            exe: None,
            ..Default::default()
        },
    );
    let fs_ = ProcFs::new(&tmp.0);
    let mut cache = ScanCache::default();
    let first = fs_.scan_cached(&mut cache, |_| true).unwrap();
    assert_eq!(first.processes.len(), 1, "kernel threads skipped");
    assert_eq!(first.processes, fs_.scan().unwrap().processes);
    // a cgroup move is not seen before the full refresh ...
    fs::write(tmp.0.join("300/cgroup"), "0::/other.slice\n").unwrap();
    // ... but a new thread is, for a process whose threads are wanted
    fs::create_dir_all(tmp.0.join("300/task/301")).unwrap();
    let second = fs_.scan_cached(&mut cache, |p| p.pid == 300).unwrap();
    assert_eq!(second.processes[0].threads, vec![300, 301]);
    assert_eq!(
        second.processes[0].cgroups[0].path,
        "/system.slice/proc.service"
    );
    // an exec changes the comm in stat: an unwatched process is not even
    // stat'ed before its full refresh, a watched one is read in full again
    exec_fio_300_as_worker(&tmp.0);
    let unwatched = fs_.scan_cached(&mut cache, |_| false).unwrap();
    assert_eq!(unwatched.processes[0].comm, "fio");
    let third = fs_.scan_cached(&mut cache, |_| true).unwrap();
    assert_eq!(third.processes[0].comm, "fio-worker");
    assert_eq!(third.processes[0].cgroups[0].path, "/other.slice");
    // gone processes leave the cache and the scan
    fs::remove_dir_all(tmp.0.join("300")).unwrap();
    assert!(fs_
        .scan_cached(&mut cache, |_| true)
        .unwrap()
        .processes
        .is_empty());
}

#[test]
fn a_cached_scan_reads_only_its_parts_and_checks_them_at_the_refresh() {
    use memtamer_control::procfs::{Parts, ScanCache};
    use std::time::Duration;
    let tmp = TempDir::new();
    write_fio_300(&tmp.0);
    // a child of kthreadd that is a user process (a usermode helper) ...
    write_proc(
        &tmp.0,
        &FakeProc {
            pid: 301,
            comm: "modprobe",
            ppid: 2,
            ..Default::default()
        },
    );
    // ... and one that is not, on a kernel without PF_KTHREAD in stat
    write_proc(
        &tmp.0,
        &FakeProc {
            pid: 302,
            comm: "kworker/0:1",
            ppid: 2,
            flags: 0,
            exe: None,
            ..Default::default()
        },
    );
    let fs_ = ProcFs::new(&tmp.0);
    let none = Parts {
        exe: false,
        cgroups: false,
        cpus_allowed: false,
        uids: false,
    };
    // nothing but stat (and the thread list of a wanted process): status
    // and cgroup are not read (removed, a full read would fail on them)
    fs::remove_file(tmp.0.join("300/status")).unwrap();
    fs::remove_file(tmp.0.join("300/cgroup")).unwrap();
    let mut cache = ScanCache::new(none).with_refresh(Duration::ZERO);
    let first = fs_.scan_cached(&mut cache, |_| false).unwrap();
    assert!(first.errors.is_empty(), "{:?}", first.errors);
    let pids: Vec<i32> = first.processes.iter().map(|p| p.pid).collect();
    assert_eq!(pids, vec![300, 301], "the kernel thread is left out");
    assert_eq!(first.processes[0].exe, None, "exe not read");
    assert!(first.processes[0].cgroups.is_empty());
    assert!(first.processes[0].threads.is_empty(), "threads not wanted");
    assert_eq!(
        first.processes[1].exe.as_deref(),
        Some(Path::new("/usr/bin/proc")),
        "read to tell a usermode helper from a kernel thread"
    );
    // at each refresh (here every scan) an unwatched process's stat is
    // read again: an exec shows
    exec_fio_300_as_worker(&tmp.0);
    let second = fs_
        .scan_cached(&mut cache, |p| p.comm == "fio-worker")
        .unwrap();
    assert_eq!(second.processes[0].comm, "fio-worker");
    assert_eq!(
        second.processes[0].threads,
        vec![300],
        "wanted after the exec"
    );

    // with cgroups read, a cgroup move shows at the refresh, and only then
    fs::write(tmp.0.join("300/cgroup"), "0::/system.slice/fio.service\n").unwrap();
    let cgroups = Parts {
        cgroups: true,
        ..none
    };
    let mut slow = ScanCache::new(cgroups);
    let mut every = ScanCache::new(cgroups).with_refresh(Duration::ZERO);
    for c in [&mut slow, &mut every] {
        let s = fs_.scan_cached(c, |_| true).unwrap();
        assert_eq!(s.processes[0].cgroups[0].path, "/system.slice/fio.service");
    }
    fs::write(tmp.0.join("300/cgroup"), "0::/other.slice\n").unwrap();
    fs::create_dir_all(tmp.0.join("300/task/303")).unwrap();
    let s = fs_.scan_cached(&mut slow, |_| true).unwrap();
    assert_eq!(s.processes[0].cgroups[0].path, "/system.slice/fio.service");
    assert_eq!(
        s.processes[0].threads,
        vec![300, 303],
        "watched: threads read"
    );
    let s = fs_
        .scan_cached(&mut every, |p| p.cgroups[0].path == "/other.slice")
        .unwrap();
    assert_eq!(s.processes[0].cgroups[0].path, "/other.slice");
    assert_eq!(
        s.processes[0].threads,
        vec![300, 303],
        "a change forces a full read, which lists the threads of a process now wanted"
    );
}

#[test]
fn a_reused_pid_is_a_new_process_and_a_kernel_thread_is_read_once() {
    use memtamer_control::procfs::ScanCache;
    let tmp = TempDir::new();
    write_proc(
        &tmp.0,
        &FakeProc {
            pid: 400,
            comm: "old",
            ..Default::default()
        },
    );
    write_proc(
        &tmp.0,
        &FakeProc {
            pid: 401,
            comm: "kworker/0:2",
            ppid: 2,
            flags: 0x0020_8040,
            exe: None,
            ..Default::default()
        },
    );
    let fs_ = ProcFs::new(&tmp.0);
    let mut cache = ScanCache::default();
    let first = fs_.scan_cached(&mut cache, |_| false).unwrap();
    assert_eq!(first.processes.len(), 1);
    assert_eq!(first.processes[0].comm, "old");
    // the kernel thread is not read again (its stat gone: no error)
    fs::remove_file(tmp.0.join("401/stat")).unwrap();
    let second = fs_.scan_cached(&mut cache, |_| false).unwrap();
    assert!(second.errors.is_empty(), "{:?}", second.errors);
    assert_eq!(second.processes.len(), 1);
    // pid 400 exits and a new process gets the pid before the refresh: a
    // new directory (built aside, so its inode differs) is a new process
    let aside = tmp.0.join("aside");
    fs::create_dir_all(&aside).unwrap();
    write_proc(
        &aside,
        &FakeProc {
            pid: 400,
            comm: "new",
            start: 6000,
            ..Default::default()
        },
    );
    fs::remove_dir_all(tmp.0.join("400")).unwrap();
    fs::rename(aside.join("400"), tmp.0.join("400")).unwrap();
    fs::remove_dir_all(&aside).unwrap();
    let third = fs_.scan_cached(&mut cache, |_| false).unwrap();
    assert_eq!(third.processes.len(), 1);
    assert_eq!(third.processes[0].comm, "new");
    assert_eq!(third.processes[0].start_time, 6000);
}

#[test]
fn while_no_task_is_created_a_scan_lists_neither_pids_nor_unchanged_threads() {
    use memtamer_control::procfs::ScanCache;
    let tmp = TempDir::new();
    let loadavg = |last: u64| {
        fs::write(
            tmp.0.join("loadavg"),
            format!("0.00 0.01 0.05 1/90 {last}\n"),
        )
        .unwrap();
    };
    // our own pid namespace: `self` names this process
    symlink(std::process::id().to_string(), tmp.0.join("self")).unwrap();
    loadavg(700);
    let fio = |threads: usize| stat_text_threads(500, "fio", 1, 4194560, 5000, threads);
    write_proc(
        &tmp.0,
        &FakeProc {
            pid: 500,
            comm: "fio",
            threads: &[500, 501],
            ..Default::default()
        },
    );
    fs::write(tmp.0.join("500/stat"), fio(2)).unwrap();
    let fs_ = ProcFs::new(&tmp.0);
    assert_eq!(fs_.last_pid(), Some(700));
    let mut cache = ScanCache::default();
    let first = fs_.scan_cached(&mut cache, |_| true).unwrap();
    assert_eq!(first.processes[0].threads, vec![500, 501]);
    // as many threads as before: the list is kept, not read (a missing task
    // directory would make the process look gone)
    fs::rename(tmp.0.join("500/task"), tmp.0.join("500/task-aside")).unwrap();
    let second = fs_.scan_cached(&mut cache, |_| true).unwrap();
    assert_eq!(second.processes[0].threads, vec![500, 501]);
    fs::rename(tmp.0.join("500/task-aside"), tmp.0.join("500/task")).unwrap();
    // a thread exits: stat shows one thread fewer, and the list is read
    fs::remove_dir_all(tmp.0.join("500/task/501")).unwrap();
    fs::write(tmp.0.join("500/stat"), fio(1)).unwrap();
    let third = fs_.scan_cached(&mut cache, |_| true).unwrap();
    assert_eq!(third.processes[0].threads, vec![500]);
    // the pids are not listed while the counter stands still ...
    write_proc(
        &tmp.0,
        &FakeProc {
            pid: 600,
            comm: "new",
            ..Default::default()
        },
    );
    let fourth = fs_.scan_cached(&mut cache, |_| true).unwrap();
    assert_eq!(fourth.processes.len(), 1);
    // ... and are once it moved
    loadavg(701);
    let fifth = fs_.scan_cached(&mut cache, |_| true).unwrap();
    let pids: Vec<i32> = fifth.processes.iter().map(|p| p.pid).collect();
    assert_eq!(pids, vec![500, 600]);
    // a watched process that exits is gone at once
    fs::remove_dir_all(tmp.0.join("500")).unwrap();
    let sixth = fs_.scan_cached(&mut cache, |_| true).unwrap();
    let pids: Vec<i32> = sixth.processes.iter().map(|p| p.pid).collect();
    assert_eq!(pids, vec![600]);
}

#[test]
fn another_namespace_s_proc_is_always_listed() {
    use memtamer_control::procfs::ScanCache;
    let tmp = TempDir::new();
    // `self` does not name this process: the counter is not ours
    symlink("1", tmp.0.join("self")).unwrap();
    fs::write(tmp.0.join("loadavg"), "0.00 0.01 0.05 1/90 700\n").unwrap();
    write_proc(&tmp.0, &FakeProc::default());
    let fs_ = ProcFs::new(&tmp.0);
    let mut cache = ScanCache::default();
    assert_eq!(
        fs_.scan_cached(&mut cache, |_| true)
            .unwrap()
            .processes
            .len(),
        1
    );
    write_proc(
        &tmp.0,
        &FakeProc {
            pid: 600,
            ..Default::default()
        },
    );
    assert_eq!(
        fs_.scan_cached(&mut cache, |_| true)
            .unwrap()
            .processes
            .len(),
        2
    );
}
