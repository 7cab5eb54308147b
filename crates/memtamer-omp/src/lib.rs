//! libmemtamer_omp.so: an OMPT tool (OpenMP 5 tools interface, loaded by
//! LLVM libomp from `OMP_TOOL_LIBRARIES`) that gives the Tahoe core
//! (`memtamer-tahoe`, thesis ch. 4) the task view Nanos++ had: task types
//! (task-construct code address + dependence object sizes), data objects
//! (dependence addresses) and the ready queue. The OMPT shell here is thin:
//! [`tracker`] holds the logic, [`config`] the settings.
//!
//! Callbacks: task_create, dependences, task_dependence, task_schedule.
//! In `place` mode the head task's batch is moved on the worker thread
//! before the task body runs ("migrate in Ready, finish before Active"),
//! look-ahead batches by a helper thread (thesis §4.3.6 optimisation 1),
//! each batch in one `move_pages` call (optimisation 2). With the
//! cost-benefit check (`MEMTAMER_TAHOE_CHECK=on`, the default) a page
//! moves only when its predicted saving exceeds its movement cost, priced
//! at a copy cost measured at start ([`calib`]) and then at the run's own
//! timed batches. Per-task counters (IPC, LLC miss rate; [`counters`],
//! `MEMTAMER_TAHOE_COUNTERS`) are read at each task switch where the host
//! has them and feed the counter model (`MEMTAMER_TAHOE_COUNTER_MODEL`).

pub mod calib;
pub mod config;
pub mod counters;
pub mod deps;
pub mod events;
mod finish;
pub mod hot;
pub mod tracker;

use calib::CopyPrior;
use config::{Config, Hotness, Mode};
use events::{EventBuf, Handle, Sched, Shared};
use hot::Hot;
use memtamer_tahoe::benefit::COPY_SAMPLE_PAGES;
use memtamer_tahoe::copycost::{CopyCost, CopySamples};
use memtamer_tahoe::model::{CompleteModel, HybridModel, LinearAccess};
use memtamer_tahoe::plan::{Batch, PlanConfig, Planner};
use memtamer_tahoe::task::Access;
use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_uint, c_void};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;
use tracker::Tracker;

/// `ompt_data_t`: a 64-bit union; we keep our task id in `value`.
#[repr(C)]
pub union OmptData {
    /// Integer view.
    pub value: u64,
    /// Pointer view.
    pub ptr: *mut c_void,
}

/// `ompt_dependence_t`.
#[repr(C)]
pub struct OmptDependence {
    /// The dependence address.
    pub variable: OmptData,
    /// `ompt_dependence_type_t`.
    pub dependence_type: c_int,
}

type Lookup = unsafe extern "C" fn(*const c_char) -> Option<unsafe extern "C" fn()>;
type SetCallback = unsafe extern "C" fn(c_int, Option<unsafe extern "C" fn()>) -> c_int;
type Initialize = unsafe extern "C" fn(Lookup, c_int, *mut OmptData) -> c_int;
type Finalize = unsafe extern "C" fn(*mut OmptData);

/// `ompt_start_tool_result_t`.
#[repr(C)]
pub struct StartToolResult {
    initialize: Initialize,
    finalize: Finalize,
    tool_data: OmptData,
}

// Event numbers and flags from omp-tools.h (OpenMP 5.0).
const CB_TASK_CREATE: c_int = 5;
const CB_TASK_SCHEDULE: c_int = 6;
const CB_DEPENDENCES: c_int = 18;
const CB_TASK_DEPENDENCE: c_int = 19;
const SET_NEVER: c_int = 1;
const TASK_EXPLICIT: c_int = 0x4;
const STATUS_COMPLETE: c_int = 1;
const STATUS_CANCEL: c_int = 3;
const STATUS_LATE_FULFILL: c_int = 6;

