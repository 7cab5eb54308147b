//! Making stores durable: re-exported from `memtamer-pmem`, where every
//! memtamer PM library gets its flush primitives.

pub use memtamer_pmem::{best_flush, fence, flush, persist, FlushKind, CACHE_LINE};
