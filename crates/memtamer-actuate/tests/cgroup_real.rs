//! ManagedCgroup against the real cgroup filesystem. Needs root; skips with
//! a note when not root or when the controllers are not mounted.
mod common;

use common::{cpu_share, is_root, state, wait_until, ChildGuard, TempDir};
use memtamer_actuate::cgroup::{
    quota_us, CgroupLayout, CgroupMode, DEFAULT_QUOTA_PERIOD, MEMTAMER_DIR,
};
use memtamer_actuate::{Change, Journal, ManagedCgroup, ProcessKey};
use memtamer_core::CpuSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Undoes everything journaled, even when an assertion failed. Declared
/// after the children so it runs before they are killed.
struct RestoreOnDrop(Arc<Journal>);

impl Drop for RestoreOnDrop {
    fn drop(&mut self) {
        match self.0.restore_all() {
            Ok(r) if r.is_ok() => {}
            Ok(r) => eprintln!("cleanup restore had failures:\n{r}"),
            Err(e) => eprintln!("cleanup restore failed: {e}"),
        }
    }
}

fn layout() -> CgroupLayout {
    CgroupLayout::discover(Path::new("/proc/self/mountinfo")).unwrap()
}

fn proc_cgroup(pid: i32) -> String {
    fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap()
}

fn job_name(tag: &str) -> String {
    format!("test-{tag}-{}", std::process::id())
}

/// `Cpus_allowed_list` of a process, as /proc/PID/status shows it.
fn cpus_allowed(pid: i32) -> String {
    fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:\t").map(str::to_string))
        .unwrap_or_default()
}

/// Asserts that the kernel enforces the 0.2-core CFS limit just set on the
/// cgroup in `cpu_dir`: `nr_throttled` in its `cpu.stat` rises (a share
/// measurement alone would be confounded by other load on a shared VM) and
/// the burner `pid` gets well under a core.
fn assert_throttled_to_a_fifth(cpu_dir: &Path, pid: i32, knob: &str) {
    let throttled = || {
        fs::read_to_string(cpu_dir.join("cpu.stat"))
            .unwrap_or_default()
            .lines()
            .find_map(|l| {
                l.strip_prefix("nr_throttled ")
                    .map(|v| v.trim().parse::<u64>().unwrap_or(0))
            })
            .unwrap_or(0)
    };
    assert!(
        wait_until(Duration::from_secs(2), || throttled() > 0),
        "burner never throttled under a 0.2-core {knob}"
    );
    let share = cpu_share(pid, Duration::from_millis(500));
    eprintln!("burner under a 0.2-core {knob}: {:.1}%", share * 100.0);
    assert!(share < 0.35, "{knob} not applied: {share}");
}

