//! The gate's shared-memory layout and its mapping.
//!
//! Everything the gate shares lives in one file under `/dev/shm` so that
//! every process that opens the same gate name sees the same limit, the same
//! serving count and the same FIFO queue: two PM applications together still
//! respect T_S. A zero-filled file is the valid empty state except for
//! `magic`, which the creator stores last.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use memtamer_linux::shmfile::{self, FlockGuard, SharedMap, TrustError};

use crate::GateError;

/// Layout magic: "MTGATE" and the layout version. Bump the last byte on any
/// layout change so that old and new processes refuse to share a file.
pub(crate) const MAGIC: u64 = 0x4d54_4741_5445_0007;

/// Slots: PA-threads that can be registered at once, system-wide.
pub const SLOTS: usize = 256;

/// `limit` value meaning "no limit".
pub(crate) const UNLIMITED: u32 = u32::MAX;

/// Slot states (the per-thread Running-Lock of PATS §IV, as a futex word).
pub(crate) const IDLE: u32 = 0;
pub(crate) const WAITING: u32 = 1;
pub(crate) const RUNNING: u32 = 2;
/// Admitted but between requests: the thread keeps its unit of capacity for
/// its next request (no lock, no atomic read-modify-write, no fence) until a
/// waiter or a lower limit takes it back (see `Gate::reclaim_held`).
pub(crate) const HOLDING: u32 = 3;

/// Request-level statistics one thread publishes. Only the owning thread
/// writes them (plain relaxed stores, no read-modify-write on the fast
/// path); the collector and `memtamer gate stats` read them.
#[repr(C)]
#[derive(Default)]
pub(crate) struct SharedStats {
    pub read_bytes: AtomicU64,
    pub write_bytes: AtomicU64,
    pub reads_by_size: [AtomicU64; 4],
    pub writes_by_size: [AtomicU64; 4],
    /// Requests below the bypass size (never gated).
    pub bypassed: AtomicU64,
    /// Gated requests that had to wait for the Selector.
    pub waited: AtomicU64,
    /// Total and longest wait, nanoseconds.
    pub wait_ns_total: AtomicU64,
    pub wait_ns_max: AtomicU64,
    /// Admissions that reused capacity the thread still held.
    pub reused: AtomicU64,
}

/// One PA-thread's slot.
#[repr(C, align(128))]
pub(crate) struct Slot {
    /// Owner's process id; 0 while the slot is free.
    pub owner_pid: AtomicU32,
    /// Owner's thread id.
    pub owner_tid: AtomicU32,
    /// IDLE, WAITING, RUNNING or HOLDING; the owner sleeps on this word.
    /// RUNNING <-> HOLDING is written by the owner alone, with plain stores.
    pub state: AtomicU32,
    /// 1 while the owner sleeps in futex_wait on `state`.
    pub sleeping: AtomicU32,
    /// Req-Info: size and direction of the current request.
    pub req_bytes: AtomicU64,
    pub req_write: AtomicU32,
    /// 1 when someone else took this slot's held unit back (and already
    /// counted it out of `serving`); the owner clears it under the lock.
    /// Written under the lock only.
    pub taken: AtomicU32,
    /// FIFO position while WAITING.
    pub ticket: AtomicU64,
    /// Address at which the owner's process maps this file: a process that
    /// exec'd keeps its pid (and its main thread its tid) but not this
    /// mapping, which is how the reaper knows it is gone.
    pub map_base: AtomicU64,
    pub stats: SharedStats,
}

