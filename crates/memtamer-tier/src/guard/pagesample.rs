//! Per-page access sampling by protection faults, for memory the sampler
//! does not own (the dependence ranges of an OpenMP task, Tahoe's
//! representative profile, thesis §4.3.3).
//!
//! [`crate::profiler`] samples *objects* the registry owns and counts one
//! number per object; Tahoe needs one count per *page* of ranges that belong
//! to the program. The mechanism is the same (Linux NUMA-balancing-style
//! hinting faults, no PMU): a bounded sample of pages is mapped `PROT_NONE`,
//! the first touch of such a page faults, the shared SIGSEGV handler
//! ([`super`], the `guard` module) finds the page in a lock-free table ([`on_fault`]),
//! gives it back its original protection and counts the touch. A periodic
//! [`PageSampler::rearm`] protects the touched pages again, so a page's count
//! is the number of sampling intervals in which it was touched: the
//! per-page form of [`crate::profiler::estimate_visits`] with one armed page
//! (at most one visit per page and interval, so pages revisited within one
//! interval are undercounted, as there).
//!
//! Safety rules the handler keeps (async-signal-safe only): it reads
//! atomics, calls `syscall(gettid)` and `mprotect`, never allocates or locks.
//! Any fault on a page in the table, by any thread, restores the page's
//! original protection before returning, so no access is ever lost; faults
//! by threads other than the entry's owner are counted apart ("foreign") and
//! not as samples of the owner. Entries whose page was given back stay in
//! the table (state `RESTORED`, still matching) until the slot is reused, so
//! a thread that faulted just before the owner restored the page finds its
//! entry and retries instead of being treated as a crash. Faults on pages
//! not in the table go on to the previous handler (a real crash crashes).
//!
//! Only pages of plain anonymous private read-write mappings (large
//! allocations) are armed, never the heap, thread arenas, stacks or a
//! `.bss`, which the kernel touches on the runtime's behalf
//! ([`Mapping::armable`]); each gets its mapping's protection back. The kernel does not fault on behalf of a system
//! call: a `read(2)` into an armed page fails with `EFAULT` (documented in
//! docs/tahoe.md; the task clients make no system calls on their data).

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, AtomicU8, Ordering::SeqCst};

/// Entries in the lock-free page table (a power of two).
pub const TABLE: usize = 8192;
/// Longest probe sequence (open addressing); a page whose sequence is full
/// is not armed.
const PROBE: usize = 64;

const FREE: u8 = 0;
const ARMED: u8 = 1;
const HIT: u8 = 2;
const RESTORED: u8 = 3;

struct Entry {
    /// Page number (address / page size); meaningful unless `FREE`.
    page: AtomicU64,
    state: AtomicU8,
    /// Protection to give back (`PROT_*` of the page's mapping).
    prot: AtomicI32,
    /// Thread id of the owner (the representative's thread).
    owner: AtomicI32,
    /// Touches by the owner (intervals in which it touched the page).
    hits: AtomicU32,
    /// Touches by other threads.
    foreign: AtomicU32,
    /// CLOCK_MONOTONIC ns when the owner gave the page back (`RESTORED`).
    restored_ns: AtomicU64,
}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Entry = Entry {
    page: AtomicU64::new(0),
    state: AtomicU8::new(FREE),
    prot: AtomicI32::new(0),
    owner: AtomicI32::new(0),
    hits: AtomicU32::new(0),
    foreign: AtomicU32::new(0),
    restored_ns: AtomicU64::new(0),
};

static ENTRIES: [Entry; TABLE] = [EMPTY; TABLE];
/// Serialises arming, re-arming and restoring (never taken by the handler).
static ARM_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn slot_of(page: u64) -> usize {
    // Fibonacci hashing: neighbouring pages land far apart.
    (page.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40) as usize & (TABLE - 1)
}

/// How long a given-back page still matches: a thread that faulted just
/// before the owner restored the page retries instead of crashing; after
/// this, a fault there is someone else's (the address may have been
/// unmapped and reused).
const GRACE_NS: u64 = 1_000_000_000;

