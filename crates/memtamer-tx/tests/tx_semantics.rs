//! Transaction semantics: atomicity, snapshot isolation, conflicts and
//! retries, recovery of unfinished transactions, and the two data
//! structures against a model.

use memtamer_tx::kv::{Engine, HashTable, TxOps, Val};
use memtamer_tx::rbtree::RbTree;
use memtamer_tx::{Pool, PoolOptions, TxError};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Barrier};

fn mem_pool(size: u64) -> Pool {
    Pool::create_in_memory(&PoolOptions {
        size,
        ..PoolOptions::default()
    })
    .unwrap()
}

fn val(k: u64, i: u64) -> Val {
    let mut v = [0u8; 16];
    v[..8].copy_from_slice(&k.to_le_bytes());
    v[8..].copy_from_slice(&i.to_le_bytes());
    v
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Live ids must be exactly the root plus what the structure reaches.
fn assert_no_leak(pool: &Pool, reachable: &[u32]) {
    let mut want: BTreeSet<u32> = reachable.iter().copied().collect();
    want.insert(pool.root_id());
    let live: BTreeSet<u32> = pool.live_ids().into_iter().collect();
    for id in live.difference(&want) {
        let mut b = [0u8; 28];
        let _ = pool.transaction(|tx| tx.read_at(*id, 0, &mut b));
        eprintln!(
            "leaked {id}: key {} val-key {} val-i {} next {}",
            u64::from_le_bytes(b[0..8].try_into().unwrap()),
            u64::from_le_bytes(b[8..16].try_into().unwrap()),
            u64::from_le_bytes(b[16..24].try_into().unwrap()),
            u32::from_le_bytes(b[24..28].try_into().unwrap())
        );
    }
    assert_eq!(live, want, "live objects differ from reachable ones");
}

#[test]
fn hash_table_matches_a_model_and_survives_reopen() {
    let pool = mem_pool(8 << 20);
    let ht = HashTable::create(&pool, 0, 64).unwrap();
    let mut model = BTreeMap::new();
    let mut r = Rng(7);
    for i in 0..3000u64 {
        let k = r.next() % 500;
        let op = r.next() % 3;
        pool.run(true, &mut |t| {
            match op {
                0 | 1 => {
                    ht.put(t, k, &val(k, i))?;
                }
                _ => {
                    ht.remove(t, k)?;
                }
            }
            Ok(())
        })
        .unwrap();
        if op < 2 {
            model.insert(k, val(k, i));
        } else {
            model.remove(&k);
        }
    }
    let check = |p: &Pool| {
        let ht = HashTable::open(p, 0).unwrap();
        let mut got = None;
        p.run(false, &mut |t| {
            got = Some(ht.items(t)?);
            Ok(())
        })
        .unwrap();
        let (items, refs) = got.unwrap();
        assert_eq!(
            items,
            model.iter().map(|(k, v)| (*k, *v)).collect::<Vec<_>>()
        );
        let mut refs = refs;
        let mut dir = [0u8; 4];
        p.transaction(|tx| tx.read_at(p.root_id(), 0, &mut dir))
            .unwrap();
        refs.push(u32::from_le_bytes(dir));
        assert_no_leak(p, &refs);
    };
    check(&pool);
    pool.collect();
    let again = Pool::open_image(&pool.image(), &PoolOptions::default()).unwrap();
    assert_eq!(again.recovery().uncommitted, 0);
    check(&again);
}

#[test]
fn rb_tree_keeps_its_invariants_against_a_model() {
    let pool = mem_pool(8 << 20);
    let rb = RbTree::create(&pool, 8).unwrap();
    let mut model = BTreeMap::new();
    let mut r = Rng(11);
    for i in 0..4000u64 {
        let k = r.next() % 700;
        let del = r.next().is_multiple_of(3);
        pool.run(true, &mut |t| {
            if del {
                rb.remove(t, k)?;
            } else {
                rb.put(t, k, &val(k, i))?;
            }
            Ok(())
        })
        .unwrap();
        if del {
            model.remove(&k);
        } else {
            model.insert(k, val(k, i));
        }
        if i % 500 == 0 || i == 3999 {
            let mut out = None;
            pool.run(false, &mut |t| {
                out = Some(rb.check(t)?);
                Ok(())
            })
            .unwrap();
            let (items, refs) = out.unwrap();
            assert_eq!(
                items,
                model.iter().map(|(k, v)| (*k, *v)).collect::<Vec<_>>()
            );
            if i == 3999 {
                assert_no_leak(&pool, &refs);
            }
        }
    }
}

#[test]
fn an_aborted_transaction_leaves_nothing() {
    let pool = mem_pool(1 << 20);
    let root = pool.root_id();
    let before = pool.live_ids();
    let e = pool.transaction(|tx| {
        let id = tx.alloc(500)?;
        tx.write_at(id, 0, b"x")?;
        tx.write_at(root, 0, &[9u8; 8])?;
        Err::<(), _>(TxError::Aborted("changed my mind".into()))
    });
    assert_eq!(e, Err(TxError::Aborted("changed my mind".into())));
    assert_eq!(pool.live_ids(), before);
    let mut b = [1u8; 8];
    pool.transaction(|tx| tx.read_at(root, 0, &mut b)).unwrap();
    assert_eq!(b, [0u8; 8]);
    assert_eq!(pool.stats().aborts, 1);
    // the image holds no trace either
    let img = Pool::open_image(&pool.image(), &PoolOptions::default()).unwrap();
    assert_eq!(img.recovery().objects, 1);
}

#[test]
fn free_then_reuse_and_errors() {
    let pool = mem_pool(1 << 20);
    let id = pool.transaction(|tx| tx.alloc(64)).unwrap();
    pool.transaction(|tx| tx.free(id)).unwrap();
    assert_eq!(
        pool.transaction(|tx| tx.read(id).map(|_| ())),
        Err(TxError::NoSuchObject { id })
    );
    assert_eq!(
        pool.transaction(|tx| tx.write(id).map(|_| ())),
        Err(TxError::NoSuchObject { id })
    );
    let again = pool.transaction(|tx| tx.alloc(64)).unwrap();
    assert_eq!(again, id, "freed ids are reused");
    let e = pool.transaction(|tx| tx.write_at(id, 60, &[0u8; 8]));
    assert!(matches!(e, Err(TxError::OutOfBounds { .. })));
    assert!(pool.transaction(|tx| tx.free(pool.root_id())).is_err());
    // free inside the allocating transaction, and write-then-free
    pool.transaction(|tx| {
        let a = tx.alloc(10)?;
        tx.free(a)?;
        tx.write_at(id, 0, b"abc")?;
        tx.free(id)
    })
    .unwrap();
    let img = Pool::open_image(&pool.image(), &PoolOptions::default()).unwrap();
    assert_eq!(img.recovery().objects, 1);
    assert_eq!(pool.live_ids(), vec![pool.root_id()]);
}

#[test]
fn nested_transactions_are_refused() {
    let pool = mem_pool(1 << 20);
    let r = pool.transaction(|_| pool.transaction(|_| Ok(())));
    assert_eq!(r, Err(TxError::Nested));
    pool.transaction(|_| Ok(())).unwrap();
}

#[test]
fn readers_keep_their_snapshot_while_a_writer_commits() {
    let pool = Arc::new(mem_pool(1 << 20));
    let root = pool.root_id();
    let tx = pool.begin().unwrap();
    let mut b = [0u8; 8];
    tx.read_at(root, 0, &mut b).unwrap();
    assert_eq!(b, [0; 8]);
    let go = Arc::new(Barrier::new(2));
    let (p2, g2) = (pool.clone(), go.clone());
    let writer = std::thread::spawn(move || {
        g2.wait();
        // commits, then waits in post-commit for our older reader
        p2.transaction(|tx| tx.write_at(root, 0, &[5u8; 8]))
            .unwrap();
    });
    go.wait();
    std::thread::sleep(std::time::Duration::from_millis(50));
    tx.read_at(root, 0, &mut b).unwrap();
    assert_eq!(
        b, [0; 8],
        "snapshot isolation: a later commit stays invisible"
    );
    assert!(
        !writer.is_finished(),
        "post-commit waits for older transactions"
    );
    tx.commit();
    writer.join().unwrap();
    pool.transaction(|tx| tx.read_at(root, 0, &mut b)).unwrap();
    assert_eq!(b, [5; 8]);
}

#[test]
fn concurrent_increments_lose_nothing() {
    let pool = Arc::new(mem_pool(4 << 20));
    let root = pool.root_id();
    let threads = 4;
    let per = 2000u64;
    let hs: Vec<_> = (0..threads)
        .map(|_| {
            let p = pool.clone();
            std::thread::spawn(move || {
                for _ in 0..per {
                    p.transaction(|tx| {
                        let mut b = [0u8; 8];
                        tx.read_at(root, 0, &mut b)?;
                        tx.write_at(root, 0, &(u64::from_le_bytes(b) + 1).to_le_bytes())
                    })
                    .unwrap();
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    let mut b = [0u8; 8];
    pool.transaction(|tx| tx.read_at(root, 0, &mut b)).unwrap();
    assert_eq!(u64::from_le_bytes(b), threads * per);
    let img = Pool::open_image(&pool.image(), &PoolOptions::default()).unwrap();
    let mut c = [0u8; 8];
    img.transaction(|tx| tx.read_at(root, 0, &mut c)).unwrap();
    assert_eq!(c, b);
}

#[test]
fn concurrent_hash_table_stays_consistent() {
    let pool = Arc::new(mem_pool(16 << 20));
    let ht = Arc::new(HashTable::create(&*pool, 0, 128).unwrap());
    let hs: Vec<_> = (0..4u64)
        .map(|t| {
            let (p, h) = (pool.clone(), ht.clone());
            std::thread::spawn(move || {
                let mut r = Rng(t + 1);
                for i in 0..2000 {
                    let k = r.next() % 300;
                    let op = r.next() % 4;
                    p.run(op != 3, &mut |tx: &mut dyn TxOps| {
                        match op {
                            0 => drop(h.remove(tx, k)?),
                            1 | 2 => drop(h.put(tx, k, &val(k, i))?),
                            _ => drop(h.get(tx, k)?),
                        }
                        Ok(())
                    })
                    .unwrap();
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    assert_eq!(pool.locked_ids(), Vec::<u32>::new());
    let check = |p: &Pool| {
        let ht = HashTable::open(p, 0).unwrap();
        let mut got = None;
        p.run(false, &mut |t| {
            got = Some(ht.items(t)?);
            Ok(())
        })
        .unwrap();
        let (items, mut refs) = got.unwrap();
        let keys: BTreeSet<u64> = items.iter().map(|x| x.0).collect();
        assert_eq!(keys.len(), items.len(), "duplicate keys");
        assert!(items.iter().all(|(k, v)| v[..8] == k.to_le_bytes()));
        let mut dir = [0u8; 4];
        p.transaction(|tx| tx.read_at(p.root_id(), 0, &mut dir))
            .unwrap();
        refs.push(u32::from_le_bytes(dir));
        assert_no_leak(p, &refs);
        items
    };
    let a = check(&pool);
    let img = Pool::open_image(&pool.image(), &PoolOptions::default()).unwrap();
    assert_eq!(check(&img), a);
}

#[test]
fn recovery_drops_an_unfinished_transaction() {
    let pool = mem_pool(1 << 20);
    let root = pool.root_id();
    pool.transaction(|tx| tx.write_at(root, 0, &[1u8; 8]))
        .unwrap();
    let mut tx = pool.begin().unwrap();
    tx.write_at(root, 0, &[2u8; 8]).unwrap();
    let id = tx.alloc(300).unwrap();
    tx.write_at(id, 0, &[3u8; 8]).unwrap();
    let crashed = pool.image();
    tx.abort();
    let img = Pool::open_image(&crashed, &PoolOptions::default()).unwrap();
    assert_eq!(img.recovery().unfinished_tx, 1);
    assert!(img.recovery().uncommitted >= 1);
    assert_eq!(img.recovery().objects, 1);
    let mut b = [0u8; 8];
    img.transaction(|tx| tx.read_at(root, 0, &mut b)).unwrap();
    assert_eq!(b, [1u8; 8]);
    // and the recovered pool keeps working with new transactions
    img.transaction(|tx| tx.write_at(root, 0, &[4u8; 8]))
        .unwrap();
    let again = Pool::open_image(&img.image(), &PoolOptions::default()).unwrap();
    again.transaction(|tx| tx.read_at(root, 0, &mut b)).unwrap();
    assert_eq!(b, [4u8; 8]);
}

#[test]
fn concurrent_rb_tree_keeps_its_invariants() {
    let pool = Arc::new(mem_pool(16 << 20));
    let rb = Arc::new(RbTree::create(&*pool, 8).unwrap());
    let hs: Vec<_> = (0..4u64)
        .map(|t| {
            let (p, rb) = (pool.clone(), rb.clone());
            std::thread::spawn(move || {
                let mut r = Rng(t + 101);
                for i in 0..1500 {
                    let k = r.next() % 400;
                    let op = r.next() % 4;
                    p.run(op != 3, &mut |tx: &mut dyn TxOps| {
                        match op {
                            0 => drop(rb.remove(tx, k)?),
                            1 | 2 => drop(rb.put(tx, k, &val(k, i))?),
                            _ => drop(rb.get(tx, k)?),
                        }
                        Ok(())
                    })
                    .unwrap();
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    assert_eq!(pool.locked_ids(), Vec::<u32>::new());
    for p in [
        &*pool,
        &Pool::open_image(&pool.image(), &PoolOptions::default()).unwrap(),
    ] {
        let rb = RbTree::open(p, 8).unwrap();
        let mut out = None;
        p.run(false, &mut |t| {
            out = Some(rb.check(t)?);
            Ok(())
        })
        .unwrap();
        let (items, refs) = out.unwrap();
        assert!(items.iter().all(|(k, v)| v[..8] == k.to_le_bytes()));
        assert_no_leak(p, &refs);
    }
}

/// Hostile-input sweep (docs/bad-input.md, 2026-11-27): an object
/// allocated and freed in one transaction and then freed, written or read
/// again is gone (`NoSuchObject`), not a write conflict: `Pool::transaction`
/// retries conflicts, so the old answer ran such a closure forever.
#[test]
fn use_after_free_inside_one_transaction_is_no_such_object_not_a_conflict() {
    let pool = mem_pool(1 << 20);
    let mut tx = pool.begin().unwrap();
    let id = tx.alloc(64).unwrap();
    tx.free(id).unwrap();
    assert_eq!(tx.free(id), Err(TxError::NoSuchObject { id }));
    assert_eq!(
        tx.write_at(id, 0, &[1; 8]),
        Err(TxError::NoSuchObject { id })
    );
    let mut b = [0u8; 8];
    assert_eq!(tx.read_at(id, 0, &mut b), Err(TxError::NoSuchObject { id }));
    tx.commit();
    // the same closure through the retrying wrapper ends, with the error
    let r = pool.transaction(|tx| {
        let id = tx.alloc(32)?;
        tx.free(id)?;
        tx.free(id)
    });
    assert!(matches!(r, Err(TxError::NoSuchObject { .. })), "{r:?}");
    assert_eq!(pool.live_ids(), vec![pool.root_id()], "nothing leaked");
}

/// Hostile-input sweep: an offset near `usize::MAX` is out of bounds, not
/// an arithmetic overflow (a panic in a checked build).
#[test]
fn offsets_that_wrap_are_out_of_bounds() {
    let pool = mem_pool(1 << 20);
    let root = pool.root_id();
    let mut tx = pool.begin().unwrap();
    let mut b = [0u8; 2];
    assert!(matches!(
        tx.read_at(root, usize::MAX, &mut b),
        Err(TxError::OutOfBounds { .. })
    ));
    assert!(matches!(
        tx.write_at(root, usize::MAX, &b),
        Err(TxError::OutOfBounds { .. })
    ));
    let e = tx.alloc(0).unwrap_err();
    assert!(e.to_string().contains("must be in 1..="), "{e}");
    tx.abort();
}

/// Freeing the root object is its own error, not an application abort,
/// and leaves the transaction as it was: a later write commits with the
/// earlier ones; through `Pool::transaction` the closure's error aborts
/// everything as any error does.
#[test]
fn freeing_the_root_is_refused_and_the_transaction_goes_on() {
    let pool = Pool::create_in_memory(&PoolOptions {
        size: 1 << 20,
        root_size: 8,
        ..PoolOptions::default()
    })
    .unwrap();
    let root = pool.root_id();
    let mut tx = pool.begin().unwrap();
    tx.write_at(root, 0, &[1; 4]).unwrap();
    assert_eq!(tx.free(root), Err(TxError::RootNotFreeable { id: root }));
    tx.write_at(root, 4, &[2; 4]).unwrap();
    tx.commit();
    let r = pool.transaction(|tx| {
        tx.write_at(root, 0, &[9; 8])?;
        tx.free(root)
    });
    assert_eq!(r, Err(TxError::RootNotFreeable { id: root }));
    let mut b = [0u8; 8];
    pool.transaction(|tx| tx.read_at(root, 0, &mut b)).unwrap();
    assert_eq!(b, [1, 1, 1, 1, 2, 2, 2, 2]);
    assert_eq!(pool.live_ids(), vec![root]);
}
