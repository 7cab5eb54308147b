//! TATP (Telecom Application Transaction Processing, v1.0) in process,
//! over the shared `TxOps` interface like `tpcc`: the four tables as 16 B
//! rows in one hash table keyed by (table, composite key), the standard
//! population and the standard mix of seven transactions (80% read-only).
//!
//! Population per subscriber (TATP spec §3): one SUBSCRIBER row; 1-4
//! ACCESS_INFO rows (ai_type 1..4); 1-4 SPECIAL_FACILITY rows (sf_type
//! 1..4, 85% active); 0-3 CALL_FORWARDING rows per special facility
//! (start_time 0, 8 or 16). Subscriber ids are drawn non-uniformly as the
//! spec prescribes (`(rand(0, A) | rand(1, N)) % N + 1`, A = 65535 for
//! N <= 1M). Rows are simplified to 16 B (the spec's strings and bit/hex
//! columns are folded into two words); the lookups by `sub_nbr` use the
//! subscriber id directly.
//!
//! Snapshot isolation is enough here: every read-write transaction writes
//! the rows whose values it decides on (or inserts/deletes keyed rows,
//! which write the same bucket head or node), and the only cross-row rule,
//! "a CALL_FORWARDING row belongs to an existing SPECIAL_FACILITY row",
//! cannot be broken because special facilities are never deleted; so no
//! write skew (docs/tx.md "Snapshot isolation vs write skew").

use crate::error::TxError;
use crate::kv::{hash, Engine, HashTable, TxOps, Val};

const SUBSCRIBER: u64 = 1;
const ACCESS_INFO: u64 = 2;
const SPECIAL_FACILITY: u64 = 3;
const CALL_FORWARDING: u64 = 4;

/// The seven TATP transactions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// 35%, read-only: one SUBSCRIBER row.
    GetSubscriberData,
    /// 10%, read-only: a SPECIAL_FACILITY row and its CALL_FORWARDING rows.
    GetNewDestination,
    /// 35%, read-only: one ACCESS_INFO row.
    GetAccessData,
    /// 2%: SUBSCRIBER bit and SPECIAL_FACILITY data_a.
    UpdateSubscriberData,
    /// 14%: SUBSCRIBER vlr_location.
    UpdateLocation,
    /// 2%: reads the subscriber's facilities, inserts a CALL_FORWARDING row.
    InsertCallForwarding,
    /// 2%: deletes a CALL_FORWARDING row.
    DeleteCallForwarding,
}

impl Kind {
    /// The spec's mix (§4): `r` uniform in 0..100.
    pub fn pick(r: u64) -> Kind {
        match r {
            0..=34 => Kind::GetSubscriberData,
            35..=44 => Kind::GetNewDestination,
            45..=79 => Kind::GetAccessData,
            80..=81 => Kind::UpdateSubscriberData,
            82..=95 => Kind::UpdateLocation,
            96..=97 => Kind::InsertCallForwarding,
            _ => Kind::DeleteCallForwarding,
        }
    }

    /// Whether the transaction may write (PMDK takes its write lock).
    pub fn updates(self) -> bool {
        matches!(
            self,
            Kind::UpdateSubscriberData
                | Kind::UpdateLocation
                | Kind::InsertCallForwarding
                | Kind::DeleteCallForwarding
        )
    }
}

fn key(table: u64, id: u64) -> u64 {
    table << 56 | id
}

fn val(a: u64, b: u64) -> Val {
    let mut v = [0u8; 16];
    v[..8].copy_from_slice(&a.to_le_bytes());
    v[8..].copy_from_slice(&b.to_le_bytes());
    v
}

fn first(v: &Val) -> u64 {
    u64::from_le_bytes([v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]])
}

fn ai_key(s: u64, ai_type: u64) -> u64 {
    key(ACCESS_INFO, s << 2 | (ai_type - 1))
}
fn sf_key(s: u64, sf_type: u64) -> u64 {
    key(SPECIAL_FACILITY, s << 2 | (sf_type - 1))
}
fn cf_key(s: u64, sf_type: u64, start: u64) -> u64 {
    key(
        CALL_FORWARDING,
        ((s << 2 | (sf_type - 1)) << 2) | (start / 8),
    )
}

/// The populated database.
pub struct Tatp {
    ht: HashTable,
    subscribers: u64,
}

