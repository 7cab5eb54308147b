//! The object registry and the migration protocol.
//!
//! Every object lives at one virtual address for its whole life. Moving it
//! between tiers never changes that address, so user pointers (and aliases
//! the program made) stay valid, unlike the thesis prototype, which patched
//! the registered pointer and needed pre-loop aliases registered too.
//!
//! # Consistency protocol for file-backed moves (write-protect during copy)
//!
//! 1. Under the registry lock: mark the object's fault slot `MIGRATING`, wait
//!    until no signal handler is mid-way restoring one of its sampled pages,
//!    drop the profiler's armed pages, `mprotect(PROT_READ)` the whole object.
//!    From here readers proceed on the old copy; a writer faults and waits in
//!    the handler (`guard`).
//! 2. Without the lock: map the destination at a temporary address and copy.
//!    The source cannot change during the copy, so the copy is exact.
//! 3. Under the lock: `mremap(MREMAP_FIXED)` the new mapping onto the object's
//!    address (atomic in the kernel), set the slot `IDLE`. Waiting writers
//!    return from the handler and their store is retried on the new pages.
//!
//! If step 2 fails (no memory, no space in the slow-tier directory), the old
//! mapping is given back its write permission and nothing was lost.
//! NUMA-backed objects move with `move_pages`, which the kernel keeps
//! consistent itself (it unmaps each page while copying it).

use crate::backing;
use crate::guard::{self, SLOTS};
use crate::{Tier, TierError};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::Ordering::SeqCst;
use std::time::Instant;

/// Where the slow tier lives on this host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SlowTier {
    /// Unlinked files in this directory (a DAX mount, or `/dev/shm`).
    File(PathBuf),
    /// A CPU-less NUMA node (`slow_node`); DRAM is `dram_node`.
    Numa {
        /// Node with CPUs whose memory is the fast tier.
        dram_node: u32,
        /// CPU-less memory node used as the slow tier.
        slow_node: u32,
    },
}

/// Runtime configuration: how much DRAM this process may use, and where the
/// slow tier is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TierConfig {
    /// Bytes of DRAM objects this process may hold (its share of the node).
    pub dram_budget: usize,
    /// The slow-tier backing.
    pub slow: SlowTier,
}

impl TierConfig {
    /// A checked configuration: a budget of 0 or above the machine's memory
    /// is refused (it would make every placement decision meaningless).
    pub fn new(dram_budget: usize, slow: SlowTier) -> Result<Self, TierError> {
        let machine = backing::machine_bytes();
        if dram_budget == 0 {
            return Err(TierError::BadBudget {
                budget: 0,
                why: "no DRAM at all: use the slow tier only by not migrating".into(),
            });
        }
        if dram_budget > machine {
            return Err(TierError::BadBudget {
                budget: dram_budget,
                why: format!("the machine has {machine} B"),
            });
        }
        Ok(TierConfig { dram_budget, slow })
    }

    /// Picks the slow tier for this host: a CPU-less NUMA node if there is
    /// one (`/sys/devices/system/node/*/cpulist` empty), else files in
    /// `MEMTAMER_TIER_DIR` (default `/dev/shm`).
    pub fn detect(dram_budget: usize) -> Result<Self, TierError> {
        let nodes = crate::numa::read_nodes(std::path::Path::new("/sys/devices/system/node"));
        let slow = crate::numa::slow_nodes(&nodes);
        let dram = nodes.iter().find(|n| !n.cpus.is_empty()).map(|n| n.id);
        let tier = match (slow.first(), dram) {
            (Some(&slow_node), Some(dram_node)) => SlowTier::Numa {
                dram_node,
                slow_node,
            },
            _ => SlowTier::File(
                std::env::var_os("MEMTAMER_TIER_DIR")
                    .map(PathBuf::from)
                    .unwrap_or_else(|| "/dev/shm".into()),
            ),
        };
        Self::new(dram_budget, tier)
    }
}

