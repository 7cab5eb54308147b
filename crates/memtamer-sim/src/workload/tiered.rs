//! Tiered data objects: the simulator's counterpart of `memtamer-tier`'s
//! registry (issue 20 item 5; thesis ch. 3 and 4, digest
//! `thesis-unimem-tahoe.md` §2.8 and §3.7). It is the primitive a workload
//! builds on when it places *data objects* between DRAM and a slow tier:
//! Unimem's phased MPI programs (`workload::phased`) and Tahoe's task graphs.
//!
//! # Model
//!
//! * A [`TierSpace`] holds one process's objects. Each object is a
//!   contiguous, page-aligned range at the same offset of the process's
//!   address span in two regions of the platform: the *fast* region (DRAM)
//!   and the *slow* region (Optane, or an emulated slow tier). Placement is
//!   per page of [`PAGE`] bytes, so a policy can move a whole object
//!   (Unimem) or single pages (Tahoe, TPP-like policies).
//! * An access to `(object, offset)` goes to the region where that page
//!   lives now ([`TierSpace::line_addr`]), so it passes through that
//!   region's channels, queues and DIMMs like any other request: nothing
//!   about the tiers' speed is computed here.
//! * Migrations are requested into a FIFO ([`TierSpace::request`]), as the
//!   thesis's main thread hands moves to its helper thread (§3.5). The
//!   [`MigrationHelper`] generator runs on its own simulated thread: for each
//!   page to move it issues one `CopyLine` per cache line (a load from the
//!   old tier, a non-temporal store to the new one: real traffic on both
//!   tiers, competing with the application's), waits for its stores
//!   (`Drain`), and only then switches the pages' placement. Until then the
//!   application's accesses still go to the old copy.
//! * Time: `copy_ps` sums, over moves, the simulated time from the helper
//!   taking a request to the placement switch. `exposed_ps` is what the
//!   application reports waiting for moves ([`TierSpace::add_exposed`]).
//!   Overlapped time is `copy_ps - exposed_ps` (as `memtamer-tier`'s
//!   `MigrationStats`).
//!
//! # Use
//!
//! ```text
//! let space = TierSpace::new(fast, slow, slot, &[(name, bytes, Tier::Slow), ..], dram_capacity);
//! let h: TierHandle = space.into_handle();
//! // thread A (the program): h.lock() -> line_addr(obj, off), request(MoveReq), settled(obj)
//! // thread B: Generator over MigrationHelper::new(h.clone(), poll)
//! ```
//!
//! Both generators of one process share the handle; `Generator::for_job`
//! builds them together. The simulator is single-threaded, so the mutex is
//! never contended; it only makes the handle `Send`.
//!
//! The DRAM capacity is the policy's to respect: the space tracks bytes in
//! DRAM (promotions count from the moment the helper starts them,
//! demotions free at their end) and reports the peak, so tests can check a
//! policy against it; it never refuses a move.

