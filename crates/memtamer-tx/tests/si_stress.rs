use memtamer_tx::{Pool, PoolOptions};
use std::sync::Arc;

#[test]
fn transfers_conserve_the_sum() {
    let pool = Arc::new(
        Pool::create_in_memory(&PoolOptions {
            size: 8 << 20,
            ..PoolOptions::default()
        })
        .unwrap(),
    );
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
                for _ in 0..3000 {
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
    for h in hs {
        h.join().unwrap();
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
