//! The DRAM object lookup table (thesis §5.4.1): a 1-D array indexed by
//! object id, each entry `new` / `old` / `writer` (the lock) plus a sequence
//! word that lets lock-free readers take a consistent snapshot of the entry.
//!
//! The entry is split in two parallel arrays so that the read path touches
//! 8 bytes: `locs` holds `new` and `old` in one 64-bit word (a reader whose
//! object has no uncommitted copy, `new == 0`, needs nothing else: one
//! atomic load, no sequence check), `side` holds `writer` and `seq`, read
//! only when an object is being written. 16 B per object in all, but the
//! hot array is half the size of a 16 B entry array, so twice as many
//! entries stay in cache (the hash-table benchmark's chain walks are two
//! dependent loads per node: entry, then data). Both arrays are reserved
//! with `MAP_NORESERVE`: only the pages of ids in use cost memory.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// The rarely read half of an entry. `writer` is the holding TxState
/// slot + 1 (0 = unlocked).
#[repr(C)]
#[derive(Default)]
pub struct Side {
    /// Write lock: the slot of the transaction holding it.
    pub writer: AtomicU32,
    /// Even when stable; odd while the owner changes `new`/`old`.
    pub seq: AtomicU32,
}

/// One lookup-table entry: references into the two arrays. Locations are
/// data-area line + 1 (0 = none).
#[derive(Clone, Copy)]
pub struct Entry<'t> {
    /// `new` (low 32 bits: latest uncommitted or not yet folded copy) and
    /// `old` (high 32 bits: last folded committed copy).
    locs: &'t AtomicU64,
    side: &'t Side,
}

/// A consistent view of an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Snap {
    /// `new` location.
    pub new: u32,
    /// `old` location.
    pub old: u32,
    /// Writer slot + 1.
    pub writer: u32,
    /// Sequence at the read.
    pub seq: u32,
}

fn pack(new: u32, old: u32) -> u64 {
    u64::from(old) << 32 | u64::from(new)
}

fn unpack(w: u64) -> (u32, u32) {
    (w as u32, (w >> 32) as u32)
}

impl Entry<'_> {
    /// `(new, old)` in one atomic load: the reader's fast path. When `new`
    /// is 0 the object has no copy in flight and `old` is what every
    /// running transaction sees: a committed copy is folded into `old` only
    /// after every transaction older than its CommitID has ended (thesis
    /// Alg. 2 line 10), so no snapshot that should miss it is still open.
    pub fn locs(&self) -> (u32, u32) {
        unpack(self.locs.load(Ordering::Acquire))
    }

    /// `old` alone (checkpoints, recovery, defragmentation).
    pub fn old(&self) -> u32 {
        self.locs().1
    }

    /// Seqlock read of all fields.
    pub fn snap(&self) -> Snap {
        loop {
            let s1 = self.side.seq.load(Ordering::Acquire);
            if s1 & 1 == 1 {
                std::hint::spin_loop();
                continue;
            }
            let (new, old) = unpack(self.locs.load(Ordering::Acquire));
            let writer = self.side.writer.load(Ordering::Acquire);
            std::sync::atomic::fence(Ordering::Acquire);
            if self.side.seq.load(Ordering::Relaxed) == s1 {
                return Snap {
                    new,
                    old,
                    writer,
                    seq: s1,
                };
            }
        }
    }

    /// Whether the entry changed since `s` (reader re-validation).
    pub fn changed_since(&self, s: &Snap) -> bool {
        std::sync::atomic::fence(Ordering::Acquire);
        self.side.seq.load(Ordering::Acquire) != s.seq
    }

    /// Takes the write lock for `slot1` (thesis Alg. 1 `LOCK(obj.writer)`).
    pub fn try_lock(&self, slot1: u32) -> bool {
        self.side
            .writer
            .compare_exchange(0, slot1, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }

    /// Changes `new`/`old` (and optionally releases the lock) under the
    /// sequence word; only the lock holder calls it. `new` and `old` change
    /// in one store, so a fast-path reader never sees half of it.
    pub fn update(&self, new: u32, old: u32, unlock: bool) {
        let s = self.side.seq.load(Ordering::Relaxed);
        self.side.seq.store(s.wrapping_add(1), Ordering::Relaxed);
        std::sync::atomic::fence(Ordering::Release);
        self.locs.store(pack(new, old), Ordering::Release);
        if unlock {
            self.side.writer.store(0, Ordering::Relaxed);
        }
        self.side.seq.store(s.wrapping_add(2), Ordering::Release);
    }

    /// Sets `old` with no writer around (recovery builds the table before
    /// any transaction runs).
    pub fn set_old_unshared(&self, old: u32) {
        let (new, _) = unpack(self.locs.load(Ordering::Relaxed));
        self.locs.store(pack(new, old), Ordering::Relaxed);
    }
}

