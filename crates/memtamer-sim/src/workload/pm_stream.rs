//! A fio-like PM reader or writer with libpmem semantics: each request is
//! bracketed by `PmBegin`/`PmEnd` (the PATS gate) and ends with a fence.

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
    per_request: Ps,
    region: u8,
    slot: u32,
    /// Next offset of a sequential or stride stream.
    pos: u64,
}

impl PmStream {
    /// `per_request`: the software cost of one request (fio + libpmem call).
    pub(super) fn new(
        rw: Rw,
        pattern: Pattern,
        request_bytes: u64,
        store: StoreKind,
        per_request: Ps,
        region: u8,
        slot: u32,
    ) -> PmStream {
        PmStream {
            rw,
            pattern,
            request_bytes,
            store,
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
        q.push_back(Op::Drain);
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
