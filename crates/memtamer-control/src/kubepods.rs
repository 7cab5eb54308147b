//! Kubernetes pods from what a node already has: the pod's UID and QoS class
//! from a process's cgroup path as the kubelet lays it out (both cgroup
//! drivers), and its namespace and name from the kubelet's log directory
//! `/var/log/pods/NAMESPACE_NAME_UID`. No API server is needed, so a job can
//! say `pod = "prod/memcached-*"` and keep matching when the pod is recreated
//! with a new UID. Labels are not on the node's disk: they come from the
//! API server ([`crate::kubeapi`], [`crate::kubewatch`]).
//!
//! Layouts (kubelet `pkg/kubelet/cm/cgroup_manager_linux.go`):
//! * systemd driver: `/kubepods.slice/kubepods-burstable.slice/
//!   kubepods-burstable-pod<uid with _>.slice/cri-containerd-<id>.scope`
//!   (Guaranteed pods sit directly under `kubepods.slice`);
//! * cgroupfs driver: `/kubepods/burstable/pod<uid>/<container id>`.

use std::collections::BTreeMap;
use std::path::Path;

/// The kubelet's QoS classes, which are cgroup levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Qos {
    /// Requests equal limits: the pod cgroup sits directly under kubepods.
    Guaranteed,
    /// Some requests.
    Burstable,
    /// No requests.
    BestEffort,
}

/// Where a process sits in the kubelet's cgroup tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodCgroup {
    /// QoS class (from the tree level).
    pub qos: Qos,
    /// Pod UID with dashes (`0f3c...-...`), as in the API and /var/log/pods.
    pub uid: String,
    /// The pod's own cgroup path (the prefix of the process's path ending in
    /// the pod level): in-place changes go at or under it.
    pub pod_path: String,
    /// The container's cgroup component, if the process is in one.
    pub container: Option<String>,
}

/// Parses a cgroup path (v2, or the v1 `name=systemd`/cpuset path) of a
/// process in a pod; None for processes outside the kubelet's tree. Leading
/// components before `kubepods` (a cgroup namespace's `/../..`, a
/// kind/k3s node's own slice) are accepted.
pub fn parse_pod_cgroup(path: &str) -> Option<PodCgroup> {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let root = parts
        .iter()
        .position(|p| *p == "kubepods.slice" || *p == "kubepods")?;
    let systemd = parts[root] == "kubepods.slice";
    let mut i = root + 1;
    let mut qos = Qos::Guaranteed;
    let level = parts.get(i)?;
    let qos_of = |name: &str| match name {
        "burstable" => Some(Qos::Burstable),
        "besteffort" => Some(Qos::BestEffort),
        _ => None,
    };
    let level_name = if systemd {
        level
            .strip_prefix("kubepods-")
            .and_then(|l| l.strip_suffix(".slice"))
            .unwrap_or("")
    } else {
        level
    };
    if let Some(q) = qos_of(level_name) {
        qos = q;
        i += 1;
    }
    let pod = parts.get(i)?;
    let uid = if systemd {
        // kubepods[-qos]-pod<uid with _>.slice
        let stem = pod.strip_suffix(".slice")?;
        let at = stem.rfind("-pod")?;
        stem[at + 4..].replace('_', "-")
    } else {
        pod.strip_prefix("pod")?.to_string()
    };
    if uid.is_empty() || !uid.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
        return None;
    }
    Some(PodCgroup {
        qos,
        uid,
        pod_path: format!("/{}", parts[..=i].join("/")),
        container: parts.get(i + 1).map(|c| c.to_string()),
    })
}

/// What selection knows of one pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodMeta {
    /// `NAMESPACE/NAME`.
    pub full_name: String,
    /// Length of the namespace part of `full_name`.
    ns_len: usize,
    /// Labels, when the API server said (None: only the log directory is
    /// known, so no label selector can match the pod yet).
    pub labels: Option<BTreeMap<String, String>>,
}

impl PodMeta {
    /// The pod's namespace.
    pub fn namespace(&self) -> &str {
        &self.full_name[..self.ns_len]
    }
}

/// Pod UID -> namespace, name and (from the API server) labels.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodIndex {
    pods: BTreeMap<String, PodMeta>,
}

