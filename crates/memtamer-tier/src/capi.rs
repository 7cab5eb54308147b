//! The C ABI (`include/memtamer_tier.h`): the thesis's Table 3.1 API under
//! memtamer names. Errors never crash the caller: a function returns NULL
//! or -1 and [`mt_tier_last_error`] says why (an unknown pointer freed, a
//! budget of 0, no space in the slow-tier directory).
//!
//! Configuration comes from the environment when [`mt_tier_init`] gets 0:
//! `MEMTAMER_DRAM_BUDGET` (bytes, K/M/G suffix), `MEMTAMER_TIER_DIR`,
//! `MEMTAMER_TIER_TICK_US`, `MEMTAMER_TIER_PAGES`, `MEMTAMER_TIER_PACE` (`cpu`, the
//! default, or `wall`: the sampler's clock, [`crate::sampling`]), `MEMTAMER_ITERS`,
//! `MEMTAMER_SLOW_BW_DIV`, `MEMTAMER_SLOW_LAT_MUL`, `MEMTAMER_DRIFT`,
//! `MEMTAMER_CF_BW`, `MEMTAMER_CF_LAT` (the constant factors `memtamer tier
//! calibrate` prints; default 1),
//! `MEMTAMER_TIER_QUIET_TIMES=off` (decide on the profiled iteration's
//! phase times instead of a timing iteration's),
//! `MEMTAMER_UNIMEM=0` or `off` (no profiling or moves: the baseline; 1,
//! on or empty: Unimem; another value is refused),
//! `MEMTAMER_TIER_STATUS_DIR` (publish this process's status there, see
//! [`crate::status`]), `MEMTAMER_TIER_PROFILER` (`auto`, `pebs` or
//! `faults`), `MEMTAMER_TIER_PEBS_PERIOD`, `MEMTAMER_TIER_PEBS_LOADS`
//! (`l3miss`, the default, or `all`; see [`crate::pebs`]).

use crate::driver::{Driver, DriverConfig, ProfileOut};
use crate::publish::Publisher;
use crate::registry::parse_bytes;
use crate::status::RunState;
use crate::{ShutdownReport, TierConfig, TierError, TierRuntime};
use std::cell::{Cell, RefCell};
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

/// The process's runtime: started by the first `mt_tier_init` or
/// `mt_tier_malloc`, ended by [`mt_tier_shutdown`] (a later call starts a
/// fresh one). Lock order: `RT`, then `DRIVER`; a call holds `RT` only to
/// clone the runtime out ([`current`]), except [`init`] and
/// [`mt_tier_shutdown`].
static RT: Mutex<Option<Arc<TierRuntime>>> = Mutex::new(None);
static DRIVER: Mutex<Option<Driver>> = Mutex::new(None);
/// Status publisher (`MEMTAMER_TIER_STATUS_DIR`); `None`: not asked for, or
/// switched off after a write failed (reported once on stderr).
static STATUS: Mutex<Option<Publisher>> = Mutex::new(None);
/// `MPI_COMM_WORLD` rank and size, from the interposer (`mt_tier_set_rank`).
static RANK: OnceLock<(u32, u32)> = OnceLock::new();
/// Ranks on this node (the interposer's shared-memory communicator), from
/// `mt_tier_set_node_ranks`: with the CPUs this process may use, whether
/// the copy helper has a CPU of its own ([`crate::cpus`]).
static NODE_RANKS: OnceLock<u32> = OnceLock::new();
/// The ranks that share this process's CPUs and the CPUs they have, from
/// the node's affinity masks (`mt_tier_set_node_affinity`); unset: every
/// rank of the node against this process's own mask.
static NODE_SHARING: OnceLock<crate::cpus::Sharing> = OnceLock::new();

