//! Pool file format: create/open round trip, clear errors for bad files,
//! a full pool returns an error.

use memtamer_tx::{Pool, PoolError, PoolOptions, TxError};
use std::path::PathBuf;

fn tmp(name: &str) -> PathBuf {
    let p = PathBuf::from(format!("/dev/shm/mtx-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_file(&p);
    p
}

fn opts(size: u64) -> PoolOptions {
    PoolOptions {
        size,
        force_pmem: Some(true),
        ..PoolOptions::default()
    }
}

#[test]
fn create_write_reopen_keeps_root() {
    let p = tmp("reopen");
    {
        let pool = Pool::create(&p, &opts(1 << 20)).unwrap();
        let root = pool.root_id();
        pool.transaction(|tx| tx.write_at(root, 8, &42u64.to_le_bytes()))
            .unwrap();
        let id = pool
            .transaction(|tx| {
                let id = tx.alloc(100)?;
                tx.write_at(id, 0, b"hello")?;
                tx.write_at(root, 0, &u64::from(id).to_le_bytes())?;
                Ok(id)
            })
            .unwrap();
        assert!(id > root);
    }
    let pool = Pool::open(&p, &opts(0)).unwrap();
    assert_eq!(pool.recovery().objects, 2);
    let root = pool.root_id();
    let (v, s) = pool
        .transaction(|tx| {
            let mut a = [0u8; 8];
            tx.read_at(root, 8, &mut a)?;
            let mut b = [0u8; 8];
            tx.read_at(root, 0, &mut b)?;
            let id = u64::from_le_bytes(b) as u32;
            Ok((u64::from_le_bytes(a), tx.read(id)?[..5].to_vec()))
        })
        .unwrap();
    assert_eq!(v, 42);
    assert_eq!(s, b"hello");
    std::fs::remove_file(&p).unwrap();
}

#[test]
fn msync_mode_on_an_ordinary_file() {
    let dir = std::env::temp_dir().join(format!("mtx-msync-{}", std::process::id()));
    let _ = std::fs::remove_file(&dir);
    let pool = Pool::create(
        &dir,
        &PoolOptions {
            size: 1 << 20,
            force_pmem: Some(false),
            ..PoolOptions::default()
        },
    )
    .unwrap();
    let root = pool.root_id();
    pool.transaction(|tx| tx.write_at(root, 0, &[7u8; 8]))
        .unwrap();
    drop(pool);
    let pool = Pool::open(
        &dir,
        &PoolOptions {
            force_pmem: Some(false),
            ..PoolOptions::default()
        },
    )
    .unwrap();
    let mut b = [0u8; 8];
    pool.transaction(|tx| tx.read_at(root, 0, &mut b)).unwrap();
    assert_eq!(b, [7u8; 8]);
    std::fs::remove_file(&dir).unwrap();
}

#[test]
fn bad_files_give_clear_errors() {
    let p = tmp("bad");
    drop(Pool::create(&p, &opts(1 << 20)).unwrap());
    let good = std::fs::read(&p).unwrap();
    let check = |bytes: &[u8]| {
        std::fs::write(&p, bytes).unwrap();
        Pool::open(&p, &opts(0)).err().expect("must fail")
    };
    assert!(matches!(
        check(&good[..100]),
        PoolError::Truncated { found: 100, .. }
    ));
    assert!(matches!(
        check(&good[..500_000]),
        PoolError::Truncated {
            found: 500_000,
            needed: 1_048_576,
            ..
        }
    ));
    let mut v = good.clone();
    v[8] = 1;
    let e = check(&v);
    assert!(
        matches!(
            e,
            PoolError::Version {
                found: 1,
                supported: 3,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("version 3"));
    let mut m = good.clone();
    m[0] = b'Z';
    assert!(matches!(check(&m), PoolError::BadMagic { .. }));
    let mut c = good.clone();
    c[60] ^= 0x10;
    assert!(matches!(check(&c), PoolError::HeaderChecksum { .. }));
    assert!(matches!(
        Pool::open(tmp("missing"), &opts(0)),
        Err(PoolError::Io { op: "open", .. })
    ));
    std::fs::remove_file(&p).unwrap();
}

#[test]
fn fuzzed_headers_and_object_areas_never_panic() {
    let pool = Pool::create_in_memory(&opts(256 << 10)).unwrap();
    let root = pool.root_id();
    for i in 0..50u64 {
        pool.transaction(|tx| {
            let id = tx.alloc(40 + (i as usize % 200))?;
            tx.write_at(id, 0, &i.to_le_bytes())?;
            tx.write_at(root, 0, &i.to_le_bytes())
        })
        .unwrap();
    }
    let img = pool.image();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut rnd = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut opened = 0;
    for _ in 0..2000 {
        let mut m = img.clone();
        let hits = 1 + rnd() % 8;
        for _ in 0..hits {
            let pos = if rnd() % 2 == 0 {
                (rnd() % 128) as usize
            } else {
                (rnd() % m.len() as u64) as usize
            };
            m[pos] = rnd() as u8;
        }
        if let Ok(p) = Pool::open_image(&m, &opts(0)) {
            opened += 1;
            let _ = p.transaction(|tx| tx.read(root).map(|b| b.len()));
        }
    }
    assert!(opened > 0, "some mutations only touch payload bytes");
}

#[test]
fn a_full_pool_returns_an_error() {
    let pool = Pool::create_in_memory(&opts(128 << 10)).unwrap();
    let mut n = 0;
    let err = loop {
        match pool.transaction(|tx| tx.alloc(1000)) {
            Ok(_) => n += 1,
            Err(e) => break e,
        }
        assert!(n < 10_000);
    };
    assert!(matches!(err, TxError::PoolFull { bytes: 1000 }), "{err}");
    assert!(n > 10);
    // small objects still fit into the remaining space, and the pool works
    let root = pool.root_id();
    pool.transaction(|tx| tx.write_at(root, 0, &[1u8; 8]))
        .unwrap();
}

#[test]
fn large_objects_take_the_large_path_and_survive_reopen() {
    let p = tmp("large");
    let big: Vec<u8> = (0..20_000u32).map(|i| (i * 7) as u8).collect();
    let id = {
        let pool = Pool::create(&p, &opts(1 << 20)).unwrap();
        let second = Pool::open(&p, &opts(0));
        assert!(
            matches!(second, Err(PoolError::InUse { .. })),
            "a second opener is refused"
        );
        pool.transaction(|tx| {
            let id = tx.alloc(big.len())?;
            tx.write_at(id, 0, &big)?;
            Ok(id)
        })
        .unwrap()
    };
    let pool = Pool::open(&p, &opts(0)).unwrap();
    let got = pool.transaction(|tx| Ok(tx.read(id)?.to_vec())).unwrap();
    assert_eq!(got, big);
    // update it (a whole new copy), then free it
    pool.transaction(|tx| tx.write_at(id, 19_999, &[1]))
        .unwrap();
    pool.transaction(|tx| tx.free(id)).unwrap();
    drop(pool);
    let pool = Pool::open(&p, &opts(0)).unwrap();
    assert_eq!(pool.recovery().objects, 1);
    std::fs::remove_file(&p).unwrap();
}

#[test]
fn impossible_options_are_refused() {
    let e = Pool::create_in_memory(&PoolOptions {
        size: 4096,
        ..PoolOptions::default()
    });
    assert!(matches!(e, Err(PoolError::Options(_))));
    let e = Pool::create_in_memory(&PoolOptions {
        slots: 0,
        ..opts(1 << 20)
    });
    assert!(matches!(e, Err(PoolError::Options(_))));
}