impl PodIndex {
    /// Builds the index from directory names `NAMESPACE_NAME_UID` (names and
    /// namespaces are DNS labels, so they hold no `_`); others are skipped.
    pub fn from_entries<'a>(entries: impl IntoIterator<Item = &'a str>) -> PodIndex {
        let mut pods = BTreeMap::new();
        for e in entries {
            let mut it = e.splitn(3, '_');
            if let (Some(ns), Some(name), Some(uid)) = (it.next(), it.next(), it.next()) {
                if !ns.is_empty() && !name.is_empty() && !uid.is_empty() {
                    pods.insert(
                        uid.to_string(),
                        PodMeta {
                            full_name: format!("{ns}/{name}"),
                            ns_len: ns.len(),
                            labels: None,
                        },
                    );
                }
            }
        }
        PodIndex { pods }
    }

    /// Builds the index from the API server's view, `(uid, namespace, name,
    /// labels)` per pod (labels known; `kubeapi::index` passes its pods).
    pub fn from_api<'a>(
        pods: impl IntoIterator<Item = (&'a str, &'a str, &'a str, &'a BTreeMap<String, String>)>,
    ) -> PodIndex {
        let pods = pods
            .into_iter()
            .map(|(uid, ns, name, labels)| {
                (
                    uid.to_string(),
                    PodMeta {
                        full_name: format!("{ns}/{name}"),
                        ns_len: ns.len(),
                        labels: Some(labels.clone()),
                    },
                )
            })
            .collect();
        PodIndex { pods }
    }

    /// Adds the pods of `other` this index does not know (a pod started
    /// since the API was last asked: its name is known from the node, its
    /// labels not yet).
    pub fn fill_from(&mut self, other: &PodIndex) {
        for (uid, m) in &other.pods {
            self.pods.entry(uid.clone()).or_insert_with(|| m.clone());
        }
    }

    /// Reads `dir` (normally `/var/log/pods`); a missing directory is an
    /// empty index (not a Kubernetes node, or not mounted in).
    pub fn read(dir: &Path) -> PodIndex {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return PodIndex::default();
        };
        let names: Vec<String> = rd
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        PodIndex::from_entries(names.iter().map(String::as_str))
    }

    /// `NAMESPACE/NAME` of a pod UID.
    pub fn name_of(&self, uid: &str) -> Option<&str> {
        self.pods.get(uid).map(|m| m.full_name.as_str())
    }

    /// Everything known of a pod UID.
    pub fn get(&self, uid: &str) -> Option<&PodMeta> {
        self.pods.get(uid)
    }

    /// Pods known.
    pub fn len(&self) -> usize {
        self.pods.len()
    }

    /// No pods known.
    pub fn is_empty(&self) -> bool {
        self.pods.is_empty()
    }
}

/// Pure: checks a `labels` entry of a job as Kubernetes checks labels
/// (apimachinery `validation.IsQualifiedName`, `IsValidLabelValue`): key
/// `[PREFIX/]NAME`, NAME and value at most 63 characters of
/// `[A-Za-z0-9._-]` beginning and ending alphanumeric (the value may be
/// empty), PREFIX a DNS subdomain. Set-based expressions (`in (a,b)`,
/// `!key`, `key notin (...)`) are not supported and are named as such.
pub fn check_label(key: &str, value: &str) -> Result<(), String> {
    let set_based = |s: &str| {
        s.contains(" in ")
            || s.contains("notin")
            || s.starts_with('!')
            || s.contains('(')
            || s.contains(',')
    };
    if set_based(key) || set_based(value) {
        return Err(
            "set-based selectors (in, notin, !key, lists) are not supported; give one value per key (equality)"
                .into(),
        );
    }
    let part_ok = |s: &str| {
        s.len() <= 63
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
            && s.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric())
            && s.bytes().last().is_some_and(|b| b.is_ascii_alphanumeric())
    };
    let (prefix, name) = match key.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if !part_ok(name) {
        return Err(format!(
            "key name {name:?} must be 1-63 characters of [A-Za-z0-9._-], alphanumeric at both ends"
        ));
    }
    if let Some(p) = prefix {
        let dns_ok = !p.is_empty()
            && p.len() <= 253
            && p.split('.').all(|l| {
                !l.is_empty()
                    && l.len() <= 63
                    && l.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                    && !l.starts_with('-')
                    && !l.ends_with('-')
            });
        if !dns_ok {
            return Err(format!("key prefix {p:?} must be a DNS subdomain"));
        }
    }
    if !value.is_empty() && !part_ok(value) {
        return Err(format!(
            "value {value:?} must be at most 63 characters of [A-Za-z0-9._-], alphanumeric at both ends"
        ));
    }
    Ok(())
}

