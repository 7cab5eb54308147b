//! The thesis's microbenchmark structures (§5.5: hash table of linked
//! buckets, red-black tree; 8 B keys, 16 B values) written once against a
//! small transactional interface, so ArchTM and PMDK libpmemobj run exactly
//! the same code. References are 32-bit: ArchTM object ids, or offsets in a
//! libpmemobj pool (pools up to 4 GiB).

use crate::error::TxError;
use crate::pool::Pool;
use crate::tx::Tx;

/// A persistent reference (0 = null).
pub type Ref = u32;
/// Value bytes (thesis: 16 B values).
pub type Val = [u8; 16];
/// Every pair in key order plus every object reference a structure reaches
/// (verification: compared with a model and with the pool's live ids).
pub type Contents = (Vec<(u64, Val)>, Vec<Ref>);

/// What a transaction offers the data structures.
pub trait TxOps {
    /// Copies bytes at `off` of object `r` into `out`.
    fn get(&mut self, r: Ref, off: usize, out: &mut [u8]) -> Result<(), TxError>;
    /// Writes `data` at `off` of object `r` (logged / copied as the engine needs).
    fn put(&mut self, r: Ref, off: usize, data: &[u8]) -> Result<(), TxError>;
    /// A new zeroed object.
    fn alloc(&mut self, size: usize) -> Result<Ref, TxError>;
    /// Frees an object at commit.
    fn free(&mut self, r: Ref) -> Result<(), TxError>;
}

/// A transaction engine: ArchTM or PMDK.
pub trait Engine: Sync {
    /// Short name for reports.
    fn name(&self) -> &'static str;
    /// The root object (at least 64 B).
    fn root(&self) -> Ref;
    /// Runs `f` as one transaction; `update` says whether it may write
    /// (PMDK takes the write or the read side of its lock by it).
    fn run(
        &self,
        update: bool,
        f: &mut dyn FnMut(&mut dyn TxOps) -> Result<(), TxError>,
    ) -> Result<(), TxError>;
}

fn get32(t: &mut dyn TxOps, r: Ref, off: usize) -> Result<u32, TxError> {
    let mut b = [0u8; 4];
    t.get(r, off, &mut b)?;
    Ok(u32::from_le_bytes(b))
}
fn put32(t: &mut dyn TxOps, r: Ref, off: usize, v: u32) -> Result<(), TxError> {
    t.put(r, off, &v.to_le_bytes())
}
fn get64(t: &mut dyn TxOps, r: Ref, off: usize) -> Result<u64, TxError> {
    let mut b = [0u8; 8];
    t.get(r, off, &mut b)?;
    Ok(u64::from_le_bytes(b))
}

struct ArchOps<'a, 'p>(&'a mut Tx<'p>);

impl TxOps for ArchOps<'_, '_> {
    fn get(&mut self, r: Ref, off: usize, out: &mut [u8]) -> Result<(), TxError> {
        self.0.read_at(r, off, out)
    }
    fn put(&mut self, r: Ref, off: usize, data: &[u8]) -> Result<(), TxError> {
        self.0.write_at(r, off, data)
    }
    fn alloc(&mut self, size: usize) -> Result<Ref, TxError> {
        self.0.alloc(size)
    }
    fn free(&mut self, r: Ref) -> Result<(), TxError> {
        self.0.free(r)
    }
}

impl Engine for Pool {
    fn name(&self) -> &'static str {
        "ArchTM"
    }
    fn root(&self) -> Ref {
        self.root_id()
    }
    fn run(
        &self,
        _update: bool,
        f: &mut dyn FnMut(&mut dyn TxOps) -> Result<(), TxError>,
    ) -> Result<(), TxError> {
        self.transaction(|tx| f(&mut ArchOps(tx)))
    }
}

