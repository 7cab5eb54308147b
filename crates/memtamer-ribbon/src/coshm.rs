//! The co-running registry (thesis §6.5.4): one small file in `/dev/shm`,
//! shared by every Ribbon process started with the same
//! `MEMTAMER_RIBBON_SHARED=<key>`, in which each process registers (pid and
//! start time, N_i, its flushed-bytes counter, its flusher count M_i) and one
//! of them holds the coordinator lease. Built the way the PATS gate's segment
//! is (`memtamer-gate/src/shm.rs`), on the same OS primitives
//! (`memtamer_linux::shmfile`): a zero-filled file is the empty state
//! except for `magic`, which the creator stores last under an exclusive
//! `flock`; the fixed words carry a checksum; a symlink or a file of another
//! user is refused; a slot's owner is judged by its pid AND its start time
//! (`memtamer_linux::ProcessKey`), so a recycled pid does not keep a dead
//! registrant's slot, and a process that died inside the segment leaves
//! nothing that another must wait for.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use memtamer_linux::shmfile::{self, FlockGuard, SharedMap, TrustError};
use thiserror::Error;

/// Env var: the key naming the registry (`/dev/shm/memtamer-ribbon-<key>`);
/// unset, empty, `0` or `off`: no co-running coordination (the default).
pub const ENV_SHARED: &str = "MEMTAMER_RIBBON_SHARED";

/// Registrations a registry holds at once (Ribbon processes per machine).
pub const SLOTS: usize = 64;

/// Layout magic: "MTRIBC" and the layout version. Bump the last byte on any
/// layout change so that old and new processes refuse to share a file.
pub(crate) const MAGIC: u64 = 0x4d54_5249_4243_0001;

/// `Slot::assigned` before the coordinator wrote one.
pub(crate) const UNASSIGNED: u32 = u32::MAX;

/// Why co-running coordination is off. Every one of them leaves the process
/// with its own four-point search, as without `MEMTAMER_RIBBON_SHARED`: a
/// flush still always executes and a fence still waits.
#[derive(Debug, Error)]
pub enum CorunError {
    /// The key is not usable as a file name.
    #[error(
        "{var}={value:?}: {why}; co-running coordination off, this process runs its own search"
    )]
    Key {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
        /// What was expected.
        why: &'static str,
    },
    /// The registry file cannot be opened, sized or mapped.
    #[error("co-running registry {path:?}: {source}; coordination off, this process runs its own search")]
    Io {
        /// The registry file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// Another layout (size or version) is in the file.
    #[error(
        "co-running registry {path:?}: {found}; coordination off, this process runs its own search"
    )]
    Incompatible {
        /// The registry file.
        path: PathBuf,
        /// What was found.
        found: String,
    },
    /// The fixed words were corrupted.
    #[error("co-running registry {path:?} is corrupt ({what}); coordination off, this process runs its own search")]
    Corrupt {
        /// The registry file.
        path: PathBuf,
        /// What is wrong.
        what: String,
    },
    /// Not a regular file of this user or root.
    #[error(
        "co-running registry {path:?}: {why}; coordination off, this process runs its own search"
    )]
    Untrusted {
        /// The registry file.
        path: PathBuf,
        /// Why it is refused.
        why: String,
    },
    /// Every slot is held by a live process.
    #[error("co-running registry {path:?}: all {SLOTS} slots are held by live processes; coordination off, this process runs its own search")]
    Full {
        /// The registry file.
        path: PathBuf,
    },
}

/// Whether a Ribbon instance takes part in co-running coordination
/// (thesis §6.5.4; docs/notebook/ribbon.md, "Co-running applications").
#[derive(Debug, Default)]
pub enum Corun {
    /// Its own four-point search, as a process alone (the default).
    #[default]
    Off,
    /// Register in the registry file at this path; the coordinator's split
    /// sets this instance's flusher count.
    Shared(PathBuf),
    /// Asked for, but refused (a bad key): its own search, and this error in
    /// `Stats::corun_error`.
    Refused(CorunError),
}

