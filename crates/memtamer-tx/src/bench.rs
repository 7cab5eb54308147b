//! The ArchTM vs libpmemobj comparison (thesis §5.5 microbenchmarks): hash
//! table and red-black tree, 8 B keys / 16 B values, x% updates, 1..N
//! threads, both engines on pools in the same directory in the same run,
//! ratios printed. The CLI wires it as `memtamer bench tx`.

use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::error::TxError;
use crate::kv::{Engine, HashTable, TxOps, Val};
use crate::pool::{Pool, PoolOptions, PoolStats};
use crate::rbtree::RbTree;

/// Which structure a cell runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Structure {
    /// Chained hash table.
    Hash,
    /// Red-black tree.
    RbTree,
    /// TPC-C new-order-shaped transactions (`tpcc` module).
    TpccNewOrder,
    /// TATP's standard mix, 80% read-only (`tatp` module).
    Tatp,
}

/// Bench parameters (defaults: the thesis's, scaled to a small machine).
#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// Directory for the pools (PM mount, /dev/shm, any directory).
    pub dir: PathBuf,
    /// Thread counts.
    pub threads: Vec<usize>,
    /// Update percentages.
    pub updates: Vec<u32>,
    /// Seconds per cell.
    pub secs: f64,
    /// Hash buckets (thesis: 10K).
    pub buckets: usize,
    /// Pairs preloaded into the hash table (thesis: 100K).
    pub hash_preload: u64,
    /// Pairs preloaded into the tree (thesis: 1M).
    pub rb_preload: u64,
    /// TPC-C items (and stock rows); the specification has 100,000.
    pub tpcc_items: u64,
    /// TATP subscribers; the specification's smallest database has 100,000.
    pub tatp_subscribers: u64,
    /// Structures to run.
    pub structures: Vec<Structure>,
    /// Also run PMDK libpmemobj (when linked).
    pub pmdk: bool,
    /// Cache-flush persistence on non-DAX files (sets PMEM_IS_PMEM_FORCE
    /// for libpmemobj too, so both engines persist the same way).
    pub force_pmem: bool,
    /// Fault every page of both pools in at creation (ArchTM
    /// `Pool::prefault`, libpmemobj `prefault.at_create`), so first-touch
    /// page faults on fresh pools stay out of the measured cells.
    pub prefault: bool,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            dir: PathBuf::from("/dev/shm"),
            threads: vec![1, 2],
            updates: vec![5, 50, 80],
            secs: 1.0,
            buckets: 10_000,
            hash_preload: 100_000,
            rb_preload: 1_000_000,
            tpcc_items: 100_000,
            tatp_subscribers: 100_000,
            structures: vec![
                Structure::Hash,
                Structure::RbTree,
                Structure::TpccNewOrder,
                Structure::Tatp,
            ],
            pmdk: true,
            force_pmem: true,
            prefault: true,
        }
    }
}

/// Why the bench could not run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// ArchTM pool problem.
    #[error(transparent)]
    Pool(#[from] crate::error::PoolError),
    /// A transaction failed.
    #[error("{structure:?} on {engine}: {source}")]
    Tx {
        /// Structure.
        structure: Structure,
        /// Engine.
        engine: &'static str,
        /// The error.
        source: TxError,
    },
    /// libpmemobj failed.
    #[error("{0}")]
    Pmdk(String),
    /// Bad options.
    #[error("invalid bench options: {0}")]
    Options(String),
}

/// One measured cell.
#[derive(Clone, Debug)]
pub struct Cell {
    /// Structure.
    pub structure: Structure,
    /// Engine name.
    pub engine: &'static str,
    /// Threads.
    pub threads: usize,
    /// Update percentage.
    pub updates: u32,
    /// Operations (= transactions) completed, rolled back ones included.
    pub ops: u64,
    /// Transactions that rolled themselves back (TPC-C new-order's 1% on
    /// an unused item, clause 2.4.1.4), counted in `ops`.
    pub rollbacks: u64,
    /// Operations per wall-clock second (best of the repetitions).
    pub ops_per_s: f64,
    /// Operations per CPU-second the worker threads actually ran (robust
    /// on a loaded machine; a thread blocked on PMDK's lock costs nothing).
    pub ops_per_cpu_s: f64,
    /// Persistence counters over the cell: ArchTM's own; libpmemobj's
    /// from the libpmem shim when the bench runs under it (else None).
    pub persist: Option<PoolStats>,
}

