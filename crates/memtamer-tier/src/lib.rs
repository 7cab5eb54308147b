//! memtamer-tier: the two-tier data-object layer shared by Unimem (thesis
//! ch. 3, MPI phases) and Tahoe (ch. 4, tasks).
//!
//! * [`TierRuntime`]: a registry of named objects, each in DRAM or in the slow
//!   tier (a CPU-less NUMA node, else a file-backed mapping in a DAX mount or
//!   `/dev/shm`), moved by a helper thread at a *fixed virtual address* so
//!   user pointers never change (protocol in [`registry`]).
//! * [`profiler`]: PMU-free access sampling by protection faults.
//! * [`pagesample`]: the same per page, for program memory (Tahoe).
//! * [`unimem`]: the pure placement core (models, knapsack, schedule).
//! * [`calibrate`]: the models' constant factors timed on this host's tiers.
//! * [`cpus`]: whether the copy helper has a CPU of its own (ranks vs CPUs).
//! * [`capi`]: `mt_tier_malloc` / `mt_tier_free` and friends for C and Fortran.
//! * [`status`] / [`publish`]: per-rank status files (`MEMTAMER_TIER_STATUS_DIR`)
//!   and their reader (`memtamer tier status`).

pub mod access;
pub mod alloc_place;
pub mod alloc_site;
pub mod backing;
pub mod bench;
pub mod budget;
pub mod calibrate;
pub mod capi;
pub mod cpus;
pub mod decision;
pub mod drift;
pub mod driver;
mod env;
pub mod error;
pub mod guard;
pub mod migrator;
pub mod numa;
pub mod pebs;
/// Per-page protection-fault sampling (lives under [`guard`], whose handler it extends).
pub use guard::pagesample;
pub mod platform;
pub mod profiler;
pub mod publish;
pub mod registry;
pub mod sampling;
pub mod status;
pub mod synthetic;

pub use error::TierError;
/// The pure Unimem core lives in `memtamer-core` (one implementation shared
/// with the simulator); re-exported here under its old path.
pub use memtamer_core::unimem;
pub use memtamer_core::unimem::Tier;
pub use migrator::{DirectionStats, MigrationStats, Migrator};
pub use registry::{MoveReport, ObjectView, Registry, SlowTier, TierConfig};

use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// The registry behind a mutex plus the condition "a move finished".
#[derive(Debug)]
pub struct Shared {
    reg: Mutex<Registry>,
    pub(crate) cv: Condvar,
}

impl Shared {
    /// Locks the registry (a poisoned lock is still usable: the registry's
    /// invariants are restored before any call that can panic).
    pub(crate) fn lock(&self) -> MutexGuard<'_, Registry> {
        self.reg.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What [`TierRuntime::shutdown`] found when it ended the runtime.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Objects the program had not freed: the runtime ended them (0 for a
    /// program that freed everything; see [`TierRuntime::live_objects`]).
    pub live_objects: usize,
    /// Their bytes, as asked for at allocation.
    pub live_bytes: usize,
    /// Queued moves dropped before they started (a move already copying
    /// was waited for and is in `stats`).
    pub cancelled_moves: u64,
    /// Migration totals over the runtime's whole life.
    pub stats: MigrationStats,
}

/// One process's tiering runtime: registry + helper thread + profiler state.
///
/// # End of life
/// The runtime owns its objects, as a pmemobj pool owns its objects until
/// `pmemobj_close`: ending it ([`TierRuntime::shutdown`], or dropping it,
/// which runs the same steps and ignores their errors) waits for the move
/// in flight, drops queued moves, and ends every object still allocated:
/// its slot of the process-wide fault table is released, its memory
/// unmapped and its slow-tier file (unlinked at creation) freed with it.
/// **Every pointer the runtime handed out is invalid afterwards**: an
/// access faults like any access to unmapped memory. Before, a dropped
/// runtime leaked all of it, and its fault-table slots were lost for the
/// rest of the process: a program that started runtimes one after another
/// with objects left over failed with `TooManyObjects` after 4096 of them.
/// [`TierRuntime::live_objects`] tells a caller beforehand whether any are
/// left.
pub struct TierRuntime {
    shared: Arc<Shared>,
    migrator: Migrator,
    profiler: Mutex<profiler::Profiler>,
}

impl TierRuntime {
    /// Starts a runtime (and its helper thread) with `cfg`.
    pub fn new(cfg: TierConfig) -> Result<Self, TierError> {
        let shared = Arc::new(Shared {
            reg: Mutex::new(Registry::new(cfg)?),
            cv: Condvar::new(),
        });
        let migrator = Migrator::start(shared.clone())?;
        Ok(TierRuntime {
            shared,
            migrator,
            profiler: Mutex::new(profiler::Profiler::new(0x5eed)),
        })
    }

