//! The in-memory coherence directory (`uncore.directory = "memory"`,
//! engine/directory.rs): a read from another socket makes the home write the
//! line's directory state; local reads and `none` (the ablation) do not.

use memtamer_sim::config::parse_value;
use memtamer_sim::experiment::{load_scenario, metrics, run_point};
use std::collections::BTreeMap;

/// PM writes and reads entering socket 0's WPQs and RPQs (summed over its
/// channels) with 2 fio-like temporal-store writers (RFO + clwb) on
/// `fio_node` writing socket 0's PM (the ahn-fig2a layout).
fn pm_queue_inserts(fio_node: &str, directory: &str) -> (f64, f64) {
    let s = load_scenario("ahn-fig2a").unwrap();
    let s = s
        .with_overrides(&[
            ("job.fio.threads".into(), toml::Value::Integer(2)),
            ("job.fio.workload.store".into(), parse_value("temporal")),
            ("fio_node".into(), parse_value(fio_node)),
            ("platform.uncore.directory".into(), parse_value(directory)),
            ("duration_ms".into(), toml::Value::Float(0.5)),
            ("warmup_ms".into(), toml::Value::Float(0.1)),
        ])
        .unwrap();
    let (p, r) = run_point(&s, None).unwrap();
    let m: BTreeMap<String, f64> = metrics(&s, &p, &r);
    let sum = |k: &str| -> f64 {
        m.iter()
            .filter(|(name, _)| name.starts_with("chan.") && name.ends_with(k))
            .map(|(_, v)| v)
            .sum()
    };
    (sum(".pmm_wpq_inserts"), sum(".pmm_rpq_inserts"))
}

#[test]
fn remote_rfos_cost_the_home_one_directory_write_each() {
    // remote: each RFO's line is written twice at home (directory state,
    // then the clwb write-back); local and the ablation: once
    let (w, r) = pm_queue_inserts("remote", "memory");
    assert!(r > 1000.0, "{r}");
    assert!(
        (w / r - 2.0).abs() < 0.05,
        "remote, memory: {w} writes / {r} reads"
    );
    for (node, dir) in [("remote", "none"), ("local", "memory"), ("local", "none")] {
        let (w, r) = pm_queue_inserts(node, dir);
        assert!(r > 1000.0, "{node} {dir}: {r}");
        assert!(
            (w / r - 1.0).abs() < 0.05,
            "{node}, {dir}: {w} writes / {r} reads"
        );
    }
}

#[test]
fn remote_nt_writes_need_no_directory_write() {
    // a non-temporal store reads nothing: the written line carries its state
    let s = load_scenario("ahn-fig2a").unwrap();
    let run = |dir: &str| {
        let s = s
            .with_overrides(&[
                ("job.fio.threads".into(), toml::Value::Integer(2)),
                ("fio_node".into(), parse_value("remote")),
                ("platform.uncore.directory".into(), parse_value(dir)),
                ("duration_ms".into(), toml::Value::Float(0.3)),
                ("warmup_ms".into(), toml::Value::Float(0.1)),
            ])
            .unwrap();
        let (p, r) = run_point(&s, None).unwrap();
        metrics(&s, &p, &r)
    };
    assert_eq!(run("memory"), run("none"));
}

#[test]
fn an_unknown_directory_is_rejected_naming_the_choices() {
    let s = load_scenario("ahn-fig2a").unwrap();
    let err = s
        .with_overrides(&[("platform.uncore.directory".into(), parse_value("cache"))])
        .and_then(|s| run_point(&s, None).map(|_| ()))
        .map(|_| ())
        .unwrap_err();
    let msg = format!("{err}");
    assert!(
        msg.contains("`cache`") && msg.contains("`none`") && msg.contains("`memory`"),
        "{msg}"
    );
}