#[test]
fn v1_cpuset_quota_freeze_and_remove() {
    if !is_root() {
        eprintln!("SKIP: not root");
        return;
    }
    let layout = layout();
    if layout.mode() != Some(CgroupMode::V1)
        || layout.v1_hierarchy("cpuset").is_none()
        || layout.v1_hierarchy("freezer").is_none()
        || layout.v1_hierarchy("cpu").is_none()
    {
        eprintln!("SKIP: cgroup v1 cpuset/cpu/freezer not mounted");
        return;
    }
    let dir = TempDir::new("cg-v1");
    let journal = Arc::new(Journal::open(&dir.path().join("journal")).unwrap());
    let burner = ChildGuard::burner();
    let _restore = RestoreOnDrop(journal.clone());
    let pid = burner.pid();
    let key = ProcessKey::of(pid).unwrap();
    let before = proc_cgroup(pid);
    let job = job_name("v1");
    let parents: Vec<PathBuf> = layout
        .v1
        .iter()
        .map(|h| h.mount_point.join(MEMTAMER_DIR))
        .filter(|p| !p.exists())
        .collect();

    let mc = ManagedCgroup::create(&layout, &job, journal.clone()).unwrap();
    let dirs: Vec<PathBuf> = mc.dirs().iter().map(|d| d.to_path_buf()).collect();
    assert_eq!(dirs.len(), 3, "{dirs:?}");
    mc.add_process(key).unwrap();
    let inside = proc_cgroup(pid);
    assert!(
        inside.contains(&format!(":cpuset:/{MEMTAMER_DIR}/{job}\n")),
        "{inside}"
    );
    assert!(
        inside.contains(&format!(":freezer:/{MEMTAMER_DIR}/{job}\n")),
        "{inside}"
    );
    assert_eq!(mc.procs().unwrap(), vec![pid]);
    // Journal has where it came from (the cpuset root here).
    let cpuset_mount = layout.v1_hierarchy("cpuset").unwrap().mount_point.clone();
    assert!(journal.pending().iter().any(|c| matches!(c,
        Change::CgroupMove { pid: p, hierarchy, .. } if *p == pid && *hierarchy == cpuset_mount)));

    mc.set_cpus(&CpuSet::parse_list("0").unwrap()).unwrap();
    assert!(wait_until(Duration::from_millis(500), || cpus_allowed(pid) == "0"));
    mc.set_cpu_quota(Some(0.2), DEFAULT_QUOTA_PERIOD).unwrap();
    let cpu_dir = dirs
        .iter()
        .find(|d| d.join("cpu.cfs_quota_us").exists())
        .unwrap();
    assert_eq!(
        fs::read_to_string(cpu_dir.join("cpu.cfs_quota_us"))
            .unwrap()
            .trim(),
        "20000"
    );
    assert_throttled_to_a_fifth(cpu_dir, pid, "quota");
    mc.set_cpu_quota(None, DEFAULT_QUOTA_PERIOD).unwrap();

    mc.freeze().unwrap();
    assert!(wait_until(Duration::from_secs(2), || mc
        .is_frozen()
        .unwrap_or(false)));
    let s = state(pid);
    assert!(matches!(s, 'D' | 'S'), "frozen task state {s}");
    let share = cpu_share(pid, Duration::from_millis(300));
    assert!(share < 0.05, "frozen task still ran: {share}");
    mc.thaw().unwrap();
    assert!(!mc.is_frozen().unwrap());
    let share = cpu_share(pid, Duration::from_millis(300));
    assert!(share > 0.3, "thawed task does not run: {share}");

    // Freeze again and let remove() thaw as part of the undo.
    mc.freeze().unwrap();
    let report = mc.remove().unwrap();
    assert!(report.is_ok(), "{report}");
    assert_eq!(proc_cgroup(pid), before);
    for d in &dirs {
        assert!(!d.exists(), "{} still exists", d.display());
    }
    assert!(wait_until(Duration::from_millis(500), || state(pid) == 'R'));

    // Crash path: set everything up again and let the journal (as the guard
    // would) undo it, including the shared memtamer/ parents it created.
    let mc = ManagedCgroup::create(&layout, &job, journal.clone()).unwrap();
    mc.add_process(key).unwrap();
    mc.freeze().unwrap();
    drop(mc);
    let report = journal.restore_all().unwrap();
    assert!(report.is_ok(), "{report}");
    assert_eq!(proc_cgroup(pid), before);
    assert!(journal.pending().is_empty());
    for d in dirs.iter().chain(&parents) {
        assert!(!d.exists(), "{} still exists", d.display());
    }
    assert!(wait_until(Duration::from_millis(500), || state(pid) == 'R'));
}

