//! `/proc/PID/maps`: which mapping an address falls in (proc(5)).

/// One line of `/proc/PID/maps`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Region {
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
    /// `rwxp`-style permissions.
    pub perms: String,
    /// Offset into the file.
    pub offset: u64,
    /// Inode (0 for anonymous memory).
    pub inode: u64,
    /// Path or pseudo-name (`[heap]`), empty for anonymous memory. A
    /// `(deleted)` suffix is kept: the file is gone but the mapping is not.
    pub path: String,
}

/// A parse failure: the line (1-based) and what was wrong.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[error("maps line {line}: {what}")]
pub struct MapsError {
    /// Line number.
    pub line: usize,
    /// What was wrong.
    pub what: &'static str,
}

/// Parses the text of a maps file. Never panics on bad input.
pub fn parse(text: &str) -> Result<Vec<Region>, MapsError> {
    let mut regions = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let err = |what| MapsError { line: i + 1, what };
        let mut fields = line.splitn(6, ' ').filter(|f| !f.is_empty());
        let range = fields.next().ok_or(err("no address range"))?;
        let (a, b) = range
            .split_once('-')
            .ok_or(err("address range without '-'"))?;
        let start = u64::from_str_radix(a, 16).map_err(|_| err("bad start address"))?;
        let end = u64::from_str_radix(b, 16).map_err(|_| err("bad end address"))?;
        if end < start {
            return Err(err("end before start"));
        }
        let perms = fields.next().ok_or(err("no permissions"))?.to_string();
        let offset = u64::from_str_radix(fields.next().ok_or(err("no offset"))?, 16)
            .map_err(|_| err("bad offset"))?;
        let _dev = fields.next().ok_or(err("no device"))?;
        let inode = fields
            .next()
            .ok_or(err("no inode"))?
            .parse::<u64>()
            .map_err(|_| err("bad inode"))?;
        // the path is the rest of the line after the inode, left-padded
        let path = line
            .splitn(6, ' ')
            .nth(5)
            .map(|p| p.trim_start().to_string())
            .unwrap_or_default();
        regions.push(Region {
            start,
            end,
            perms,
            offset,
            inode,
            path,
        });
    }
    regions.sort_by_key(|r| r.start);
    Ok(regions)
}

/// The region containing `addr` in regions sorted by start.
pub fn find(regions: &[Region], addr: u64) -> Option<&Region> {
    let i = regions.partition_point(|r| r.start <= addr);
    regions[..i].last().filter(|r| addr < r.end)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
55d0c9a00000-55d0c9a02000 r--p 00000000 fd:01 1837221                    /usr/bin/cat
7f1c2a000000-7f1c2e000000 rw-s 00000000 00:1a 12                         /dev/shm/pm file (deleted)
7f1c2e000000-7f1c2e021000 rw-p 00000000 00:00 0 
7ffd1a5c0000-7ffd1a5e1000 rw-p 00000000 00:00 0                          [stack]
";

    #[test]
    fn parses_paths_with_spaces_anonymous_and_pseudo_regions() {
        let r = parse(SAMPLE).expect("parses");
        assert_eq!(r.len(), 4);
        assert_eq!(r[1].path, "/dev/shm/pm file (deleted)");
        assert_eq!(r[1].perms, "rw-s");
        assert_eq!(r[2].path, "");
        assert_eq!(r[3].path, "[stack]");
        assert_eq!(find(&r, 0x7f1c2a001000).map(|x| x.inode), Some(12));
        assert_eq!(find(&r, 0x7f1c2e000000).map(|x| x.path.as_str()), Some(""));
        assert!(find(&r, 0x10).is_none());
        assert!(find(&r, 0x7f1c2e021000).is_none());
    }

    #[test]
    fn heap_vdso_and_unsorted_input() {
        let text = "\
7ffd1a5f0000-7ffd1a5f2000 r-xp 00000000 00:00 0                          [vdso]
55d0cb000000-55d0cb021000 rw-p 00000000 00:00 0                          [heap]
7f00000000-7f00001000 rw-s 00001000 103:02 77 /mnt/pmem0/a  b
";
        let r = parse(text).unwrap();
        assert_eq!(r.len(), 3);
        // sorted by start whatever the input order
        assert_eq!(r[0].path, "/mnt/pmem0/a  b", "inner spaces are kept");
        assert_eq!(r[0].offset, 0x1000);
        assert_eq!(r[1].path, "[heap]");
        assert_eq!(r[1].inode, 0);
        assert_eq!(r[2].path, "[vdso]");
        assert_eq!(
            find(&r, 0x55d0cb000000).map(|x| x.path.as_str()),
            Some("[heap]")
        );
        assert_eq!(parse("").unwrap(), vec![]);
        assert_eq!(
            parse("10-20 r--p 0 0:0 0\n10-20 r--p 0 0:0 x\n")
                .unwrap_err()
                .to_string(),
            "maps line 2: bad inode"
        );
    }

    #[test]
    fn bad_lines_are_errors_with_their_number_and_never_panics() {
        assert_eq!(parse("zz-10 r--p 0 0:0 0\n").unwrap_err().line, 1);
        assert!(parse("10-5 r--p 0 0:0 0").is_err());
        assert!(parse("\n10-20 r--p").unwrap_err().line == 2);
        // fuzz: random bytes and truncations of a valid file
        let mut x: u64 = 0x9e3779b97f4a7c15;
        for n in 0..5000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let cut = (x as usize) % (SAMPLE.len() + 1);
            let mut text: Vec<u8> = SAMPLE.as_bytes()[..cut].to_vec();
            if n % 2 == 0 {
                let at = (x >> 20) as usize % (text.len() + 1);
                text.insert(at, (x >> 40) as u8);
            }
            let _ = parse(&String::from_utf8_lossy(&text));
        }
    }
}