/// Parses a byte count with an optional K/M/G suffix (`256M`, `1G`, `4096`).
pub fn parse_bytes(s: &str) -> Option<usize> {
    let s = s.trim();
    let (num, mult) = match s.chars().last()? {
        'k' | 'K' => (&s[..s.len() - 1], 1usize << 10),
        'm' | 'M' => (&s[..s.len() - 1], 1 << 20),
        'g' | 'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.trim().parse::<usize>().ok()?.checked_mul(mult)
}

/// One live object.
#[derive(Debug)]
pub(crate) struct Object {
    /// Allocation serial number (see [`ObjectView::id`]).
    pub id: u64,
    pub name: String,
    pub size: usize,
    pub len: usize,
    pub tier: Tier,
    pub slot: usize,
    /// Pages the profiler has mapped `PROT_NONE` and not yet disarmed.
    pub armed: Vec<usize>,
    pub migrating: bool,
    /// Completed moves of this object and the bytes they copied.
    pub moves: u64,
    pub bytes_moved: u64,
    /// Time the application spent on this object's moves: waits for it
    /// and writes blocked during its copies (`memtamer tier status`).
    pub exposed_ns: u64,
}

/// What a caller may see of an object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectView {
    /// Its (fixed) address.
    pub addr: usize,
    /// Serial number of its allocation in this registry (1, 2, ...): an
    /// address can be reused after a free, the id cannot, so the Unimem
    /// driver tells a new object at a freed object's address from the old
    /// one (a plan made for the old one must not move the new one).
    pub id: u64,
    /// The name given at allocation.
    pub name: String,
    /// Bytes asked for.
    pub size: usize,
    /// Current tier.
    pub tier: Tier,
    /// Whether a move is in progress.
    pub migrating: bool,
    /// Completed moves of this object.
    pub moves: u64,
    /// Bytes those moves copied.
    pub bytes_moved: u64,
    /// Nanoseconds the application waited for this object's moves or was
    /// blocked writing it during a copy (its share of the exposed time).
    pub exposed_ns: u64,
}

/// A move that has passed step 1 of the protocol.
#[derive(Debug)]
pub(crate) struct Ticket {
    pub addr: usize,
    pub len: usize,
    pub to: Tier,
    pub name: String,
    pub slot: usize,
}

/// Result of one completed move.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MoveReport {
    /// Bytes copied (page-rounded object length).
    pub bytes: usize,
    /// Nanoseconds from write-protect to remap (the window writers may wait).
    pub copy_ns: u64,
    /// Destination tier.
    pub to: Tier,
}

/// All live objects plus the DRAM accounting.
#[derive(Debug)]
pub struct Registry {
    cfg: TierConfig,
    page: usize,
    pub(crate) objects: BTreeMap<usize, Object>,
    /// DRAM bytes held or reserved by in-flight moves to DRAM.
    dram_used: usize,
    /// Allocations made so far (the last object's id).
    serial: u64,
}

impl Registry {
    /// An empty registry; installs the SIGSEGV handler.
    pub fn new(cfg: TierConfig) -> Result<Self, TierError> {
        guard::install()?;
        Ok(Registry {
            cfg,
            page: guard::page_size(),
            objects: BTreeMap::new(),
            dram_used: 0,
            serial: 0,
        })
    }

    /// The configuration in force.
    pub fn config(&self) -> &TierConfig {
        &self.cfg
    }

    /// System page size.
    pub fn page(&self) -> usize {
        self.page
    }

    /// DRAM bytes in use or reserved.
    pub fn dram_used(&self) -> usize {
        self.dram_used
    }

    fn round(&self, size: usize) -> usize {
        size.div_ceil(self.page) * self.page
    }

    fn reserve_dram(&mut self, len: usize, name: &str) -> Result<(), TierError> {
        let free = self.cfg.dram_budget.saturating_sub(self.dram_used);
        if len > free {
            return Err(TierError::DramFull {
                name: name.into(),
                bytes: len,
                free,
                budget: self.cfg.dram_budget,
            });
        }
        self.dram_used += len;
        Ok(())
    }

