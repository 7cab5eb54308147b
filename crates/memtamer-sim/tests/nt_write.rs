//! Where one fenced NT writer's time goes and what sets the writer count at
//! which six interleaved Optane DIMMs saturate (issues 19, 24; docs/notebook/simulator.md,
//! "NT-store writers on six DIMMs: where the time goes").

use memtamer_sim::config::{JobSpec, Pattern, Rw, StoreKind, WorkloadSpec};
use memtamer_sim::experiment::{metrics, run_point};
use memtamer_sim::Scenario;

/// fio.gbps of `threads` writers of 256 B NT requests, each ended by a fence.
fn writers_gbps(
    threads: u32,
    pattern: Pattern,
    per_request_ns: f64,
    set: &[(&str, toml::Value)],
) -> f64 {
    let job = JobSpec {
        name: "fio".into(),
        class: Default::default(),
        threads,
        cpus: Some("0-47".into()),
        start_cpus: None,
        group: None,
        workload: WorkloadSpec::PmStream {
            rw: Rw::Write,
            pattern,
            request_bytes: 256,
            store: StoreKind::Nt,
            per_request_ns,
            gated: true,
            fence_reads: true,
            region: "pm".into(),
        },
    };
    let mut s = Scenario::with_jobs("ntwrite", "thesis", vec![job]);
    s.duration_ms = 1.0;
    s.warmup_ms = 0.3;
    for (k, v) in set {
        s.platform_set.insert((*k).into(), v.clone());
    }
    let (p, r) = run_point(&s, None).unwrap();
    let g = metrics(&s, &p, &r)["fio.gbps"];
    eprintln!("{threads} writers {pattern:?} per_request_ns={per_request_ns} {set:?}: {g:.3} GB/s");
    g
}

#[test]
fn one_fenced_request_completes_between_its_fixed_latencies_and_the_published_bound() {
    // media unconstrained, so only the core-side path is left
    let g = writers_gbps(
        1,
        Pattern::Seq,
        0.0,
        &[("pm.media_write_gbps", toml::Value::Float(20.0))],
    );
    let ns = 256.0 / g;
    // core -> CHA -> iMC 30 ns + 4 DDR-T bursts of 3 ns + completion 20 ns
    let fixed = 25.0 + 5.0 + 4.0 * 64.0 / 21.33 + 20.0;
    // four fenced writers saturate 13.9 GB/s (Izraelevitz et al., Yang et al.)
    // only if one request + fence takes at most 4 x 256 B / 13.9 GB/s
    let bound = 4.0 * 256.0 / 13.9;
    assert!(
        ns >= fixed && ns <= bound,
        "{ns} ns not in [{fixed}, {bound}]"
    );
}

#[test]
fn per_request_software_moves_the_saturating_writer_count_by_littles_law() {
    // with no software per request 4 writers are near the six DIMMs' 13.8 GB/s
    let lattester = writers_gbps(4, Pattern::Seq, 0.0, &[]);
    assert!(lattester > 0.8 * 13.8, "{lattester}");
    // with fio's 150 ns each request takes ~3x as long, so 4 writers move ~1/3
    let fio = writers_gbps(4, Pattern::Seq, 150.0, &[]);
    assert!(fio < 0.45 * lattester, "{fio} vs {lattester}");
    // and it takes ~3x the writers to come near the same bandwidth
    let fio12 = writers_gbps(12, Pattern::Seq, 150.0, &[]);
    assert!(fio12 > 2.0 * fio, "{fio12} vs {fio}");
}

#[test]
fn the_fall_past_the_peak_comes_from_media_partition_conflicts() {
    let peak = writers_gbps(6, Pattern::Seq, 0.0, &[]);
    let many = writers_gbps(24, Pattern::Seq, 0.0, &[]);
    assert!(many < 0.9 * peak, "{many} vs {peak}");
    // one media server: the same queues, no partitions to collide on
    let single = writers_gbps(
        24,
        Pattern::Seq,
        0.0,
        &[("pm.media_partitions", toml::Value::Integer(1))],
    );
    assert!(single > 0.95 * 13.8, "{single}");
}