/// The gate's global state. Fields marked (L) change only under `lock`.
#[repr(C)]
pub(crate) struct Header {
    pub magic: AtomicU64,
    pub layout_bytes: AtomicU64,
    pub slots: AtomicU32,
    /// Requests smaller than this never wait (PATS: 256 B).
    pub bypass_bytes: AtomicU32,
    /// Checksum of the four words above (`header_check`), stored by the
    /// creator: a gate whose fixed words were corrupted is refused.
    pub check: AtomicU64,
    /// When a waiter last ran the online heal (CLOCK_MONOTONIC ns): waiters
    /// heal at most once per `integrity::HEAL_INTERVAL_NS` system-wide. A
    /// corrupted value cannot stop healing: one in the future or in the
    /// past lets the next waiter heal (issue 22).
    pub last_heal_ns: AtomicU64,
    _pad0: [u64; 3],
    /// The lock word: owner (pid << 32 | tid), 0 when free. Own cache line.
    pub lock: AtomicU64,
    _pad1: [u64; 7],
    /// (L) T_S; UNLIMITED for none.
    pub limit: AtomicU32,
    /// (L) Serving-Thread count: admitted gated requests in flight.
    pub serving: AtomicU32,
    /// (L) Highest `serving` ever reached, and the limit at that moment.
    pub peak_serving: AtomicU32,
    pub limit_at_peak: AtomicU32,
    /// (L) FIFO of waiting slot indices: ring start and length.
    pub queue_start: AtomicU32,
    pub queue_len: AtomicU32,
    /// (L) Next ticket to hand out.
    pub next_ticket: AtomicU64,
    /// (L) Gated requests admitted, and how many of those waited.
    pub admissions: AtomicU64,
    pub contended_admissions: AtomicU64,
    /// Capacity reclaimed from threads that died while admitted.
    pub reclaimed: AtomicU64,
    /// Slots freed because their owner died.
    pub reaped_slots: AtomicU64,
    /// Times the lock-protected state was found inconsistent and rebuilt: a
    /// lock taken over from a dead owner, a word out of bounds, or an online
    /// heal at the admission bound (`integrity::heal_locked`).
    pub lock_repairs: AtomicU64,
    /// Times the limit changed.
    pub limit_changes: AtomicU64,
    /// Waiters that proceeded after the admission bound without being
    /// admitted (a holder that neither ends nor dies; issue 22).
    pub overdue: AtomicU64,
    /// Collector lease: holder pid (0 none) and its last heartbeat (CLOCK_MONOTONIC ns).
    pub collector_pid: AtomicU32,
    /// One past the highest slot index ever claimed: scans of the slots
    /// (collector, reaper, Selector) stop there instead of reading all
    /// SLOTS every window.
    pub slot_hwm: AtomicU32,
    pub collector_heartbeat_ns: AtomicU64,
    /// Collector's last view: average request bytes and write ratio (f64 bits).
    pub last_avg_bytes: AtomicU64,
    pub last_write_ratio: AtomicU64,
    /// When the reaper last ran (CLOCK_MONOTONIC ns), and its try-lock.
    pub last_reap_ns: AtomicU64,
    pub reaper_busy: AtomicU32,
    _pad3: u32,
    /// Statistics of threads that have exited or died.
    pub retired: SharedStats,
    /// (L) Ring of slot indices.
    pub queue: [AtomicU32; SLOTS],
}

/// Bytes of the whole shared region.
pub(crate) const LAYOUT_BYTES: usize =
    std::mem::size_of::<Header>().next_multiple_of(128) + SLOTS * std::mem::size_of::<Slot>();

/// Largest bypass size a header may carry (as `MEMTAMER_GATE_BYPASS`): a
/// larger one would silently disable gating.
pub(crate) const MAX_BYPASS: u32 = 1 << 30;

/// Checksum of the header's fixed words (FNV-1a over their bytes), so that
/// one flipped word is detected rather than obeyed.
pub(crate) fn header_check(magic: u64, layout_bytes: u64, slots: u32, bypass: u32) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let bytes = [
        magic.to_le_bytes(),
        layout_bytes.to_le_bytes(),
        u64::from(slots).to_le_bytes(),
        u64::from(bypass).to_le_bytes(),
    ];
    for b in bytes.iter().flatten() {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// What is wrong with a header's fixed words, if anything.
pub(crate) fn header_fault(h: &Header) -> Option<String> {
    let magic = h.magic.load(Ordering::Acquire);
    let layout = h.layout_bytes.load(Ordering::Relaxed);
    let slots = h.slots.load(Ordering::Relaxed);
    let bypass = h.bypass_bytes.load(Ordering::Relaxed);
    if layout != LAYOUT_BYTES as u64 {
        return Some(format!("layout_bytes {layout}, expected {LAYOUT_BYTES}"));
    }
    if slots as usize != SLOTS {
        return Some(format!("slots {slots}, expected {SLOTS}"));
    }
    if bypass > MAX_BYPASS {
        return Some(format!("bypass_bytes {bypass} > {MAX_BYPASS}"));
    }
    if h.check.load(Ordering::Relaxed) != header_check(magic, layout, slots, bypass) {
        return Some("header checksum mismatch".into());
    }
    None
}

/// Who may create and open a gate file, and with which mode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Access {
    /// Group that may share the gate (mode 0660, group `gid`); None: mode
    /// 0600, the creating user (and root) only.
    pub group: Option<u32>,
}