    fn map(&self, tier: Tier, len: usize, name: &str) -> Result<usize, TierError> {
        match (tier, &self.cfg.slow) {
            (Tier::Dram, SlowTier::File(_)) => backing::map_dram(len, name),
            (Tier::Dram, SlowTier::Numa { dram_node, .. }) => {
                backing::map_numa(len, *dram_node, name)
            }
            (Tier::Slow, SlowTier::File(dir)) => backing::map_file(dir, len, name),
            (Tier::Slow, SlowTier::Numa { slow_node, .. }) => {
                backing::map_numa(len, *slow_node, name)
            }
        }
    }

    /// Allocates and registers an object in `tier`.
    pub fn alloc(&mut self, size: usize, name: &str, tier: Tier) -> Result<usize, TierError> {
        if size == 0 {
            return Err(TierError::ZeroSize { name: name.into() });
        }
        let len = self.round(size);
        if tier == Tier::Dram {
            self.reserve_dram(len, name)?;
        }
        let undo = |me: &mut Self| {
            if tier == Tier::Dram {
                me.dram_used -= len;
            }
        };
        let addr = match self.map(tier, len, name) {
            Ok(a) => a,
            Err(e) => {
                undo(self);
                return Err(e);
            }
        };
        let Some(slot) = guard::claim(addr, len) else {
            backing::unmap(addr, len);
            undo(self);
            return Err(TierError::TooManyObjects {
                max: guard::MAX_SLOTS,
            });
        };
        self.serial += 1;
        let obj = Object {
            id: self.serial,
            name: name.into(),
            size,
            len,
            tier,
            slot,
            armed: Vec::new(),
            migrating: false,
            moves: 0,
            bytes_moved: 0,
            exposed_ns: 0,
        };
        self.objects.insert(addr, obj);
        Ok(addr)
    }

    /// Unregisters and unmaps an object. An address never handed out (or
    /// freed twice) is an error, never a crash. The caller waits for an
    /// in-flight move first (`TierRuntime::free`).
    pub fn free(&mut self, addr: usize) -> Result<(), TierError> {
        match self.objects.get(&addr) {
            None => return Err(TierError::UnknownObject { addr }),
            Some(o) if o.migrating => {
                return Err(TierError::Os {
                    what: format!("free '{}' during its migration", o.name),
                    source: std::io::Error::from_raw_os_error(libc::EBUSY),
                })
            }
            Some(_) => {}
        }
        let Some(o) = self.objects.remove(&addr) else {
            return Err(TierError::UnknownObject { addr });
        };
        guard::release(o.slot);
        if o.tier == Tier::Dram {
            self.dram_used -= o.len;
        }
        backing::unmap(addr, o.len);
        Ok(())
    }

    /// Ends every object still allocated: releases its fault-table slot,
    /// unmaps it (a slow-tier file goes with its last mapping) and returns
    /// how many objects and bytes (as asked for) that was. Goes on past a
    /// failed `munmap` and returns the first such error with the counts.
    /// The caller makes sure no move is in flight (`TierRuntime::shutdown`
    /// joins the helper thread first); an object a move left `migrating`
    /// (its helper panicked) is ended all the same.
    pub(crate) fn clear(&mut self) -> (usize, usize, Result<(), TierError>) {
        let objects = std::mem::take(&mut self.objects);
        let (n, bytes) = (
            objects.len(),
            objects.values().map(|o| o.size).sum::<usize>(),
        );
        let mut result = Ok(());
        for (addr, o) in objects {
            guard::release(o.slot);
            let r = backing::unmap_checked(addr, o.len, &o.name);
            if result.is_ok() {
                result = r;
            }
        }
        self.dram_used = 0;
        (n, bytes, result)
    }

    /// Snapshot of every object.
    pub fn objects(&self) -> Vec<ObjectView> {
        self.objects
            .iter()
            .map(|(&addr, o)| ObjectView {
                addr,
                id: o.id,
                name: o.name.clone(),
                size: o.size,
                tier: o.tier,
                migrating: o.migrating,
                moves: o.moves,
                bytes_moved: o.bytes_moved,
                // blocked writes of a copy not yet collected by the helper
                exposed_ns: o.exposed_ns + SLOTS[o.slot].blocked_ns.load(SeqCst),
            })
            .collect()
    }

    /// Charges `ns` of exposed move time to the object at `addr` (no-op for
    /// an address freed meanwhile).
    pub(crate) fn add_exposed(&mut self, addr: usize, ns: u64) {
        if let Some(o) = self.objects.get_mut(&addr) {
            o.exposed_ns += ns;
        }
    }

