//! The restore journal: a write-ahead log of every change made to the system.
//!
//! Before the daemon changes anything it appends a [`Change`] (holding the
//! ORIGINAL state) to a JSON-lines file and fsyncs it. Whoever outlives the
//! daemon — the daemon's own exit path, its panic hook, or the separate guard
//! process after a SIGKILL — calls [`restore_all`] to undo every recorded
//! change in reverse order. When the daemon undoes something itself it calls
//! [`Journal::forget`], which appends a tombstone.
//!
//! File format: one JSON object per line, either `{"record":{"kind":...}}` or
//! `{"forget":{...}}`. A record whose key is already live replaces it in place
//! (the writer keeps the FIRST original in it). A torn last line (the daemon
//! was killed mid-write) is ignored with a warning.

pub use crate::change::{merge, undo_order, Change, ChangeKey, Outcome, RestoreReport};
pub use crate::undo::subtree_control_diff;
pub use crate::undo::Scope;
use crate::undo::{undo, undo_all_within};
use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Where the daemon keeps its journal unless configured otherwise; /run is
/// tmpfs, so a journal never survives a reboot (nor do the changes it undoes).
pub const DEFAULT_JOURNAL_PATH: &str = "/run/memtamer/journal";

/// One line of the journal file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Entry {
    /// A change about to be made (or an updated record of one).
    Record(Change),
    /// The daemon undid this itself; it needs no restore.
    Forget(ChangeKey),
}

/// The live changes reconstructed from journal text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Replay {
    /// Changes still to be undone, in the order they were first made.
    pub changes: Vec<Change>,
    /// Lines that could not be parsed, and other oddities.
    pub warnings: Vec<String>,
    /// Number of well-formed lines (used to decide when to compact).
    pub lines: usize,
}

/// Pure: replays journal text into the list of live changes. Never fails: an
/// unparsable final line is the expected result of a kill mid-write, and any
/// other unparsable line is skipped with a warning rather than blocking the
/// restore of everything else.
pub fn replay(text: &str) -> Replay {
    let mut out = Replay::default();
    let all: Vec<&str> = text.split('\n').collect();
    let last_nonempty = all.iter().rposition(|l| !l.trim().is_empty());
    for (i, line) in all.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Entry>(line) {
            Ok(Entry::Record(change)) => {
                out.lines += 1;
                let key = change.key();
                match out.changes.iter_mut().find(|c| c.key() == key) {
                    Some(slot) => *slot = change,
                    None => out.changes.push(change),
                }
            }
            Ok(Entry::Forget(key)) => {
                out.lines += 1;
                out.changes.retain(|c| c.key() != key);
            }
            Err(e) => {
                let torn = Some(i) == last_nonempty && !text.ends_with('\n');
                out.warnings.push(if torn {
                    format!("ignored torn final journal line {} ({e})", i + 1)
                } else {
                    format!("ignored corrupt journal line {} ({e})", i + 1)
                });
            }
        }
    }
    out
}

fn fs_err<'a>(op: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> Error + 'a {
    move |source| Error::Fs {
        op,
        path: path.to_path_buf(),
        source,
    }
}

fn lock_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".lock");
    PathBuf::from(s)
}

