//! What the crash-state tests share (`crash_states.rs`, and
//! `crash_scan_fault.rs`, which needs a process of its own for its
//! process-wide fault switch): the structures under test, the recorded
//! run that drives them and the enumeration options.
#![allow(dead_code)] // each test binary uses part of it

use memtamer_tx::crash::{enumerate, CrashReport, EnumOptions, Recorder};
use memtamer_tx::kv::{Contents, Engine, HashTable, TxOps, Val};
use memtamer_tx::rbtree::RbTree;
use memtamer_tx::rows::RowTable;
use memtamer_tx::{Pool, PoolOptions, TxError};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

pub type Model = BTreeMap<u64, Val>;

#[derive(Clone, Copy, PartialEq)]
pub enum Kind {
    Hash,
    Rb,
    /// Rows of 16..352 B by key (1..7 lines per block): freed blocks of
    /// one size are reused by blocks of other sizes, so stale headers end
    /// up inside and across newer blocks.
    Rows,
}

/// Row width of key `k` (kind `Rows`).
pub fn width(k: u64) -> usize {
    16 + (k % 7) as usize * 56
}

/// The row of key `k` holding `v`: `v` repeated over the width.
pub fn row(k: u64, v: &Val) -> Vec<u8> {
    (0..width(k)).map(|i| v[i % 16]).collect()
}

pub fn contents(kind: Kind, p: &Pool) -> Result<Contents, TxError> {
    let mut out = None;
    match kind {
        Kind::Hash => {
            let ht = HashTable::open(p, 0)?;
            p.run(false, &mut |t| {
                out = Some(ht.items(t)?);
                Ok(())
            })?;
        }
        Kind::Rb => {
            let rb = RbTree::open(p, 8)?;
            p.run(false, &mut |t| {
                out = Some(rb.check(t)?);
                Ok(())
            })?;
        }
        Kind::Rows => {
            let rt = RowTable::open(p, 0)?;
            p.run(false, &mut |t| {
                let (rows, refs) = rt.items(t, &width)?;
                let mut items = Vec::new();
                for (k, r) in rows {
                    let mut v = [0u8; 16];
                    v.copy_from_slice(&r[..16]);
                    if r != row(k, &v) {
                        return Err(TxError::Aborted(format!("row {k} torn")));
                    }
                    items.push((k, v));
                }
                out = Some((items, refs));
                Ok(())
            })?;
        }
    }
    let (items, mut refs) = out.ok_or_else(|| TxError::Aborted("no contents".into()))?;
    let mut b = [0u8; 4];
    let off = if kind == Kind::Rb { 8 } else { 0 };
    p.transaction(|tx| tx.read_at(p.root_id(), off, &mut b))?;
    refs.push(u32::from_le_bytes(b));
    Ok((items, refs))
}

/// The structure under test (one of the three is set).
pub type Structures = (Option<HashTable>, Option<RbTree>, Option<RowTable>);

pub fn apply(
    kind: Kind,
    ds: &Structures,
    t: &mut dyn TxOps,
    k: u64,
    v: &Val,
    del: bool,
) -> Result<(), TxError> {
    let (ht, rb, rt) = ds;
    match (kind, ht, rb) {
        (Kind::Hash, Some(h), _) if del => drop(h.remove(t, k)?),
        (Kind::Hash, Some(h), _) => drop(h.put(t, k, v)?),
        (Kind::Rb, _, Some(r)) if del => drop(r.remove(t, k)?),
        (Kind::Rb, _, Some(r)) => drop(r.put(t, k, v)?),
        (Kind::Rows, _, _) => match rt {
            Some(r) if del => drop(r.remove(t, k)?),
            Some(r) => drop(r.put(t, k, &row(k, v))?),
            None => return Err(TxError::Aborted("structure missing".into())),
        },
        _ => return Err(TxError::Aborted("structure missing".into())),
    }
    Ok(())
}