use super::{addr, Op, OpBatch, Ps, LINE};
pub use crate::tiering::{MoveReq, SpaceView, Tier, PAGE};
use std::collections::{BTreeSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

/// Sleep of a helper whose program has ended (1 ms).
const CLOSED_SLEEP: Ps = 1_000_000_000;

/// Lines of one page.
const LINES_PER_PAGE: u64 = PAGE / LINE;

/// One data object of a [`TierSpace`].
#[derive(Clone, Debug, PartialEq)]
pub struct TierObject {
    /// Name (for reports).
    pub name: String,
    /// Size in bytes (the object spans `size.div_ceil(PAGE)` pages).
    pub size: u64,
    /// Offset of its first byte in the process's span (page aligned).
    base: u64,
    /// Where each page lives.
    pages: Vec<Tier>,
    /// Requests naming it that are queued or being copied.
    pending: u32,
}

impl TierObject {
    /// Bytes of the object now in `tier`.
    pub fn bytes_in(&self, tier: Tier) -> u64 {
        self.pages.iter().filter(|&&t| t == tier).count() as u64 * PAGE
    }

    /// The tier of the page holding byte `offset` (wrapped into the object).
    pub fn tier_at(&self, offset: u64) -> Tier {
        let p = ((offset % self.size.max(1)) / PAGE) as usize;
        self.pages.get(p).copied().unwrap_or(Tier::Slow)
    }

    /// Number of pages.
    pub fn page_count(&self) -> u64 {
        self.pages.len() as u64
    }
}

/// Migration accounting of one [`TierSpace`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TierStats {
    /// Requests that moved at least one page.
    pub moves: u64,
    /// Pages moved.
    pub pages_moved: u64,
    /// Bytes moved (pages × [`PAGE`]).
    pub bytes_moved: u64,
    /// Sum over moves of helper start → placement switch (ps).
    pub copy_ps: Ps,
    /// Time the application waited for moves (ps), as it reported.
    pub exposed_ps: Ps,
    /// Highest number of bytes in DRAM (promotions in flight included).
    pub peak_dram_bytes: u64,
    /// Of [`TierStats::pages_moved`], pages promoted without a copy
    /// ([`TierSpace::discard_on_promote`]).
    pub pages_fresh: u64,
    /// Copy time of the moves to the slow tier (evictions), ps: part of
    /// `copy_ps`.
    pub evict_copy_ps: Ps,
    /// Part of `exposed_ps` during which the helper was copying an
    /// eviction (ps): the time a waiting phase spent queued behind
    /// evictions in the helper's FIFO ([`TierSpace::add_wait`]; a phase
    /// waits for promotions and for objects it writes while they move).
    pub evict_exposed_ps: Ps,
    /// Part of `exposed_ps` during which the helper was copying a
    /// promotion (ps). The rest of `exposed_ps` ran with the helper idle
    /// (polling granularity).
    pub promote_exposed_ps: Ps,
    /// DRAM pages given back by frees ([`TierSpace::free_object`]), no
    /// write-back.
    pub pages_freed: u64,
}

impl TierStats {
    /// Copy time that ran while the application computed (ps).
    pub fn overlapped_ps(&self) -> Ps {
        self.copy_ps.saturating_sub(self.exposed_ps)
    }

    /// Share of copy time overlapped (1 when nothing was copied).
    pub fn overlap_share(&self) -> f64 {
        if self.copy_ps == 0 {
            1.0
        } else {
            self.overlapped_ps() as f64 / self.copy_ps as f64
        }
    }
}

/// One process's tiered objects, shared by its program and its helper.
#[derive(Clone, Debug)]
pub struct TierSpace {
    objs: Vec<TierObject>,
    fifo: VecDeque<MoveReq>,
    fast: u8,
    slow: u8,
    slot: u32,
    capacity: u64,
    dram_bytes: u64,
    stats: TierStats,
    /// The program ended: the helper stops polling.
    closed: bool,
    /// (object, page) whose next promotion discards the old contents
    /// instead of copying them ([`TierSpace::discard_on_promote`]).
    fresh: BTreeSet<(usize, u64)>,
    /// Page-fault handling time charged per page placed without a copy.
    fault_ps: Ps,
    /// The helper's copy in progress (start, destination), for
    /// attributing waits to the move kind that held the FIFO.
    running: Option<(Ps, Tier)>,
    /// The last finished copies (start, end, destination), newest last.
    recent: VecDeque<(Ps, Ps, Tier)>,
    /// Objects the program has freed ([`TierSpace::free_object`]).
    freed: BTreeSet<usize>,
}

/// Finished copies [`TierSpace::add_wait`] looks back over.
const RECENT_COPIES: usize = 64;

/// The handle both generators of one process hold.
pub type TierHandle = Arc<Mutex<TierSpace>>;

