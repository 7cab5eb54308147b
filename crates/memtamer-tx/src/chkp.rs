//! The checkpoint format (thesis §5.4.1 "CHKP" and "CHKP-diff", §5.4.6):
//! pure encoding and the read side of recovery's checkpoint path.
//!
//! ```text
//! chkp_off          record 0, record 1 (one 64 B line each; epoch e in e % 2)
//! chkp_off + 4096   CHKP-diff log 0, log 1 (log_cap x 16 B; epoch e in e % 2)
//!                   CHKP table: 64 B lines of 15 x u32 committed locations
//!                   (data line + 1, 0 = none) for ids 15k..15k+14, + u32 check
//! ```
//! A record (epoch, clock, nids) commits a checkpoint: CHKP holds, for ids
//! below `nids`, the lookup table as of that checkpoint. Every extent the
//! allocator takes from the global free list afterwards is appended to the
//! epoch's log, persisted before any block in it is written, so recovery
//! loads CHKP, then scans only the logged extents (the thesis's "fetched
//! segments"). Checks are keyed by the pool's salt and by position (record
//! slot, log epoch and index, CHKP line), so torn, stale or corrupted parts
//! are recognised; a checkpoint that cannot be trusted makes recovery fall
//! back to the full scan, never to a guess.

use crate::layout::{self, PoolHeader, CHKP_PER_LINE, LINE};
use crate::region::Region;

const REC_MAGIC: [u8; 8] = *b"MTXCHKP\0";
/// Log entry start word of the overflow marker (len 0).
pub const OVERFLOW: u32 = u32::MAX;

/// A checkpoint record: what CHKP holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    /// Checkpoint number (1 = written at pool creation).
    pub epoch: u64,
    /// Global timestamp at the checkpoint: above every TxID in CHKP.
    pub clock: u64,
    /// CHKP holds ids `1..nids`.
    pub nids: u32,
}

fn rd32(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}
fn rd64(b: &[u8], o: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[o..o + 8]);
    u64::from_le_bytes(a)
}

fn rec_check(salt: u64, slot: u64, b: &[u8]) -> u64 {
    layout::mix(salt ^ slot.rotate_left(7) ^ layout::fnv1a(&b[..32])) | 1
}

/// Encodes `r` for record slot `r.epoch % 2`.
pub fn encode_record(salt: u64, r: &Record) -> [u8; LINE] {
    let mut b = [0u8; LINE];
    b[0..8].copy_from_slice(&REC_MAGIC);
    b[8..16].copy_from_slice(&r.epoch.to_le_bytes());
    b[16..24].copy_from_slice(&r.clock.to_le_bytes());
    b[24..28].copy_from_slice(&r.nids.to_le_bytes());
    let c = rec_check(salt, r.epoch & 1, &b);
    b[32..40].copy_from_slice(&c.to_le_bytes());
    b
}

/// What a record slot holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordSlot {
    /// All zero: never written.
    Empty,
    /// A valid record.
    Valid(Record),
    /// Torn (a crash while writing it) or corrupted.
    Invalid,
}

/// Decodes record slot `slot` (its epoch must have that parity).
pub fn decode_record(salt: u64, slot: u64, b: &[u8]) -> RecordSlot {
    if b.len() < LINE {
        return RecordSlot::Invalid;
    }
    if b[..LINE].iter().all(|x| *x == 0) {
        return RecordSlot::Empty;
    }
    let r = Record {
        epoch: rd64(b, 8),
        clock: rd64(b, 16),
        nids: rd32(b, 24),
    };
    let ok = b[0..8] == REC_MAGIC
        && r.epoch & 1 == slot & 1
        && r.epoch > 0
        && rd64(b, 32) == rec_check(salt, slot & 1, b)
        && b[40..].iter().all(|x| *x == 0);
    if ok {
        RecordSlot::Valid(r)
    } else {
        RecordSlot::Invalid
    }
}

fn entry_check(salt: u64, epoch: u64, i: u32, start: u32, len: u32) -> u64 {
    let x = salt ^ epoch.rotate_left(40) ^ u64::from(i) << 20;
    layout::mix(layout::mix(x) ^ (u64::from(start) << 32 | u64::from(len))) | 1
}

/// Encodes log entry `i` of `epoch`: extent `start..start+len` was fetched.
pub fn encode_entry(salt: u64, epoch: u64, i: u32, start: u32, len: u32) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[0..4].copy_from_slice(&start.to_le_bytes());
    b[4..8].copy_from_slice(&len.to_le_bytes());
    b[8..16].copy_from_slice(&entry_check(salt, epoch, i, start, len).to_le_bytes());
    b
}