fn now_ns() -> u64 {
    // SAFETY: clock_gettime is async-signal-safe and writes only `ts`.
    unsafe {
        let mut ts: libc::timespec = std::mem::zeroed();
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    }
}

fn gettid() -> i32 {
    // SAFETY: gettid has no preconditions and is async-signal-safe.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

/// The calling thread's id (the owner to pass to [`PageSampler::arm`]).
pub fn current_tid() -> i32 {
    gettid()
}

/// Called by the SIGSEGV handler for a fault at `addr` that is in no
/// registered object: true if the page is (or was) one of ours, after its
/// protection has been restored. Async-signal-safe: atomics, `gettid`,
/// `mprotect`.
pub(crate) fn on_fault(addr: usize, page_size: usize) -> bool {
    let page = (addr / page_size) as u64;
    let h = slot_of(page);
    for i in 0..PROBE {
        let e = &ENTRIES[(h + i) & (TABLE - 1)];
        let st = e.state.load(SeqCst);
        if st == FREE {
            return false;
        }
        if e.page.load(SeqCst) != page {
            continue;
        }
        if st == RESTORED {
            // The owner gave the page back (or is about to: finish marks
            // first, then restores): retry the access, within the grace.
            return now_ns().saturating_sub(e.restored_ns.load(SeqCst)) < GRACE_NS;
        }
        let prot = e.prot.load(SeqCst);
        // SAFETY: the page lies in a mapping that had `prot` when armed;
        // mprotect is async-signal-safe.
        unsafe {
            libc::mprotect(
                (page as usize * page_size) as *mut libc::c_void,
                page_size,
                prot,
            )
        };
        if e.state.compare_exchange(ARMED, HIT, SeqCst, SeqCst).is_ok() {
            if gettid() == e.owner.load(SeqCst) {
                e.hits.fetch_add(1, SeqCst);
            } else {
                e.foreign.fetch_add(1, SeqCst);
            }
        }
        return true;
    }
    false
}

/// One line of `/proc/self/maps`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapping {
    /// Address range.
    pub range: Range<usize>,
    /// `PROT_*` bits.
    pub prot: i32,
    /// Private (copy-on-write) mapping.
    pub private: bool,
    /// Path or pseudo-name (`[heap]`, `[stack]`; empty for anonymous).
    pub name: String,
    /// The mapping right below ends at this one's start and is
    /// inaccessible (`---p`): the layout of a thread stack above its guard
    /// page (glibc, libomp's workers).
    pub guard_below: bool,
    /// Starts on a 64 MiB boundary (glibc's `HEAP_MAX_SIZE` on 64-bit)
    /// and the mapping right above starts at this one's end and is
    /// inaccessible: a glibc thread arena below its reserve. (A block
    /// `malloc` maps may well sit below a thread stack's guard page; only
    /// the alignment tells an arena apart.)
    pub arena: bool,
    /// The mapping right below is file-backed and ends at this one's
    /// start: it begins with a loaded object's `.bss`, possibly merged with
    /// blocks mapped after it (informational: [`Memory::armable`] refuses
    /// the `.bss` itself by its load segment, the rest may be armed).
    pub after_file: bool,
}

impl Mapping {
    /// Pages here may be armed: private, readable, writable, anonymous
    /// mappings that hold only the program's large allocations (what
    /// `malloc` maps for a block above its mmap threshold). Refused, because
    /// the *kernel* reads or writes them on the runtime's behalf, and a
    /// kernel access to a `PROT_NONE` page is not a fault we can handle (a
    /// system call gets `EFAULT`; the rseq or signal-frame update kills the
    /// thread with an undeliverable SIGSEGV):
    /// * `[heap]` and thread arenas ([`Mapping::arena`]): small allocations of libc, libomp and this
    ///   tool, futex words, and the main thread's control block (glibc
    ///   allocates it with `sbrk`: its rseq area and robust-futex list);
    /// * stacks: `[stack]`, and thread stacks (anonymous, above a guard
    ///   page), which also hold their thread's control block;
    /// * a loaded object's `.bss` (anonymous, right after its file), which
    ///   holds runtime locks, this tool's included: the kernel may merge it
    ///   with a block mapped right after it into one mapping, so it is
    ///   refused by its load segment ([`Memory::armable`]), not here;
    /// * shared and file-backed mappings (other processes, page cache).
    ///
    /// A refused page is not sampled; its object falls back to nearest
    /// samples or the uniform profile.
    pub fn armable(&self) -> bool {
        let rw = libc::PROT_READ | libc::PROT_WRITE;
        self.private
            && self.prot & rw == rw
            && self.name.is_empty()
            && !self.guard_below
            && !self.arena
    }
}