/// All cells plus the memory figure.
#[derive(Clone, Debug, Default)]
pub struct BenchReport {
    /// Measured cells in run order.
    pub cells: Vec<Cell>,
    /// DRAM lookup-table bytes per object.
    pub lookup_bytes_per_object: usize,
    /// Whether libpmemobj ran.
    pub pmdk_ran: bool,
    /// Notes (missing engine etc.).
    pub notes: Vec<String>,
}

fn key_val(x: u64) -> (u64, Val) {
    let mut v = [0u8; 16];
    v[..8].copy_from_slice(&x.to_le_bytes());
    v[8..].copy_from_slice(&(!x).to_le_bytes());
    (x, v)
}

enum Ds {
    H(HashTable),
    R(RbTree),
    T(crate::tpcc::Tpcc),
    A(crate::tatp::Tatp),
}

impl Ds {
    fn put(&self, t: &mut dyn TxOps, k: u64, v: &Val) -> Result<(), TxError> {
        match self {
            Ds::H(h) => h.put(t, k, v).map(drop),
            Ds::R(r) => r.put(t, k, v).map(drop),
            Ds::T(p) => p.new_order(t, k),
            Ds::A(a) => a.run(t, crate::tatp::Kind::UpdateLocation, k),
        }
    }
    fn remove(&self, t: &mut dyn TxOps, k: u64) -> Result<(), TxError> {
        match self {
            Ds::H(h) => h.remove(t, k).map(drop),
            Ds::R(r) => r.remove(t, k).map(drop),
            Ds::T(p) => p.new_order(t, k),
            Ds::A(a) => a.run(t, crate::tatp::Kind::DeleteCallForwarding, k),
        }
    }
    fn get(&self, t: &mut dyn TxOps, k: u64) -> Result<(), TxError> {
        match self {
            Ds::H(h) => h.get(t, k).map(drop),
            Ds::R(r) => r.get(t, k).map(drop),
            Ds::T(p) => p.new_order(t, k),
            Ds::A(a) => a.run(t, crate::tatp::Kind::GetSubscriberData, k),
        }
    }
}

/// Brings a freshly preloaded pool to the state ArchTM runs in (thesis
/// §5.5: a checkpoint thread every 30 s with the online defragmenter on):
/// a preload of 100K-1M transactions spans several such passes, while the
/// measured phase lasts seconds. Without it the copy-on-write preload
/// leaves every other line of the data area a hole (about 2.5x the 4 KB
/// pages for the same live data), which costs TLB reach on every read.
fn settle(pool: &Pool) -> Result<(), TxError> {
    pool.checkpoint()?;
    // each pass packs the sparse regions it finds; bounded, as moving can
    // leave a few new sparse regions behind
    for _ in 0..4 {
        let r = pool.defrag(usize::MAX)?;
        pool.collect();
        if r.regions_moved == 0 {
            break;
        }
    }
    Ok(())
}

fn preload(e: &dyn Engine, s: Structure, o: &BenchOptions) -> Result<(Ds, u64), TxError> {
    let (ds, n) = match s {
        Structure::Hash => (Ds::H(HashTable::create(e, 0, o.buckets)?), o.hash_preload),
        Structure::RbTree => (Ds::R(RbTree::create(e, 8)?), o.rb_preload),
        Structure::TpccNewOrder => {
            return Ok((Ds::T(crate::tpcc::Tpcc::create(e, o.tpcc_items)?), u64::MAX))
        }
        Structure::Tatp => {
            return Ok((
                Ds::A(crate::tatp::Tatp::create(e, o.tatp_subscribers)?),
                u64::MAX,
            ))
        }
    };
    // even keys present, odd ones absent; inserted in a scrambled order
    let mut i = 0;
    while i < n {
        let end = (i + 256).min(n);
        e.run(true, &mut |t| {
            for j in i..end {
                let x = (crate::kv::hash(j) % n) * 2;
                let (k, v) = key_val(x);
                ds.put(t, k, &v)?;
            }
            Ok(())
        })?;
        i = end;
    }
    Ok((ds, n * 2))
}