/// Locks a handle (a poisoned lock is still usable: no invariant spans a panic).
pub fn lock(h: &TierHandle) -> MutexGuard<'_, TierSpace> {
    h.lock().unwrap_or_else(|e| e.into_inner())
}

impl TierSpace {
    /// A space in regions `fast` / `slow` (indices), thread span `slot`,
    /// with `objs` as (name, bytes, initial tier) laid out back to back, and
    /// a DRAM capacity for reports.
    pub fn new(
        fast: u8,
        slow: u8,
        slot: u32,
        objs: &[(String, u64, Tier)],
        capacity: u64,
    ) -> TierSpace {
        let mut base = 0;
        let objs: Vec<TierObject> = objs
            .iter()
            .map(|(name, size, tier)| {
                let n = size.max(&1).div_ceil(PAGE);
                let o = TierObject {
                    name: name.clone(),
                    size: (*size).max(1),
                    base,
                    pages: vec![*tier; n as usize],
                    pending: 0,
                };
                base += n * PAGE;
                o
            })
            .collect();
        let dram_bytes = objs.iter().map(|o| o.bytes_in(Tier::Dram)).sum();
        TierSpace {
            objs,
            fifo: VecDeque::new(),
            fast,
            slow,
            slot,
            capacity,
            dram_bytes,
            stats: TierStats {
                peak_dram_bytes: dram_bytes,
                ..Default::default()
            },
            closed: false,
            fresh: BTreeSet::new(),
            fault_ps: 0,
            running: None,
            recent: VecDeque::new(),
            freed: BTreeSet::new(),
        }
    }

    /// Marks page `page` of `obj`: its next promotion places it in DRAM
    /// *without copying* its contents, as Linux does for a range the
    /// program no longer needs: `madvise(MADV_DONTNEED)` drops the slow
    /// tier's page and a write fault (`MADV_POPULATE_WRITE`) allocates a
    /// zeroed page on the DRAM node under the range's `mbind` policy. The
    /// mover (helper or worker) then spends `fault_ps` of page-fault
    /// handling ([`TierSpace::set_fault_ps`]) and writes the page's lines
    /// to DRAM (the kernel's zeroing: one non-temporal store per line)
    /// instead of a `CopyLine` per line: no slow-tier read. Only for
    /// pages whose contents the next task overwrites whole (the policy's
    /// promise; Tahoe's `Out`-only blocks). A demotion covering the page,
    /// or a promotion finding it in DRAM already, clears the mark.
    pub fn discard_on_promote(&mut self, obj: usize, page: u64) {
        if self.objs.get(obj).is_some_and(|o| page < o.page_count()) {
            self.fresh.insert((obj, page));
        }
    }

    /// Page-fault handling time per page placed without a copy
    /// ([`TierSpace::discard_on_promote`]).
    pub fn set_fault_ps(&mut self, ps: Ps) {
        self.fault_ps = ps;
    }

    /// Whether the mover places page `page` of `obj` in `to` without a
    /// copy (marked, to DRAM); clears the mark. Counted in
    /// [`TierStats::pages_fresh`].
    pub fn take_fresh(&mut self, obj: usize, page: u64, to: Tier) -> bool {
        let f = to == Tier::Dram && self.fresh.remove(&(obj, page));
        if f {
            self.stats.pages_fresh += 1;
        }
        f
    }

    /// The ops that put page `page` of `obj` into `to`: a copy (one
    /// `CopyLine` per line, old tier to new), or for a page marked by
    /// [`TierSpace::discard_on_promote`] the fault's handling time and
    /// one DRAM store per line (the zeroing).
    pub(super) fn page_ops(&mut self, obj: usize, page: u64, to: Tier, q: &mut OpBatch) {
        let fresh = self.take_fresh(obj, page, to);
        if fresh && self.fault_ps > 0 {
            q.push_back(Op::Compute(self.fault_ps));
        }
        for l in 0..LINES_PER_PAGE {
            let (src, dst) = self.copy_pair(obj, page, l, to);
            q.push_back(if fresh {
                Op::StoreNt { addr: dst }
            } else {
                Op::CopyLine { src, dst, nt: true }
            });
        }
    }

