//! Recovery (thesis §5.4.5-5.4.6), both paths:
//!
//! * **full scan**: every line of the data area is examined for a valid
//!   object header;
//! * **checkpoint + fetched segments**: the CHKP entries (each confirmed by
//!   the header at its location) plus a scan of only the extents logged in
//!   CHKP-diff since that checkpoint.
//!
//! Both feed the same judge (newest committed copy per id wins, uncommitted
//! and stale copies are dropped and their headers zeroed), so both build the
//! same lookup table and free list; a checkpoint that cannot be trusted
//! (`chkp::load` says why) makes recovery take the full scan and write a
//! fresh checkpoint afterwards.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;

use crate::alloc::FreeList;
use crate::chkp;
use crate::dirty::DirtyTracker;
use crate::error::PoolError;
use crate::layout::{self, ObjHeader, PoolHeader, SlotState, LINE, OBJ_HDR, SLOTS_OFF};
use crate::pool::checkpoint::{ChkpState, LogState};
use crate::pool::{Faults, Pool, PoolOptions, PoolStats, RecoveryReport, SlotCtx, SlotDram};
use crate::region::{PersistStats, Region};
use crate::table::Table;

/// Fault injection for `tests/crash_scan_fault.rs` (its own process): the
/// scan skips the lines of every block whose header it finds, as it did
/// while the GC zeroed every freed header. With stale headers left in
/// freed blocks, a stale block that overlaps a newer one hides that one's
/// header from such a scan.
#[doc(hidden)]
pub static SCAN_SKIPS_BLOCKS: AtomicBool = AtomicBool::new(false);

/// Which recovery path `Pool::open` takes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RecoveryMode {
    /// The checkpoint path when the checkpoint is valid, else the full scan.
    #[default]
    Auto,
    /// Always the full scan (the checkpoint is kept up to date regardless).
    FullScan,
}

/// Newest committed copy per id: a vector indexed by id (ids are dense,
/// `1..next_id`), grown to the largest id seen; `id == 0` marks a hole.
#[derive(Default)]
struct IdMap {
    v: Vec<(u32, ObjHeader)>,
    len: usize,
}

const HOLE: (u32, ObjHeader) = (
    0,
    ObjHeader {
        id: 0,
        size: 0,
        txid: 0,
    },
);

impl IdMap {
    fn get(&self, id: u32) -> Option<(u32, ObjHeader)> {
        self.v.get(id as usize).copied().filter(|(_, h)| h.id != 0)
    }
    fn contains(&self, id: u32) -> bool {
        self.get(id).is_some()
    }
    fn insert(&mut self, id: u32, line: u32, h: ObjHeader) {
        let i = id as usize;
        if i >= self.v.len() {
            self.v.resize(i + 1, HOLE);
        }
        if self.v[i].1.id == 0 {
            self.len += 1;
        }
        self.v[i] = (line, h);
    }
    fn iter(&self) -> impl Iterator<Item = (u32, u32, ObjHeader)> + '_ {
        self.v
            .iter()
            .enumerate()
            .filter(|(_, (_, h))| h.id != 0)
            .map(|(i, (l, h))| (i as u32, *l, *h))
    }
}

struct Judge<'a> {
    region: &'a Region,
    hdr: &'a PoolHeader,
    records: Vec<(u64, SlotState)>,
    max_ts: u64,
    rep: RecoveryReport,
    unfinished: std::collections::HashSet<u64>,
    best: IdMap,
    drop_copies: Vec<(u32, u32)>,
    drop_tombs: Vec<(u32, u32)>,
}