/// Decodes log entry `i` of `epoch`: `(start, len)` if validly written in
/// that epoch (entries of other epochs at the same place do not validate).
pub fn decode_entry(salt: u64, epoch: u64, i: u32, b: &[u8]) -> Option<(u32, u32)> {
    if b.len() < 16 {
        return None;
    }
    let (s, n) = (rd32(b, 0), rd32(b, 4));
    (rd64(b, 8) == entry_check(salt, epoch, i, s, n)).then_some((s, n))
}

fn line_check(salt: u64, l: u32, b: &[u8]) -> u32 {
    let x = layout::mix(salt ^ u64::from(l) << 24 ^ layout::fnv1a(&b[..60]));
    (x as u32) | 1
}

/// Encodes CHKP line `l` from its 15 locations.
pub fn encode_line(salt: u64, l: u32, locs: &[u32; CHKP_PER_LINE as usize]) -> [u8; LINE] {
    let mut b = [0u8; LINE];
    for (i, v) in locs.iter().enumerate() {
        b[i * 4..i * 4 + 4].copy_from_slice(&v.to_le_bytes());
    }
    let c = line_check(salt, l, &b);
    b[60..64].copy_from_slice(&c.to_le_bytes());
    b
}

/// Decodes CHKP line `l`, or None if its check fails.
pub fn decode_line(salt: u64, l: u32, b: &[u8]) -> Option<[u32; CHKP_PER_LINE as usize]> {
    if b.len() < LINE || rd32(b, 60) != line_check(salt, l, b) {
        return None;
    }
    let mut out = [0u32; CHKP_PER_LINE as usize];
    for (i, v) in out.iter_mut().enumerate() {
        *v = rd32(b, i * 4);
    }
    Some(out)
}

/// A checkpoint recovery can start from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loaded {
    /// The record in force.
    pub rec: Record,
    /// `(id, data line)` of every CHKP entry (ids below `rec.nids`).
    pub entries: Vec<(u32, u32)>,
    /// Logged extents, sorted and merged (touching ones too).
    pub extents: Vec<(u32, u32)>,
    /// Valid entries in the epoch's log (the next append goes there).
    pub log_len: u32,
}

/// Why the checkpoint path was not taken (recovery then scans everything).
pub type Unusable = String;

/// The newest valid record, if the checkpoint area allows one to be trusted.
pub fn pick_record(h: &PoolHeader, region: &Region) -> Result<Record, Unusable> {
    let r0 = decode_record(h.salt, 0, region.bytes(h.record_off(0), LINE));
    let r1 = decode_record(h.salt, 1, region.bytes(h.record_off(1), LINE));
    let rec = match (r0, r1) {
        (RecordSlot::Valid(a), RecordSlot::Valid(b)) => {
            let (lo, hi) = if a.epoch < b.epoch { (a, b) } else { (b, a) };
            if hi.epoch != lo.epoch + 1 {
                return Err(format!(
                    "checkpoint records of epochs {} and {} are not consecutive",
                    lo.epoch, hi.epoch
                ));
            }
            hi
        }
        (RecordSlot::Valid(a), _) | (_, RecordSlot::Valid(a)) => a,
        (RecordSlot::Empty, RecordSlot::Empty) => return Err("no checkpoint record".into()),
        _ => return Err("no valid checkpoint record (torn or corrupted)".into()),
    };
    // A newer epoch that logged a fetch proves its record existed: it was
    // lost (corrupted), and CHKP may already hold its contents.
    let next = rec.epoch + 1;
    let in_use = (0..h.log_cap)
        .any(|i| decode_entry(h.salt, next, i, region.bytes(h.log_off(next, i), 16)).is_some());
    if in_use {
        return Err(format!(
            "checkpoint record of epoch {next} is missing but its log is in use"
        ));
    }
    if rec.nids as u64 > u64::from(h.chkp_lines) * u64::from(CHKP_PER_LINE) {
        return Err(format!(
            "checkpoint record covers {} ids, CHKP holds {}",
            rec.nids,
            u64::from(h.chkp_lines) * u64::from(CHKP_PER_LINE)
        ));
    }
    Ok(rec)
}

/// Reads the log of `rec`'s epoch: `(merged extents, valid entries)`.
pub fn read_log(
    h: &PoolHeader,
    region: &Region,
    rec: &Record,
) -> Result<(Vec<(u32, u32)>, u32), Unusable> {
    let nlines = h.nlines();
    let mut ext = Vec::new();
    let mut n = 0u32;
    while n < h.log_cap {
        let Some((s, len)) = decode_entry(
            h.salt,
            rec.epoch,
            n,
            region.bytes(h.log_off(rec.epoch, n), 16),
        ) else {
            break;
        };
        if s == OVERFLOW && len == 0 {
            return Err(format!("CHKP-diff log of epoch {} overflowed", rec.epoch));
        }
        if len == 0 || u64::from(s) + u64::from(len) > u64::from(nlines) {
            return Err(format!(
                "CHKP-diff entry {n}: extent {s}+{len} outside the data area"
            ));
        }
        ext.push((s, len));
        n += 1;
    }
    // Entries are appended in order: a valid one after the first invalid
    // one means the log was damaged in the middle.
    for i in n + 1..h.log_cap {
        if decode_entry(
            h.salt,
            rec.epoch,
            i,
            region.bytes(h.log_off(rec.epoch, i), 16),
        )
        .is_some()
        {
            return Err(format!(
                "CHKP-diff entry {n} of epoch {} is damaged",
                rec.epoch
            ));
        }
    }
    Ok((merge(ext), n))
}