struct Tool {
    cfg: Config,
    /// The tracker, fed through per-thread event buffers ([`events`]):
    /// the callbacks take no shared lock unless they need the tracker's
    /// answer ([`Tool::needs_state`]).
    shared: Shared,
    /// A task's begin needs the tracker up to date: to decide (`place`),
    /// or to know whether it is a representative (page sampling, or
    /// counters read around representatives only). Then the begin drains
    /// every buffer first; otherwise it is buffered like every other event.
    needs_state: bool,
    /// Whether events go through the per-thread buffers or straight to
    /// the tracker under its lock (`MEMTAMER_TAHOE_EVENTS`,
    /// [`config::EventPath`]).
    buffered: bool,
    epoch: Instant,
    next_id: AtomicU64,
    helper: Mutex<Option<Sender<Batch>>>,
    moved: AtomicU64,
    move_fail: AtomicU64,
    move_ns: AtomicU64,
    /// Pages of the run's own batches that landed: the run's measured copy
    /// cost replaces the prior once [`COPY_SAMPLE_PAGES`] were timed.
    landed_pages: AtomicU64,
    /// (pages, ns) of each batch that landed, with the calibration's:
    /// the check's fixed + per-page copy cost is fitted from them
    /// (`memtamer_tahoe::copycost`).
    copy_samples: Mutex<CopySamples>,
    /// Pages sent to the helper thread and not yet moved (its backlog in
    /// the look-ahead slack).
    backlog: AtomicU64,
    /// The check's copy-cost prior (None: the check is off).
    prior: Option<CopyPrior>,
    /// Page sampling of representatives (`MEMTAMER_TAHOE_HOTNESS=sample`).
    hot: Option<Hot>,
    /// Why the requested counters are not read (for the summary).
    counters_missing: Option<&'static str>,
    /// Counting, but only representatives' intervals
    /// ([`counters::track`]).
    track_reps: bool,
}

static TOOL: OnceLock<Tool> = OnceLock::new();
static ACTIVE: AtomicBool = AtomicBool::new(false);

fn tool() -> Option<&'static Tool> {
    if ACTIVE.load(Ordering::Relaxed) {
        TOOL.get()
    } else {
        None
    }
}

fn now_ns(t: &Tool) -> u64 {
    t.epoch.elapsed().as_nanos() as u64
}

/// Carries out one batch (one `move_pages` call) and records the outcome.
fn run_batch(t: &Tool, b: &Batch) {
    let page = 4096u64;
    let addrs: Vec<usize> = b.pages.iter().map(|p| (p * page) as usize).collect();
    // Demotions go to "any other node": with one slow node that is it; on a
    // host without one the pages stay (nothing to demote to).
    let node = if b.to_dram {
        t.cfg.dram_node
    } else {
        t.cfg.dram_node + 1
    };
    let t0 = Instant::now();
    let r = memtamer_tier::backing::move_page_batch(&addrs, node);
    let el = t0.elapsed().as_nanos() as u64;
    match r {
        Ok(r) => {
            t.moved.fetch_add(r.on_node as u64, Ordering::Relaxed);
            t.move_fail.fetch_add(r.failed as u64, Ordering::Relaxed);
            // the batch's time per page that landed: the copy cost the
            // check uses once enough pages were timed (a batch refused as
            // a whole, e.g. to a node that does not exist, says nothing
            // about a page's copy)
            if r.on_node > 0 {
                t.landed_pages
                    .fetch_add(r.on_node as u64, Ordering::Relaxed);
                t.copy_samples
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .add(r.on_node as u64, el as f64);
            }
        }
        Err(_) => {
            t.move_fail.fetch_add(addrs.len() as u64, Ordering::Relaxed);
        }
    }
    t.move_ns.fetch_add(el, Ordering::Relaxed);
}

/// The run's measured batch copy cost so far, fixed part and per page,
/// fitted over its timed batches and the calibration's (None: too few
/// pages of the run's own timed, `memtamer_tahoe::benefit::COPY_SAMPLE_PAGES`).
fn measured(t: &Tool) -> Option<CopyCost> {
    if t.landed_pages.load(Ordering::Relaxed) < COPY_SAMPLE_PAGES {
        return None;
    }
    t.copy_samples
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .fit()
}

thread_local! {
    /// This thread's event buffer, registered with the tool's [`Shared`]
    /// on the thread's first event (the registry keeps it past the
    /// thread's exit, so no event is lost).
    static MINE: RefCell<Option<Handle>> = const { RefCell::new(None) };
}