/// A mapped gate region (accessed only through the atomics of [`Header`]
/// and [`Slot`], as [`SharedMap`] requires).
pub(crate) struct Mapping {
    map: SharedMap,
    pub path: PathBuf,
}

impl Mapping {
    /// Opens (creating if needed) and maps the gate file at `path`; the
    /// creator initialises it under an exclusive `flock`. A symlink is not
    /// followed (O_NOFOLLOW), and a file that is not a regular file owned
    /// by this user or root is refused: in sticky, world-writable /dev/shm
    /// another user could plant either (issue 22).
    pub fn open(
        path: &Path,
        bypass_bytes: u32,
        initial_limit: u32,
        access: Access,
    ) -> Result<Mapping, GateError> {
        let io = |source| GateError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mode = if access.group.is_some() { 0o660 } else { 0o600 };
        let file = shmfile::open_nofollow(path, Some(mode)).map_err(io)?;
        trusted_metadata(path, &file)?;
        let _lock = FlockGuard::exclusive(&file).map_err(io)?;
        Self::map_locked(&file, path, bypass_bytes, initial_limit, access)
    }

    fn map_locked(
        file: &File,
        path: &Path,
        bypass_bytes: u32,
        initial_limit: u32,
        access: Access,
    ) -> Result<Mapping, GateError> {
        let io = |source| GateError::Io {
            path: path.to_path_buf(),
            source,
        };
        let len = file.metadata().map_err(io)?.len();
        let fresh = len == 0;
        if fresh {
            // the mode is explicit, not whatever the umask left
            let mode = if access.group.is_some() { 0o660 } else { 0o600 };
            shmfile::set_mode(file, mode, access.group).map_err(io)?;
            file.set_len(LAYOUT_BYTES as u64).map_err(io)?;
        } else if len != LAYOUT_BYTES as u64 {
            return Err(GateError::Incompatible {
                path: path.to_path_buf(),
                found: format!("{len} bytes, this version needs {LAYOUT_BYTES}"),
            });
        }
        let mapping = Mapping {
            map: SharedMap::new(file, LAYOUT_BYTES).map_err(io)?,
            path: path.to_path_buf(),
        };
        let h = mapping.header();
        match h.magic.load(Ordering::Acquire) {
            MAGIC => {
                if let Some(what) = header_fault(h) {
                    return Err(GateError::Corrupt {
                        path: path.to_path_buf(),
                        what,
                    });
                }
            }
            0 => {
                let bypass = bypass_bytes.min(MAX_BYPASS);
                h.layout_bytes.store(LAYOUT_BYTES as u64, Ordering::Relaxed);
                h.slots.store(SLOTS as u32, Ordering::Relaxed);
                h.bypass_bytes.store(bypass, Ordering::Relaxed);
                h.check.store(
                    header_check(MAGIC, LAYOUT_BYTES as u64, SLOTS as u32, bypass),
                    Ordering::Relaxed,
                );
                h.limit.store(initial_limit.max(1), Ordering::Relaxed);
                h.magic.store(MAGIC, Ordering::Release);
            }
            other => {
                return Err(GateError::Incompatible {
                    path: path.to_path_buf(),
                    found: format!("layout magic {other:#x}, this version needs {MAGIC:#x}"),
                })
            }
        }
        Ok(mapping)
    }

    /// Maps an existing gate file for inspection or repair: the same
    /// O_NOFOLLOW, owner and size checks as `open`, but neither the magic
    /// nor the header is validated (`memtamer gate check|repair`).
    pub fn open_existing_raw(path: &Path) -> Result<Mapping, GateError> {
        let io = |source| GateError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = shmfile::open_nofollow(path, None).map_err(io)?;
        let meta = trusted_metadata(path, &file)?;
        if meta.len() != LAYOUT_BYTES as u64 {
            return Err(GateError::Incompatible {
                path: path.to_path_buf(),
                found: format!("{} bytes, this version needs {LAYOUT_BYTES}", meta.len()),
            });
        }
        Ok(Mapping {
            map: SharedMap::new(&file, LAYOUT_BYTES).map_err(io)?,
            path: path.to_path_buf(),
        })
    }

