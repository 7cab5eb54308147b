//! Transactions, exactly as thesis Algorithms 1-2 (snapshot isolation,
//! logless copy-on-write), with the text issues of the digest fixed:
//!
//! * Alg. 1 lines 13/20 lack "and": both conditions are required here;
//! * Alg. 1 sets `obj.new` twice (ALLOC then DUPLICATE): one block the size
//!   of `old` is allocated and `old` copied into it;
//! * Alg. 2 nulls `writer` before unlocking it: unlocking *is* clearing the
//!   writer word, done in the same seqlocked update that folds new into old;
//! * a reader that meets a writer between taking its CommitID and
//!   publishing COMMITTED waits for it (the thesis leaves this window open:
//!   a snapshot could see half of that writer's objects);
//! * an aborted transaction zeroes its copies' headers before it leaves its
//!   slot, so recovery never mistakes them for committed data.

use std::cell::Cell;
use std::sync::atomic::Ordering;
use std::sync::MutexGuard;

use crate::alloc::Dealloc;
use crate::error::TxError;
use crate::layout::{self, ObjHeader, SlotState, MAX_OBJ, OBJ_HDR, TOMBSTONE};
use crate::pool::IN_TX;
use crate::pool::{Pool, SlotCtx};

/// DRAM slot states (the persistent ones are `layout::SlotState`).
pub(crate) const DS_END: u64 = 0;
pub(crate) const DS_ACTIVE: u64 = 1;
pub(crate) const DS_COMMITTED: u64 = 2;
pub(crate) const DS_COMMITTING: u64 = 3;

thread_local! {
    static SLOT_HINT: Cell<usize> = const { Cell::new(usize::MAX) };
    static BUFS: Cell<Bufs> = Cell::new(Bufs::default());
}

/// A transaction's scratch vectors, kept per thread between transactions
/// so that the fast path does no heap allocation (a `Tx` is `!Send`: the
/// thread that took them gives them back in `end`).
#[derive(Default)]
struct Bufs {
    write_set: Vec<u32>,
    dropped: Vec<(u32, u32)>,
    locs: Vec<(usize, usize)>,
    fold: Vec<Fold>,
}

/// What post-commit does to one write-set entry, read before the copies
/// are flushed: on CPUs whose CLWB evicts the line (AMD Zen), reading the
/// new copy's header after the flush is a memory miss per object.
#[derive(Clone, Copy)]
struct Fold {
    id: u32,
    new: u32,
    old: u32,
    old_lines: u32,
    tomb: bool,
}

/// A running transaction. Dropping it without `commit` aborts it.
pub struct Tx<'p> {
    pool: &'p Pool,
    ctx: MutexGuard<'p, SlotCtx>,
    slot: usize,
    txid: u64,
    begun: bool,
    write_set: Vec<u32>,
    /// Blocks written in this tx and superseded in it (header zeroed,
    /// flushed with the write set).
    dropped: Vec<(u32, u32)>,
    /// Commit scratch: flush ranges, post-commit folds.
    locs: Vec<(usize, usize)>,
    fold: Vec<Fold>,
    done: bool,
}