    /// Whether `addr` is a live object currently being moved.
    pub fn is_migrating(&self, addr: usize) -> bool {
        self.objects.get(&addr).is_some_and(|o| o.migrating)
    }

    /// Step 1 of the protocol (see module doc): reserve, write-protect.
    pub(crate) fn begin(&mut self, addr: usize, to: Tier) -> Result<Ticket, TierError> {
        let (len, name, tier, slot, migrating) = match self.objects.get(&addr) {
            None => return Err(TierError::UnknownObject { addr }),
            Some(o) => (o.len, o.name.clone(), o.tier, o.slot, o.migrating),
        };
        if migrating || tier == to {
            return Err(TierError::AlreadyThere { name, tier: to });
        }
        if to == Tier::Dram {
            self.reserve_dram(len, &name)?;
        }
        let file_mode = matches!(self.cfg.slow, SlowTier::File(_));
        if file_mode {
            SLOTS[slot].state.store(guard::MIGRATING, SeqCst);
            guard::wait_no_inflight(slot);
            if let Err(e) = backing::protect(addr, len, libc::PROT_READ, &name) {
                SLOTS[slot].state.store(guard::IDLE, SeqCst);
                if to == Tier::Dram {
                    self.dram_used -= len;
                }
                return Err(e);
            }
        } else {
            // NUMA: move_pages needs the pages accessible; disarm sampling.
            self.disarm(addr);
        }
        if let Some(o) = self.objects.get_mut(&addr) {
            o.armed.clear();
            o.migrating = true;
        }
        Ok(Ticket {
            addr,
            len,
            to,
            name,
            slot,
        })
    }

    /// Step 2: copy into the other backing (no lock held). Returns the
    /// temporary address of the new copy (0 for NUMA moves, done in place).
    pub(crate) fn copy(cfg: &TierConfig, t: &Ticket) -> Result<usize, TierError> {
        let page = guard::page_size();
        match &cfg.slow {
            SlowTier::Numa {
                dram_node,
                slow_node,
            } => {
                let node = if t.to == Tier::Dram {
                    *dram_node
                } else {
                    *slow_node
                };
                backing::move_to_node(t.addr, t.len, node, page, &t.name)?;
                Ok(0)
            }
            SlowTier::File(dir) => {
                let tmp = match t.to {
                    Tier::Dram => backing::map_dram(t.len, &t.name)?,
                    Tier::Slow => backing::map_file(dir, t.len, &t.name)?,
                };
                // SAFETY: both ranges are t.len bytes, mapped, and disjoint;
                // the source is read-only for the duration (step 1).
                unsafe {
                    std::ptr::copy_nonoverlapping(t.addr as *const u8, tmp as *mut u8, t.len)
                };
                Ok(tmp)
            }
        }
    }

    /// Step 3: put the copy in place (or roll back on `copied` = Err).
    pub(crate) fn finish(
        &mut self,
        t: Ticket,
        copied: Result<usize, TierError>,
    ) -> Result<(), TierError> {
        let file_mode = matches!(self.cfg.slow, SlowTier::File(_));
        let result = match copied {
            Ok(tmp) if file_mode => match backing::move_into_place(tmp, t.addr, t.len, &t.name) {
                Ok(()) => Ok(()),
                Err(e) => {
                    backing::unmap(tmp, t.len);
                    Err(e)
                }
            },
            Ok(_) => Ok(()),
            Err(e) => Err(e),
        };
        if result.is_err() && file_mode {
            // The old mapping is intact: give writers their permission back.
            let _ = backing::protect(t.addr, t.len, libc::PROT_READ | libc::PROT_WRITE, &t.name);
        }
        SLOTS[t.slot].state.store(guard::IDLE, SeqCst);
        if let Some(o) = self.objects.get_mut(&t.addr) {
            o.migrating = false;
            match (&result, t.to) {
                (Ok(()), to) => {
                    if to == Tier::Slow {
                        self.dram_used -= t.len;
                    }
                    o.tier = to;
                    o.moves += 1;
                    o.bytes_moved += t.len as u64;
                }
                (Err(_), Tier::Dram) => self.dram_used -= t.len,
                (Err(_), Tier::Slow) => {}
            }
        }
        result
    }

