//! A single-threaded memcached-like server loop (PATS Fig. 4): hash,
//! dependent lookups, then the value copied in or out.

use super::{addr, OpBatch, RANDOM_FOOTPRINT};
use crate::config::KvOp;
use crate::rng::Rng;
use crate::workload::{Op, Ps, LINE};

/// One memcached-like thread: every operation is a GET or every one a SET.
#[derive(Clone, Debug)]
pub(super) struct Kv {
    op: KvOp,
    value_lines: u64,
    lookups: u32,
    compute: Ps,
    region: u8,
    slot: u32,
}

impl Kv {
    /// `lookups` dependent loads (bucket, item header) per operation, then
    /// `value_lines` lines of the value.
    pub(super) fn new(
        op: KvOp,
        value_lines: u64,
        lookups: u32,
        compute: Ps,
        region: u8,
        slot: u32,
    ) -> Kv {
        Kv {
            op,
            value_lines,
            lookups,
            compute,
            region,
            slot,
        }
    }

    /// One operation per refill.
    pub(super) fn refill(&mut self, q: &mut OpBatch, rng: &mut Rng) {
        q.push_back(Op::Compute(self.compute));
        for _ in 0..self.lookups {
            let a = addr(
                self.region,
                self.slot,
                rng.below(RANDOM_FOOTPRINT / LINE) * LINE,
            );
            q.push_back(Op::Load {
                addr: a,
                dep: true,
                stream: false,
            });
        }
        let item = rng.below(RANDOM_FOOTPRINT / 4096) * 4096;
        for l in 0..self.value_lines {
            let a = addr(self.region, self.slot, item + l * LINE);
            match self.op {
                KvOp::Get => q.push_back(Op::Load {
                    addr: a,
                    dep: false,
                    stream: true,
                }),
                KvOp::Set => q.push_back(Op::StoreTemporal {
                    addr: a,
                    flush: false,
                }),
            }
        }
        q.push_back(Op::Drain);
        q.push_back(Op::Done {
            units: 1,
            bytes: self.value_lines * LINE,
        });
    }
}
