//! The `pmemkv-cmap` flush pattern: one PMEMKV `cmap` put of a new key, as
//! the sources of pmemkv, libpmemobj-cpp and PMDK libpmemobj persist it
//! (issue 19; the count and its citations are in docs/notebook/ribbon.md "What one
//! cmap put persists, from the sources").
//!
//! `cmap::put` (pmemkv `src/engines/cmap.cc`) calls
//! `concurrent_hash_map::insert_or_assign`, whose `internal_insert` runs
//! `insert_new_node` in one `flat_transaction` (libpmemobj-cpp
//! `concurrent_hash_map.hpp`): `make_persistent<node>` (a PMDK allocation
//! whose header `palloc_reserve` writes and flushes at once), the node's
//! `shared_mutex` constructor (`pmemobj_rwlock_zero`: a persist), the value
//! string (a second allocation, `vector::alloc` -> `pmemobj_tx_alloc` of
//! `value_bytes + 1`), two snapshots of 8 B (`b->node_list`, the thread's
//! `size_diff`) each written to the lane's undo log with a non-temporal
//! clobber of the next entry and the entry itself, each drained
//! (`memops.c` `operation_add_buffer`, `ulog.c` `ulog_entry_buf_create`),
//! then the commit (`tx.c` `pmemobj_tx_commit`): every range of the
//! transaction flushed and one drain (`tx_pre_commit`), and the
//! allocations published through the lane's redo log (`palloc.c`
//! `palloc_exec_actions`, `memops.c` `operation_process_persistent_redo`):
//! a drain, the log stored (two lines, non-temporal, drained), its three
//! entries applied and flushed (two run-bitmap words and the undo log's
//! generation number), a drain, the log's header clobbered (drained).

use super::{addr, OpBatch, RANDOM_FOOTPRINT};
use crate::rng::Rng;
use crate::workload::{Op, Ps, LINE};

/// PMDK's allocation header (`memblock.h`, `allocation_header_compact`).
const HEADER: u64 = 16;
/// PMDK's allocation granularity (`alloc_class.c`, `ALLOC_BLOCK_SIZE`).
const GRANULE: u64 = 16;
/// A PMDK chunk (`heap_layout.h`, `CHUNKSIZE`): a run of one class.
const CHUNK: u64 = 256 << 10;
/// A run's header (`chunk_run_header`: block size + alignment).
const RUN_HEADER: u64 = 16;
/// Bytes of a `concurrent_hash_map` node: `next` (8 B
/// `persistent_pool_ptr`), the node's `shared_mutex` (a 64 B `PMEMrwlock`)
/// and the key/value pair (two 40 B `polymorphic_string`s, pmemkv
/// `cmap.cc`'s static_assert).
const NODE_BYTES: u64 = 8 + 64 + 80;
/// Offset of the node's mutex (after `next`); its `runid` is its first word.
const NODE_MUTEX: u64 = 8;
/// Where each structure lies. A thread's runs are in its own span (its
/// arena); the bucket array, the pool's lanes and the thread-local slots
/// are one array each in the pool, shared by all threads (addresses in
/// span 0), so the threads' lanes lie side by side across the DIMMs.
const VALUES: u64 = 0;
const NODES: u64 = 8 << 30;
const BUCKETS: u64 = 16 << 30;
/// The pool's lanes (`lane.h`, `LANE_TOTAL_SIZE` = 3072 B each): the
/// internal redo log (64 B header + 192 B), the external redo log (64 B +
/// 640 B), then the undo log (its 64 B header holds `gen_num`).
const LANES: u64 = 24 << 30;
const LANE_BYTES: u64 = 3072;
const LANE_REDO: u64 = 256;
const LANE_UNDO: u64 = 256 + 704;
/// `enumerable_thread_specific` slots of `tls_data_t` (64 B: `size_diff`
/// and padding), one per thread.
const TLS: u64 = 25 << 30;

