//! A multiplicative hasher for page-number keys. The planner hashes
//! thousands of page numbers per decision; SipHash (std's default, built
//! for untrusted keys) dominated its profile. Page numbers come from the
//! process's own address space, so DoS resistance is not needed.

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
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(K);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(K);
    }
}

/// HashMap keyed by page numbers.
pub type PageMap<V> = HashMap<u64, V, BuildHasherDefault<PageHasher>>;
/// HashSet of page numbers.
pub type PageSet = HashSet<u64, BuildHasherDefault<PageHasher>>;

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
}