fn thread_cpu() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: writes into a local timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// One cell's outcome.
struct CellRun {
    ops: u64,
    wall: f64,
    cpu: f64,
    /// The pool filled up and ended the window early (TPC-C grows by its
    /// inserts, so a faster machine fills any fixed pool sooner).
    full: bool,
    /// Transactions that rolled back by their own logic.
    rollbacks: u64,
}

/// Runs one cell. A full pool ends the measurement window instead of
/// failing the bench: the transactions done until then still count, over
/// the time they took.
fn cell(
    e: &dyn Engine,
    ds: &Ds,
    space: u64,
    threads: usize,
    upd: u32,
    secs: f64,
) -> Result<CellRun, TxError> {
    let stop = AtomicBool::new(false);
    let full = AtomicBool::new(false);
    let total = AtomicU64::new(0);
    let rolled = AtomicU64::new(0);
    let cpu_ns = AtomicU64::new(0);
    let start = Instant::now();
    let err = std::sync::Mutex::new(None);
    std::thread::scope(|sc| {
        for t in 0..threads {
            let (stop, total, err, cpu_ns, full) = (&stop, &total, &err, &cpu_ns, &full);
            let rolled = &rolled;
            sc.spawn(move || {
                let c0 = thread_cpu();
                let mut x = crate::kv::hash(t as u64 + 77);
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    x = crate::kv::hash(x);
                    let (k, v) = key_val(x % space.max(1));
                    let kind = (x >> 40) % 200;
                    let r = if let Ds::T(p) = ds {
                        e.run(true, &mut |tx| p.new_order(tx, x))
                    } else if let Ds::A(a) = ds {
                        let k = crate::tatp::Tatp::pick(x);
                        e.run(k.updates(), &mut |tx| a.run(tx, k, x))
                    } else if kind < u64::from(upd) * 2 {
                        if kind.is_multiple_of(2) {
                            e.run(true, &mut |tx| ds.put(tx, k, &v))
                        } else {
                            e.run(true, &mut |tx| ds.remove(tx, k))
                        }
                    } else {
                        e.run(false, &mut |tx| ds.get(tx, k))
                    };
                    match r {
                        Ok(()) => {}
                        Err(TxError::RolledBack(_)) => {
                            rolled.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(TxError::PoolFull { .. }) => {
                            full.store(true, Ordering::Relaxed);
                            stop.store(true, Ordering::Relaxed);
                            break;
                        }
                        Err(e) => {
                            *err.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                            stop.store(true, Ordering::Relaxed);
                            break;
                        }
                    }
                    n += 1;
                }
                total.fetch_add(n, Ordering::Relaxed);
                cpu_ns.fetch_add(((thread_cpu() - c0) * 1e9) as u64, Ordering::Relaxed);
            });
        }
        let deadline = start + Duration::from_secs_f64(secs);
        while !stop.load(Ordering::Relaxed) {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            std::thread::sleep((deadline - now).min(Duration::from_millis(10)));
        }
        stop.store(true, Ordering::Relaxed);
    });
    if let Some(e) = err.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(e);
    }
    Ok(CellRun {
        ops: total.load(Ordering::Relaxed),
        wall: start.elapsed().as_secs_f64(),
        cpu: cpu_ns.load(Ordering::Relaxed) as f64 * 1e-9,
        full: full.load(Ordering::Relaxed),
        rollbacks: rolled.load(Ordering::Relaxed),
    })
}

fn stats_delta(a: &PoolStats, b: &PoolStats) -> PoolStats {
    PoolStats {
        commits: b.commits - a.commits,
        ro_commits: b.ro_commits - a.ro_commits,
        aborts: b.aborts - a.aborts,
        flushed_lines: b.flushed_lines - a.flushed_lines,
        fences: b.fences - a.fences,
        persisted_bytes: b.persisted_bytes - a.persisted_bytes,
        bytes_in_big_runs: b.bytes_in_big_runs - a.bytes_in_big_runs,
        flush_calls: b.flush_calls - a.flush_calls,
        call_bytes: b.call_bytes - a.call_bytes,
        call_big_bytes: b.call_big_bytes - a.call_big_bytes,
    }
}