    /// The program has ended: an idle helper may sleep for good.
    pub fn close(&mut self) {
        self.closed = true;
    }

    /// Sets the initial placement: the first `dram_pages[o]` pages of
    /// object `o` in DRAM, the rest in the slow tier (a policy's
    /// `initial()`; before any move).
    pub fn set_initial(&mut self, dram_pages: &[u64]) {
        for (o, obj) in self.objs.iter_mut().enumerate() {
            let n = dram_pages.get(o).copied().unwrap_or(0) as usize;
            for (p, t) in obj.pages.iter_mut().enumerate() {
                *t = if p < n { Tier::Dram } else { Tier::Slow };
            }
        }
        self.dram_bytes = self.objs.iter().map(|o| o.bytes_in(Tier::Dram)).sum();
        self.stats.peak_dram_bytes = self.dram_bytes;
    }

    /// Wraps the space into a shared handle.
    pub fn into_handle(self) -> TierHandle {
        Arc::new(Mutex::new(self))
    }

    /// The objects.
    pub fn objects(&self) -> &[TierObject] {
        &self.objs
    }

    /// DRAM capacity the policy was given (bytes).
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Bytes in DRAM now (promotions in flight included).
    pub fn dram_bytes(&self) -> u64 {
        self.dram_bytes
    }

    /// Migration accounting so far.
    pub fn stats(&self) -> &TierStats {
        &self.stats
    }

    fn region(&self, t: Tier) -> u8 {
        match t {
            Tier::Dram => self.fast,
            Tier::Slow => self.slow,
        }
    }

    /// Address of the line holding byte `offset` of `obj` (wrapped into
    /// the object), in the region where that page lives now.
    pub fn line_addr(&self, obj: usize, offset: u64) -> u64 {
        let Some(o) = self.objs.get(obj) else {
            return addr(self.slow, self.slot, 0);
        };
        let off = offset % o.size;
        addr(
            self.region(o.tier_at(off)),
            self.slot,
            o.base + off / LINE * LINE,
        )
    }

    /// Sets where page `page` of `obj` lives *without* copying: a
    /// program's first touch before it runs (an initial placement), not a
    /// migration. Out-of-range pages are ignored.
    pub fn place_page(&mut self, obj: usize, page: u64, t: Tier) {
        let Some(cur) = self
            .objs
            .get_mut(obj)
            .and_then(|o| o.pages.get_mut(page as usize))
        else {
            return;
        };
        match (*cur, t) {
            (Tier::Slow, Tier::Dram) => self.dram_bytes += PAGE,
            (Tier::Dram, Tier::Slow) => self.dram_bytes -= PAGE,
            _ => {}
        }
        *cur = t;
        self.stats.peak_dram_bytes = self.stats.peak_dram_bytes.max(self.dram_bytes);
    }

    /// Sets every object's placement to its first `dram_pages[o]` pages in
    /// DRAM *without* copying and without time: the hindsight bound's
    /// free moves (`PhaseStart::place`), never a policy a runtime could run.
    pub fn place_prefix(&mut self, dram_pages: &[u64]) {
        // evictions first, so the DRAM peak never counts both sets
        for pass in [Tier::Slow, Tier::Dram] {
            for o in 0..self.objs.len() {
                let n = dram_pages.get(o).copied().unwrap_or(0);
                for p in 0..self.objs[o].page_count() {
                    let t = if p < n { Tier::Dram } else { Tier::Slow };
                    if t == pass {
                        self.place_page(o, p, t);
                    }
                }
            }
        }
    }