/// Sorts and merges overlapping or touching extents.
pub fn merge(mut ext: Vec<(u32, u32)>) -> Vec<(u32, u32)> {
    ext.sort_unstable();
    let mut out: Vec<(u32, u32)> = Vec::with_capacity(ext.len());
    for (s, n) in ext {
        match out.last_mut() {
            Some((ms, mn)) if u64::from(*ms) + u64::from(*mn) >= u64::from(s) => {
                let end = (u64::from(*ms) + u64::from(*mn)).max(u64::from(s) + u64::from(n));
                *mn = (end - u64::from(*ms)) as u32;
            }
            _ => out.push((s, n)),
        }
    }
    out
}

/// Whether `line` lies in one of the merged, sorted `ext`.
pub fn covered(ext: &[(u32, u32)], line: u32) -> bool {
    let i = ext.partition_point(|(s, _)| *s <= line);
    i > 0 && {
        let (s, n) = ext[i - 1];
        u64::from(line) < u64::from(s) + u64::from(n)
    }
}

/// Loads the checkpoint: record, CHKP entries, log extents.
pub fn load(h: &PoolHeader, region: &Region) -> Result<Loaded, Unusable> {
    let rec = pick_record(h, region)?;
    let (extents, log_len) = read_log(h, region, &rec)?;
    let nlines = h.nlines();
    let mut entries = Vec::new();
    let lines = rec.nids.div_ceil(CHKP_PER_LINE);
    for l in 0..lines {
        let b = region.bytes(h.chkp_line_off(l), LINE);
        let locs =
            decode_line(h.salt, l, b).ok_or_else(|| format!("CHKP line {l} fails its check"))?;
        for (i, loc) in locs.iter().enumerate() {
            let id = l * CHKP_PER_LINE + i as u32;
            if *loc == 0 || id == 0 || id >= rec.nids {
                continue;
            }
            if *loc > nlines {
                return Err(format!(
                    "CHKP entry of object {id}: line {} outside the data area",
                    loc - 1
                ));
            }
            entries.push((id, loc - 1));
        }
    }
    Ok(Loaded {
        rec,
        entries,
        extents,
        log_len,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_validate_only_in_their_slot() {
        let r = Record {
            epoch: 7,
            clock: 99,
            nids: 40,
        };
        let b = encode_record(5, &r);
        assert_eq!(decode_record(5, 1, &b), RecordSlot::Valid(r));
        assert_eq!(decode_record(5, 0, &b), RecordSlot::Invalid);
        assert_eq!(decode_record(6, 1, &b), RecordSlot::Invalid);
        assert_eq!(decode_record(5, 1, &[0u8; LINE]), RecordSlot::Empty);
        for i in 0..LINE {
            let mut x = b;
            x[i] ^= 0x10;
            assert_eq!(decode_record(5, 1, &x), RecordSlot::Invalid, "byte {i}");
        }
    }

    #[test]
    fn entries_are_keyed_by_epoch_and_index() {
        let b = encode_entry(3, 4, 2, 100, 64);
        assert_eq!(decode_entry(3, 4, 2, &b), Some((100, 64)));
        assert_eq!(decode_entry(3, 6, 2, &b), None);
        assert_eq!(decode_entry(3, 4, 3, &b), None);
        assert_eq!(decode_entry(3, 4, 2, &[0u8; 16]), None);
    }

    #[test]
    fn lines_round_trip_and_reject_damage() {
        let mut locs = [0u32; 15];
        locs[3] = 77;
        let b = encode_line(9, 4, &locs);
        assert_eq!(decode_line(9, 4, &b), Some(locs));
        assert_eq!(decode_line(9, 5, &b), None);
        assert_eq!(
            decode_line(9, 0, &[0u8; LINE]),
            None,
            "a zeroed line is not valid"
        );
        let mut x = b;
        x[12] ^= 1;
        assert_eq!(decode_line(9, 4, &x), None);
    }

    #[test]
    fn merge_and_cover() {
        let m = merge(vec![(10, 5), (0, 3), (15, 2), (3, 1), (40, 1)]);
        assert_eq!(m, vec![(0, 4), (10, 7), (40, 1)]);
        assert!(covered(&m, 0) && covered(&m, 3) && !covered(&m, 4));
        assert!(covered(&m, 16) && !covered(&m, 17) && covered(&m, 40) && !covered(&m, 41));
    }
}
