//! Pool lifecycle: create, open + full-scan recovery (thesis §5.4.5), the
//! TxState slots, allocation glue and the GC step.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

pub mod checkpoint;
pub mod recover;

use crate::alloc::{Dealloc, FreeList, Portion, LARGE_LINES};
use crate::chkp;
use crate::error::{PoolError, TxError};
use crate::layout::{
    self, HeaderFault, ObjHeader, PoolHeader, SlotState, LINE, OBJ_HDR, SLOTS_OFF,
};
use crate::pool::checkpoint::ChkpState;
use crate::region::{self, PersistHook, PersistMode, PersistStats, Region};
use crate::table::Table;
pub use recover::RecoveryMode;

/// How to create a pool.
#[derive(Clone)]
pub struct PoolOptions {
    /// Pool file size in bytes.
    pub size: u64,
    /// TxState slots = most concurrent transactions.
    pub slots: u32,
    /// Root object payload size.
    pub root_size: u32,
    /// Persistence by cache flush even if the file is not DAX; `None`
    /// reads `PMEM_IS_PMEM_FORCE` / `MEMTAMER_PMEM_FORCE`.
    pub force_pmem: Option<bool>,
    /// Lines a slot takes from the global free list at once (the thesis
    /// uses 2 GB segments on 1.5 TB; default 256 KB here).
    pub segment_lines: u32,
    /// Deallocation-list length that triggers the GC step.
    pub gc_batch: usize,
    /// Test persistence domain (crash-state enumerator).
    pub hook: Option<Arc<dyn PersistHook>>,
    /// Recovery path at open (checkpoint when valid, or always full scan).
    pub recovery: RecoveryMode,
    /// Online defragmentation of 4 KB regions after each checkpoint of
    /// `Pool::run_checkpointer` (thesis §5.3 item 5: can be switched off).
    pub defrag: bool,
}

impl Default for PoolOptions {
    fn default() -> Self {
        PoolOptions {
            size: 64 << 20,
            slots: 64,
            root_size: 256,
            force_pmem: None,
            segment_lines: 4096,
            gc_batch: 64,
            hook: None,
            recovery: RecoveryMode::Auto,
            defrag: true,
        }
    }
}

/// What recovery found when the pool was opened.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// Live objects rebuilt into the lookup table.
    pub objects: u64,
    /// Copies dropped because their transaction never committed.
    pub uncommitted: u64,
    /// Older committed copies dropped (a newer one exists).
    pub stale: u64,
    /// Deletion records applied and dropped.
    pub tombstones: u64,
    /// Free lines after recovery.
    pub free_lines: u64,
    /// Distinct transactions whose copies were dropped as uncommitted.
    pub unfinished_tx: u64,
    /// Epoch of the checkpoint recovery started from (0: full scan).
    pub checkpoint_epoch: u64,
    /// Why the checkpoint path was not taken, if it was not.
    pub fallback: Option<String>,
    /// Data lines examined for an object header.
    pub scanned_lines: u64,
    /// CHKP entries whose location no longer holds that object (superseded
    /// since the checkpoint, header already zeroed).
    pub chkp_superseded: u64,
}

/// Cumulative counters (bench and `memtamer stat`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Committed transactions with writes.
    pub commits: u64,
    /// Committed read-only transactions.
    pub ro_commits: u64,
    /// Aborted transactions.
    pub aborts: u64,
    /// Cache lines flushed.
    pub flushed_lines: u64,
    /// Fences.
    pub fences: u64,
    /// Bytes flushed.
    pub persisted_bytes: u64,
    /// Bytes flushed in contiguous runs >= 256 B per fence epoch.
    pub bytes_in_big_runs: u64,
    /// Flush calls.
    pub flush_calls: u64,
    /// Bytes named by the flush calls (their lengths).
    pub call_bytes: u64,
    /// Bytes of flush calls of >= 256 B (thesis Fig. 5.1b's definition).
    pub call_big_bytes: u64,
}

