//! Unit tests of `cgroup.rs`.

use super::*;
use crate::test_util::TempDir;

const HYBRID: &str = "\
22 27 0:21 / /proc rw,relatime - proc proc rw
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

const PURE_V2: &str = "\
25 30 0:23 / /sys rw,nosuid shared:7 - sysfs sysfs rw
26 25 0:24 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:8 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
bad line without separator
";

#[test]
fn mountinfo_hybrid_is_v1() {
    let l = CgroupLayout::from_mountinfo(HYBRID);
    assert_eq!(l.mode(), Some(CgroupMode::V1));
    assert_eq!(l.v1.len(), 4, "{l:?}");
    assert_eq!(
        l.v1_hierarchy("cpuset").unwrap().mount_point,
        PathBuf::from("/sys/fs/cgroup/cpuset")
    );
    assert!(l.v1_hierarchy("memory").is_none());
    assert_eq!(
        l.v2.as_ref().unwrap().mount_point,
        PathBuf::from("/sys/fs/cgroup/unified")
    );
}

#[test]
fn mountinfo_pure_v2_and_escapes() {
    let l = CgroupLayout::from_mountinfo(PURE_V2);
    assert_eq!(l.mode(), Some(CgroupMode::V2));
    assert!(l.v1.is_empty());
    let m = parse_mountinfo(
        "1 2 0:3 /a\\040b /mnt/with\\040space rw shared:1 - cgroup cgroup rw,cpu,cpuacct\n",
    );
    assert_eq!(m[0].mount_point, PathBuf::from("/mnt/with space"));
    assert_eq!(m[0].root, "/a b");
    assert_eq!(
        CgroupLayout::from_mountinfo("1 2 0:3 / /c rw - cgroup cgroup rw,cpu,cpuacct\n").v1[0]
            .controllers,
        vec!["cpu", "cpuacct"]
    );
    assert_eq!(CgroupLayout::from_mountinfo("").mode(), None);
}

#[test]
fn cgroup_dir_mapping() {
    let m = Path::new("/sys/fs/cgroup");
    assert_eq!(cgroup_dir(m, "/", "/"), Some(m.to_path_buf()));
    assert_eq!(cgroup_dir(m, "/", "/a/b"), Some(m.join("a/b")));
    assert_eq!(cgroup_dir(m, "/ct", "/ct/a"), Some(m.join("a")));
    assert_eq!(cgroup_dir(m, "/ct", "/ct"), Some(m.to_path_buf()));
    assert_eq!(cgroup_dir(m, "/ct", "/ctx/a"), None);
    assert_eq!(cgroup_dir(m, "/ct", "/other"), None);
}

#[test]
fn quota_formatting() {
    assert_eq!(quota_us(0.5, 100_000), Ok(50_000));
    assert_eq!(quota_us(2.0, 100_000), Ok(200_000));
    assert_eq!(quota_us(0.001, 100_000), Ok(1000));
    assert!(quota_us(0.0, 100_000).is_err());
    assert!(quota_us(f64::NAN, 100_000).is_err());
    assert!(quota_us(-1.0, 100_000).is_err());
    assert_eq!(format_cpu_max(Some(50_000), 100_000), "50000 100000");
    assert_eq!(format_cpu_max(None, 100_000), "max 100000");
    assert_eq!(cfs_values(None, 100_000), (-1, 100_000));
    assert_eq!(cfs_values(Some(25_000), 100_000), (25_000, 100_000));
}

#[test]
fn job_names() {
    assert!(valid_job_name("batch-1"));
    for bad in ["", ".", "..", "a/b", "a b", "x\n"] {
        assert!(!valid_job_name(bad), "{bad:?}");
    }
}

/// Builds a fake v1 tree with the files the kernel would have, plus a
/// mountinfo pointing at it.
fn fake_v1(root: &Path) -> String {
    let mut mi = String::new();
    for (i, c) in ["cpuset", "cpu", "freezer"].iter().enumerate() {
        let m = root.join(c);
        fs::create_dir_all(&m).unwrap();
        fs::write(m.join("cgroup.procs"), "").unwrap();
        if *c == "cpuset" {
            fs::write(m.join("cpuset.cpus"), "0-1\n").unwrap();
            fs::write(m.join("cpuset.mems"), "0\n").unwrap();
        }
        mi.push_str(&format!(
            "{} 1 0:{} / {} rw - cgroup cgroup rw,{c}\n",
            30 + i,
            30 + i,
            m.display()
        ));
    }
    mi
}

