//! TATP (Telecom Application Transaction Processing benchmark
//! description, v1.0) in process, over the shared `TxOps` interface like
//! `tpcc`: the four tables at the description's column widths in one
//! [`RowTable`] keyed by (table, primary key), a row read returns the
//! whole row and every update writes the whole row back, the standard
//! population and the standard mix of seven transactions (80% read-only).
//!
//! Rows (description §2), every column at the width of its declared range,
//! packed, as `tpcc` does: SUBSCRIBER 44 B (s_id u32, sub_nbr 15 digits,
//! bit_1..10 as one bit each in 2 B, hex_1..10 as one nibble each in 5 B,
//! byte2_1..10 one byte each, msc_location and vlr_location u32),
//! ACCESS_INFO 15 B (s_id, ai_type, data1, data2, data3 3 chars, data4 5),
//! SPECIAL_FACILITY 13 B (s_id, sf_type, is_active, error_cntrl, data_a,
//! data_b 5 chars), CALL_FORWARDING 22 B (s_id, sf_type, start_time,
//! end_time, numberx 15 digits). sub_nbr is UNIQUE and three transactions
//! look subscribers up by it: a secondary index (table SUB_NBR, keyed by
//! the 15-digit string's value, row = the s_id) serves those lookups.
//!
//! Population per subscriber (description §3): one SUBSCRIBER row (sub_nbr
//! = s_id zero-padded to 15 digits; bits, nibbles and bytes random;
//! locations in 1..2^32-1); 1-4 ACCESS_INFO rows (ai_type a random subset
//! of 1..4); 1-4 SPECIAL_FACILITY rows (sf_type a random subset, 85%
//! active); 0-3 CALL_FORWARDING rows per facility (start_time a random
//! subset of 0, 8, 16; end_time = start_time + 1..8). Subscriber ids are
//! drawn non-uniformly as prescribed (`(rand(0, A) | rand(1, N)) % N + 1`,
//! A = 65535 for N <= 1M).
//!
//! Snapshot isolation is enough here: every read-write transaction writes
//! the rows whose values it decides on (or inserts/deletes keyed rows,
//! which write the same bucket head or node), and the only cross-row rule,
//! "a CALL_FORWARDING row belongs to an existing SPECIAL_FACILITY row",
//! cannot be broken because special facilities are never deleted; so no
//! write skew (docs/tx.md "Snapshot isolation vs write skew").

use crate::error::TxError;
use crate::kv::{hash, Engine, TxOps};
use crate::rows::{Field, Rng, RowTable};

const SUBSCRIBER: u64 = 1;
const ACCESS_INFO: u64 = 2;
const SPECIAL_FACILITY: u64 = 3;
const CALL_FORWARDING: u64 = 4;
/// Secondary index sub_nbr -> s_id (sub_nbr is UNIQUE, §2).
const SUB_NBR: u64 = 5;

// SUBSCRIBER
const S_ID: Field = Field::first(4);
const S_SUB_NBR: Field = S_ID.then(15);
const S_BITS: Field = S_SUB_NBR.then(2); // bit_1 .. bit_10, bit i-1
const S_HEX: Field = S_BITS.then(5); // hex_1 .. hex_10, nibble i-1
const S_BYTE2: Field = S_HEX.then(10); // byte2_1 .. byte2_10
const S_MSC_LOCATION: Field = S_BYTE2.then(4);
const S_VLR_LOCATION: Field = S_MSC_LOCATION.then(4);
/// SUBSCRIBER row width.
pub const SUBSCRIBER_LEN: usize = S_VLR_LOCATION.end();

// ACCESS_INFO
const AI_S_ID: Field = Field::first(4);
const AI_TYPE: Field = AI_S_ID.then(1);
const AI_DATA1: Field = AI_TYPE.then(1);
const AI_DATA2: Field = AI_DATA1.then(1);
const AI_DATA3: Field = AI_DATA2.then(3);
const AI_DATA4: Field = AI_DATA3.then(5);
/// ACCESS_INFO row width.
pub const ACCESS_INFO_LEN: usize = AI_DATA4.end();