/// The kubelet's cgroup drivers, which name the pod cgroups differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Driver {
    /// `cgroupDriver: systemd` (the default of kubeadm since 1.22).
    Systemd,
    /// `cgroupDriver: cgroupfs`.
    Cgroupfs,
}

/// Pure: the pod's cgroup path relative to the hierarchy root, as the
/// kubelet names it (`pkg/kubelet/cm/qos_container_manager_linux.go`,
/// `pod_container_manager_linux.go`): the same on cgroup v2 and in each v1
/// controller hierarchy.
pub fn pod_cgroup_path(driver: Driver, qos: Qos, uid: &str) -> String {
    let qos_name = match qos {
        Qos::Guaranteed => None,
        Qos::Burstable => Some("burstable"),
        Qos::BestEffort => Some("besteffort"),
    };
    match (driver, qos_name) {
        (Driver::Systemd, None) => {
            format!("kubepods.slice/kubepods-pod{}.slice", uid.replace('-', "_"))
        }
        (Driver::Systemd, Some(q)) => format!(
            "kubepods.slice/kubepods-{q}.slice/kubepods-{q}-pod{}.slice",
            uid.replace('-', "_")
        ),
        (Driver::Cgroupfs, None) => format!("kubepods/pod{uid}"),
        (Driver::Cgroupfs, Some(q)) => format!("kubepods/{q}/pod{uid}"),
    }
}

/// The pod's cgroup directory under a hierarchy's mount point (`/sys/fs/cgroup`
/// on v2, `/sys/fs/cgroup/cpuset` etc. on v1), trying both drivers; None if
/// the pod has no cgroup there (not started yet, or another node layout).
pub fn find_pod_dir(mount: &Path, qos: Qos, uid: &str) -> Option<(Driver, std::path::PathBuf)> {
    [Driver::Systemd, Driver::Cgroupfs]
        .into_iter()
        .map(|d| (d, mount.join(pod_cgroup_path(d, qos, uid))))
        .find(|(_, p)| p.is_dir())
}