impl Tatp {
    /// Rows the population of `subscribers` holds, about 10 per subscriber
    /// (sizes the hash table and the pools).
    pub fn rows(subscribers: u64) -> u64 {
        subscribers * 10
    }

    /// Creates and populates the tables (descriptor at root offset 24),
    /// the hash table sized for a load factor of about one.
    pub fn create(e: &dyn Engine, subscribers: u64) -> Result<Tatp, TxError> {
        if subscribers == 0 || subscribers >= 1 << 40 {
            return Err(TxError::Aborted(format!(
                "tatp: {subscribers} subscribers (1 .. 2^40)"
            )));
        }
        let buckets = (Self::rows(subscribers) as usize)
            .next_power_of_two()
            .max(1024);
        let ht = HashTable::create(e, 24, buckets)?;
        let mut rows: Vec<(u64, Val)> = Vec::with_capacity(256);
        let flush = |rows: &mut Vec<(u64, Val)>| -> Result<(), TxError> {
            e.run(true, &mut |t| {
                for (k, v) in rows.iter() {
                    ht.put(t, *k, v)?;
                }
                Ok(())
            })?;
            rows.clear();
            Ok(())
        };
        for s in 1..=subscribers {
            let mut r = hash(s ^ 0x7a7f);
            rows.push((key(SUBSCRIBER, s), val(r & 0xffff_ffff, r >> 32)));
            r = hash(r);
            for ai in 1..=1 + r % 4 {
                rows.push((ai_key(s, ai), val(hash(r ^ ai) & 0xff, ai)));
            }
            r = hash(r);
            for sf in 1..=1 + r % 4 {
                let x = hash(r ^ sf);
                let active = u64::from(x % 100 < 85);
                rows.push((sf_key(s, sf), val(active | (x >> 8 & 0xff) << 8, sf)));
                for c in 0..x % 4 {
                    let start = c * 8;
                    rows.push((cf_key(s, sf, start), val(start + 1 + x % 8, x >> 16)));
                }
            }
            if rows.len() >= 256 {
                flush(&mut rows)?;
            }
        }
        if !rows.is_empty() {
            flush(&mut rows)?;
        }
        Ok(Tatp { ht, subscribers })
    }

    /// Subscriber count.
    pub fn subscribers(&self) -> u64 {
        self.subscribers
    }

    /// A subscriber id, non-uniform as the spec draws it (§4.1).
    fn sid(&self, x: u64) -> u64 {
        let a = if self.subscribers <= 1_000_000 {
            65_535
        } else if self.subscribers <= 10_000_000 {
            1_048_575
        } else {
            2_097_151
        };
        let y = hash(x);
        (((y & 0xffff_ffff) % (a + 1)) | (1 + (y >> 32) % self.subscribers)) % self.subscribers + 1
    }

    /// The transaction the random word `x` selects, and whether it may write.
    pub fn pick(x: u64) -> Kind {
        Kind::pick((x >> 48) % 100)
    }