thread_local! {
    static LAST: RefCell<CString> = RefCell::new(CString::default());
    /// Depth of C ABI calls on this thread. The interposer's `malloc`
    /// (`mpi/memtamer_mpi.c`, `MEMTAMER_TIER_MALLOC_MIN`) asks
    /// [`mt_tier_in_runtime`] and sends every allocation made while the
    /// runtime runs to the real allocator: the runtime's own buffers must
    /// never become tier objects (that would recurse into the registry).
    /// Const-initialised, no destructor: reading it never allocates.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// Marks the current thread as inside the runtime for its lifetime.
struct InRuntime;

impl InRuntime {
    fn enter() -> Self {
        DEPTH.with(|d| d.set(d.get() + 1));
        InRuntime
    }
}

impl Drop for InRuntime {
    fn drop(&mut self) {
        DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
    }
}

/// 1 while the calling thread is inside a `mt_tier_*` call, else 0. The
/// interposed `malloc` uses it as its recursion guard; it never allocates.
#[no_mangle]
pub extern "C" fn mt_tier_in_runtime() -> c_int {
    DEPTH.with(|d| c_int::from(d.get() > 0))
}

fn set_err(e: impl std::fmt::Display) {
    let s = CString::new(e.to_string().replace('\0', " ")).unwrap_or_default();
    LAST.with(|l| *l.borrow_mut() = s);
}

fn env_num(key: &'static str, default: f64) -> Result<f64, TierError> {
    match std::env::var(key) {
        Err(_) => Ok(default),
        Ok(v) => v
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite() && *x >= 0.0)
            .ok_or(TierError::BadEnv {
                key,
                value: v,
                why: "not a non-negative number".into(),
            }),
    }
}

fn budget_from_env() -> Result<usize, TierError> {
    match std::env::var("MEMTAMER_DRAM_BUDGET") {
        Ok(v) => parse_bytes(&v).ok_or(TierError::BadEnv {
            key: "MEMTAMER_DRAM_BUDGET",
            value: v,
            why: "expected bytes with optional K/M/G".into(),
        }),
        Err(_) => Ok(crate::backing::machine_bytes() / 4),
    }
}

fn env_opt(key: &'static str) -> Result<Option<f64>, TierError> {
    match std::env::var(key) {
        Err(_) => Ok(None),
        Ok(v) => v
            .trim()
            .parse::<f64>()
            .map(Some)
            .map_err(|_| TierError::BadEnv {
                key,
                value: v,
                why: "not a number".into(),
            }),
    }
}

fn driver_config() -> Result<DriverConfig, TierError> {
    use crate::platform::{BadInput, PlatformInputs};
    let d = DriverConfig::default();
    // one constructor for the model (also `memtamer tier calibrate`'s);
    // the constant factors are what `memtamer tier calibrate` fits
    // (thesis §3.4.1)
    let platform = PlatformInputs {
        dram_bw: env_opt("MEMTAMER_DRAM_BW")?,
        slow_bw_div: env_opt("MEMTAMER_SLOW_BW_DIV")?,
        slow_lat_mul: env_opt("MEMTAMER_SLOW_LAT_MUL")?,
        cf_bw: env_opt("MEMTAMER_CF_BW")?,
        cf_lat: env_opt("MEMTAMER_CF_LAT")?,
    }
    .model()
    .map_err(|b| {
        let (key, x) = match b {
            BadInput::DramBw(x) => ("MEMTAMER_DRAM_BW", x),
            BadInput::SlowBwDiv(x) => ("MEMTAMER_SLOW_BW_DIV", x),
            BadInput::SlowLatMul(x) => ("MEMTAMER_SLOW_LAT_MUL", x),
            BadInput::CfBw(x) => ("MEMTAMER_CF_BW", x),
            BadInput::CfLat(x) => ("MEMTAMER_CF_LAT", x),
        };
        TierError::BadEnv {
            key,
            value: x.to_string(),
            why: format!("expected {}", b.expected()),
        }
    })?;
    Ok(DriverConfig {
        tick: Duration::from_micros(
            env_num("MEMTAMER_TIER_TICK_US", d.tick.as_micros() as f64)? as u64
        ),
        pages_per_tick: env_num("MEMTAMER_TIER_PAGES", d.pages_per_tick as f64)? as usize,
        platform,
        iterations: env_num("MEMTAMER_ITERS", d.iterations)?,
        drift: env_num("MEMTAMER_DRIFT", d.drift)?,
        recalibrate: d.recalibrate,
        decision_share: env_num("MEMTAMER_DECISION_SHARE", d.decision_share)?,
        // MEMTAMER_DECIDE_THREAD=0: decide on the application thread (the
        // behaviour before decisions moved off it; for comparisons)
        decide_off_thread: env_num("MEMTAMER_DECIDE_THREAD", 1.0)? != 0.0,
        pace: match std::env::var("MEMTAMER_TIER_PACE") {
            Ok(v) => crate::sampling::Pace::parse(&v).ok_or_else(|| TierError::BadEnv {
                key: "MEMTAMER_TIER_PACE",
                value: v.clone(),
                why: "expected cpu or wall".into(),
            })?,
            Err(_) => d.pace,
        },
        helper: d.helper,
        measured_exposure: crate::env::switch(
            "MEMTAMER_UNIMEM_EXPOSURE",
            "every slow-tier access priced as exposed, the thesis's models",
        )?,
        quiet_times: crate::env::switch(
            "MEMTAMER_TIER_QUIET_TIMES",
            "the profiled iteration's phase times, sampling faults included",
        )?,
    }
    .with_helper(
        crate::cpus::HelperCpu {
            node_ranks: NODE_RANKS.get().copied().unwrap_or(0),
            cpus: crate::cpus::available_cpus(),
            from_node_masks: false,
            forced: crate::cpus::forced_from_env()?,
        }
        .with_sharing(NODE_SHARING.get().copied()),
    ))
}

