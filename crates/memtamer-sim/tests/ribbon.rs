//! The flush model and Ribbon's wiring in the simulator (issue 19 item 5):
//! what a `clwb` costs by line state, that flusher threads and the
//! controller are what execute and size the flushing, and that proactive
//! flushing turns dirty flushes into clean ones.

use memtamer_sim::experiment::{metrics, run_point};
use memtamer_sim::{Scenario, SimError};
use std::collections::BTreeMap;

/// Runs a one-job flush scenario on the thesis platform; `workload` is the
/// inline TOML table's body after `kind = "flush"`.
fn run(threads: u32, cpus: &str, workload: &str, ms: f64) -> BTreeMap<String, f64> {
    run_on("thesis", threads, cpus, workload, ms).unwrap_or_else(|e| panic!("{e}"))
}

fn run_on(
    platform: &str,
    threads: u32,
    cpus: &str,
    workload: &str,
    ms: f64,
) -> Result<BTreeMap<String, f64>, SimError> {
    let text = format!(
        "name = \"t\"\ntitle = \"t\"\nplatform = \"{platform}\"\nduration_ms = {ms}\nwarmup_ms = 0.3\n\
         [[job]]\nname = \"app\"\nthreads = {threads}\ncpus = \"{cpus}\"\n\
         workload = {{ kind = \"flush\", {workload} }}\n"
    );
    let s = Scenario::parse("t", &text)?;
    let (p, r) = run_point(&s, None)?;
    Ok(metrics(&s, &p, &r))
}

fn get(m: &BTreeMap<String, f64>, k: &str) -> f64 {
    *m.get(k).unwrap_or_else(|| panic!("no metric {k} in {m:?}"))
}

#[test]
fn clean_flushes_are_cheapest_and_flushes_of_uncached_lines_dearest() {
    let rate = |state: &str| {
        let m = run(
            1,
            "0",
            &format!("pattern = \"lines\", value_bytes = 64, line_state = \"{state}\""),
            0.3,
        );
        let share = get(&m, &format!("app.flush_{state}_share"));
        assert!(share > 0.99, "{state}: share {share}");
        get(&m, "app.kops")
    };
    let (dirty, clean, cold) = (rate("dirty"), rate("clean"), rate("nonresident"));
    // a clean flush writes nothing back; an uncached one reads the directory
    assert!(clean > 2.0 * dirty, "clean {clean} dirty {dirty}");
    assert!(cold < dirty, "non-resident {cold} dirty {dirty}");
}

#[test]
fn a_dirty_flush_is_a_64_byte_pm_write_and_a_clean_one_writes_nothing() {
    let dirty = run(
        1,
        "0",
        "pattern = \"lines\", value_bytes = 256, line_state = \"dirty\"",
        0.3,
    );
    let lines_per_s = get(&dirty, "app.kops") * 1e3;
    let written = get(&dirty, "pm.request_write_gbps") * 1e9;
    assert!(
        (written / (lines_per_s * 64.0) - 1.0).abs() < 0.02,
        "{written} B/s for {lines_per_s} lines/s"
    );
    let clean = run(
        1,
        "0",
        "pattern = \"lines\", value_bytes = 256, line_state = \"clean\"",
        0.3,
    );
    assert!(get(&clean, "pm.request_write_gbps") < 1e-3);
}

#[test]
fn fixed_flushers_are_the_only_threads_that_flush_and_m_bounds_throughput() {
    let one = run(
        8,
        "0-15",
        "pattern = \"lines\", value_bytes = 1024, mode = \"fixed\", flushers = 1",
        0.5,
    );
    let four = run(
        8,
        "0-15",
        "pattern = \"lines\", value_bytes = 1024, mode = \"fixed\", flushers = 4",
        0.5,
    );
    assert_eq!(get(&one, "app.flushers"), 1.0);
    assert_eq!(get(&four, "app.flushers"), 4.0);
    // only flushes (no stores that miss): one flusher serving eight
    // queues is the bottleneck
    assert!(
        get(&four, "app.kops") > 2.0 * get(&one, "app.kops"),
        "M=1 {} M=4 {}",
        get(&one, "app.kops"),
        get(&four, "app.kops")
    );
    let eager = run(8, "0-15", "pattern = \"lines\", value_bytes = 1024", 0.5);
    assert_eq!(get(&eager, "app.flushers"), 0.0);
}

