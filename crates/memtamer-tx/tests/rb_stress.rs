//! Concurrent red-black tree updates on ArchTM: snapshot isolation alone
//! lets two rebalancing transactions that write disjoint nodes both commit
//! (write skew), breaking the tree's invariants; `RbTree` must make its
//! update transactions conflict. The invariants are checked after the run
//! and every error during it fails the test.
use memtamer_tx::kv::Engine;
use memtamer_tx::rbtree::RbTree;
use memtamer_tx::{Pool, PoolOptions};
use std::sync::Arc;

#[test]
fn concurrent_inserts_and_removes_keep_the_invariants() {
    let pool = Arc::new(
        Pool::create_in_memory(&PoolOptions {
            size: 32 << 20,
            ..PoolOptions::default()
        })
        .unwrap(),
    );
    let tree = Arc::new(RbTree::create(&*pool, 0).unwrap());
    let hs: Vec<_> = (0..6u64)
        .map(|t| {
            let (p, tree) = (pool.clone(), tree.clone());
            std::thread::spawn(move || {
                let mut x = t * 7919 + 11;
                for i in 0..200_000u64 {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let key = (x >> 33) % 32;
                    let val = [i as u8; 16];
                    let insert = (x >> 20) & 1 == 0;
                    p.run(true, &mut |tx| {
                        if insert {
                            tree.put(tx, key, &val).map(|_| ())
                        } else {
                            tree.remove(tx, key).map(|_| ())
                        }
                    })
                    .unwrap_or_else(|e| panic!("thread {t} op {i} key {key}: {e:?}"));
                    if i % 2000 == 0 {
                        p.run(false, &mut |tx| tree.check(tx).map(|_| ()))
                            .unwrap_or_else(|e| panic!("thread {t} op {i}: {e:?}"));
                    }
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    pool.run(false, &mut |tx| tree.check(tx).map(|_| ()))
        .unwrap();
}