/// `MEMTAMER_UNIMEM`: 0 or off runs the baseline; unset, empty, 1 or on
/// runs Unimem. Anything else is refused by name: it meant Unimem before,
/// so `MEMTAMER_UNIMEM=no` or `false` silently ran the opposite of what it
/// asked for.
fn unimem_from_env() -> Result<bool, TierError> {
    crate::env::switch("MEMTAMER_UNIMEM", "the baseline: no profiling, no moves")
}

fn rt_slot() -> MutexGuard<'static, Option<Arc<TierRuntime>>> {
    RT.lock().unwrap_or_else(|e| e.into_inner())
}

/// The running runtime, if any (the `RT` lock is not held on return).
fn current() -> Option<Arc<TierRuntime>> {
    rt_slot().clone()
}

fn init(budget: usize) -> Result<Arc<TierRuntime>, TierError> {
    let mut slot = rt_slot();
    if let Some(rt) = slot.as_ref() {
        return Ok(rt.clone());
    }
    let budget = if budget == 0 {
        budget_from_env()?
    } else {
        budget
    };
    let rt = Arc::new(TierRuntime::new(TierConfig::detect(budget)?)?);
    // MEMTAMER_UNIMEM=0: objects stay where they are allocated (the
    // slow-tier-only baseline of `mpi/run.sh`), no profiling, no moves.
    let drv = if !unimem_from_env()? {
        None
    } else {
        let mut d = Driver::new(rt.clone(), driver_config()?);
        // MEMTAMER_TIER_PROFILER: PEBS where it opens, else the fault
        // sampler (crate::pebs); never an abort for a missing PMU
        let (source, selection) = crate::pebs::from_env()?;
        d.access = crate::pebs::AccessProfiler::new(source, selection);
        // Issue 20 item 5: each fresh profile to a file per rank and
        // profiled iteration, for `memtamer sim unimem` to replay.
        if let Ok(prefix) = std::env::var("MEMTAMER_TIER_PROFILE_OUT") {
            if !prefix.is_empty() {
                d.record_profiles(ProfileOut {
                    prefix,
                    rank: RANK.get().copied(),
                });
            }
        }
        Some(d)
    };
    crate::alloc_site::start(drv.is_some())?;
    *slot = Some(rt.clone());
    *DRIVER.lock().unwrap_or_else(|e| e.into_inner()) = drv;
    *STATUS.lock().unwrap_or_else(|e| e.into_inner()) = Publisher::from_env();
    Ok(rt)
}

