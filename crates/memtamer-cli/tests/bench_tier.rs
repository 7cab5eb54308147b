//! `memtamer bench tier` runs the CG kernel both ways, verifies it and
//! prints both placements; bad options exit non-zero with a reason.

mod common;
use common::{code, memtamer, stderr, stdout};

#[test]
fn bench_tier_prints_both_placements_and_verifies() {
    let out = memtamer(&[
        "bench", "tier", "--nx", "24", "--ny", "24", "--iters", "20", "--rounds", "1",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let s = stdout(&out);
    assert!(s.lines().any(|l| l.starts_with("dram ")), "{s}");
    assert!(s.lines().any(|l| l.starts_with("slow ")), "{s}");
    assert!(s.contains("bit for bit"), "{s}");
}

#[test]
fn bench_tier_refuses_zero_rounds() {
    let out = memtamer(&["bench", "tier", "--rounds", "0"]);
    assert_ne!(code(&out), 0);
    assert!(stderr(&out).contains("rounds"), "{}", stderr(&out));
}
