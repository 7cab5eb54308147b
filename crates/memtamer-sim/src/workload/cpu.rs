//! A CPU-bound task with a compute/memory mix (sysbench prime, the SPEC-like
//! profiles of `config::profiles`): compute, then a batch of loads waited for.

use super::{addr, OpBatch, RANDOM_FOOTPRINT};
use crate::rng::Rng;
use crate::workload::{Op, Ps, LINE};

/// One CPU-bound thread: one work unit per iteration.
#[derive(Clone, Debug)]
pub(super) struct Cpu {
    compute: Ps,
    mem_lines: u32,
    /// Sequential stream (L2 streamer) instead of random demand misses.
    stream: bool,
    region: u8,
    slot: u32,
    /// Next offset of the sequential stream.
    pos: u64,
}

impl Cpu {
    /// `compute` then `mem_lines` loads per iteration.
    pub(super) fn new(compute: Ps, mem_lines: u32, stream: bool, region: u8, slot: u32) -> Cpu {
        Cpu {
            compute,
            mem_lines,
            stream,
            region,
            slot,
            pos: 0,
        }
    }

    /// One iteration per refill.
    pub(super) fn refill(&mut self, q: &mut OpBatch, rng: &mut Rng) {
        q.push_back(Op::Compute(self.compute));
        for _ in 0..self.mem_lines {
            let off = if self.stream {
                let o = self.pos % RANDOM_FOOTPRINT;
                self.pos += LINE;
                o
            } else {
                rng.below(RANDOM_FOOTPRINT / LINE) * LINE
            };
            q.push_back(Op::Load {
                addr: addr(self.region, self.slot, off),
                dep: false,
                stream: self.stream,
            });
        }
        if self.mem_lines > 0 {
            q.push_back(Op::Drain);
        }
        q.push_back(Op::Done {
            units: 1,
            bytes: self.mem_lines as u64 * LINE,
        });
    }
}