/// Records one event in the calling thread's buffer; a thread whose
/// thread-locals are already destroyed applies it at once (after a drain).
fn record(t: &Tool, f: impl FnOnce(&mut EventBuf, u64)) {
    if !t.buffered {
        t.shared.apply_now(f);
        return;
    }
    let mut f = Some(f);
    let buffered = MINE.try_with(|m| {
        let mut m = m.borrow_mut();
        let h = m.get_or_insert_with(|| t.shared.handle());
        if let Some(f) = f.take() {
            t.shared.record(Some(h), f);
        }
    });
    if let (Err(_), Some(f)) = (buffered, f) {
        t.shared.record(None, f);
    }
}

/// `ompt_dependence_type_t` as an access (None: doacross source/sink,
/// no object).
fn access_of(kind: c_int) -> Option<Access> {
    match kind {
        1 => Some(Access::In),
        2 => Some(Access::Out),
        3 | 4 | 7 => Some(Access::InOut),
        _ => None,
    }
}

unsafe extern "C" fn on_task_create(
    _enc: *mut OmptData,
    _frame: *const c_void,
    new_task: *mut OmptData,
    flags: c_int,
    _has_deps: c_int,
    codeptr: *const c_void,
) {
    let Some(t) = tool() else { return };
    if flags & TASK_EXPLICIT == 0 || new_task.is_null() {
        return;
    }
    let id = t.next_id.fetch_add(1, Ordering::Relaxed);
    // SAFETY: libomp passes a valid ompt_data_t for the new task.
    unsafe { (*new_task).value = id };
    record(t, |b, seq| b.create(seq, id, codeptr as u64));
}

unsafe extern "C" fn on_dependences(task: *mut OmptData, deps: *const OmptDependence, n: c_int) {
    let Some(t) = tool() else { return };
    if task.is_null() || deps.is_null() || n <= 0 {
        return;
    }
    // SAFETY: valid task data; `deps` has `n` entries for this call.
    let (id, deps) = unsafe { ((*task).value, std::slice::from_raw_parts(deps, n as usize)) };
    // Decoded straight from libomp's array into the buffer's arena: no
    // vector per callback.
    let decoded = deps.iter().filter_map(|d| {
        // SAFETY: the union's address view.
        access_of(d.dependence_type).map(|a| (unsafe { d.variable.value }, a))
    });
    // The program's own lengths, where the preloaded tool saw libomp's
    // array (`deps`): noted by this very task's creation call.
    record(t, |b, seq| {
        deps::drain(|exact| b.dependences(seq, id, exact, decoded));
    });
}

unsafe extern "C" fn on_task_dependence(src: *mut OmptData, sink: *mut OmptData) {
    let Some(t) = tool() else { return };
    if src.is_null() || sink.is_null() {
        return;
    }
    // SAFETY: valid task data from libomp.
    let (a, b) = unsafe { ((*src).value, (*sink).value) };
    record(t, |buf, seq| buf.edge(seq, a, b));
}

