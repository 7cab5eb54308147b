//! fork + SIGKILL torture: a child process runs threads doing hash-table
//! transactions on a /dev/shm pool and is killed at a random moment; the
//! parent recovers the pool and checks that every transaction the child
//! saw commit is there, no partial one is, and nothing leaked. The child
//! continues from the recovered state on the next round.
//!
//! `MTX_TORTURE_KILLS` sets the number of kills (default 12 here; the
//! ignored test runs 1,000: `cargo test --release -p memtamer-tx --test
//! torture -- --ignored`).

use memtamer_tx::kv::{Engine, HashTable, Val};
use memtamer_tx::{Pool, PoolOptions, RecoveryMode};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};

const THREADS: u64 = 3;
const KEYS: u64 = 32;

fn h(t: u64, i: u64) -> u64 {
    memtamer_tx::kv::hash(t << 40 ^ i)
}

/// Thread t's op i: (key, delete?, value).
fn op(t: u64, i: u64) -> (u64, bool, Val) {
    let x = h(t, i);
    let mut v = [0u8; 16];
    v[..8].copy_from_slice(&i.to_le_bytes());
    v[8..].copy_from_slice(&t.to_le_bytes());
    (t + THREADS * (x % KEYS), x.is_multiple_of(3), v)
}

fn opts() -> PoolOptions {
    PoolOptions {
        size: 4 << 20,
        force_pmem: Some(true),
        gc_batch: 16,
        ..PoolOptions::default()
    }
}

fn counter(p: &Pool, t: u64) -> u64 {
    let mut b = [0u8; 8];
    p.transaction(|tx| tx.read_at(p.root_id(), 64 + 8 * t as usize, &mut b))
        .unwrap();
    u64::from_le_bytes(b)
}

fn child(path: &std::path::Path, shared: &[AtomicU64], chkp: bool) -> ! {
    let pool = match Pool::open(path, &opts()) {
        Ok(p) => p,
        Err(_) => unsafe { libc::_exit(3) },
    };
    let ht = match HashTable::open(&pool, 0) {
        Ok(h) => h,
        Err(_) => unsafe { libc::_exit(4) },
    };
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        if chkp {
            // checkpoints (and defragmentation passes) every 0.5 ms, so
            // kills land inside them too
            let (pool, stop) = (&pool, &stop);
            s.spawn(move || pool.run_checkpointer(std::time::Duration::from_micros(500), stop));
        }
        for t in 0..THREADS {
            let (pool, ht) = (&pool, &ht);
            s.spawn(move || {
                let mut i = counter(pool, t);
                shared[t as usize].store(i, Ordering::SeqCst);
                loop {
                    i += 1;
                    let (k, del, v) = op(t, i);
                    let root = pool.root_id();
                    let r = pool.run(true, &mut |tx| {
                        if del {
                            ht.remove(tx, k)?;
                        } else {
                            ht.put(tx, k, &v)?;
                        }
                        tx.put(root, 64 + 8 * t as usize, &i.to_le_bytes())
                    });
                    if r.is_err() {
                        unsafe { libc::_exit(5) };
                    }
                    // the commit returned: it must survive any crash now
                    shared[t as usize].store(i, Ordering::SeqCst);
                }
            });
        }
    });
    unsafe { libc::_exit(0) }
}

