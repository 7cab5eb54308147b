use super::*;
use crate::{Pool, PoolOptions};

#[test]
fn the_mix_matches_the_description() {
    let mut n = [0u32; 7];
    for r in 0..100 {
        n[Kind::pick(r) as usize] += 1;
    }
    assert_eq!(n, [35, 10, 35, 2, 14, 2, 2]);
    let upd: u32 = (0..100).map(|r| u32::from(Kind::pick(r).updates())).sum();
    assert_eq!(upd, 20);
}

#[test]
fn row_widths_follow_the_description() {
    assert_eq!(
        [
            SUBSCRIBER_LEN,
            ACCESS_INFO_LEN,
            SPECIAL_FACILITY_LEN,
            CALL_FORWARDING_LEN
        ],
        [44, 15, 13, 22]
    );
    let mut b = [0u8; 15];
    digits(&mut b, 42);
    assert_eq!(&b, b"000000000000042");
    assert_eq!(number(&b), 42);
}

fn dump(e: &dyn Engine, db: &Tatp) -> Vec<(u64, Vec<u8>)> {
    db.rows.dump(e, &width)
}

fn counts(rows: &[(u64, Vec<u8>)]) -> [u64; 6] {
    let mut c = [0u64; 6];
    for (k, _) in rows {
        c[(k >> 56) as usize] += 1;
    }
    c
}

/// Every row agrees with its key, sub_nbr with s_id both ways, and every
/// forwarding row belongs to an existing facility.
fn check_rows(rows: &[(u64, Vec<u8>)], subscribers: u64) {
    let by_key: std::collections::BTreeMap<u64, &Vec<u8>> =
        rows.iter().map(|(k, v)| (*k, v)).collect();
    for (k, row) in rows {
        let id = k & ((1 << 56) - 1);
        match k >> 56 {
            SUBSCRIBER => {
                assert_eq!(S_ID.get(row), id);
                assert_eq!(number(S_SUB_NBR.bytes(row)), id);
                let ix = by_key[&key(SUB_NBR, id)];
                assert_eq!(
                    u64::from(u32::from_le_bytes([ix[0], ix[1], ix[2], ix[3]])),
                    id
                );
                assert!(S_VLR_LOCATION.get(row) >= 1 && S_BITS.get(row) < 1024);
            }
            ACCESS_INFO => {
                assert_eq!((AI_S_ID.get(row), AI_TYPE.get(row) - 1), (id >> 2, id & 3));
                assert!(AI_DATA3.bytes(row).iter().all(u8::is_ascii_uppercase));
            }
            SPECIAL_FACILITY => {
                assert_eq!((SF_S_ID.get(row), SF_TYPE.get(row) - 1), (id >> 2, id & 3));
                assert!(SF_IS_ACTIVE.get(row) <= 1);
            }
            CALL_FORWARDING => {
                let (s, ty, st) = (id >> 4, (id >> 2) & 3, (id & 3) * 8);
                assert_eq!(CF_S_ID.get(row), s);
                assert_eq!((CF_SF_TYPE.get(row), CF_START_TIME.get(row)), (ty + 1, st));
                let end = CF_END_TIME.get(row);
                assert!(end > st && end <= st + 8, "end_time {end}");
                assert!(CF_NUMBERX.bytes(row).iter().all(u8::is_ascii_digit));
                assert!(by_key.contains_key(&sf_key(s, ty + 1)), "orphan forwarding");
            }
            SUB_NBR => assert!(id >= 1 && id <= subscribers),
            t => panic!("unknown table {t}"),
        }
    }
}

fn population_and_transactions_on(e: &dyn Engine) {
    let subs = 300;
    let db = Tatp::create(e, subs).unwrap();
    let rows0 = dump(e, &db);
    let c0 = counts(&rows0);
    assert_eq!((c0[1], c0[5]), (subs, subs));
    assert!(c0[2] >= subs && c0[2] <= 4 * subs && c0[3] >= subs && c0[3] <= 4 * subs);
    assert!(c0[4] > 0 && c0[4] <= 3 * c0[3]);
    // 85% of the facilities active
    let active = rows0
        .iter()
        .filter(|(k, r)| k >> 56 == SPECIAL_FACILITY && SF_IS_ACTIVE.get(r) == 1)
        .count() as f64;
    let share = active / c0[3] as f64;
    assert!((0.75..0.95).contains(&share), "{share}");
    check_rows(&rows0, subs);
    let mut kinds = [0u32; 7];
    let mut x = 1u64;
    for _ in 0..3000 {
        x = hash(x);
        let k = Tatp::pick(x);
        kinds[k as usize] += 1;
        e.run(k.updates(), &mut |t| db.run(t, k, x)).unwrap();
    }
    assert!(kinds.iter().all(|n| *n > 0), "{kinds:?}");
    let rows1 = dump(e, &db);
    let c1 = counts(&rows1);
    // subscribers, access info, facilities and the index never change in
    // number; forwarding rows come and go only where a facility exists
    assert_eq!((&c1[..4], c1[5]), (&c0[..4], c0[5]));
    assert_ne!(c1[4], c0[4]);
    check_rows(&rows1, subs);
    // updates rewrite whole rows but change only their own columns
    let before: std::collections::BTreeMap<u64, &Vec<u8>> =
        rows0.iter().map(|(k, v)| (*k, v)).collect();
    let mut moved = 0;
    for (k, row) in rows1.iter().filter(|(k, _)| k >> 56 == SUBSCRIBER) {
        let old = before[k];
        let keep = |r: &[u8]| {
            let mut r = r.to_vec();
            r[S_BITS.off] &= !1;
            S_VLR_LOCATION.set(&mut r, 0);
            r
        };
        assert_eq!(keep(row), keep(old));
        moved += usize::from(S_VLR_LOCATION.get(row) != S_VLR_LOCATION.get(old));
    }
    assert!(moved > 100, "{moved} subscribers moved");
}

#[test]
fn population_and_transactions_keep_the_tables_consistent() {
    let pool = Pool::create_in_memory(&PoolOptions {
        size: 32 << 20,
        ..PoolOptions::default()
    })
    .unwrap();
    population_and_transactions_on(&pool);
    assert!(pool.locked_ids().is_empty());
}

#[cfg(has_pmdk)]
#[test]
fn population_and_transactions_keep_the_tables_consistent_on_libpmemobj() {
    let pm = crate::pmdk::scratch_pool("tatp", 32 << 20);
    population_and_transactions_on(&pm);
}
