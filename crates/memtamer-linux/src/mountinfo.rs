//! `/proc/PID/mountinfo` lines (proc(5)), parsed once for every consumer
//! (PM mount classification in sensing, cgroup discovery in the actuators).

/// One mountinfo line (proc(5)): the fields memtamer uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountLine {
    /// Path within the mounted filesystem (field 4), e.g. "/".
    pub root: String,
    /// Where it is mounted (field 5).
    pub mount_point: String,
    /// Per-mount options (field 6), e.g. "rw,relatime".
    pub mount_options: String,
    /// Filesystem type, the first field after " - ".
    pub fs_type: String,
    /// Mount source, e.g. "/dev/pmem0".
    pub source: String,
    /// Per-superblock options, e.g. "rw,dax=always" or "rw,cpu,cpuacct".
    pub super_options: String,
}

/// Decodes mountinfo's `\040`-style octal escapes (space, tab, newline,
/// backslash in paths); anything else is kept as it is.
pub fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = u32::from(b[i + 1] - b'0') * 64
                + u32::from(b[i + 2] - b'0') * 8
                + u32::from(b[i + 3] - b'0');
            if v <= 255 {
                out.push(v as u8);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parses mountinfo text. Malformed lines are skipped: the kernel's format
/// is fixed, and one odd line must not blind a consumer to the rest.
pub fn parse(text: &str) -> Vec<MountLine> {
    text.lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let l: Vec<&str> = left.split_whitespace().collect();
            let r: Vec<&str> = right.split_whitespace().collect();
            if l.len() < 6 || r.len() < 2 {
                return None;
            }
            Some(MountLine {
                root: unescape(l[3]),
                mount_point: unescape(l[4]),
                mount_options: l[5].to_string(),
                fs_type: r[0].to_string(),
                source: unescape(r[1]),
                super_options: r.get(2).map(|o| o.to_string()).unwrap_or_default(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_optional_fields_escapes_and_skips_garbage() {
        let text = "36 35 98:0 /mnt1 /mnt/my\\040pm rw,noatime master:1 shared:2 - ext4 /dev/pmem0 rw,dax=always\n\
                    garbage line\n\
                    40 24 0:35 / /sys/fs/cgroup/cpu rw,nosuid - cgroup cgroup rw,cpu,cpuacct\n";
        let m = parse(text);
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].mount_point, "/mnt/my pm");
        assert_eq!(m[0].root, "/mnt1");
        assert_eq!(m[0].fs_type, "ext4");
        assert_eq!(m[0].source, "/dev/pmem0");
        assert_eq!(m[0].super_options, "rw,dax=always");
        assert_eq!(m[0].mount_options, "rw,noatime");
        assert_eq!(m[1].super_options, "rw,cpu,cpuacct");
        assert_eq!(unescape("a\\134b\\011"), "a\\b\t");
        assert_eq!(unescape("\\999"), "\\999");
    }

    #[test]
    fn cgroup_mounts_no_optional_fields_and_short_lines() {
        let text = "\
25 21 0:22 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n\
26 25 0:23 /docker/abc /sys/fs/cgroup/cpu\\054cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n\
27 25 0:24 / /x rw - tmpfs\n\
28 25 0:25 / /y rw - tmpfs none\n\
29 25 0:26 / /z rw -\n\
1 2 3 4 - ext4 /dev/sda rw\n";
        let m = parse(text);
        assert_eq!(m.len(), 3, "{m:?}");
        assert_eq!(m[0].fs_type, "cgroup2");
        assert_eq!(m[0].super_options, "rw,nsdelegate");
        assert_eq!(m[1].root, "/docker/abc");
        assert_eq!(m[1].mount_point, "/sys/fs/cgroup/cpu,cpuacct");
        assert_eq!(m[2].mount_point, "/y");
        assert_eq!(
            m[2].super_options, "",
            "no super options is empty, not an error"
        );
    }

    #[test]
    fn escapes() {
        assert_eq!(unescape("/mnt/a\\040b"), "/mnt/a b");
        assert_eq!(unescape("a\\012b"), "a\nb");
        assert_eq!(unescape("\\134"), "\\");
        // too short, not octal, or at the end: kept as is
        assert_eq!(unescape("a\\04"), "a\\04");
        assert_eq!(unescape("a\\08x"), "a\\08x");
        assert_eq!(unescape("a\\"), "a\\");
        assert_eq!(unescape(""), "");
    }
}
