//! In-place actuation on fake cgroup trees laid out as the kubelet does
//! (v2 with the systemd driver, v1 with the cgroupfs driver).

use super::*;
use crate::cgroup::{V1Hierarchy, V2Mount};
use crate::journal::restore_all_within;
use crate::test_util::TempDir;
use crate::undo::Scope;
use std::fs;

const UID_: &str = "0f3c1a2b_4d5e_6f70_8192_a3b4c5d6e7f8";
const UID: &str = "0f3c1a2b-4d5e-6f70-8192-a3b4c5d6e7f8";

fn write(p: &Path, v: &str) {
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, v).unwrap();
}

fn read(p: &Path) -> String {
    fs::read_to_string(p).unwrap()
}

/// A v2 tree: a Burstable pod (systemd driver) with a 2-core limit and one
/// container; `static_cpu` gives the container a cpuset of its own.
fn v2_tree(tmp: &TempDir, static_cpu: bool) -> (CgroupLayout, String, PathBuf) {
    let mount = tmp.path().join("v2");
    let pod_path =
        format!("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{UID_}.slice");
    let pod = mount.join(pod_path.trim_start_matches('/'));
    write(&pod.join("cpu.max"), "200000 100000\n");
    write(&pod.join("cpuset.cpus"), "\n");
    write(&pod.join("cgroup.freeze"), "0\n");
    let ctr = pod.join("cri-containerd-8a1f.scope");
    write(&ctr.join("cgroup.procs"), "4242\n");
    write(
        &ctr.join("cpuset.cpus"),
        if static_cpu { "2-3\n" } else { "\n" },
    );
    let layout = CgroupLayout {
        v1: vec![],
        v2: Some(V2Mount {
            mount_point: mount,
            root: "/".into(),
            controllers: vec!["cpuset".into(), "cpu".into()],
        }),
    };
    (layout, pod_path, pod)
}

fn journal(tmp: &TempDir) -> Arc<Journal> {
    Arc::new(Journal::open(&tmp.path().join("journal")).unwrap())
}

#[test]
fn pod_paths_only() {
    assert!(is_pod_path(&format!("/kubepods/besteffort/pod{UID}")));
    assert!(is_pod_path(&format!(
        "/kubepods.slice/kubepods-pod{UID_}.slice"
    )));
    assert!(!is_pod_path("/kubepods.slice/kubepods-burstable.slice"));
    assert!(!is_pod_path("/system.slice/memcached.service"));
    assert!(!is_pod_path("/kubepods"));
    let tmp = TempDir::new("inplace-refuse");
    let (layout, _, _) = v2_tree(&tmp, false);
    for bad in [
        "/system.slice/memcached.service".to_string(),
        format!("/kubepods/../etc/pod{UID}"),
        format!("/kubepods/burstable/pod{UID}"), // not in this tree
    ] {
        let e = InPlaceCgroup::locate(&layout, &bad, journal(&tmp)).unwrap_err();
        assert!(matches!(e, Error::Invalid(_)), "{bad}: {e}");
    }
}

#[test]
fn limits_only_tighten_and_a_crash_restore_gives_the_kubelet_its_values_back() {
    let tmp = TempDir::new("inplace-v2");
    let (layout, pod_path, pod) = v2_tree(&tmp, false);
    let j = journal(&tmp);
    let cg = InPlaceCgroup::locate(&layout, &pod_path, j.clone()).unwrap();
    assert_eq!(cg.dirs(), [pod.as_path()]);
    let period = Duration::from_millis(10);
    // a budget under the pod's 2-core limit is applied...
    assert_eq!(cg.set_cpu_quota(Some(0.5), period).unwrap(), Some(0.5));
    assert_eq!(read(&pod.join("cpu.max")), "5000 10000");
    // ...one above it never lifts the pod's own limit
    assert_eq!(cg.set_cpu_quota(Some(3.0), period).unwrap(), Some(2.0));
    assert_eq!(read(&pod.join("cpu.max")), "20000 10000");
    cg.set_cpus(&CpuSet::parse_list("4-7").unwrap()).unwrap();
    cg.freeze().unwrap();
    assert_eq!(read(&pod.join("cgroup.freeze")), "1");
    // the processes stayed in the container's cgroup
    assert_eq!(
        read(&pod.join("cri-containerd-8a1f.scope/cgroup.procs")),
        "4242\n"
    );
    // the daemon dies; the guard replays the journal file
    drop(cg);
    drop(j);
    let report = restore_all_within(
        &tmp.path().join("journal"),
        &Scope::Under(tmp.path().to_path_buf()),
    )
    .unwrap();
    assert!(report.is_ok(), "{report}");
    assert_eq!(read(&pod.join("cpu.max")), "200000 100000");
    assert_eq!(read(&pod.join("cpuset.cpus")), "");
    assert_eq!(read(&pod.join("cgroup.freeze")), "0");
}

