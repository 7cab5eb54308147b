//! An lmbench-like latency probe: one dependent load at a time.

use super::{addr, OpBatch, RANDOM_FOOTPRINT};
use crate::config::Pattern;
use crate::rng::Rng;
use crate::workload::{Op, LINE};

/// One pointer-chasing thread (random, or sequential lines).
#[derive(Clone, Debug)]
pub(super) struct Probe {
    region: u8,
    slot: u32,
    pattern: Pattern,
    /// Offset of the last line of a sequential chase.
    pos: u64,
}

impl Probe {
    /// A chase in `region` over `pattern` (`rand` or sequential).
    pub(super) fn new(region: u8, slot: u32, pattern: Pattern) -> Probe {
        Probe {
            region,
            slot,
            pattern,
            pos: 0,
        }
    }

    /// One load per refill.
    pub(super) fn refill(&mut self, q: &mut OpBatch, rng: &mut Rng) {
        let off = match self.pattern {
            Pattern::Rand => rng.below(RANDOM_FOOTPRINT / LINE) * LINE,
            _ => {
                self.pos += LINE;
                self.pos % RANDOM_FOOTPRINT
            }
        };
        q.push_back(Op::Load {
            addr: addr(self.region, self.slot, off),
            dep: true,
            stream: false,
        });
        q.push_back(Op::Done {
            units: 1,
            bytes: LINE,
        });
    }
}