/// Alignment of glibc's thread arenas (`HEAP_MAX_SIZE`, 64-bit).
const ARENA_ALIGN: usize = 64 << 20;

/// Parses `/proc/self/maps` text (lines that do not parse are skipped;
/// the kernel lists mappings in address order).
pub fn parse_maps(text: &str) -> Vec<Mapping> {
    parse_maps_with(text, |_| false)
}

/// [`parse_maps`], where an inaccessible mapping for which `ours` is true
/// (pages this sampler armed, which split the program's mappings) is not
/// taken for a stack guard or an arena reserve.
pub fn parse_maps_with(text: &str, ours: impl Fn(&Range<usize>) -> bool) -> Vec<Mapping> {
    let mut v: Vec<Mapping> = text
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (lo, hi) = f.next()?.split_once('-')?;
            let perms = f.next()?.as_bytes();
            if perms.len() < 4 {
                return None;
            }
            let name = f.nth(3).unwrap_or("").to_string();
            let mut prot = 0;
            if perms[0] == b'r' {
                prot |= libc::PROT_READ;
            }
            if perms[1] == b'w' {
                prot |= libc::PROT_WRITE;
            }
            if perms[2] == b'x' {
                prot |= libc::PROT_EXEC;
            }
            Some(Mapping {
                range: usize::from_str_radix(lo, 16).ok()?..usize::from_str_radix(hi, 16).ok()?,
                prot,
                private: perms[3] == b'p',
                name,
                guard_below: false,
                arena: false,
                after_file: false,
            })
        })
        .collect();
    for i in 1..v.len() {
        let (lo, hi) = v.split_at_mut(i);
        let (prev, m) = (&lo[i - 1], &mut hi[0]);
        let touch = prev.range.end == m.range.start;
        m.guard_below = touch && prev.prot == 0 && !ours(&prev.range);
        m.after_file = touch && prev.name.starts_with('/');
    }
    for i in 0..v.len().saturating_sub(1) {
        let (lo, hi) = v.split_at_mut(i + 1);
        let (m, next) = (&mut lo[i], &hi[0]);
        m.arena = m.range.start % ARENA_ALIGN == 0
            && m.range.end == next.range.start
            && next.prot == 0
            && !ours(&next.range);
    }
    v
}

/// What may be armed in this process: the mappings, and the writable
/// load segments (`.data`, `.bss`) of every loaded object, which the
/// kernel merges with neighbouring anonymous mappings (a block `malloc`
/// maps right after this tool's `.bss` shows as one mapping with it) and
/// which hold runtime state: libc's main arena, libomp's and this tool's
/// locks and tables.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Memory {
    /// `/proc/self/maps`, parsed.
    pub maps: Vec<Mapping>,
    /// Address ranges never armed: the writable `PT_LOAD` segments,
    /// page-rounded outward, plus whatever the caller adds with
    /// [`Memory::refuse`] (a thread control block).
    pub segments: Vec<Range<usize>>,
}

impl Memory {
    /// Reads this process's mappings and loaded objects' segments.
    pub fn read() -> Result<Self, crate::TierError> {
        let text =
            std::fs::read_to_string("/proc/self/maps").map_err(|e| crate::TierError::Os {
                what: "read /proc/self/maps".into(),
                source: e,
            })?;
        Ok(Memory {
            maps: parse_maps_with(&text, |r| armed_by_us(r, super::page_size())),
            segments: writable_segments(super::page_size()),
        })
    }