#[test]
fn the_controller_sets_m_within_its_points_and_goes_inline_without_idle_threads() {
    let m = run(
        4,
        "0-15",
        "pattern = \"pmemkv\", value_bytes = 256, mode = \"ribbon\", probe_us = 20, interval_us = 100",
        1.0,
    );
    let f = get(&m, "app.flushers_end");
    assert!((1.0..=16.0).contains(&f), "M = {f}");
    assert!(get(&m, "app.kops") > 0.0);
    // 16 application threads on 16 CPUs: no idle hardware thread, the
    // application threads flush themselves (M = 0) and still make progress
    let m = run(
        16,
        "0-15",
        "pattern = \"pmemkv\", value_bytes = 256, mode = \"ribbon\", probe_us = 20, interval_us = 100",
        0.5,
    );
    assert_eq!(get(&m, "app.flushers_end"), 0.0);
    assert!(get(&m, "app.kops") > 0.0);
}

#[test]
fn proactive_flushing_turns_program_flushes_clean() {
    // the program flushes its value 300 us after storing it, longer than
    // the proactive thread's 200 us poll (runtime `proactive::POLL`)
    let w = "pattern = \"pmemkv\", value_bytes = 1024, compute_ns = 300000.0, sample_period = 1";
    let off = run(2, "0-7", w, 2.0);
    let on = run(2, "0-7", &format!("{w}, proactive = true"), 2.0);
    assert_eq!(get(&off, "app.flush_clean_share"), 0.0);
    assert_eq!(get(&off, "app.proactive_gbps"), 0.0);
    assert!(get(&on, "app.proactive_gbps") > 0.0);
    assert!(
        get(&on, "app.flush_clean_share") > 0.5,
        "{}",
        get(&on, "app.flush_clean_share")
    );
}

#[test]
fn proactive_flushes_wait_for_the_threads_poll() {
    // flushed 2 us after its store, a line is the program's to write back:
    // the proactive thread sees the sample only at its next poll (200 us)
    let w = "pattern = \"pmemkv\", value_bytes = 1024, compute_ns = 2000.0, sample_period = 1, proactive = true";
    let m = run(2, "0-7", w, 2.0);
    let clean = get(&m, "app.flush_clean_share");
    assert!(clean < 0.05, "clean share {clean}");
}

#[test]
fn a_platform_without_flush_parameters_is_refused_by_name() {
    let e = run_on("ahn", 1, "0", "pattern = \"pmemkv\"", 0.1).unwrap_err();
    assert!(e.to_string().contains("cpu.llc_bytes"), "{e}");
}

#[test]
fn bad_flush_values_are_refused_by_key() {
    let e = run_on(
        "thesis",
        1,
        "0",
        "pattern = \"pmemkv\", mode = \"fixed\"",
        0.1,
    )
    .unwrap_err();
    assert!(e.to_string().contains("flushers"), "{e}");
}

/// Runs a one-job flush scenario (0.3 ms warm-up) and returns its metrics
/// with the flush job's counters (dedicated flushes, flusher batches).
fn run_counted(
    threads: u32,
    cpus: &str,
    workload: &str,
    ms: f64,
) -> (BTreeMap<String, f64>, u64, u64) {
    run_counted_from(0.3, threads, cpus, workload, ms)
}

/// [`run_counted`] measured from `warmup` ms.
fn run_counted_from(
    warmup: f64,
    threads: u32,
    cpus: &str,
    workload: &str,
    ms: f64,
) -> (BTreeMap<String, f64>, u64, u64) {
    let text = format!(
        "name = \"t\"\ntitle = \"t\"\nplatform = \"thesis\"\nduration_ms = {ms}\nwarmup_ms = {warmup}\n\
         [[job]]\nname = \"app\"\nthreads = {threads}\ncpus = \"{cpus}\"\n\
         workload = {{ kind = \"flush\", {workload} }}\n"
    );
    let s = Scenario::parse("t", &text).unwrap_or_else(|e| panic!("{e}"));
    let (p, r) = run_point(&s, None).unwrap_or_else(|e| panic!("{e}"));
    let f = r.flush.first().expect("a flush job").stats;
    (metrics(&s, &p, &r), f.dedicated, f.flusher_batches)
}