/// One anonymous `MAP_NORESERVE` mapping of `n` zeroed `T`s.
struct Mapping<T> {
    base: *mut T,
    bytes: usize,
}

impl<T> Mapping<T> {
    fn new(n: u32) -> std::io::Result<Mapping<T>> {
        let bytes = (n as usize).max(1) * std::mem::size_of::<T>();
        // SAFETY: anonymous mapping; zero pages are valid all-zero atomics.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        // Every object access goes through its entry first: with 4 KB pages
        // a large table (8 MB of `locs` for 1M objects) costs a TLB miss and
        // a page walk per random lookup on top of the cache miss. Transparent
        // huge pages remove the walk; advisory only (THP may be off: ignored).
        // SAFETY: advice on our own fresh mapping.
        unsafe { libc::madvise(p, bytes, libc::MADV_HUGEPAGE) };
        Ok(Mapping {
            base: p as *mut T,
            bytes,
        })
    }
}

impl<T> Drop for Mapping<T> {
    fn drop(&mut self) {
        // SAFETY: our own mapping, unmapped once.
        unsafe { libc::munmap(self.base as *mut _, self.bytes) };
    }
}

/// The table: `cap` entries in two anonymous mappings.
pub struct Table {
    locs: Mapping<AtomicU64>,
    side: Mapping<Side>,
    cap: u32,
}

// SAFETY: entries are atomics; the mappings live as long as the Table.
unsafe impl Send for Table {}
// SAFETY: as above.
unsafe impl Sync for Table {}

impl Table {
    /// Reserves `cap` zeroed entries (id 0 is never used).
    pub fn new(cap: u32) -> std::io::Result<Table> {
        Ok(Table {
            locs: Mapping::new(cap)?,
            side: Mapping::new(cap)?,
            cap,
        })
    }

    /// Capacity in ids.
    pub fn cap(&self) -> u32 {
        self.cap
    }

    /// Entry for `id`, or None past the capacity.
    #[inline]
    pub fn get(&self, id: u32) -> Option<Entry<'_>> {
        if id == 0 || id >= self.cap {
            return None;
        }
        // SAFETY: id < cap; both mappings hold cap elements.
        Some(unsafe {
            Entry {
                locs: &*self.locs.base.add(id as usize),
                side: &*self.side.base.add(id as usize),
            }
        })
    }

    /// The `locs` mapping (base, bytes): what the checkpoint's dirty
    /// tracker write-protects (CHKP records `old`, which lives there).
    pub fn raw(&self) -> (*const u8, usize) {
        (self.locs.base as *const u8, self.locs.bytes)
    }

    /// Bytes of the `raw` mapping per id (dirty page -> id range).
    pub const RAW_BYTES_PER_ID: usize = std::mem::size_of::<AtomicU64>();

    /// DRAM bytes per object (thesis's lookup-table memory cost): both
    /// halves of the entry.
    pub fn bytes_per_entry() -> usize {
        std::mem::size_of::<AtomicU64>() + std::mem::size_of::<Side>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_update_snapshot() {
        let t = Table::new(100).unwrap();
        assert!(t.get(0).is_none() && t.get(100).is_none());
        let e = t.get(5).unwrap();
        assert_eq!(
            e.snap(),
            Snap {
                new: 0,
                old: 0,
                writer: 0,
                seq: 0
            }
        );
        assert!(e.try_lock(3));
        assert!(!e.try_lock(4));
        let s = e.snap();
        e.update(7, 0, false);
        assert!(e.changed_since(&s));
        assert_eq!(e.snap().new, 7);
        e.update(0, 7, true);
        assert_eq!(
            e.snap(),
            Snap {
                new: 0,
                old: 7,
                writer: 0,
                seq: 4
            }
        );
        assert_eq!(Table::bytes_per_entry(), 16);
    }

    #[test]
    fn new_and_old_share_one_word_and_the_raw_mapping_holds_only_them() {
        let t = Table::new(10).unwrap();
        let e = t.get(3).unwrap();
        e.update(5, 9, false);
        assert_eq!(e.locs(), (5, 9));
        e.set_old_unshared(11);
        assert_eq!(e.locs(), (5, 11));
        assert_eq!(e.old(), 11);
        assert_eq!(t.get(4).unwrap().locs(), (0, 0));
        let (base, bytes) = t.raw();
        assert!(!base.is_null());
        assert_eq!(bytes, 10 * Table::RAW_BYTES_PER_ID);
        assert_eq!(Table::RAW_BYTES_PER_ID, 8);
    }
}