unsafe extern "C" fn on_task_schedule(prior: *mut OmptData, status: c_int, next: *mut OmptData) {
    let Some(t) = tool() else { return };
    let now = now_ns(t);
    // SAFETY: valid (or null) task data from libomp.
    let (p, n) = unsafe {
        (
            if prior.is_null() { 0 } else { (*prior).value },
            if next.is_null() { 0 } else { (*next).value },
        )
    };
    // The counts of the prior task's interval on this thread: read at every
    // switch when recording, else only when it is a representative.
    let counted = if counters::every() {
        counters::sample()
    } else {
        counters::sample_tracked(p)
    };
    let done = p != 0
        && matches!(
            status,
            STATUS_COMPLETE | STATUS_CANCEL | STATUS_LATE_FULFILL
        );
    // A finished representative's pages are given back before its
    // profile is built (system calls outside the tracker lock).
    let samples = match (&t.hot, done) {
        (Some(h), true) => h.finish(p),
        _ => None,
    };
    let s = Sched {
        prior: p,
        done,
        next: n,
        now,
        counted,
        samples,
    };
    if !t.needs_state || n == 0 {
        // nothing to decide or arm: the switch waits in the buffer
        record(t, |b, seq| b.sched(seq, s));
        return;
    }
    // The begin must see every earlier event: drain, then decide.
    let (batches, rep) = {
        let mut tr = t.shared.drained();
        events::apply_sched_with(&mut tr, &s, |tr, n, now| {
            let place = t.cfg.mode == Mode::Place;
            if place && t.prior.is_some() {
                if let Some(c) = measured(t) {
                    tr.set_copy_cost(c);
                }
            }
            let backlog = t.backlog.load(Ordering::Relaxed);
            let b = tr.begin_ahead(n, now, t.cfg.corun, place, backlog);
            let rep = if t.hot.is_some() || t.track_reps {
                tr.representative(n)
            } else {
                None
            };
            (b, rep)
        })
        .unwrap_or_default()
    };
    // The representative is about to run on this thread: arm its sample
    // (a representative resumed after a task switch is already armed:
    // Hot::start leaves it alone).
    if let (Some(h), Some(rep)) = (&t.hot, &rep) {
        h.start(rep);
    }
    // its counters from here (after the planning above)
    if let (true, Some(rep)) = (t.track_reps, &rep) {
        counters::track(rep.id);
    }
    if t.cfg.mode != Mode::Place || batches.is_empty() {
        return;
    }
    // Evictions and the head's own batch now (before its body runs);
    // look-ahead batches to the helper thread.
    let helper = t.helper.lock().unwrap_or_else(|e| e.into_inner()).clone();
    for b in batches {
        if !b.to_dram || b.task == n {
            run_batch(t, &b);
        } else if let Some(h) = &helper {
            let n = b.pages.len() as u64;
            t.backlog.fetch_add(n, Ordering::Relaxed);
            if h.send(b.clone()).is_err() {
                t.backlog.fetch_sub(n, Ordering::Relaxed);
                run_batch(t, &b);
            }
        } else {
            run_batch(t, &b);
        }
    }
}

unsafe extern "C" fn initialize(lookup: Lookup, _dev: c_int, _data: *mut OmptData) -> c_int {
    let Some(t) = TOOL.get() else { return 0 };
    // SAFETY: lookup is libomp's; the name is NUL-terminated.
    let set = unsafe { lookup(c"ompt_set_callback".as_ptr()) };
    let Some(set) = set else {
        eprintln!("memtamer-tahoe: this OpenMP runtime has no ompt_set_callback; tool disabled, program runs unchanged");
        return 0;
    };
    // SAFETY: ompt_set_callback has this signature (omp-tools.h).
    let set: SetCallback = unsafe { std::mem::transmute(set) };
    // SAFETY: each callback's real signature matches its event.
    let cbs: [(c_int, &str, unsafe extern "C" fn()); 4] = unsafe {
        [
            (
                CB_TASK_CREATE,
                "task_create",
                std::mem::transmute::<*const (), unsafe extern "C" fn()>(
                    on_task_create as *const (),
                ),
            ),
            (
                CB_TASK_SCHEDULE,
                "task_schedule",
                std::mem::transmute::<*const (), unsafe extern "C" fn()>(
                    on_task_schedule as *const (),
                ),
            ),
            (
                CB_DEPENDENCES,
                "dependences",
                std::mem::transmute::<*const (), unsafe extern "C" fn()>(
                    on_dependences as *const (),
                ),
            ),
            (
                CB_TASK_DEPENDENCE,
                "task_dependence",
                std::mem::transmute::<*const (), unsafe extern "C" fn()>(
                    on_task_dependence as *const (),
                ),
            ),
        ]
    };
    for (ev, name, f) in cbs {
        // SAFETY: registering a callback with libomp.
        let r = unsafe { set(ev, Some(f)) };
        if r <= SET_NEVER {
            eprintln!("memtamer-tahoe: the OpenMP runtime will not deliver the {name} callback (ompt_set_result {r}); tool disabled, program runs unchanged");
            return 0;
        }
    }
    if t.cfg.mode == Mode::Place {
        let (tx, rx) = channel::<Batch>();
        let spawned = std::thread::Builder::new()
            .name("memtamer-tahoe-mig".into())
            .spawn(move || {
                while let Ok(b) = rx.recv() {
                    if let Some(t) = TOOL.get() {
                        run_batch(t, &b);
                        t.backlog.fetch_sub(b.pages.len() as u64, Ordering::Relaxed);
                    }
                }
            });
        match spawned {
            Ok(_) => *t.helper.lock().unwrap_or_else(|e| e.into_inner()) = Some(tx),
            Err(e) => {
                eprintln!("memtamer-tahoe: no helper thread ({e}); look-ahead batches run inline")
            }
        }
    }
    if t.hot.is_some() {
        let spawned = std::thread::Builder::new()
            .name("memtamer-tahoe-smp".into())
            .spawn(|| {
                if let Some(t) = TOOL.get() {
                    if let Some(h) = &t.hot {
                        h.tick_loop(|id| t.shared.lock().representative(id));
                    }
                }
            });
        if let Err(e) = spawned {
            // Without the ticker each sampled page counts at most once.
            eprintln!("memtamer-tahoe: no sampling ticker ({e}); pages are sampled once each");
        }
    }
    ACTIVE.store(true, Ordering::Release);
    deps::start();
    1
}

