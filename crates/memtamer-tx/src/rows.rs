//! Keyed rows of any width over the shared `TxOps` interface: the
//! key-value store a PMEMKV-style TPC-C or TATP runs on (thesis §5.5 runs
//! TPC-C through PMEMKV). The bucket directory is [`HashTable`]'s; a node
//! carries a whole row, and a row update writes the whole row value
//! through `TxOps::put`, as a key-value `put` of the row does (that write
//! is what the thesis counts as "bytes modified by transactions", §5.2.1).

use crate::error::TxError;
use crate::kv::{Engine, HashTable, Ref, TxOps};

// node: key u64 @0, next u32 @8, row @12
const R_NEXT: usize = 8;
const R_ROW: usize = 12;

/// One column of a fixed-width row: byte offset and width.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    /// Byte offset in the row.
    pub off: usize,
    /// Width in bytes.
    pub len: usize,
}

impl Field {
    /// The first column of a row.
    pub const fn first(len: usize) -> Field {
        Field { off: 0, len }
    }
    /// The column right after `self` (rows are packed, no padding).
    pub const fn then(self, len: usize) -> Field {
        Field {
            off: self.off + self.len,
            len,
        }
    }
    /// One past the column's last byte (the row width after the last column).
    pub const fn end(self) -> usize {
        self.off + self.len
    }
    /// An unsigned little-endian number of the column's width (<= 8 B).
    pub fn get(self, row: &[u8]) -> u64 {
        let mut b = [0u8; 8];
        let n = self.len.min(8);
        b[..n].copy_from_slice(&row[self.off..self.off + n]);
        u64::from_le_bytes(b)
    }
    /// Stores `v` little-endian in the column's width (<= 8 B; truncated).
    pub fn set(self, row: &mut [u8], v: u64) {
        let n = self.len.min(8);
        row[self.off..self.off + n].copy_from_slice(&v.to_le_bytes()[..n]);
    }
    /// The column's bytes (text columns).
    pub fn bytes(self, row: &[u8]) -> &[u8] {
        &row[self.off..self.end()]
    }
    /// The column's bytes, writable.
    pub fn bytes_mut(self, row: &mut [u8]) -> &mut [u8] {
        &mut row[self.off..self.end()]
    }
}

/// Fills `out` with pseudo-random alphanumeric characters derived from
/// `seed` (the a-strings/n-strings of a population, TPC-C clause 4.3.2.2).
pub fn fill_text(out: &mut [u8], seed: u64) {
    const A: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let mut x = seed;
    for (i, c) in out.iter_mut().enumerate() {
        if i % 8 == 0 {
            x = crate::kv::hash(x);
        }
        *c = A[((x >> ((i % 8) * 8)) & 0xff) as usize % A.len()];
    }
}

/// Deterministic draws (splitmix64 steps) for populations and inputs
/// (TPC-C, TATP).
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = crate::kv::hash(self.0);
        self.0
    }
    /// Uniform in `lo..=hi`.
    pub(crate) fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
    /// NURand(A, x, y) of clause 2.1.6 (run-time constant C fixed).
    pub(crate) fn nurand(&mut self, a: u64, c: u64, lo: u64, hi: u64) -> u64 {
        ((self.range(0, a) | self.range(lo, hi)) + c) % (hi - lo + 1) + lo
    }
    /// A variable text of `lo..=hi` characters in `f` (rest zero), with
    /// "ORIGINAL" at a random place in 10% of them when `original`
    /// (I_DATA, S_DATA: clause 4.3.3.1).
    pub(crate) fn text(&mut self, row: &mut [u8], f: Field, lo: usize, hi: usize, original: bool) {
        let n = self.range(lo as u64, hi as u64) as usize;
        let seed = self.next();
        let b = f.bytes_mut(row);
        fill_text(&mut b[..n], seed);
        if original && self.range(0, 9) == 0 {
            let at = self.range(0, (n - 8) as u64) as usize;
            b[at..at + 8].copy_from_slice(b"ORIGINAL");
        }
    }
}

/// Every (key, row) in key order and every reference reached (verification).
pub type RowContents = (Vec<(u64, Vec<u8>)>, Vec<Ref>);