/// Opens (creating) the lock file beside the journal and flocks it.
/// `wait`: how long to keep trying; `None` = fail at once if held.
fn lock(path: &Path, wait: Option<Duration>) -> Result<(File, bool)> {
    let lp = lock_path(path);
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lp)
        .map_err(fs_err("open", &lp))?;
    let deadline = Instant::now() + wait.unwrap_or_default();
    loop {
        // SAFETY: flock on a valid fd we own.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc == 0 {
            return Ok((file, true));
        }
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EWOULDBLOCK) {
            return Err(Error::Fs {
                op: "flock",
                path: lp,
                source: err,
            });
        }
        if wait.is_none() {
            return Err(Error::JournalLocked {
                path: path.to_path_buf(),
            });
        }
        if Instant::now() >= deadline {
            return Ok((file, false));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn sync_dir(path: &Path) {
    if let Some(dir) = path.parent() {
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
}

fn encode(entry: &Entry) -> Result<String> {
    let mut line = serde_json::to_string(entry)
        .map_err(|e| Error::Invalid(format!("cannot encode journal entry {entry:?}: {e}")))?;
    line.push('\n');
    Ok(line)
}

/// Atomically replaces the journal with records of `changes` (or removes it
/// when there are none): write a temp file, fsync, rename, fsync the dir.
fn rewrite(path: &Path, changes: &[Change]) -> Result<()> {
    if changes.is_empty() {
        match fs::remove_file(path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(fs_err("remove", path)(e)),
        }
        sync_dir(path);
        return Ok(());
    }
    let mut text = String::new();
    for c in changes {
        text.push_str(&encode(&Entry::Record(c.clone()))?);
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    {
        let mut f = File::create(&tmp).map_err(fs_err("create", &tmp))?;
        f.write_all(text.as_bytes())
            .map_err(fs_err("write", &tmp))?;
        f.sync_all().map_err(fs_err("fsync", &tmp))?;
    }
    fs::rename(&tmp, path).map_err(fs_err("rename", path))?;
    sync_dir(path);
    Ok(())
}

/// Refuses a journal another user could have written: replay runs as root
/// and writes wherever the records say. The journal (if present) must be a
/// regular file, not a symlink, and it and its directory must belong to
/// this user (root for the daemon) and be writable by nobody else
/// (issue 22).
pub fn check_trusted(path: &Path) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    let untrusted = |p: &Path, why: String| Error::Untrusted {
        path: p.to_path_buf(),
        why,
    };
    let judge = |p: &Path, meta: &fs::Metadata| -> Result<()> {
        if meta.uid() != me {
            return Err(untrusted(
                p,
                format!("owned by uid {}, not {me}", meta.uid()),
            ));
        }
        if meta.mode() & 0o022 != 0 {
            return Err(untrusted(
                p,
                format!(
                    "mode {:o}: writable by group or others",
                    meta.mode() & 0o7777
                ),
            ));
        }
        Ok(())
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let dir_meta = fs::metadata(dir).map_err(|source| Error::Read {
        path: dir.to_path_buf(),
        source,
    })?;
    judge(dir, &dir_meta)?;
    match fs::symlink_metadata(path) {
        Ok(meta) if !meta.file_type().is_file() => {
            Err(untrusted(path, "not a regular file".into()))
        }
        Ok(meta) => judge(path, &meta),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(Error::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

fn read_journal(path: &Path) -> Result<String> {
    match fs::read(path) {
        Ok(bytes) => Ok(String::from_utf8_lossy(&bytes).into_owned()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(String::new()),
        Err(source) => Err(Error::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Undoes every change recorded in the journal at `path`, in reverse order,
/// then removes the journal (keeping only records whose restore FAILED, so a
/// later start can retry them). Used by the guard after the daemon died.
///
/// Waits briefly for the journal lock (the daemon's lock dies with it) and
/// goes ahead with a warning if it stays held. A missing journal is an empty
/// report. Only I/O errors on the journal itself are `Err`.
///
/// Writes only inside a mounted cgroup filesystem ([`Scope::CgroupMounts`]).
pub fn restore_all(path: &Path) -> Result<RestoreReport> {
    restore_all_within(path, &Scope::CgroupMounts)
}

/// [`restore_all`] writing only within `scope`; records that would write
/// elsewhere are reported Failed and kept in the journal, untouched.
pub fn restore_all_within(path: &Path, scope: &Scope) -> Result<RestoreReport> {
    check_trusted(path)?;
    let (_lock, locked) = lock(path, Some(Duration::from_millis(200)))?;
    let mut report = RestoreReport::default();
    if !locked {
        report.warnings.push(format!(
            "journal {} still locked; restoring anyway",
            path.display()
        ));
    }
    let replayed = replay(&read_journal(path)?);
    report.warnings.extend(replayed.warnings);
    report.absorb(undo_all_within(&replayed.changes, scope));
    let failed: Vec<Change> = failed_changes(&report);
    rewrite(path, &failed)?;
    Ok(report)
}

fn failed_changes(report: &RestoreReport) -> Vec<Change> {
    // entries are in undo (reverse) order; keep the file in forward order.
    let mut v: Vec<Change> = report
        .entries
        .iter()
        .filter(|(_, o)| matches!(o, Outcome::Failed(_)))
        .map(|(c, _)| c.clone())
        .collect();
    v.reverse();
    v
}

/// The daemon's handle on its journal. Thread-safe (`&self` methods), so one
/// `Arc<Journal>` is shared by the cgroup manager, the duty cycler and the
/// main loop. Holds an exclusive lock so two daemons never share a journal.
///
/// After a panic, restore from the main thread once the panicking thread has
/// unwound (e.g. after `catch_unwind` or a failed `join`), not from inside a
/// panic hook: the hook runs while the panicking thread may still hold the
/// journal's lock. A poisoned lock is otherwise ignored, so restoring works.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Inner {
    file: File,
    _lock: File,
    live: Vec<Change>,
    lines: usize,
    warnings: Vec<String>,
}

/// Compact once this many lines are in the file and most are dead.
const COMPACT_MIN_LINES: usize = 1024;

impl Journal {
    /// Opens or creates the journal at `path` (and its directory), taking
    /// its lock. Records left by a previous daemon stay live: call
    /// [`Journal::restore_all`] at startup to undo them. A torn final line
    /// is cut off so that new records start on a fresh line.
    pub fn open(path: &Path) -> Result<Journal> {
        if let Some(dir) = path.parent() {
            if !dir.as_os_str().is_empty() {
                fs::create_dir_all(dir).map_err(fs_err("mkdir", dir))?;
            }
        }
        let (lock_file, _) = lock(path, None)?;
        let text = read_journal(path)?;
        let replayed = replay(&text);
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(fs_err("open", path))?;
        if !text.is_empty() && !text.ends_with('\n') {
            let keep = text.rfind('\n').map(|i| i + 1).unwrap_or(0);
            file.set_len(keep as u64)
                .map_err(fs_err("truncate", path))?;
            file.sync_all().map_err(fs_err("fsync", path))?;
        }
        sync_dir(path);
        Ok(Journal {
            path: path.to_path_buf(),
            inner: Mutex::new(Inner {
                file,
                _lock: lock_file,
                live: replayed.changes,
                lines: replayed.lines,
                warnings: replayed.warnings,
            }),
        })
    }

    /// The journal file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    // A panic elsewhere must never stop the restore: ignore poisoning.
    fn inner(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn append(&self, inner: &mut Inner, entry: &Entry) -> Result<()> {
        let line = encode(entry)?;
        inner
            .file
            .write_all(line.as_bytes())
            .map_err(fs_err("append to", &self.path))?;
        inner
            .file
            .sync_data()
            .map_err(fs_err("fsync", &self.path))?;
        inner.lines += 1;
        Ok(())
    }

    /// Durably records `change` BEFORE it is made. If the same thing was
    /// already changed, the first original is kept and `Ok(false)` is
    /// returned; `Ok(true)` means a new record.
    pub fn record(&self, change: Change) -> Result<bool> {
        let mut inner = self.inner();
        let key = change.key();
        if let Some(i) = inner.live.iter().position(|c| c.key() == key) {
            if let Some(merged) = merge(&inner.live[i], &change) {
                self.append(&mut inner, &Entry::Record(merged.clone()))?;
                inner.live[i] = merged;
            }
            return Ok(false);
        }
        self.append(&mut inner, &Entry::Record(change.clone()))?;
        inner.live.push(change);
        Ok(true)
    }

    /// Marks a change as undone by the daemon itself, so that no restore
    /// touches it again. Unknown keys are ignored.
    pub fn forget(&self, key: &ChangeKey) -> Result<()> {
        let mut inner = self.inner();
        if !inner.live.iter().any(|c| &c.key() == key) {
            return Ok(());
        }
        self.append(&mut inner, &Entry::Forget(key.clone()))?;
        inner.live.retain(|c| &c.key() != key);
        if inner.lines >= COMPACT_MIN_LINES && inner.lines > 4 * inner.live.len() {
            self.compact(&mut inner)?;
        }
        Ok(())
    }

    fn compact(&self, inner: &mut Inner) -> Result<()> {
        rewrite(&self.path, &inner.live)?;
        inner.file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .map_err(fs_err("open", &self.path))?;
        inner.lines = inner.live.len();
        Ok(())
    }

    /// The changes not yet undone, in the order they were made.
    pub fn pending(&self) -> Vec<Change> {
        self.inner().live.clone()
    }

    /// Warnings found when the journal was opened (torn or corrupt lines).
    pub fn open_warnings(&self) -> Vec<String> {
        self.inner().warnings.clone()
    }

    /// Undoes every live change in reverse order and empties the journal
    /// (keeping only records whose restore failed). For daemon exit/startup.
    pub fn restore_all(&self) -> Result<RestoreReport> {
        self.restore_where(|_| true)
    }

    /// Undoes, in reverse order, the live changes for which `pred` holds and
    /// forgets those that were restored or skipped; failed ones stay live.
    /// Lets a component (e.g. one managed cgroup) undo just its own changes.
    pub fn restore_where(&self, pred: impl Fn(&Change) -> bool) -> Result<RestoreReport> {
        let mut inner = self.inner();
        let selected: Vec<Change> = inner.live.iter().filter(|c| pred(c)).cloned().collect();
        let mut report = RestoreReport::default();
        // Undo against the full live list so stray-process fallbacks resolve.
        for change in undo_order(&selected) {
            let outcome = undo(change, &inner.live);
            report.entries.push((change.clone(), outcome));
        }
        let done: Vec<ChangeKey> = report
            .entries
            .iter()
            .filter(|(_, o)| !matches!(o, Outcome::Failed(_)))
            .map(|(c, _)| c.key())
            .collect();
        inner.live.retain(|c| !done.contains(&c.key()));
        if inner.live.is_empty() {
            inner
                .file
                .set_len(0)
                .map_err(fs_err("truncate", &self.path))?;
            inner.file.sync_all().map_err(fs_err("fsync", &self.path))?;
            inner.lines = 0;
        } else {
            for key in done {
                self.append(&mut inner, &Entry::Forget(key))?;
            }
        }
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::TempDir;
    use memtamer_core::CpuSet;

    fn stopped(pid: i32) -> Change {
        Change::Stopped { pid, start_time: 7 }
    }

    fn aff(tid: i32, cpus: &str) -> Change {
        Change::ThreadAffinity {
            pid: 10,
            tid,
            start_time: 5,
            original: CpuSet::parse_list(cpus).unwrap(),
        }
    }

    fn line(e: Entry) -> String {
        encode(&e).unwrap()
    }

    #[test]
    fn cpuset_is_written_as_a_list() {
        let l = line(Entry::Record(aff(11, "0-3,8")));
        assert!(l.contains("\"original\":\"0-3,8\""), "{l}");
        assert_eq!(replay(&l).changes, vec![aff(11, "0-3,8")]);
    }

    #[test]
    fn replay_applies_forgets_and_in_place_updates() {
        let mv = |to: &str| Change::CgroupMove {
            pid: 3,
            start_time: 9,
            hierarchy: "/h".into(),
            original: "/h/orig".into(),
            to: to.into(),
        };
        let text = [
            line(Entry::Record(stopped(1))),
            line(Entry::Record(mv("/h/a"))),
            line(Entry::Record(stopped(2))),
            line(Entry::Forget(stopped(1).key())),
            line(Entry::Record(mv("/h/b"))),
        ]
        .concat();
        let r = replay(&text);
        assert!(r.warnings.is_empty());
        assert_eq!(r.lines, 5);
        assert_eq!(r.changes, vec![mv("/h/b"), stopped(2)]);
    }

    #[test]
    fn torn_last_line_is_a_warning() {
        let mut text = line(Entry::Record(stopped(1)));
        text.push_str("{\"record\":{\"kind\":\"Stop");
        let r = replay(&text);
        assert_eq!(r.changes, vec![stopped(1)]);
        assert_eq!(r.warnings.len(), 1);
        assert!(r.warnings[0].contains("torn"), "{:?}", r.warnings);
        // Corruption in the middle is skipped too, but called corrupt.
        let text = format!("garbage\n{}", line(Entry::Record(stopped(2))));
        let r = replay(&text);
        assert_eq!(r.changes, vec![stopped(2)]);
        assert!(r.warnings[0].contains("corrupt"));
    }

    #[test]
    fn merge_keeps_first_original() {
        assert_eq!(merge(&aff(1, "0-1"), &aff(1, "0")), None);
        let a = Change::CgroupMove {
            pid: 3,
            start_time: 9,
            hierarchy: "/h".into(),
            original: "/h/orig".into(),
            to: "/h/a".into(),
        };
        let b = Change::CgroupMove {
            pid: 3,
            start_time: 9,
            hierarchy: "/h".into(),
            original: "/h/a".into(),
            to: "/h/b".into(),
        };
        match merge(&a, &b) {
            Some(Change::CgroupMove { original, to, .. }) => {
                assert_eq!(original, PathBuf::from("/h/orig"));
                assert_eq!(to, PathBuf::from("/h/b"));
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn thaw_and_sigcont_come_first() {
        let created = Change::CgroupCreated {
            path: "/h/m/j".into(),
            hierarchy: "/h".into(),
        };
        let frozen = Change::Frozen {
            cgroup: "/h/m/j".into(),
        };
        let changes = vec![stopped(1), created.clone(), aff(3, "0"), frozen.clone()];
        let order: Vec<&Change> = undo_order(&changes);
        assert_eq!(order, vec![&frozen, &stopped(1), &aff(3, "0"), &created]);
    }

    #[test]
    fn subtree_diff() {
        assert_eq!(
            subtree_control_diff("memory", "cpu memory cpuset"),
            vec!["-cpu".to_string(), "-cpuset".to_string()]
        );
        assert_eq!(subtree_control_diff("cpu", ""), vec!["+cpu".to_string()]);
        assert!(subtree_control_diff("cpu io", "io cpu\n").is_empty());
    }

    #[test]
    fn journal_keeps_first_original_and_survives_reopen() {
        let dir = TempDir::new("journal");
        let path = dir.path().join("run/journal");
        {
            let j = Journal::open(&path).unwrap();
            assert!(j.record(aff(11, "0-1")).unwrap());
            assert!(!j.record(aff(11, "1")).unwrap());
            assert!(j.record(stopped(1)).unwrap());
            j.forget(&stopped(1).key()).unwrap();
            j.forget(&stopped(99).key()).unwrap();
            assert_eq!(j.pending(), vec![aff(11, "0-1")]);
            // A second daemon on the same journal is refused.
            assert!(matches!(
                Journal::open(&path),
                Err(Error::JournalLocked { .. })
            ));
        }
        // Simulate a kill mid-write.
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"record\":{\"ki").unwrap();
        drop(f);
        let j = Journal::open(&path).unwrap();
        assert_eq!(j.pending(), vec![aff(11, "0-1")]);
        assert_eq!(j.open_warnings().len(), 1);
        // The torn tail was cut, so new records parse.
        j.record(stopped(4)).unwrap();
        let r = replay(&fs::read_to_string(&path).unwrap());
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
        assert_eq!(r.changes, vec![aff(11, "0-1"), stopped(4)]);
    }

    #[test]
    fn compaction_bounds_the_file() {
        let dir = TempDir::new("compact");
        let path = dir.path().join("journal");
        let j = Journal::open(&path).unwrap();
        j.record(aff(1, "0")).unwrap();
        for i in 0..600 {
            j.record(stopped(1000 + i)).unwrap();
            j.forget(&stopped(1000 + i).key()).unwrap();
        }
        let text = fs::read_to_string(&path).unwrap();
        assert!(
            text.lines().count() < COMPACT_MIN_LINES,
            "{}",
            text.lines().count()
        );
        assert_eq!(replay(&text).changes, vec![aff(1, "0")]);
        assert_eq!(j.pending(), vec![aff(1, "0")]);
    }

    #[test]
    fn a_journal_others_can_write_is_not_replayed() {
        use std::os::unix::fs::PermissionsExt;
        let dir = TempDir::new("untrusted");
        let target = dir.path().join("victim");
        fs::write(&target, "keep\n").unwrap();
        let path = dir.path().join("journal");
        let text = line(Entry::Record(Change::CgroupValue {
            file: target.clone(),
            original: "overwritten".into(),
        })) + "\n";
        fs::write(&path, &text).unwrap();
        // a world-writable directory: anyone could have planted the journal
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o777)).unwrap();
        assert!(matches!(restore_all(&path), Err(Error::Untrusted { .. })));
        // a group-writable journal in a private directory
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o700)).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o664)).unwrap();
        assert!(matches!(restore_all(&path), Err(Error::Untrusted { .. })));
        assert_eq!(fs::read_to_string(&target).unwrap(), "keep\n");
    }

    #[test]
    fn restore_writes_only_under_a_cgroup_mount() {
        use std::os::unix::fs::PermissionsExt;
        let dir = TempDir::new("outside");
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o700)).unwrap();
        let target = dir.path().join("etc-shadow");
        fs::write(&target, "keep\n").unwrap();
        let path = dir.path().join("journal");
        let text = line(Entry::Record(Change::CgroupValue {
            file: target.clone(),
            original: "overwritten".into(),
        })) + "\n";
        fs::write(&path, &text).unwrap();
        let report = restore_all(&path).unwrap();
        assert_eq!(fs::read_to_string(&target).unwrap(), "keep\n");
        assert!(
            matches!(report.entries.as_slice(), [(_, Outcome::Failed(why))] if why.contains("cgroup mount")),
            "{report:?}"
        );
    }

    #[test]
    fn restore_on_fake_cgroup_tree() {
        let dir = TempDir::new("restore-fake");
        let root = dir.path().join("cg");
        let job = root.join("memtamer/job");
        fs::create_dir_all(&job).unwrap();
        fs::write(root.join("cgroup.subtree_control"), "").unwrap();
        fs::write(job.join("cgroup.procs"), "").unwrap();
        fs::write(job.join("cgroup.freeze"), "1\n").unwrap();
        fs::write(job.join("cpu.max"), "50000 100000\n").unwrap();
        let path = dir.path().join("journal");
        let text = [
            line(Entry::Record(Change::CgroupValue {
                file: root.join("cgroup.subtree_control"),
                original: "cpu".into(),
            })),
            line(Entry::Record(Change::CgroupCreated {
                path: job.clone(),
                hierarchy: root.clone(),
            })),
            line(Entry::Record(Change::Frozen {
                cgroup: job.clone(),
            })),
            // A process that is certainly gone: skipped, not failed.
            line(Entry::Record(Change::Stopped {
                pid: i32::MAX,
                start_time: 1,
            })),
        ]
        .concat();
        fs::write(&path, text).unwrap();
        let report = restore_all_within(&path, &Scope::Under(root.clone())).unwrap();
        // Frozen was undone before the directory removal was attempted.
        assert_eq!(report.entries.len(), 4);
        assert!(matches!(report.entries[0].1, Outcome::Skipped(_)));
        assert_eq!(report.entries[1].1, Outcome::Restored);
        assert_eq!(fs::read_to_string(job.join("cgroup.freeze")).unwrap(), "0");
        // rmdir of a non-empty *fake* dir fails: reported, kept for retry.
        assert!(
            matches!(report.entries[2].1, Outcome::Failed(_)),
            "{report}"
        );
        assert_eq!(report.entries[3].1, Outcome::Restored);
        // subtree_control got "+cpu" written (a fake file just holds the last write).
        assert_eq!(
            fs::read_to_string(root.join("cgroup.subtree_control")).unwrap(),
            "+cpu"
        );
        let left = replay(&fs::read_to_string(&path).unwrap()).changes;
        assert_eq!(left.len(), 1);
        assert!(matches!(left[0], Change::CgroupCreated { .. }));
        // Once the kernel would have emptied it, a retry removes it.
        for f in ["cgroup.procs", "cgroup.freeze", "cpu.max"] {
            fs::remove_file(job.join(f)).unwrap();
        }
        let report = restore_all_within(&path, &Scope::Under(root.clone())).unwrap();
        assert_eq!(report.restored(), 1, "{report}");
        assert!(!job.exists());
        assert!(!path.exists());
        // Missing journal: empty report.
        assert_eq!(
            restore_all_within(&path, &Scope::Under(root.clone())).unwrap(),
            RestoreReport::default()
        );
    }
}