/// Creates the files the kernel would put in a new cgroup dir.
fn populate(dir: &Path, files: &[(&str, &str)]) {
    for (f, v) in files {
        fs::write(dir.join(f), v).unwrap();
    }
}

#[test]
fn fake_v1_tree() {
    let tmp = TempDir::new("fake-v1");
    let mi_path = tmp.path().join("mountinfo");
    fs::write(&mi_path, fake_v1(tmp.path())).unwrap();
    let layout = CgroupLayout::discover(&mi_path).unwrap();
    assert_eq!(layout.mode(), Some(CgroupMode::V1));
    let journal = Arc::new(Journal::open(&tmp.path().join("journal")).unwrap());
    // A fake fs has no kernel to populate new dirs: creation fails
    // cleanly (an error naming the file, no panic) on the missing
    // cpuset files of the new parent, which is journaled as ours.
    let err = ManagedCgroup::create(&layout, "job", journal.clone()).unwrap_err();
    assert!(matches!(err, Error::Read { .. }), "{err}");
    assert!(err.to_string().contains("cpuset.mems"), "{err}");
    let cpuset_parent = tmp.path().join("cpuset").join(MEMTAMER_DIR);
    assert_eq!(journal.pending().len(), 1);
    // Play the kernel: populate the dirs it would have created, and mark
    // the job dirs as created through this journal.
    let job_dir = |c: &str| tmp.path().join(c).join(MEMTAMER_DIR).join("job");
    populate(&cpuset_parent, &[("cpuset.cpus", ""), ("cpuset.mems", "")]);
    for c in ["cpuset", "cpu", "freezer"] {
        fs::create_dir_all(job_dir(c)).unwrap();
        populate(&job_dir(c), &[("cgroup.procs", "")]);
    }
    populate(
        &job_dir("cpuset"),
        &[("cpuset.cpus", ""), ("cpuset.mems", "")],
    );
    populate(
        &job_dir("cpu"),
        &[("cpu.cfs_quota_us", "-1"), ("cpu.cfs_period_us", "100000")],
    );
    populate(&job_dir("freezer"), &[("freezer.state", "THAWED")]);
    // Job dirs that exist but are not ours are refused.
    let err = ManagedCgroup::create(&layout, "job", journal.clone()).unwrap_err();
    assert!(matches!(err, Error::Invalid(_)), "{err}");
    for c in ["cpuset", "cpu", "freezer"] {
        journal
            .record(Change::CgroupCreated {
                path: job_dir(c),
                hierarchy: tmp.path().join(c),
            })
            .unwrap();
    }
    let mc = ManagedCgroup::create(&layout, "job", journal.clone()).unwrap();
    assert_eq!(mc.mode(), CgroupMode::V1);
    assert_eq!(mc.dirs().len(), 3);
    // cpus/mems were inherited root -> memtamer -> job.
    assert_eq!(
        fs::read_to_string(cpuset_parent.join("cpuset.cpus")).unwrap(),
        "0-1"
    );
    assert_eq!(
        fs::read_to_string(cpuset_parent.join("cpuset.mems")).unwrap(),
        "0"
    );
    assert_eq!(
        fs::read_to_string(job_dir("cpuset").join("cpuset.cpus")).unwrap(),
        "0-1"
    );
    mc.set_cpus(&CpuSet::parse_list("1").unwrap()).unwrap();
    assert_eq!(
        fs::read_to_string(job_dir("cpuset").join("cpuset.cpus")).unwrap(),
        "1"
    );
    mc.set_cpu_quota(Some(0.25), DEFAULT_QUOTA_PERIOD).unwrap();
    assert_eq!(
        fs::read_to_string(job_dir("cpu").join("cpu.cfs_quota_us")).unwrap(),
        "25000"
    );
    assert_eq!(
        fs::read_to_string(job_dir("cpu").join("cpu.cfs_period_us")).unwrap(),
        "100000"
    );
    mc.set_cpu_quota(None, DEFAULT_QUOTA_PERIOD).unwrap();
    assert_eq!(
        fs::read_to_string(job_dir("cpu").join("cpu.cfs_quota_us")).unwrap(),
        "-1"
    );
    assert!(mc.set_cpu_quota(Some(-1.0), DEFAULT_QUOTA_PERIOD).is_err());
    assert!(mc
        .set_cpu_quota(Some(1.0), Duration::from_micros(10))
        .is_err());
    assert!(mc.set_cpus(&CpuSet::empty()).is_err());
    mc.freeze().unwrap();
    assert!(mc.is_frozen().unwrap());
    assert!(journal.pending().contains(&Change::Frozen {
        cgroup: job_dir("freezer")
    }));
    // remove(): thaws first; rmdir of the fake (non-empty) dirs fails,
    // which is reported and stays journaled for a retry.
    let report = mc.remove().unwrap();
    assert_eq!(
        fs::read_to_string(job_dir("freezer").join("freezer.state")).unwrap(),
        "THAWED"
    );
    assert!(
        matches!(report.entries[0].0, Change::Frozen { .. }),
        "{report}"
    );
    assert_eq!(report.restored(), 1, "{report}");
    assert_eq!(report.failed(), 3, "{report}");
    let pending = journal.pending();
    assert!(!pending.iter().any(|c| matches!(c, Change::Frozen { .. })));
    assert_eq!(pending.len(), 4, "{pending:?}"); // memtamer parent + 3 job dirs
}