    /// Never arms `r` (e.g. the main thread's control block, whose rseq
    /// area and robust-futex list the kernel writes: glibc's loader may
    /// place it in an anonymous mapping next to program data).
    pub fn refuse(&mut self, r: Range<usize>) {
        self.segments.push(r);
    }

    /// The mapping holding `addr`, if any.
    pub fn mapping(&self, addr: usize) -> Option<&Mapping> {
        self.maps
            .iter()
            .find(|m| m.range.start <= addr && addr < m.range.end)
    }

    /// The protection to restore if `[addr, addr+len)` may be armed: it
    /// lies in one armable mapping ([`Mapping::armable`]) and in no
    /// writable load segment.
    pub fn armable(&self, addr: usize, len: usize) -> Option<i32> {
        let end = addr.checked_add(len)?;
        if self.segments.iter().any(|s| s.start < end && addr < s.end) {
            return None;
        }
        self.maps
            .iter()
            .find(|m| m.range.start <= addr && end <= m.range.end)
            .filter(|m| m.armable())
            .map(|m| m.prot)
    }
}

/// Every page of `r` is armed in the table (a `PROT_NONE` mapping that
/// this sampler made, not the program's).
fn armed_by_us(r: &Range<usize>, page: usize) -> bool {
    let _g = ARM_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    (r.start / page..r.end.div_ceil(page)).all(|p| {
        let p = p as u64;
        let h = slot_of(p);
        (0..PROBE).any(|k| {
            let e = &ENTRIES[(h + k) & (TABLE - 1)];
            e.state.load(SeqCst) == ARMED && e.page.load(SeqCst) == p
        })
    })
}

/// Writable `PT_LOAD` segments of every loaded object (`dl_iterate_phdr`),
/// page-rounded outward.
fn writable_segments(page: usize) -> Vec<Range<usize>> {
    unsafe extern "C" fn each(
        info: *mut libc::dl_phdr_info,
        _size: usize,
        data: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: dl_iterate_phdr passes a valid info with `dlpi_phnum`
        // program headers; `data` is the Vec passed below.
        unsafe {
            let out = &mut *(data as *mut Vec<(usize, usize)>);
            let info = &*info;
            for k in 0..info.dlpi_phnum as usize {
                let ph = &*info.dlpi_phdr.add(k);
                if ph.p_type == libc::PT_LOAD && ph.p_flags & libc::PF_W != 0 {
                    let lo = info.dlpi_addr as usize + ph.p_vaddr as usize;
                    out.push((lo, lo + ph.p_memsz as usize));
                }
            }
        }
        0
    }
    let mut v: Vec<(usize, usize)> = Vec::new();
    // SAFETY: the callback only reads the headers and pushes to `v`.
    unsafe { libc::dl_iterate_phdr(Some(each), &mut v as *mut _ as *mut libc::c_void) };
    v.into_iter()
        .map(|(lo, hi)| (lo / page * page)..hi.div_ceil(page) * page)
        .collect()
}