/// Checkpoint and defragmentation cadence inside the recorded run.
#[derive(Clone, Copy, Default)]
pub struct Maint {
    /// Operations between checkpoints (0: none).
    pub checkpoint_every: u64,
    /// Operations between defragmentation passes (0: none).
    pub defrag_every: u64,
}

pub fn run(kind: Kind, ops: u64, fault: impl Fn(&Pool), eo: &EnumOptions) -> CrashReport {
    run_with(kind, ops, fault, eo, Maint::default())
}

pub fn run_with(
    kind: Kind,
    ops: u64,
    fault: impl Fn(&Pool),
    eo: &EnumOptions,
    maint: Maint,
) -> CrashReport {
    let rec = Arc::new(Recorder::default());
    let pool = Pool::create_in_memory(&PoolOptions {
        size: 192 << 10,
        slots: 4,
        gc_batch: 8,
        segment_lines: 64,
        hook: Some(rec.clone()),
        ..PoolOptions::default()
    })
    .unwrap();
    let ds: Structures = match kind {
        Kind::Hash => (Some(HashTable::create(&pool, 0, 8).unwrap()), None, None),
        Kind::Rb => (None, Some(RbTree::create(&pool, 8).unwrap()), None),
        Kind::Rows => (None, None, Some(RowTable::create(&pool, 0, 8).unwrap())),
    };
    let mut model = Model::new();
    let mut x = 12345u64;
    let mut rnd = || {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        x >> 33
    };
    for k in 0..24u64 {
        let v = [k as u8; 16];
        pool.run(true, &mut |t| apply(kind, &ds, t, k * 2, &v, false))
            .unwrap();
        model.insert(k * 2, v);
    }
    pool.collect();
    let mut models = vec![model.clone()];
    let mut moved = 0u64;
    rec.start();
    fault(&pool);
    for i in 1..=ops {
        let key = rnd() % 64;
        let del = rnd().is_multiple_of(3);
        let mut v = [0u8; 16];
        v[..8].copy_from_slice(&i.to_le_bytes());
        pool.run(true, &mut |t| apply(kind, &ds, t, key, &v, del))
            .unwrap();
        if del {
            model.remove(&key);
        } else {
            model.insert(key, v);
        }
        models.push(model.clone());
        rec.mark(i);
        if maint.defrag_every > 0 && i % maint.defrag_every == 0 {
            moved += pool.defrag(4).unwrap().objects_moved;
        }
        if maint.checkpoint_every > 0 && i % maint.checkpoint_every == 0 {
            pool.checkpoint().unwrap();
        }
    }
    rec.stop();
    if maint.defrag_every > 0 {
        eprintln!("defragmentation moved {moved} objects during the recorded run");
        // (the short fault-injection runs may have nothing to move yet)
        assert!(
            moved > 0 || ops < 300,
            "the defragmentation passes must move something"
        );
    }
    let flat = |m: &Model| m.iter().map(|(k, v)| (*k, *v)).collect::<Vec<_>>();
    enumerate(&rec, eo, &mut |p, done| {
        let (items, refs) = contents(kind, p).map_err(|e| format!("structure unreadable: {e}"))?;
        let d = done as usize;
        let ok =
            items == flat(&models[d]) || (d + 1 < models.len() && items == flat(&models[d + 1]));
        if !ok {
            return Err(format!(
                "contents are not the committed prefix {d} or {}",
                d + 1
            ));
        }
        let mut want: BTreeSet<u32> = refs.into_iter().collect();
        want.insert(p.root_id());
        let live: BTreeSet<u32> = p.live_ids().into_iter().collect();
        if live != want {
            return Err(format!(
                "leak: live-only {:?}, reachable-only {:?}",
                live.difference(&want).collect::<Vec<_>>(),
                want.difference(&live).collect::<Vec<_>>()
            ));
        }
        Ok(())
    })
}

pub fn eo() -> EnumOptions {
    EnumOptions {
        variants: 8,
        between: 0.6,
        seed: 42,
        compare_full_scan: false,
    }
}
