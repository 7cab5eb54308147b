//! `/proc/PID/cgroup`: one `hierarchy-ID:controller-list:path` line per
//! hierarchy (cgroups(7)). cgroup v1 lines carry controllers
//! (`4:cpu,cpuacct:/a`, `1:name=systemd:/a`); the v2 line is `0::/path`.

use crate::ParseError;

/// One line of `/proc/PID/cgroup`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupEntry {
    /// Hierarchy id; 0 is the cgroup v2 unified hierarchy.
    pub hierarchy_id: u32,
    /// Controllers bound to the hierarchy (`cpu`, `cpuset`, `name=systemd`);
    /// empty for cgroup v2.
    pub controllers: Vec<String>,
    /// Path of the process's cgroup relative to the hierarchy's root.
    pub path: String,
}

impl CgroupEntry {
    /// The cgroup v2 (unified) line: id 0, no controllers.
    pub fn is_v2(&self) -> bool {
        self.hierarchy_id == 0 && self.controllers.is_empty()
    }
}

/// Parses `/proc/PID/cgroup`. Paths may contain `:`, so each line is split
/// at its first two colons only. Blank lines are ignored; a malformed line
/// is an error naming its (1-based) number.
pub fn parse(text: &str) -> Result<Vec<CgroupEntry>, ParseError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = || ParseError::CgroupLine {
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

/// The cgroup path of the hierarchy carrying `controller` (v1), or of the v2
/// hierarchy when `None`: where a process is, for moving it and back.
pub fn path_for<'a>(entries: &'a [CgroupEntry], controller: Option<&str>) -> Option<&'a str> {
    entries
        .iter()
        .find(|l| match controller {
            Some(c) => l.controllers.iter().any(|x| x == c),
            None => l.is_v2(),
        })
        .map(|l| l.path.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_v2_hybrid() {
        let text = "12:cpuset:/c\n11:cpu,cpuacct:/system.slice/a.service\n1:name=systemd:/system.slice/a.service\n0::/system.slice/a.service\n";
        let c = parse(text).unwrap();
        assert_eq!(c.len(), 4);
        assert_eq!(c[0].controllers, vec!["cpuset"]);
        assert_eq!(c[1].hierarchy_id, 11);
        assert_eq!(c[1].controllers, vec!["cpu", "cpuacct"]);
        assert_eq!(c[2].controllers, vec!["name=systemd"]);
        assert_eq!(c[3].hierarchy_id, 0);
        assert!(c[3].controllers.is_empty());
        assert!(c[3].is_v2() && !c[1].is_v2());
        assert_eq!(c[3].path, "/system.slice/a.service");
        assert_eq!(
            path_for(&c, Some("cpuacct")),
            Some("/system.slice/a.service")
        );
        assert_eq!(path_for(&c, Some("cpuset")), Some("/c"));
        assert_eq!(path_for(&c, Some("memory")), None);
        assert_eq!(path_for(&c, None), Some("/system.slice/a.service"));
    }

    #[test]
    fn named_hierarchy_and_colons_in_v1_paths() {
        let text =
            "9:name=systemd:/\n4:memory:/process_api/x:y\n2:cpu,cpuacct:/a\n0::/user.slice\n";
        let lines = parse(text).unwrap();
        assert_eq!(path_for(&lines, Some("cpu")), Some("/a"));
        assert_eq!(path_for(&lines, Some("cpuacct")), Some("/a"));
        assert_eq!(path_for(&lines, Some("memory")), Some("/process_api/x:y"));
        assert_eq!(path_for(&lines, None), Some("/user.slice"));
        assert_eq!(path_for(&lines, Some("cpuset")), None);
        assert_eq!(path_for(&lines, Some("name=systemd")), Some("/"));
    }

    #[test]
    fn pure_v1_has_no_v2_path() {
        let c = parse("4:cpu,cpuacct:/a\n3:freezer:/\n").unwrap();
        assert_eq!(path_for(&c, None), None);
        assert_eq!(path_for(&c, Some("freezer")), Some("/"));
    }

    #[test]
    fn path_with_colons_and_blank_lines() {
        let c = parse("0::/a:b:c\n\n").unwrap();
        assert_eq!(
            c,
            vec![CgroupEntry {
                hierarchy_id: 0,
                controllers: vec![],
                path: "/a:b:c".into()
            }]
        );
        assert_eq!(parse("").unwrap(), vec![]);
        assert_eq!(parse("0::").unwrap()[0].path, "");
        assert_eq!(
            parse("0::/process_api/x:y").unwrap()[0].path,
            "/process_api/x:y"
        );
    }

    #[test]
    fn errors_name_the_line() {
        assert_eq!(
            parse("0::/\nbogus\n"),
            Err(ParseError::CgroupLine {
                line_no: 2,
                line: "bogus".into()
            })
        );
        assert_eq!(
            parse("0::/\nbogus\n").unwrap_err().to_string(),
            "cgroup line 2: expected ID:CONTROLLERS:PATH, got \"bogus\""
        );
        assert!(parse("garbage").is_err());
        assert!(parse("0:/x").is_err());
        assert!(parse("x::/x").is_err());
        assert!(parse("x:cpu:/").is_err());
        assert!(parse("-1::/x").is_err());
    }
}