// SPECIAL_FACILITY
const SF_S_ID: Field = Field::first(4);
const SF_TYPE: Field = SF_S_ID.then(1);
const SF_IS_ACTIVE: Field = SF_TYPE.then(1);
const SF_ERROR_CNTRL: Field = SF_IS_ACTIVE.then(1);
const SF_DATA_A: Field = SF_ERROR_CNTRL.then(1);
const SF_DATA_B: Field = SF_DATA_A.then(5);
/// SPECIAL_FACILITY row width.
pub const SPECIAL_FACILITY_LEN: usize = SF_DATA_B.end();

// CALL_FORWARDING
const CF_S_ID: Field = Field::first(4);
const CF_SF_TYPE: Field = CF_S_ID.then(1);
const CF_START_TIME: Field = CF_SF_TYPE.then(1);
const CF_END_TIME: Field = CF_START_TIME.then(1);
const CF_NUMBERX: Field = CF_END_TIME.then(15);
/// CALL_FORWARDING row width.
pub const CALL_FORWARDING_LEN: usize = CF_NUMBERX.end();

/// SUB_NBR index row width (the s_id).
const INDEX_LEN: usize = 4;

/// The seven TATP transactions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// 35%, read-only: one SUBSCRIBER row.
    GetSubscriberData,
    /// 10%, read-only: a SPECIAL_FACILITY row and its CALL_FORWARDING rows.
    GetNewDestination,
    /// 35%, read-only: one ACCESS_INFO row.
    GetAccessData,
    /// 2%: SUBSCRIBER bit_1 and SPECIAL_FACILITY data_a.
    UpdateSubscriberData,
    /// 14%: SUBSCRIBER vlr_location, found by sub_nbr.
    UpdateLocation,
    /// 2%: reads the subscriber's facilities, inserts a CALL_FORWARDING row.
    InsertCallForwarding,
    /// 2%: deletes a CALL_FORWARDING row.
    DeleteCallForwarding,
}

impl Kind {
    /// The description's mix (§4): `r` uniform in 0..100.
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

/// `v` as a zero-padded decimal string filling `out` (sub_nbr, numberx).
fn digits(out: &mut [u8], mut v: u64) {
    for c in out.iter_mut().rev() {
        *c = b'0' + (v % 10) as u8;
        v /= 10;
    }
}

/// The value of a decimal string (the SUB_NBR index key).
fn number(s: &[u8]) -> u64 {
    s.iter()
        .fold(0, |n, c| n * 10 + u64::from(c.wrapping_sub(b'0') % 10))
}

/// Random upper-case letters (data3, data4, data_b).
fn upper(r: &mut Rng, out: &mut [u8]) {
    for c in out {
        *c = b'A' + r.range(0, 25) as u8;
    }
}

/// A random subset of `1..=n` of `k` elements, in random order.
fn subset(r: &mut Rng, n: u64, k: u64) -> Vec<u64> {
    let mut v: Vec<u64> = (1..=n).collect();
    for i in 0..k as usize {
        let j = r.range(i as u64, n - 1) as usize;
        v.swap(i, j);
    }
    v.truncate(k as usize);
    v
}

/// Row width by key (verification).
pub fn width(k: u64) -> usize {
    match k >> 56 {
        SUBSCRIBER => SUBSCRIBER_LEN,
        ACCESS_INFO => ACCESS_INFO_LEN,
        SPECIAL_FACILITY => SPECIAL_FACILITY_LEN,
        CALL_FORWARDING => CALL_FORWARDING_LEN,
        _ => INDEX_LEN,
    }
}

/// The populated database.
pub struct Tatp {
    rows: RowTable,
    subscribers: u64,
}

impl Tatp {
    /// Rows the population of `subscribers` holds, about 11.75 per
    /// subscriber (1 + 2.5 + 2.5 + 3.75 + the index row; sizes the hash
    /// table and the pools).
    pub fn rows(subscribers: u64) -> u64 {
        subscribers * 12
    }