#[test]
fn fake_v2_enables_controllers_and_restores_them() {
    let tmp = TempDir::new("fake-v2");
    let root = tmp.path().join("cg");
    fs::create_dir_all(&root).unwrap();
    populate(
        &root,
        &[
            ("cgroup.controllers", "cpuset cpu io memory\n"),
            ("cgroup.subtree_control", "memory\n"),
        ],
    );
    let parent = root.join(MEMTAMER_DIR);
    fs::create_dir_all(&parent).unwrap();
    populate(&parent, &[("cgroup.subtree_control", "")]);
    let mi = format!(
        "26 25 0:24 / {} rw shared:8 - cgroup2 cgroup2 rw\n",
        root.display()
    );
    let mi_path = tmp.path().join("mountinfo");
    fs::write(&mi_path, mi).unwrap();
    let layout = CgroupLayout::discover(&mi_path).unwrap();
    assert_eq!(layout.mode(), Some(CgroupMode::V2));
    assert_eq!(layout.v2.as_ref().unwrap().controllers.len(), 4);
    let journal = Arc::new(Journal::open(&tmp.path().join("journal")).unwrap());
    // The job dir can't be populated by a fake kernel before mkdir, so
    // the first attempt creates it and set_* reports missing files.
    let mc = ManagedCgroup::create(&layout, "j", journal.clone()).unwrap();
    let job = parent.join("j");
    assert!(job.is_dir());
    assert!(matches!(
        mc.set_cpus(&CpuSet::first_n(1)),
        Err(Error::ControllerMissing { .. })
    ));
    populate(
        &job,
        &[
            ("cpuset.cpus", ""),
            ("cpu.max", "max 100000"),
            ("cgroup.freeze", "0"),
            ("cgroup.events", "populated 0\nfrozen 1\n"),
        ],
    );
    mc.set_cpus(&CpuSet::parse_list("0-1").unwrap()).unwrap();
    assert_eq!(fs::read_to_string(job.join("cpuset.cpus")).unwrap(), "0-1");
    mc.set_cpu_quota(Some(1.5), Duration::from_millis(10))
        .unwrap();
    assert_eq!(
        fs::read_to_string(job.join("cpu.max")).unwrap(),
        "15000 10000"
    );
    mc.freeze().unwrap();
    assert_eq!(fs::read_to_string(job.join("cgroup.freeze")).unwrap(), "1");
    assert!(mc.is_frozen().unwrap());
    mc.thaw().unwrap();
    assert_eq!(fs::read_to_string(job.join("cgroup.freeze")).unwrap(), "0");
    // subtree_control values were journaled with their originals.
    let pending = journal.pending();
    assert!(pending.contains(&Change::CgroupValue {
        file: root.join("cgroup.subtree_control"),
        original: "memory\n".into()
    }));
    // A second job reuses the shared parent without new records for it.
    let before = journal.pending().len();
    let mc2 = ManagedCgroup::create(&layout, "k", journal.clone()).unwrap();
    assert_eq!(journal.pending().len(), before + 1);
    assert!(ManagedCgroup::create(&layout, "../x", journal.clone()).is_err());
    // remove() of an empty (kernel-file-less) dir works on the fake tree.
    let r = mc2.remove().unwrap();
    assert!(r.is_ok(), "{r}");
    assert!(!parent.join("k").exists());
    drop(mc);
}
