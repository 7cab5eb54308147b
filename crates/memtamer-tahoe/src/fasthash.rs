//! A multiplicative hasher for page-number keys. The planner hashes
//! thousands of page numbers per decision; SipHash (std's default, built
//! for untrusted keys) dominated its profile. Page numbers come from the
//! process's own address space, so DoS resistance is not needed. The same
//! hasher keys the task-type maps ([`TypeMap`]): a type key (code address
//! and argument sizes, thesis §4.3.2) is hashed on every task start and
//! completion, and comes from the program's own task metadata. The OMPT
//! tool keys its task records by sequential task ids with [`PageMap`] and
//! [`PageSet`] too (`memtamer-omp`'s tracker).

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// Fx-style hasher (rotate, xor, multiply by a 64-bit odd constant).
#[derive(Clone, Copy, Debug, Default)]
pub struct PageHasher(u64);

const K: u64 = 0x517c_c1b7_2722_0a95;

impl Hasher for PageHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // whole words at a time (a slice of u64 arrives as its bytes),
        // the tail byte by byte
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            let mut b = [0u8; 8];
            b.copy_from_slice(w);
            self.write_u64(u64::from_le_bytes(b));
        }
        for &b in words.remainder() {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(K);
        }
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(K);
    }
}

/// HashMap keyed by page numbers.
pub type PageMap<V> = HashMap<u64, V, BuildHasherDefault<PageHasher>>;
/// HashSet of page numbers.
pub type PageSet = HashSet<u64, BuildHasherDefault<PageHasher>>;
/// HashMap keyed by task type ([`crate::task::TaskType`]).
pub type TypeMap<V> = HashMap<crate::task::TaskType, V, BuildHasherDefault<PageHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinct_pages_spread_and_maps_work() {
        let mut m: PageMap<u32> = PageMap::default();
        for p in 0..10_000u64 {
            m.insert(p, p as u32);
        }
        assert_eq!(m[&4321], 4321);
        let mut h1 = PageHasher::default();
        h1.write_u64(1);
        let mut h2 = PageHasher::default();
        h2.write_u64(2);
        assert_ne!(h1.finish(), h2.finish());
        let mut h3 = PageHasher::default();
        h3.write(&[1, 2]);
        assert_ne!(h3.finish(), 0);
    }

    #[test]
    fn sequential_ids_spread_over_buckets_and_tags() {
        // hashbrown takes the bucket from the low bits and a 7-bit tag
        // from the top bits; sequential task ids must vary both.
        let hash = |n: u64| {
            let mut h = PageHasher::default();
            h.write_u64(n);
            h.finish()
        };
        let low: HashSet<u64> = (0..4096u64).map(|n| hash(n) & 0xfff).collect();
        assert_eq!(low.len(), 4096, "low 12 bits: one bucket per id");
        let tags: HashSet<u64> = (0..4096u64).map(|n| hash(n) >> 57).collect();
        assert!(tags.len() > 100, "only {} distinct tags", tags.len());
    }

    #[test]
    fn type_keys_hash_by_code_and_sizes() {
        use crate::task::TaskType;
        let ty = |code, sizes: &[u64]| TaskType {
            code,
            arg_sizes: sizes.to_vec(),
        };
        let mut m: TypeMap<u32> = TypeMap::default();
        m.insert(ty(0x400, &[64, 128]), 1);
        m.insert(ty(0x400, &[128, 64]), 2);
        m.insert(ty(0x400, &[64, 128, 0]), 3);
        m.insert(ty(0x408, &[64, 128]), 4);
        assert_eq!(m.len(), 4);
        assert_eq!(m[&ty(0x400, &[64, 128])], 1);
        assert_eq!(m[&ty(0x400, &[128, 64])], 2);
        // a word and its bytes one by one hash alike, a different tail not
        let (mut a, mut b, mut c) = (
            PageHasher::default(),
            PageHasher::default(),
            PageHasher::default(),
        );
        a.write(&7u64.to_le_bytes());
        b.write_u64(7);
        c.write(&[7, 0, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(a.finish(), b.finish());
        assert_ne!(a.finish(), c.finish());
    }
}