/// Deliberate persistence bugs, to prove the crash tests notice them.
#[doc(hidden)]
#[derive(Default)]
pub struct Faults {
    /// Skip flushing new copies at commit.
    pub skip_copy_flush: AtomicBool,
    /// Skip the fence between the copies and the commit record.
    pub skip_commit_fence: AtomicBool,
    /// Skip persisting CHKP-diff log entries before using the extent.
    pub skip_log_persist: AtomicBool,
    /// Skip the fence between the CHKP lines and the checkpoint record.
    pub skip_chkp_fence: AtomicBool,
    /// Break "a deletion record stays until its id is reused": at the
    /// deleting commit's post-commit the record is dropped from the table
    /// and its line handed straight back to the slot's portion (as the
    /// bump range, so the slot's next one-line block reuses it), while the
    /// id's older, unzeroed copies stay on PM.
    pub recycle_deletion_records: AtomicBool,
}

/// DRAM mirror of a TxState slot, read by other transactions.
#[repr(align(64))]
#[derive(Default)]
pub(crate) struct SlotDram {
    /// `txid << 2 | dram state` (see `tx::DS_*`).
    pub word: AtomicU64,
    /// CommitID once committed.
    pub commit: AtomicU64,
}

/// What a slot owns while a transaction runs in it (per-thread state).
/// Cache-line aligned: neighbouring slots are used by different threads,
/// and each transaction writes its slot's lock word and counters (~200 B
/// unaligned, so one line was shared with the next slot's lock).
#[repr(align(64))]
#[derive(Default)]
pub(crate) struct SlotCtx {
    pub portion: Portion,
    pub dealloc: Vec<Dealloc>,
    pub free_ids: Vec<u32>,
    pub stats: PersistStats,
    /// Cumulative counters of the transactions run in this slot.
    pub totals: PoolStats,
}

/// An open ArchTM pool.
pub struct Pool {
    pub(crate) region: Region,
    pub(crate) hdr: PoolHeader,
    pub(crate) table: Table,
    pub(crate) clock: AtomicU64,
    pub(crate) states: Box<[SlotDram]>,
    pub(crate) slots: Box<[Mutex<SlotCtx>]>,
    pub(crate) global: Mutex<FreeList>,
    /// Recycle list: freed runs (headers not zeroed, see `gc`), sorted and merged when they refill the
    /// global list (they arrive nearly sorted, thesis §5.4.4).
    pub(crate) recycle: Mutex<Vec<(u32, u32)>>,
    pub(crate) next_id: AtomicU32,
    pub(crate) spare_ids: Mutex<Vec<u32>>,
    pub(crate) segment_lines: u32,
    pub(crate) gc_batch: usize,
    pub(crate) totals: Mutex<PoolStats>,
    pub(crate) recovery: RecoveryReport,
    /// Fault injection (tests only).
    #[doc(hidden)]
    pub faults: Faults,
    pub(crate) chkp: ChkpState,
    pub(crate) defrag_on: AtomicBool,
}

fn header_error(path: &Path, f: HeaderFault, file_len: u64) -> PoolError {
    let path = path.to_path_buf();
    match f {
        HeaderFault::Short(_) => PoolError::Truncated {
            path,
            found: file_len,
            needed: layout::HEADER_LEN as u64,
        },
        HeaderFault::Magic(found) => PoolError::BadMagic { path, found },
        HeaderFault::Version(found) => PoolError::Version {
            path,
            found,
            supported: layout::VERSION,
        },
        HeaderFault::Checksum(stored, computed) => PoolError::HeaderChecksum {
            path,
            stored,
            computed,
        },
        HeaderFault::Field("pool_len", why) => {
            let needed = why
                .split(' ')
                .next()
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            PoolError::Truncated {
                path,
                found: file_len,
                needed,
            }
        }
        HeaderFault::Field(field, why) => PoolError::BadHeader { path, field, why },
    }
}

fn random_salt() -> u64 {
    let mut x = 0u64;
    // SAFETY: getrandom into an 8-byte local.
    let n = unsafe { libc::getrandom(&mut x as *mut u64 as *mut _, 8, 0) };
    if n != 8 {
        x = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1);
    }
    x | 1
}

impl Pool {
    /// Creates a new pool file (fails if it exists) with an empty root.
    pub fn create(path: impl AsRef<Path>, o: &PoolOptions) -> Result<Pool, PoolError> {
        let path = path.as_ref();
        let hdr = layout::plan(o.size, o.slots, random_salt(), o.root_size)
            .map_err(PoolError::Options)?;
        let (file, _) = region::open_file(path, Some(o.size))?;
        let force = o.force_pmem.unwrap_or_else(region::env_force_pmem);
        let mut region = Region::map_file(file, path, o.size as usize, force)?;
        if let Some(h) = &o.hook {
            region.set_hook(h.clone());
        }
        Self::format(region, hdr, o)
    }