/// The registry path for `MEMTAMER_RIBBON_SHARED=value`: None when the
/// variable turns coordination off (empty, `0`, `off`); a key must be 1-64
/// characters of `[A-Za-z0-9_.-]`, not starting with a dot, so that it names
/// one file directly in `/dev/shm`.
pub fn path_for_key(value: &str) -> Result<Option<PathBuf>, CorunError> {
    let key = value.trim();
    if key.is_empty() || key == "0" || key == "off" {
        return Ok(None);
    }
    let ok = key.len() <= 64
        && !key.starts_with('.')
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b));
    if !ok {
        return Err(CorunError::Key {
            var: ENV_SHARED,
            value: value.to_string(),
            why: "expected a key of 1-64 characters [A-Za-z0-9_.-] not starting with '.', or off",
        });
    }
    Ok(Some(PathBuf::from(format!(
        "/dev/shm/memtamer-ribbon-{key}"
    ))))
}

/// The registry's global words.
#[repr(C)]
pub(crate) struct Header {
    pub magic: AtomicU64,
    pub layout_bytes: AtomicU64,
    pub slots: AtomicU32,
    _pad0: u32,
    /// Checksum of the three words above ([`header_check`]).
    pub check: AtomicU64,
    /// Next registration id (ids are never 0 and never reused).
    pub next_id: AtomicU64,
    /// The coordinator's registration id (0: none) and its heartbeat
    /// (CLOCK_MONOTONIC ns).
    pub lease: AtomicU64,
    pub lease_beat_ns: AtomicU64,
    /// The coordinator's last system-wide flusher count and proactive switch.
    pub m_total: AtomicU32,
    pub proactive: AtomicU32,
    /// Coordinator steps written, lease takeovers, slots reclaimed from dead
    /// processes, and when the last reap ran (ns).
    pub decisions: AtomicU64,
    pub takeovers: AtomicU64,
    pub reclaimed: AtomicU64,
    pub last_reap_ns: AtomicU64,
}

/// One registered Ribbon instance (a process; two instances in one process
/// take two slots). Fields other than `assigned*` are written by the owner.
#[repr(C, align(128))]
pub(crate) struct Slot {
    /// Owner's pid; 0 while free. Claimed by compare-and-swap from 0.
    pub owner_pid: AtomicU32,
    /// 1 once the owner wrote every field below (a reaper judges only these).
    pub live: AtomicU32,
    /// Owner's start time (field 22 of /proc/PID/stat).
    pub start_time: AtomicU64,
    /// Registration id; freeing swaps it to 0 first, so two reapers (or a
    /// reaper and the owner) free a registration once.
    pub id: AtomicU64,
    /// Where the owner maps the file (an exec'd process keeps pid and start
    /// time, not the mapping).
    pub map_base: AtomicU64,
    /// Owner's heartbeat (CLOCK_MONOTONIC ns).
    pub beat_ns: AtomicU64,
    /// Cumulative flushed bytes (flushes plus proactive flushes).
    pub bytes: AtomicU64,
    /// Owner's CPU time, clock ticks (utime + stime), for the idle estimate.
    pub cpu_ticks: AtomicU64,
    /// N_i: application threads with a queue.
    pub app_threads: AtomicU32,
    /// Flusher threads the owner started (its useful maximum).
    pub max_flushers: AtomicU32,
    /// M_i as the coordinator last wrote it ([`UNASSIGNED`] before), and when.
    pub assigned: AtomicU32,
    _pad1: u32,
    pub assigned_ns: AtomicU64,
}

/// Bytes of the whole registry.
pub(crate) const LAYOUT_BYTES: usize =
    std::mem::size_of::<Header>().next_multiple_of(128) + SLOTS * std::mem::size_of::<Slot>();

