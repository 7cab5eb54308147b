//! Runtime tests with a recording executor: "addresses" are indexes into
//! a table of counters, never dereferenced.

use super::*;
use crate::controller::{Case, ControlConfig};
use crate::error::{MAX_APP_THREADS, MAX_FLUSHERS};
use crate::search_record::SearchCause;
use crate::shared::*;
use std::sync::atomic::AtomicU32;
use std::time::Duration;
use std::time::Instant;

const LINES: usize = 1 << 20;
static EXECUTED: [AtomicU32; LINES] = [const { AtomicU32::new(0) }; LINES];
// fake lines start above the NULL page, which `check_range` refuses
static NEXT: AtomicUsize = AtomicUsize::new(FIRST_MAPPED / 64);

/// Reserves `n` fresh fake lines for one test; returns the first index.
fn lines(n: usize) -> usize {
    let first = NEXT.fetch_add(n, Ordering::Relaxed);
    assert!(first + n < LINES, "test line table exhausted");
    first
}

fn addr(line: usize) -> *const u8 {
    (line * 64) as *const u8
}

fn executed(line: usize) -> u32 {
    EXECUTED[line].load(Ordering::Acquire)
}

/// Lines whose flush was followed by a fence on the thread that flushed
/// them (an sfence orders only the issuing thread's earlier clwbs).
static FENCED: [AtomicU32; LINES] = [const { AtomicU32::new(0) }; LINES];