    /// Creates a pool in anonymous memory (tests, crash enumeration).
    pub fn create_in_memory(o: &PoolOptions) -> Result<Pool, PoolError> {
        let hdr = layout::plan(o.size, o.slots, random_salt(), o.root_size)
            .map_err(PoolError::Options)?;
        let mut region = Region::from_bytes(&vec![0u8; o.size as usize])?;
        if let Some(h) = &o.hook {
            region.set_hook(h.clone());
        }
        Self::format(region, hdr, o)
    }

    fn format(region: Region, hdr: PoolHeader, o: &PoolOptions) -> Result<Pool, PoolError> {
        let mut st = PersistStats::default();
        // Root object at line 0, TxID 1, zero payload; then the header last,
        // so a crash during creation leaves no valid pool.
        let root = ObjHeader {
            id: hdr.root_id,
            size: hdr.root_size,
            txid: 1,
        };
        let off = hdr.data_off as usize;
        region.write(off, &layout::encode_obj(hdr.salt, 0, &root));
        region.flush(off, OBJ_HDR + hdr.root_size as usize, &mut st);
        // slot 0's record vouches for the root's TxID 1
        region.write(
            SLOTS_OFF as usize,
            &layout::slot_word(1, SlotState::End).to_le_bytes(),
        );
        region.flush(SLOTS_OFF as usize, hdr.nslots as usize * LINE, &mut st);
        // The first checkpoint (epoch 1, nothing logged): CHKP knows the
        // root, so opening the new pool scans nothing.
        let mut locs = [0u32; layout::CHKP_PER_LINE as usize];
        locs[hdr.root_id as usize % locs.len()] = 1;
        region.write(hdr.chkp_line_off(0), &chkp::encode_line(hdr.salt, 0, &locs));
        region.flush(hdr.chkp_line_off(0), LINE, &mut st);
        let rec = chkp::Record {
            epoch: 1,
            clock: 2,
            nids: hdr.root_id + 1,
        };
        region.write(hdr.record_off(1), &chkp::encode_record(hdr.salt, &rec));
        region.flush(hdr.record_off(1), LINE, &mut st);
        region.fence(&mut st);
        region.write(0, &layout::encode_header(&hdr));
        region.persist(0, layout::HEADER_LEN, &mut st);
        Self::recover(region, hdr, o)
    }

    /// Opens an existing pool and recovers it.
    pub fn open(path: impl AsRef<Path>, o: &PoolOptions) -> Result<Pool, PoolError> {
        let path = path.as_ref();
        let (file, len) = region::open_file(path, None)?;
        if len < layout::HEADER_LEN as u64 {
            return Err(PoolError::Truncated {
                path: path.into(),
                found: len,
                needed: layout::HEADER_LEN as u64,
            });
        }
        let force = o.force_pmem.unwrap_or_else(region::env_force_pmem);
        let mut region = Region::map_file(file, path, len as usize, force)?;
        let hdr = layout::decode_header(region.bytes(0, layout::HEADER_LEN), len)
            .map_err(|f| header_error(path, f, len))?;
        if let Some(h) = &o.hook {
            region.set_hook(h.clone());
        }
        Self::recover(region, hdr, o)
    }

    /// Opens a pool image held in memory (a crash state), recovering it.
    pub fn open_image(bytes: &[u8], o: &PoolOptions) -> Result<Pool, PoolError> {
        let path = Path::new("<memory>");
        let hdr = layout::decode_header(bytes, bytes.len() as u64)
            .map_err(|f| header_error(path, f, bytes.len() as u64))?;
        let mut region = Region::from_bytes(bytes)?;
        if let Some(h) = &o.hook {
            region.set_hook(h.clone());
        }
        Self::recover(region, hdr, o)
    }

    /// A copy of the whole pool image.
    pub fn image(&self) -> Vec<u8> {
        self.region.bytes(0, self.region.len()).to_vec()
    }

    fn slot_off(&self, s: usize) -> usize {
        SLOTS_OFF as usize + s * LINE
    }

    pub(crate) fn line_off(&self, line: u32) -> usize {
        self.hdr.data_off as usize + line as usize * LINE
    }