/// Checksum of the header's fixed words (FNV-1a), as the gate's.
pub(crate) fn header_check(magic: u64, layout_bytes: u64, slots: u32) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in [
        magic.to_le_bytes(),
        layout_bytes.to_le_bytes(),
        u64::from(slots).to_le_bytes(),
    ]
    .iter()
    .flatten()
    {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// A mapped registry (accessed only through the atomics of [`Header`] and
/// [`Slot`], as [`SharedMap`] requires).
pub(crate) struct Registry {
    map: SharedMap,
    pub path: PathBuf,
}

impl Registry {
    /// Opens (creating if needed) and maps the registry at `path`; the
    /// creator initialises it under an exclusive `flock`. Refused: a
    /// symlink (O_NOFOLLOW), a file not owned by this user or root, another
    /// size or layout version, a header whose checksum does not match.
    pub fn open(path: &Path) -> Result<Registry, CorunError> {
        let io = |source| CorunError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = shmfile::open_nofollow(path, Some(0o600)).map_err(io)?;
        trusted(path, &file)?;
        let _lock = FlockGuard::exclusive(&file).map_err(io)?;
        Self::map_locked(&file, path)
    }

    fn map_locked(file: &File, path: &Path) -> Result<Registry, CorunError> {
        let io = |source| CorunError::Io {
            path: path.to_path_buf(),
            source,
        };
        let len = file.metadata().map_err(io)?.len();
        if len == 0 {
            file.set_len(LAYOUT_BYTES as u64).map_err(io)?;
        } else if len != LAYOUT_BYTES as u64 {
            return Err(CorunError::Incompatible {
                path: path.to_path_buf(),
                found: format!("{len} bytes, this version needs {LAYOUT_BYTES}"),
            });
        }
        let reg = Registry {
            map: SharedMap::new(file, LAYOUT_BYTES).map_err(io)?,
            path: path.to_path_buf(),
        };
        let h = reg.header();
        match h.magic.load(Ordering::Acquire) {
            MAGIC => reg.check()?,
            0 => {
                h.layout_bytes.store(LAYOUT_BYTES as u64, Ordering::Relaxed);
                h.slots.store(SLOTS as u32, Ordering::Relaxed);
                h.check.store(
                    header_check(MAGIC, LAYOUT_BYTES as u64, SLOTS as u32),
                    Ordering::Relaxed,
                );
                h.magic.store(MAGIC, Ordering::Release);
            }
            other => {
                return Err(CorunError::Incompatible {
                    path: path.to_path_buf(),
                    found: format!("layout magic {other:#x}, this version needs {MAGIC:#x}"),
                })
            }
        }
        Ok(reg)
    }

    /// Whether the fixed words are still what the creator stored (checked
    /// at open and on every control tick: a corrupted registry turns
    /// coordination off instead of being obeyed).
    pub fn check(&self) -> Result<(), CorunError> {
        let h = self.header();
        let magic = h.magic.load(Ordering::Acquire);
        let layout = h.layout_bytes.load(Ordering::Relaxed);
        let slots = h.slots.load(Ordering::Relaxed);
        let what = if magic != MAGIC {
            Some(format!("layout magic {magic:#x}, expected {MAGIC:#x}"))
        } else if layout != LAYOUT_BYTES as u64 {
            Some(format!("layout_bytes {layout}, expected {LAYOUT_BYTES}"))
        } else if slots as usize != SLOTS {
            Some(format!("slots {slots}, expected {SLOTS}"))
        } else if h.check.load(Ordering::Relaxed) != header_check(magic, layout, slots) {
            Some("header checksum mismatch".into())
        } else {
            None
        };
        match what {
            None => Ok(()),
            Some(what) => Err(CorunError::Corrupt {
                path: self.path.clone(),
                what,
            }),
        }
    }

    /// Where this process maps the registry.
    pub fn base(&self) -> u64 {
        self.map.base() as u64
    }

    pub fn header(&self) -> &Header {
        // SAFETY: the region is LAYOUT_BYTES long, page-aligned, and Header
        // consists of atomics (and padding) for which any bit pattern is valid.
        unsafe { &*(self.map.base() as *const Header) }
    }

    pub fn slot(&self, index: usize) -> &Slot {
        let offset = std::mem::size_of::<Header>().next_multiple_of(128)
            + index.min(SLOTS - 1) * std::mem::size_of::<Slot>();
        // SAFETY: in bounds (index clamped), 128-aligned, atomics only.
        unsafe { &*(self.map.base().add(offset) as *const Slot) }
    }

    /// Frees registration `id` in slot `index` once (the swap of `id` to 0
    /// decides who frees it). Returns whether this call freed it.
    pub fn free(&self, index: usize, id: u64) -> bool {
        let s = self.slot(index);
        if id == 0
            || s.id
                .compare_exchange(id, 0, Ordering::AcqRel, Ordering::Relaxed)
                .is_err()
        {
            return false;
        }
        s.live.store(0, Ordering::Release);
        for w in [
            &s.bytes,
            &s.cpu_ticks,
            &s.beat_ns,
            &s.map_base,
            &s.assigned_ns,
        ] {
            w.store(0, Ordering::Relaxed);
        }
        s.start_time.store(0, Ordering::Relaxed);
        s.assigned.store(UNASSIGNED, Ordering::Relaxed);
        s.owner_pid.store(0, Ordering::Release);
        true
    }

    /// Frees the slots whose owner is gone: dead or a zombie (pid and start
    /// time no longer match a live process), or, silent for `exec_after_ns`,
    /// no longer mapping this file at the recorded address (it exec'd). A
    /// slot half-claimed by a process that died meanwhile is freed too.
    /// Returns how many it freed.
    pub fn reap(&self, now_ns: u64, exec_after_ns: u64) -> usize {
        let mut freed = 0;
        for i in 0..SLOTS {
            let s = self.slot(i);
            let pid = s.owner_pid.load(Ordering::Acquire);
            if pid == 0 {
                continue;
            }
            if s.live.load(Ordering::Acquire) != 1 {
                // claimed but not filled in: only a dead claimer is judged
                if !pid_exists(pid)
                    && s.owner_pid
                        .compare_exchange(pid, 0, Ordering::AcqRel, Ordering::Relaxed)
                        .is_ok()
                {
                    freed += 1;
                }
                continue;
            }
            let id = s.id.load(Ordering::Acquire);
            let key = memtamer_linux::ProcessKey {
                pid: pid as i32,
                start_time: s.start_time.load(Ordering::Acquire),
            };
            let gone = if !key.is_alive() {
                true
            } else {
                let beat = s.beat_ns.load(Ordering::Acquire);
                let base = s.map_base.load(Ordering::Acquire);
                now_ns.saturating_sub(beat) > exec_after_ns
                    && base != 0
                    && !shmfile::maps_file_at(pid, base, &self.path)
            };
            if gone && self.free(i, id) {
                freed += 1;
            }
        }
        if freed > 0 {
            self.header()
                .reclaimed
                .fetch_add(freed as u64, Ordering::Relaxed);
        }
        freed
    }
}

/// Refuses a file that is not a regular file of this user or root (another
/// user could plant one in sticky, world-writable /dev/shm).
fn trusted(path: &Path, file: &File) -> Result<(), CorunError> {
    match shmfile::trusted(file) {
        Ok(_) => Ok(()),
        Err(TrustError::Io(source)) => Err(CorunError::Io {
            path: path.to_path_buf(),
            source,
        }),
        Err(foreign) => Err(CorunError::Untrusted {
            path: path.to_path_buf(),
            why: foreign.to_string(),
        }),
    }
}

/// Whether process `pid` exists (a signal-0 probe; EPERM: another user's,
/// which exists).
pub(crate) fn pid_exists(pid: u32) -> bool {
    // SAFETY: signal 0 only checks existence and permission.
    let rc = unsafe { libc::kill(pid as libc::pid_t, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// CLOCK_MONOTONIC in nanoseconds: one clock for every process on the
/// machine, so heartbeats compare across processes.
pub(crate) use memtamer_linux::shmfile::monotonic_ns as now_ns;

#[cfg(test)]
mod tests {
    use super::*;

    const _: () = assert!(std::mem::size_of::<Slot>() & 127 == 0);
    const _: () = assert!(LAYOUT_BYTES < 1 << 16);

    #[test]
    fn keys_map_to_one_file_in_dev_shm_and_bad_keys_are_named() {
        assert!(path_for_key("").unwrap().is_none());
        assert!(path_for_key("off").unwrap().is_none());
        assert!(path_for_key(" 0 ").unwrap().is_none());
        assert_eq!(
            path_for_key("db-pair_1.x").unwrap(),
            Some(PathBuf::from("/dev/shm/memtamer-ribbon-db-pair_1.x"))
        );
        for bad in ["../etc", "a/b", ".hidden", "sp ace", &"k".repeat(65)] {
            let e = path_for_key(bad).expect_err(bad).to_string();
            assert!(e.contains(ENV_SHARED) && e.contains(bad), "{e}");
        }
    }
}