    /// Where this process maps the region (recorded in its slots).
    pub fn base(&self) -> u64 {
        self.map.base() as u64
    }

    pub fn header(&self) -> &Header {
        // SAFETY: the region is at least LAYOUT_BYTES long, page-aligned, and
        // Header consists of atomics for which any bit pattern is valid.
        unsafe { &*(self.map.base() as *const Header) }
    }

    pub fn slot(&self, index: usize) -> &Slot {
        debug_assert!(index < SLOTS);
        let offset = std::mem::size_of::<Header>().next_multiple_of(128)
            + index.min(SLOTS - 1) * std::mem::size_of::<Slot>();
        // SAFETY: in bounds (index clamped), 128-aligned, atomics only.
        unsafe { &*(self.map.base().add(offset) as *const Slot) }
    }
}

/// The metadata of an opened gate file, or `Untrusted` unless it is a regular
/// file owned by this user or root (another user could have created it first
/// in sticky, world-writable /dev/shm; issue 22).
fn trusted_metadata(path: &Path, file: &File) -> Result<std::fs::Metadata, GateError> {
    shmfile::trusted(file).map_err(|e| match e {
        TrustError::Io(source) => GateError::Io {
            path: path.to_path_buf(),
            source,
        },
        foreign => GateError::Untrusted {
            path: path.to_path_buf(),
            why: foreign.to_string(),
        },
    })
}

impl SharedStats {
    /// Adds `other` into `self` (used when retiring a slot; not concurrent
    /// with other writers of `self` because it runs under the gate lock).
    pub fn absorb(&self, other: &SharedStats) {
        let add = |a: &AtomicU64, b: &AtomicU64| {
            a.fetch_add(b.load(Ordering::Relaxed), Ordering::Relaxed);
        };
        add(&self.read_bytes, &other.read_bytes);
        add(&self.write_bytes, &other.write_bytes);
        for i in 0..4 {
            add(&self.reads_by_size[i], &other.reads_by_size[i]);
            add(&self.writes_by_size[i], &other.writes_by_size[i]);
        }
        add(&self.bypassed, &other.bypassed);
        add(&self.waited, &other.waited);
        add(&self.wait_ns_total, &other.wait_ns_total);
        add(&self.reused, &other.reused);
        self.wait_ns_max
            .fetch_max(other.wait_ns_max.load(Ordering::Relaxed), Ordering::Relaxed);
    }

    /// Zeroes every counter.
    pub fn clear(&self) {
        let z = |a: &AtomicU64| a.store(0, Ordering::Relaxed);
        z(&self.read_bytes);
        z(&self.write_bytes);
        self.reads_by_size.iter().for_each(z);
        self.writes_by_size.iter().for_each(z);
        z(&self.bypassed);
        z(&self.waited);
        z(&self.wait_ns_total);
        z(&self.wait_ns_max);
        z(&self.reused);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // slots never share a cache-line pair; the region stays small
    const _: () = assert!(std::mem::size_of::<Slot>() & 127 == 0);
    const _: () = assert!(LAYOUT_BYTES < 1 << 20);

    #[test]
    fn a_zero_filled_region_is_an_idle_gate() {
        let dir = std::env::temp_dir().join(format!("mt-shm-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let path = dir.join("g");
        let m = Mapping::open(&path, 256, 3, Access::default()).expect("create");
        let h = m.header();
        assert_eq!(h.magic.load(Ordering::Relaxed), MAGIC);
        assert_eq!(h.limit.load(Ordering::Relaxed), 3);
        assert_eq!(h.serving.load(Ordering::Relaxed), 0);
        assert_eq!(m.slot(SLOTS - 1).owner_pid.load(Ordering::Relaxed), 0);
        drop(m);
        // reopening keeps the creator's settings
        let again = Mapping::open(&path, 512, 9, Access::default()).expect("reopen");
        assert_eq!(again.header().limit.load(Ordering::Relaxed), 3);
        assert_eq!(again.header().bypass_bytes.load(Ordering::Relaxed), 256);
        drop(again);
        // a file of another size or magic is refused, not misread
        std::fs::write(&path, b"not a gate").expect("write");
        assert!(matches!(
            Mapping::open(&path, 256, 1, Access::default()),
            Err(GateError::Incompatible { .. })
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
