//! Measures what checkpoints buy and cost (thesis §5.5 "Checkpointing"):
//! recovery time of the full scan against the checkpoint path on one large
//! pool, a checkpoint's pause, and update throughput with a checkpointer
//! running against none, all in one run on one pool (ratios, not absolute
//! claims). `cargo run --release -p memtamer-tx --example chkp_bench`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::error::{PoolError, TxError};
use crate::pool::checkpoint::CheckpointReport;
use crate::pool::{Pool, PoolOptions, RecoveryMode, RecoveryReport};

/// Bench parameters.
#[derive(Clone, Debug)]
pub struct ChkpBenchOptions {
    /// Pool file size.
    pub size: u64,
    /// Objects (40 B payload, one line each) created before the checkpoint.
    pub objects: u64,
    /// Update transactions after the checkpoint (what recovery must find
    /// in the fetched segments).
    pub updates: u64,
    /// Seconds of each throughput phase.
    pub secs: f64,
    /// Checkpoint interval of the throughput phase with a checkpointer.
    pub interval: Duration,
    /// Directory of the pool file.
    pub dir: PathBuf,
}

impl Default for ChkpBenchOptions {
    fn default() -> Self {
        ChkpBenchOptions {
            size: 1 << 30,
            objects: 1_000_000,
            updates: 100_000,
            secs: 1.0,
            interval: Duration::from_millis(100),
            dir: PathBuf::from("/dev/shm"),
        }
    }
}

/// One recovery measured.
#[derive(Clone, Debug)]
pub struct Recovery {
    /// Wall time of `Pool::open`.
    pub secs: f64,
    /// CPU time of the opening thread (recovery runs on it): on a shared
    /// host the wall time includes waiting for a core.
    pub cpu_secs: f64,
    /// What recovery reported.
    pub report: RecoveryReport,
}

/// What the bench measured.
#[derive(Clone, Debug)]
pub struct ChkpBenchReport {
    /// Data lines in the pool.
    pub data_lines: u64,
    /// Dirty-page tracking in use.
    pub tracking: String,
    /// Checkpoint right after creating the objects (their pages all dirty).
    pub first: CheckpointReport,
    /// Checkpoint after `updates` random updates.
    pub incremental: CheckpointReport,
    /// Checkpoint with nothing changed.
    pub idle: CheckpointReport,
    /// Full-scan recovery.
    pub full: Recovery,
    /// Checkpoint-path recovery of the same image.
    pub chkp: Recovery,
    /// Update transactions per second without a checkpointer, with one
    /// every `interval`, and with one plus defragmentation passes.
    pub tps: [f64; 3],
    /// Checkpoints taken during the throughput phases.
    pub chkp_count: u64,
    /// Fragmentation after the random updates.
    pub frag_before: crate::defrag::Fragmentation,
    /// One defragmentation pass of `run_checkpointer`'s size.
    pub defrag: crate::defrag::DefragReport,
    /// Its wall time.
    pub defrag_secs: f64,
}