#[test]
fn v2_freeze_and_remove() {
    if !is_root() {
        eprintln!("SKIP: not root");
        return;
    }
    let discovered = layout();
    let Some(v2) = discovered.v2.clone() else {
        eprintln!("SKIP: no cgroup2 mount");
        return;
    };
    // Use only the v2 hierarchy (on hybrid hosts v1 would be chosen).
    let layout = CgroupLayout {
        v1: Vec::new(),
        v2: Some(v2.clone()),
    };
    let dir = TempDir::new("cg-v2");
    let journal = Arc::new(Journal::open(&dir.path().join("journal")).unwrap());
    let child = ChildGuard::burner();
    let _restore = RestoreOnDrop(journal.clone());
    let pid = child.pid();
    let before = proc_cgroup(pid);
    let job = job_name("v2");
    let mc = ManagedCgroup::create(&layout, &job, journal.clone()).unwrap();
    let job_dir = mc.dirs()[0].to_path_buf();
    if !job_dir.join("cgroup.freeze").exists() {
        eprintln!("SKIP: kernel has no cgroup.freeze");
        return;
    }
    mc.add_process(ProcessKey::of(pid).unwrap()).unwrap();
    assert!(
        proc_cgroup(pid).contains(&format!("0::/{MEMTAMER_DIR}/{job}\n")),
        "{}",
        proc_cgroup(pid)
    );
    let allowed_before = cpus_allowed(pid);
    if v2.controllers.iter().any(|c| c == "cpuset") {
        mc.set_cpus(&CpuSet::parse_list("0").unwrap()).unwrap();
        assert!(
            wait_until(Duration::from_millis(500), || cpus_allowed(pid) == "0"),
            "cpuset.cpus = 0 not applied: Cpus_allowed_list {}",
            cpus_allowed(pid)
        );
    } else {
        eprintln!("note: cgroup2 has no cpuset controller here; not tested");
    }
    if v2.controllers.iter().any(|c| c == "cpu") {
        mc.set_cpu_quota(Some(0.2), DEFAULT_QUOTA_PERIOD).unwrap();
        let cpu_max = fs::read_to_string(job_dir.join("cpu.max")).unwrap();
        assert_eq!(
            cpu_max.split_whitespace().next(),
            Some(
                quota_us(0.2, DEFAULT_QUOTA_PERIOD.as_micros() as u64)
                    .unwrap()
                    .to_string()
                    .as_str()
            ),
            "cpu.max {cpu_max}"
        );
        assert_throttled_to_a_fifth(&job_dir, pid, "cpu.max");
        mc.set_cpu_quota(None, DEFAULT_QUOTA_PERIOD).unwrap();
        let cpu_max = fs::read_to_string(job_dir.join("cpu.max")).unwrap();
        assert!(cpu_max.starts_with("max "), "cpu.max {cpu_max}");
    } else {
        eprintln!("note: cgroup2 has no cpu controller here; cpu.max not tested");
    }
    mc.freeze().unwrap();
    assert!(wait_until(Duration::from_secs(2), || mc
        .is_frozen()
        .unwrap_or(false)));
    let share = cpu_share(pid, Duration::from_millis(300));
    assert!(share < 0.05, "frozen task still ran: {share}");
    mc.thaw().unwrap();
    assert!(!mc.is_frozen().unwrap());
    let share = cpu_share(pid, Duration::from_millis(300));
    assert!(share > 0.3, "thawed task does not run: {share}");
    mc.freeze().unwrap();
    let report = mc.remove().unwrap();
    assert!(report.is_ok(), "{report}");
    assert_eq!(proc_cgroup(pid), before);
    assert_eq!(cpus_allowed(pid), allowed_before);
    assert!(!job_dir.exists());
    assert!(wait_until(Duration::from_millis(500), || state(pid) == 'R'));

    // Crash path: set it up again and let the journal (as the guard would)
    // undo it: back in its cgroup, its CPUs back, thawed, directory gone.
    let mc = ManagedCgroup::create(&layout, &job, journal.clone()).unwrap();
    mc.add_process(ProcessKey::of(pid).unwrap()).unwrap();
    if v2.controllers.iter().any(|c| c == "cpuset") {
        mc.set_cpus(&CpuSet::parse_list("0").unwrap()).unwrap();
    }
    mc.freeze().unwrap();
    drop(mc);
    let report = journal.restore_all().unwrap();
    assert!(report.is_ok(), "{report}");
    assert!(journal.pending().is_empty());
    assert_eq!(proc_cgroup(pid), before);
    assert_eq!(cpus_allowed(pid), allowed_before);
    assert!(!job_dir.exists());
    assert!(wait_until(Duration::from_millis(500), || state(pid) == 'R'));
}
