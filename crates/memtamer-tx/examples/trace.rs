//! Records a flush/fence trace (`memtamer-trace v1`, docs/simulator.md) of
//! hash-table update transactions (thesis §5.5: 8 B keys, 16 B values,
//! half inserts, half removes) or TPC-C new-order transactions for replay in `memtamer sim` (issue 18 item
//! 5; the whole flow is `scripts/record-tx-traces`, docs/notebook/tx.md "Optane
//! estimate").
//!
//! ```text
//! trace archtm OUT [opts]        ArchTM, recorded by its persistence hook
//! trace pmdk-preload POOL [opts] libpmemobj: create and preload POOL
//! trace pmdk-run POOL [opts]     libpmemobj: the transactions only; run it
//!                                under LD_PRELOAD=libmemtamer_pmem_shim.so
//!                                MEMTAMER_TRACE=OUT to record them
//! opts: --threads N (2) --txs N per thread (1500) --buckets N (10000)
//!       --preload N pairs (100000) --tpcc ITEMS (new-order instead of hash)
//! ```
use std::path::Path;
use std::sync::Arc;

use memtamer_tx::kv::{hash, Engine, HashTable, Ref, TxOps, Val};
use memtamer_tx::tpcc::Tpcc;
use memtamer_tx::{Pool, PoolOptions, TraceRecorder, TxError};

struct Opts {
    threads: usize,
    txs: u64,
    buckets: usize,
    preload: u64,
    /// TPC-C items (0: the hash table).
    tpcc: u64,
}

/// The structure the transactions run on.
enum Ds {
    Hash(HashTable),
    Tpcc(Tpcc),
}

fn key_val(x: u64) -> (u64, Val) {
    let mut v = [0u8; 16];
    v[..8].copy_from_slice(&x.to_le_bytes());
    v[8..].copy_from_slice(&(!x).to_le_bytes());
    (x, v)
}

fn preload(e: &dyn Engine, o: &Opts) -> Result<Ds, TxError> {
    if o.tpcc > 0 {
        return Ok(Ds::Tpcc(Tpcc::create(e, o.tpcc)?));
    }
    let h = HashTable::create(e, 0, o.buckets)?;
    let n = o.preload;
    let mut i = 0;
    while i < n {
        let end = (i + 256).min(n);
        e.run(true, &mut |t| {
            for j in i..end {
                let (k, v) = key_val((hash(j) % n) * 2);
                h.put(t, k, &v)?;
            }
            Ok(())
        })?;
        i = end;
    }
    Ok(Ds::Hash(h))
}

/// Counts the bytes a transaction modifies through the API (`put`): the
/// denominator of the thesis's write amplification (§5.2.1, "bytes
/// modified by transactions"), the same for both engines since both run
/// the same structure code.
struct Counting<'a> {
    inner: &'a mut dyn TxOps,
    bytes: &'a mut u64,
}

impl TxOps for Counting<'_> {
    fn get(&mut self, r: Ref, off: usize, out: &mut [u8]) -> Result<(), TxError> {
        self.inner.get(r, off, out)
    }
    fn put(&mut self, r: Ref, off: usize, data: &[u8]) -> Result<(), TxError> {
        *self.bytes += data.len() as u64;
        self.inner.put(r, off, data)
    }
    fn alloc(&mut self, size: usize) -> Result<Ref, TxError> {
        self.inner.alloc(size)
    }
    fn free(&mut self, r: Ref) -> Result<(), TxError> {
        self.inner.free(r)
    }
}

