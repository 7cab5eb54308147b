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
    std::fs::create_dir_all(&root).map_err(|e| format!("{}: {e}", root.display()))?;
    // the sampled instructions: 256 stores of 8 bytes (mov [rdi], rax)
    let bin = root.join("app");
    let code: Vec<u8> = std::iter::repeat_n([0x48u8, 0x89, 0x07, 0x90], 256)
        .flatten()
        .collect();
    std::fs::write(&bin, &code).map_err(|e| e.to_string())?;
    for pid in 1..=PROCS {
        let dir = root.join(pid.to_string());
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut maps = format!("400000-401000 r-xp 00000000 08:01 999 {}\n", bin.display());
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
                ip: 0x400000 + ((x >> 3) % 256) * 4,
                pid,
                tid: pid + ((x >> 8) % 4) as u32,
                addr,
                period: 9973,
                ..Default::default()
            }
        })
        .collect();
    let time = |mut a: Attributor| -> (f64, crate::attribute::Window) {
        for s in samples.iter().take(10_000) {
            a.ingest(s);
        }
        let _ = a.take_window();
        let t0 = Instant::now();
        for s in &samples {
            a.ingest(s);
        }
        let secs = t0.elapsed().as_secs_f64();
        (n as f64 / secs, a.take_window())
    };
    let classifier = || PmClassifier::new("", &["/dev/shm/pm-".into()]);
    let (rate, w) = time(Attributor::with_root(classifier(), &root));
    let decoder = crate::decode::Decoder::new()?;
    let (rate_decoded, wd) = time(Attributor::with_root(classifier(), &root).with_decoder(decoder));
    let sized: u64 = wd.threads.values().map(|t| t.sized).sum();
    let _ = std::fs::remove_dir_all(&root);
    let pm: u64 = w.threads.values().map(|t| t.samples).sum();
    Ok(format!(
        "attribution: {:.2} M samples/s on one core ({n} samples, {pm} on PM, {} not PM; warm caches; target >= 0.5 M/s = {:.1}x)\n\
         with store-size decoding: {:.2} M samples/s ({sized} PM samples sized; {:.1}x the target)\n\
         memory bound: maps of at most {MAX_CACHED_PROCESSES} processes cached (least recently used dropped); \
         decoded instructions at most 65536, open files at most 64; tallies are per window\n",
        rate / 1e6,
        w.unattributed.not_pm.samples,
        rate / 5e5,
        rate_decoded / 1e6,
        rate_decoded / 5e5
    ))
}
