//! The `flush` workload kind (issue 19 item 5; thesis ch. 6): application
//! threads that store to PM lines, request their flush and fence, in one
//! of three programs' patterns (PMEMKV, Fast&Fair, streamcluster) or a
//! line-state characterization; and the generator of Ribbon's flusher and
//! proactive threads, whose work the engine hands them (`Op::FlushPull`).
//!
//! The generator only says which lines are stored, flushed and fenced.
//! Whether a flush is executed by the thread itself or queued for a
//! flusher, and what it costs (the line's state: dirty, clean, not
//! cached), is the engine's (`engine/flush.rs`).

use super::flush_cmap::CmapPut;
use super::{addr, OpBatch, RANDOM_FOOTPRINT};
use crate::config::{FlushPattern, LineState};
use crate::rng::Rng;
use crate::workload::{Op, Ps, LINE};

/// Bytes of one Fast&Fair entry (8 B key + 8 B pointer).
const FASTFAIR_ENTRY: u64 = 16;
/// PMDK's allocation header in front of every object (`memblock.h`,
/// `struct allocation_header_compact`: size + extra, 16 B).
const PMDK_HEADER: u64 = 16;
/// PMDK's allocation granularity (`alloc_class.c`, `ALLOC_BLOCK_SIZE`).
const PMDK_GRANULE: u64 = 16;

/// One application thread of a `flush` workload.
#[derive(Clone, Debug)]
pub(super) struct FlushApp {
    pattern: FlushPattern,
    lines: u64,
    bytes: u64,
    compute: Ps,
    /// Wrap each fence epoch in `PmBegin`/`PmEnd` (eager flushing: the
    /// PATS gate then limits the threads flushing at once).
    requests: bool,
    state: LineState,
    region: u8,
    slot: u32,
    /// Next sequential offset (streamcluster, fresh characterization lines).
    next: u64,
    /// The characterization block was stored once (clean lines).
    primed: bool,
    /// The `pmemkv-cmap` put's generator (its runs, lane and buckets).
    cmap: Option<CmapPut>,
}

impl FlushApp {
    /// A thread flushing `bytes` per operation in `pattern`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        pattern: FlushPattern,
        bytes: u64,
        compute: Ps,
        requests: bool,
        state: LineState,
        region: u8,
        slot: u32,
    ) -> FlushApp {
        FlushApp {
            pattern,
            lines: bytes.div_ceil(LINE).max(1),
            bytes,
            compute,
            requests,
            state,
            region,
            slot,
            next: 0,
            primed: false,
            cmap: (pattern == FlushPattern::PmemkvCmap)
                .then(|| CmapPut::new(bytes, compute, requests, region, slot)),
        }
    }

    fn at(&self, off: u64) -> u64 {
        addr(self.region, self.slot, off)
    }

    /// `lines` lines from `base`: flush requests, then one fence (an epoch).
    fn flush_epoch(&self, q: &mut OpBatch, base: u64, lines: u64) {
        if self.requests {
            q.push_back(Op::PmBegin {
                bytes: lines * LINE,
                write: true,
            });
        }
        for l in 0..lines {
            q.push_back(Op::Flush {
                addr: self.at(base + l * LINE),
            });
        }
        q.push_back(Op::Fence);
        if self.requests {
            q.push_back(Op::PmEnd);
        }
    }

    fn stores(&self, q: &mut OpBatch, base: u64, lines: u64) {
        for l in 0..lines {
            q.push_back(Op::Store {
                addr: self.at(base + l * LINE),
            });
        }
    }

    /// A PMEMKV put of a value in `lines` lines from `base`: its stores, the
    /// operation's other work, then the value's flushes and fence.
    fn put_value(&self, q: &mut OpBatch, base: u64, lines: u64) {
        self.stores(q, base, lines);
        if self.compute > 0 {
            q.push_back(Op::Compute(self.compute));
        }
        self.flush_epoch(q, base, lines);
    }

    /// The ops of one operation.
    pub(super) fn refill(&mut self, q: &mut OpBatch, rng: &mut Rng) {
        let span = self.lines * LINE;
        match self.pattern {
            FlushPattern::PmemkvCmap => {
                if let Some(c) = self.cmap.as_mut() {
                    c.refill(q, rng);
                }
                return;
            }
            FlushPattern::Pmemkv => {
                // a freshly allocated value: 64 B-aligned (the allocator's
                // unit), anywhere in a large pool
                let base = rng.below(RANDOM_FOOTPRINT / LINE - self.lines) * LINE;
                self.put_value(q, base, self.lines);
            }
            FlushPattern::PmemkvArena => {
                // the thread's next block in its arena's run
                let block = (self.bytes + PMDK_HEADER).div_ceil(PMDK_GRANULE) * PMDK_GRANULE;
                if self.next + block > RANDOM_FOOTPRINT {
                    self.next = 0;
                }
                let start = self.next;
                self.next += block;
                let first = start / LINE * LINE;
                let lines = (start + block).div_ceil(LINE) - start / LINE;
                self.put_value(q, first, lines);
            }
            FlushPattern::Fastfair => {
                if self.compute > 0 {
                    q.push_back(Op::Compute(self.compute));
                }
                let node = rng.below(RANDOM_FOOTPRINT / span) * span;
                let (first, last) = fastfair_shift(self.bytes, rng);
                // every line the shift writes, from the last backwards:
                // store, flush, fence (FAST)
                for l in (first..=last).rev() {
                    let a = node + l * LINE;
                    self.stores(q, a, 1);
                    self.flush_epoch(q, a, 1);
                }
            }
            FlushPattern::Streamcluster => {
                let base = self.next % RANDOM_FOOTPRINT;
                self.next = (self.next + span) % (RANDOM_FOOTPRINT - span);
                self.stores(q, base, self.lines);
                if self.compute > 0 {
                    q.push_back(Op::Compute(self.compute));
                }
                self.flush_epoch(q, base, self.lines);
            }
            FlushPattern::Lines => {
                if self.compute > 0 {
                    q.push_back(Op::Compute(self.compute));
                }
                match self.state {
                    // one block, stored each time: its lines stay cached
                    LineState::Dirty => {
                        self.stores(q, 0, self.lines);
                        self.flush_epoch(q, 0, self.lines);
                    }
                    // one block, stored once: written back, still cached
                    LineState::Clean => {
                        if !self.primed {
                            self.primed = true;
                            self.stores(q, 0, self.lines);
                        }
                        self.flush_epoch(q, 0, self.lines);
                    }
                    // fresh lines nobody wrote
                    LineState::Nonresident => {
                        let base = LINE * (1 << 20) + self.next;
                        self.next = (self.next + span) % (RANDOM_FOOTPRINT - span);
                        self.flush_epoch(q, base, self.lines);
                    }
                }
                q.push_back(Op::Done {
                    units: self.lines,
                    bytes: span,
                });
                return;
            }
        }
        q.push_back(Op::Done {
            units: 1,
            bytes: self.bytes,
        });
    }
}