/// Starts the runtime with a DRAM budget for this process (0: from
/// `MEMTAMER_DRAM_BUDGET`, default a quarter of the machine). Returns 0, or
/// -1 with [`mt_tier_last_error`] set. A second call is a no-op (until
/// [`mt_tier_shutdown`]).
#[no_mangle]
pub extern "C" fn mt_tier_init(dram_budget: usize) -> c_int {
    let _g = InRuntime::enter();
    match init(dram_budget) {
        Ok(_) => 0,
        Err(e) => {
            set_err(e);
            -1
        }
    }
}

/// Allocates a named object in the slow tier (thesis: everything starts in
/// NVM; the first decision promotes). NULL on error.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn mt_tier_malloc(size: usize, name: *const c_char) -> *mut c_void {
    let _g = InRuntime::enter();
    let name = if name.is_null() {
        "anon".into()
    } else {
        CStr::from_ptr(name).to_string_lossy().into_owned()
    };
    alloc_at(size, &name, crate::alloc_place::name_identity(&name))
}

/// Allocates through allocation-time placement ([`crate::alloc_site`]):
/// the slow tier unless the identity `site` learned it belongs in DRAM.
fn alloc_at(size: usize, name: &str, site: u64) -> *mut c_void {
    let r = init(0).and_then(|rt| {
        let drv = DRIVER.lock().unwrap_or_else(|e| e.into_inner());
        crate::alloc_site::alloc(&rt, drv.as_ref(), size, name, site)
    });
    match r {
        Ok(p) => p as *mut c_void,
        Err(e) => {
            set_err(e);
            std::ptr::null_mut()
        }
    }
}

/// [`mt_tier_malloc`] with an explicit allocation identity `site` (0:
/// none) for allocation-time placement ([`crate::alloc_place`]): the
/// interposer passes its call site's return address mixed with the size
/// class, since its names number the calls. NULL on error.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn mt_tier_malloc_site(
    size: usize,
    name: *const c_char,
    site: u64,
) -> *mut c_void {
    let _g = InRuntime::enter();
    let name = if name.is_null() {
        "anon".into()
    } else {
        CStr::from_ptr(name).to_string_lossy().into_owned()
    };
    alloc_at(size, &name, site)
}

/// Frees an object; an unknown pointer returns -1 (never a crash).
#[no_mangle]
pub extern "C" fn mt_tier_free(ptr: *mut c_void) -> c_int {
    let _g = InRuntime::enter();
    if ptr.is_null() {
        return 0;
    }
    match current()
        .ok_or(TierError::UnknownObject { addr: ptr as usize })
        .and_then(|rt| {
            let seen = rt.free_sampled(ptr as *mut u8)?;
            let drv = DRIVER.lock().unwrap_or_else(|e| e.into_inner());
            crate::alloc_site::freed(drv.as_ref(), ptr as usize, seen);
            Ok(())
        }) {
        Ok(()) => 0,
        Err(e) => {
            set_err(e);
            -1
        }
    }
}

/// The calling thread's last error message ("" if none). Valid until the
/// thread's next failing call.
#[no_mangle]
pub extern "C" fn mt_tier_last_error() -> *const c_char {
    LAST.with(|l| l.borrow().as_ptr())
}

fn with_driver(f: impl FnOnce(&mut Driver)) {
    if let Some(d) = DRIVER.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
        f(d);
    }
}

/// Records this process's `MPI_COMM_WORLD` rank and size (the interposer
/// calls it in `MPI_Init`), naming its status file `rank<R>.json`. The first
/// call wins.
#[no_mangle]
pub extern "C" fn mt_tier_set_rank(rank: c_int, size: c_int) {
    if let (Ok(r), Ok(n)) = (u32::try_from(rank), u32::try_from(size)) {
        if r < n {
            let _ = RANK.set((r, n));
        }
    }
}

/// Records how many ranks run on this node (the interposer calls it in
/// `MPI_Init` with its `MPI_COMM_TYPE_SHARED` communicator's size, before
/// `mt_tier_init`): when they are as many as the CPUs this process may use,
/// or more, the decisions charge every copy in full ([`crate::cpus`]).
/// The first call wins; a count below 1 is ignored.
#[no_mangle]
pub extern "C" fn mt_tier_set_node_ranks(ranks: c_int) {
    if let Ok(n) = u32::try_from(ranks) {
        if n >= 1 {
            let _ = NODE_RANKS.set(n);
        }
    }
}