    /// The program freed `obj` (a `free` after its last use): its DRAM
    /// pages are given back at once, without a write-back (dead data is
    /// not copied), its queued moves are dropped, and a copy in flight
    /// switches no page when it ends (a promotion's DRAM is released
    /// then). Its pages count as slow-tier pages from now on: no access
    /// names a freed object. Freeing twice, or an unknown object, does
    /// nothing.
    pub fn free_object(&mut self, obj: usize) {
        if obj >= self.objs.len() || !self.freed.insert(obj) {
            return;
        }
        let before = self.fifo.len();
        self.fifo.retain(|m| m.obj != obj);
        let dropped = (before - self.fifo.len()) as u32;
        self.fresh.retain(|&(o, _)| o != obj);
        let o = &mut self.objs[obj];
        o.pending = o.pending.saturating_sub(dropped);
        let mut n = 0;
        for t in o.pages.iter_mut() {
            if *t == Tier::Dram {
                *t = Tier::Slow;
                n += 1;
            }
        }
        self.dram_bytes = self.dram_bytes.saturating_sub(n * PAGE);
        self.stats.pages_freed += n;
    }

    /// Whether `obj` has been freed ([`TierSpace::free_object`]).
    pub fn is_freed(&self, obj: usize) -> bool {
        self.freed.contains(&obj)
    }

    /// Queues a move for the helper (FIFO). Unknown objects are ignored.
    pub fn request(&mut self, m: MoveReq) {
        if let Some(o) = self.objs.get_mut(m.obj) {
            o.pending += 1;
            self.fifo.push_back(m);
        }
    }

    /// True when no request naming `obj` is queued or being copied.
    pub fn settled(&self, obj: usize) -> bool {
        self.objs.get(obj).is_none_or(|o| o.pending == 0)
    }

    /// Pages the helper's queued (not yet started) requests would copy:
    /// its backlog, which Tahoe's cost-benefit check subtracts from a
    /// task's look-ahead slack (thesis Eq. 3.3).
    pub fn queued_pages(&self) -> u64 {
        self.fifo
            .iter()
            .filter_map(|m| {
                let o = self.objs.get(m.obj)?;
                let end = m.first_page.saturating_add(m.pages).min(o.page_count());
                Some(
                    (m.first_page.min(end)..end)
                        .filter(|&p| o.pages[p as usize] != m.to)
                        .count() as u64,
                )
            })
            .sum()
    }

    /// True when the helper has nothing left to do.
    pub fn idle(&self) -> bool {
        self.objs.iter().all(|o| o.pending == 0)
    }

    /// The application waited `ps` for moves.
    pub fn add_exposed(&mut self, ps: Ps) {
        self.stats.exposed_ps += ps;
    }

    /// The application waited from `since` to `now` for moves: adds it to
    /// `exposed_ps` and splits it by the kind of copy the helper was
    /// running meanwhile (`evict_exposed_ps` / `promote_exposed_ps`), so a
    /// wait behind an eviction in the FIFO shows as the eviction's.
    pub fn add_wait(&mut self, since: Ps, now: Ps) {
        self.add_exposed(now.saturating_sub(since));
        let overlap = |a: Ps, b: Ps| b.min(now).saturating_sub(a.max(since));
        let running = self.running.map(|(a, t)| (a, now, t));
        for (a, b, t) in self.recent.iter().copied().chain(running) {
            match t {
                Tier::Slow => self.stats.evict_exposed_ps += overlap(a, b),
                Tier::Dram => self.stats.promote_exposed_ps += overlap(a, b),
            }
        }
    }

    /// The helper started copying towards `to` at `now`.
    fn copy_started(&mut self, now: Ps, to: Tier) {
        self.running = Some((now, to));
    }

    /// The helper's running copy ended at `now`.
    fn copy_ended(&mut self, now: Ps) {
        if let Some((a, t)) = self.running.take() {
            if t == Tier::Slow {
                self.stats.evict_copy_ps += now.saturating_sub(a);
            }
            self.recent.push_back((a, now, t));
            if self.recent.len() > RECENT_COPIES {
                self.recent.pop_front();
            }
        }
    }