/// A chained hash table from u64 keys to rows (each node one object).
pub struct RowTable {
    dir: HashTable,
}

impl RowTable {
    /// Creates an empty table with `nbuckets` buckets, its descriptor at
    /// `root_off` of the root object.
    pub fn create(e: &dyn Engine, root_off: usize, nbuckets: usize) -> Result<RowTable, TxError> {
        Ok(RowTable {
            dir: HashTable::create(e, root_off, nbuckets)?,
        })
    }

    /// Opens the table whose descriptor is at `root_off`.
    pub fn open(e: &dyn Engine, root_off: usize) -> Result<RowTable, TxError> {
        Ok(RowTable {
            dir: HashTable::open(e, root_off)?,
        })
    }

    /// The node holding `key`, and the bucket's chunk, offset and head.
    fn find(&self, t: &mut dyn TxOps, key: u64) -> Result<(Option<Ref>, Ref, usize, Ref), TxError> {
        let (c, off) = self.dir.bucket(key);
        let mut h = [0u8; 4];
        t.get(c, off, &mut h)?;
        let head = u32::from_le_bytes(h);
        let mut n = head;
        while n != 0 {
            let mut b = [0u8; R_ROW];
            t.get(n, 0, &mut b)?;
            let mut k = [0u8; 8];
            k.copy_from_slice(&b[..8]);
            if u64::from_le_bytes(k) == key {
                return Ok((Some(n), c, off, head));
            }
            n = u32::from_le_bytes([b[R_NEXT], b[R_NEXT + 1], b[R_NEXT + 2], b[R_NEXT + 3]]);
        }
        Ok((None, c, off, head))
    }

    /// Reads the row of `key` into `row` (its width); false if absent.
    pub fn get(&self, t: &mut dyn TxOps, key: u64, row: &mut [u8]) -> Result<bool, TxError> {
        match self.find(t, key)?.0 {
            Some(n) => t.get(n, R_ROW, row).map(|()| true),
            None => Ok(false),
        }
    }

    /// Writes the whole row of `key` (a key-value `put` over an existing
    /// key); false if absent.
    pub fn update(&self, t: &mut dyn TxOps, key: u64, row: &[u8]) -> Result<bool, TxError> {
        match self.find(t, key)?.0 {
            Some(n) => t.put(n, R_ROW, row).map(|()| true),
            None => Ok(false),
        }
    }

    /// Inserts a new row (one node: key, link, row, written in one `put`,
    /// then the bucket head); false, and nothing written, if `key` exists.
    pub fn insert(&self, t: &mut dyn TxOps, key: u64, row: &[u8]) -> Result<bool, TxError> {
        let (found, c, off, head) = self.find(t, key)?;
        if found.is_some() {
            return Ok(false);
        }
        let node = t.alloc(R_ROW + row.len())?;
        let mut b = Vec::with_capacity(R_ROW + row.len());
        b.extend_from_slice(&key.to_le_bytes());
        b.extend_from_slice(&head.to_le_bytes());
        b.extend_from_slice(row);
        t.put(node, 0, &b)?;
        t.put(c, off, &node.to_le_bytes())?;
        Ok(true)
    }
}

impl RowTable {
    /// Writes the whole row of `key`, inserting it if absent (a key-value
    /// `put`); returns whether the key was new.
    pub fn put(&self, t: &mut dyn TxOps, key: u64, row: &[u8]) -> Result<bool, TxError> {
        if self.update(t, key, row)? {
            Ok(false)
        } else {
            self.insert(t, key, row)
        }
    }

    /// Removes `key` (unlinks and frees its node); whether it was present.
    pub fn remove(&self, t: &mut dyn TxOps, key: u64) -> Result<bool, TxError> {
        let (c, off) = self.dir.bucket(key);
        let mut h = [0u8; 4];
        t.get(c, off, &mut h)?;
        let mut prev: Option<Ref> = None;
        let mut n = u32::from_le_bytes(h);
        while n != 0 {
            let mut b = [0u8; R_ROW];
            t.get(n, 0, &mut b)?;
            let next = [b[R_NEXT], b[R_NEXT + 1], b[R_NEXT + 2], b[R_NEXT + 3]];
            if b[..8] == key.to_le_bytes() {
                match prev {
                    None => t.put(c, off, &next)?,
                    Some(p) => t.put(p, R_NEXT, &next)?,
                }
                t.free(n)?;
                return Ok(true);
            }
            prev = Some(n);
            n = u32::from_le_bytes(next);
        }
        Ok(false)
    }