/// Records the affinity masks of the node's ranks (the interposer gathers
/// them over its `MPI_COMM_TYPE_SHARED` communicator in `MPI_Init`, before
/// `mt_tier_init`): `masks` holds `ranks` masks of `mask_bytes` bytes each,
/// in node-rank order (`cpu_set_t` layout), `me` is this rank's index. The
/// copy rule then counts only the ranks whose masks meet this one's
/// against the CPUs of their union ([`crate::cpus::sharing`]). Returns 0,
/// or -1 for bad arguments or this rank's empty mask (the node-wide rule
/// stays; `mt_tier_last_error` says why). The first accepted call wins.
///
/// # Safety
/// `masks` must point to `ranks * mask_bytes` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn mt_tier_set_node_affinity(
    masks: *const u8,
    ranks: c_int,
    mask_bytes: c_int,
    me: c_int,
) -> c_int {
    let _g = InRuntime::enter();
    let (Ok(n), Ok(w), Ok(me)) = (
        usize::try_from(ranks),
        usize::try_from(mask_bytes),
        usize::try_from(me),
    ) else {
        set_err(format!(
            "mt_tier_set_node_affinity: negative argument (ranks {ranks}, mask_bytes {mask_bytes}, me {me})"
        ));
        return -1;
    };
    if masks.is_null() || n == 0 || w == 0 || w > 1 << 16 || n > 1 << 20 || me >= n {
        set_err(format!(
            "mt_tier_set_node_affinity: bad arguments (null {}, ranks {n}, mask_bytes {w}, me {me})",
            masks.is_null()
        ));
        return -1;
    }
    // SAFETY: the caller passes ranks * mask_bytes readable bytes.
    let all = unsafe { std::slice::from_raw_parts(masks, n * w) };
    let per_rank: Vec<&[u8]> = all.chunks(w).collect();
    match crate::cpus::sharing(&per_rank, me) {
        Some(s) => {
            let _ = NODE_SHARING.set(s);
            0
        }
        None => {
            set_err("mt_tier_set_node_affinity: this rank's affinity mask is empty (unknown); every rank of the node counts against this process's CPUs");
            -1
        }
    }
}

/// Publishes the status (if asked for) when it changed, or always with
/// `state` finished. A failed write is reported once and stops publishing:
/// the program itself is not disturbed.
fn publish(rt: &TierRuntime, driver: Option<&Driver>, state: RunState) {
    let mut guard = STATUS.lock().unwrap_or_else(|e| e.into_inner());
    let Some(p) = guard.as_mut() else { return };
    let rank = RANK.get().copied();
    let r = match state {
        RunState::Running => p.maybe_publish(rt, driver, rank).map(|_| ()),
        RunState::Finished => p.publish(rt, driver, rank, state).map(|_| ()),
    };
    if let Err(e) = r {
        eprintln!("memtamer-tier: cannot write the status file (MEMTAMER_TIER_STATUS_DIR): {e}; status publishing is off");
        *guard = None;
    }
}

/// Top of the main loop, each iteration (the thesis's `unimem_start`).
#[no_mangle]
pub extern "C" fn mt_tier_iteration() {
    let _g = InRuntime::enter();
    let rt = current();
    let mut drv = DRIVER.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(d) = drv.as_mut() {
        d.iteration();
    }
    if let Some(rt) = rt {
        publish(&rt, drv.as_ref(), RunState::Running);
    }
}

/// A phase boundary; called by the MPI wrappers.
#[no_mangle]
pub extern "C" fn mt_tier_phase_boundary() {
    let _g = InRuntime::enter();
    with_driver(|d| d.boundary());
}