    /// Creates and populates the tables (descriptor at root offset 24),
    /// the hash table sized for a load factor of about one.
    pub fn create(e: &dyn Engine, subscribers: u64) -> Result<Tatp, TxError> {
        if subscribers == 0 || subscribers >= 1 << 32 {
            return Err(TxError::Aborted(format!(
                "tatp: {subscribers} subscribers (1 .. 2^32)"
            )));
        }
        let buckets = (Self::rows(subscribers) as usize)
            .next_power_of_two()
            .max(1024);
        let rows = RowTable::create(e, 24, buckets)?;
        let mut all: Vec<(u64, Vec<u8>)> = Vec::with_capacity(256);
        let flush = |all: &mut Vec<(u64, Vec<u8>)>| -> Result<(), TxError> {
            e.run(true, &mut |t| {
                for (k, v) in all.iter() {
                    rows.insert(t, *k, v)?;
                }
                Ok(())
            })?;
            all.clear();
            Ok(())
        };
        for s in 1..=subscribers {
            let mut r = Rng(hash(s ^ 0x7a7f));
            let mut row = vec![0u8; SUBSCRIBER_LEN];
            S_ID.set(&mut row, s);
            digits(S_SUB_NBR.bytes_mut(&mut row), s);
            S_BITS.set(&mut row, r.range(0, 1023));
            S_HEX.set(&mut row, r.next() & 0xff_ffff_ffff);
            for b in S_BYTE2.bytes_mut(&mut row) {
                *b = r.range(0, 255) as u8;
            }
            S_MSC_LOCATION.set(&mut row, r.range(1, u64::from(u32::MAX)));
            S_VLR_LOCATION.set(&mut row, r.range(1, u64::from(u32::MAX)));
            all.push((key(SUB_NBR, s), (s as u32).to_le_bytes().to_vec()));
            all.push((key(SUBSCRIBER, s), row));
            let n = r.range(1, 4);
            for ai in subset(&mut r, 4, n) {
                let mut row = vec![0u8; ACCESS_INFO_LEN];
                AI_S_ID.set(&mut row, s);
                AI_TYPE.set(&mut row, ai);
                AI_DATA1.set(&mut row, r.range(0, 255));
                AI_DATA2.set(&mut row, r.range(0, 255));
                upper(&mut r, AI_DATA3.bytes_mut(&mut row));
                upper(&mut r, AI_DATA4.bytes_mut(&mut row));
                all.push((ai_key(s, ai), row));
            }
            let n = r.range(1, 4);
            for sf in subset(&mut r, 4, n) {
                let mut row = vec![0u8; SPECIAL_FACILITY_LEN];
                SF_S_ID.set(&mut row, s);
                SF_TYPE.set(&mut row, sf);
                SF_IS_ACTIVE.set(&mut row, u64::from(r.range(0, 99) < 85));
                SF_ERROR_CNTRL.set(&mut row, r.range(0, 255));
                SF_DATA_A.set(&mut row, r.range(0, 255));
                upper(&mut r, SF_DATA_B.bytes_mut(&mut row));
                all.push((sf_key(s, sf), row));
                let n = r.range(0, 3);
                for st in subset(&mut r, 3, n) {
                    let start = (st - 1) * 8;
                    let mut row = vec![0u8; CALL_FORWARDING_LEN];
                    CF_S_ID.set(&mut row, s);
                    CF_SF_TYPE.set(&mut row, sf);
                    CF_START_TIME.set(&mut row, start);
                    CF_END_TIME.set(&mut row, start + r.range(1, 8));
                    digits(CF_NUMBERX.bytes_mut(&mut row), r.next());
                    all.push((cf_key(s, sf, start), row));
                }
            }
            if all.len() >= 256 {
                flush(&mut all)?;
            }
        }
        if !all.is_empty() {
            flush(&mut all)?;
        }
        Ok(Tatp { rows, subscribers })
    }

    /// Subscriber count.
    pub fn subscribers(&self) -> u64 {
        self.subscribers
    }

    /// A subscriber id, non-uniform as the description draws it (§4.1).
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

    fn missing(s: u64) -> TxError {
        TxError::Aborted(format!("tatp: subscriber {s} missing"))
    }

    /// The subscriber whose sub_nbr is `sub_nbr`, through the index.
    fn by_sub_nbr(&self, t: &mut dyn TxOps, sub_nbr: &[u8]) -> Result<u64, TxError> {
        let n = number(sub_nbr);
        let mut b = [0u8; INDEX_LEN];
        if !self.rows.get(t, key(SUB_NBR, n), &mut b)? {
            return Err(Self::missing(n));
        }
        Ok(u64::from(u32::from_le_bytes(b)))
    }

