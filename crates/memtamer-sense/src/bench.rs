//! `memtamer bench sense`: attribution throughput with warm caches.

use std::fmt::Write as _;
use std::time::Instant;

use crate::attribute::{Attributor, MAX_CACHED_PROCESSES};
use crate::mounts::PmClassifier;
use crate::perf::Sample;

/// Processes and regions per process in the synthetic workload.
const PROCS: u32 = 64;
const REGIONS: u64 = 40;
const REGION_BYTES: u64 = 1 << 24;

/// Runs `n` synthetic samples through an attributor backed by a fake /proc
/// of 64 processes with 40 mappings each (a quarter of them PM) and reports
/// samples per second on one core, after a warm-up pass fills the caches.
pub fn run(n: usize) -> Result<String, String> {
    let root = std::env::temp_dir().join(format!("memtamer-bench-proc-{}", std::process::id()));
    for pid in 1..=PROCS {
        let dir = root.join(pid.to_string());
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut maps = String::new();
        for r in 0..REGIONS {
            let start = 0x7f00_0000_0000 + r * REGION_BYTES * 2;
            let path = if r % 4 == 0 {
                format!("/dev/shm/pm-{pid}-{r}")
            } else {
                format!("/usr/lib/lib{r}.so")
            };
            let _ = writeln!(
                maps,
                "{start:x}-{:x} rw-s 00000000 00:1a {r} {path}",
                start + REGION_BYTES
            );
        }
        std::fs::write(dir.join("maps"), maps).map_err(|e| e.to_string())?;
    }
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let samples: Vec<Sample> = (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let pid = (x % u64::from(PROCS)) as u32 + 1;
            let region = (x >> 16) % REGIONS;
            let addr = 0x7f00_0000_0000 + region * REGION_BYTES * 2 + (x >> 32) % REGION_BYTES;
            Sample {
                pid,
                tid: pid + ((x >> 8) % 4) as u32,
                addr,
                period: 9973,
                ..Default::default()
            }
        })
        .collect();
    let mut a = Attributor::with_root(PmClassifier::new("", &["/dev/shm/pm-".into()]), &root);
    for s in samples.iter().take(10_000) {
        a.ingest(s);
    }
    let _ = a.take_window();
    let t0 = Instant::now();
    for s in &samples {
        a.ingest(s);
    }
    let secs = t0.elapsed().as_secs_f64();
    let w = a.take_window();
    let _ = std::fs::remove_dir_all(&root);
    let pm: u64 = w.threads.values().map(|t| t.samples).sum();
    let rate = n as f64 / secs;
    Ok(format!(
        "attribution: {:.2} M samples/s on one core ({n} samples, {pm} on PM, {} not PM; warm caches; target >= 0.5 M/s = {:.1}x)\n\
         memory bound: maps of at most {MAX_CACHED_PROCESSES} processes cached (least recently used dropped); tallies are per window\n",
        rate / 1e6,
        w.unattributed.not_pm.samples,
        rate / 5e5
    ))
}