/// Up to `cap` pages of `ranges` (page numbers), spread evenly: the pages
/// are split into `cap` equal strata and one page is drawn per stratum
/// (seeded, so a run is reproducible). All pages when they fit.
pub fn stratified(ranges: &[Range<u64>], cap: usize, seed: u64) -> Vec<u64> {
    let total: u64 = ranges.iter().map(|r| r.end.saturating_sub(r.start)).sum();
    let all = || ranges.iter().flat_map(|r| r.clone()).collect::<Vec<u64>>();
    if total <= cap as u64 {
        return all();
    }
    if cap == 0 {
        return Vec::new();
    }
    let mut rng = seed | 1;
    let mut next = || {
        rng ^= rng >> 12;
        rng ^= rng << 25;
        rng ^= rng >> 27;
        rng.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    // The k-th of `total` pages in range order.
    let nth = |mut k: u64| {
        for r in ranges {
            let n = r.end.saturating_sub(r.start);
            if k < n {
                return r.start + k;
            }
            k -= n;
        }
        0
    };
    (0..cap as u64)
        .map(|s| {
            let lo = s * total / cap as u64;
            let hi = ((s + 1) * total / cap as u64).max(lo + 1);
            nth(lo + next() % (hi - lo))
        })
        .collect()
}

/// Per-page counts for every page of `ranges` from the sampled pages'
/// counts: each page takes the count of the nearest sampled page of the
/// same range (ties: the lower one), the way one armed page stands for its
/// stratum; pages of a range with no sample are left out.
pub fn fill_nearest(ranges: &[Range<u64>], sampled: &BTreeMap<u64, f64>) -> Vec<(u64, f64)> {
    let mut out = Vec::new();
    for r in ranges {
        let inside: Vec<(u64, f64)> = sampled.range(r.clone()).map(|(&p, &c)| (p, c)).collect();
        if inside.is_empty() {
            continue;
        }
        let mut j = 0;
        for p in r.clone() {
            while j + 1 < inside.len() && inside[j + 1].0 <= p {
                j += 1;
            }
            let c = match inside.get(j + 1) {
                Some(&(q, cq)) if inside[j].0 < p && q - p < p - inside[j].0 => cq,
                _ => inside[j].1,
            };
            out.push((p, c));
        }
    }
    out
}

/// What a finished sampler saw.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PageCounts {
    /// (page, intervals in which the owner touched it), every armed page
    /// (zero counts included: an armed page never touched is cold).
    pub pages: BTreeMap<u64, f64>,
    /// Faults by other threads on these pages (not samples).
    pub foreign: u64,
    /// Armings made in all (first arming plus re-armings).
    pub armings: u64,
}

/// The armed pages of one owner (one representative task).
#[derive(Debug)]
pub struct PageSampler {
    page_size: usize,
    /// Table indices this sampler holds.
    slots: Vec<usize>,
    armings: u64,
}

/// Protects one page (`PROT_NONE`); false if the kernel refused.
fn protect_none(page: u64, page_size: usize) -> bool {
    // SAFETY: the page lies in a private mapping of this process that was
    // armable when the table entry was made.
    unsafe {
        libc::mprotect(
            (page as usize * page_size) as *mut libc::c_void,
            page_size,
            libc::PROT_NONE,
        ) == 0
    }
}

impl PageSampler {
    /// Arms `pages` (page numbers of `page_size`) for thread `owner`:
    /// each page that `mem` allows ([`Memory::armable`]) and has room in
    /// the table is mapped `PROT_NONE`. Installs the shared SIGSEGV handler
    /// first. Pages already armed by another sampler are skipped (a page
    /// has one owner at a time), and so are pages of tiering objects (a
    /// registry of this process protects and remaps those itself: arming
    /// one could stall a migration's copy or unprotect it mid-copy).
    pub fn arm(
        pages: &[u64],
        owner: i32,
        mem: &Memory,
        page_size: usize,
    ) -> Result<Self, crate::TierError> {
        super::install()?;
        let _g = ARM_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let mut slots = Vec::with_capacity(pages.len());
        for &p in pages {
            let Some(prot) = mem.armable(p as usize * page_size, page_size) else {
                continue;
            };
            if super::in_object(p as usize * page_size, page_size) {
                continue; // a tiering object: the registry's to protect
            }
            let Some(i) = Self::take_slot(p) else {
                continue;
            };
            let e = &ENTRIES[i];
            e.prot.store(prot, SeqCst);
            e.owner.store(owner, SeqCst);
            e.hits.store(0, SeqCst);
            e.foreign.store(0, SeqCst);
            e.page.store(p, SeqCst);
            e.state.store(ARMED, SeqCst);
            if protect_none(p, page_size) {
                slots.push(i);
            } else {
                e.restored_ns.store(now_ns(), SeqCst);
                e.state.store(RESTORED, SeqCst);
            }
        }
        let armings = slots.len() as u64;
        Ok(PageSampler {
            page_size,
            slots,
            armings,
        })
    }

