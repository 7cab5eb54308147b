//! The process-wide Ribbon instance behind the C ABI and the libpmem shim:
//! one [`Ribbon`], and per thread a lazily registered [`Producer`] (a
//! thread's first flush gives it a queue; its exit fences and frees it).
//!
//! Every refusal keeps the data safe: a flush that cannot be queued runs
//! on the calling thread before the error is returned, and a fence always
//! ends with a store fence.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::RwLock;

use crate::coshm::Corun;
use crate::error::RibbonError;
use crate::runtime::{check_range, Config, Flushers, Producer, Ribbon, Stats};

static GLOBAL: RwLock<Option<Ribbon>> = RwLock::new(None);
/// Bumped on every start and stop: a thread's cached producer from an
/// older generation is replaced.
static GENERATION: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static LOCAL: RefCell<Option<(u64, Producer)>> = const { RefCell::new(None) };
}

/// Env var: the flusher count, `auto` (four-point search, default) or a
/// number (0 = application threads flush themselves).
pub const ENV_FLUSHERS: &str = "MEMTAMER_RIBBON_FLUSHERS";
/// Env var: P1, the flusher count that saturates write bandwidth (default 4).
pub const ENV_P1: &str = "MEMTAMER_RIBBON_P1";

/// Env var: the most counts probed inside (P2, P3) after the four-point
/// table answered an end from ties or a dip (`crate::interior`, beyond the
/// thesis; default 3, at most 8); `0` is the thesis's four-point search
/// exactly.
pub const ENV_INTERIOR: &str = "MEMTAMER_RIBBON_INTERIOR_PROBES";

/// Env var: `dedicated` (default: at M = N flushes run on their caller,
/// `Config::inline_when_dedicated`) or `always` (every flush goes through
/// the queue while there are flushers).
pub const ENV_HANDOFF: &str = "MEMTAMER_RIBBON_HANDOFF";

/// `Config::new(app_threads, queue_entries)` adjusted by
/// `MEMTAMER_RIBBON_FLUSHERS`, `MEMTAMER_RIBBON_P1`,
/// `MEMTAMER_RIBBON_INTERIOR_PROBES`,
/// `MEMTAMER_RIBBON_HANDOFF`, `MEMTAMER_RIBBON_PIN` and
/// `MEMTAMER_RIBBON_SHARED` (a bad key there is kept in the config as
/// [`Corun::Refused`], not returned as an error). A value that is taken
/// but changed (a P1 above this process's hardware threads) is said on
/// stderr, one `memtamer ribbon: ...` line each.
pub fn config_from_env(app_threads: usize, queue_entries: usize) -> Result<Config, RibbonError> {
    let (cfg, notes) = config_from_lookup(app_threads, queue_entries, |k| std::env::var(k).ok())?;
    for n in notes {
        eprintln!("memtamer ribbon: {n}");
    }
    Ok(cfg)
}

