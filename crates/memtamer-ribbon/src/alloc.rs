//! The coalescing allocator (thesis §6.3.3, Listing 6.1; digest §3.4):
//! a value request reserves cache-line-aligned space for the value *and*
//! the key that follows it (values are allocated before their keys), and
//! the next key request of the same thread returns that reserved space. A
//! 100 B value with its 24 B key then fits in two lines flushed by one
//! request, instead of spanning three to four lines in two requests.
//!
//! Blocks come in 64 B size classes carved from 64 KiB chunks (the
//! class size avoids false sharing, as in ArchTM §5.3); chunks come from
//! the system allocator or from a caller-given region (a mapped PM file).
//! A block holding a value and its key is freed when both were freed.

use std::alloc::Layout;
use std::cell::Cell;
use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::error::RibbonError;

/// Cache line: the unit of alignment and of size classes.
const LINE: usize = memtamer_pmem::CACHE_LINE;
/// Bytes carved at a time for small blocks.
pub const CHUNK: usize = 64 * 1024;
/// Largest block served from chunks; bigger requests get their own.
const SMALL_MAX: usize = 4096;
pub use crate::error::MAX_ALLOC;
/// Default bytes reserved after each value for its key (thesis Listing
/// 6.1 uses 24 B keys).
pub const DEFAULT_KEY_RESERVE: usize = 24;

/// What a `ribbon_alloc` request is for (thesis Table 6.2, `type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A key: placed in the space its value reserved, if it fits.
    Key,
    /// A value: reserves room for the key that follows.
    Value,
}

fn round_up(n: usize) -> usize {
    n.div_ceil(LINE) * LINE
}

/// One chunk (or one large block).
struct Chunk {
    /// Block size of this chunk.
    class: usize,
    /// First block.
    data: usize,
    /// Bytes of blocks.
    len: usize,
    /// Live allocations per block (value, key, or both).
    refs: Vec<u8>,
    /// Where it came from, for release (None: carved from the region).
    layout: Option<Layout>,
}

struct Inner {
    chunks: BTreeMap<usize, Chunk>,
    /// Free block starts per class (index: class / LINE).
    free: Vec<Vec<usize>>,
    /// Keys handed out inside value blocks.
    keys: HashSet<usize>,
    /// The caller's region: next free byte and end.
    region: Option<(usize, usize)>,
}

/// A coalescing key/value allocator.
pub struct Allocator {
    inner: Mutex<Inner>,
    key_reserve: usize,
    id: usize,
}

static IDS: AtomicUsize = AtomicUsize::new(1);

thread_local! {
    /// The space reserved by this thread's last value: (allocator id,
    /// key address, bytes).
    static PENDING: Cell<(usize, usize, usize)> = const { Cell::new((0, 0, 0)) };
}