    /// A table slot for page `p` (lock held): its own old entry, else a
    /// free one, else one of another page given back more than the grace
    /// ago; `None` if the probe
    /// sequence holds only live entries.
    fn take_slot(p: u64) -> Option<usize> {
        let h = slot_of(p);
        let mut reuse = None;
        for k in 0..PROBE {
            let i = (h + k) & (TABLE - 1);
            let e = &ENTRIES[i];
            match e.state.load(SeqCst) {
                FREE => return Some(reuse.unwrap_or(i)),
                RESTORED if e.page.load(SeqCst) == p => return Some(i),
                RESTORED if now_ns().saturating_sub(e.restored_ns.load(SeqCst)) >= GRACE_NS => {
                    reuse.get_or_insert(i);
                }
                _ if e.page.load(SeqCst) == p => return None, // armed by another owner
                _ => {}
            }
        }
        reuse
    }

    /// Pages armed now.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Nothing armed.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Starts a new interval: pages touched since the last one are
    /// protected again (a page left armed stays so). Returns the pages
    /// re-armed.
    pub fn rearm(&mut self) -> usize {
        let _g = ARM_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let mut n = 0;
        for &i in &self.slots {
            let e = &ENTRIES[i];
            // HIT -> ARMED before protecting: a thread faulting in between
            // finds ARMED, restores and counts (a touch of the new interval).
            if e.state.compare_exchange(HIT, ARMED, SeqCst, SeqCst).is_ok() {
                if protect_none(e.page.load(SeqCst), self.page_size) {
                    n += 1;
                } else {
                    e.state.store(HIT, SeqCst);
                }
            }
        }
        self.armings += n as u64;
        n
    }

    /// Gives every page back its protection and returns the counts.
    pub fn finish(mut self) -> PageCounts {
        let _g = ARM_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = PageCounts {
            armings: self.armings,
            ..PageCounts::default()
        };
        for i in std::mem::take(&mut self.slots) {
            let e = &ENTRIES[i];
            let page = e.page.load(SeqCst);
            // Mark first: a fault from here on only retries (no count);
            // RESTORED still matches for GRACE_NS, so a late fault is not
            // taken for a crash.
            e.restored_ns.store(now_ns(), SeqCst);
            e.state.store(RESTORED, SeqCst);
            // SAFETY: the entry's page and its original protection.
            unsafe {
                libc::mprotect(
                    (page as usize * self.page_size) as *mut libc::c_void,
                    self.page_size,
                    e.prot.load(SeqCst),
                )
            };
            out.pages.insert(page, e.hits.load(SeqCst) as f64);
            out.foreign += e.foreign.load(SeqCst) as u64;
        }
        out
    }
}