    /// Runs transaction `k` driven by the random word `x`. Rows the spec
    /// expects to be missing in some calls (an inactive or absent facility,
    /// a duplicate or absent forwarding row) make it do nothing further,
    /// as the spec's "expected failures" do; it still commits.
    pub fn run(&self, t: &mut dyn TxOps, k: Kind, x: u64) -> Result<(), TxError> {
        let s = self.sid(x);
        let y = hash(x ^ 0x5151);
        let sf_type = 1 + y % 4;
        let start = (y >> 8) % 3 * 8;
        let missing = || TxError::Aborted(format!("tatp: subscriber {s} missing"));
        match k {
            Kind::GetSubscriberData => {
                self.ht.get(t, key(SUBSCRIBER, s))?.ok_or_else(missing)?;
            }
            Kind::GetNewDestination => {
                let end = 1 + (y >> 16) % 24;
                if let Some(sf) = self.ht.get(t, sf_key(s, sf_type))? {
                    if first(&sf) & 1 == 1 {
                        for st in [0, 8, 16].into_iter().filter(|st| *st <= start) {
                            if let Some(cf) = self.ht.get(t, cf_key(s, sf_type, st))? {
                                std::hint::black_box(first(&cf) > end);
                            }
                        }
                    }
                }
            }
            Kind::GetAccessData => {
                self.ht.get(t, ai_key(s, 1 + y % 4))?;
            }
            Kind::UpdateSubscriberData => {
                let sub = self.ht.get(t, key(SUBSCRIBER, s))?.ok_or_else(missing)?;
                let bits = u64::from_le_bytes([
                    sub[8], sub[9], sub[10], sub[11], sub[12], sub[13], sub[14], sub[15],
                ]);
                self.ht.put(
                    t,
                    key(SUBSCRIBER, s),
                    &val(first(&sub), bits ^ (y >> 20) & 1),
                )?;
                if let Some(sf) = self.ht.get(t, sf_key(s, sf_type))? {
                    let a = first(&sf) & !0xff00 | ((y >> 24) & 0xff) << 8;
                    self.ht.put(t, sf_key(s, sf_type), &val(a, sf_type))?;
                }
            }
            Kind::UpdateLocation => {
                let sub = self.ht.get(t, key(SUBSCRIBER, s))?.ok_or_else(missing)?;
                let mut v = sub;
                v[..8].copy_from_slice(&(y >> 32).to_le_bytes());
                self.ht.put(t, key(SUBSCRIBER, s), &v)?;
            }
            Kind::InsertCallForwarding => {
                self.ht.get(t, key(SUBSCRIBER, s))?.ok_or_else(missing)?;
                // SELECT sf_type FROM SPECIAL_FACILITY WHERE s_id = s
                let mut has = false;
                for sf in 1..=4 {
                    let present = self.ht.get(t, sf_key(s, sf))?.is_some();
                    has |= sf == sf_type && present;
                }
                let k = cf_key(s, sf_type, start);
                if has && self.ht.get(t, k)?.is_none() {
                    self.ht
                        .put(t, k, &val(start + 1 + (y >> 40) % 8, y >> 16))?;
                }
            }
            Kind::DeleteCallForwarding => {
                self.ht.get(t, key(SUBSCRIBER, s))?.ok_or_else(missing)?;
                self.ht.remove(t, cf_key(s, sf_type, start))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Pool, PoolOptions};

    #[test]
    fn the_mix_matches_the_spec() {
        let mut n = [0u32; 7];
        for r in 0..100 {
            n[Kind::pick(r) as usize] += 1;
        }
        assert_eq!(n, [35, 10, 35, 2, 14, 2, 2]);
        let upd: u32 = (0..100).map(|r| u32::from(Kind::pick(r).updates())).sum();
        assert_eq!(upd, 20);
    }

    #[test]
    fn population_and_transactions_keep_the_tables_consistent() {
        let pool = Pool::create_in_memory(&PoolOptions {
            size: 32 << 20,
            ..PoolOptions::default()
        })
        .unwrap();
        let db = Tatp::create(&pool, 300).unwrap();
        let count = |db: &Tatp| {
            let mut c = [0u64; 5];
            pool.run(false, &mut |t| {
                let (items, _) = db.ht.items(t)?;
                c = [0; 5];
                for (k, _) in items {
                    c[(k >> 56) as usize] += 1;
                }
                Ok(())
            })
            .unwrap();
            c
        };
        let c0 = count(&db);
        assert_eq!(c0[1], 300);
        assert!(c0[2] >= 300 && c0[2] <= 1200 && c0[3] >= 300 && c0[3] <= 1200);
        let mut kinds = [0u32; 7];
        let mut x = 1u64;
        for _ in 0..3000 {
            x = hash(x);
            let k = Tatp::pick(x);
            kinds[k as usize] += 1;
            pool.run(k.updates(), &mut |t| db.run(t, k, x)).unwrap();
        }
        assert!(kinds.iter().all(|n| *n > 0), "{kinds:?}");
        let c1 = count(&db);
        // subscribers, access info and facilities never change in number;
        // forwarding rows come and go only where a facility exists
        assert_eq!(c1[..4], c0[..4]);
        pool.run(false, &mut |t| {
            let (items, _) = db.ht.items(t)?;
            for (k, _) in items.iter().filter(|(k, _)| k >> 56 == CALL_FORWARDING) {
                let sf = (k & ((1 << 56) - 1)) >> 2;
                assert!(db.ht.get(t, key(SPECIAL_FACILITY, sf))?.is_some());
            }
            Ok(())
        })
        .unwrap();
        assert!(pool.locked_ids().is_empty());
    }
}