impl Allocator {
    /// An allocator backed by the system allocator, reserving
    /// `key_reserve` bytes after each value.
    pub fn new(key_reserve: usize) -> Allocator {
        Allocator {
            inner: Mutex::new(Inner {
                chunks: BTreeMap::new(),
                free: vec![Vec::new(); SMALL_MAX / LINE + 1],
                keys: HashSet::new(),
                region: None,
            }),
            key_reserve: key_reserve.min(SMALL_MAX),
            id: IDS.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// An allocator carving chunks from `base..base+len` (e.g. a mapped PM
    /// file) instead of the system allocator; large blocks too.
    ///
    /// # Safety
    /// The range must be mapped, writable and unused for the allocator's life.
    pub unsafe fn with_region(base: *mut u8, len: usize, key_reserve: usize) -> Allocator {
        let a = Allocator::new(key_reserve);
        let start = round_up(base as usize);
        let end = (base as usize).saturating_add(len);
        if let Ok(mut g) = a.inner.lock() {
            g.region = Some((start, end.max(start)));
        }
        a
    }

    /// Bytes reserved after each value.
    pub fn key_reserve(&self) -> usize {
        self.key_reserve
    }

    /// Allocates `len` bytes, cache-line aligned (thesis `ribbon_alloc`).
    pub fn alloc(&self, len: usize, kind: Kind) -> Result<*mut u8, RibbonError> {
        if len == 0 || len > MAX_ALLOC {
            return Err(RibbonError::AllocSize(len));
        }
        let mut g = self
            .inner
            .lock()
            .map_err(|_| RibbonError::OutOfMemory(len))?;
        match kind {
            Kind::Key => {
                let (id, at, room) = PENDING.with(Cell::get);
                PENDING.with(|p| p.set((0, 0, 0)));
                if id == self.id && len <= room {
                    if let Some((i, c)) = block_of(&mut g.chunks, at) {
                        c.refs[i] = c.refs[i].saturating_add(1);
                        g.keys.insert(at);
                        return Ok(at as *mut u8);
                    }
                }
                g.block(round_up(len))
            }
            Kind::Value => {
                let size = round_up(len.saturating_add(self.key_reserve));
                let p = g.block(size)?;
                let room = size - len;
                PENDING.with(|c| c.set((self.id, p as usize + len, room)));
                Ok(p)
            }
        }
    }

    /// Frees what [`Allocator::alloc`] returned (thesis `ribbon_free`). A
    /// value's block is reused only when its key was freed too.
    pub fn free(&self, p: *mut u8) -> Result<(), RibbonError> {
        let addr = p as usize;
        let mut g = self.inner.lock().map_err(|_| RibbonError::BadFree(addr))?;
        let Inner {
            chunks, free, keys, ..
        } = &mut *g;
        let Some((i, c)) = block_of(chunks, addr) else {
            return Err(RibbonError::BadFree(addr));
        };
        let start = c.data + i * c.class;
        if addr != start && !keys.remove(&addr) {
            return Err(RibbonError::BadFree(addr));
        }
        if c.refs[i] == 0 {
            return Err(RibbonError::BadFree(addr));
        }
        c.refs[i] -= 1;
        if addr == start {
            // a freed value must not be found by a later key
            PENDING.with(|pd| {
                let (id, at, _) = pd.get();
                if id == self.id && at > start && at < start + c.class {
                    pd.set((0, 0, 0));
                }
            });
        }
        if c.refs[i] == 0 {
            if c.class <= SMALL_MAX {
                free[c.class / LINE].push(start);
            } else if let Some(layout) = c.layout {
                let base = c.data;
                chunks.remove(&base);
                // SAFETY: allocated with exactly this layout in `block`.
                unsafe { std::alloc::dealloc(base as *mut u8, layout) };
            }
        }
        Ok(())
    }
}

/// The block containing `addr` and its chunk, if `addr` lies in one.
fn block_of(chunks: &mut BTreeMap<usize, Chunk>, addr: usize) -> Option<(usize, &mut Chunk)> {
    let (_, c) = chunks.range_mut(..=addr).next_back()?;
    if addr >= c.data + c.len {
        return None;
    }
    let i = (addr - c.data) / c.class;
    Some((i, c))
}

impl Inner {
    /// A block of `size` bytes (a multiple of LINE), reference count 1.
    fn block(&mut self, size: usize) -> Result<*mut u8, RibbonError> {
        if size <= SMALL_MAX {
            if self.free[size / LINE].is_empty() {
                self.carve(size)?;
            }
            let p = self.free[size / LINE]
                .pop()
                .ok_or(RibbonError::OutOfMemory(size))?;
            let (i, c) = block_of(&mut self.chunks, p).ok_or(RibbonError::OutOfMemory(size))?;
            c.refs[i] = 1;
            return Ok(p as *mut u8);
        }
        let (base, layout) = self.raw(size)?;
        self.chunks.insert(
            base,
            Chunk {
                class: size,
                data: base,
                len: size,
                refs: vec![1],
                layout,
            },
        );
        Ok(base as *mut u8)
    }

    /// Adds a chunk of `class`-byte blocks to the free list.
    fn carve(&mut self, class: usize) -> Result<(), RibbonError> {
        let (base, layout) = self.raw(CHUNK)?;
        let n = CHUNK / class;
        self.chunks.insert(
            base,
            Chunk {
                class,
                data: base,
                len: n * class,
                refs: vec![0; n],
                layout,
            },
        );
        // pop() takes from the end: push in reverse so addresses ascend
        self.free[class / LINE].extend((0..n).rev().map(|i| base + i * class));
        Ok(())
    }

    /// `size` fresh bytes, line aligned, from the region or the system.
    fn raw(&mut self, size: usize) -> Result<(usize, Option<Layout>), RibbonError> {
        if let Some((next, end)) = self.region.as_mut() {
            if end.saturating_sub(*next) < size {
                return Err(RibbonError::OutOfMemory(size));
            }
            let p = *next;
            *next += round_up(size);
            return Ok((p, None));
        }
        let layout =
            Layout::from_size_align(size, LINE).map_err(|_| RibbonError::OutOfMemory(size))?;
        // SAFETY: size > 0.
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        if p.is_null() {
            return Err(RibbonError::OutOfMemory(size));
        }
        Ok((p as usize, Some(layout)))
    }
}

impl Drop for Allocator {
    fn drop(&mut self) {
        if let Ok(g) = self.inner.get_mut() {
            for c in g.chunks.values() {
                if let Some(layout) = c.layout {
                    // SAFETY: allocated with this layout in `raw`.
                    unsafe { std::alloc::dealloc(c.data as *mut u8, layout) };
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_then_key_are_contiguous_and_line_aligned() {
        let a = Allocator::new(32);
        let v = a.alloc(100, Kind::Value).unwrap();
        let k = a.alloc(24, Kind::Key).unwrap();
        assert_eq!(v as usize % LINE, 0);
        assert_eq!(a.key_reserve(), 32);
        assert_eq!(
            k as usize,
            v as usize + 100,
            "key right after the value (Listing 6.1)"
        );
        assert_eq!(memtamer_pmem::lines_covered(v as usize, 124), 2);
    }

    #[test]
    fn a_key_that_does_not_fit_or_has_no_value_gets_its_own_block() {
        let a = Allocator::new(32);
        let k0 = a.alloc(24, Kind::Key).unwrap();
        assert_eq!(k0 as usize % LINE, 0);
        // 100 + 32 rounds up to 192 B: 92 B of room after the value
        let v = a.alloc(100, Kind::Value).unwrap();
        let k = a.alloc(93, Kind::Key).unwrap();
        assert!(k as usize >= v as usize + 192 || (k as usize) < v as usize);
        let v = a.alloc(100, Kind::Value).unwrap();
        assert_eq!(a.alloc(92, Kind::Key).unwrap() as usize, v as usize + 100);
        // the reservation is used at most once
        let k2 = a.alloc(8, Kind::Key).unwrap();
        assert_ne!(k2 as usize, v as usize + 100);
    }

    #[test]
    fn a_pair_is_reused_only_after_both_halves_are_freed() {
        let a = Allocator::new(32);
        let v = a.alloc(100, Kind::Value).unwrap();
        let k = a.alloc(24, Kind::Key).unwrap();
        a.free(v).unwrap();
        let other = a.alloc(100, Kind::Value).unwrap();
        assert_ne!(other, v, "key still lives in the block");
        a.free(k).unwrap();
        let again = a.alloc(100, Kind::Value).unwrap();
        assert_eq!(again, v, "both freed: the block is reused");
    }

    #[test]
    fn bad_frees_and_sizes_are_errors() {
        let a = Allocator::new(32);
        assert!(matches!(
            a.alloc(0, Kind::Value),
            Err(RibbonError::AllocSize(0))
        ));
        assert!(a.alloc(MAX_ALLOC + 1, Kind::Key).is_err());
        let v = a.alloc(100, Kind::Value).unwrap();
        a.free(v).unwrap();
        assert!(
            matches!(a.free(v), Err(RibbonError::BadFree(_))),
            "double free"
        );
        let x = 5u64;
        assert!(
            a.free(&x as *const u64 as *mut u8).is_err(),
            "foreign pointer"
        );
        let v = a.alloc(100, Kind::Value).unwrap();
        assert!(
            a.free(v.wrapping_add(8)).is_err(),
            "interior pointer that is no key"
        );
    }

    #[test]
    fn large_blocks_round_trip() {
        let a = Allocator::new(32);
        let p = a.alloc(100_000, Kind::Value).unwrap();
        assert_eq!(p as usize % LINE, 0);
        // SAFETY: 100_000 + 32 bytes were allocated.
        unsafe { std::ptr::write_bytes(p, 7, 100_032) };
        a.free(p).unwrap();
        assert!(a.free(p).is_err());
    }

    #[test]
    fn a_region_backs_the_blocks() {
        let mut buf = vec![0u8; 3 * CHUNK];
        let (base, len) = (buf.as_mut_ptr(), buf.len());
        // SAFETY: buf outlives the allocator.
        let a = unsafe { Allocator::with_region(base, len, 32) };
        let v = a.alloc(100, Kind::Value).unwrap() as usize;
        assert!(v >= base as usize && v < base as usize + len);
        assert!(
            a.alloc(CHUNK * 4, Kind::Value).is_err(),
            "region exhausted is an error"
        );
        drop(a);
    }

    #[test]
    fn blocks_do_not_overlap() {
        let a = Allocator::new(32);
        let mut spans = Vec::new();
        for i in 0..2000usize {
            let len = 1 + (i * 37) % 700;
            let v = a.alloc(len, Kind::Value).unwrap() as usize;
            let k = a.alloc(1 + i % 40, Kind::Key).unwrap() as usize;
            spans.push((v, round_up(len + 32)));
            if k >= v + round_up(len + 32) || k < v {
                spans.push((k, round_up(1 + i % 40)));
            }
        }
        spans.sort_unstable();
        for w in spans.windows(2) {
            assert!(w[0].0 + w[0].1 <= w[1].0, "{w:?}");
        }
    }
}