    /// Gives every sampled page of `addr` its permissions back.
    pub(crate) fn disarm(&mut self, addr: usize) {
        if let Some(o) = self.objects.get_mut(&addr) {
            if o.migrating {
                return;
            }
            // One call for the whole object: cheaper than one per armed page,
            // and it merges the VMAs that arming split.
            if !o.armed.is_empty() {
                o.armed.clear();
                let _ = backing::protect(addr, o.len, libc::PROT_READ | libc::PROT_WRITE, &o.name);
            }
        }
    }
}

/// A registry dropped with objects still allocated ends them
/// ([`Registry::clear`]): each held a slot of the process-wide fault table
/// and a mapping (with, in file mode, its slow-tier file), and nothing
/// else could ever release those.
impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.clear();
    }
}

/// Runs the three protocol steps on `lock`'s registry, holding the lock only
/// for steps 1 and 3. Used by the helper thread and by synchronous moves.
pub(crate) fn migrate(
    shared: &crate::Shared,
    addr: usize,
    to: Tier,
) -> Result<MoveReport, TierError> {
    let t0 = Instant::now();
    let (ticket, cfg) = {
        let mut reg = shared.lock();
        (reg.begin(addr, to)?, reg.config().clone())
    };
    let copied = Registry::copy(&cfg, &ticket);
    let bytes = ticket.len;
    let r = {
        let mut reg = shared.lock();
        reg.finish(ticket, copied)
    };
    shared.cv.notify_all();
    r?;
    Ok(MoveReport {
        bytes,
        copy_ns: t0.elapsed().as_nanos() as u64,
        to,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering::SeqCst;

    /// A store issued after the copy began blocks until the new mapping is
    /// in place and then lands in it: step by step, no timing involved.
    #[test]
    fn write_during_copy_waits_and_lands_in_new_copy() {
        let mut reg =
            Registry::new(TierConfig::new(1 << 20, SlowTier::File("/dev/shm".into())).unwrap())
                .unwrap();
        let n = 8 * reg.page();
        let a = reg.alloc(n, "w", Tier::Slow).unwrap();
        // SAFETY: `a` is a live n-byte object.
        unsafe { std::ptr::write_bytes(a as *mut u8, 7, n) };
        let t = reg.begin(a, Tier::Dram).unwrap();
        let slot = t.slot;
        let writer = std::thread::spawn(move || unsafe {
            std::ptr::write_volatile((a + 4096 + 8) as *mut u8, 42)
        });
        let t0 = Instant::now();
        while SLOTS[slot].waiters.load(SeqCst) == 0 {
            assert!(
                t0.elapsed().as_secs() < 20,
                "the writer never met the write protection"
            );
            std::thread::yield_now();
        }
        let copied = Registry::copy(&reg.config().clone(), &t);
        // The old copy is still 7 there: the store has not happened yet.
        assert_eq!(unsafe { *((a + 4096 + 8) as *const u8) }, 7);
        reg.finish(t, copied).unwrap();
        writer.join().unwrap();
        assert_eq!(unsafe { *((a + 4096 + 8) as *const u8) }, 42);
        assert_eq!(unsafe { *((a + 4096 + 9) as *const u8) }, 7);
        assert_eq!(SLOTS[slot].blocked_faults.load(SeqCst), 1);
        assert_eq!(reg.objects()[0].tier, Tier::Dram);
        assert_eq!(reg.dram_used(), n);
        reg.free(a).unwrap();
        assert_eq!(reg.dram_used(), 0);
    }

    #[test]
    fn byte_counts_parse() {
        assert_eq!(parse_bytes("4096"), Some(4096));
        assert_eq!(parse_bytes("256M"), Some(256 << 20));
        assert_eq!(parse_bytes("1g"), Some(1 << 30));
        assert_eq!(parse_bytes("12k"), Some(12 << 10));
        assert_eq!(parse_bytes("x"), None);
        assert_eq!(parse_bytes(""), None);
    }
}