    /// Takes the next request and returns the pages it must copy (those
    /// not already in its destination). Promotions count against DRAM now.
    fn start_next(&mut self) -> Option<(MoveReq, Vec<u64>)> {
        let m = self.fifo.pop_front()?;
        Some((m, self.pages_to_copy(m)))
    }

    /// Starts `m` on the calling thread instead of the helper: a program
    /// thread that migrates data itself before using it (Tahoe's worker
    /// moves the pages of the task it is about to run, thesis §4.3.3).
    /// Returns the pages to copy (none for an unknown object). The caller
    /// issues a `CopyLine` per line of each from [`TierSpace::copy_pair`],
    /// drains, then calls [`TierSpace::end_move`]; until then the object is
    /// not [`TierSpace::settled`] and accesses go to the old copy.
    pub fn begin_move(&mut self, m: MoveReq) -> Vec<u64> {
        match self.objs.get_mut(m.obj) {
            Some(o) => o.pending += 1,
            None => return Vec::new(),
        }
        self.pages_to_copy(m)
    }

    /// Removes from the helper's FIFO the requests naming one of `objs`
    /// that it has not started, in FIFO order: a program thread about to
    /// use those objects carries them out itself ([`TierSpace::begin_move`])
    /// instead of waiting behind the helper's queue. Other objects' requests
    /// stay queued.
    pub fn steal_queued(&mut self, objs: &[usize]) -> Vec<MoveReq> {
        let mut out = Vec::new();
        let mut keep = VecDeque::with_capacity(self.fifo.len());
        for m in self.fifo.drain(..) {
            if objs.contains(&m.obj) {
                out.push(m);
            } else {
                keep.push_back(m);
            }
        }
        self.fifo = keep;
        for m in &out {
            if let Some(o) = self.objs.get_mut(m.obj) {
                o.pending = o.pending.saturating_sub(1);
            }
        }
        out
    }

    /// The copy of a [`TierSpace::begin_move`] is durable: switch placement
    /// and account it (`copy_ps`: its duration).
    pub fn end_move(&mut self, m: &MoveReq, pages: &[u64], copy_ps: Ps) {
        if m.obj < self.objs.len() {
            self.finish(m, pages, copy_ps);
        }
    }

    /// Pages of `m` not yet in its destination; promotions count against
    /// DRAM from now.
    fn pages_to_copy(&mut self, m: MoveReq) -> Vec<u64> {
        let o = &self.objs[m.obj];
        let end = m.first_page.saturating_add(m.pages).min(o.page_count());
        let pages: Vec<u64> = (m.first_page.min(end)..end)
            .filter(|&p| o.pages[p as usize] != m.to)
            .collect();
        if !self.fresh.is_empty() {
            // a demotion keeps the contents live; a page already in DRAM
            // is not promoted: either way the mark is stale
            for p in m.first_page.min(end)..end {
                if m.to == Tier::Slow || !pages.contains(&p) {
                    self.fresh.remove(&(m.obj, p));
                }
            }
        }
        if m.to == Tier::Dram {
            self.dram_bytes += pages.len() as u64 * PAGE;
            self.stats.peak_dram_bytes = self.stats.peak_dram_bytes.max(self.dram_bytes);
        }
        pages
    }

    /// The helper's copy of `pages` of `m` is durable: switch placement.
    fn finish(&mut self, m: &MoveReq, pages: &[u64], copy_ps: Ps) {
        let freed = self.freed.contains(&m.obj);
        let o = &mut self.objs[m.obj];
        if !freed {
            for &p in pages {
                o.pages[p as usize] = m.to;
            }
        }
        o.pending = o.pending.saturating_sub(1);
        // a demotion gives its DRAM back now; so does a promotion of an
        // object freed while it was copied (the free released the rest)
        if (m.to == Tier::Slow) != freed {
            self.dram_bytes = self.dram_bytes.saturating_sub(pages.len() as u64 * PAGE);
        }
        if !pages.is_empty() {
            self.stats.moves += 1;
            self.stats.pages_moved += pages.len() as u64;
            self.stats.bytes_moved += pages.len() as u64 * PAGE;
            self.stats.copy_ps += copy_ps;
        }
    }

