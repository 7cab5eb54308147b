//! The DRAM object lookup table (thesis §5.4.1): a 1-D array indexed by
//! object id, each entry `new` / `old` / `writer` (the lock) plus a sequence
//! word that lets lock-free readers take a consistent snapshot of the entry.
//! 16 B per object; the array is reserved with `MAP_NORESERVE`, so only the
//! pages of ids in use cost memory.

use std::sync::atomic::{AtomicU32, Ordering};

/// One lookup-table entry. Locations are data-area line + 1 (0 = none);
/// `writer` is the holding TxState slot + 1 (0 = unlocked).
#[repr(C)]
#[derive(Default)]
pub struct Entry {
    /// Latest (uncommitted or not yet folded) copy.
    pub new: AtomicU32,
    /// Last folded committed copy.
    pub old: AtomicU32,
    /// Write lock: the slot of the transaction holding it.
    pub writer: AtomicU32,
    /// Even when stable; odd while the owner changes `new`/`old`.
    pub seq: AtomicU32,
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

impl Entry {
    /// Seqlock read of all fields.
    pub fn snap(&self) -> Snap {
        loop {
            let s1 = self.seq.load(Ordering::Acquire);
            if s1 & 1 == 1 {
                std::hint::spin_loop();
                continue;
            }
            let new = self.new.load(Ordering::Acquire);
            let old = self.old.load(Ordering::Acquire);
            let writer = self.writer.load(Ordering::Acquire);
            std::sync::atomic::fence(Ordering::Acquire);
            if self.seq.load(Ordering::Relaxed) == s1 {
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
        self.seq.load(Ordering::Acquire) != s.seq
    }

    /// Takes the write lock for `slot1` (thesis Alg. 1 `LOCK(obj.writer)`).
    pub fn try_lock(&self, slot1: u32) -> bool {
        self.writer
            .compare_exchange(0, slot1, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }

    /// Changes `new`/`old` (and optionally releases the lock) under the
    /// sequence word; only the lock holder calls it.
    pub fn update(&self, new: u32, old: u32, unlock: bool) {
        let s = self.seq.load(Ordering::Relaxed);
        self.seq.store(s.wrapping_add(1), Ordering::Relaxed);
        std::sync::atomic::fence(Ordering::Release);
        self.new.store(new, Ordering::Relaxed);
        self.old.store(old, Ordering::Relaxed);
        if unlock {
            self.writer.store(0, Ordering::Relaxed);
        }
        self.seq.store(s.wrapping_add(2), Ordering::Release);
    }
}

/// The table: `cap` entries in one anonymous mapping.
pub struct Table {
    base: *mut Entry,
    cap: u32,
}

// SAFETY: entries are atomics; the mapping lives as long as the Table.
unsafe impl Send for Table {}
// SAFETY: as above.
unsafe impl Sync for Table {}

impl Table {
    /// Reserves `cap` zeroed entries (id 0 is never used).
    pub fn new(cap: u32) -> std::io::Result<Table> {
        let bytes = (cap as usize).max(1) * std::mem::size_of::<Entry>();
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
        // a large table (16 MB for 1M objects) costs a TLB miss and a page
        // walk per random lookup on top of the cache miss. Transparent huge
        // pages remove the walk; advisory only (THP may be off: ignored).
        // SAFETY: advice on our own fresh mapping.
        unsafe { libc::madvise(p, bytes, libc::MADV_HUGEPAGE) };
        Ok(Table {
            base: p as *mut Entry,
            cap,
        })
    }

    /// Capacity in ids.
    pub fn cap(&self) -> u32 {
        self.cap
    }

    /// Entry for `id`, or None past the capacity.
    pub fn get(&self, id: u32) -> Option<&Entry> {
        if id == 0 || id >= self.cap {
            return None;
        }
        // SAFETY: id < cap; the mapping holds cap entries.
        Some(unsafe { &*self.base.add(id as usize) })
    }

    /// The mapping (base, bytes): what the checkpoint's dirty tracker
    /// write-protects.
    pub fn raw(&self) -> (*const u8, usize) {
        let bytes = (self.cap as usize).max(1) * std::mem::size_of::<Entry>();
        (self.base as *const u8, bytes)
    }

    /// DRAM bytes per object (thesis's lookup-table memory cost).
    pub fn bytes_per_entry() -> usize {
        std::mem::size_of::<Entry>()
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        let bytes = (self.cap as usize).max(1) * std::mem::size_of::<Entry>();
        // SAFETY: our own mapping, unmapped once.
        unsafe { libc::munmap(self.base as *mut _, bytes) };
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
}