/// The MPI call at the last phase boundary has returned (the wrappers
/// call it after the `PMPI_` entry point), so that a recorded profile
/// tells the call's time from the phase's computation.
#[no_mangle]
pub extern "C" fn mt_tier_phase_call_done() {
    let _g = InRuntime::enter();
    with_driver(|d| d.call_done());
}

/// Stops sampling, waits for moves, and writes a one-line report (bytes
/// moved, exposed/overlapped copy time, overhead, then the moves per
/// direction, [`crate::MigrationStats::direction_report`]) into `buf`. Returns the
/// report's length, or -1 with [`mt_tier_last_error`] set if no runtime is
/// running.
///
/// # Safety
/// `buf` points to `len` writable bytes (or is NULL with `len` 0).
#[no_mangle]
pub unsafe extern "C" fn mt_tier_finish(buf: *mut c_char, len: usize) -> c_int {
    let _g = InRuntime::enter();
    let Some(rt) = current() else {
        set_err("mt_tier_finish: no runtime is running (never started by mt_tier_init or mt_tier_malloc, or ended by mt_tier_shutdown); there is nothing to report");
        return -1;
    };
    let st = rt.stats();
    let mut line = format!(
        "unimem off; moves {} bytes_moved {} {}",
        st.moves,
        st.bytes_moved,
        st.direction_report()
    );
    with_driver(|d| {
        d.finish();
        let s = d.stats();
        let st = rt.stats();
        let (reverts, refused) = d.guard_reverts();
        let plan = s
            .last_plan
            .clone()
            .map_or("none".into(), |(k, p)| format!("{k} (predicted {p:.4} s)"));
        line = format!(
            "boundaries {} iterations {} phases {} decisions {} decisions_dropped {} quiet_decisions {} reprofiles {} new_objects {} recalibrations {} guard_reverts {} guard_refused {} {} plan {} moves {} failed {} bytes_moved {} copy_ms {:.3} exposed_ms {:.3} overlapped {:.1}% waited_ms {:.3} overhead_ms {:.3} decide_ms {:.3} decide_thread_ms {:.3} profile_ms {:.3} profiled_ms {:.3} profiled_call_ms {:.3} sample_ticks {} sampler_cpu_ms {:.3} sample_faults {} sample_armed {} dram_used {} of {} {}",
            s.boundaries,
            s.iterations,
            s.phases,
            s.decisions,
            s.decisions_dropped,
            s.quiet_decisions,
            s.reprofiles,
            s.new_object_reprofiles,
            s.recalibrations,
            reverts,
            refused,
            d.config().helper.token(),
            plan,
            st.moves,
            st.failed,
            st.bytes_moved,
            st.copy_ns as f64 / 1e6,
            st.exposed_ns() as f64 / 1e6,
            100.0 * st.overlapped_fraction(),
            s.wait_s * 1e3,
            s.overhead_s * 1e3,
            s.decide_s * 1e3,
            s.decide_thread_s * 1e3,
            s.profile_s * 1e3,
            s.profiled_s * 1e3,
            s.profiled_call_s * 1e3,
            s.sample_ticks,
            s.sampler_cpu_s * 1e3,
            s.sample_faults,
            s.sample_armed,
            rt.dram_used(),
            rt.config().dram_budget,
            st.direction_report()
        );
        if let Some(p) = d.access.selection() {
            line.push(' ');
            line.push_str(&p.token());
        }
        if let Some(c) = crate::alloc_site::counts() {
            line.push(' ');
            line.push_str(&c.report());
        }
        if let Some(e) = rt.last_move_error() {
            line.push_str(&format!(" last_move_error: {e}"));
        }
    });
    publish(
        &rt,
        DRIVER.lock().unwrap_or_else(|e| e.into_inner()).as_ref(),
        RunState::Finished,
    );
    if !buf.is_null() && len > 0 {
        let n = line.len().min(len - 1);
        std::ptr::copy_nonoverlapping(line.as_ptr(), buf as *mut u8, n);
        *buf.add(n) = 0;
    }
    line.len() as c_int
}