/// A block in an arena's run: blocks are handed out in address order
/// (`container_seglists.c`, FIFO), after the run's header and bitmap.
#[derive(Clone, Debug)]
struct RunStream {
    base: u64,
    block: u64,
    per_run: u64,
    data: u64,
    next: u64,
}

impl RunStream {
    fn new(base: u64, usable: u64) -> RunStream {
        let block = (usable + HEADER).div_ceil(GRANULE) * GRANULE;
        // bitmap: one bit per block, in 8 B words, after the run header
        let per_run = (CHUNK - RUN_HEADER - 64) * 8 / (8 * block + 1);
        let bitmap = per_run.div_ceil(64) * 8;
        let data = (RUN_HEADER + bitmap).div_ceil(LINE) * LINE;
        let per_run = (CHUNK - data) / block;
        RunStream {
            base,
            block,
            per_run,
            data,
            next: 0,
        }
    }

    /// The next block's start and the line of its bitmap word.
    fn take(&mut self) -> (u64, u64) {
        let runs = RANDOM_FOOTPRINT / CHUNK;
        let (run, b) = (self.next / self.per_run % runs, self.next % self.per_run);
        self.next += 1;
        let chunk = self.base + run * CHUNK;
        let word = chunk + RUN_HEADER + b / 64 * 8;
        (chunk + self.data + b * self.block, word / LINE * LINE)
    }
}

/// One application thread's `cmap` puts.
#[derive(Clone, Debug)]
pub(super) struct CmapPut {
    region: u8,
    slot: u32,
    value_bytes: u64,
    compute: Ps,
    requests: bool,
    nodes: RunStream,
    values: RunStream,
}

/// The lines of `[start, start + len)`.
fn lines(start: u64, len: u64) -> impl Iterator<Item = u64> {
    let first = start / LINE;
    let last = (start + len.max(1) - 1) / LINE;
    (first..=last).map(|l| l * LINE)
}

impl CmapPut {
    pub(super) fn new(
        value_bytes: u64,
        compute: Ps,
        requests: bool,
        region: u8,
        slot: u32,
    ) -> CmapPut {
        // the value string reserves its size + 1 (the terminator;
        // `basic_string::assign_large_data`)
        CmapPut {
            region,
            slot,
            value_bytes,
            compute,
            requests,
            nodes: RunStream::new(NODES, NODE_BYTES),
            values: RunStream::new(VALUES, value_bytes + 1),
        }
    }

    fn at(&self, off: u64) -> u64 {
        addr(self.region, self.slot, off)
    }

    /// An offset in the pool's shared arrays (span 0).
    fn shared(&self, off: u64) -> u64 {
        addr(self.region, 0, off)
    }

    /// This thread's lane.
    fn lane(&self) -> u64 {
        LANES + u64::from(self.slot) * LANE_BYTES
    }

    fn store(q: &mut OpBatch, addr: u64) {
        q.push_back(Op::Store { addr });
    }

    fn flush(q: &mut OpBatch, addr: u64) {
        q.push_back(Op::Flush { addr });
    }

    fn nt(q: &mut OpBatch, addr: u64) {
        q.push_back(Op::StoreNt { addr });
    }

    /// `memblock_header_compact_write`: the 16 B header through libpmem's
    /// small-copy path, a store and a flush inside libpmem (not through
    /// the exported `pmem_flush`, so executed by the thread itself).
    fn header(&self, q: &mut OpBatch, block: u64) {
        let l = self.at(block / LINE * LINE);
        Self::store(q, l);
        q.push_back(Op::Clwb { addr: l });
    }

    /// An 8 B snapshot into the undo log (`operation_add_buffer`): the next
    /// entry's header clobbered (non-temporal memset, drained), then the
    /// entry (one line, non-temporal, drained).
    fn snapshot(&self, q: &mut OpBatch, entry: u64) {
        let data = self.lane() + LANE_UNDO + LINE;
        Self::nt(q, self.shared(data + (entry + 1) * LINE));
        q.push_back(Op::Fence);
        Self::nt(q, self.shared(data + entry * LINE));
        q.push_back(Op::Fence);
    }

