//! The profiler-accuracy figure of docs/unimem.md: per pattern, phase and
//! object, the true access share against the protection-fault estimate,
//! over several seeds (mean and worst relative error).
//!
//! `cargo run --release -p memtamer-tier --example tier_profile_accuracy [seeds]`

use memtamer_tier::synthetic::{run, standard_patterns};
use memtamer_tier::{SlowTier, TierConfig, TierRuntime};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let seeds: u64 = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(3);
    let rt = TierRuntime::new(TierConfig::new(1 << 20, SlowTier::File("/dev/shm".into()))?)?;
    println!("pattern     phase object  true   est(mean)  err mean  err worst  faults(mean)   [{seeds} seeds]");
    let mut worst_all: f64 = 0.0;
    let t0 = std::time::Instant::now();
    for pat in standard_patterns() {
        let runs: Vec<_> = (0..seeds)
            .map(|s| run(&rt, &pat, 1000 + s))
            .collect::<Result<_, _>>()?;
        for i in 0..runs[0].len() {
            let rows: Vec<_> = runs.iter().map(|r| &r[i]).collect();
            let n = rows.len() as f64;
            let est = rows.iter().map(|r| r.est_share).sum::<f64>() / n;
            let err_mean = rows.iter().map(|r| r.rel_error()).sum::<f64>() / n;
            let err_worst = rows.iter().map(|r| r.rel_error()).fold(0.0, f64::max);
            let faults = rows.iter().map(|r| r.faults).sum::<u64>() as f64 / n;
            worst_all = worst_all.max(err_worst);
            let r = rows[0];
            let bar = "#".repeat((r.true_share * 40.0).round() as usize);
            println!(
                "{:<11} {:>5} {:<7} {:.3}  {:.3}     {:>5.1}%    {:>5.1}%    {:>8.0}   {bar}",
                pat.name,
                r.phase,
                r.object,
                r.true_share,
                est,
                100.0 * err_mean,
                100.0 * err_worst,
                faults
            );
        }
    }
    println!(
        "worst relative error over all rows and seeds: {:.1}% (target 10%); {:.1} s",
        100.0 * worst_all,
        t0.elapsed().as_secs_f64()
    );
    Ok(())
}