impl Judge<'_> {
    fn corrupt(&self, line: u32, why: String) -> PoolError {
        PoolError::Corrupted {
            path: self.region.path().into(),
            offset: u64::from(line) * LINE as u64,
            why,
        }
    }

    fn header(&self, line: u32) -> Option<ObjHeader> {
        let off = self.hdr.data_off as usize + line as usize * LINE;
        layout::decode_obj(self.hdr.salt, line, self.region.bytes(off, OBJ_HDR))
    }

    /// Judges the copy `h` at `line`; returns its length in lines.
    fn copy(&mut self, line: u32, h: ObjHeader) -> Result<u32, PoolError> {
        let n = h.lines();
        if u64::from(line) + u64::from(n) > u64::from(self.hdr.nlines()) {
            return Err(self.corrupt(
                line,
                format!("object {} of {} lines runs past the data area", h.id, n),
            ));
        }
        let (slot, t) = layout::untag_txid(h.txid);
        let Some(&(st, ss)) = self.records.get(slot as usize) else {
            return Err(self.corrupt(
                line,
                format!(
                    "object {} written by slot {slot} of {}",
                    h.id, self.hdr.nslots
                ),
            ));
        };
        self.max_ts = self.max_ts.max(t);
        if !layout::copy_committed(t, st, ss) {
            self.rep.uncommitted += 1;
            self.unfinished.insert(t);
            self.drop_copies.push((line, n));
            return Ok(n);
        }
        if h.id >= self.hdr.nlines().saturating_add(2) {
            return Err(self.corrupt(line, format!("object id {} beyond the id space", h.id)));
        }
        match self.best.get(h.id) {
            Some((_, b)) if layout::untag_txid(b.txid).1 == t => {
                return Err(self.corrupt(
                    line,
                    format!("object {} has two copies from TxID {t}", h.id),
                ));
            }
            Some((_, b)) if layout::untag_txid(b.txid).1 > t => {
                self.rep.stale += 1;
                self.push_drop(line, &h);
            }
            prev => {
                if let Some((pl, ph)) = prev {
                    self.rep.stale += 1;
                    self.push_drop(pl, &ph);
                }
                self.best.insert(h.id, line, h);
            }
        }
        Ok(n)
    }

    fn push_drop(&mut self, line: u32, h: &ObjHeader) {
        if h.is_tombstone() {
            self.drop_tombs.push((line, h.lines()));
        } else {
            self.drop_copies.push((line, h.lines()));
        }
    }

    /// The checkpoint path: CHKP entries confirmed by their headers (those
    /// inside logged extents are left to the scan), then the logged extents;
    /// the blocks found must not overlap.
    fn judge_checkpoint(&mut self, c: &chkp::Loaded) -> Result<(), PoolError> {
        self.rep.checkpoint_epoch = c.rec.epoch;
        self.max_ts = self.max_ts.max(c.rec.clock);
        for &(id, line) in &c.entries {
            if chkp::covered(&c.extents, line) {
                continue;
            }
            match self.header(line) {
                Some(h) if h.id == id => {
                    self.copy(line, h)?;
                }
                _ => self.rep.chkp_superseded += 1,
            }
        }
        self.scan(&c.extents)?;
        self.winners_disjoint()
    }

    /// The winning blocks (the newest committed version of each id) must
    /// not overlap; dropped ones may (a stale block's lines are reused).
    fn winners_disjoint(&self) -> Result<(), PoolError> {
        let mut all: Vec<(u32, u32)> = self.best.iter().map(|(_, l, h)| (l, h.lines())).collect();
        all.sort_unstable();
        for w in all.windows(2) {
            if w[0].0 + w[0].1 > w[1].0 {
                return Err(self.corrupt(
                    w[1].0,
                    format!(
                        "block at line {} overlaps the block at line {}",
                        w[1].0, w[0].0
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Scans the sorted, disjoint `ranges`, every line: the lines of a
    /// block found are examined too, since a stale block (its header not
    /// zeroed when it was freed) may overlap newer blocks (see `Pool::gc`).
    fn scan(&mut self, ranges: &[(u32, u32)]) -> Result<(), PoolError> {
        let skip = SCAN_SKIPS_BLOCKS.load(Ordering::Relaxed);
        let mut line = 0u32;
        for &(s, n) in ranges {
            line = line.max(s);
            let end = s + n;
            while line < end {
                self.rep.scanned_lines += 1;
                match self.header(line) {
                    Some(h) => {
                        let n = self.copy(line, h)?;
                        line += if skip { n } else { 1 };
                    }
                    None => line += 1,
                }
            }
        }
        Ok(())
    }
}

impl Pool {
    /// Recovery at open: the checkpoint path when possible (and allowed by
    /// `o.recovery`), else the full scan; then the same judge, zeroing,
    /// lookup table and free list for both.
    pub(crate) fn recover(
        region: Region,
        hdr: PoolHeader,
        o: &PoolOptions,
    ) -> Result<Pool, PoolError> {
        let mut records = Vec::with_capacity(hdr.nslots as usize);
        let mut max_ts = 1u64;
        for s in 0..hdr.nslots as usize {
            let b = region.bytes(SLOTS_OFF as usize + s * LINE, 16);
            let w = u64::from_le_bytes(b[0..8].try_into().unwrap_or([0; 8]));
            let c = u64::from_le_bytes(b[8..16].try_into().unwrap_or([0; 8]));
            let (txid, st) = layout::slot_unpack(w);
            max_ts = max_ts.max(txid).max(c);
            records.push((txid, st));
        }
        let nlines = hdr.nlines();
        let mut loaded = chkp::load(&hdr, &region);
        let judge = || Judge {
            region: &region,
            hdr: &hdr,
            records: records.clone(),
            max_ts,
            rep: RecoveryReport::default(),
            unfinished: Default::default(),
            best: IdMap::default(),
            drop_copies: Vec::new(),
            drop_tombs: Vec::new(),
        };
        let mut j = judge();
        let via_chkp = match (&loaded, o.recovery) {
            (Ok(c), RecoveryMode::Auto) => Some(j.judge_checkpoint(c)),
            _ => None,
        };
        match via_chkp {
            Some(Ok(())) => {}
            Some(Err(e)) => {
                // A checkpoint that contradicts the object headers is not
                // trusted: scan everything and write a fresh one.
                let why = format!("checkpoint path failed: {e}");
                j = judge();
                j.rep.fallback = Some(why.clone());
                j.scan(&[(0, nlines)])?;
                j.winners_disjoint()?;
                loaded = Err(why);
            }
            None => {
                if let Err(why) = &loaded {
                    j.rep.fallback = Some(why.clone());
                }
                j.scan(&[(0, nlines)])?;
                j.winners_disjoint()?;
            }
        }
        let Judge {
            mut rep,
            unfinished,
            best,
            drop_copies,
            drop_tombs,
            max_ts,
            ..
        } = j;
        rep.unfinished_tx = unfinished.len() as u64;
        // Deletion records that won: the id is free, but the record stays
        // (its line used, the id's table `old`) until the id is reused, so
        // the id's older copies stay superseded (see `Pool::gc`).
        rep.tombstones = best.iter().filter(|(_, _, h)| h.is_tombstone()).count() as u64;
        let corrupt = |offset: u64, why: String| PoolError::Corrupted {
            path: region.path().into(),
            offset,
            why,
        };
        if !best.contains(hdr.root_id) {
            return Err(corrupt(0, format!("root object {} missing", hdr.root_id)));
        }
        let mut st = PersistStats::default();
        let zeros = [0u8; OBJ_HDR];
        // The winning blocks' lines, sorted: a dropped "header" inside one is
        // that block's payload (a stale header its copy overwrote only in
        // part) and is left alone; the gaps between them are the free space.
        let mut used: Vec<(u32, u32)> = best.iter().map(|(_, l, h)| (l, h.lines())).collect();
        used.sort_unstable();
        let inside = |l: u32| {
            let i = used.partition_point(|&(s, _)| s <= l);
            i > 0 && {
                let (s, n) = used[i - 1];
                l > s && l < s + n
            }
        };
        for phase in [&drop_copies, &drop_tombs] {
            for (l, _) in phase {
                if inside(*l) {
                    continue;
                }
                let off = hdr.data_off as usize + *l as usize * LINE;
                region.write(off, &zeros);
                region.flush(off, OBJ_HDR, &mut st);
            }
            region.fence(&mut st);
        }
        for s in 0..hdr.nslots as usize {
            let off = SLOTS_OFF as usize + s * LINE;
            let w = u64::from_le_bytes(region.bytes(off, 8).try_into().unwrap_or([0; 8]));
            let (txid, state) = layout::slot_unpack(w);
            if matches!(state, SlotState::Begin | SlotState::Abort) {
                region.write(off, &layout::slot_word(txid, SlotState::End).to_le_bytes());
                region.flush(off, 8, &mut st);
            }
        }
        region.fence(&mut st);

        let cap = nlines.saturating_add(2).min(u32::MAX - 1);
        let table = Table::new(cap).map_err(|source| PoolError::Io {
            path: region.path().into(),
            op: "mmap lookup table",
            source,
        })?;
        let mut max_id = hdr.root_id;
        for (id, l, _) in best.iter() {
            let e = table.get(id).ok_or_else(|| {
                corrupt(
                    u64::from(l) * LINE as u64,
                    format!("object id {id} beyond table capacity {cap}"),
                )
            })?;
            e.set_old_unshared(l + 1);
            max_id = max_id.max(id);
        }
        let mut gaps = Vec::with_capacity(used.len() + 1);
        let mut cur = 0u32;
        for (l, n) in &used {
            gaps.push((cur, l - cur));
            cur = l + n;
        }
        gaps.push((cur, nlines - cur));
        let mut free = FreeList::default();
        free.absorb_runs(&mut gaps);
        rep.objects = best.len as u64 - rep.tombstones;
        rep.free_lines = free.total();
        let spare: Vec<u32> = (1..=max_id)
            .rev()
            .filter(|id| best.get(*id).is_none_or(|(_, h)| h.is_tombstone()))
            .collect();

        let (tbase, tlen) = table.raw();
        let tracker = DirtyTracker::new(tbase, tlen);
        let log = match &loaded {
            Ok(c) => LogState {
                epoch: c.rec.epoch,
                next: c.log_len,
                nids: c.rec.nids,
                full: true,
                ..LogState::default()
            },
            Err(_) => LogState {
                epoch: newest_epoch(&hdr, &region),
                full: true,
                reset: true,
                ..LogState::default()
            },
        };
        let fresh = loaded.is_err();
        let nslots = hdr.nslots as usize;
        let pool = Pool {
            hdr,
            table,
            clock: AtomicU64::new(max_ts + 1),
            states: (0..nslots).map(|_| SlotDram::default()).collect(),
            slots: (0..nslots)
                .map(|_| Mutex::new(SlotCtx::default()))
                .collect(),
            global: Mutex::new(free),
            recycle: Mutex::new(Vec::new()),
            next_id: AtomicU32::new(max_id + 1),
            spare_ids: Mutex::new(spare),
            segment_lines: o.segment_lines.max(1),
            gc_batch: o.gc_batch.max(1),
            totals: Mutex::new(PoolStats::default()),
            recovery: rep,
            faults: Faults::default(),
            chkp: ChkpState::new(tracker, log),
            defrag_on: std::sync::atomic::AtomicBool::new(o.defrag),
            region,
        };
        if fresh {
            // The checkpoint could not be used: write one that can.
            pool.checkpoint().map_err(|e| PoolError::Corrupted {
                path: pool.region.path().into(),
                offset: 0,
                why: format!("writing a fresh checkpoint: {e}"),
            })?;
        }
        Ok(pool)
    }
}

/// What recovery rebuilt, for comparing the two paths: `(id, data line)`
/// of every live object, the global free list's extents, the next fresh id
/// and the spare ids.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecoveredState {
    /// Live objects and their lines, by id.
    pub objects: Vec<(u32, u32)>,
    /// Free extents.
    pub free: Vec<(u32, u32)>,
    /// Next never-used id.
    pub next_id: u32,
    /// Freed ids to reuse.
    pub spare_ids: Vec<u32>,
}

impl Pool {
    /// The volatile state recovery built (call before any transaction).
    pub fn recovered_state(&self) -> RecoveredState {
        use std::sync::atomic::Ordering;
        let max = self.next_id.load(Ordering::Relaxed).min(self.table.cap());
        let objects = (1..max)
            .filter_map(|id| {
                let old = self.table.get(id)?.snap().old;
                (old != 0).then(|| (id, old - 1))
            })
            .collect();
        RecoveredState {
            objects,
            free: crate::pool::lock(&self.global).iter().collect(),
            next_id: self.next_id.load(Ordering::Relaxed),
            spare_ids: crate::pool::lock(&self.spare_ids).clone(),
        }
    }
}

/// Highest epoch of any valid record (0 if none).
fn newest_epoch(h: &PoolHeader, region: &Region) -> u64 {
    (0..2u64)
        .filter_map(
            |s| match chkp::decode_record(h.salt, s, region.bytes(h.record_off(s), LINE)) {
                chkp::RecordSlot::Valid(r) => Some(r.epoch),
                _ => None,
            },
        )
        .max()
        .unwrap_or(0)
}
