//! The state the application threads, the flusher threads, the control thread and the
//! proactive thread share (thesis §6.3.1): the queues, the flusher count, the counters and
//! the execution functions. A leaf under the runtime: the thread bodies (`flusher`) and the
//! runtime (`runtime`) import it; it imports neither.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, RwLock};
use std::thread::Thread;
use std::time::Duration;

use crate::bandwidth::BandwidthSource;
use crate::controller::{Case, ControlConfig};
use crate::coshm::Corun;
use crate::error::{RibbonError, MAX_APP_THREADS, MAX_FLUSHERS, MAX_QUEUE_ENTRIES};
use crate::pin::Pinner;
use crate::proactive::StoreSampler;
use crate::queue::{Batch, Padded, Queue};

/// How flushes and fences are executed. Production uses
/// [`Executor::pmem`]; tests and benchmarks substitute recording or
/// counting functions.
#[derive(Clone, Copy, Debug)]
pub struct Executor {
    /// Writes back `addr..addr+len` without ordering.
    pub flush: unsafe fn(*const u8, usize),
    /// Orders every earlier flush of this thread (sfence).
    pub fence: fn(),
}

impl Executor {
    /// CLWB/CLFLUSHOPT/CLFLUSH + SFENCE from `memtamer-pmem`.
    pub fn pmem() -> Executor {
        Executor {
            flush: memtamer_pmem::flush,
            fence: memtamer_pmem::fence,
        }
    }
}

/// How many flusher threads run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flushers {
    /// Exactly this many (0: application threads flush themselves).
    Fixed(usize),
    /// Chosen by the four-point search (thesis §6.3.1).
    Adaptive,
}

/// Everything `Ribbon::start` needs. `Config::new` gives the thesis's
/// defaults for `ribbon_start(numAppT, eleFQueue)`.
pub struct Config {
    /// Queues to preallocate (`numAppT`); more threads flush inline.
    pub app_threads: usize,
    /// Entries per queue (`eleFQueue`), rounded up to a power of two.
    pub queue_entries: usize,
    /// Flusher policy.
    pub flushers: Flushers,
    /// Hardware threads available (P4 of the search).
    pub cores: usize,
    /// The controller's settings (used with `Flushers::Adaptive`).
    pub control: ControlConfig,
    /// The flush and fence instructions.
    pub executor: Executor,
    /// Where the controller reads write bandwidth; None = the runtime's
    /// own flushed-bytes rate.
    pub bandwidth: Option<Box<dyn BandwidthSource>>,
    /// Store-address sampler for proactive flushing; None = off.
    pub sampler: Option<Box<dyn StoreSampler>>,
    /// Whether the control thread measures the hardware threads other
    /// processes leave free (`idle.rs`); false assumes all `cores` free.
    pub detect_idle: bool,
    /// At M = N every queue has a flusher of its own, so handing a flush
    /// over buys no flushing concurrency (N threads flush either way) and
    /// only adds the hand-off (a cache-line round trip for the queue
    /// indexes, the flusher's snoop of the freshly written lines, and a
    /// futex wake when the flusher sleeps). True (the default) executes a
    /// flush on its caller then; false forces the hand-off (benchmarks).
    /// docs/ribbon.md, "Inline when dedicated".
    pub inline_when_dedicated: bool,
    /// The sysfs root (normally `/sys/devices/system`) whose topology the
    /// flushers are pinned by ([`crate::placement::flusher_order`] on the
    /// CPUs the application leaves idle); None keeps them unpinned
    /// (`MEMTAMER_RIBBON_PIN=0`). docs/ribbon.md, "Where the real flushers run".
    pub pin: Option<PathBuf>,
    /// Co-running coordination (thesis §6.5.4): with
    /// [`crate::coshm::Corun::Shared`] an adaptive instance registers in the
    /// registry and applies the flusher count the coordinator's split gives
    /// it instead of running its own search. docs/notebook/ribbon.md, "Co-running
    /// applications".
    pub corun: Corun,
    /// Test-only: publish a batch as done before executing it (the bug
    /// the fence-ordering test must catch).
    #[cfg(test)]
    pub broken_publish_early: bool,
    /// Test-only: in the dedicated (M = N) mode a fence skips waiting for
    /// the queue, forgetting requests queued before M became N.
    #[cfg(test)]
    pub broken_dedicated_fence: bool,
    /// Test-only: a flusher's round skips its sfence (the bug the fenced-
    /// flush test must catch).
    #[cfg(test)]
    pub broken_round_fence: bool,
}

