use memtamer_tx::{Pool, PoolOptions};
use std::sync::Arc;

#[test]
fn transfers_conserve_the_sum() {
    // A file pool with real cache flushes: the commit record's flush +
    // fence is the window in which readers meet COMMITTING writers.
    let path = std::env::temp_dir().join(format!("mtx-si-stress-{}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let created = Pool::create(
        &path,
        &PoolOptions {
            size: 8 << 20,
            force_pmem: Some(true),
            ..PoolOptions::default()
        },
    );
    let _ = std::fs::remove_file(&path);
    let pool = Arc::new(created.unwrap());
    let ids: Vec<u32> = pool
        .transaction(|tx| {
            (0..8)
                .map(|_| {
                    let id = tx.alloc(8)?;
                    tx.write_at(id, 0, &100u64.to_le_bytes())?;
                    Ok(id)
                })
                .collect()
        })
        .unwrap();
    let ids = Arc::new(ids);
    let hs: Vec<_> = (0..4u64)
        .map(|t| {
            let (p, ids) = (pool.clone(), ids.clone());
            std::thread::spawn(move || {
                let mut x = t * 7 + 3;
                for _ in 0..20_000 {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let a = ids[(x >> 33) as usize % 8];
                    let b = ids[(x >> 40) as usize % 8];
                    if a == b {
                        continue;
                    }
                    p.transaction(|tx| {
                        let mut va = [0u8; 8];
                        let mut vb = [0u8; 8];
                        tx.read_at(a, 0, &mut va)?;
                        tx.read_at(b, 0, &mut vb)?;
                        let (va, vb) = (u64::from_le_bytes(va), u64::from_le_bytes(vb));
                        if va == 0 {
                            return Ok(());
                        }
                        tx.write_at(a, 0, &(va - 1).to_le_bytes())?;
                        tx.write_at(b, 0, &(vb + 1).to_le_bytes())
                    })
                    .unwrap();
                }
            })
        })
        .collect();
    // Readers: every snapshot must hold whole transfers (sum 800), also
    // while a writer sits between drawing its CommitID and publishing
    // COMMITTED (readers above it take the old copies, below it wait).
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (p, ids, stop) = (pool.clone(), ids.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) || n == 0 {
                    let sum: u64 = p
                        .transaction(|tx| {
                            let mut s = 0;
                            for id in ids.iter() {
                                let mut v = [0u8; 8];
                                tx.read_at(*id, 0, &mut v)?;
                                s += u64::from_le_bytes(v);
                            }
                            Ok(s)
                        })
                        .unwrap();
                    assert_eq!(sum, 800, "snapshot {n} saw part of a transfer");
                    n += 1;
                }
                n
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for r in readers {
        assert!(r.join().unwrap() > 0);
    }
    let sum: u64 = pool
        .transaction(|tx| {
            let mut s = 0;
            for id in ids.iter() {
                let mut v = [0u8; 8];
                tx.read_at(*id, 0, &mut v)?;
                s += u64::from_le_bytes(v);
            }
            Ok(s)
        })
        .unwrap();
    assert_eq!(sum, 800);
}