    /// Source and destination of line `line` of page `page` of `obj` when
    /// moving it to `to`.
    pub fn copy_pair(&self, obj: usize, page: u64, line: u64, to: Tier) -> (u64, u64) {
        let off = self.objs[obj].base + page * PAGE + line * LINE;
        let from = match to {
            Tier::Dram => Tier::Slow,
            Tier::Slow => Tier::Dram,
        };
        (
            addr(self.region(from), self.slot, off),
            addr(self.region(to), self.slot, off),
        )
    }
}

impl SpaceView for TierSpace {
    fn capacity(&self) -> u64 {
        self.capacity
    }
    fn dram_bytes(&self) -> u64 {
        self.dram_bytes
    }
    fn idle(&self) -> bool {
        TierSpace::idle(self)
    }
    fn page_count(&self, obj: usize) -> u64 {
        self.objs.get(obj).map_or(0, |o| o.page_count())
    }
    fn page_tier(&self, obj: usize, page: u64) -> Tier {
        self.objs
            .get(obj)
            .and_then(|o| o.pages.get(page as usize))
            .copied()
            .unwrap_or(Tier::Slow)
    }
    fn settled(&self, obj: usize) -> bool {
        TierSpace::settled(self, obj)
    }
}

/// The copy the helper is working on.
#[derive(Clone, Debug)]
struct Copy {
    req: MoveReq,
    pages: Vec<u64>,
    /// Next page (index into `pages`) to issue.
    next: usize,
    /// All lines issued and the `Drain` after them queued.
    drained: bool,
    start: Ps,
}

/// The helper thread of one [`TierSpace`] (thesis §3.5: it copies in FIFO
/// order and marks a request done only once its copy is complete). One
/// page of `CopyLine`s per step; a `Drain` after the last page, so the
/// placement switches only once every store reached its completion point.
#[derive(Clone, Debug)]
pub struct MigrationHelper {
    space: TierHandle,
    cur: Option<Copy>,
    /// Sleep between two looks at an empty FIFO.
    poll: Ps,
}

impl MigrationHelper {
    /// A helper for `space` that looks at its FIFO every `poll` when idle.
    pub fn new(space: TierHandle, poll: Ps) -> MigrationHelper {
        MigrationHelper {
            space,
            cur: None,
            poll: poll.max(1),
        }
    }

    /// The next step's ops (see the type's doc).
    pub(super) fn refill(&mut self, q: &mut OpBatch, now: Ps) {
        let mut s = lock(&self.space);
        loop {
            match &mut self.cur {
                None => match s.start_next() {
                    Some((req, pages)) => {
                        if !pages.is_empty() {
                            s.copy_started(now, req.to);
                        }
                        self.cur = Some(Copy {
                            req,
                            pages,
                            next: 0,
                            drained: false,
                            start: now,
                        })
                    }
                    None => {
                        let sleep = if s.closed { CLOSED_SLEEP } else { self.poll };
                        q.push_back(Op::Compute(sleep));
                        return;
                    }
                },
                Some(c) if c.next < c.pages.len() => {
                    let page = c.pages[c.next];
                    c.next += 1;
                    s.page_ops(c.req.obj, page, c.req.to, q);
                    return;
                }
                Some(c) if !c.drained && !c.pages.is_empty() => {
                    c.drained = true;
                    q.push_back(Op::Drain);
                    return;
                }
                Some(c) => {
                    let took = now - c.start;
                    if !c.pages.is_empty() {
                        s.copy_ended(now);
                    }
                    s.finish(&c.req, &c.pages, took);
                    self.cur = None;
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "tiered_tests.rs"]
mod tests;
