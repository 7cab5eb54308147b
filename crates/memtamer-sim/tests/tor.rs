//! The caching agents' tables of requests (`uncore.tor_entries_per_cha`,
//! engine/tor.rs): one pool per socket that every request holds until it
//! completes, whichever memory controller it goes to. It couples PATS's
//! D-iMC controllers only once the PM readers' outstanding lines fill it;
//! 0 (the platforms' setting) is the model without it.

use memtamer_sim::experiment::{load_scenario, metrics, run_point};

/// memcpy GB/s on PATS D-iMC with `readers` PM readers and `tor` entries
/// per CHA (16 CHAs).
fn dimc_memcpy(readers: i64, tor: i64) -> f64 {
    let s = load_scenario("pats-fig5-dimc").unwrap();
    let s = s
        .with_overrides(&[
            ("job.fio.threads".into(), toml::Value::Integer(readers)),
            (
                "platform.uncore.tor_entries_per_cha".into(),
                toml::Value::Integer(tor),
            ),
            ("duration_ms".into(), toml::Value::Float(0.5)),
            ("warmup_ms".into(), toml::Value::Float(0.2)),
        ])
        .unwrap();
    let (p, r) = run_point(&s, None).unwrap();
    let g = metrics(&s, &p, &r)["memcpy.gbps"];
    eprintln!("D-iMC, {readers} readers, TOR {tor}/CHA: memcpy {g:.3} GB/s");
    g
}

#[test]
fn a_small_tor_lets_pm_readers_on_the_other_imc_slow_dram() {
    let alone = dimc_memcpy(0, 0);
    // 14 readers x 16 streamer slots = 224 PM lines > 8 x 16 entries
    let small = dimc_memcpy(14, 8);
    assert!(small < 0.5 * alone, "{alone} {small}");
    // without the TOR, or with one larger than what the cores can issue
    // (14 x 16 + memcpy's 10 < 20 x 16), the controllers stay separate
    for tor in [0, 20] {
        let g = dimc_memcpy(14, tor);
        assert!((g / alone - 1.0).abs() < 0.01, "TOR {tor}: {alone} {g}");
    }
    // a TOR that holds memcpy alone changes nothing without readers
    assert!((dimc_memcpy(0, 8) / alone - 1.0).abs() < 0.01);
}