/// One torture at a time: a child forked by one test would inherit the
/// other test's open pool descriptor, and with it that pool's flock.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn torture(kills: u64, chkp: bool) {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let path = std::path::PathBuf::from(format!(
        "/dev/shm/mtx-torture-{}-{}",
        std::process::id(),
        u8::from(chkp)
    ));
    let _ = std::fs::remove_file(&path);
    {
        let pool = Pool::create(&path, &opts()).unwrap();
        HashTable::create(&pool, 0, 64).unwrap();
    }
    // committed-op counters the child publishes, in memory shared across fork
    let shm = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(shm, libc::MAP_FAILED);
    let shared = unsafe { std::slice::from_raw_parts(shm as *const AtomicU64, THREADS as usize) };
    let mut models: Vec<BTreeMap<u64, Val>> = vec![BTreeMap::new(); THREADS as usize];
    let mut applied = vec![0u64; THREADS as usize];
    let mut seed = 0x1234_5678u64;
    let mut total_ops = 0;
    let (mut via_chkp, mut max_epoch) = (0u64, 0u64);
    for round in 0..kills {
        for s in shared {
            s.store(u64::MAX, Ordering::SeqCst);
        }
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            child(&path, shared, chkp);
        }
        seed = memtamer_tx::kv::hash(seed);
        // let it start (recover + open), then kill at a random moment
        let t0 = std::time::Instant::now();
        while shared.iter().any(|s| s.load(Ordering::SeqCst) == u64::MAX)
            && t0.elapsed().as_secs() < 20
        {
            std::thread::yield_now();
        }
        std::thread::sleep(std::time::Duration::from_micros(200 + seed % 8000));
        unsafe { libc::kill(pid, libc::SIGKILL) };
        let mut status = 0;
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert!(
            libc::WIFSIGNALED(status),
            "round {round}: child exited early with status {status:#x}"
        );
        let seen: Vec<u64> = shared.iter().map(|s| s.load(Ordering::SeqCst)).collect();

        let full = Pool::open_image(
            &std::fs::read(&path).unwrap(),
            &PoolOptions {
                recovery: RecoveryMode::FullScan,
                ..opts()
            },
        )
        .unwrap_or_else(|e| panic!("round {round}: full-scan recovery failed: {e}"));
        let pool = Pool::open(&path, &opts())
            .unwrap_or_else(|e| panic!("round {round}: recovery failed: {e}"));
        assert_eq!(
            pool.recovered_state(),
            full.recovered_state(),
            "round {round}: checkpoint recovery {:?} differs from the full scan",
            pool.recovery()
        );
        if pool.recovery().checkpoint_epoch > 0 {
            via_chkp += 1;
            max_epoch = max_epoch.max(pool.recovery().checkpoint_epoch);
        }
        let ht = HashTable::open(&pool, 0).unwrap();
        let mut items = None;
        pool.run(false, &mut |t| {
            items = Some(ht.items(t)?);
            Ok(())
        })
        .unwrap();
        let (items, mut refs) = items.unwrap();
        for t in 0..THREADS {
            let c = counter(&pool, t);
            let s = seen[t as usize];
            assert!(
                c >= s && c <= s + 1,
                "round {round}: thread {t} saw {s} commits, pool holds {c}"
            );
            let m = &mut models[t as usize];
            for i in applied[t as usize] + 1..=c {
                let (k, del, v) = op(t, i);
                if del {
                    m.remove(&k);
                } else {
                    m.insert(k, v);
                }
            }
            total_ops += c - applied[t as usize];
            applied[t as usize] = c;
            let got: Vec<(u64, Val)> = items
                .iter()
                .filter(|(k, _)| k % THREADS == t)
                .copied()
                .collect();
            let want: Vec<(u64, Val)> = m.iter().map(|(k, v)| (*k, *v)).collect();
            assert_eq!(
                got, want,
                "round {round}: thread {t}'s keys differ from its first {c} operations"
            );
        }
        let mut b = [0u8; 4];
        pool.transaction(|tx| tx.read_at(pool.root_id(), 0, &mut b))
            .unwrap();
        refs.push(u32::from_le_bytes(b));
        refs.push(pool.root_id());
        let want: BTreeSet<u32> = refs.into_iter().collect();
        let live: BTreeSet<u32> = pool.live_ids().into_iter().collect();
        assert_eq!(live, want, "round {round}: leaked or lost objects");
    }
    eprintln!(
        "torture (checkpointer {chkp}): {kills} kills, {total_ops} committed operations verified, \
         {via_chkp} recoveries through the checkpoint (last epoch {max_epoch}), 0 violations"
    );
    assert!(total_ops > 0);
    assert!(via_chkp > 0, "the checkpoint path was never taken");
    let _ = std::fs::remove_file(&path);
}

#[test]
fn killed_children_leave_a_consistent_pool() {
    let kills = std::env::var("MTX_TORTURE_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12);
    torture(kills, false);
}

#[test]
fn killed_while_checkpointing_recovers_like_the_full_scan() {
    let kills = std::env::var("MTX_TORTURE_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12);
    torture(kills, true);
}

#[test]
#[ignore = "1,000 kills: run with --ignored"]
fn a_thousand_kills() {
    torture(1000, false);
}

#[test]
#[ignore = "1,000 kills with a checkpointer: run with --ignored"]
fn a_thousand_kills_with_checkpoints() {
    torture(1000, true);
}
