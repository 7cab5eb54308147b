//! MBW (PATS §III-A): memcpy of a 10 GB array, its element-loop variant and
//! memcpy in blocks.

use super::{addr, OpBatch, MBW_ARRAY};
use crate::config::MbwMode;
use crate::workload::{Op, Ps, LINE, NS};

/// One MBW thread: copies the first half of its array into the second.
#[derive(Clone, Debug)]
pub(super) struct Mbw {
    mode: MbwMode,
    block_lines: u64,
    call: Ps,
    region: u8,
    slot: u32,
    /// Next line to copy.
    pos: u64,
}

impl Mbw {
    /// `block_lines`: lines per memcpy() call for `mcblock`; `call`: the
    /// per-call overhead.
    pub(super) fn new(mode: MbwMode, block_lines: u64, call: Ps, region: u8, slot: u32) -> Mbw {
        Mbw {
            mode,
            block_lines,
            call,
            region,
            slot,
            pos: 0,
        }
    }

    /// One 4 KiB chunk per refill; memcpy() call overhead once per call.
    pub(super) fn refill(&mut self, q: &mut OpBatch) {
        let half = MBW_ARRAY / 2;
        let chunk = 64u64;
        let call_every = match self.mode {
            MbwMode::Mcblock => self.block_lines,
            _ => half / LINE,
        };
        // line of the current memcpy() call: one division per
        // refill, not per line
        let mut in_call = self.pos % call_every;
        for _ in 0..chunk {
            if in_call == 0 && self.call > 0 {
                q.push_back(Op::Compute(self.call));
            }
            let off = (self.pos * LINE) % half;
            let src = addr(self.region, self.slot, off);
            let dst = addr(self.region, self.slot, half + off);
            match self.mode {
                MbwMode::Memcpy | MbwMode::Mcblock => {
                    q.push_back(Op::CopyLine { src, dst, nt: true })
                }
                MbwMode::Dumb => {
                    // 8 element assignments per line.
                    q.push_back(Op::Compute(2 * NS));
                    q.push_back(Op::CopyLine {
                        src,
                        dst,
                        nt: false,
                    });
                }
            }
            self.pos += 1;
            in_call += 1;
            if in_call == call_every {
                in_call = 0;
            }
        }
        q.push_back(Op::Done {
            units: chunk * LINE,
            bytes: chunk * LINE,
        });
    }
}
