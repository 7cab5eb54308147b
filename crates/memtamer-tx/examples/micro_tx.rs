//! Per-transaction fixed costs (diagnostic): empty read-only tx, one-object
//! update tx, alloc+free tx; ns per transaction on this host.
use memtamer_tx::{Pool, PoolOptions};
use std::time::Instant;

fn main() {
    let pool = Pool::create_in_memory(&PoolOptions {
        size: 64 << 20,
        ..PoolOptions::default()
    })
    .unwrap();
    let root = pool.root_id();
    let n = 200_000u64;
    let t = Instant::now();
    for _ in 0..n {
        pool.transaction(|tx| tx.read_at(root, 0, &mut [0u8; 8]))
            .unwrap();
    }
    println!(
        "read-only tx: {:.0} ns",
        t.elapsed().as_nanos() as f64 / n as f64
    );
    let t = Instant::now();
    for i in 0..n {
        pool.transaction(|tx| tx.write_at(root, 0, &i.to_le_bytes()))
            .unwrap();
    }
    println!(
        "1-object update tx: {:.0} ns",
        t.elapsed().as_nanos() as f64 / n as f64
    );
    let ids: Vec<u32> = (0..1000)
        .map(|_| pool.transaction(|tx| tx.alloc(28)).unwrap())
        .collect();
    let t = Instant::now();
    for i in 0..n {
        let id = ids[(memtamer_tx::kv::hash(i) % 1000) as usize];
        pool.transaction(|tx| tx.write_at(id, 0, &i.to_le_bytes()))
            .unwrap();
    }
    println!(
        "1-object update tx (random of 1000): {:.0} ns",
        t.elapsed().as_nanos() as f64 / n as f64
    );
    println!("{:?}", pool.stats());
}