/// [`config_from_env`] on any variable source (`get` returns a variable's
/// value, `None` when unset), printing nothing: the config, and the notes
/// about values it took but changed, for the caller to show.
pub fn config_from_lookup(
    app_threads: usize,
    queue_entries: usize,
    get: impl Fn(&str) -> Option<String>,
) -> Result<(Config, Vec<String>), RibbonError> {
    let mut cfg = Config::new(app_threads, queue_entries);
    let mut notes = Vec::new();
    if let Some(v) = get(ENV_FLUSHERS) {
        let t = v.trim();
        if t.is_empty() || t == "auto" {
            cfg.flushers = Flushers::Adaptive;
        } else {
            let m = t.parse().map_err(|_| RibbonError::Env {
                var: ENV_FLUSHERS,
                value: v.clone(),
                why: "expected `auto` or a flusher count",
            })?;
            cfg.flushers = Flushers::Fixed(m);
        }
    }
    if let Some(v) = get(ENV_HANDOFF) {
        cfg.inline_when_dedicated = match v.trim() {
            "" | "dedicated" => true,
            "always" => false,
            _ => {
                return Err(RibbonError::Env {
                    var: ENV_HANDOFF,
                    value: v.clone(),
                    why: "expected `dedicated` or `always`",
                })
            }
        };
    }
    if let Some(v) = get(crate::pin::ENV_PIN) {
        let on = crate::pin::parse_env(&v).ok_or(RibbonError::Env {
            var: crate::pin::ENV_PIN,
            value: v.clone(),
            why: "expected 1/on (pin flushers to idle CPUs, default) or 0/off",
        })?;
        if !on {
            cfg.pin = None;
        }
    }
    if let Some(v) = get(crate::coshm::ENV_SHARED) {
        // a bad key is not fatal: this process then runs its own search
        // and says why (thesis §6.5.4; docs/notebook/ribbon.md, "Co-running applications")
        cfg.corun = match crate::coshm::path_for_key(&v) {
            Ok(Some(path)) => Corun::Shared(path),
            Ok(None) => Corun::Off,
            Err(e) => Corun::Refused(e),
        };
    }
    if let Some(v) = get(ENV_P1) {
        cfg.control.p1 = v
            .trim()
            .parse()
            .ok()
            .filter(|&p| p >= 1)
            .ok_or(RibbonError::Env {
                var: ENV_P1,
                value: v.clone(),
                why: "expected a flusher count >= 1",
            })?;
        notes.extend(p1_cap_note(&cfg));
    }
    if let Some(v) = get(ENV_INTERIOR) {
        cfg.control.interior_probes = v
            .trim()
            .parse()
            .ok()
            .filter(|&n| n <= crate::interior::MAX_INTERIOR_PROBES)
            .ok_or(RibbonError::Env {
                var: ENV_INTERIOR,
                value: v.clone(),
                why:
                    "expected a count of interior probes 0..=8 (0: the thesis's four-point search)",
            })?;
    }
    Ok((cfg, notes))
}

/// What happens to a P1 above the hardware threads: the four-point search
/// caps every sample point at P4 = cores (`controller::Points::new`). Not
/// an error, unlike `MEMTAMER_RIBBON_FLUSHERS` above 1024: the same
/// setting is valid on a larger host, so one job script must not fail on
/// a smaller one; but the user is told, as the search they asked for is
/// not the one that runs. Nothing to say with a fixed flusher count (the
/// search, and P1 with it, is off).
fn p1_cap_note(cfg: &Config) -> Option<String> {
    let (p1, cores) = (cfg.control.p1, cfg.cores.max(1));
    (cfg.flushers == Flushers::Adaptive && p1 > cores).then(|| {
        format!(
            "{ENV_P1}={p1} is above the {cores} hardware threads this process may use; \
             P1 is capped at {cores}"
        )
    })
}

/// Starts the process-wide instance (thesis `ribbon_start`).
pub fn start(cfg: Config) -> Result<(), RibbonError> {
    let mut g = GLOBAL.write().map_err(|_| RibbonError::AlreadyStarted)?;
    if g.is_some() {
        return Err(RibbonError::AlreadyStarted);
    }
    *g = Some(Ribbon::start(cfg)?);
    GENERATION.fetch_add(1, Ordering::AcqRel);
    Ok(())
}

/// Drains and stops the process-wide instance (thesis `ribbon_stop`);
/// returns its final statistics.
pub fn stop() -> Result<Stats, RibbonError> {
    let ribbon = {
        let mut g = GLOBAL.write().map_err(|_| RibbonError::NotStarted)?;
        let r = g.take().ok_or(RibbonError::NotStarted)?;
        GENERATION.fetch_add(1, Ordering::AcqRel);
        r
    };
    let stats = ribbon.stats();
    ribbon.stop();
    Ok(stats)
}

/// In a fork child: the parent's flusher threads do not exist here, so
/// its instance is marked stopping (threads holding its queues drain them
/// themselves) and leaked; the next [`start`] makes a fresh one.
/// Call from a `pthread_atfork` child handler.
pub fn forget_after_fork() {
    if let Ok(mut g) = GLOBAL.try_write() {
        if let Some(r) = g.take() {
            r.mark_stopping();
            std::mem::forget(r);
        }
    }
    GENERATION.fetch_add(1, Ordering::AcqRel);
}

