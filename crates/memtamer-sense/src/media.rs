//! Optane DIMM media counters from `ipmctl show -dimm -performance`: media
//! reads and writes (64 B units) per DIMM. Slow to read (milliseconds,
//! through ACPI; Dicio §4.1), so they are read off the hot path and carry
//! their age.

use memtamer_core::DimmObs;

/// One DIMM's cumulative counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MediaCounters {
    /// The DIMM's handle (`DimmID=0x0001`).
    pub dimm_id: u32,
    /// 64 B media reads since power-on.
    pub media_reads: u64,
    /// 64 B media writes since power-on.
    pub media_writes: u64,
    /// 64 B read requests the DIMM received (DDR-T).
    pub read_requests: u64,
    /// 64 B write requests the DIMM received.
    pub write_requests: u64,
}

/// A parse failure with its line.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("ipmctl output line {line}: {what}")]
pub struct MediaError {
    /// Line (1-based).
    pub line: usize,
    /// What is wrong.
    pub what: String,
}

fn hex(value: &str) -> Option<u64> {
    let v = value
        .trim()
        .trim_start_matches("0x")
        .trim_start_matches("0X");
    // ipmctl prints 128-bit values; anything above u64 saturates
    u128::from_str_radix(v, 16)
        .ok()
        .map(|x| u64::try_from(x).unwrap_or(u64::MAX))
}

/// Parses `ipmctl show -dimm -performance` output. Unknown keys are
/// ignored (newer ipmctl versions add some); a bad value is an error.
pub fn parse_ipmctl(text: &str) -> Result<Vec<MediaCounters>, MediaError> {
    let mut out: Vec<MediaCounters> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        let err = |what: &str| MediaError {
            line: i + 1,
            what: what.to_string(),
        };
        if let Some(id) = line
            .strip_prefix("---DimmID=")
            .and_then(|r| r.strip_suffix("---"))
        {
            let id = hex(id)
                .filter(|v| *v <= u64::from(u32::MAX))
                .ok_or_else(|| err("bad DimmID"))?;
            out.push(MediaCounters {
                dimm_id: id as u32,
                ..Default::default()
            });
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            return Err(err("expected Key=Value"));
        };
        let Some(current) = out.last_mut() else {
            return Err(err("a counter before any ---DimmID=...--- header"));
        };
        let slot = match key.trim() {
            "MediaReads" => &mut current.media_reads,
            "MediaWrites" => &mut current.media_writes,
            "ReadRequests" => &mut current.read_requests,
            "WriteRequests" => &mut current.write_requests,
            _ => continue,
        };
        *slot = hex(value).ok_or_else(|| err(&format!("bad value for {}", key.trim())))?;
    }
    Ok(out)
}

/// The window between two readings of the DIMMs, as `DimmObs` (bytes;
/// `age_ns` is how old `after` is when the window is reported).
pub fn dimm_obs(
    before: &[MediaCounters],
    after: &[MediaCounters],
    window_ns: u64,
    age_ns: u64,
) -> Vec<DimmObs> {
    after
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let b = before.iter().find(|b| b.dimm_id == a.dimm_id);
            DimmObs {
                dimm: i as u32,
                media_read_bytes: b.map(|b| a.media_reads.wrapping_sub(b.media_reads) * 64),
                media_write_bytes: b.map(|b| a.media_writes.wrapping_sub(b.media_writes) * 64),
                interval_ns: Some(window_ns),
                age_ns: Some(age_ns),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Recorded from `ipmctl show -dimm -performance` (ipmctl 02.00, two DIMMs).
    const RECORDED: &str = "\
 ---DimmID=0x0001---
   MediaReads=0x000000000000000000000000000d7c15
   MediaWrites=0x00000000000000000000000000054b20
   ReadRequests=0x00000000000000000000000000249d15
   WriteRequests=0x000000000000000000000000002c7f8a
   TotalMediaReads=0x0000000000000000000000000016a27c
 ---DimmID=0x0101---
   MediaReads=0x0000000000000000000000000000000a
   MediaWrites=0x00000000000000000000000000000014
";

    #[test]
    fn recorded_output_parses_and_becomes_byte_counts() {
        let d = parse_ipmctl(RECORDED).expect("parses");
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].dimm_id, 1);
        assert_eq!(d[0].media_reads, 0xd7c15);
        assert_eq!(d[0].write_requests, 0x2c7f8a);
        assert_eq!(d[1].dimm_id, 0x101);
        let mut later = d.clone();
        later[0].media_writes += 1000;
        later[1].media_reads += 1;
        let obs = dimm_obs(&d, &later, 5_000_000, 4_500_000);
        assert_eq!(obs[0].media_write_bytes, Some(64_000));
        assert_eq!(obs[1].media_read_bytes, Some(64));
        assert_eq!(obs[0].age_ns, Some(4_500_000));
        // a DIMM missing from the earlier reading is unknown, not zero
        let obs = dimm_obs(&d[..1], &later, 1, 0);
        assert_eq!(obs[1].media_read_bytes, None);
    }

    #[test]
    fn bad_output_names_the_line_and_never_panics() {
        assert_eq!(parse_ipmctl("MediaReads=0x1").unwrap_err().line, 1);
        assert_eq!(
            parse_ipmctl("---DimmID=0x1---\nMediaReads=zz")
                .unwrap_err()
                .line,
            2
        );
        assert!(parse_ipmctl("---DimmID=0x1---\nno equals sign").is_err());
        assert_eq!(
            parse_ipmctl("---DimmID=0x1---\nMediaReads=0xffffffffffffffffffffffffffffffff")
                .expect("saturates")[0]
                .media_reads,
            u64::MAX
        );
        let mut x: u64 = 88172645463325252;
        for _ in 0..3000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let cut = (x as usize) % (RECORDED.len() + 1);
            let mut t = RECORDED.as_bytes()[..cut].to_vec();
            let at = (x >> 24) as usize % (t.len() + 1);
            t.insert(at, b"=-x\n0"[(x >> 50) as usize % 5]);
            let _ = parse_ipmctl(&String::from_utf8_lossy(&t));
        }
    }
}