thread_local! {
    /// Lines this thread flushed since its last fence.
    static UNFENCED: std::cell::RefCell<Vec<usize>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Executed and then fenced by the thread that executed it: persistent.
fn persisted(line: usize) -> bool {
    FENCED[line].load(Ordering::Acquire) > 0
}

/// Records each line of the range as flushed, slowly (it sleeps 50 us,
/// leaving the CPU to the producer even on a busy 2-core machine), so that
/// an early fence has a window to be caught in.
unsafe fn slow_record(a: *const u8, len: usize) {
    std::thread::sleep(Duration::from_micros(50));
    record(a, len);
}

unsafe fn fast_record(a: *const u8, len: usize) {
    record(a, len);
}

fn record(a: *const u8, len: usize) {
    let first = a as usize / 64;
    let last = (a as usize + len - 1) / 64;
    for line in &EXECUTED[first..=last] {
        line.fetch_add(1, Ordering::Release);
    }
    UNFENCED.with(|u| u.borrow_mut().extend(first..=last));
}

/// The recording sfence: marks this thread's flushed lines fenced.
fn record_fence() {
    std::sync::atomic::fence(Ordering::SeqCst);
    UNFENCED.with(|u| {
        for line in u.borrow_mut().drain(..) {
            FENCED[line].fetch_add(1, Ordering::Release);
        }
    });
}

fn config(apps: usize, entries: usize, flushers: usize, slow: bool) -> Config {
    let mut c = Config::new(apps, entries);
    c.flushers = Flushers::Fixed(flushers);
    c.executor = Executor {
        flush: if slow { slow_record } else { fast_record },
        fence: record_fence,
    };
    c
}

/// Runs `threads` producers, each doing `rounds` of (enqueue `k` fresh
/// lines, fence, check): returns how many lines were found not executed
/// and fenced (by the thread that executed them) right after the fence
/// that should have covered them.
fn fence_violations(cfg: Config, threads: usize, rounds: usize, k: usize) -> usize {
    let ribbon = Ribbon::start(cfg).unwrap();
    let bad = AtomicUsize::new(0);
    std::thread::scope(|sc| {
        for _ in 0..threads {
            sc.spawn(|| {
                let mut p = ribbon.producer();
                for _ in 0..rounds {
                    let first = lines(k);
                    for i in 0..k {
                        // SAFETY: the recording executor never dereferences.
                        unsafe { p.flush(addr(first + i), 1).unwrap() };
                    }
                    p.fence();
                    let missing = (0..k).filter(|i| !persisted(first + i)).count();
                    bad.fetch_add(missing, Ordering::Relaxed);
                }
            });
        }
    });
    ribbon.stop();
    bad.into_inner()
}

#[test]
fn a_fence_never_returns_before_its_flushes_executed() {
    assert_eq!(fence_violations(config(4, 64, 2, true), 3, 100, 8), 0);
}

#[test]
fn fences_hold_when_producers_help_with_their_own_batches_at_m_equal_n() {
    // M = N = 2 with the hand-off forced: a producer whose batch no
    // flusher took runs it itself
    let mut cfg = config(4, 64, 2, true);
    cfg.inline_when_dedicated = false;
    assert_eq!(fence_violations(cfg, 2, 100, 8), 0);
}

#[test]
fn fences_hold_when_dedicated_flushes_run_on_their_caller() {
    // M = N = 2 (the default inline_when_dedicated): flushes run on the caller
    assert_eq!(fence_violations(config(4, 64, 2, true), 2, 100, 8), 0);
}

#[test]
fn at_m_equal_n_a_flush_runs_on_its_caller_before_returning() {
    let ribbon = Ribbon::start(config(2, 16, 1, false)).unwrap();
    let mut p = ribbon.producer();
    let first = lines(4);
    // SAFETY: recording executor.
    unsafe { p.flush(addr(first), 256).unwrap() };
    assert!(
        (first..first + 4).all(|l| executed(l) == 1),
        "M = N = 1: ran on the caller before returning"
    );
    p.fence();
    let st = ribbon.stats();
    assert_eq!(
        (st.dedicated_requests, st.inline_requests),
        (1, 0),
        "{st:?}"
    );
    assert_eq!(st.flusher_batches, 0, "{st:?}");
    assert_eq!(st.flushed_bytes, 256);
    drop(p);
    ribbon.stop();
}

/// Producers on 2 queues flush `k` fresh lines and fence while another
/// thread flips M between 1 (< N: queued) and 2 (= N: on the caller), so
/// fences often meet requests queued before M became N.
fn violations_while_m_flips(cfg: Config) -> usize {
    let ribbon = Ribbon::start(cfg).unwrap();
    let bad = AtomicUsize::new(0);
    let done = AtomicBool::new(false);
    std::thread::scope(|sc| {
        sc.spawn(|| {
            let mut m = 1;
            while !done.load(Ordering::Relaxed) {
                ribbon.set_flushers(m);
                m = 3 - m;
                std::thread::sleep(Duration::from_micros(300));
            }
        });
        let workers: Vec<_> = (0..2)
            .map(|_| {
                sc.spawn(|| {
                    let mut p = ribbon.producer();
                    for _ in 0..150 {
                        let first = lines(8);
                        for i in 0..8 {
                            // SAFETY: the recording executor never dereferences.
                            unsafe { p.flush(addr(first + i), 1).unwrap() };
                        }
                        p.fence();
                        let missing = (0..8).filter(|i| !persisted(first + i)).count();
                        bad.fetch_add(missing, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        for w in workers {
            let _ = w.join();
        }
        done.store(true, Ordering::Relaxed);
    });
    ribbon.stop();
    bad.into_inner()
}

#[test]
fn fences_hold_while_m_moves_between_queued_and_dedicated() {
    assert_eq!(violations_while_m_flips(config(4, 64, 2, true)), 0);
}

/// Rounds of: with M = 1 < N = 2, queue 8 fresh lines (the slow
/// flusher needs ~400 us for them), raise M to N, fence, check.
fn violations_after_m_becomes_n(cfg: Config) -> usize {
    let ribbon = Ribbon::start(cfg).unwrap();
    let _other = ribbon.producer(); // N = 2
    let mut p = ribbon.producer();
    let mut bad = 0;
    for _ in 0..20 {
        ribbon.set_flushers(1);
        let first = lines(8);
        for i in 0..8 {
            // SAFETY: the recording executor never dereferences.
            unsafe { p.flush(addr(first + i), 1).unwrap() };
        }
        ribbon.set_flushers(2);
        p.fence();
        bad += (0..8).filter(|i| !persisted(first + i)).count();
    }
    drop(p);
    ribbon.stop();
    bad
}

#[test]
fn a_fence_after_m_became_n_waits_for_what_was_queued_before() {
    assert_eq!(violations_after_m_becomes_n(config(4, 64, 2, true)), 0);
}

#[test]
fn the_test_catches_a_dedicated_fence_that_skips_the_queue() {
    let mut cfg = config(4, 64, 2, true);
    cfg.broken_dedicated_fence = true;
    let bad = violations_after_m_becomes_n(cfg);
    assert!(
        bad > 0,
        "a fence that forgets requests queued before M became N must be caught ({bad})"
    );
}

#[test]
fn the_fence_test_catches_a_runtime_that_publishes_early() {
    // M = 1 < N = 2: batches are run by the flusher, never by their own
    // producer (which may help only when M = N)
    let mut cfg = config(4, 64, 1, true);
    cfg.broken_publish_early = true;
    let bad = fence_violations(cfg, 2, 100, 8);
    assert!(
        bad > 0,
        "the deliberately broken runtime must be caught (saw {bad} violations)"
    );
}

#[test]
fn fences_hold_when_one_flusher_serves_several_queues() {
    // M = 1 < N = 3: the flusher's rounds hold several queues' batches
    // and end in one fence
    assert_eq!(fence_violations(config(4, 64, 1, true), 3, 60, 8), 0);
}

#[test]
fn the_fence_test_catches_a_flusher_round_without_its_fence() {
    // The round's flushes execute and its batches are published in
    // order, but the sfence is left out: the lines are executed, not fenced.
    let mut cfg = config(4, 64, 1, true);
    cfg.broken_round_fence = true;
    let bad = fence_violations(cfg, 3, 30, 8);
    assert!(
        bad > 0,
        "a round published without its fence must be caught (saw {bad})"
    );
}

static GATE_OPEN: AtomicBool = AtomicBool::new(true);
static GATE_ENTERED: AtomicBool = AtomicBool::new(false);

/// Records like `fast_record`, but the first flush after the gate closed
/// holds its thread until the gate opens again.
unsafe fn gated_record(a: *const u8, len: usize) {
    GATE_ENTERED.store(true, Ordering::SeqCst);
    while !GATE_OPEN.load(Ordering::SeqCst) {
        std::thread::yield_now();
    }
    record(a, len);
}

#[test]
fn a_flusher_fences_once_per_round_over_the_queues_it_serves() {
    // One flusher, three queues. The flusher is held inside queue 0's
    // batch while queues 1 and 2 fill; its next round must take both
    // batches and end in one fence, and both fences must then see their
    // lines executed and fenced.
    let mut cfg = config(4, 64, 1, false);
    cfg.executor.flush = gated_record;
    let ribbon = Ribbon::start(cfg).unwrap();
    let mut p: Vec<_> = (0..3).map(|_| ribbon.producer()).collect();
    GATE_OPEN.store(false, Ordering::SeqCst);
    GATE_ENTERED.store(false, Ordering::SeqCst);
    let first = lines(3);
    // SAFETY: recording executor.
    unsafe { p[0].flush(addr(first), 1).unwrap() };
    while !GATE_ENTERED.load(Ordering::SeqCst) {
        std::thread::yield_now();
    }
    for (q, pq) in p.iter_mut().enumerate().skip(1) {
        // SAFETY: recording executor.
        unsafe { pq.flush(addr(first + q), 1).unwrap() };
    }
    GATE_OPEN.store(true, Ordering::SeqCst);
    for q in (0..3).rev() {
        p[q].fence();
        assert!(persisted(first + q), "queue {q}");
    }
    let st = ribbon.stats();
    assert_eq!((st.flusher_batches, st.flusher_rounds), (3, 2), "{st:?}");
    drop(p);
    ribbon.stop();
}

#[test]
fn fences_hold_when_the_dispatcher_splits_batches_over_flushers() {
    // M = 3 > N = 1: flusher 0 dispatches to flushers 1 and 2
    let ribbon_cfg = config(2, 256, 3, true);
    assert_eq!(fence_violations(ribbon_cfg, 1, 30, 64), 0);
}

#[test]
fn the_dispatcher_really_hands_out_jobs() {
    let ribbon = Ribbon::start(config(2, 256, 3, false)).unwrap();
    let mut p = ribbon.producer();
    let first = lines(64 * 20);
    for r in 0..20 {
        // SAFETY: recording executor.
        unsafe { p.flush(addr(first + r * 64), 64 * 64).unwrap() };
        p.fence();
    }
    drop(p);
    let st = ribbon.stats();
    ribbon.stop();
    assert!(st.dispatched_jobs > 0, "{st:?}");
    assert!(
        (first..first + 64 * 20).all(|l| executed(l) == 1),
        "each line exactly once"
    );
    assert_eq!(
        st.flushed_bytes,
        64 * 64 * 20,
        "20 fences of 64 lines of 64 B"
    );
}

#[test]
fn every_request_runs_exactly_once_under_overflow_inline_and_stop() {
    // 3 queues for 6 threads (3 flush inline), 2-entry rings (full often),
    // and the last requests are not fenced: stop must drain them.
    let ribbon = Ribbon::start(config(3, 2, 2, false)).unwrap();
    let per = 3000;
    let firsts: Vec<usize> = (0..6).map(|_| lines(per)).collect();
    std::thread::scope(|sc| {
        for &first in &firsts {
            let ribbon = &ribbon;
            sc.spawn(move || {
                let mut p = ribbon.producer();
                for i in 0..per {
                    // SAFETY: recording executor.
                    unsafe { p.flush(addr(first + i), 1).unwrap() };
                    if i % 97 == 0 {
                        p.fence();
                    }
                }
                std::mem::forget(p); // no final fence, no unregister
            });
        }
    });
    let st = ribbon.stats();
    ribbon.stop();
    for &first in &firsts {
        for l in first..first + per {
            assert_eq!(executed(l), 1, "line {l}");
        }
    }
    assert_eq!(st.requests, 6 * per as u64);
    assert!(st.inline_requests >= 3 * per as u64, "{st:?}");
}

#[test]
fn zero_flushers_means_the_application_thread_flushes_at_once() {
    let ribbon = Ribbon::start(config(2, 16, 0, false)).unwrap();
    let mut p = ribbon.producer();
    let first = lines(4);
    // SAFETY: recording executor.
    unsafe { p.flush(addr(first), 256).unwrap() };
    assert!(
        (first..first + 4).all(|l| executed(l) == 1),
        "ran inline before returning"
    );
    p.fence();
    assert_eq!(ribbon.stats().inline_requests, 1);
}

#[test]
fn flushes_after_stop_still_run() {
    let ribbon = Ribbon::start(config(2, 16, 1, false)).unwrap();
    let mut p = ribbon.producer();
    ribbon.stop();
    assert!(p.is_stale());
    let first = lines(1);
    // SAFETY: recording executor.
    unsafe { p.flush(addr(first), 1).unwrap() };
    p.fence();
    assert_eq!(executed(first), 1);
}

#[test]
fn bad_configuration_is_refused_with_the_value() {
    let e = |c: Config| {
        Ribbon::start(c)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    assert!(e(config(0, 16, 1, false)).contains("numAppT = 0"));
    assert!(e(config(MAX_APP_THREADS + 1, 16, 1, false)).contains("numAppT"));
    assert!(e(config(1, 0, 1, false)).contains("eleFQueue = 0"));
    assert!(e(config(1, usize::MAX, 1, false)).contains("eleFQueue"));
    assert!(e(config(1, 4, MAX_FLUSHERS + 1, false)).contains("flushers"));
}

#[test]
fn absurd_ranges_are_refused_and_zero_length_is_a_no_op() {
    let ribbon = Ribbon::start(config(1, 16, 1, false)).unwrap();
    let mut p = ribbon.producer();
    // SAFETY: refused before any flush.
    assert!(matches!(
        unsafe { p.flush(usize::MAX as *const u8, 2) },
        Err(RibbonError::Range { .. })
    ));
    // SAFETY: as above.
    assert!(unsafe { p.flush(64 as *const u8, MAX_FLUSH_LEN + 1) }.is_err());
    // SAFETY: zero bytes are never touched.
    assert!(unsafe { p.flush(std::ptr::null(), 0) }.is_ok());
    // a NULL pointer with a length was queued, and the flusher's CLWB on
    // address 0 killed the process at the next fence
    // SAFETY: refused before any flush.
    assert!(matches!(
        unsafe { p.flush(std::ptr::null(), 64) },
        Err(RibbonError::NullRange { addr: 0, len: 64 })
    ));
    // SAFETY: as above.
    assert!(unsafe { p.flush(4032 as *const u8, 64) }.is_err());
    assert_eq!(ribbon.stats().requests, 0);
}

#[test]
fn adaptive_mode_reports_its_bandwidth_source_and_falls_back() {
    let mut c = config(2, 64, 0, false);
    c.flushers = Flushers::Adaptive;
    c.cores = 4;
    c.control = ControlConfig {
        probe: Duration::from_millis(4),
        ..ControlConfig::thesis(4)
    };
    c.bandwidth = Some(Box::new(crate::bandwidth::FnSource::new(
        "fake-imc",
        || Some(7),
    )));
    let r = Ribbon::start(c).unwrap();
    std::thread::sleep(Duration::from_millis(60));
    let st = r.stats();
    r.stop();
    assert_eq!(st.bandwidth_source, "fake-imc");
    assert!(st.last_case.is_some(), "a search finished: {st:?}");

    let mut c = config(2, 64, 0, false);
    c.flushers = Flushers::Adaptive;
    c.cores = 4;
    c.bandwidth = Some(Box::new(crate::bandwidth::FnSource::new(
        "absent-imc",
        || None,
    )));
    let r = Ribbon::start(c).unwrap();
    std::thread::sleep(Duration::from_millis(30));
    assert_eq!(r.stats().bandwidth_source, crate::bandwidth::FLUSHED_BYTES);
}

/// Yields its batches only after `open` is set (so the test can declare
/// the allowed range first).
struct Gated {
    open: Arc<AtomicBool>,
    inner: crate::proactive::Recorded,
}

impl crate::proactive::StoreSampler for Gated {
    fn drain(&mut self, out: &mut Vec<u64>) {
        if self.open.load(Ordering::Acquire) {
            self.inner.drain(out);
        }
    }
}

#[test]
fn proactive_flushes_sampled_lines_inside_allowed_ranges_only() {
    let buf = vec![0u8; 4096];
    let base = buf.as_ptr() as u64;
    let samples = vec![
        vec![base, base + 100, base + 70],
        vec![base + 4000, 0x10, base + 5000],
    ];
    let allowed = [(buf.as_ptr() as usize, buf.len())];
    let want: usize = samples
        .iter()
        .map(|b| crate::proactive::lines_to_flush(b, &allowed).len())
        .sum();
    assert!(want >= 3);
    let open = Arc::new(AtomicBool::new(false));
    let mut c = Config::new(1, 16);
    c.flushers = Flushers::Fixed(1);
    c.sampler = Some(Box::new(Gated {
        open: open.clone(),
        inner: crate::proactive::Recorded::new(samples),
    }));
    let r = Ribbon::start(c).unwrap();
    r.allow_proactive(allowed[0].0, allowed[0].1);
    open.store(true, Ordering::Release);
    let deadline = Instant::now() + Duration::from_secs(10);
    while r.stats().proactive_bytes < (want * 64) as u64 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    std::thread::sleep(Duration::from_millis(5));
    r.forbid_proactive(allowed[0].0, allowed[0].1);
    let st = r.stats();
    r.stop();
    assert!(st.proactive);
    assert_eq!(
        st.proactive_bytes,
        (want * 64) as u64,
        "each allowed sampled line once, nothing outside"
    );
}

#[test]
fn drain_all_waits_for_every_threads_queue() {
    let ribbon = Ribbon::start(config(4, 64, 1, true)).unwrap();
    let firsts: Vec<usize> = (0..3).map(|_| lines(16)).collect();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::scope(|sc| {
        for &first in &firsts {
            let (ribbon, tx) = (&ribbon, tx.clone());
            sc.spawn(move || {
                let mut p = ribbon.producer();
                for i in 0..16 {
                    // SAFETY: recording executor.
                    unsafe { p.flush(addr(first + i), 1).unwrap() };
                }
                tx.send(()).unwrap();
                std::thread::sleep(Duration::from_millis(50));
                std::mem::forget(p); // never fences
            });
        }
        for _ in 0..3 {
            rx.recv().unwrap();
        }
        // another thread (say, one unmapping memory) waits for all queues
        ribbon.drain_all();
        for &first in &firsts {
            assert!(
                (first..first + 16).all(|l| executed(l) == 1),
                "drain_all returned early"
            );
        }
    });
}

#[test]
fn stopping_while_the_dispatcher_is_busy_never_hangs_or_loses_a_flush() {
    for _ in 0..20 {
        let ribbon = Ribbon::start(config(2, 256, 3, false)).unwrap();
        let first = lines(64 * 64);
        std::thread::scope(|sc| {
            let r = &ribbon;
            sc.spawn(move || {
                let mut p = r.producer();
                for i in 0..64 {
                    // SAFETY: recording executor.
                    unsafe { p.flush(addr(first + i * 64), 64 * 64).unwrap() };
                }
                std::mem::forget(p);
            });
        });
        ribbon.stop();
        assert!((first..first + 64 * 64).all(|l| executed(l) == 1));
    }
}

/// The bandwidth curve a test switches while Ribbon runs.
type Curve = Arc<std::sync::Mutex<fn(usize) -> f64>>;

/// A bandwidth source following a curve bw(M) of the runtime's current
/// flusher count, integrated over time: lets the real control thread run
/// its search against a known machine.
fn curve_source(
    shared: Arc<std::sync::OnceLock<Arc<Shared>>>,
    curve: Curve,
) -> Box<dyn crate::bandwidth::BandwidthSource> {
    let mut bytes = 0.0f64;
    let mut last = Instant::now();
    Box::new(crate::bandwidth::FnSource::new("curve", move || {
        let m = shared
            .get()
            .map(|s| s.m.load(Ordering::Relaxed))
            .unwrap_or(0);
        let f = *curve.lock().unwrap();
        let now = Instant::now();
        bytes += f(m) * now.duration_since(last).as_secs_f64();
        last = now;
        Some(bytes as u64)
    }))
}

#[test]
fn the_control_thread_searches_applies_m_and_switches_proactive_off_when_lowering() {
    fn scaling(m: usize) -> f64 {
        m as f64 * 1e9
    }
    fn contended(m: usize) -> f64 {
        if m <= 1 {
            20e9
        } else {
            20e9 - m as f64 * 2e9
        }
    }
    let cell = Arc::new(std::sync::OnceLock::new());
    let curve: Curve = Arc::new(std::sync::Mutex::new(scaling));
    let mut c = config(2, 64, 0, false);
    c.flushers = Flushers::Adaptive;
    c.cores = 4;
    c.detect_idle = false;
    c.control = ControlConfig {
        p1: 1,
        probe: Duration::from_millis(20),
        interval: Duration::from_millis(60),
        ..ControlConfig::thesis(4)
    };
    c.bandwidth = Some(curve_source(cell.clone(), curve.clone()));
    c.sampler = Some(Box::new(crate::proactive::Recorded::new(Vec::new())));
    let r = Ribbon::start(c).unwrap();
    let _ = cell.set(r.shared.clone());
    let wait_for = |what: &dyn Fn(&Stats) -> bool| {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !what(&r.stats()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        r.stats()
    };
    let st = wait_for(&|s| s.last_case == Some(Case::NoContention) && s.flushers == 4);
    assert_eq!(
        (st.flushers, st.last_case),
        (4, Some(Case::NoContention)),
        "{st:?}"
    );
    assert!(st.proactive, "raised to P4: proactive on ({st:?})");
    assert_eq!(st.bandwidth_source, "curve");
    *curve.lock().unwrap() = contended;
    let st = wait_for(&|s| s.last_case == Some(Case::ContentionPastP1) && s.flushers == 1);
    assert_eq!(
        (st.flushers, st.last_case),
        (1, Some(Case::ContentionPastP1)),
        "{st:?}"
    );
    assert!(!st.proactive, "lowered to P1: proactive off ({st:?})");
    assert!(st.searches >= 2);
    // the search that lowered M, as the control thread recorded it
    let rec = r.last_search().expect("an adaptive controller's search");
    let out = rec.outcome.expect("decided");
    assert_eq!((out.case, out.flushers), (Case::ContentionPastP1, 1));
    assert_eq!(rec.number, st.searches);
    assert!(matches!(
        rec.cause,
        SearchCause::PhaseChange { .. } | SearchCause::ReferenceMismatch { .. }
    ));
    let probed: Vec<usize> = rec.probes.iter().take(4).map(|p| p.flushers).collect();
    assert_eq!(probed, vec![1, 4, 2, 3], "P1, P4, P2, P3");
    r.stop();
}

#[path = "pin_tests.rs"]
mod pin_tests;

#[path = "corun_runtime_tests.rs"]
mod corun_tests;