/// Where a side's persistence counters come from.
enum Counts<'a> {
    /// ArchTM's own counters.
    Pool(&'a Pool),
    /// The libpmem shim's counting mode (libpmemobj; only libpmemobj's
    /// side uses it, which exists when it is linked).
    #[cfg(has_pmdk)]
    Shim,
    /// Not measured (libpmemobj's side without the shim).
    #[cfg(has_pmdk)]
    None,
}

impl Counts<'_> {
    fn read(&self) -> Option<PoolStats> {
        match self {
            Counts::Pool(p) => Some(p.stats()),
            #[cfg(has_pmdk)]
            Counts::Shim => crate::shim_counts::snapshot()
                .map(|c| crate::shim_counts::delta(&Default::default(), &c)),
            #[cfg(has_pmdk)]
            Counts::None => None,
        }
    }
}

/// One engine of a structure, preloaded.
struct Side<'a> {
    name: &'static str,
    engine: &'a dyn Engine,
    counts: Counts<'a>,
    ds: Ds,
    space: u64,
}

fn measure(
    sides: &[Side<'_>],
    s: Structure,
    o: &BenchOptions,
    rep: &mut BenchReport,
) -> Result<(), BenchError> {
    // Alternate the engines (A B B A) and keep each one's best: the
    // machine's background load then hits both alike.
    let order: Vec<usize> = match sides.len() {
        2 => vec![0, 1, 1, 0],
        n => (0..n).flat_map(|i| [i, i]).collect(),
    };
    let updates = match s {
        Structure::TpccNewOrder => vec![100],
        Structure::Tatp => vec![20],
        _ => o.updates.clone(),
    };
    let mut full = vec![false; sides.len()];
    for &u in &updates {
        for &t in &o.threads {
            let mut best: Vec<Option<Cell>> = vec![None; sides.len()];
            for &i in &order {
                let sd = &sides[i];
                if full[i] {
                    continue;
                }
                let before = sd.counts.read();
                let CellRun {
                    ops,
                    wall,
                    cpu,
                    full: filled,
                    rollbacks,
                } = cell(sd.engine, &sd.ds, sd.space, t, u, o.secs).map_err(|source| {
                    BenchError::Tx {
                        structure: s,
                        engine: sd.name,
                        source,
                    }
                })?;
                if filled {
                    full[i] = true;
                    rep.notes.push(format!(
                        "{s:?} on {}: the pool filled after {wall:.2} s of the {t}-thread cell (its inserts grow the database); that cell counts the {ops} transactions done until then, later cells of {} on {s:?} are skipped",
                        sd.name, sd.name
                    ));
                }
                let persist = match (before, sd.counts.read()) {
                    (Some(b), Some(a)) => Some(stats_delta(&b, &a)),
                    _ => None,
                };
                let c = Cell {
                    structure: s,
                    engine: sd.name,
                    threads: t,
                    updates: u,
                    ops,
                    rollbacks,
                    ops_per_s: ops as f64 / wall,
                    ops_per_cpu_s: ops as f64 / cpu.max(1e-9),
                    persist,
                };
                let slot = &mut best[i];
                match slot {
                    Some(b) => {
                        b.ops_per_s = b.ops_per_s.max(c.ops_per_s);
                        b.ops_per_cpu_s = b.ops_per_cpu_s.max(c.ops_per_cpu_s);
                        b.ops += c.ops;
                        b.rollbacks += c.rollbacks;
                        if let (Some(x), Some(y)) = (&mut b.persist, &c.persist) {
                            *x = sum_stats(x, y);
                        }
                    }
                    None => *slot = Some(c),
                }
            }
            rep.cells.extend(best.into_iter().flatten());
        }
    }
    Ok(())
}

fn sum_stats(a: &PoolStats, b: &PoolStats) -> PoolStats {
    PoolStats {
        commits: a.commits + b.commits,
        ro_commits: a.ro_commits + b.ro_commits,
        aborts: a.aborts + b.aborts,
        flushed_lines: a.flushed_lines + b.flushed_lines,
        fences: a.fences + b.fences,
        persisted_bytes: a.persisted_bytes + b.persisted_bytes,
        bytes_in_big_runs: a.bytes_in_big_runs + b.bytes_in_big_runs,
        flush_calls: a.flush_calls + b.flush_calls,
        call_bytes: a.call_bytes + b.call_bytes,
        call_big_bytes: a.call_big_bytes + b.call_big_bytes,
    }
}

/// Longest cell `secs` allows: an hour. Beyond it the TPC-C and TATP pools,
/// sized from `secs`, would not fit any machine (and a NaN, infinite or
/// huge value panicked in `Duration::from_secs_f64`).
pub const MAX_SECS: f64 = 3600.0;

/// Checks the options before any pool is created; the error names the
/// option and the value given, so a bad command line is told what to fix.
fn check_options(o: &BenchOptions) -> Result<(), BenchError> {
    let bad = |m: String| Err(BenchError::Options(m));
    if o.threads.is_empty() || o.threads.contains(&0) {
        return bad(format!("threads {:?}: each must be >= 1", o.threads));
    }
    if let Some(u) = o.updates.iter().find(|u| **u > 100) {
        return bad(format!("updates {u}: must be in 0..=100 (percent)"));
    }
    if !(o.secs > 0.0 && o.secs <= MAX_SECS) {
        return bad(format!("secs {:?}: must be in (0, {MAX_SECS}]", o.secs));
    }
    Ok(())
}

/// Runs the comparison.
pub fn run(o: &BenchOptions) -> Result<BenchReport, BenchError> {
    check_options(o)?;
    if o.force_pmem {
        // libpmemobj reads it when it first maps a pool
        std::env::set_var("PMEM_IS_PMEM_FORCE", "1");
    }
    let mut rep = BenchReport {
        lookup_bytes_per_object: crate::table::Table::bytes_per_entry(),
        ..BenchReport::default()
    };
    let tag = format!(
        "{}-{:x}",
        std::process::id(),
        crate::kv::hash(Instant::now().elapsed().as_nanos() as u64)
    );
    let maxt = o.threads.iter().copied().max().unwrap_or(1) as u32;
    // libpmemobj's flushes and fences, counted by the libpmem shim when
    // this process runs under it (`shim_counts::reexec_under_shim`)
    let shim = o.pmdk && cfg!(has_pmdk) && crate::shim_counts::start();
    if o.pmdk && cfg!(has_pmdk) && !shim {
        rep.notes.push(format!(
            "libpmemobj's flushes/fences not counted: run under LD_PRELOAD={} (memtamer bench tx does so itself when the shim is built beside it)",
            crate::shim_counts::SHIM_FILE
        ));
    }
    for &s in &o.structures {
        let n = match s {
            Structure::Hash => o.hash_preload,
            Structure::RbTree => o.rb_preload,
            Structure::TpccNewOrder => {
                // inserts: ~22 lines per new-order, budgeted at ~90K
                // transactions/s per thread count measured (a faster
                // machine ends a cell early, see `cell`)
                crate::tpcc::Tpcc::population_bytes(o.tpcc_items) / 64
                    + (2_000_000f64 * o.secs) as u64 * o.threads.len().max(1) as u64
            }
            Structure::Tatp => {
                crate::tatp::Tatp::rows(o.tatp_subscribers) * 5 / 4 + (200_000f64 * o.secs) as u64
            }
        };
        let size = (n * 64 * 4 + (o.buckets as u64) * 16 + (64 << 20)).next_power_of_two();
        let ap = o.dir.join(format!("memtamer-bench-archtm-{tag}-{s:?}"));
        let pool = Pool::create(
            &ap,
            &PoolOptions {
                size,
                slots: (maxt * 2).max(8),
                force_pmem: Some(o.force_pmem),
                ..PoolOptions::default()
            },
        );
        let _ = std::fs::remove_file(&ap); // the mapping stays valid
        let pool = pool?;
        if o.prefault {
            pool.prefault();
        }
        let txe = |engine: &'static str| {
            move |source| BenchError::Tx {
                structure: s,
                engine,
                source,
            }
        };
        let (ds, space) = preload(&pool, s, o).map_err(txe("ArchTM"))?;
        pool.collect();
        settle(&pool).map_err(txe("ArchTM"))?;
        #[cfg_attr(not(has_pmdk), allow(unused_mut))]
        let mut sides = vec![Side {
            name: "ArchTM",
            engine: &pool,
            counts: Counts::Pool(&pool),
            ds,
            space,
        }];
        #[cfg(has_pmdk)]
        let pm;
        #[cfg(has_pmdk)]
        if o.pmdk {
            let pp = o.dir.join(format!("memtamer-bench-pmdk-{tag}-{s:?}"));
            crate::pmdk::set_prefault_at_create(o.prefault).map_err(BenchError::Pmdk)?;
            let created = crate::pmdk::Pmdk::create(&pp, size.min((1 << 32) - (1 << 20)));
            let _ = std::fs::remove_file(&pp);
            pm = created.map_err(BenchError::Pmdk)?;
            let (ds, space) = preload(&pm, s, o).map_err(txe("PMDK"))?;
            sides.push(Side {
                name: "PMDK",
                engine: &pm,
                counts: if shim { Counts::Shim } else { Counts::None },
                ds,
                space,
            });
            rep.pmdk_ran = true;
        }
        measure(&sides, s, o, &mut rep)?;
    }
    if o.pmdk && !rep.pmdk_ran {
        rep.notes.push("libpmemobj was not linked at build time (apt-get install libpmemobj-dev, rebuild): ArchTM only".into());
    }
    Ok(rep)
}

