//! A fio-like PM reader or writer with libpmem semantics: each request is
//! bracketed by `PmBegin`/`PmEnd` (the PATS gate) and ends with a fence;
//! a reader with `fence_reads = false` issues plain loads and goes on, so
//! its parallelism is bounded by the core's fill buffers and L2 prefetch
//! slots (`engine::fill`), not by one request's lines.

use super::{addr, OpBatch, FILE_BYTES};
use crate::config::{Pattern, Rw, StoreKind};
use crate::rng::Rng;
use crate::workload::{Op, Ps, LINE};

/// One fio-like thread over its own file.
#[derive(Clone, Debug)]
pub(super) struct PmStream {
    rw: Rw,
    pattern: Pattern,
    request_bytes: u64,
    store: StoreKind,
    /// A read request waits for its loads before the next one.
    fence_reads: bool,
    per_request: Ps,
    region: u8,
    slot: u32,
    /// Next offset of a sequential or stride stream.
    pos: u64,
}

impl PmStream {
    /// `per_request`: the software cost of one request (fio + libpmem call);
    /// `store`: the store flavour of writes and whether reads fence.
    pub(super) fn new(
        rw: Rw,
        pattern: Pattern,
        request_bytes: u64,
        (store, fence_reads): (StoreKind, bool),
        per_request: Ps,
        region: u8,
        slot: u32,
    ) -> PmStream {
        PmStream {
            rw,
            pattern,
            request_bytes,
            store,
            fence_reads,
            per_request,
            region,
            slot,
            pos: 0,
        }
    }

    /// One request per refill.
    pub(super) fn refill(&mut self, q: &mut OpBatch, rng: &mut Rng) {
        let req = self.request_bytes;
        let lines = req.div_ceil(LINE);
        let base = match self.pattern {
            Pattern::Seq => {
                let b = self.pos % FILE_BYTES;
                self.pos += req;
                b
            }
            Pattern::Rand => rng.below(FILE_BYTES / req.max(1)) * req,
            Pattern::Stride => {
                let b = self.pos % FILE_BYTES;
                self.pos += lines * 256;
                b
            }
        };
        let write = self.rw == Rw::Write;
        q.push_back(Op::PmBegin { bytes: req, write });
        for l in 0..lines {
            let off = match self.pattern {
                Pattern::Stride => base + l * 256,
                _ => base + l * LINE,
            };
            let a = addr(self.region, self.slot, off);
            q.push_back(match (write, self.store) {
                (false, _) => Op::Load {
                    addr: a,
                    dep: false,
                    stream: self.pattern != Pattern::Rand,
                },
                (true, StoreKind::Nt) => Op::StoreNt { addr: a },
                (true, StoreKind::Temporal) => Op::StoreTemporal {
                    addr: a,
                    flush: true,
                },
            });
        }
        if write || self.fence_reads {
            q.push_back(Op::Drain);
        }
        q.push_back(Op::PmEnd);
        if self.per_request > 0 {
            // software overhead varies per request (uniform +-50%), which
            // keeps threads from running in artificial lock-step
            let jitter = self.per_request / 2 + rng.below(self.per_request + 1);
            q.push_back(Op::Compute(jitter));
        }
        q.push_back(Op::Done {
            units: req,
            bytes: req,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::NS;

    fn ops(rw: Rw, fence_reads: bool) -> Vec<Op> {
        let mut g = PmStream::new(
            rw,
            Pattern::Rand,
            256,
            (StoreKind::Nt, fence_reads),
            100 * NS,
            1,
            0,
        );
        let mut q = OpBatch::default();
        let mut rng = Rng::new(1, 1);
        g.refill(&mut q, &mut rng);
        std::iter::from_fn(|| q.pop_front()).collect()
    }

    #[test]
    fn reads_fence_only_when_asked_and_writes_always() {
        let drains = |o: &[Op]| o.iter().filter(|o| matches!(o, Op::Drain)).count();
        assert_eq!(drains(&ops(Rw::Read, true)), 1);
        let free = ops(Rw::Read, false);
        assert_eq!(drains(&free), 0);
        // the request is still bracketed for the gate and counted
        assert!(matches!(
            free[0],
            Op::PmBegin {
                bytes: 256,
                write: false
            }
        ));
        assert!(free.iter().any(|o| matches!(o, Op::PmEnd)));
        assert_eq!(drains(&ops(Rw::Write, false)), 1);
    }
}