/// The first and last line of a Fast&Fair insert's shift in a node of
/// `bytes` (FAST_FAIR `btree.h`): the node holds `n` entries, between half
/// and all but one of its slots (`store` splits a node at `cardinality - 1`
/// entries into two halves), the key's position `p` is uniform in `0..=n`,
/// and entries `p..=n` are written.
fn fastfair_shift(bytes: u64, rng: &mut Rng) -> (u64, u64) {
    let slots = (bytes / FASTFAIR_ENTRY).max(2);
    let lo = slots / 2;
    let n = lo + rng.below(slots - lo);
    let p = rng.below(n + 1);
    (p * FASTFAIR_ENTRY / LINE, n * FASTFAIR_ENTRY / LINE)
}

/// A Ribbon flusher or the proactive-flushing thread: it asks the engine
/// for work whenever the previous batch is done.
#[derive(Clone, Debug)]
pub(super) struct FlushAgent;

impl FlushAgent {
    pub(super) fn refill(&mut self, q: &mut OpBatch) {
        q.push_back(Op::FlushPull);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::REGION_SHIFT;

    fn ops(p: FlushPattern, bytes: u64, state: LineState, requests: bool, n: usize) -> Vec<Op> {
        let mut g = FlushApp::new(p, bytes, 100, requests, state, 1, 0);
        let mut rng = Rng::new(1, 1);
        let mut q = OpBatch::default();
        let mut out = Vec::new();
        while out.len() < n {
            g.refill(&mut q, &mut rng);
            while let Some(o) = q.pop_front() {
                out.push(o);
            }
        }
        out
    }

    fn count(o: &[Op], f: fn(&Op) -> bool) -> usize {
        o.iter().filter(|x| f(x)).count()
    }

    #[test]
    fn pmemkv_stores_the_value_then_flushes_it_then_fences_once() {
        let o = ops(FlushPattern::Pmemkv, 256, LineState::Dirty, true, 1);
        let kinds: Vec<&str> = o
            .iter()
            .map(|x| match x {
                Op::Store { .. } => "s",
                Op::Compute(_) => "c",
                Op::PmBegin { .. } => "b",
                Op::Flush { .. } => "f",
                Op::Fence => "F",
                Op::PmEnd => "e",
                Op::Done { .. } => "d",
                _ => "?",
            })
            .collect();
        assert_eq!(kinds.concat(), "sssscbffffFed");
        let stored: Vec<u64> = o
            .iter()
            .filter_map(|x| match x {
                Op::Store { addr } => Some(*addr),
                _ => None,
            })
            .collect();
        let flushed: Vec<u64> = o
            .iter()
            .filter_map(|x| match x {
                Op::Flush { addr } => Some(*addr),
                _ => None,
            })
            .collect();
        assert_eq!(stored, flushed);
        assert!(stored.windows(2).all(|w| w[1] - w[0] == LINE));
        assert!(stored.iter().all(|a| a >> REGION_SHIFT == 1));
    }

    #[test]
    fn fastfair_fences_every_shifted_line() {
        let o = ops(FlushPattern::Fastfair, 512, LineState::Dirty, false, 5000);
        let flushes = count(&o, |x| matches!(x, Op::Flush { .. }));
        assert_eq!(flushes, count(&o, |x| matches!(x, Op::Fence)));
        assert_eq!(flushes, count(&o, |x| matches!(x, Op::Store { .. })));
        let ops_done = count(&o, |x| matches!(x, Op::Done { .. }));
        // 32 slots of a 8-line node, 16..=31 entries, position 0..=n:
        // the mean of the lines from p's line to n's line
        let mut sum = 0.0;
        for n in 16u64..=31 {
            for p in 0..=n {
                sum += (n / 4 - p / 4 + 1) as f64 / (n + 1) as f64 / 16.0;
            }
        }
        let per_op = flushes as f64 / ops_done as f64;
        assert!((per_op - sum).abs() < 0.15, "{per_op} vs {sum}");
        assert!(sum < 4.0 && sum > 2.5, "{sum}");
        assert_eq!(count(&o, |x| matches!(x, Op::PmBegin { .. })), 0);
    }

    #[test]
    fn fastfair_shifts_stay_inside_the_occupied_entries() {
        let mut rng = Rng::new(3, 3);
        let mut seen_last = [0u32; 8];
        for _ in 0..20_000 {
            let (first, last) = fastfair_shift(512, &mut rng);
            assert!(first <= last && last <= 7, "{first} {last}");
            // at least 16 entries: the last written entry is in line >= 4
            assert!(last >= 4, "{last}");
            seen_last[last as usize] += 1;
        }
        assert!(seen_last[4..].iter().all(|&c| c > 0), "{seen_last:?}");
    }

    #[test]
    fn pmemkv_arena_appends_blocks_with_their_header() {
        let o = ops(FlushPattern::PmemkvArena, 256, LineState::Dirty, false, 200);
        let mut epochs: Vec<Vec<u64>> = vec![Vec::new()];
        for x in &o {
            match x {
                Op::Flush { addr } => epochs.last_mut().unwrap().push(*addr),
                Op::Fence => epochs.push(Vec::new()),
                _ => {}
            }
        }
        epochs.retain(|e| !e.is_empty());
        assert!(epochs.len() >= 8);
        // 256 B + 16 B header = 272 B blocks: 5 or 6 lines each, the
        // lines contiguous, each block starting in the line where the
        // previous one ended (that line is flushed by both)
        let mut bytes_start = 0u64;
        for e in &epochs {
            assert!(e.windows(2).all(|w| w[1] - w[0] == LINE));
            let first = bytes_start / LINE;
            let last = (bytes_start + 272 - 1) / LINE;
            assert_eq!(e.len() as u64, last - first + 1);
            bytes_start += 272;
        }
        // 272 B blocks end on a line boundary every 4th block; otherwise
        // the next block starts in the line this one ended in
        let mut shared = 0;
        for w in epochs.windows(2) {
            let (end, start) = (*w[0].last().unwrap(), w[1][0]);
            assert!(start == end || start == end + LINE, "{end:x} {start:x}");
            shared += usize::from(start == end);
        }
        assert_eq!(shared, (epochs.len() - 1) - (epochs.len() - 1) / 4);
        // stores cover exactly what is flushed
        assert_eq!(
            count(&o, |x| matches!(x, Op::Store { .. })),
            count(&o, |x| matches!(x, Op::Flush { .. }))
        );
    }

    #[test]
    fn streamcluster_blocks_are_sequential() {
        let o = ops(
            FlushPattern::Streamcluster,
            4096,
            LineState::Dirty,
            false,
            300,
        );
        let flushed: Vec<u64> = o
            .iter()
            .filter_map(|x| match x {
                Op::Flush { addr } => Some(*addr),
                _ => None,
            })
            .collect();
        assert!(flushed.len() >= 128);
        assert!(flushed.windows(2).all(|w| w[1] - w[0] == LINE));
        assert_eq!(count(&o, |x| matches!(x, Op::Fence)), flushed.len() / 64);
    }

    #[test]
    fn characterization_states_store_as_they_say() {
        let dirty = ops(FlushPattern::Lines, 256, LineState::Dirty, false, 40);
        let clean = ops(FlushPattern::Lines, 256, LineState::Clean, false, 40);
        let cold = ops(FlushPattern::Lines, 256, LineState::Nonresident, false, 40);
        let stores = |o: &[Op]| count(o, |x| matches!(x, Op::Store { .. }));
        let flushes = |o: &[Op]| count(o, |x| matches!(x, Op::Flush { .. }));
        assert_eq!(stores(&dirty), flushes(&dirty));
        assert_eq!(stores(&clean), 4, "stored once, flushed again and again");
        assert!(flushes(&clean) > 4);
        assert_eq!(stores(&cold), 0);
        let mut a: Vec<u64> = cold
            .iter()
            .filter_map(|x| match x {
                Op::Flush { addr } => Some(*addr),
                _ => None,
            })
            .collect();
        let n = a.len();
        a.sort_unstable();
        a.dedup();
        assert_eq!(a.len(), n, "never the same line twice");
    }
}