const SIMPLE: &str = "pattern = \"pmemkv-arena\", value_bytes = 1024, compute_ns = 1000.0";

#[test]
fn at_m_equal_to_n_flushes_run_on_their_threads_and_throughput_is_eager_s() {
    // the runtime's `Config::inline_when_dedicated` (default): with one
    // flusher per queue a flush runs on its caller, so fixed M = N = 4 is
    // eager flushing with idle flushers beside it
    let (eager, ..) = run_counted(4, "0-15", SIMPLE, 0.8);
    let (m4, dedicated, batches) = run_counted(
        4,
        "0-15",
        &format!("{SIMPLE}, mode = \"fixed\", flushers = 4"),
        0.8,
    );
    assert!(dedicated > 0, "no flush ran on its caller");
    assert_eq!(batches, 0, "a flusher executed a batch at M = N");
    let (e, r) = (get(&eager, "app.kops"), get(&m4, "app.kops"));
    assert!((r / e - 1.0).abs() < 0.02, "eager {e} kops, M = N {r} kops");
    // M = 3 < N = 4 still hands every flush over
    let (_, dedicated, batches) = run_counted(
        4,
        "0-15",
        &format!("{SIMPLE}, mode = \"fixed\", flushers = 3"),
        0.8,
    );
    assert_eq!(dedicated, 0);
    assert!(batches > 0);
}

#[test]
fn inline_when_dedicated_false_restores_the_hand_off_at_m_equal_to_n() {
    let (_, dedicated, batches) = run_counted(
        4,
        "0-15",
        &format!("{SIMPLE}, mode = \"fixed\", flushers = 4, inline_when_dedicated = false"),
        0.8,
    );
    assert_eq!(dedicated, 0, "the ablation ran a flush on its caller");
    assert!(batches > 0, "no flusher executed a batch");
}

#[test]
fn the_search_passing_through_m_equal_to_n_keeps_every_flush() {
    // N = 5 on 16 CPUs: the search probes P1 = 4 (queued) and P2 = 5 = N
    // (on the callers), so requests queued at M = 4 are left when M becomes
    // N; the threads drain them before their next flush and fences wait for
    // them; measured from the start, so both probes are in the window
    let w = "pattern = \"pmemkv-arena\", value_bytes = 256, compute_ns = 1000.0, mode = \"ribbon\", probe_us = 20, interval_us = 100";
    let (m, dedicated, batches) = run_counted_from(0.0, 5, "0-15", w, 0.5);
    assert!(get(&m, "app.kops") > 0.0);
    assert!(dedicated > 0 && batches > 0, "{dedicated} {batches}");
}

#[test]
fn inline_when_dedicated_false_is_refused_for_eager() {
    let e = run_on(
        "thesis",
        1,
        "0",
        "pattern = \"pmemkv\", inline_when_dedicated = false",
        0.1,
    )
    .unwrap_err();
    assert!(e.to_string().contains("inline_when_dedicated"), "{e}");
}

#[test]
fn interior_probes_selects_the_search_and_a_count_above_eight_is_refused() {
    let w = |n: u32| {
        format!("pattern = \"pmemkv\", value_bytes = 256, mode = \"ribbon\", probe_us = 20, interval_us = 100, interior_probes = {n}")
    };
    let e = run_on("thesis", 2, "0-7", &w(9), 0.1).unwrap_err();
    assert!(e.to_string().contains("interior_probes"), "{e}");
    // 0 (the thesis's four-point search) and the default both run and
    // end within the points' range
    for n in [0, 3] {
        let m = run(2, "0-7", &w(n), 0.6);
        let f = get(&m, "app.flushers_end");
        assert!((1.0..=8.0).contains(&f), "interior_probes = {n}: M = {f}");
    }
}
