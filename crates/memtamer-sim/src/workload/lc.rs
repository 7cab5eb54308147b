//! An open-loop latency-critical server (memcached-pmem-like): Poisson
//! arrivals served FIFO, each a compute step, dependent DRAM loads and PM
//! reads and/or writes.

use super::{addr, OpBatch, FILE_BYTES, RANDOM_FOOTPRINT};
use crate::rng::Rng;
use crate::workload::{Op, Ps, LINE};

/// The memory work of one request.
#[derive(Clone, Copy, Debug)]
pub(super) struct LcMix {
    /// Dependent DRAM loads.
    pub(super) dram_lines: u32,
    /// PM lines read (a GET).
    pub(super) pm_read_lines: u32,
    /// PM lines written, NT + fence (a SET).
    pub(super) pm_write_lines: u32,
    /// Probability of a SET; `None`: every request does both.
    pub(super) write_fraction: Option<f64>,
}

/// One server thread (its arrivals are the engine's).
#[derive(Clone, Debug)]
pub(super) struct Lc {
    compute: Ps,
    mix: LcMix,
    dram: u8,
    pm: u8,
    slot: u32,
    /// Next offset of the PM write log.
    pos: u64,
}

impl Lc {
    /// `dram`, `pm`: the regions of the DRAM loads and of the PM accesses.
    pub(super) fn new(compute: Ps, mix: LcMix, dram: u8, pm: u8, slot: u32) -> Lc {
        Lc {
            compute,
            mix,
            dram,
            pm,
            slot,
            pos: 0,
        }
    }

    /// One request per refill.
    pub(super) fn refill(&mut self, q: &mut OpBatch, rng: &mut Rng) {
        let m = self.mix;
        q.push_back(Op::NextArrival);
        q.push_back(Op::Compute(self.compute));
        for _ in 0..m.dram_lines {
            let a = addr(
                self.dram,
                self.slot,
                rng.below(RANDOM_FOOTPRINT / LINE) * LINE,
            );
            q.push_back(Op::Load {
                addr: a,
                dep: true,
                stream: false,
            });
        }
        // YCSB-like mix: SET (PM writes only) or GET (PM reads only)
        let (do_read, do_write) = match m.write_fraction {
            None => (true, true),
            Some(f) => {
                let set = f >= 1.0 || (f > 0.0 && rng.unit() < f);
                (!set, set)
            }
        };
        if do_read && m.pm_read_lines > 0 {
            let base = rng.below(FILE_BYTES / 4096) * 4096;
            let bytes = m.pm_read_lines as u64 * LINE;
            q.push_back(Op::PmBegin {
                bytes,
                write: false,
            });
            for l in 0..m.pm_read_lines as u64 {
                q.push_back(Op::Load {
                    addr: addr(self.pm, self.slot, base + l * LINE),
                    dep: false,
                    stream: false,
                });
            }
            q.push_back(Op::Drain);
            q.push_back(Op::PmEnd);
        }
        if do_write && m.pm_write_lines > 0 {
            let bytes = m.pm_write_lines as u64 * LINE;
            q.push_back(Op::PmBegin { bytes, write: true });
            for _ in 0..m.pm_write_lines {
                q.push_back(Op::StoreNt {
                    addr: addr(self.pm, self.slot, (1 << 34) + self.pos % FILE_BYTES),
                });
                self.pos += LINE;
            }
            q.push_back(Op::Drain);
            q.push_back(Op::PmEnd);
        }
        q.push_back(Op::ArrivalDone);
        q.push_back(Op::Done { units: 1, bytes: 0 });
    }
}