/// Hardware threads of this process (its CPU affinity), at least 1.
pub fn hardware_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

impl Config {
    /// `ribbon_start(app_threads, queue_entries)` with adaptive flushers
    /// on this machine's hardware threads.
    pub fn new(app_threads: usize, queue_entries: usize) -> Config {
        let cores = hardware_threads();
        Config {
            app_threads,
            queue_entries,
            flushers: Flushers::Adaptive,
            cores,
            control: ControlConfig::thesis(cores),
            executor: Executor::pmem(),
            bandwidth: None,
            sampler: None,
            detect_idle: true,
            inline_when_dedicated: true,
            pin: Some(PathBuf::from(crate::pin::SYSFS)),
            corun: Corun::Off,
            #[cfg(test)]
            broken_publish_early: false,
            #[cfg(test)]
            broken_dedicated_fence: false,
            #[cfg(test)]
            broken_round_fence: false,
        }
    }

    pub(crate) fn validate(&self) -> Result<(), RibbonError> {
        if self.app_threads == 0 || self.app_threads > MAX_APP_THREADS {
            return Err(RibbonError::AppThreads(self.app_threads as i128));
        }
        if self.queue_entries == 0 || self.queue_entries > MAX_QUEUE_ENTRIES {
            return Err(RibbonError::QueueEntries(self.queue_entries as i128));
        }
        if let Flushers::Fixed(m) = self.flushers {
            if m > MAX_FLUSHERS {
                return Err(RibbonError::Flushers(m));
            }
        }
        Ok(())
    }
}

/// Counters shared by every thread of one Ribbon instance.
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) requests: AtomicU64,
    pub(crate) flushed_bytes: AtomicU64,
    pub(crate) proactive_bytes: AtomicU64,
    pub(crate) fences: AtomicU64,
    pub(crate) inline_requests: AtomicU64,
    pub(crate) dedicated_requests: AtomicU64,
    pub(crate) wakeups: AtomicU64,
    pub(crate) parks: AtomicU64,
    pub(crate) self_drains: AtomicU64,
    pub(crate) dispatched_jobs: AtomicU64,
    pub(crate) flusher_batches: AtomicU64,
    pub(crate) flusher_rounds: AtomicU64,
    pub(crate) searches: AtomicU64,
    pub(crate) last_case: AtomicUsize,
    pub(crate) pins: AtomicU64,
    pub(crate) helper_pins: AtomicU64,
    pub(crate) pin_failures: AtomicU64,
    /// [`CorunRole`] as a number (its discriminant).
    pub(crate) corun_role: AtomicUsize,
    /// The coordinator's last system-wide flusher count.
    pub(crate) corun_total: AtomicUsize,
}

/// A counter a producer bumps on every flush or fence.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Ev {
    Requests,
    Fences,
    Inline,
    Dedicated,
    FlushedBytes,
}

impl Counters {
    fn of(&self, e: Ev) -> &AtomicU64 {
        match e {
            Ev::Requests => &self.requests,
            Ev::Fences => &self.fences,
            Ev::Inline => &self.inline_requests,
            Ev::Dedicated => &self.dedicated_requests,
            Ev::FlushedBytes => &self.flushed_bytes,
        }
    }
}