#[test]
fn a_value_the_kubelet_changed_since_is_left_alone() {
    let tmp = TempDir::new("inplace-resize");
    let (layout, pod_path, pod) = v2_tree(&tmp, false);
    let cg = InPlaceCgroup::locate(&layout, &pod_path, journal(&tmp)).unwrap();
    cg.set_cpu_quota(Some(1.0), Duration::from_millis(100))
        .unwrap();
    cg.set_cpus(&CpuSet::parse_list("0-1").unwrap()).unwrap();
    // an in-place pod resize: the kubelet writes a new limit
    fs::write(pod.join("cpu.max"), "400000 100000\n").unwrap();
    // the kernel echoes "0,1" as "0-1": still ours
    fs::write(pod.join("cpuset.cpus"), "0-1\n").unwrap();
    let report = cg.restore().unwrap();
    assert_eq!((report.restored(), report.skipped()), (1, 1), "{report}");
    assert_eq!(read(&pod.join("cpu.max")), "400000 100000\n");
    assert_eq!(read(&pod.join("cpuset.cpus")), "");
    // lifting the budget gives the kubelet's limit back
    cg.set_cpu_quota(Some(1.0), Duration::from_millis(100))
        .unwrap();
    assert_eq!(
        cg.set_cpu_quota(None, Duration::from_millis(100)).unwrap(),
        Some(4.0)
    );
    assert_eq!(read(&pod.join("cpu.max")), "400000 100000");
}

#[test]
fn the_static_cpu_managers_cpusets_are_not_fought() {
    let tmp = TempDir::new("inplace-static");
    let (layout, pod_path, pod) = v2_tree(&tmp, true);
    let cg = InPlaceCgroup::locate(&layout, &pod_path, journal(&tmp)).unwrap();
    let e = cg
        .set_cpus(&CpuSet::parse_list("4-7").unwrap())
        .unwrap_err();
    assert!(
        matches!(&e, Error::KubeletOwned { path, .. } if path.ends_with("cri-containerd-8a1f.scope")),
        "{e}"
    );
    assert!(e.to_string().contains("CPU manager"), "{e}");
    assert_eq!(read(&pod.join("cpuset.cpus")), "\n");
    // quota and freezer still work
    cg.set_cpu_quota(Some(1.0), Duration::from_millis(100))
        .unwrap();
    assert_eq!(read(&pod.join("cpu.max")), "100000 100000");
}

#[test]
fn v1_cgroupfs_driver_tree() {
    let tmp = TempDir::new("inplace-v1");
    let pod_path = format!("/kubepods/besteffort/pod{UID}");
    let mut v1 = Vec::new();
    for c in ["cpuset", "cpu", "freezer"] {
        let mount = tmp.path().join(c);
        let pod = mount.join(pod_path.trim_start_matches('/'));
        match c {
            "cpuset" => {
                write(&pod.join("cpuset.cpus"), "0-15\n");
                write(&pod.join("c1/cpuset.cpus"), "0-15\n");
            }
            "cpu" => {
                write(&pod.join("cpu.cfs_quota_us"), "-1\n");
                write(&pod.join("cpu.cfs_period_us"), "100000\n");
            }
            _ => write(&pod.join("freezer.state"), "THAWED\n"),
        }
        v1.push(V1Hierarchy {
            mount_point: mount,
            root: "/".into(),
            controllers: vec![c.into()],
        });
    }
    let layout = CgroupLayout { v1, v2: None };
    let at = |c: &str, f: &str| {
        tmp.path()
            .join(c)
            .join(pod_path.trim_start_matches('/'))
            .join(f)
    };
    let cg = InPlaceCgroup::locate(&layout, &pod_path, journal(&tmp)).unwrap();
    assert_eq!(cg.dirs().len(), 3);
    // a BestEffort pod has no limit of its own: the budget applies as is
    assert_eq!(
        cg.set_cpu_quota(Some(1.5), Duration::from_millis(20))
            .unwrap(),
        Some(1.5)
    );
    assert_eq!(read(&at("cpu", "cpu.cfs_quota_us")), "30000");
    assert_eq!(read(&at("cpu", "cpu.cfs_period_us")), "20000");
    cg.set_cpus(&CpuSet::parse_list("8-11").unwrap()).unwrap();
    cg.freeze().unwrap();
    assert_eq!(read(&at("freezer", "freezer.state")), "FROZEN");
    let report = cg.restore().unwrap();
    assert!(report.is_ok(), "{report}");
    assert_eq!(read(&at("cpu", "cpu.cfs_quota_us")), "-1");
    assert_eq!(read(&at("cpu", "cpu.cfs_period_us")), "100000");
    assert_eq!(read(&at("cpuset", "cpuset.cpus")), "0-15");
    assert_eq!(read(&at("freezer", "freezer.state")), "THAWED");
    // v1: a container whose cpuset differs from the pod's is the CPU manager's
    fs::write(at("cpuset", "c1/cpuset.cpus"), "2-3\n").unwrap();
    assert!(matches!(
        cg.set_cpus(&CpuSet::parse_list("8-11").unwrap()),
        Err(Error::KubeletOwned { .. })
    ));
}

#[test]
fn pure_helpers() {
    assert_eq!(cores_of_cpu_max("200000 100000\n"), Some(2.0));
    assert_eq!(cores_of_cpu_max("max 100000"), None);
    assert_eq!(cores_of_cfs("-1", "100000"), None);
    assert_eq!(cores_of_cfs("50000\n", "100000\n"), Some(0.5));
    assert_eq!(tightened(Some(3.0), Some(2.0)), Some(2.0));
    assert_eq!(tightened(Some(1.0), None), Some(1.0));
    assert_eq!(tightened(None, Some(2.0)), Some(2.0));
    assert!(crate::undo::same_value("0-3\n", "0,1,2,3"));
    assert!(crate::undo::same_value("max 100000\n", "max  100000"));
    assert!(!crate::undo::same_value("400000 100000", "100000 100000"));
}