impl Pool {
    /// `APT_TX_BEGIN` (Alg. 1): claim a TxState slot, take TxID from the
    /// global timestamp. The (TxID, BEGIN) record is persisted lazily before
    /// the first copy is written: a read-only transaction flushes nothing.
    pub fn begin(&self) -> Result<Tx<'_>, TxError> {
        if IN_TX.with(|c| c.replace(true)) {
            return Err(TxError::Nested);
        }
        while self.chkp.pausing.load(Ordering::Acquire) {
            std::thread::yield_now(); // a checkpoint is collecting the slots
        }
        let n = self.slots.len();
        let hint = SLOT_HINT.with(|h| h.get());
        let start = if hint < n { hint } else { thread_index() % n };
        let mut spins = 0u32;
        let (slot, ctx) = loop {
            let got = (0..n)
                .map(|i| (start + i) % n)
                .find_map(|i| self.slots[i].try_lock().ok().map(|g| (i, g)));
            if let Some(g) = got {
                break g;
            }
            spins += 1;
            if spins > 64 {
                std::thread::yield_now();
            }
        };
        SLOT_HINT.with(|h| h.set(slot));
        // Announce the slot as active with a lower bound of our TxID before
        // taking it: a committer that takes its CommitID after this store
        // must see us in its post-commit wait (Alg. 2 line 10), or it could
        // fold a version between our snapshot reads (a lost update).
        let lower = self.clock.load(Ordering::SeqCst);
        self.states[slot]
            .word
            .store(lower << 2 | DS_ACTIVE, Ordering::SeqCst);
        let txid = self.clock.fetch_add(1, Ordering::SeqCst);
        // Only raises the announced bound (lower <= txid): a committer that
        // still reads the lower one waits longer, never less. The SeqCst
        // store above is the one that orders against the clock.
        self.states[slot]
            .word
            .store(txid << 2 | DS_ACTIVE, Ordering::Release);
        let b = BUFS.with(|b| b.take());
        Ok(Tx {
            pool: self,
            ctx,
            slot,
            txid,
            begun: false,
            write_set: b.write_set,
            dropped: b.dropped,
            locs: b.locs,
            fold: b.fold,
            done: false,
        })
    }

    /// Runs `f` in a transaction, retrying on write conflicts
    /// (Alg. 1 `ABORT_AND_RETRY`); any other error aborts and is returned.
    pub fn transaction<R>(
        &self,
        mut f: impl FnMut(&mut Tx<'_>) -> Result<R, TxError>,
    ) -> Result<R, TxError> {
        let mut backoff = 1u32;
        loop {
            let mut tx = self.begin()?;
            match f(&mut tx) {
                Ok(r) => {
                    tx.commit();
                    return Ok(r);
                }
                Err(TxError::Conflict { .. }) => {
                    tx.abort();
                    for _ in 0..backoff {
                        std::hint::spin_loop();
                    }
                    if backoff >= 1024 {
                        std::thread::yield_now();
                    } else {
                        backoff *= 2;
                    }
                }
                Err(e) => {
                    tx.abort();
                    return Err(e);
                }
            }
        }
    }
}

fn thread_index() -> usize {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    thread_local!(static IDX: usize = NEXT.fetch_add(1, Ordering::Relaxed));
    IDX.with(|i| *i)
}

impl<'p> Tx<'p> {
    /// This transaction's TxID.
    pub fn txid(&self) -> u64 {
        self.txid
    }

    fn me(&self) -> u32 {
        self.slot as u32 + 1
    }

