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

use super::{addr, OpBatch, RANDOM_FOOTPRINT};
use crate::config::{FlushPattern, LineState};
use crate::rng::Rng;
use crate::workload::{Op, Ps, LINE};

/// Bytes of one Fast&Fair entry (8 B key + 8 B pointer).
const FASTFAIR_ENTRY: u64 = 16;

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

    /// The ops of one operation.
    pub(super) fn refill(&mut self, q: &mut OpBatch, rng: &mut Rng) {
        let span = self.lines * LINE;
        match self.pattern {
            FlushPattern::Pmemkv => {
                // a freshly allocated value: 64 B-aligned (the allocator's
                // unit), anywhere in a large pool
                let base = rng.below(RANDOM_FOOTPRINT / LINE - self.lines) * LINE;
                self.stores(q, base, self.lines);
                if self.compute > 0 {
                    q.push_back(Op::Compute(self.compute));
                }
                self.flush_epoch(q, base, self.lines);
            }
            FlushPattern::Fastfair => {
                if self.compute > 0 {
                    q.push_back(Op::Compute(self.compute));
                }
                let node = rng.below(RANDOM_FOOTPRINT / span) * span;
                let entries = (self.bytes / FASTFAIR_ENTRY).max(1);
                let pos = rng.below(entries);
                let first = pos * FASTFAIR_ENTRY / LINE;
                // every line the shift crosses: store, flush, fence (FAST)
                for l in first..self.lines {
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
        // insert position uniform over 32 entries of a 8-line node: on
        // average (8 + 1) / 2 lines shift
        let per_op = flushes as f64 / ops_done as f64;
        assert!((per_op - 4.5).abs() < 0.3, "{per_op}");
        assert_eq!(count(&o, |x| matches!(x, Op::PmBegin { .. })), 0);
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
