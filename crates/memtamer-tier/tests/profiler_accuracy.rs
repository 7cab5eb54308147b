//! The PMU-free profiler against ground truth: every object with at least
//! 5% of a phase's visits gets its share estimated within ±10% (relative).

use memtamer_tier::synthetic::{run, standard_patterns};
use memtamer_tier::{SlowTier, TierConfig, TierRuntime};

#[test]
fn shares_within_ten_percent() {
    let rt = TierRuntime::new(TierConfig::new(1 << 20, SlowTier::File("/dev/shm".into())).unwrap())
        .unwrap();
    let mut worst: f64 = 0.0;
    for pat in standard_patterns() {
        let rows = run(&rt, &pat, 42).unwrap();
        assert_eq!(rows.len(), pat.objects.len() * pat.phases.len());
        for r in &rows {
            println!(
                "{:<11} ph{} {:<7} true {:.3} est {:.3} err {:>5.1}% faults {}",
                pat.name,
                r.phase,
                r.object,
                r.true_share,
                r.est_share,
                100.0 * r.rel_error(),
                r.faults
            );
            assert!(
                r.faults > 0 || r.true_share == 0.0,
                "{} {}: no samples",
                pat.name,
                r.object
            );
            if r.true_share >= 0.05 {
                worst = worst.max(r.rel_error());
                assert!(
                    r.rel_error() <= 0.10,
                    "{} phase {} {}: true {:.3} est {:.3}",
                    pat.name,
                    r.phase,
                    r.object,
                    r.true_share,
                    r.est_share
                );
            }
        }
    }
    println!("worst relative error {:.1}%", 100.0 * worst);
    assert!(rt.objects().is_empty());
}