    fn hdr_at(&self, loc: u32) -> ObjHeader {
        let b = self.pool.region.bytes(self.pool.line_off(loc - 1), OBJ_HDR);
        ObjHeader {
            id: u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            size: u32::from_le_bytes([b[4], b[5], b[6], b[7]]),
            txid: u64::from_le_bytes([b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]]),
        }
    }

    /// `APT_TX_READ` (Alg. 1, lock-free): the object's payload as of this
    /// transaction's snapshot.
    pub fn read(&self, id: u32) -> Result<&[u8], TxError> {
        let loc = self.visible(id)?;
        let h = self.hdr_at(loc);
        if h.is_tombstone() {
            return Err(TxError::NoSuchObject { id });
        }
        Ok(self
            .pool
            .region
            .bytes(self.pool.line_off(loc - 1) + OBJ_HDR, h.payload()))
    }

    fn visible(&self, id: u32) -> Result<u32, TxError> {
        let e = self
            .pool
            .table
            .get(id)
            .ok_or(TxError::NoSuchObject { id })?;
        // Fast path: no copy in flight, `old` is every snapshot's version
        // (see `Entry::locs`): one 8-byte load.
        let (new, old) = e.locs();
        if new == 0 {
            return if old == 0 {
                Err(TxError::NoSuchObject { id })
            } else {
                Ok(old)
            };
        }
        let mut spins = 0u32;
        loop {
            let s = e.snap();
            let pick = if s.new == 0 {
                s.old
            } else if s.writer == self.me() {
                s.new
            } else if s.writer == 0 {
                s.old
            } else {
                let st = &self.pool.states[(s.writer - 1) as usize];
                let w = st.word.load(Ordering::Acquire);
                match w & 3 {
                    // Its CommitID is drawn and above our TxID: invisible
                    // to us whether or not it commits.
                    DS_COMMITTING if st.commit.load(Ordering::SeqCst) > self.txid => s.old,
                    DS_COMMITTING => {
                        // Wait until its COMMITTED record is durable; yield
                        // if that takes long (it may have been preempted).
                        spins += 1;
                        if spins > 64 {
                            std::thread::yield_now();
                        } else {
                            std::hint::spin_loop();
                        }
                        continue;
                    }
                    DS_COMMITTED if st.commit.load(Ordering::Acquire) <= self.txid => s.new,
                    _ => s.old,
                }
            };
            // The writer may have folded this entry (and its slot moved on)
            // between the snapshot and the state read: re-validate.
            if e.changed_since(&s) {
                continue;
            }
            return if pick == 0 {
                Err(TxError::NoSuchObject { id })
            } else {
                Ok(pick)
            };
        }
    }

    /// Marks that this transaction writes copies. No (TxID, BEGIN) record
    /// is persisted (the thesis persists one and fences, Alg. 1 line 2): each
    /// copy's header names its slot, and recovery judges it against that
    /// slot's commit record (`layout::copy_committed`).
    fn ensure_begun(&mut self) {
        self.begun = true;
    }

    fn new_block(&mut self, id: u32, size: u32) -> Result<u32, TxError> {
        self.ensure_begun();
        let payload = (size & !TOMBSTONE) as usize;
        let n = layout::block_lines(payload);
        let slot = self.slot;
        let line = self.pool.alloc_lines(slot, &mut self.ctx, n, payload)?;
        let h = ObjHeader {
            id,
            size,
            txid: layout::tag_txid(self.slot as u32, self.txid),
        };
        self.pool.region.write(
            self.pool.line_off(line),
            &layout::encode_obj(self.pool.hdr.salt, line, &h),
        );
        Ok(line + 1)
    }

    fn lock(&self, id: u32) -> Result<crate::table::Snap, TxError> {
        let e = self
            .pool
            .table
            .get(id)
            .ok_or(TxError::NoSuchObject { id })?;
        if !e.try_lock(self.me()) {
            // Locked by this very transaction with no copy in flight: the
            // object was allocated and then freed here. It is gone, not
            // contended: a conflict would make `Pool::transaction` (and a C
            // caller retrying on -2) run the same transaction forever.
            if e.snap().writer == self.me() {
                return Err(TxError::NoSuchObject { id });
            }
            return Err(TxError::Conflict { id });
        }
        Ok(e.snap())
    }

    /// `APT_TX_WRITE` (Alg. 1): the first write copies the object out of
    /// place under its write lock; later writes reuse the copy.
    pub fn write(&mut self, id: u32) -> Result<&mut [u8], TxError> {
        let e = self
            .pool
            .table
            .get(id)
            .ok_or(TxError::NoSuchObject { id })?;
        let s = e.snap();
        let loc = if s.new != 0 && s.writer == self.me() {
            s.new
        } else {
            let s = self.lock(id)?;
            if s.old == 0 {
                e.update(0, 0, true);
                return Err(TxError::NoSuchObject { id });
            }
            let oh = self.hdr_at(s.old);
            if oh.is_tombstone() {
                e.update(0, s.old, true);
                return Err(TxError::NoSuchObject { id });
            }
            let n = match self.new_block(id, oh.size) {
                Ok(n) => n,
                Err(err) => {
                    e.update(0, s.old, true);
                    return Err(err);
                }
            };
            let src = self.pool.line_off(s.old - 1) + OBJ_HDR;
            let dst = self.pool.line_off(n - 1) + OBJ_HDR;
            // SAFETY: both blocks are in bounds (checked by ptr) and distinct.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    self.pool.region.ptr(src, oh.payload()),
                    self.pool.region.ptr(dst, oh.payload()),
                    oh.payload(),
                )
            };
            e.update(n, s.old, false);
            self.write_set.push(id);
            n
        };
        let h = self.hdr_at(loc);
        if h.is_tombstone() {
            return Err(TxError::NoSuchObject { id });
        }
        let off = self.pool.line_off(loc - 1) + OBJ_HDR;
        // SAFETY: the block is ours (write-locked, not yet visible to others
        // as committed) and `&mut self` keeps this the only live borrow.
        Ok(unsafe {
            std::slice::from_raw_parts_mut(self.pool.region.ptr(off, h.payload()), h.payload())
        })
    }

    /// Writes `data` at `offset` of object `id` (copying it first if needed).
    pub fn write_at(&mut self, id: u32, offset: usize, data: &[u8]) -> Result<(), TxError> {
        let b = self.write(id)?;
        let size = b.len();
        let end = offset.checked_add(data.len());
        let dst = end
            .and_then(|end| b.get_mut(offset..end))
            .ok_or(TxError::OutOfBounds {
                id,
                offset,
                len: data.len(),
                size,
            })?;
        dst.copy_from_slice(data);
        Ok(())
    }

    /// Copies `out.len()` bytes at `offset` of object `id` into `out`.
    pub fn read_at(&self, id: u32, offset: usize, out: &mut [u8]) -> Result<(), TxError> {
        let b = self.read(id)?;
        let end = offset.checked_add(out.len());
        let src = end
            .and_then(|end| b.get(offset..end))
            .ok_or(TxError::OutOfBounds {
                id,
                offset,
                len: out.len(),
                size: b.len(),
            })?;
        out.copy_from_slice(src);
        Ok(())
    }

    /// Allocates a zeroed object of `size` bytes; its id is private to this
    /// transaction until commit.
    pub fn alloc(&mut self, size: usize) -> Result<u32, TxError> {
        if size == 0 || size > MAX_OBJ {
            return Err(TxError::TooLarge {
                bytes: size,
                max: MAX_OBJ,
            });
        }
        let id = self
            .pool
            .new_id(&mut self.ctx)
            .ok_or(TxError::PoolFull { bytes: size })?;
        let e = self
            .pool
            .table
            .get(id)
            .ok_or(TxError::PoolFull { bytes: size })?;
        if !e.try_lock(self.me()) {
            return Err(TxError::Conflict { id });
        }
        // A reused id keeps its deletion record as `old` until this copy
        // commits: the record hides the id's older copies from recovery
        // (their headers are not zeroed), and is freed like any old copy.
        let tomb = e.snap().old;
        let n = match self.new_block(id, size as u32) {
            Ok(n) => n,
            Err(err) => {
                e.update(0, tomb, true);
                self.ctx.free_ids.push(id);
                return Err(err);
            }
        };
        let off = self.pool.line_off(n - 1) + OBJ_HDR;
        // SAFETY: fresh block of `size` payload bytes.
        unsafe { std::ptr::write_bytes(self.pool.region.ptr(off, size), 0, size) };
        e.update(n, tomb, false);
        self.write_set.push(id);
        Ok(id)
    }

    /// Frees object `id` at commit: a one-line deletion record (tombstone)
    /// becomes its new version, so recovery sees the deletion. The root
    /// is refused (`RootNotFreeable`) and the transaction left as it was.
    pub fn free(&mut self, id: u32) -> Result<(), TxError> {
        if id == self.pool.root_id() {
            return Err(TxError::RootNotFreeable { id });
        }
        let e = self
            .pool
            .table
            .get(id)
            .ok_or(TxError::NoSuchObject { id })?;
        let s = e.snap();
        let (old, mine) = if s.new != 0 && s.writer == self.me() {
            if self.hdr_at(s.new).is_tombstone() {
                return Err(TxError::NoSuchObject { id });
            }
            self.supersede(s.new);
            (s.old, true)
        } else {
            let s = self.lock(id)?;
            if s.old == 0 || self.hdr_at(s.old).is_tombstone() {
                e.update(0, s.old, true);
                return Err(TxError::NoSuchObject { id });
            }
            (s.old, false)
        };
        if old == 0 || (mine && self.hdr_at(old).is_tombstone()) {
            // Allocated in this transaction: nothing older to hide (a
            // reused id's deletion record stays its `old`).
            e.update(0, old, false);
            return Ok(());
        }
        let t = match self.new_block(id, TOMBSTONE) {
            Ok(t) => t,
            Err(err) => {
                if !mine {
                    e.update(0, old, true);
                }
                return Err(err);
            }
        };
        e.update(t, old, false);
        if !mine {
            self.write_set.push(id);
        }
        Ok(())
    }

    fn supersede(&mut self, loc: u32) {
        let lines = self.hdr_at(loc).lines();
        let off = self.pool.line_off(loc - 1);
        self.pool.region.write(off, &[0u8; OBJ_HDR]);
        self.dropped.push((loc, lines));
    }

    /// `APT_TX_ON_COMMIT` + `APT_TX_POST_COMMIT` (Alg. 2).
    pub fn commit(mut self) {
        self.finish_commit();
    }

    fn finish_commit(&mut self) {
        let pool = self.pool;
        if self.write_set.is_empty() {
            self.end(true, true);
            return;
        }
        let faults = &pool.faults;
        // What post-commit needs, and the flush ranges, in one pass over
        // the write set while the copies are still cached. The entries
        // cannot change until post-commit: we hold every one's lock.
        let mut locs = std::mem::take(&mut self.locs);
        let mut fold = std::mem::take(&mut self.fold);
        for &id in &self.write_set {
            let Some(e) = pool.table.get(id) else {
                continue;
            };
            let s = e.snap();
            let mut f = Fold {
                id,
                new: s.new,
                old: s.old,
                old_lines: 0,
                tomb: false,
            };
            if s.new != 0 {
                let h = self.hdr_at(s.new);
                f.tomb = h.is_tombstone();
                locs.push((pool.line_off(s.new - 1), OBJ_HDR + h.payload()));
                if s.old != 0 {
                    f.old_lines = self.hdr_at(s.old).lines();
                }
            }
            fold.push(f);
        }
        locs.extend(
            self.dropped
                .iter()
                .map(|(l, _)| (pool.line_off(l - 1), OBJ_HDR)),
        );
        // Persist every new copy (Alg. 2 line 4), then one fence.
        if !faults.skip_copy_flush.load(Ordering::Relaxed) {
            if locs.len() > 1 {
                locs.sort_unstable();
                // copies of consecutive allocations lie in adjacent lines
                // (§5.4.4): one flush call per contiguous run, as the
                // thesis's "writes >= 256 B" are sized per persist call
                crate::region::coalesce_lines(&mut locs);
            }
            for &(off, len) in &locs {
                pool.region.flush(off, len, &mut self.ctx.stats);
            }
        }
        locs.clear();
        self.locs = locs;
        self.fold = fold;
        if !faults.skip_commit_fence.load(Ordering::Relaxed) {
            pool.region.fence(&mut self.ctx.stats);
        }
        // CommitID and the COMMITTED record (Alg. 2 lines 6-7).
        let st = &pool.states[self.slot];
        st.word
            .store(self.txid << 2 | DS_COMMITTING, Ordering::SeqCst);
        let cid = pool.clock.fetch_add(1, Ordering::SeqCst);
        // Published before the record is persisted: a reader that meets
        // COMMITTING with a CommitID above its TxID takes the old version
        // at once instead of waiting out our flush + fence (a slot's
        // CommitIDs only grow, so a stale value here only makes it wait).
        st.commit.store(cid, Ordering::SeqCst);
        let w = layout::slot_word(self.txid, SlotState::Committed);
        pool.write_slot(self.slot, w, Some(cid), &mut self.ctx.stats, true);
        // Release suffices: readers spin on COMMITTING and acquire this;
        // committers that must see our TxID order through the clock RMW.
        st.word
            .store(self.txid << 2 | DS_COMMITTED, Ordering::Release);
        self.post_commit(cid);
        self.end(true, false);
    }

    /// `APT_TX_POST_COMMIT` (Alg. 2): wait for transactions that started
    /// before our CommitID (they may still read the old copies), then fold
    /// new into old, unlock, and free the old copies.
    fn post_commit(&mut self, cid: u64) {
        let pool = self.pool;
        for (i, st) in pool.states.iter().enumerate() {
            if i == self.slot {
                continue;
            }
            let mut spins = 0u32;
            loop {
                let w = st.word.load(Ordering::Acquire);
                if w & 3 != DS_ACTIVE || w >> 2 >= cid {
                    break;
                }
                spins += 1;
                if spins > 128 {
                    std::thread::yield_now();
                } else {
                    std::hint::spin_loop();
                }
            }
        }
        self.write_set.clear();
        let mut fold = std::mem::take(&mut self.fold);
        for f in fold.drain(..) {
            let Some(e) = pool.table.get(f.id) else {
                continue;
            };
            if f.new == 0 {
                // allocated and freed in this transaction (a reused id
                // keeps its deletion record)
                e.update(0, f.old, true);
                self.ctx.free_ids.push(f.id);
                continue;
            }
            if f.old != 0 {
                self.ctx.dealloc.push(Dealloc {
                    line: f.old - 1,
                    lines: f.old_lines,
                });
            }
            if f.tomb {
                // The deletion record stays the id's `old` (and on PM)
                // until the id is reused and that copy commits: only then
                // is every older copy of the id superseded by a newer one.
                if pool.faults.recycle_deletion_records.load(Ordering::Relaxed) {
                    e.update(0, 0, true);
                    self.ctx.portion.add_segment(f.new - 1, 1);
                } else {
                    e.update(0, f.new, true);
                }
                self.ctx.free_ids.push(f.id);
            } else {
                e.update(0, f.new, true);
            }
        }
        self.fold = fold;
        for (l, lines) in self.dropped.drain(..) {
            // header already zeroed and persisted with the write set
            self.ctx.dealloc.push(Dealloc { line: l - 1, lines });
        }
        if self.ctx.dealloc.len() >= pool.gc_batch {
            pool.gc(&mut self.ctx);
        }
    }

    /// Aborts: zero and persist our copies' headers, release the locks,
    /// return the blocks and fresh ids.
    pub fn abort(mut self) {
        self.do_abort();
    }

    fn do_abort(&mut self) {
        let pool = self.pool;
        let mut blocks = Vec::new();
        let mut ws = std::mem::take(&mut self.write_set);
        for id in ws.drain(..) {
            let Some(e) = pool.table.get(id) else {
                continue;
            };
            let s = e.snap();
            if s.new != 0 {
                let h = self.hdr_at(s.new);
                let off = pool.line_off(s.new - 1);
                pool.region.write(off, &[0u8; OBJ_HDR]);
                pool.region.flush(off, OBJ_HDR, &mut self.ctx.stats);
                blocks.push((s.new - 1, h.lines()));
            }
            e.update(0, s.old, true);
            if s.old == 0 || self.hdr_at(s.old).is_tombstone() {
                self.ctx.free_ids.push(id);
            }
        }
        self.write_set = ws;
        for (l, lines) in std::mem::take(&mut self.dropped) {
            let off = pool.line_off(l - 1);
            pool.region.flush(off, OBJ_HDR, &mut self.ctx.stats);
            blocks.push((l - 1, lines));
        }
        if self.begun {
            pool.region.fence(&mut self.ctx.stats);
        }
        for (l, n) in blocks {
            // headers zeroed and fenced: immediately reusable
            self.ctx.portion.free.insert(l, n);
        }
        self.end(false, false);
    }

    fn end(&mut self, committed: bool, ro: bool) {
        let pool = self.pool;
        if self.begun && committed {
            // (END, INF), not flushed: recovery treats COMMITTED like END.
            // An abort leaves the record alone: its copies are zeroed and
            // fenced, and a newer TxID than the record never counts.
            let w = layout::slot_word(self.txid, SlotState::End);
            pool.write_slot(self.slot, w, None, &mut self.ctx.stats, false);
        }
        // Release: our reads of old copies happen before a committer that
        // acquires END folds and frees them.
        pool.states[self.slot]
            .word
            .store(self.txid << 2 | DS_END, Ordering::Release);
        let ctx = &mut *self.ctx;
        crate::pool::fold_stats(&mut ctx.totals, &mut ctx.stats, committed, ro, !committed);
        self.done = true;
        let mut b = Bufs {
            write_set: std::mem::take(&mut self.write_set),
            dropped: std::mem::take(&mut self.dropped),
            locs: std::mem::take(&mut self.locs),
            fold: std::mem::take(&mut self.fold),
        };
        b.write_set.clear();
        b.dropped.clear();
        b.locs.clear();
        b.fold.clear();
        BUFS.with(|c| c.set(b));
        IN_TX.with(|c| c.set(false));
    }
}

impl Drop for Tx<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.do_abort();
        }
    }
}