    /// The configuration in force.
    pub fn config(&self) -> TierConfig {
        self.shared.lock().config().clone()
    }

    /// Allocates a named object in `tier`; its address never changes.
    pub fn alloc(&self, size: usize, name: &str, tier: Tier) -> Result<*mut u8, TierError> {
        Ok(self.shared.lock().alloc(size, name, tier)? as *mut u8)
    }

    /// Allocates one named object per `(name, size)` in `tier`, all or
    /// none: on an error the objects already allocated are freed again, so
    /// a caller that needs a set of objects (a kernel's arrays, a
    /// calibration run) never leaks part of it.
    pub fn alloc_all(
        &self,
        objects: &[(&str, usize)],
        tier: Tier,
    ) -> Result<Vec<*mut u8>, TierError> {
        let mut out = Vec::with_capacity(objects.len());
        for &(name, size) in objects {
            match self.alloc(size, name, tier) {
                Ok(p) => out.push(p),
                Err(e) => {
                    for p in out {
                        let _ = self.free(p);
                    }
                    return Err(e);
                }
            }
        }
        Ok(out)
    }

    /// Frees an object, first waiting for a move of it that is in flight.
    pub fn free(&self, ptr: *mut u8) -> Result<(), TierError> {
        self.free_sampled(ptr).map(|_| ())
    }

    /// [`TierRuntime::free`], returning what the sampler saw of the object
    /// since the last [`TierRuntime::profile_reset`] (`None`: never
    /// sampled), read and forgotten under the registry lock, so that an
    /// object later allocated at its address starts with no samples (it
    /// used to inherit them until the sampler's next tick). Allocation-time
    /// placement ([`alloc_place`]) learns its identity's density from it.
    pub fn free_sampled(&self, ptr: *mut u8) -> Result<Option<alloc_place::Sample>, TierError> {
        let addr = ptr as usize;
        let _ = self.migrator.wait(addr);
        let mut reg = self.shared.lock();
        while reg.is_migrating(addr) {
            reg = self.shared.cv.wait(reg).unwrap_or_else(|e| e.into_inner());
        }
        let pages = reg.objects.get(&addr).map(|o| o.len / reg.page());
        let seen = self
            .profiler
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .forget(&reg, addr);
        reg.free(addr)?;
        Ok(seen
            .zip(pages)
            .map(|((visits, ticks), pages)| alloc_place::Sample {
                visits,
                ticks,
                pages,
            }))
    }

    /// Moves an object now, on the calling thread (all of it exposed).
    pub fn migrate_now(&self, ptr: *mut u8, to: Tier) -> Result<MoveReport, TierError> {
        let r = registry::migrate(&self.shared, ptr as usize, to)?;
        self.migrator.record_sync(r.bytes, r.copy_ns, r.to);
        self.shared.lock().add_exposed(ptr as usize, r.copy_ns);
        Ok(r)
    }