    /// Faults every page of the pool in now (see `Region::prefault`); for a
    /// pool no transaction uses yet (benchmarks on fresh pools).
    pub fn prefault(&self) {
        self.region.prefault();
    }

    /// What recovery did at open.
    pub fn recovery(&self) -> &RecoveryReport {
        &self.recovery
    }
    /// The root object's id.
    pub fn root_id(&self) -> u32 {
        self.hdr.root_id
    }
    /// How stores are made durable on this pool.
    pub fn persist_mode(&self) -> PersistMode {
        self.region.mode()
    }
    /// Counters so far (summed over the slots; waits for running
    /// transactions to finish).
    pub fn stats(&self) -> PoolStats {
        let mut t = lock(&self.totals).clone();
        for s in self.slots.iter() {
            let c = lock(s);
            let x = &c.totals;
            t.commits += x.commits;
            t.ro_commits += x.ro_commits;
            t.aborts += x.aborts;
            t.flushed_lines += x.flushed_lines;
            t.fences += x.fences;
            t.persisted_bytes += x.persisted_bytes;
            t.bytes_in_big_runs += x.bytes_in_big_runs;
            t.flush_calls += x.flush_calls;
            t.call_bytes += x.call_bytes;
            t.call_big_bytes += x.call_big_bytes;
        }
        t
    }
    /// DRAM bytes the lookup table spends per object.
    pub fn lookup_bytes_per_object(&self) -> usize {
        Table::bytes_per_entry()
    }
    /// Free lines in the global and recycle lists (not in slot portions).
    pub fn free_lines_global(&self) -> u64 {
        lock(&self.global).total()
            + lock(&self.recycle)
                .iter()
                .map(|(_, n)| u64::from(*n))
                .sum::<u64>()
    }

    pub(crate) fn write_slot(
        &self,
        s: usize,
        word: u64,
        commit: Option<u64>,
        st: &mut PersistStats,
        persist: bool,
    ) {
        let off = self.slot_off(s);
        if let Some(c) = commit {
            self.region.write(off + 8, &c.to_le_bytes());
        }
        self.region.write(off, &word.to_le_bytes());
        if persist {
            self.region.persist(off, 16, st);
        }
    }

    /// Allocates `n` lines for slot `ctx` (thesis §5.4.4 allocation steps).
    pub(crate) fn alloc_lines(
        &self,
        me: usize,
        ctx: &mut SlotCtx,
        n: u32,
        bytes: usize,
    ) -> Result<u32, TxError> {
        for attempt in 0..3 {
            if n <= LARGE_LINES {
                if let Some(l) = ctx.portion.alloc(n) {
                    return Ok(l);
                }
                let taken =
                    lock(&self.global).refill_portion(n, self.segment_lines, &mut ctx.portion);
                if !taken.is_empty() {
                    self.log_fetches(&taken, &mut ctx.stats);
                    continue;
                }
            } else if let Some(l) = lock(&self.global).take_best(n) {
                self.log_fetch(l, n, &mut ctx.stats);
                return Ok(l);
            }
            // Refill from the recycle list (step 3), then from idle slots.
            match attempt {
                0 => {
                    self.gc(ctx);
                    let mut runs = std::mem::take(&mut *lock(&self.recycle));
                    lock(&self.global).absorb_runs(&mut runs);
                }
                _ => {
                    let mut g = lock(&self.global);
                    ctx.portion.drain_into(&mut g);
                    for (i, s) in self.slots.iter().enumerate() {
                        if i == me {
                            continue;
                        }
                        if let Ok(mut other) = s.try_lock() {
                            other.portion.drain_into(&mut g);
                        }
                    }
                }
            }
        }
        Err(TxError::PoolFull { bytes })
    }

