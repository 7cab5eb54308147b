//! PM reads without a fence (issue 24 item 4): a reader's per-thread
//! bandwidth follows from its core's fill buffers (random loads) and L2
//! prefetch slots (sequential streams), not from one request's size.

use memtamer_sim::config::{JobSpec, Pattern, Rw, StoreKind, WorkloadSpec};
use memtamer_sim::experiment::{metrics, run_point};
use memtamer_sim::Scenario;

fn reader_gbps(pattern: Pattern, fence_reads: bool, set: Option<(&str, i64)>) -> f64 {
    let job = JobSpec {
        name: "fio".into(),
        class: Default::default(),
        threads: 1,
        cpus: Some("1".into()),
        start_cpus: None,
        group: None,
        workload: WorkloadSpec::PmStream {
            rw: Rw::Read,
            pattern,
            request_bytes: 256,
            store: StoreKind::Nt,
            per_request_ns: 0.0,
            gated: true,
            fence_reads,
            region: "pm".into(),
        },
    };
    let mut s = Scenario::with_jobs("reads", "pats", vec![job]);
    s.duration_ms = 0.5;
    s.warmup_ms = 0.1;
    if let Some((k, v)) = set {
        s.platform_set.insert(k.into(), toml::Value::Integer(v));
    }
    let (p, r) = run_point(&s, None).unwrap();
    let g = metrics(&s, &p, &r)["fio.gbps"];
    eprintln!("reader {pattern:?} 256 B fence_reads={fence_reads} {set:?}: {g:.3} GB/s");
    g
}

#[test]
fn fenced_random_reads_are_bound_by_the_request_not_the_fill_buffers() {
    let fenced = reader_gbps(Pattern::Rand, true, None);
    let more_lfb = reader_gbps(Pattern::Rand, true, Some(("cpu.fill_buffers", 20)));
    // 4 lines per request < 10 fill buffers: more buffers change nothing
    assert!(
        (more_lfb / fenced - 1.0).abs() < 0.05,
        "{fenced} {more_lfb}"
    );
    let free = reader_gbps(Pattern::Rand, false, None);
    // without the fence, 10 fill buffers instead of 4 lines are in flight
    assert!(free / fenced > 2.0, "{fenced} {free}");
}

#[test]
fn unfenced_random_reads_follow_the_fill_buffers() {
    let ten = reader_gbps(Pattern::Rand, false, None);
    let five = reader_gbps(Pattern::Rand, false, Some(("cpu.fill_buffers", 5)));
    let r = ten / five;
    assert!(
        r > 1.7 && r < 2.2,
        "10 vs 5 fill buffers: {ten} / {five} = {r}"
    );
}

#[test]
fn unfenced_sequential_reads_follow_the_prefetch_slots() {
    let sixteen = reader_gbps(Pattern::Seq, false, None);
    let eight = reader_gbps(Pattern::Seq, false, Some(("cpu.l2_prefetch_slots", 8)));
    let r = sixteen / eight;
    assert!(r > 1.5, "16 vs 8 prefetch slots: {sixteen} / {eight} = {r}");
    // and fill buffers do not bound a prefetched stream
    let lfb = reader_gbps(Pattern::Seq, false, Some(("cpu.fill_buffers", 5)));
    assert!((lfb / sixteen - 1.0).abs() < 0.05, "{sixteen} {lfb}");
}
