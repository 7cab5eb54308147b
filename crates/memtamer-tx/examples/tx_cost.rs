//! Deterministic per-operation cost probe (diagnostic): a fixed number of
//! bench-shaped operations on ArchTM, so instruction counts and simulated
//! cache misses can be compared under `valgrind --tool=cachegrind` on a
//! host too loaded for wall-clock A/B runs (run it twice with different OPS
//! and take the difference to leave out pool creation and preload).
//! Usage: tx_cost [hash|rbtree|tpcc] PRELOAD OPS UPD%
use memtamer_tx::kv::{hash, Engine, HashTable, Val};
use memtamer_tx::rbtree::RbTree;
use memtamer_tx::{Pool, PoolOptions, TxError};

fn kv(x: u64) -> (u64, Val) {
    let mut v = [0u8; 16];
    v[..8].copy_from_slice(&x.to_le_bytes());
    (x, v)
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let s = a.get(1).map(String::as_str).unwrap_or("hash").to_string();
    let n: u64 = a.get(2).and_then(|x| x.parse().ok()).unwrap_or(10_000);
    let ops: u64 = a.get(3).and_then(|x| x.parse().ok()).unwrap_or(100_000);
    let upd: u64 = a.get(4).and_then(|x| x.parse().ok()).unwrap_or(50);
    let path = format!("/dev/shm/txcost-{}", std::process::id());
    std::env::set_var("PMEM_IS_PMEM_FORCE", "1");
    let pool = Pool::create(
        &path,
        &PoolOptions {
            size: 256 << 20,
            force_pmem: Some(true),
            ..Default::default()
        },
    )
    .unwrap();
    let _ = std::fs::remove_file(&path);
    let e: &dyn Engine = &pool;
    enum D {
        H(HashTable),
        R(RbTree),
        T(memtamer_tx::tpcc::Tpcc),
    }
    let d = match s.as_str() {
        "rbtree" => D::R(RbTree::create(e, 8).unwrap()),
        "tpcc" => D::T(memtamer_tx::tpcc::Tpcc::create(e, n).unwrap()),
        _ => D::H(HashTable::create(e, 0, 10_000).unwrap()),
    };
    if !matches!(d, D::T(_)) {
        let mut i = 0;
        while i < n {
            let end = (i + 256).min(n);
            e.run(true, &mut |t| {
                for j in i..end {
                    let (k, v) = kv((hash(j) % n) * 2);
                    match &d {
                        D::H(h) => {
                            h.put(t, k, &v)?;
                        }
                        D::R(r) => {
                            r.put(t, k, &v)?;
                        }
                        _ => {}
                    }
                }
                Ok(())
            })
            .unwrap();
            i = end;
        }
    }
    pool.collect();
    let s0 = pool.stats();
    let t0 = std::time::Instant::now();
    let mut x = 77u64;
    for _ in 0..ops {
        x = hash(x);
        let (k, v) = kv(x % (2 * n));
        let kind = (x >> 40) % 200;
        let r = match &d {
            D::T(p) => e.run(true, &mut |t| p.new_order(t, x)),
            D::H(h) if kind < upd * 2 && kind.is_multiple_of(2) => {
                e.run(true, &mut |t| h.put(t, k, &v).map(drop))
            }
            D::H(h) if kind < upd * 2 => e.run(true, &mut |t| h.remove(t, k).map(drop)),
            D::H(h) => e.run(false, &mut |t| h.get(t, k).map(drop)),
            D::R(r) if kind < upd * 2 && kind.is_multiple_of(2) => {
                e.run(true, &mut |t| r.put(t, k, &v).map(drop))
            }
            D::R(r) if kind < upd * 2 => e.run(true, &mut |t| r.remove(t, k).map(drop)),
            D::R(r) => e.run(false, &mut |t| r.get(t, k).map(drop)),
        };
        // TPC-C new-order's 1% rollbacks (clause 2.4.1.4) are expected
        if !matches!(r, Err(TxError::RolledBack(_))) {
            r.unwrap();
        }
    }
    let s1 = pool.stats();
    let (commits, lines, fences) = (
        s1.commits - s0.commits,
        s1.flushed_lines - s0.flushed_lines,
        s1.fences - s0.fences,
    );
    println!(
        "{s} n={n} ops={ops} upd={upd}%: {:.0} ns/op, lines/utx {:.2}, fences/utx {:.2}",
        t0.elapsed().as_nanos() as f64 / ops as f64,
        lines as f64 / commits.max(1) as f64,
        fences as f64 / commits.max(1) as f64
    );
}