/// `o.txs` update transactions per thread (insert or remove of a random
/// key among 2 x preload, or one new-order); `done(modified bytes)` runs
/// after each commit, `done(0)` after a new-order that rolled back.
fn run(e: &dyn Engine, ds: &Ds, o: &Opts, done: &(dyn Fn(u64) + Sync)) -> Result<(), TxError> {
    let space = (o.preload * 2).max(1);
    std::thread::scope(|sc| {
        let hs: Vec<_> = (0..o.threads)
            .map(|t| {
                sc.spawn(move || -> Result<(), TxError> {
                    let mut x = hash(t as u64 + 77);
                    for _ in 0..o.txs {
                        x = hash(x);
                        let (k, v) = key_val(x % space);
                        let insert = (x >> 40).is_multiple_of(2);
                        // reset per attempt: a conflict retries the closure
                        let mut modified = 0u64;
                        let r = e.run(true, &mut |tx| {
                            modified = 0;
                            let c = &mut Counting {
                                inner: tx,
                                bytes: &mut modified,
                            };
                            match ds {
                                Ds::Tpcc(p) => p.new_order(c, x),
                                Ds::Hash(h) if insert => h.put(c, k, &v).map(drop),
                                Ds::Hash(h) => h.remove(c, k).map(drop),
                            }
                        });
                        match r {
                            Ok(()) => done(modified),
                            // TPC-C's 1% (clause 2.4.1.4): a transaction,
                            // but nothing it modified stays
                            Err(TxError::RolledBack(_)) => done(0),
                            Err(e) => return Err(e),
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        hs.into_iter().try_for_each(|h| {
            h.join()
                .unwrap_or(Err(TxError::Aborted("thread panicked".into())))
        })
    })
}

fn parse(args: &[String]) -> Result<Opts, String> {
    let mut o = Opts {
        threads: 2,
        txs: 1500,
        buckets: 10_000,
        preload: 100_000,
        tpcc: 0,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let v: u64 = it
            .next()
            .and_then(|v| v.parse().ok())
            .ok_or(format!("{a} needs a number"))?;
        match a.as_str() {
            "--threads" => o.threads = v.clamp(1, 64) as usize,
            "--txs" => o.txs = v,
            "--buckets" => o.buckets = v.max(1) as usize,
            "--preload" => o.preload = v,
            "--tpcc" => o.tpcc = v,
            _ => return Err(format!("unknown option {a}")),
        }
    }
    Ok(o)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Err(e) = real_main(&args) {
        eprintln!("trace: {e}");
        std::process::exit(2);
    }
}

fn real_main(args: &[String]) -> Result<(), String> {
    let (mode, path) = match args {
        [m, p, ..] => (m.as_str(), Path::new(p)),
        _ => return Err("usage: trace archtm|pmdk-preload|pmdk-run PATH [opts]".into()),
    };
    let o = parse(&args[2..])?;
    let size = 256u64 << 20;
    match mode {
        "archtm" => {
            let rec = Arc::new(TraceRecorder::default());
            let pool = Pool::create_in_memory(&PoolOptions {
                size,
                slots: (o.threads as u32 * 2).max(8),
                hook: Some(rec.clone()),
                ..PoolOptions::default()
            })
            .map_err(|e| e.to_string())?;
            let h = preload(&pool, &o).map_err(|e| e.to_string())?;
            rec.start();
            run(&pool, &h, &o, &|m| {
                rec.mark_modified(m);
                rec.mark_tx();
            })
            .map_err(|e| e.to_string())?;
            rec.stop();
            let mut f =
                std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
            let workload = if o.tpcc > 0 {
                format!("tpcc-new-order items={}", o.tpcc)
            } else {
                format!("hash-update buckets={} preload={}", o.buckets, o.preload)
            };
            let comment = format!(
                "source=archtm workload={workload} threads={} txs_per_thread={}",
                o.threads, o.txs
            );
            rec.write_to(&mut f, &comment)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            eprintln!("trace: {} records to {}", rec.records(), path.display());
            Ok(())
        }
        "pmdk-preload" | "pmdk-run" => pmdk(mode, path, &o, size),
        _ => Err(format!("unknown mode {mode}")),
    }
}

#[cfg(has_pmdk)]
fn pmdk(mode: &str, path: &Path, o: &Opts, size: u64) -> Result<(), String> {
    use memtamer_tx::pmdk::Pmdk;
    if mode == "pmdk-preload" {
        let p = Pmdk::create(path, size)?;
        preload(&p, o).map_err(|e| e.to_string())?;
        return Ok(());
    }
    let p = Pmdk::open(path)?;
    let ds = if o.tpcc > 0 {
        Ds::Tpcc(Tpcc::open(&p, o.tpcc).map_err(|e| e.to_string())?)
    } else {
        Ds::Hash(HashTable::open(&p, 0).map_err(|e| e.to_string())?)
    };
    // the shim's `memtamer_trace_modified` writes the `mod` records
    // SAFETY: dlsym with a NUL-terminated name.
    let f =
        unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"memtamer_trace_modified".as_ptr()) } as usize;
    if f == 0 {
        eprintln!("trace: not under the pmem shim: no `mod` records (thesis WA unavailable)");
    }
    run(&p, &ds, o, &|m| {
        if f != 0 {
            // SAFETY: the shim's `extern "C" fn memtamer_trace_modified(u64)`.
            unsafe { std::mem::transmute::<usize, extern "C" fn(u64)>(f)(m) };
        }
    })
    .map_err(|e| e.to_string())
}

#[cfg(not(has_pmdk))]
fn pmdk(_: &str, _: &Path, _: &Opts, _: u64) -> Result<(), String> {
    Err("built without libpmemobj (apt-get install libpmemobj-dev)".into())
}