/// The [`Ev`] counters of one queue slot. Only the thread owning the slot
/// writes them, so a bump is a plain load and store, not a locked
/// read-modify-write: with flushes on their caller (M = N) the locked
/// increments of shared counters were most of Ribbon's cost per persist.
/// A slot's next owner sees the last value (its registration acquires
/// the slot the previous owner released).
#[derive(Default)]
pub(crate) struct OwnCounters {
    requests: AtomicU64,
    fences: AtomicU64,
    inline_requests: AtomicU64,
    dedicated_requests: AtomicU64,
    flushed_bytes: AtomicU64,
}

impl OwnCounters {
    fn of(&self, e: Ev) -> &AtomicU64 {
        match e {
            Ev::Requests => &self.requests,
            Ev::Fences => &self.fences,
            Ev::Inline => &self.inline_requests,
            Ev::Dedicated => &self.dedicated_requests,
            Ev::FlushedBytes => &self.flushed_bytes,
        }
    }
}

/// A snapshot of a Ribbon instance's activity (for `memtamer stat`, logs,
/// benchmarks).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// `flush` calls accepted.
    pub requests: u64,
    /// Bytes written back by flushes (whole cache lines).
    pub flushed_bytes: u64,
    /// Bytes written back by proactive flushes.
    pub proactive_bytes: u64,
    /// `fence` calls.
    pub fences: u64,
    /// Requests executed on the application thread (no queue, no
    /// flusher, or Ribbon stopping).
    pub inline_requests: u64,
    /// Requests executed on their caller because M = N (each queue has a
    /// dedicated flusher, so the hand-off would add nothing; counted apart
    /// from `inline_requests`).
    pub dedicated_requests: u64,
    /// Sleeping flushers woken (each an unpark, i.e. a futex wake).
    pub wakeups: u64,
    /// Times a flusher went to sleep (each a futex wait).
    pub parks: u64,
    /// Times a producer drained its own queue (full queue or inline mode).
    pub self_drains: u64,
    /// Jobs the dispatcher handed to other flushers (M > N).
    pub dispatched_jobs: u64,
    /// Queue batches executed by flusher threads (the offloaded work).
    pub flusher_batches: u64,
    /// Rounds flusher threads ran: each ends in one fence however many
    /// queues' batches it held (`flusher_batches / flusher_rounds` is the
    /// fences a round saved, plus one).
    pub flusher_rounds: u64,
    /// Flushers running now (0 = application threads flush).
    pub flushers: usize,
    /// Queues registered now.
    pub queues: usize,
    /// Whether proactive flushing is on now.
    pub proactive: bool,
    /// Four-point searches started.
    pub searches: u64,
    /// The decision-table row of the last search, if any.
    pub last_case: Option<Case>,
    /// The bandwidth signal the controller reads.
    pub bandwidth_source: &'static str,
    /// Times a flusher pinned itself to one idle CPU (at start, and again
    /// whenever the flusher count or the registered queues change).
    pub pins: u64,
    /// Times the control or proactive thread pinned itself to its idle CPU
    /// (`placement::helper_cpus`; at start and whenever the flusher count or
    /// the registered queues change).
    pub helper_pins: u64,
    /// Pinning failures (no sysfs topology, or `sched_setaffinity`
    /// refused, for a flusher, the control or the proactive thread): the
    /// thread then runs on the process's whole mask.
    pub pin_failures: u64,
    /// This instance's part in co-running coordination (thesis §6.5.4).
    pub corun: CorunRole,
    /// The system-wide flusher count the coordinator last split (0 when
    /// not coordinated).
    pub corun_total: usize,
    /// Why co-running coordination is off although it was asked for.
    pub corun_error: Option<String>,
}

/// An instance's part in co-running coordination (thesis §6.5.4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CorunRole {
    /// Not registered: its own search (alone, not asked for, or refused).
    #[default]
    Off = 0,
    /// Registered, no fresh assignment yet: it keeps its flusher count.
    Waiting = 1,
    /// Registered; applies the M_i the coordinator wrote for it.
    Member = 2,
    /// Registered and holding the coordinator lease.
    Coordinator = 3,
}