    /// Runs transaction `k` driven by the random word `x`. Rows the
    /// description expects to be missing in some calls (an inactive or
    /// absent facility, a duplicate or absent forwarding row) make it do
    /// nothing further, as its "expected failures" do; it still commits.
    pub fn run(&self, t: &mut dyn TxOps, k: Kind, x: u64) -> Result<(), TxError> {
        let s = self.sid(x);
        let mut r = Rng(hash(x ^ 0x5151));
        let sf_type = r.range(1, 4);
        let start = r.range(0, 2) * 8;
        let mut sub = [0u8; SUBSCRIBER_LEN];
        let mut sub_nbr = [0u8; 15];
        digits(&mut sub_nbr, s);
        match k {
            Kind::GetSubscriberData => {
                if !self.rows.get(t, key(SUBSCRIBER, s), &mut sub)? {
                    return Err(Self::missing(s));
                }
                std::hint::black_box(&sub);
            }
            Kind::GetNewDestination => {
                let end = r.range(1, 24);
                let mut sf = [0u8; SPECIAL_FACILITY_LEN];
                if self.rows.get(t, sf_key(s, sf_type), &mut sf)? && SF_IS_ACTIVE.get(&sf) == 1 {
                    let mut cf = [0u8; CALL_FORWARDING_LEN];
                    for st in [0, 8, 16].into_iter().filter(|st| *st <= start) {
                        if self.rows.get(t, cf_key(s, sf_type, st), &mut cf)?
                            && CF_END_TIME.get(&cf) > end
                        {
                            std::hint::black_box(CF_NUMBERX.bytes(&cf));
                        }
                    }
                }
            }
            Kind::GetAccessData => {
                let mut ai = [0u8; ACCESS_INFO_LEN];
                if self.rows.get(t, ai_key(s, r.range(1, 4)), &mut ai)? {
                    std::hint::black_box(&ai[AI_DATA1.off..]);
                }
            }
            Kind::UpdateSubscriberData => {
                if !self.rows.get(t, key(SUBSCRIBER, s), &mut sub)? {
                    return Err(Self::missing(s));
                }
                let bits = S_BITS.get(&sub) & !1 | r.range(0, 1);
                S_BITS.set(&mut sub, bits);
                self.rows.update(t, key(SUBSCRIBER, s), &sub)?;
                let mut sf = [0u8; SPECIAL_FACILITY_LEN];
                if self.rows.get(t, sf_key(s, sf_type), &mut sf)? {
                    SF_DATA_A.set(&mut sf, r.range(0, 255));
                    self.rows.update(t, sf_key(s, sf_type), &sf)?;
                }
            }
            Kind::UpdateLocation => {
                let id = self.by_sub_nbr(t, &sub_nbr)?;
                if !self.rows.get(t, key(SUBSCRIBER, id), &mut sub)? {
                    return Err(Self::missing(id));
                }
                S_VLR_LOCATION.set(&mut sub, r.range(1, u64::from(u32::MAX)));
                self.rows.update(t, key(SUBSCRIBER, id), &sub)?;
            }
            Kind::InsertCallForwarding => {
                let id = self.by_sub_nbr(t, &sub_nbr)?;
                // SELECT sf_type FROM SPECIAL_FACILITY WHERE s_id = id
                let mut has = false;
                let mut sf = [0u8; SPECIAL_FACILITY_LEN];
                for ty in 1..=4 {
                    let present = self.rows.get(t, sf_key(id, ty), &mut sf)?;
                    has |= ty == sf_type && present;
                }
                if has {
                    let mut cf = [0u8; CALL_FORWARDING_LEN];
                    CF_S_ID.set(&mut cf, id);
                    CF_SF_TYPE.set(&mut cf, sf_type);
                    CF_START_TIME.set(&mut cf, start);
                    CF_END_TIME.set(&mut cf, start + r.range(1, 8));
                    digits(CF_NUMBERX.bytes_mut(&mut cf), r.next());
                    // a duplicate primary key is the expected failure
                    self.rows.insert(t, cf_key(id, sf_type, start), &cf)?;
                }
            }
            Kind::DeleteCallForwarding => {
                let id = self.by_sub_nbr(t, &sub_nbr)?;
                self.rows.remove(t, cf_key(id, sf_type, start))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "tatp_tests.rs"]
mod tests;