impl fmt::Display for BenchReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "memtamer-tx bench: ArchTM vs PMDK libpmemobj (same pool directory, same run)"
        )?;
        let head = [
            "struct",
            "upd%",
            "thr",
            "ArchTM op/s",
            "PMDK op/s",
            "ratio",
            "cpu-ratio",
            "lines/utx",
            "fence/utx",
            ">=256B",
        ];
        writeln!(f, "{}", row(&head.map(String::from)))?;
        for c in self.cells.iter().filter(|c| c.engine == "ArchTM") {
            let p = self.cells.iter().find(|d| {
                d.engine == "PMDK"
                    && d.structure == c.structure
                    && d.threads == c.threads
                    && d.updates == c.updates
            });
            let dash = || "-".to_string();
            let (pm, ratio, cpu) = match p {
                Some(p) if p.ops_per_s > 0.0 && p.ops_per_cpu_s > 0.0 => (
                    format!("{:.0}", p.ops_per_s),
                    format!("{:.2}x", c.ops_per_s / p.ops_per_s),
                    format!("{:.2}x", c.ops_per_cpu_s / p.ops_per_cpu_s),
                ),
                _ => (dash(), dash(), dash()),
            };
            let (lines, fences, big) = match &c.persist {
                Some(s) if s.commits > 0 => (
                    format!("{:.2}", s.flushed_lines as f64 / s.commits as f64),
                    format!("{:.2}", s.fences as f64 / s.commits as f64),
                    format!(
                        "{:.0}%",
                        100.0 * s.bytes_in_big_runs as f64 / s.persisted_bytes.max(1) as f64
                    ),
                ),
                _ => (dash(), dash(), dash()),
            };
            let name = structure_name(c.structure);
            let cells = [
                name.to_string(),
                c.updates.to_string(),
                c.threads.to_string(),
                format!("{:.0}", c.ops_per_s),
                pm,
                ratio,
                cpu,
                lines,
                fences,
                big,
            ];
            writeln!(f, "{}", row(&cells))?;
        }
        writeln!(f, "op/s: best wall-clock throughput of 2 alternating runs per engine; ratio = ArchTM/PMDK; cpu-ratio = the same per CPU-second the worker threads ran (robust on a loaded host, but it does not charge PMDK for threads blocked on its lock)")?;
        writeln!(f, "lines/utx, fence/utx: ArchTM cache lines flushed and fences per update transaction; >=256B: share of ArchTM's persisted bytes in contiguous runs of >= 256 B per fence epoch")?;
        persist_table(f, &self.cells)?;
        for c in self.cells.iter().filter(|c| c.rollbacks > 0) {
            let pct = 100.0 * c.rollbacks as f64 / c.ops.max(1) as f64;
            let (name, n) = (structure_name(c.structure), c.threads);
            let e = c.engine;
            writeln!(f, "{name} {n} thr {e}: {} of {} transactions rolled back ({pct:.2}%; TPC-C clause 2.4.1.4: 1%), counted in op/s", c.rollbacks, c.ops)?;
        }
        writeln!(
            f,
            "DRAM lookup table: {} bytes per object",
            self.lookup_bytes_per_object
        )?;
        for n in &self.notes {
            writeln!(f, "note: {n}")?;
        }
        Ok(())
    }
}