impl CorunRole {
    pub(crate) fn from_code(c: usize) -> CorunRole {
        match c {
            1 => CorunRole::Waiting,
            2 => CorunRole::Member,
            3 => CorunRole::Coordinator,
            _ => CorunRole::Off,
        }
    }

    /// The role's name in the shim's statistics line.
    pub fn name(self) -> &'static str {
        match self {
            CorunRole::Off => "off",
            CorunRole::Waiting => "waiting",
            CorunRole::Member => "member",
            CorunRole::Coordinator => "coordinator",
        }
    }
}

const CASES: [Option<Case>; 7] = [
    None,
    Some(Case::NoContention),
    Some(Case::PeakBetween),
    Some(Case::ContentionPastP1),
    Some(Case::DipThenRise),
    Some(Case::TieComparedEnds),
    Some(Case::InteriorPeak),
];

pub(crate) fn case_code(c: Case) -> usize {
    CASES.iter().position(|x| *x == Some(c)).unwrap_or(0)
}

/// State shared by the application threads, the flushers and the control
/// and proactive threads.
pub(crate) struct Shared {
    pub(crate) exec: Executor,
    /// `Config::inline_when_dedicated`.
    pub(crate) inline_when_dedicated: bool,
    pub(crate) queues: Box<[Queue]>,
    pub(crate) slot_used: Box<[AtomicBool]>,
    /// Active slots, compact: ranks 0..active_len.
    pub(crate) active: Box<[AtomicUsize]>,
    pub(crate) active_len: AtomicUsize,
    pub(crate) registry: Mutex<()>,
    /// Flushers serving now (0: application threads flush).
    pub(crate) m: AtomicUsize,
    pub(crate) max_flushers: usize,
    pub(crate) stopping: AtomicBool,
    pub(crate) sleeping: Box<[AtomicBool]>,
    /// Active flushers asleep (producers wake them only if nonzero).
    pub(crate) sleepers: AtomicUsize,
    pub(crate) threads: OnceLock<Vec<Thread>>,
    /// Job ring of each flusher (filled by the dispatcher only).
    pub(crate) jobs: Box<[Queue]>,
    pub(crate) proactive_on: AtomicBool,
    pub(crate) proactive_regions: RwLock<Vec<(usize, usize)>>,
    pub(crate) counters: Counters,
    /// Per-slot counters, written by the slot's owner only.
    pub(crate) own: Box<[Padded<OwnCounters>]>,
    pub(crate) source_name: Mutex<&'static str>,
    /// The control thread's last search (`Ribbon::last_search`); None
    /// without an adaptive controller of this process's own.
    pub(crate) last_search: Mutex<Option<crate::search_record::SearchRecord>>,
    /// Topology and process mask for pinning flushers; None = unpinned.
    pub(crate) pin: Option<Pinner>,
    /// Bumped whenever the flusher count or the registered queues change:
    /// each flusher re-pins itself when it sees a new value.
    pub(crate) pin_epoch: AtomicU64,
    /// The CPU of the thread that started Ribbon (an application thread).
    pub(crate) start_cpu: Option<u32>,
    /// Per queue slot, the CPU its thread registered on (`NO_CPU`: free).
    pub(crate) busy_cpu: Box<[AtomicU32]>,
    /// Each flusher's kernel thread id, once it runs (0 before).
    pub(crate) flusher_tids: Box<[AtomicI32]>,
    /// The control and proactive threads' kernel thread ids, indexed by
    /// [`Helper`], once they run (0 before, or never started).
    pub(crate) helper_tids: [AtomicI32; 2],
    /// Why co-running coordination is off although it was asked for.
    pub(crate) corun_error: Mutex<Option<String>>,
    #[cfg(test)]
    pub(crate) broken: bool,
    #[cfg(test)]
    pub(crate) broken_dedicated_fence: bool,
    #[cfg(test)]
    pub(crate) broken_round_fence: bool,
}

