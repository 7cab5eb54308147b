//! Which files are persistent memory: DAX file systems from
//! `/proc/self/mountinfo`, device-DAX character devices, and configured
//! paths (a /dev/shm file standing in for PM on machines without it).

use memtamer_linux::mountinfo::{self, MountLine};
use memtamer_linux::ProcRoot;

/// One mount from mountinfo.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mount {
    /// Mount point (octal escapes decoded).
    pub point: String,
    /// File system type.
    pub fstype: String,
    /// Source device.
    pub source: String,
    /// Per-mount and super-block options, comma-joined.
    pub options: String,
}

impl Mount {
    /// Whether the mount maps files directly (fsdax): `dax` or `dax=always`.
    pub fn is_dax(&self) -> bool {
        self.options
            .split(',')
            .any(|o| o == "dax" || o == "dax=always")
    }
}

impl From<MountLine> for Mount {
    fn from(m: MountLine) -> Mount {
        Mount {
            point: m.mount_point,
            fstype: m.fs_type,
            source: m.source,
            options: format!("{},{}", m.mount_options, m.super_options),
        }
    }
}

/// Parses mountinfo text (`memtamer_linux::mountinfo`); malformed lines are
/// skipped (the kernel's format is fixed, and one odd line must not blind
/// the sensor to the rest).
pub fn parse(text: &str) -> Vec<Mount> {
    mountinfo::parse(text)
        .into_iter()
        .map(Mount::from)
        .collect()
}

/// Why a region counts as PM.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PmKind {
    /// A file on a DAX file system.
    Fsdax,
    /// A device-DAX character device (`/dev/daxX.Y`).
    Devdax,
    /// A configured path prefix (emulated PM).
    Configured,
    /// A page on a configured slow NUMA node (PM or CXL memory as a node).
    SlowNode,
}

/// Classifies mapped paths as PM or not.
#[derive(Clone, Debug, Default)]
pub struct PmClassifier {
    /// Every mount point and whether it is DAX, longest first.
    mounts: Vec<(String, bool)>,
    prefixes: Vec<String>,
    /// NUMA nodes whose memory is the slow tier.
    slow_nodes: Vec<u32>,
}

impl PmClassifier {
    /// From mountinfo text and extra path prefixes that count as PM.
    pub fn new(mountinfo: &str, prefixes: &[String]) -> PmClassifier {
        PmClassifier::from_mounts(parse(mountinfo), prefixes)
    }

    /// From parsed mounts and extra path prefixes that count as PM.
    pub fn from_mounts(mounts: Vec<Mount>, prefixes: &[String]) -> PmClassifier {
        let mut mounts: Vec<(String, bool)> = mounts
            .into_iter()
            .map(|m| {
                let dax = m.is_dax();
                (m.point, dax)
            })
            .collect();
        // longest first: the innermost mount decides
        mounts.sort_by_key(|(p, _)| std::cmp::Reverse(p.len()));
        PmClassifier {
            mounts,
            prefixes: prefixes.to_vec(),
            slow_nodes: Vec::new(),
        }
    }

    /// Reads `/proc/self/mountinfo` (no DAX mount if it cannot be read).
    pub fn from_system(prefixes: &[String]) -> PmClassifier {
        let mounts = ProcRoot::default()
            .self_mountinfo()
            .unwrap_or_default()
            .into_iter()
            .map(Mount::from)
            .collect();
        PmClassifier::from_mounts(mounts, prefixes)
    }

    /// Also counts pages on these NUMA nodes as PM (the slow tier exposed as
    /// a CPU-less node: PM in KMEM DAX mode, CXL memory).
    pub fn with_slow_nodes(mut self, nodes: &[u32]) -> PmClassifier {
        self.slow_nodes = nodes.to_vec();
        self
    }

    /// The configured slow NUMA nodes.
    pub fn slow_nodes(&self) -> &[u32] {
        &self.slow_nodes
    }

    /// The PM kind of a mapping's path, if it is PM.
    pub fn classify(&self, path: &str) -> Option<PmKind> {
        let path = path.strip_suffix(" (deleted)").unwrap_or(path);
        if !path.starts_with('/') {
            return None; // anonymous, [heap], [stack], ...
        }
        if self.prefixes.iter().any(|p| path.starts_with(p.as_str())) {
            return Some(PmKind::Configured);
        }
        if path.starts_with("/dev/dax") {
            return Some(PmKind::Devdax);
        }
        let under = |point: &str| {
            point == "/"
                || path == point
                || (path.starts_with(point) && path.as_bytes().get(point.len()) == Some(&b'/'))
        };
        match self.mounts.iter().find(|(p, _)| under(p)) {
            Some((_, true)) => Some(PmKind::Fsdax),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INFO: &str = "\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
30 22 259:0 / /mnt/pmem0 rw,relatime shared:5 - ext4 /dev/pmem0 rw,dax=always
31 22 259:1 / /mnt/pm\\040two rw,relatime - xfs /dev/pmem1 rw,attr2,dax
32 30 0:50 / /mnt/pmem0/tmp rw - tmpfs tmpfs rw
";

    #[test]
    fn dax_mounts_devdax_and_configured_paths_are_pm() {
        let m = parse(INFO);
        assert_eq!(m.len(), 4);
        assert_eq!(m[2].point, "/mnt/pm two");
        let c = PmClassifier::new(INFO, &["/dev/shm/pm-".into()]);
        assert_eq!(c.classify("/mnt/pmem0/db/file"), Some(PmKind::Fsdax));
        assert_eq!(c.classify("/mnt/pm two/x (deleted)"), Some(PmKind::Fsdax));
        assert_eq!(
            c.classify("/mnt/pmem0x/file"),
            None,
            "a prefix is not a mount point"
        );
        assert_eq!(c.classify("/dev/dax0.0"), Some(PmKind::Devdax));
        assert_eq!(c.classify("/dev/shm/pm-a"), Some(PmKind::Configured));
        assert_eq!(c.classify("/usr/lib/libc.so.6"), None);
        assert_eq!(c.classify("[heap]"), None);
        assert_eq!(c.classify(""), None);
    }

    #[test]
    fn a_non_dax_mount_inside_a_dax_one_is_not_pm() {
        // /mnt/pmem0/tmp is tmpfs: the innermost mount decides
        let c = PmClassifier::new(INFO, &[]);
        assert_eq!(c.classify("/mnt/pmem0/tmp/f"), None);
    }

    #[test]
    fn malformed_mountinfo_never_panics() {
        let mut x: u64 = 0x2545f4914f6cdd1d;
        for _ in 0..5000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let cut = (x as usize) % (INFO.len() + 1);
            let mut t = INFO.as_bytes()[..cut].to_vec();
            let at = (x >> 24) as usize % (t.len() + 1);
            t.insert(at, b"\\- 0\n"[(x >> 50) as usize % 5]);
            let _ = PmClassifier::new(&String::from_utf8_lossy(&t), &[]).classify("/mnt/pmem0/a");
        }
    }
}
