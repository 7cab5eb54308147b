//! `memory.bus_scheduler = "drain-blocks-reads"`: the watermark write drain
//! read strictly, reads waiting out every drain (docs/notebook/simulator.md, "Write
//! drain that blocks reads"; issues 19, 24).

use memtamer_sim::config::{JobSpec, Pattern, Rw, StoreKind, WorkloadSpec};
use memtamer_sim::experiment::{metrics, run_point};
use memtamer_sim::Scenario;

fn stream(name: &str, threads: u32, cpus: &str, rw: Rw) -> JobSpec {
    JobSpec {
        name: name.into(),
        class: Default::default(),
        threads,
        cpus: Some(cpus.into()),
        start_cpus: None,
        group: None,
        workload: WorkloadSpec::PmStream {
            rw,
            pattern: Pattern::Rand,
            request_bytes: 256,
            store: StoreKind::Nt,
            per_request_ns: 0.0,
            gated: true,
            fence_reads: true,
            region: "pm".into(),
        },
    }
}

/// `reader.gbps` of 4 PM readers beside `writers` NT writers on the thesis
/// platform, under `scheduler`.
fn reader_gbps(writers: u32, scheduler: &str) -> f64 {
    let mut jobs = vec![stream("reader", 4, "0-3", Rw::Read)];
    if writers > 0 {
        jobs.push(stream("writer", writers, "4-47", Rw::Write));
    }
    let mut s = Scenario::with_jobs("drain", "thesis", jobs);
    s.duration_ms = 0.6;
    s.warmup_ms = 0.2;
    s.platform_set.insert(
        "memory.bus_scheduler".into(),
        toml::Value::String(scheduler.into()),
    );
    let (p, r) = run_point(&s, None).unwrap();
    let g = metrics(&s, &p, &r)["reader.gbps"];
    eprintln!("{writers} writers, {scheduler}: reader {g:.3} GB/s");
    g
}

#[test]
fn without_writes_there_is_no_drain_and_nothing_changes() {
    let a = reader_gbps(0, "watermark");
    let b = reader_gbps(0, "drain-blocks-reads");
    assert_eq!(a.to_bits(), b.to_bits());
}

#[test]
fn readers_wait_out_the_drains_of_many_writers() {
    let a = reader_gbps(16, "watermark");
    let b = reader_gbps(16, "drain-blocks-reads");
    assert!(b < 0.9 * a, "strict drain {b:.3} vs watermark {a:.3} GB/s");
}