/// Bench failure.
#[derive(Debug, thiserror::Error)]
pub enum ChkpBenchError {
    /// Pool creation or recovery failed.
    #[error(transparent)]
    Pool(#[from] PoolError),
    /// A transaction failed.
    #[error(transparent)]
    Tx(#[from] TxError),
}

/// CPU seconds of the calling thread.
fn thread_cpu() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime into a local.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

fn rnd(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

fn updates(
    pool: &Pool,
    ids: &[u32],
    seed: &mut u64,
    n: u64,
    until: Option<Instant>,
) -> Result<u64, TxError> {
    let mut done = 0;
    while done < n && until.is_none_or(|t| Instant::now() < t) {
        let id = ids[(rnd(seed) % ids.len() as u64) as usize];
        let v = done.to_le_bytes();
        pool.transaction(|tx| tx.write_at(id, 8, &v))?;
        done += 1;
    }
    Ok(done)
}

/// Runs the bench (see the module doc).
pub fn run(o: &ChkpBenchOptions) -> Result<ChkpBenchReport, ChkpBenchError> {
    let path = o
        .dir
        .join(format!("memtamer-chkp-bench-{}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let po = PoolOptions {
        size: o.size,
        force_pmem: Some(true),
        ..PoolOptions::default()
    };
    let res = (|| {
        let pool = Pool::create(&path, &po)?;
        let mut ids = Vec::with_capacity(o.objects as usize);
        for i in 0..o.objects {
            ids.push(pool.transaction(|tx| {
                let id = tx.alloc(40)?;
                tx.write_at(id, 0, &i.to_le_bytes())?;
                Ok(id)
            })?);
        }
        let first = pool.checkpoint()?;
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        updates(&pool, &ids, &mut seed, o.updates, None)?;
        let incremental = pool.checkpoint()?;
        let idle = pool.checkpoint()?;
        let frag_before = pool.fragmentation();
        let t = Instant::now();
        let defrag = pool.defrag(crate::pool::checkpoint::DEFRAG_REGIONS_PER_PASS)?;
        let defrag_secs = t.elapsed().as_secs_f64();
        // throughput without a checkpointer, with one every `interval`, and
        // with defragmentation passes after each checkpoint; A B C C B A so
        // that drift hits all alike
        let mut acc = [(0u64, 0f64); 3];
        let before = pool.checkpoint_stats().count;
        for phase in [0usize, 1, 2, 2, 1, 0] {
            pool.set_defrag(phase == 2);
            let stop = AtomicBool::new(false);
            let (n, secs) = std::thread::scope(|s| {
                if phase > 0 {
                    s.spawn(|| pool.run_checkpointer(o.interval, &stop));
                }
                let t = Instant::now();
                let until = t + Duration::from_secs_f64(o.secs / 2.0);
                let n = updates(&pool, &ids, &mut seed, u64::MAX, Some(until));
                let secs = t.elapsed().as_secs_f64();
                stop.store(true, Ordering::Relaxed);
                (n, secs)
            });
            acc[phase].0 += n?;
            acc[phase].1 += secs;
        }
        let tps = acc.map(|(n, s)| n as f64 / s.max(1e-9));
        let chkp_count = pool.checkpoint_stats().count - before;
        // the state recovery must rebuild: updates after the last checkpoint
        updates(&pool, &ids, &mut seed, o.updates, None)?;
        let tracking = format!("{:?}", pool.checkpoint_tracking());
        drop(pool);
        let open = |recovery| -> Result<Recovery, PoolError> {
            let (t, c) = (Instant::now(), thread_cpu());
            let p = Pool::open(
                &path,
                &PoolOptions {
                    recovery,
                    ..po.clone()
                },
            )?;
            let (secs, cpu_secs) = (t.elapsed().as_secs_f64(), thread_cpu() - c);
            Ok(Recovery {
                secs,
                cpu_secs,
                report: p.recovery().clone(),
            })
        };
        let full = open(RecoveryMode::FullScan)?;
        let chkp = open(RecoveryMode::Auto)?;
        Ok(ChkpBenchReport {
            data_lines: full.report.scanned_lines,
            tracking,
            first,
            incremental,
            idle,
            full,
            chkp,
            tps,
            chkp_count,
            frag_before,
            defrag,
            defrag_secs,
        })
    })();
    let _ = std::fs::remove_file(&path);
    res
}

impl std::fmt::Display for ChkpBenchReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = |ns: u64| ns as f64 / 1e6;
        writeln!(f, "dirty-page tracking: {}", self.tracking)?;
        writeln!(
            f,
            "| checkpoint | pause ms | dirty pages | CHKP lines compared | written |"
        )?;
        writeln!(f, "|---|---|---|---|---|")?;
        for (what, c) in [
            ("after creating the objects", &self.first),
            ("after the updates", &self.incremental),
            ("nothing changed", &self.idle),
        ] {
            writeln!(
                f,
                "| {what} | {:.2} | {} | {} | {} |",
                ms(c.pause_ns),
                c.dirty_pages,
                c.lines_compared,
                c.lines_written
            )?;
        }
        writeln!(
            f,
            "| recovery | open s (wall) | CPU s | lines scanned | objects | checkpoint |"
        )?;
        writeln!(f, "|---|---|---|---|---|---|")?;
        for (what, r) in [
            ("full scan", &self.full),
            ("checkpoint + fetched segments", &self.chkp),
        ] {
            writeln!(
                f,
                "| {what} | {:.3} | {:.3} | {} | {} | epoch {} |",
                r.secs,
                r.cpu_secs,
                r.report.scanned_lines,
                r.report.objects,
                r.report.checkpoint_epoch
            )?;
        }
        writeln!(
            f,
            "recovery: checkpoint path {:.1}x faster than the full scan (CPU time {:.1}x)",
            self.full.secs / self.chkp.secs.max(1e-9),
            self.full.cpu_secs / self.chkp.cpu_secs.max(1e-9)
        )?;
        writeln!(
            f,
            "fragmentation after random updates: {:.1}% free in live 4 KB regions, {} of {} regions underutilised; one pass ({} regions max): {} objects moved in {:.1} ms",
            self.frag_before.rate * 100.0,
            self.frag_before.sparse,
            self.frag_before.regions,
            crate::pool::checkpoint::DEFRAG_REGIONS_PER_PASS,
            self.defrag.objects_moved,
            self.defrag_secs * 1e3
        )?;
        let [a, b, c] = self.tps;
        writeln!(
            f,
            "update tx/s: {a:.0} without a checkpointer, {b:.0} with one ({:.3}x), {c:.0} with one + defragmentation ({:.3}x); {} checkpoints",
            b / a.max(1e-9),
            c / a.max(1e-9),
            self.chkp_count
        )
    }
}