impl Drop for PageSampler {
    /// A sampler dropped without [`PageSampler::finish`] still gives its
    /// pages back (no page stays protected behind the program's back).
    fn drop(&mut self) {
        if !self.slots.is_empty() {
            let s = PageSampler {
                page_size: self.page_size,
                slots: std::mem::take(&mut self.slots),
                armings: 0,
            };
            let _ = s.finish();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stratified_spreads_and_caps() {
        let r = std::iter::once(0..100u64).collect::<Vec<_>>();
        let s = stratified(&r, 10, 7);
        assert_eq!(s.len(), 10);
        for (k, p) in s.iter().enumerate() {
            assert!((k as u64 * 10..(k as u64 + 1) * 10).contains(p), "{k} {p}");
        }
        assert_eq!(stratified(&r, 10, 7), s, "seeded");
        assert_eq!(stratified(&[5..8, 20..22], 10, 1), vec![5, 6, 7, 20, 21]);
        assert!(stratified(&r, 0, 1).is_empty());
        // Two ranges: strata cross the boundary, every pick is inside one.
        let s = stratified(&[0..50, 1000..1050], 20, 3);
        assert_eq!(s.len(), 20);
        assert!(s.iter().all(|p| *p < 50 || (1000..1050).contains(p)));
        assert_eq!(s.iter().filter(|p| **p >= 1000).count(), 10);
    }

    #[test]
    fn our_armed_pages_are_not_guards() {
        let text = "\
7f0000000000-7f0000001000 rw-p 00000000 00:00 0
7f0000001000-7f0000002000 ---p 00000000 00:00 0
7f0000002000-7f0000100000 rw-p 00000000 00:00 0
";
        assert!(parse_maps(text)[2].guard_below);
        let m = parse_maps_with(text, |r| r.start == 0x7f0000001000);
        assert!(!m[2].guard_below && m[2].armable());
    }

    #[test]
    fn memory_refuses_load_segments_inside_an_armable_mapping() {
        let mut mem = Memory {
            maps: parse_maps("7f0000000000-7f0000100000 rw-p 00000000 00:00 0\n"),
            segments: Vec::new(),
        };
        mem.refuse(0x7f0000000000..0x7f0000003000);
        assert_eq!(mem.armable(0x7f0000002000, 4096), None, ".bss part");
        assert_eq!(
            mem.armable(0x7f0000003000, 4096),
            Some(libc::PROT_READ | libc::PROT_WRITE)
        );
        assert_eq!(mem.armable(0x7f00000ff000, 8192), None, "past the end");
        assert_eq!(mem.armable(0x100000, 4096), None, "unmapped");
        // This process: its own .bss (ENTRIES) is never armable.
        let me = Memory::read().unwrap();
        let entries = &ENTRIES as *const _ as usize / 4096 * 4096;
        assert_eq!(me.armable(entries, 4096), None);
    }

    #[test]
    fn fill_takes_the_nearest_sample_of_the_same_range() {
        let sampled: BTreeMap<u64, f64> = [(1, 10.0), (5, 2.0), (21, 4.0)].into_iter().collect();
        let f = fill_nearest(&[0..8, 20..23, 30..32], &sampled);
        let want = vec![
            (0, 10.0),
            (1, 10.0),
            (2, 10.0),
            (3, 10.0), // tie between 1 and 5: the lower
            (4, 2.0),
            (5, 2.0),
            (6, 2.0),
            (7, 2.0),
            (20, 4.0),
            (21, 4.0),
            (22, 4.0),
        ];
        assert_eq!(f, want);
    }

    #[test]
    fn maps_parse_and_armable() {
        let text = "\
55d0c0a00000-55d0c0a21000 rw-p 00000000 00:00 0                          [heap]
7f0000000000-7f0000100000 rw-p 00000000 00:00 0 
7f0000100000-7f0000200000 r--p 00000000 08:01 123                        /usr/lib/libc.so.6
7f0000200000-7f0000201000 rw-p 00000000 00:00 0 
7f0000300000-7f0000400000 rw-s 00000000 00:05 9                          /dev/shm/x
7f1000000000-7f1000021000 rw-p 00000000 00:00 0 
7f1000021000-7f1004000000 ---p 00000000 00:00 0 
7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0                          [stack]
7ffd00000000-7ffd00001000 ---p 00000000 00:00 0
7ffd00001000-7ffd00801000 rw-p 00000000 00:00 0
garbage
";
        let m = parse_maps(text);
        assert_eq!(m.len(), 10);
        assert_eq!(m[0].range, 0x55d0c0a00000..0x55d0c0a21000);
        assert_eq!(m[0].name, "[heap]");
        assert_eq!(m[1].name, "");
        assert_eq!(m[2].prot, libc::PROT_READ);
        assert!(m[3].after_file, "a .bss");
        assert!(m[5].arena, "a thread arena");
        assert!(m[9].guard_below, "a thread stack above its guard page");
        assert!(!m[1].guard_below && !m[1].arena && !m[1].after_file);
        let ok: Vec<bool> = m.iter().map(Mapping::armable).collect();
        // The plain anonymous mappings (large malloc blocks; m[3]'s .bss
        // part is refused by Memory's load segments).
        let mut want = vec![false; 10];
        want[1] = true;
        want[3] = true;
        assert_eq!(ok, want);
    }
}