/// Where the kubelet's pod log directories are: `MEMTAMER_POD_LOG_DIR`, else
/// `/var/log/pods` (the DaemonSet mounts the host's at `/host/var/log/pods`).
pub fn pod_log_dir() -> std::path::PathBuf {
    std::env::var_os("MEMTAMER_POD_LOG_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| "/var/log/pods".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    const UID: &str = "0f3c1a2b-4d5e-6f70-8192-a3b4c5d6e7f8";

    #[test]
    fn systemd_driver_paths() {
        let p = parse_pod_cgroup(
            "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0f3c1a2b_4d5e_6f70_8192_a3b4c5d6e7f8.slice/cri-containerd-abc123.scope",
        )
        .unwrap();
        assert_eq!(p.qos, Qos::Burstable);
        assert_eq!(p.uid, UID);
        assert_eq!(
            p.pod_path,
            "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0f3c1a2b_4d5e_6f70_8192_a3b4c5d6e7f8.slice"
        );
        assert_eq!(p.container.as_deref(), Some("cri-containerd-abc123.scope"));
        // Guaranteed: directly under kubepods.slice
        let g = parse_pod_cgroup(
            "/kubepods.slice/kubepods-pod0f3c1a2b_4d5e_6f70_8192_a3b4c5d6e7f8.slice/crio-9f.scope",
        )
        .unwrap();
        assert_eq!((g.qos, g.uid.as_str()), (Qos::Guaranteed, UID));
    }

    #[test]
    fn cgroupfs_driver_and_prefixes() {
        let p = parse_pod_cgroup(&format!("/kubepods/besteffort/pod{UID}/4f2e")).unwrap();
        assert_eq!(p.qos, Qos::BestEffort);
        assert_eq!(p.uid, UID);
        assert_eq!(p.pod_path, format!("/kubepods/besteffort/pod{UID}"));
        // a kind node's own cgroup above kubepods; a pod-level process (pause)
        let k =
            parse_pod_cgroup(&format!("/system.slice/docker-1.scope/kubepods/pod{UID}")).unwrap();
        assert_eq!((k.qos, k.container), (Qos::Guaranteed, None));
        // not pods
        assert_eq!(parse_pod_cgroup("/system.slice/memcached.service"), None);
        assert_eq!(
            parse_pod_cgroup("/kubepods.slice/kubepods-burstable.slice"),
            None
        );
        assert_eq!(parse_pod_cgroup("/kubepods/burstable/podnot-a-uid!"), None);
    }

    #[test]
    fn names_from_the_log_directory() {
        let idx = PodIndex::from_entries([
            "prod_memcached-7d9f_0f3c1a2b-4d5e-6f70-8192-a3b4c5d6e7f8",
            "batch_fio-writer-1_11111111-2222-3333-4444-555555555555",
            "garbage",
        ]);
        assert_eq!(idx.len(), 2);
        assert_eq!(idx.name_of(UID), Some("prod/memcached-7d9f"));
        assert_eq!(idx.name_of("nope"), None);
    }

    #[test]
    fn reads_a_fake_node() {
        let dir = std::env::temp_dir().join(format!("memtamer-kubepods-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join(format!("prod_memcached-0_{UID}"))).unwrap();
        let idx = PodIndex::read(&dir);
        assert_eq!(idx.name_of(UID), Some("prod/memcached-0"));
        assert!(PodIndex::read(&dir.join("missing")).is_empty());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn pod_cgroup_paths_as_the_kubelet_names_them() {
        let p = |d, q| pod_cgroup_path(d, q, UID);
        assert_eq!(
            p(Driver::Systemd, Qos::Burstable),
            "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0f3c1a2b_4d5e_6f70_8192_a3b4c5d6e7f8.slice"
        );
        assert_eq!(
            p(Driver::Systemd, Qos::Guaranteed),
            "kubepods.slice/kubepods-pod0f3c1a2b_4d5e_6f70_8192_a3b4c5d6e7f8.slice"
        );
        assert_eq!(
            p(Driver::Cgroupfs, Qos::BestEffort),
            format!("kubepods/besteffort/pod{UID}")
        );
        assert_eq!(
            p(Driver::Cgroupfs, Qos::Guaranteed),
            format!("kubepods/pod{UID}")
        );
        // the parser reads back what the builder writes, for every case
        for d in [Driver::Systemd, Driver::Cgroupfs] {
            for q in [Qos::Guaranteed, Qos::Burstable, Qos::BestEffort] {
                let path = format!("/{}/cri-containerd-1.scope", p(d, q));
                let back = parse_pod_cgroup(&path).unwrap();
                assert_eq!((back.qos, back.uid.as_str()), (q, UID), "{path}");
                assert_eq!(back.pod_path, format!("/{}", p(d, q)));
            }
        }
    }

    #[test]
    fn finds_pod_dirs_in_fake_v2_and_v1_trees() {
        let root = std::env::temp_dir().join(format!("memtamer-podcg-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        // v2, systemd driver
        let v2 = root.join("v2");
        std::fs::create_dir_all(v2.join(pod_cgroup_path(Driver::Systemd, Qos::Burstable, UID)))
            .unwrap();
        assert_eq!(
            find_pod_dir(&v2, Qos::Burstable, UID),
            Some((
                Driver::Systemd,
                v2.join(pod_cgroup_path(Driver::Systemd, Qos::Burstable, UID))
            ))
        );
        // the QoS class is part of the path: a wrong class finds nothing
        assert_eq!(find_pod_dir(&v2, Qos::BestEffort, UID), None);
        // v1, cgroupfs driver, in the cpuset hierarchy
        let cpuset = root.join("v1/cpuset");
        std::fs::create_dir_all(cpuset.join(format!("kubepods/pod{UID}"))).unwrap();
        assert_eq!(
            find_pod_dir(&cpuset, Qos::Guaranteed, UID).map(|(d, _)| d),
            Some(Driver::Cgroupfs)
        );
        std::fs::remove_dir_all(root).unwrap();
    }
}