/// Allows proactive flushes in `addr..addr+len` on the running instance
/// (`Ribbon::allow_proactive`); false if none runs.
pub fn allow_proactive(addr: usize, len: usize) -> bool {
    GLOBAL
        .read()
        .ok()
        .and_then(|g| g.as_ref().map(|r| r.allow_proactive(addr, len)))
        .is_some()
}

/// Forbids proactive flushes in every allowed range overlapping
/// `addr..addr+len` (before unmapping it).
pub fn forbid_proactive_overlapping(addr: usize, len: usize) {
    if let Ok(g) = GLOBAL.read() {
        if let Some(r) = g.as_ref() {
            r.forbid_proactive_overlapping(addr, len);
        }
    }
}

/// Waits until every queued flush of the running instance has executed
/// (call before unmapping memory that may have been flushed).
pub fn drain_all() {
    if let Ok(g) = GLOBAL.read() {
        if let Some(r) = g.as_ref() {
            r.drain_all();
        }
    }
}

/// Whether the process-wide instance runs.
pub fn running() -> bool {
    GLOBAL.read().map(|g| g.is_some()).unwrap_or(false)
}

/// Statistics of the running instance.
pub fn stats() -> Option<Stats> {
    GLOBAL.read().ok()?.as_ref().map(Ribbon::stats)
}

/// Runs `f` on this thread's producer of the running instance, or returns
/// None when Ribbon is not running (or this thread is exiting).
fn with_producer<R>(f: impl FnOnce(&mut Producer) -> R) -> Option<R> {
    let gen = GENERATION.load(Ordering::Acquire);
    LOCAL
        .try_with(|cell| {
            let mut local = cell.try_borrow_mut().ok()?;
            let fresh = matches!(&*local, Some((g, p)) if *g == gen && !p.is_stale());
            if !fresh {
                let old = local.take();
                drop(old); // fences and frees the old queue
                let g = GLOBAL.read().ok()?;
                let p = g.as_ref()?.producer();
                *local = Some((gen, p));
            }
            local.as_mut().map(|(_, p)| f(p))
        })
        .ok()
        .flatten()
}

/// Queues a flush of `addr..addr+len` on the calling thread's FIFO
/// (thesis `ribbon_flush`). Not started: flushes here and says so.
///
/// # Safety
/// The range must stay mapped until the thread's next [`fence`].
pub unsafe fn flush(addr: *const u8, len: usize) -> Result<(), RibbonError> {
    check_range(addr as usize, len)?;
    // SAFETY: forwarded.
    match with_producer(|p| unsafe { p.flush(addr, len) }) {
        Some(r) => r,
        None => {
            // SAFETY: forwarded from the caller.
            unsafe { memtamer_pmem::flush(addr, len) };
            Err(RibbonError::NotStarted)
        }
    }
}

/// Blocks until the calling thread's queued flushes are executed and
/// fenced (thesis `ribbon_fence`). Not started: a plain store fence, and
/// the error says so.
pub fn fence() -> Result<(), RibbonError> {
    let gen = GENERATION.load(Ordering::Acquire);
    // A thread that never flushed has no queue: nothing to wait for, and
    // no reason to register one.
    let fenced = LOCAL
        .try_with(|cell| {
            let mut local = cell.try_borrow_mut().ok()?;
            match local.as_mut() {
                Some((g, p)) if *g == gen && !p.is_stale() => {
                    p.fence();
                    Some(())
                }
                _ => None,
            }
        })
        .ok()
        .flatten();
    if fenced.is_some() {
        return Ok(());
    }
    // An older queue of this thread (before a restart) is drained here.
    let _ = LOCAL.try_with(|c| {
        if let Ok(mut l) = c.try_borrow_mut() {
            drop(l.take()); // a stale producer drains its own queue
        }
    });
    memtamer_pmem::fence();
    if running() {
        Ok(())
    } else {
        Err(RibbonError::NotStarted)
    }
}