    /// The GC step: move this slot's deallocated copies to the sorted
    /// recycle list. Their headers are not zeroed (the thesis's GC zeroes
    /// each one: a scattered one-line write + flush per freed copy, and a
    /// fence per step). That is sound because (a) every such copy is
    /// superseded by a newer committed version of its id (a copy or a
    /// deletion record, which stays on PM until the id is reused), so
    /// recovery's newest-TxID-wins judge drops it; (b) recovery examines
    /// every line rather than skipping the lines of a block it found, so a
    /// stale header whose block overlaps a newer block cannot hide it; (c)
    /// a stale header left inside a live block's lines is a loser too, and
    /// recovery zeroes only dropped headers outside the live blocks.
    /// `tests/crash_states.rs` and `tests/crash_scan_fault.rs` check both.
    pub(crate) fn gc(&self, ctx: &mut SlotCtx) {
        let list = std::mem::take(&mut ctx.dealloc);
        if list.is_empty() {
            return;
        }
        let mut runs: Vec<(u32, u32)> = list.iter().map(|d| (d.line, d.lines)).collect();
        runs.sort_unstable();
        let mut merged: Vec<(u32, u32)> = Vec::with_capacity(runs.len());
        for (l, n) in runs {
            match merged.last_mut() {
                Some((ml, mn)) if *ml + *mn == l => *mn += n,
                _ => merged.push((l, n)),
            }
        }
        lock(&self.recycle).extend(merged);
    }

    /// Runs the GC step on every idle slot.
    pub fn collect(&self) {
        for s in self.slots.iter() {
            if let Ok(mut c) = s.try_lock() {
                self.gc(&mut c);
            }
        }
    }

    pub(crate) fn new_id(&self, ctx: &mut SlotCtx) -> Option<u32> {
        if let Some(id) = ctx.free_ids.pop() {
            return Some(id);
        }
        if let Some(id) = lock(&self.spare_ids).pop() {
            return Some(id);
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        if id < self.table.cap() {
            Some(id)
        } else {
            self.next_id.fetch_sub(1, Ordering::Relaxed);
            None
        }
    }

    pub(crate) fn add_totals(&self, st: &mut PersistStats, commit: bool, ro: bool, abort: bool) {
        fold_stats(&mut lock(&self.totals), st, commit, ro, abort);
    }

    /// Every live object id (the lookup table's non-empty entries).
    pub fn live_ids(&self) -> Vec<u32> {
        let max = self.next_id.load(Ordering::Relaxed).min(self.table.cap());
        (1..max)
            .filter(|id| {
                self.table
                    .get(*id)
                    .map(|e| {
                        let old = e.snap().old;
                        old != 0 && !self.is_deletion_record(old)
                    })
                    .unwrap_or(false)
            })
            .collect()
    }

    /// Whether the block at table location `loc` (line + 1) is a deletion
    /// record: a deleted id keeps its record as `old` until it is reused.
    pub(crate) fn is_deletion_record(&self, loc: u32) -> bool {
        let b = self.region.bytes(self.line_off(loc - 1) + 4, 4);
        u32::from_le_bytes([b[0], b[1], b[2], b[3]]) & layout::TOMBSTONE != 0
    }
}

/// Moves a transaction's persistence counters into cumulative totals.
pub(crate) fn fold_stats(
    t: &mut PoolStats,
    st: &mut PersistStats,
    commit: bool,
    ro: bool,
    abort: bool,
) {
    t.commits += u64::from(commit && !ro);
    t.ro_commits += u64::from(commit && ro);
    t.aborts += u64::from(abort);
    t.flushed_lines += std::mem::take(&mut st.lines);
    t.fences += std::mem::take(&mut st.fences);
    t.persisted_bytes += std::mem::take(&mut st.bytes);
    t.bytes_in_big_runs += std::mem::take(&mut st.bytes_in_big_runs);
    t.flush_calls += std::mem::take(&mut st.calls);
    t.call_bytes += std::mem::take(&mut st.call_bytes);
    t.call_big_bytes += std::mem::take(&mut st.call_big_bytes);
}

/// Locks a mutex, recovering from poisoning (a panicked holder leaves only
/// volatile bookkeeping, which stays usable).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Pool {
    /// Ids whose entry is write-locked or holds an unfolded copy; empty
    /// whenever no transaction runs (a test invariant).
    pub fn locked_ids(&self) -> Vec<u32> {
        let max = self.next_id.load(Ordering::Relaxed).min(self.table.cap());
        (1..max)
            .filter(|id| {
                self.table
                    .get(*id)
                    .map(|e| {
                        let s = e.snap();
                        s.new != 0 || s.writer != 0
                    })
                    .unwrap_or(false)
            })
            .collect()
    }
}

thread_local! {
    /// Whether this thread is inside a transaction: checkpoints and
    /// defragmentation refuse to run nested in one (they take every slot).
    pub(crate) static IN_TX: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// True inside a transaction of this thread (see [`IN_TX`]).
pub(crate) fn in_tx() -> bool {
    IN_TX.with(|c| c.get())
}