/// [`mt_tier_shutdown`]'s steps: the driver goes first (it stops its
/// sampler thread, which holds the runtime), then the runtime ends as
/// [`TierRuntime::shutdown`] ends it. Holds `RT` throughout, so no call
/// gets the runtime meanwhile; a call another thread is still making
/// keeps its own reference, and this waits for it to return.
fn shutdown(live: &mut usize) -> Result<ShutdownReport, TierError> {
    let mut slot = rt_slot();
    let Some(mut rt) = slot.take() else {
        *live = 0;
        return Ok(ShutdownReport::default());
    };
    *live = rt.live_objects();
    let drv = DRIVER.lock().unwrap_or_else(|e| e.into_inner()).take();
    drop(drv);
    crate::alloc_site::stop();
    loop {
        match Arc::try_unwrap(rt) {
            Ok(rt) => return rt.shutdown(),
            Err(shared) => {
                rt = shared;
                std::thread::yield_now();
            }
        }
    }
}

/// Ends the runtime, as `pmemobj_close` ends a pool: waits for the move in
/// flight, drops queued moves, and frees every object still allocated (its
/// fault-table slot, its memory, its slow-tier file). **Every pointer
/// `mt_tier_malloc` returned is invalid afterwards.** Writes the number of
/// objects that were still allocated into `*live_objects` (if not NULL;
/// 0 when every object was freed), also on an error. Returns 0, or -1 with
/// [`mt_tier_last_error`] set (the objects are freed all the same). With no
/// runtime running it is a no-op returning 0; a later `mt_tier_init` or
/// `mt_tier_malloc` starts a fresh runtime. Call [`mt_tier_finish`] first
/// for the run's report.
///
/// # Safety
/// `live_objects` is NULL or points to a writable `size_t`.
#[no_mangle]
pub unsafe extern "C" fn mt_tier_shutdown(live_objects: *mut usize) -> c_int {
    let _g = InRuntime::enter();
    let mut live = 0;
    let r = shutdown(&mut live);
    if !live_objects.is_null() {
        *live_objects = live;
    }
    match r {
        Ok(_) => 0,
        Err(e) => {
            set_err(e);
            -1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_runtime_guard_nests_and_clears() {
        assert_eq!(mt_tier_in_runtime(), 0);
        {
            let _outer = InRuntime::enter();
            assert_eq!(mt_tier_in_runtime(), 1);
            {
                let _inner = InRuntime::enter();
                assert_eq!(mt_tier_in_runtime(), 1);
            }
            // The inner guard's drop must not clear the outer one.
            assert_eq!(mt_tier_in_runtime(), 1);
        }
        assert_eq!(mt_tier_in_runtime(), 0);
        // A C ABI call leaves the thread outside the runtime when it returns.
        assert_eq!(mt_tier_free(std::ptr::null_mut()), 0);
        assert_eq!(mt_tier_in_runtime(), 0);
    }

    /// Bad masks are refused with a message and leave the node-wide rule
    /// (no accepted call here: the first one would fix `NODE_SHARING` for
    /// the other tests of this process).
    #[test]
    fn bad_node_masks_are_refused_by_name() {
        let last = || {
            // SAFETY: mt_tier_last_error returns this thread's NUL-terminated message.
            unsafe { std::ffi::CStr::from_ptr(mt_tier_last_error()) }
                .to_string_lossy()
                .into_owned()
        };
        let masks = [0b11u8, 0, 0b01, 0];
        // SAFETY: each call passes at most masks.len() readable bytes.
        unsafe {
            assert_eq!(mt_tier_set_node_affinity(std::ptr::null(), 2, 2, 0), -1);
            assert!(last().contains("null true"), "{}", last());
            assert_eq!(mt_tier_set_node_affinity(masks.as_ptr(), 2, 2, 2), -1);
            assert!(last().contains("me 2"), "{}", last());
            assert_eq!(mt_tier_set_node_affinity(masks.as_ptr(), -1, 2, 0), -1);
            assert!(last().contains("negative"), "{}", last());
            assert_eq!(mt_tier_set_node_affinity(masks.as_ptr(), 4, 1, 1), -1);
            assert!(last().contains("mask is empty"), "{}", last());
        }
        assert!(NODE_SHARING.get().is_none());
    }
}