impl Shared {
    /// Executes a batch on the calling thread: every flush, one fence,
    /// then publishes it (the queue's head moves, fences may return).
    pub(crate) fn execute(&self, batch: Batch<'_>) {
        self.execute_counted(batch, true)
    }

    /// Executes a job handed over by the dispatcher (which counts its bytes).
    pub(crate) fn execute_job(&self, batch: Batch<'_>) {
        self.execute_counted(batch, false)
    }

    /// Executes one flusher round: the flushes of every batch in `round`
    /// (each batch in program order), then ONE fence, then publishes every
    /// batch. An sfence orders all earlier flushes of the issuing thread,
    /// so one per round gives each batch the same guarantee as a fence of
    /// its own: its queue's head moves only after its flushes executed and
    /// were fenced. A flusher serving k queues then waits for one fence per
    /// round instead of k in a row (issue 19; docs/ribbon.md, "One fence per
    /// round"). Empties `round`.
    pub(crate) fn execute_round<'q>(&self, round: &mut Vec<Batch<'q>>) {
        if round.is_empty() {
            return;
        }
        #[cfg(test)]
        if self.broken {
            for b in round.iter() {
                b.publish_early();
            }
        }
        let mut bytes = 0u64;
        for b in round.iter() {
            for r in b.requests() {
                // SAFETY: the producer promised the range is mapped (ribbon_flush contract).
                unsafe { (self.exec.flush)(r.addr as *const u8, r.len) };
                bytes += (memtamer_pmem::lines_covered(r.addr, r.len) * memtamer_pmem::CACHE_LINE)
                    as u64;
            }
        }
        #[cfg(test)]
        let skip = self.broken_round_fence;
        #[cfg(not(test))]
        let skip = false;
        if !skip {
            (self.exec.fence)();
        }
        self.counters
            .flushed_bytes
            .fetch_add(bytes, Ordering::Relaxed);
        self.counters.flusher_rounds.fetch_add(1, Ordering::Relaxed);
        for b in round.drain(..) {
            b.complete();
        }
    }

    fn execute_counted(&self, batch: Batch<'_>, count: bool) {
        #[cfg(test)]
        if self.broken {
            batch.publish_early();
        }
        let mut bytes = 0u64;
        for r in batch.requests() {
            // SAFETY: the producer promised the range is mapped (ribbon_flush contract).
            unsafe { (self.exec.flush)(r.addr as *const u8, r.len) };
            bytes +=
                (memtamer_pmem::lines_covered(r.addr, r.len) * memtamer_pmem::CACHE_LINE) as u64;
        }
        (self.exec.fence)();
        if count {
            self.counters
                .flushed_bytes
                .fetch_add(bytes, Ordering::Relaxed);
        }
        batch.complete();
    }

    /// Adds `n` to counter `e`: the slot's own counter when the caller owns
    /// `slot`, else the shared one.
    pub(crate) fn bump(&self, slot: Option<usize>, e: Ev, n: u64) {
        match slot.and_then(|i| self.own.get(i)) {
            Some(own) => {
                let a = own.0.of(e);
                a.store(a.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
            }
            None => {
                self.counters.of(e).fetch_add(n, Ordering::Relaxed);
            }
        }
    }

    /// Counter `e` over the shared and every slot's counters.
    pub(crate) fn total(&self, e: Ev) -> u64 {
        self.own
            .iter()
            .map(|o| o.0.of(e).load(Ordering::Relaxed))
            .fold(
                self.counters.of(e).load(Ordering::Relaxed),
                u64::wrapping_add,
            )
    }

    /// Wakes every sleeping flusher below `m`.
    pub(crate) fn wake_active(&self) {
        let m = self.m.load(Ordering::Relaxed).min(self.max_flushers);
        for i in 0..m {
            self.wake(i);
        }
    }

    /// Wakes flusher `i` if it sleeps.
    pub(crate) fn wake(&self, i: usize) {
        if self.sleeping[i].swap(false, Ordering::SeqCst) {
            if let Some(t) = self.threads.get().and_then(|t| t.get(i)) {
                self.counters.wakeups.fetch_add(1, Ordering::Relaxed);
                t.unpark();
            }
        }
    }

    /// True when each registered queue has a flusher of its own (M = N)
    /// and the caller may execute its flushes itself
    /// (`Config::inline_when_dedicated`; the pure rule is
    /// [`crate::route::dedicated`], which the simulator shares; the
    /// producer routes through [`crate::route::route`], so only the broken
    /// fence of the tests asks this).
    #[cfg(test)]
    pub(crate) fn dedicated(&self) -> bool {
        crate::route::dedicated(
            self.inline_when_dedicated,
            self.m.load(Ordering::Relaxed),
            self.active_len.load(Ordering::Relaxed),
        )
    }

    /// True when any queue or job ring holds work.
    pub(crate) fn any_work(&self, id: usize) -> bool {
        self.jobs[id].has_work() || self.queues.iter().any(Queue::has_work)
    }

    pub(crate) fn register(&self) -> Option<usize> {
        let _g = self.registry.lock().ok()?;
        let slot = self.slot_used.iter().position(|u| {
            u.compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        })?;
        let n = self.active_len.load(Ordering::Relaxed);
        self.active[n].store(slot, Ordering::Relaxed);
        self.active_len.store(n + 1, Ordering::Release);
        if self.pin.is_some() {
            let cpu = crate::pin::current_cpu().unwrap_or(NO_CPU);
            self.busy_cpu[slot].store(cpu, Ordering::Relaxed);
            self.placement_changed();
        }
        Some(slot)
    }

    /// The flusher count or the application's CPUs changed: every flusher
    /// re-pins itself (the sleeping ones are woken for it).
    pub(crate) fn placement_changed(&self) {
        if self.pin.is_none() {
            return;
        }
        self.pin_epoch.fetch_add(1, Ordering::AcqRel);
        for i in 0..self.max_flushers {
            self.wake(i);
        }
    }

    /// The CPUs the application threads run on: the starting thread's and
    /// each registered queue's thread's at registration.
    pub(crate) fn busy_cpus(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self.start_cpu.into_iter().collect();
        v.extend(
            self.busy_cpu
                .iter()
                .map(|c| c.load(Ordering::Relaxed))
                .filter(|&c| c != NO_CPU),
        );
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Flusher `id` (the calling thread) pins itself to its CPU of
    /// [`crate::pin::plan`], or to the process's whole mask when no CPU is
    /// idle; a refused pin counts and leaves it on the whole mask.
    pub(crate) fn repin(&self, id: usize) {
        let Some(p) = &self.pin else { return };
        let plan = crate::pin::plan(&p.threads, &p.allowed, &self.busy_cpus(), self.max_flushers);
        let want = plan.get(id).copied().flatten();
        let set = want.map_or(p.allowed, |c| memtamer_core::CpuSet::single(c as usize));
        if crate::pin::pin_self(&set) {
            if want.is_some() {
                self.counters.pins.fetch_add(1, Ordering::Relaxed);
            }
        } else {
            self.counters.pin_failures.fetch_add(1, Ordering::Relaxed);
            let _ = crate::pin::pin_self(&p.allowed);
        }
    }

    /// The control or proactive thread (the calling thread) pins itself to
    /// its CPU of [`crate::pin::helper_plan`], or to the process's whole
    /// mask when no CPU is idle; a refused pin counts and leaves it on the
    /// whole mask.
    pub(crate) fn repin_helper(&self, who: Helper) {
        let Some(p) = &self.pin else { return };
        let h = crate::pin::helper_plan(&p.threads, &p.allowed, &self.busy_cpus());
        let want = match who {
            Helper::Control => h.control,
            Helper::Proactive => h.proactive,
        };
        let set = want.map_or(p.allowed, |c| memtamer_core::CpuSet::single(c as usize));
        if crate::pin::pin_self(&set) {
            if want.is_some() {
                self.counters.helper_pins.fetch_add(1, Ordering::Relaxed);
            }
        } else {
            self.counters.pin_failures.fetch_add(1, Ordering::Relaxed);
            let _ = crate::pin::pin_self(&p.allowed);
        }
    }

    /// Called by the control or proactive thread in its loop: records its
    /// tid once and re-pins it when the placement changed since `placed`
    /// (the `pin_epoch` it last pinned for).
    pub(crate) fn helper_placement(&self, who: Helper, placed: &mut u64) {
        if *placed == u64::MAX {
            self.helper_tids[who as usize].store(crate::pin::current_tid(), Ordering::Relaxed);
        }
        if self.pin.is_none() {
            *placed = 0;
            return;
        }
        let e = self.pin_epoch.load(Ordering::Acquire);
        if e != *placed {
            *placed = e;
            self.repin_helper(who);
        }
    }

    pub(crate) fn unregister(&self, slot: usize) {
        let Ok(_g) = self.registry.lock() else { return };
        let n = self.active_len.load(Ordering::Relaxed);
        if let Some(rank) = (0..n).find(|&r| self.active[r].load(Ordering::Relaxed) == slot) {
            let last = self.active[n - 1].load(Ordering::Relaxed);
            self.active[rank].store(last, Ordering::Relaxed);
            self.active_len.store(n - 1, Ordering::Release);
        }
        self.slot_used[slot].store(false, Ordering::Release);
        if self.pin.is_some() {
            self.busy_cpu[slot].store(NO_CPU, Ordering::Relaxed);
            self.placement_changed();
        }
    }

    pub(crate) fn stats(&self) -> Stats {
        let c = &self.counters;
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Stats {
            requests: self.total(Ev::Requests),
            flushed_bytes: self.total(Ev::FlushedBytes),
            proactive_bytes: l(&c.proactive_bytes),
            fences: self.total(Ev::Fences),
            inline_requests: self.total(Ev::Inline),
            dedicated_requests: self.total(Ev::Dedicated),
            wakeups: l(&c.wakeups),
            parks: l(&c.parks),
            self_drains: l(&c.self_drains),
            dispatched_jobs: l(&c.dispatched_jobs),
            flusher_batches: l(&c.flusher_batches),
            flusher_rounds: l(&c.flusher_rounds),
            flushers: self.m.load(Ordering::Relaxed),
            queues: self.active_len.load(Ordering::Relaxed),
            proactive: self.proactive_on.load(Ordering::Relaxed),
            searches: l(&c.searches),
            last_case: CASES
                .get(c.last_case.load(Ordering::Relaxed))
                .copied()
                .flatten(),
            bandwidth_source: self.source_name.lock().map(|s| *s).unwrap_or("unknown"),
            pins: l(&c.pins),
            helper_pins: l(&c.helper_pins),
            pin_failures: l(&c.pin_failures),
            corun: CorunRole::from_code(c.corun_role.load(Ordering::Relaxed)),
            corun_total: c.corun_total.load(Ordering::Relaxed),
            corun_error: self.corun_error.lock().ok().and_then(|e| e.clone()),
        }
    }
}

/// Ribbon's threads besides the flushers, which pin themselves apart
/// from them (`placement::helper_cpus`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Helper {
    /// The control thread (the four-point search).
    Control = 0,
    /// The proactive flushing thread.
    Proactive = 1,
}

/// `Shared::busy_cpu` of a slot without a thread.
pub(crate) const NO_CPU: u32 = u32::MAX;

/// How long an idle flusher sleeps before looking again on its own.
pub(crate) const PARK: Duration = Duration::from_micros(500);