/// Reads the counter model of `MEMTAMER_TAHOE_COUNTER_MODEL`; a file that
/// cannot be read or parsed is reported and the fallback predicts alone.
fn load_counter_model(path: &str) -> Option<CompleteModel> {
    let parsed = std::fs::read_to_string(path)
        .map_err(|e| e.to_string())
        .and_then(|t| memtamer_tahoe::counters::parse_model(&t).map_err(|e| e.to_string()));
    match parsed {
        Ok(m) => Some(m),
        Err(e) => {
            eprintln!("memtamer-tahoe: MEMTAMER_TAHOE_COUNTER_MODEL={path}: {e}; the all-DRAM time comes from the PMU-free fallback (beta)");
            None
        }
    }
}

/// The entry point libomp looks up in each `OMP_TOOL_LIBRARIES` entry
/// (OpenMP 5.0 §4.2.1). Returns NULL (tool not used) for
/// `MEMTAMER_TAHOE=off` or a bad setting, which is reported by name.
///
/// # Safety
/// Called by the OpenMP runtime once, with a NUL-terminated version string.
#[no_mangle]
pub unsafe extern "C" fn ompt_start_tool(
    _omp_version: c_uint,
    _runtime_version: *const c_char,
) -> *mut StartToolResult {
    let cfg = match Config::from_lookup(|k| std::env::var(k).ok()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("memtamer-tahoe: {e}; tool disabled, program runs unchanged");
            return std::ptr::null_mut();
        }
    };
    if cfg.mode == Mode::Off {
        return std::ptr::null_mut();
    }
    if let Err(e) = cfg.check_outputs() {
        eprintln!("memtamer-tahoe: {e}; tool disabled, program runs unchanged");
        return std::ptr::null_mut();
    }
    // The cost-benefit check (placement only): its copy cost before the
    // run's own batches are timed, given or measured now.
    let prior = match (cfg.mode, cfg.check, cfg.copy_ns) {
        (Mode::Place, true, Some(c)) => Some(CopyPrior::per_page(c, calib::PriorSource::Env)),
        (Mode::Place, true, None) => match calib::calibrate(cfg.dram_node) {
            Ok(p) => Some(p),
            Err(e) => {
                eprintln!(
                    "memtamer-tahoe: {e}; the cost-benefit check is off (MEMTAMER_TAHOE_CHECK)"
                );
                None
            }
        },
        _ => None,
    };
    let pc = PlanConfig {
        page: 4096,
        corun: cfg.corun,
        copy_ns_per_page: prior.map(|p| p.ns_per_page),
        copy_fixed_ns: prior.map_or(0.0, |p| p.fixed_ns),
        // the tool's profiles count page passes (sampled intervals, or one
        // per page), the unit its beta prices: a copy is one pass
        access_bytes: 4096,
        ..PlanConfig::default()
    };
    // Per-task counters: opened on this (the initial) thread now, so that
    // a host without them is reported once, before the program runs.
    let counters_missing = match counters::probe(cfg.counters, cfg.record.is_some()) {
        Ok(()) => None,
        Err(why) => {
            eprintln!(
                "memtamer-tahoe: MEMTAMER_TAHOE_COUNTERS={}: cannot count {why}; no per-task counters, the all-DRAM time comes from the PMU-free fallback (beta)",
                cfg.counters.name()
            );
            Some("unavailable")
        }
    };
    let counter_model = cfg.counter_model.as_deref().and_then(load_counter_model);
    let model = HybridModel {
        counters: counter_model,
        fallback: LinearAccess {
            beta_ns: cfg.beta_ns,
        },
        // Eq. 4.4 as the thesis states it: the parallel-tiers form was
        // chosen on the simulator's evidence only (docs/tahoe.md).
        form: Default::default(),
    };
    let mut planner = Planner::new(pc, model, cfg.dram_bytes / 4096);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let workers = config::workers(std::env::var("OMP_NUM_THREADS").ok().as_deref(), cpus);
    // With placement on, two waves of workers may be passed over for a
    // slow-tier representative, as in the simulator (16 = 2 x 8 workers
    // there), and completed instances refine T_c_NVM. `profile` keeps the
    // thesis's one representative: nothing is placed there, and the
    // refinement's per-task re-basing would only add overhead.
    if cfg.mode == Mode::Place {
        let (skip, refine) = cfg.model.planner_knobs(2 * workers);
        planner.set_learning(skip, refine);
    }
    let tracker = Tracker::new(planner).with_workers(workers);
    let tracker = if cfg.record.is_some() {
        tracker.with_record()
    } else {
        tracker
    };
    let hot = match cfg.hotness {
        Hotness::Sample if memtamer_tier::guard::page_size() as u64 != hot::PAGE => {
            eprintln!(
                "memtamer-tahoe: page size {} is not {}: MEMTAMER_TAHOE_HOTNESS=sample off, uniform profiles",
                memtamer_tier::guard::page_size(),
                hot::PAGE
            );
            None
        }
        // Profiles steer placement only: with placement off nothing reads
        // them unless they are written out, so nothing is sampled.
        Hotness::Sample if cfg.mode == Mode::Place || cfg.profiles.is_some() => {
            Some(Hot::new(cfg.sample_pages, cfg.sample_us))
        }
        Hotness::Sample => None,
        Hotness::Uniform => None,
    };
    let track_reps = counters_missing.is_none()
        && cfg.counters != config::CounterSource::Off
        && cfg.record.is_none();
    let needs_state = cfg.mode == Mode::Place || hot.is_some() || track_reps;
    // the CPUs this process may run on (its affinity mask)
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let buffered = cfg.events.buffered(cpus);
    let tool = Tool {
        hot,
        cfg,
        shared: Shared::new(tracker, events::DEFAULT_CAP),
        needs_state,
        buffered,
        epoch: Instant::now(),
        next_id: AtomicU64::new(1),
        helper: Mutex::new(None),
        moved: AtomicU64::new(0),
        move_fail: AtomicU64::new(0),
        move_ns: AtomicU64::new(0),
        landed_pages: AtomicU64::new(0),
        copy_samples: Mutex::new(prior.map(|p| p.samples).unwrap_or_default()),
        backlog: AtomicU64::new(0),
        prior,
        track_reps,
        counters_missing,
    };
    if TOOL.set(tool).is_err() {
        return std::ptr::null_mut();
    }
    let res = Box::new(StartToolResult {
        initialize,
        finalize: finish::finalize,
        tool_data: OmptData { value: 0 },
    });
    Box::into_raw(res)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The only test touching the process environment and the global tool.
    #[test]
    fn off_and_bad_settings_leave_the_program_alone() {
        std::env::set_var("MEMTAMER_TAHOE", "bogus");
        // SAFETY: the entry point with a valid (null) version string.
        assert!(unsafe { ompt_start_tool(201611, std::ptr::null()) }.is_null());
        std::env::set_var("MEMTAMER_TAHOE", "off");
        // SAFETY: as above.
        assert!(unsafe { ompt_start_tool(201611, std::ptr::null()) }.is_null());
        assert!(TOOL.get().is_none());
        std::env::set_var("MEMTAMER_TAHOE", "profile");
        // SAFETY: as above.
        let r = unsafe { ompt_start_tool(201611, std::ptr::null()) };
        assert!(!r.is_null());
        assert!(TOOL.get().is_some());
        // Callbacks before initialize are ignored (tool not active).
        assert!(tool().is_none());
        // SAFETY: `r` came from Box::into_raw above.
        drop(unsafe { Box::from_raw(r) });
        // A second start (another runtime instance) is refused.
        // SAFETY: as above.
        assert!(unsafe { ompt_start_tool(201611, std::ptr::null()) }.is_null());
    }
}