    /// Every (key, row) in key order, with `width(key)` bytes per row, and
    /// every object reference the table reaches (verification).
    pub fn items(
        &self,
        t: &mut dyn TxOps,
        width: &dyn Fn(u64) -> usize,
    ) -> Result<RowContents, TxError> {
        let (chunks, nbuckets) = self.dir.directory();
        let mut refs = chunks.to_vec();
        let mut items = Vec::new();
        for b in 0..nbuckets {
            let mut h = [0u8; 4];
            t.get(chunks[b / 8], (b % 8) * 4, &mut h)?;
            let mut n = u32::from_le_bytes(h);
            while n != 0 {
                refs.push(n);
                let mut kb = [0u8; R_ROW];
                t.get(n, 0, &mut kb)?;
                let mut k = [0u8; 8];
                k.copy_from_slice(&kb[..8]);
                let key = u64::from_le_bytes(k);
                let mut row = vec![0u8; width(key)];
                t.get(n, R_ROW, &mut row)?;
                items.push((key, row));
                n = u32::from_le_bytes([
                    kb[R_NEXT],
                    kb[R_NEXT + 1],
                    kb[R_NEXT + 2],
                    kb[R_NEXT + 3],
                ]);
            }
        }
        items.sort_unstable();
        Ok((items, refs))
    }

    /// Every row in key order, read in one read-only transaction on `e`:
    /// what the TPC-C and TATP tests compare before and after transactions.
    #[cfg(test)]
    pub(crate) fn dump(&self, e: &dyn Engine, width: &dyn Fn(u64) -> usize) -> Vec<(u64, Vec<u8>)> {
        let mut out = Vec::new();
        e.run(false, &mut |t| {
            out = self.items(t, width)?.0;
            Ok(())
        })
        .unwrap();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Pool, PoolOptions};

    #[test]
    fn rows_of_several_widths_round_trip_and_update_whole() {
        let pool = Pool::create_in_memory(&PoolOptions {
            size: 16 << 20,
            ..PoolOptions::default()
        })
        .unwrap();
        let rt = RowTable::create(&pool, 0, 64).unwrap();
        let widths = [7usize, 51, 306, 668, 3000];
        pool.run(true, &mut |t| {
            for (i, w) in widths.iter().enumerate() {
                let mut r = vec![0u8; *w];
                fill_text(&mut r, i as u64);
                assert!(rt.insert(t, i as u64, &r)?);
                assert!(!rt.insert(t, i as u64, &r)?);
            }
            Ok(())
        })
        .unwrap();
        pool.run(true, &mut |t| {
            let mut r = vec![0u8; 306];
            assert!(rt.get(t, 2, &mut r)?);
            let f = Field::first(4).then(2);
            f.set(&mut r, 0xbeef);
            assert!(rt.update(t, 2, &r)?);
            assert!(!rt.update(t, 99, &r)?);
            Ok(())
        })
        .unwrap();
        let img = pool.image();
        let pool = Pool::open_image(&img, &PoolOptions::default()).unwrap();
        let rt = RowTable::open(&pool, 0).unwrap();
        pool.run(false, &mut |t| {
            for (i, w) in widths.iter().enumerate() {
                let mut r = vec![0u8; *w];
                assert!(rt.get(t, i as u64, &mut r)?);
                let mut want = vec![0u8; *w];
                fill_text(&mut want, i as u64);
                if i == 2 {
                    Field::first(4).then(2).set(&mut want, 0xbeef);
                }
                assert_eq!(r, want, "row {i}");
            }
            let mut r = [0u8; 8];
            assert!(!rt.get(t, 1234, &mut r)?);
            Ok(())
        })
        .unwrap();
    }
}
