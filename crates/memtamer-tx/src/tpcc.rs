//! A TPC-C new-order-shaped transaction over the shared `TxOps` interface
//! (thesis §5.5 runs TPC-C new-order through PMEMKV). Rows are 16 B values
//! in one hash table keyed by (table, composite id); one warehouse, 10
//! districts, 3,000 customers per district, `items` items and stock rows.
//! Per transaction (TPC-C §2.4.2, simplified rows): read warehouse tax,
//! read-and-increment the district's next order id, read the customer,
//! insert ORDER and NEW-ORDER, then for 5-15 lines read ITEM, update STOCK
//! (quantity, +91 when it would drop below 10) and insert ORDER-LINE.

use crate::error::TxError;
use crate::kv::{hash, Engine, HashTable, TxOps, Val};

const WAREHOUSE: u64 = 1;
const DISTRICT: u64 = 2;
const CUSTOMER: u64 = 3;
const ITEM: u64 = 4;
const STOCK: u64 = 5;
const ORDER: u64 = 6;
const NEW_ORDER: u64 = 7;
const ORDER_LINE: u64 = 8;

fn key(table: u64, id: u64) -> u64 {
    table << 56 | id
}

fn val(a: u64, b: u64) -> Val {
    let mut v = [0u8; 16];
    v[..8].copy_from_slice(&a.to_le_bytes());
    v[8..].copy_from_slice(&b.to_le_bytes());
    v
}

fn split(v: &Val) -> (u64, u64) {
    let mut a = [0u8; 8];
    let mut b = [0u8; 8];
    a.copy_from_slice(&v[..8]);
    b.copy_from_slice(&v[8..]);
    (u64::from_le_bytes(a), u64::from_le_bytes(b))
}

/// The populated database.
pub struct Tpcc {
    ht: HashTable,
    items: u64,
}

impl Tpcc {
    /// Creates and populates the tables (descriptor at root offset 16).
    pub fn create(e: &dyn Engine, items: u64) -> Result<Tpcc, TxError> {
        // Buckets for a load factor of about 1/4 at population: each
        // transaction inserts ~12 rows (ORDER, NEW-ORDER, ORDER-LINEs), and
        // with a fixed 64K buckets the chains grew through a run (every
        // insert walks its whole chain), so a cell's cost depended on how
        // long the engines had run before it.
        let buckets = (((items * 2 + 30_000) * 4) as usize)
            .next_power_of_two()
            .max(1 << 16);
        let ht = HashTable::create(e, 16, buckets)?;
        let mut rows: Vec<(u64, Val)> = vec![(key(WAREHOUSE, 0), val(7, 0))];
        rows.extend((0..10).map(|d| (key(DISTRICT, d), val(3001, 5))));
        rows.extend((0..30_000).map(|c| (key(CUSTOMER, c), val(c % 50, 0))));
        rows.extend((0..items).map(|i| (key(ITEM, i), val(100 + i % 9900, 0))));
        rows.extend((0..items).map(|i| (key(STOCK, i), val(10 + hash(i) % 91, 0))));
        for chunk in rows.chunks(256) {
            e.run(true, &mut |t| {
                for (k, v) in chunk {
                    ht.put(t, *k, v)?;
                }
                Ok(())
            })?;
        }
        Ok(Tpcc { ht, items })
    }

    /// Opens the database [`Tpcc::create`] made with the same `items` (a
    /// second process on a preloaded pool, e.g. a traced libpmemobj run).
    pub fn open(e: &dyn Engine, items: u64) -> Result<Tpcc, TxError> {
        Ok(Tpcc {
            ht: HashTable::open(e, 16)?,
            items,
        })
    }

    /// One new-order transaction driven by the random word `x`.
    pub fn new_order(&self, t: &mut dyn TxOps, x: u64) -> Result<(), TxError> {
        let missing = |what: &str| TxError::Aborted(format!("tpcc: {what} row missing"));
        let d = x % 10;
        let c = (x >> 8) % 3000 + d * 3000;
        let (_tax, _) = split(
            &self
                .ht
                .get(t, key(WAREHOUSE, 0))?
                .ok_or_else(|| missing("warehouse"))?,
        );
        let (o_id, dtax) = split(
            &self
                .ht
                .get(t, key(DISTRICT, d))?
                .ok_or_else(|| missing("district"))?,
        );
        self.ht.put(t, key(DISTRICT, d), &val(o_id + 1, dtax))?;
        let (_discount, _) = split(
            &self
                .ht
                .get(t, key(CUSTOMER, c))?
                .ok_or_else(|| missing("customer"))?,
        );
        let order = d << 32 | o_id;
        let lines = 5 + (x >> 20) % 11;
        self.ht.put(t, key(ORDER, order), &val(c, lines))?;
        self.ht.put(t, key(NEW_ORDER, order), &val(1, 0))?;
        let mut y = x;
        for l in 0..lines {
            y = hash(y);
            let i = y % self.items;
            let qty = 1 + (y >> 32) % 10;
            let (price, _) = split(
                &self
                    .ht
                    .get(t, key(ITEM, i))?
                    .ok_or_else(|| missing("item"))?,
            );
            let (s_qty, ytd) = split(
                &self
                    .ht
                    .get(t, key(STOCK, i))?
                    .ok_or_else(|| missing("stock"))?,
            );
            let nq = if s_qty >= qty + 10 {
                s_qty - qty
            } else {
                s_qty + 91 - qty
            };
            self.ht.put(t, key(STOCK, i), &val(nq, ytd + qty))?;
            self.ht
                .put(t, key(ORDER_LINE, order << 4 | l), &val(i, price * qty))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Pool, PoolOptions};

    #[test]
    fn new_orders_advance_districts_and_insert_their_rows() {
        let pool = Pool::create_in_memory(&PoolOptions {
            size: 32 << 20,
            ..PoolOptions::default()
        })
        .unwrap();
        let db = Tpcc::create(&pool, 500).unwrap();
        let n = 300u64;
        for i in 0..n {
            pool.run(true, &mut |t| db.new_order(t, hash(i))).unwrap();
        }
        let mut next = 0;
        let mut orders = 0;
        let mut lines = 0;
        pool.run(false, &mut |t| {
            for d in 0..10 {
                let (o_id, _) = split(&db.ht.get(t, key(DISTRICT, d))?.unwrap_or_default());
                next += o_id;
                for o in 3001..o_id {
                    let (_, l) = split(&db.ht.get(t, key(ORDER, d << 32 | o))?.unwrap_or_default());
                    orders += 1;
                    for k in 0..l {
                        lines += u64::from(
                            db.ht
                                .get(t, key(ORDER_LINE, (d << 32 | o) << 4 | k))?
                                .is_some(),
                        );
                    }
                }
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(next, 10 * 3001 + n);
        assert_eq!(orders, n);
        assert!(lines >= 5 * n && lines <= 15 * n);
    }
}