    /// The ops of one put of a new key.
    pub(super) fn refill(&mut self, q: &mut OpBatch, rng: &mut Rng) {
        // hash, bucket chain walk, bucket write lock (a store into the
        // bucket's PM-resident rwlock), transaction begin: CPU work
        if self.compute > 0 {
            q.push_back(Op::Compute(self.compute));
        }
        let bucket = self.shared(BUCKETS + rng.below(RANDOM_FOOTPRINT / LINE) * LINE);
        Self::store(q, bucket);
        // make_persistent<node>: reserve (header), then the constructor
        let (node_block, node_word) = self.nodes.take();
        let node = node_block + HEADER;
        self.header(q, node_block);
        for l in lines(node, NODE_MUTEX + 64) {
            Self::store(q, self.at(l));
        }
        // pmemobj_rwlock_zero: pmemops_persist of the lock's runid
        Self::flush(q, self.at((node + NODE_MUTEX) / LINE * LINE));
        q.push_back(Op::Fence);
        // the value string: pmemobj_tx_alloc(value + 1), header, copy
        let (value_block, value_word) = self.values.take();
        let value = value_block + HEADER;
        self.header(q, value_block);
        for l in lines(value, self.value_bytes + 1) {
            Self::store(q, self.at(l));
        }
        // the pair's string objects in the node
        for l in lines(node + NODE_MUTEX + 64, NODE_BYTES - NODE_MUTEX - 64) {
            Self::store(q, self.at(l));
        }
        // b->node_list = node (first snapshot), ++size_diff (second)
        let tls = self.shared(TLS + u64::from(self.slot) * LINE);
        self.snapshot(q, 0);
        Self::store(q, bucket);
        self.snapshot(q, 1);
        Self::store(q, tls);
        // commit: tx_pre_commit flushes every range (in offset order), drain
        let value_usable = self.values.block - HEADER;
        let node_usable = self.nodes.block - HEADER;
        let mut commit: Vec<u64> = lines(value, value_usable).map(|l| self.at(l)).collect();
        commit.extend(lines(node, node_usable).map(|l| self.at(l)));
        commit.push(bucket);
        commit.push(tls);
        if self.requests {
            q.push_back(Op::PmBegin {
                bytes: commit.len() as u64 * LINE,
                write: true,
            });
        }
        for &l in &commit {
            Self::flush(q, l);
        }
        q.push_back(Op::Fence);
        if self.requests {
            q.push_back(Op::PmEnd);
        }
        // palloc_exec_actions: drain (headers persistent)
        q.push_back(Op::Fence);
        // ulog_store: the redo log's header and its entries' line, drained
        let redo = self.shared(self.lane() + LANE_REDO);
        Self::nt(q, redo);
        Self::nt(q, redo + LINE);
        q.push_back(Op::Fence);
        // ulog_process: the entries applied and flushed, drained
        let gen_num = self.shared(self.lane() + LANE_UNDO);
        for w in [self.at(node_word), self.at(value_word), gen_num] {
            Self::store(q, w);
            Self::flush(q, w);
        }
        q.push_back(Op::Fence);
        // ulog_clobber: the redo log's header, drained
        Self::nt(q, redo);
        q.push_back(Op::Fence);
        q.push_back(Op::Done {
            units: 1,
            bytes: self.value_bytes,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(value: u64, n: usize) -> Vec<Vec<Op>> {
        let mut g = CmapPut::new(value, 100, false, 1, 0);
        let mut rng = Rng::new(1, 1);
        (0..n)
            .map(|_| {
                let mut q = OpBatch::default();
                g.refill(&mut q, &mut rng);
                let mut v = Vec::new();
                while let Some(o) = q.pop_front() {
                    v.push(o);
                }
                v
            })
            .collect()
    }

    fn count(o: &[Op], f: fn(&Op) -> bool) -> usize {
        o.iter().filter(|x| f(x)).count()
    }

    #[test]
    fn a_put_has_ten_fences_seven_nt_lines_and_two_header_flushes() {
        for v in [256, 1024] {
            for o in put(v, 50) {
                assert_eq!(count(&o, |x| matches!(x, Op::Fence)), 10);
                assert_eq!(count(&o, |x| matches!(x, Op::StoreNt { .. })), 7);
                assert_eq!(count(&o, |x| matches!(x, Op::Clwb { .. })), 2);
            }
        }
    }

    #[test]
    fn flushes_are_the_ranges_the_sources_name() {
        // 256 B value: block 16 + 257 -> 288 B, usable 272 B: 5 or 6 lines;
        // node 16 + 152 -> 176 B, usable 160 B: 3 or 4 lines; + bucket +
        // size_diff + rwlock runid + 3 redo entries
        for o in put(256, 200) {
            let f = count(&o, |x| matches!(x, Op::Flush { .. }));
            assert!((14..=16).contains(&f), "{f}");
        }
        for o in put(1024, 200) {
            // 16 + 1025 -> 1056 B, usable 1040 B: 17 or 18 lines
            let f = count(&o, |x| matches!(x, Op::Flush { .. }));
            assert!((26..=28).contains(&f), "{f}");
        }
    }

    #[test]
    fn values_and_nodes_are_appended_in_their_runs() {
        let mut s = RunStream::new(VALUES, 257);
        assert_eq!(s.block, 288);
        let (a, wa) = s.take();
        let (b, wb) = s.take();
        assert_eq!(b - a, 288);
        assert_eq!(wa, wb, "consecutive blocks share their bitmap word's line");
        assert!(a >= RUN_HEADER + 8 && a % LINE == 0);
        for _ in 2..s.per_run {
            s.take();
        }
        let (c, _) = s.take();
        assert_eq!(c, CHUNK + s.data, "the next run starts a new chunk");
        let n = RunStream::new(NODES, NODE_BYTES);
        assert_eq!(n.block, 176);
        assert!(n.data + n.per_run * n.block <= CHUNK);
    }

    #[test]
    fn the_log_lines_are_reused_and_nothing_else_is_flushed_twice_per_put() {
        let ops = put(256, 30);
        let nt = |o: &[Op]| -> Vec<u64> {
            o.iter()
                .filter_map(|x| match x {
                    Op::StoreNt { addr } => Some(*addr),
                    _ => None,
                })
                .collect()
        };
        let first = nt(&ops[0]);
        assert!(ops.iter().all(|o| nt(o) == first), "same lane lines");
        for o in &ops {
            let mut f: Vec<u64> = o
                .iter()
                .filter_map(|x| match x {
                    Op::Flush { addr } => Some(*addr),
                    _ => None,
                })
                .collect();
            let n = f.len();
            f.sort_unstable();
            f.dedup();
            // the node's first line: the rwlock persist and the commit
            assert_eq!(n - f.len(), 1);
        }
    }

    #[test]
    fn threads_use_their_own_lane_side_by_side() {
        let nt = |slot: u32| -> Vec<u64> {
            let mut g = CmapPut::new(256, 0, false, 1, slot);
            let mut q = OpBatch::default();
            g.refill(&mut q, &mut Rng::new(1, 1));
            let mut v = Vec::new();
            while let Some(o) = q.pop_front() {
                if let Op::StoreNt { addr } = o {
                    v.push(addr);
                }
            }
            v
        };
        let (a, b) = (nt(0), nt(1));
        assert!(a.iter().zip(&b).all(|(x, y)| y - x == LANE_BYTES));
        let lo = *a.iter().min().unwrap() - addr(1, 0, LANES);
        let hi = *a.iter().max().unwrap() - addr(1, 0, LANES);
        assert!(lo >= LANE_REDO && hi < LANE_BYTES, "{lo} {hi}");
    }
}