    /// Queues a move for the helper thread; returns at once.
    pub fn request(&self, ptr: *mut u8, to: Tier) -> Result<(), TierError> {
        let addr = ptr as usize;
        if !self.shared.lock().objects.contains_key(&addr) {
            return Err(TierError::UnknownObject { addr });
        }
        self.migrator.request(addr, to)
    }

    /// Waits for the queued moves of one object (exposed time).
    pub fn wait(&self, ptr: *mut u8) -> Result<(), String> {
        let (ns, r) = self.migrator.wait_timed(ptr as usize);
        if ns > 0 {
            self.shared.lock().add_exposed(ptr as usize, ns);
        }
        r
    }

    /// Waits for every queued move (exposed time).
    pub fn wait_all(&self) {
        self.migrator.wait_all()
    }

    /// Migration totals, including time writers were blocked.
    pub fn stats(&self) -> MigrationStats {
        let mut s = self.migrator.stats();
        let reg = self.shared.lock();
        s.fault_blocked_ns += reg
            .objects
            .values()
            .map(|o| {
                guard::SLOTS[o.slot]
                    .blocked_ns
                    .load(std::sync::atomic::Ordering::SeqCst)
            })
            .sum::<u64>();
        s
    }

    /// A recorded failure of a queued move (the data stayed where it was).
    pub fn last_move_error(&self) -> Option<String> {
        self.migrator.last_error()
    }

    /// Snapshot of every object.
    pub fn objects(&self) -> Vec<ObjectView> {
        self.shared.lock().objects()
    }

    /// Live objects.
    pub fn object_count(&self) -> usize {
        self.live_objects()
    }

    /// Objects allocated and not yet freed: the ones ending the runtime
    /// would end with it (see "End of life" above).
    pub fn live_objects(&self) -> usize {
        self.shared.lock().objects.len()
    }

    /// Ends the runtime (see "End of life" above) and reports what was
    /// still live. Every object's pointer is invalid afterwards, whatever
    /// the result; an error (a helper thread that had panicked, a failed
    /// `munmap`) is returned after every object was ended anyway.
    pub fn shutdown(mut self) -> Result<ShutdownReport, TierError> {
        self.close()
    }

    /// The steps of [`TierRuntime::shutdown`]; idempotent (a second call
    /// finds nothing live), so `Drop` may run it again.
    fn close(&mut self) -> Result<ShutdownReport, TierError> {
        let helper = self.migrator.shutdown();
        // before the objects go: their slots hold blocked-writer time
        let stats = self.stats();
        let (live_objects, live_bytes, unmapped) = self.shared.lock().clear();
        let report = ShutdownReport {
            live_objects,
            live_bytes,
            cancelled_moves: *helper.as_ref().unwrap_or(&0),
            stats,
        };
        helper?;
        unmapped?;
        Ok(report)
    }

    /// DRAM bytes in use or reserved.
    pub fn dram_used(&self) -> usize {
        self.shared.lock().dram_used()
    }

    /// Ends the current profiling interval and arms `pages_per_object` fresh
    /// random pages of every object (see [`profiler`]).
    pub fn profile_tick(&self, pages_per_object: usize) {
        let mut reg = self.shared.lock();
        self.profiler
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .tick(&mut reg, pages_per_object);
    }

    /// Ends profiling (disarms every page) and returns the estimate per
    /// object since the last [`TierRuntime::profile_reset`].
    pub fn profile_take(&self) -> Vec<profiler::ObjectEstimate> {
        let mut reg = self.shared.lock();
        let mut p = self.profiler.lock().unwrap_or_else(|e| e.into_inner());
        p.tick(&mut reg, 0);
        p.estimates(&reg)
    }

    /// Forgets accumulated samples (start of a new profiling window).
    pub fn profile_reset(&self) {
        self.profiler
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .reset();
    }
}

/// Dropping the runtime ends it as [`TierRuntime::shutdown`] does, errors
/// ignored.
impl Drop for TierRuntime {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

#[cfg(test)]
mod shutdown_tests;