/// Persistence per update transaction, both engines side by side (A =
/// ArchTM, P = libpmemobj, counted by the libpmem shim).
fn persist_table(f: &mut fmt::Formatter<'_>, cells: &[Cell]) -> fmt::Result {
    let per = |c: Option<&Cell>| -> [String; 5] {
        match c.and_then(|c| c.persist.as_ref()) {
            Some(s) if s.commits > 0 => {
                let n = s.commits as f64;
                [
                    format!("{:.2}", s.flush_calls as f64 / n),
                    format!("{:.2}", s.flushed_lines as f64 / n),
                    format!("{:.2}", s.fences as f64 / n),
                    format!(
                        "{:.0}%",
                        100.0 * s.bytes_in_big_runs as f64 / s.persisted_bytes.max(1) as f64
                    ),
                    format!(
                        "{:.0}%",
                        100.0 * s.call_big_bytes as f64 / s.call_bytes.max(1) as f64
                    ),
                ]
            }
            _ => std::array::from_fn(|_| "-".to_string()),
        }
    };
    writeln!(
        f,
        "persistence per update transaction (A = ArchTM, P = libpmemobj via the libpmem shim):"
    )?;
    writeln!(
        f,
        "{:<7} {:>4} {:>3} | {:>7} {:>7} | {:>7} {:>7} | {:>7} {:>7} | {:>6} {:>6} | {:>6} {:>6}",
        "struct",
        "upd%",
        "thr",
        "A calls",
        "P calls",
        "A lines",
        "P lines",
        "A fence",
        "P fence",
        "A run",
        "P run",
        "A call",
        "P call"
    )?;
    for c in cells.iter().filter(|c| c.engine == "ArchTM") {
        let p = cells.iter().find(|d| {
            d.engine == "PMDK"
                && d.structure == c.structure
                && d.threads == c.threads
                && d.updates == c.updates
        });
        let (a, b) = (per(Some(c)), per(p));
        writeln!(
            f,
            "{:<7} {:>4} {:>3} | {:>7} {:>7} | {:>7} {:>7} | {:>7} {:>7} | {:>6} {:>6} | {:>6} {:>6}",
            structure_name(c.structure), c.updates, c.threads, a[0], b[0], a[1], b[1], a[2],
            b[2], a[3], b[3], a[4], b[4]
        )?;
    }
    writeln!(f, "calls: flush calls; lines: 64 B lines flushed; fence: fences; run: share of flushed bytes in contiguous runs >= 256 B within a fence epoch; call: share of the flush calls' bytes in calls of >= 256 B (the thesis's persist-call sizes, §5.2.1 Fig. 5.1b)")
}

fn structure_name(s: Structure) -> &'static str {
    match s {
        Structure::Hash => "hash",
        Structure::RbTree => "rbtree",
        Structure::TpccNewOrder => "tpcc-no",
        Structure::Tatp => "tatp",
    }
}

fn row(c: &[String; 10]) -> String {
    format!(
        "{:<7} {:>4} {:>3} {:>12} {:>12} {:>7} {:>9} {:>9} {:>9} {:>7}",
        c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9]
    )
}

#[cfg(test)]
#[path = "bench_tests.rs"]
mod tests;