/// Key hash (splitmix64 finaliser).
pub fn hash(k: u64) -> u64 {
    let mut x = k.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

const HT_MAGIC: u64 = 0x4854_4142_4c45_0001;
const HEADS_PER_CHUNK: usize = 8;
// node: key u64 @0, value @8..24, next u32 @24
const N_KEY: usize = 0;
const N_VAL: usize = 8;
const N_NEXT: usize = 24;
const HT_NODE: usize = 28;

/// Chained hash table: root slot -> directory object -> bucket chunks of
/// 8 heads (a 64 B ArchTM block each) -> 28 B nodes.
pub struct HashTable {
    chunks: Vec<Ref>,
    nbuckets: usize,
}

impl HashTable {
    /// Creates a table with `nbuckets` buckets, its descriptor stored at
    /// `root_off` of the root object.
    pub fn create(e: &dyn Engine, root_off: usize, nbuckets: usize) -> Result<HashTable, TxError> {
        let nchunks = nbuckets.div_ceil(HEADS_PER_CHUNK).max(1);
        let mut chunks = Vec::with_capacity(nchunks);
        // Chunks in batches (bounded transactions), then the directory.
        while chunks.len() < nchunks {
            let n = (nchunks - chunks.len()).min(256);
            let mut batch = Vec::new();
            e.run(true, &mut |t| {
                batch.clear();
                for _ in 0..n {
                    batch.push(t.alloc(HEADS_PER_CHUNK * 4)?);
                }
                Ok(())
            })?;
            chunks.extend_from_slice(&batch);
        }
        let root = e.root();
        e.run(true, &mut |t| {
            let dir = t.alloc(16 + nchunks * 4)?;
            t.put(dir, 0, &HT_MAGIC.to_le_bytes())?;
            t.put(dir, 8, &(nbuckets as u64).to_le_bytes())?;
            let mut b = Vec::with_capacity(nchunks * 4);
            for c in &chunks {
                b.extend_from_slice(&c.to_le_bytes());
            }
            t.put(dir, 16, &b)?;
            put32(t, root, root_off, dir)
        })?;
        Ok(HashTable { chunks, nbuckets })
    }

    /// Opens the table whose descriptor is at `root_off`.
    pub fn open(e: &dyn Engine, root_off: usize) -> Result<HashTable, TxError> {
        let root = e.root();
        let mut out = None;
        e.run(false, &mut |t| {
            let dir = get32(t, root, root_off)?;
            if dir == 0 || get64(t, dir, 0)? != HT_MAGIC {
                return Err(TxError::Aborted(format!(
                    "no hash table at root offset {root_off}"
                )));
            }
            let nb = get64(t, dir, 8)? as usize;
            let nchunks = nb.div_ceil(HEADS_PER_CHUNK).max(1);
            let mut b = vec![0u8; nchunks * 4];
            t.get(dir, 16, &mut b)?;
            out = Some(HashTable {
                chunks: b
                    .chunks(4)
                    .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect(),
                nbuckets: nb,
            });
            Ok(())
        })?;
        out.ok_or_else(|| TxError::Aborted("hash table open".into()))
    }

    /// A node's key and next reference in one read (one lookup per node
    /// visited, for either engine).
    fn node_key_next(t: &mut dyn TxOps, n: Ref) -> Result<(u64, Ref), TxError> {
        let mut b = [0u8; HT_NODE];
        t.get(n, 0, &mut b)?;
        let key = u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
        let next = u32::from_le_bytes([b[N_NEXT], b[N_NEXT + 1], b[N_NEXT + 2], b[N_NEXT + 3]]);
        Ok((key, next))
    }

    /// The bucket chunk and head offset of `key` (also the directory of a
    /// [`crate::rows::RowTable`], whose nodes carry whole rows).
    pub(crate) fn bucket(&self, key: u64) -> (Ref, usize) {
        let b = (hash(key) % self.nbuckets as u64) as usize;
        (self.chunks[b / HEADS_PER_CHUNK], (b % HEADS_PER_CHUNK) * 4)
    }

    /// The bucket chunks and the bucket count (a [`crate::rows::RowTable`]
    /// walks them to list its rows).
    pub(crate) fn directory(&self) -> (&[Ref], usize) {
        (&self.chunks, self.nbuckets)
    }

    /// Looks `key` up.
    pub fn get(&self, t: &mut dyn TxOps, key: u64) -> Result<Option<Val>, TxError> {
        let (c, off) = self.bucket(key);
        let mut n = get32(t, c, off)?;
        while n != 0 {
            let mut node = [0u8; HT_NODE];
            t.get(n, 0, &mut node)?;
            if u64::from_le_bytes(node[0..8].try_into().unwrap_or_default()) == key {
                let mut v = [0u8; 16];
                v.copy_from_slice(&node[N_VAL..N_VAL + 16]);
                return Ok(Some(v));
            }
            n = u32::from_le_bytes(node[N_NEXT..N_NEXT + 4].try_into().unwrap_or_default());
        }
        Ok(None)
    }

    /// Inserts or overwrites; returns whether the key was new.
    pub fn put(&self, t: &mut dyn TxOps, key: u64, val: &Val) -> Result<bool, TxError> {
        let (c, off) = self.bucket(key);
        let head = get32(t, c, off)?;
        let mut n = head;
        while n != 0 {
            let (k, next) = Self::node_key_next(t, n)?;
            if k == key {
                t.put(n, N_VAL, val)?;
                return Ok(false);
            }
            n = next;
        }
        let node = t.alloc(HT_NODE)?;
        let mut b = [0u8; HT_NODE];
        b[0..8].copy_from_slice(&key.to_le_bytes());
        b[N_VAL..N_VAL + 16].copy_from_slice(val);
        b[N_NEXT..].copy_from_slice(&head.to_le_bytes());
        t.put(node, 0, &b)?;
        put32(t, c, off, node)?;
        Ok(true)
    }

    /// Removes `key`; returns whether it was present.
    pub fn remove(&self, t: &mut dyn TxOps, key: u64) -> Result<bool, TxError> {
        let (c, off) = self.bucket(key);
        let mut prev: Option<Ref> = None;
        let mut n = get32(t, c, off)?;
        while n != 0 {
            let (k, next) = Self::node_key_next(t, n)?;
            if k == key {
                match prev {
                    None => put32(t, c, off, next)?,
                    Some(p) => put32(t, p, N_NEXT, next)?,
                }
                t.free(n)?;
                return Ok(true);
            }
            prev = Some(n);
            n = next;
        }
        Ok(false)
    }

    /// Every pair and every reference reachable (verification).
    pub fn items(&self, t: &mut dyn TxOps) -> Result<Contents, TxError> {
        let mut items = Vec::new();
        let mut refs = self.chunks.clone();
        for b in 0..self.nbuckets {
            let c = self.chunks[b / HEADS_PER_CHUNK];
            let mut n = get32(t, c, (b % HEADS_PER_CHUNK) * 4)?;
            while n != 0 {
                refs.push(n);
                let mut v = [0u8; 16];
                t.get(n, N_VAL, &mut v)?;
                items.push((get64(t, n, N_KEY)?, v));
                n = get32(t, n, N_NEXT)?;
            }
        }
        items.sort_unstable();
        Ok((items, refs))
    }
}