/// Serialises tests that use the process-wide instance.
#[cfg(test)]
pub(crate) static TEST_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_started_flushes_inline_and_reports_it() {
        let _l = TEST_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let buf = [1u8; 256];
        // SAFETY: buf is mapped.
        let r = unsafe { flush(buf.as_ptr(), buf.len()) };
        assert!(matches!(r, Err(RibbonError::NotStarted)));
        assert!(matches!(fence(), Err(RibbonError::NotStarted)));
        assert!(matches!(stop(), Err(RibbonError::NotStarted)));
    }

    #[test]
    fn start_flush_fence_stop_and_restart() {
        let _l = TEST_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let buf = vec![3u8; 8192];
        for round in 0..2 {
            let mut cfg = Config::new(4, 64);
            cfg.flushers = Flushers::Fixed(1);
            start(cfg).unwrap();
            assert!(matches!(
                start(Config::new(4, 64)),
                Err(RibbonError::AlreadyStarted)
            ));
            std::thread::scope(|s| {
                for t in 0..3 {
                    let buf = &buf;
                    s.spawn(move || {
                        for i in 0..100 {
                            let off = (t * 2048 + i * 16) % 8000;
                            // SAFETY: buf is mapped for the whole test.
                            unsafe { flush(buf.as_ptr().add(off), 64).unwrap() };
                            fence().unwrap();
                        }
                    });
                }
            });
            let st = stop().unwrap();
            assert_eq!(st.requests, 300, "round {round}: {st:?}");
            // each exiting thread's queue fences once more in its TLS destructor,
            // which may run after the scope has joined: 300 to 303
            assert!((300..=303).contains(&st.fences), "round {round}: {st:?}");
        }
    }

    #[test]
    fn a_fence_from_a_thread_that_never_flushed_registers_nothing() {
        let _l = TEST_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let mut cfg = Config::new(2, 16);
        cfg.flushers = Flushers::Fixed(1);
        start(cfg).unwrap();
        std::thread::spawn(|| fence().unwrap()).join().unwrap();
        assert_eq!(stats().map(|s| s.queues), Some(0));
        stop().unwrap();
    }

    #[test]
    fn env_overrides_are_parsed_and_bad_values_named() {
        let _l = TEST_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        std::env::set_var(ENV_FLUSHERS, "3");
        std::env::set_var(ENV_P1, "2");
        let c = config_from_env(2, 8).unwrap();
        assert_eq!((c.flushers, c.control.p1), (Flushers::Fixed(3), 2));
        std::env::set_var(ENV_FLUSHERS, "lots");
        let e = config_from_env(2, 8)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains(ENV_FLUSHERS) && e.contains("lots"), "{e}");
        std::env::set_var(ENV_FLUSHERS, "auto");
        std::env::set_var(ENV_P1, "0");
        assert!(config_from_env(2, 8).is_err());
        std::env::remove_var(ENV_FLUSHERS);
        std::env::remove_var(ENV_P1);
        assert!(config_from_env(2, 8).unwrap().inline_when_dedicated);
        std::env::set_var(ENV_HANDOFF, "always");
        assert!(!config_from_env(2, 8).unwrap().inline_when_dedicated);
        std::env::set_var(ENV_HANDOFF, "sometimes");
        let e = config_from_env(2, 8)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains(ENV_HANDOFF) && e.contains("sometimes"), "{e}");
        std::env::remove_var(ENV_HANDOFF);
        use crate::pin::ENV_PIN;
        assert!(config_from_env(2, 8).unwrap().pin.is_some());
        std::env::set_var(ENV_PIN, "0");
        assert!(config_from_env(2, 8).unwrap().pin.is_none());
        std::env::set_var(ENV_PIN, "1");
        assert!(config_from_env(2, 8).unwrap().pin.is_some());
        std::env::set_var(ENV_PIN, "sometimes");
        let e = config_from_env(2, 8)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains(ENV_PIN) && e.contains("sometimes"), "{e}");
        std::env::remove_var(ENV_PIN);
        use crate::coshm::ENV_SHARED;
        assert!(matches!(config_from_env(2, 8).unwrap().corun, Corun::Off));
        std::env::set_var(ENV_SHARED, "pair");
        assert!(matches!(
            config_from_env(2, 8).unwrap().corun,
            Corun::Shared(p) if p.ends_with("memtamer-ribbon-pair")
        ));
        std::env::set_var(ENV_SHARED, "off");
        assert!(matches!(config_from_env(2, 8).unwrap().corun, Corun::Off));
        std::env::set_var(ENV_SHARED, "../x");
        match config_from_env(2, 8).unwrap().corun {
            Corun::Refused(e) => assert!(e.to_string().contains("../x"), "{e}"),
            other => panic!("{other:?}"),
        }
        std::env::remove_var(ENV_SHARED);
    }

    /// `MEMTAMER_RIBBON_INTERIOR_PROBES`: unset is the default refinement
    /// (`interior::DEFAULT_INTERIOR_PROBES`), 0 the thesis's four-point
    /// search, a count above 8 or garbage refused naming the variable.
    #[test]
    fn the_interior_probes_variable_sets_the_search_and_refuses_bad_values() {
        let env = |v: &'static str| move |k: &str| (k == ENV_INTERIOR).then(|| v.to_string());
        let none = |_: &str| None;
        let (c, _) = config_from_lookup(2, 8, none).unwrap();
        assert_eq!(
            c.control.interior_probes,
            crate::interior::DEFAULT_INTERIOR_PROBES
        );
        let (c, _) = config_from_lookup(2, 8, env("0")).unwrap();
        assert_eq!(c.control.interior_probes, 0, "the thesis's search");
        let (c, _) = config_from_lookup(2, 8, env(" 2 ")).unwrap();
        assert_eq!(c.control.interior_probes, 2);
        for bad in ["9", "-1", "many"] {
            let e = config_from_lookup(2, 8, env(bad))
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(e.contains(ENV_INTERIOR) && e.contains(bad), "{bad}: {e}");
        }
    }

    /// Leftover of the 2026-11-27 sweep (docs/bad-input.md): a P1 above
    /// the hardware threads was capped by `controller::Points::new` without
    /// a word. It is still taken (the same setting is right on a larger
    /// host) and the note names the variable, the value and the cap.
    #[test]
    fn a_p1_above_the_hardware_threads_is_capped_with_a_note() {
        let cores = crate::shared::hardware_threads();
        let env = |p1: String, flushers: &'static str| {
            move |k: &str| match k {
                ENV_P1 => Some(p1.clone()),
                ENV_FLUSHERS => Some(flushers.to_string()),
                _ => None,
            }
        };
        let big = cores + 60;
        let (c, notes) = config_from_lookup(2, 8, env(big.to_string(), "auto")).unwrap();
        assert_eq!(c.control.p1, big, "the value is kept; the search caps it");
        assert_eq!(notes.len(), 1, "{notes:?}");
        let want = [
            format!("{ENV_P1}={big}"),
            format!("{cores} hardware threads"),
            format!("capped at {cores}"),
        ];
        assert!(want.iter().all(|w| notes[0].contains(w)), "{notes:?}");
        let pts = crate::controller::Points::new(c.control.p1, c.cores);
        assert_eq!(pts.p1, cores, "the note says what the search does");
        // at the cap, below it, unset, or with the search off: nothing to say
        for (p1, fl) in [(cores.to_string(), "auto"), ("1".into(), "auto")] {
            assert!(config_from_lookup(2, 8, env(p1, fl)).unwrap().1.is_empty());
        }
        assert!(config_from_lookup(2, 8, env(big.to_string(), "2"))
            .unwrap()
            .1
            .is_empty());
        assert!(config_from_lookup(2, 8, |_| None).unwrap().1.is_empty());
        // out-of-range values that are wrong on every host stay errors
        assert!(config_from_lookup(2, 8, env("0".into(), "auto")).is_err());
    }
}
