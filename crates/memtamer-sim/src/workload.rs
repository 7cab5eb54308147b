//! Workloads as request generators. Each simulated thread owns one generator
//! that yields [`Op`]s; the engine turns memory ops into cache-line requests.
//!
//! Generators only describe what a program does (compute, which lines it
//! touches, where it fences); how long that takes is entirely the engine's.

use crate::config::{KvOp, MbwMode, Pattern, Rw, StoreKind, WorkloadSpec};
use crate::rng::Rng;

/// Picoseconds.
pub type Ps = u64;
/// One nanosecond in [`Ps`].
pub const NS: Ps = 1000;

/// Cache-line size.
pub const LINE: u64 = 64;
/// Bits of an address that hold the offset inside a region.
pub const REGION_SHIFT: u32 = 56;
/// Address span reserved for each thread inside a region (64 GiB), so that
/// threads never share lines by accident and stay 4 KiB-aligned.
pub const THREAD_SPAN: u64 = 1 << 36;

/// What a thread does next.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Op {
    /// Busy the core for this long (scaled by SMT sharing).
    Compute(Ps),
    /// A load miss; `dep` = the thread waits for the data before going on;
    /// `stream` = part of a sequential stream the L2 streamer prefetches.
    Load { addr: u64, dep: bool, stream: bool },
    /// A non-temporal 64 B store (write-combining buffer until the iMC accepts it).
    StoreNt { addr: u64 },
    /// A temporal store miss: read-for-ownership, then a dirty write-back.
    /// With `flush` the write-back is a clwb the next [`Op::Drain`] waits for.
    StoreTemporal { addr: u64, flush: bool },
    /// memcpy of one line: load `src`, then store `dst` (non-temporal or temporal).
    CopyLine { src: u64, dst: u64, nt: bool },
    /// Wait until every outstanding memory op of this thread completed (sfence / data use).
    Drain,
    /// Start of one PM request of `bytes` (PATS gate + request-level accounting).
    PmBegin { bytes: u64, write: bool },
    /// End of the current PM request.
    PmEnd,
    /// Work completed: `units` (ops or bytes, workload-defined) and bytes moved.
    Done { units: u64, bytes: u64 },
    /// LC server: take the next arrived request, or sleep until one arrives.
    NextArrival,
    /// LC server: the current request is complete (latency recorded).
    ArrivalDone,
}

/// Builds an address in `region` at `offset` within thread `slot`'s span.
pub fn addr(region: u8, slot: u32, offset: u64) -> u64 {
    ((region as u64) << REGION_SHIFT) | (slot as u64 * THREAD_SPAN) | (offset % THREAD_SPAN)
}

/// A generator instance for one thread.
#[derive(Clone, Debug)]
pub struct Generator {
    kind: GenKind,
    /// Queue of ops the current step produced, served front to back.
    pending: std::collections::VecDeque<Op>,
}

#[derive(Clone, Debug)]
enum GenKind {
    Mbw {
        mode: MbwMode,
        block_lines: u64,
        call: Ps,
        region: u8,
        slot: u32,
        pos: u64,
    },
    Kv {
        op: KvOp,
        value_lines: u64,
        lookups: u32,
        compute: Ps,
        region: u8,
        slot: u32,
    },
    PmStream {
        rw: Rw,
        pattern: Pattern,
        request_bytes: u64,
        store: StoreKind,
        per_request: Ps,
        region: u8,
        slot: u32,
        pos: u64,
    },
    Antagonist {
        rw: Rw,
        pattern: Pattern,
        gap: Ps,
        region: u8,
        slot: u32,
        pos: u64,
    },
    Probe {
        region: u8,
        slot: u32,
        pattern: Pattern,
        pos: u64,
    },
    Cpu {
        compute: Ps,
        mem_lines: u32,
        region: u8,
        slot: u32,
    },
    Lc {
        compute: Ps,
        dram_lines: u32,
        pm_read_lines: u32,
        pm_write_lines: u32,
        dram: u8,
        pm: u8,
        slot: u32,
        pos: u64,
    },
}

/// Footprint for random accesses (4 GiB): far beyond any LLC.
const RANDOM_FOOTPRINT: u64 = 4 << 30;
/// MBW's array (PATS: 10 GB dataset); source and destination halves.
const MBW_ARRAY: u64 = 10 << 30;
/// Per-thread file size of fio-like PM jobs.
const FILE_BYTES: u64 = 8 << 30;

fn ns(v: f64) -> Ps {
    (v * NS as f64).round().max(0.0) as Ps
}

impl Generator {
    /// Creates the generator for one thread. `region_of` resolves region names
    /// to indices (validated before).
    pub fn new(spec: &WorkloadSpec, slot: u32, region_of: &dyn Fn(&str) -> u8) -> Generator {
        let kind = match spec {
            WorkloadSpec::Mbw {
                mode,
                block_bytes,
                call_ns,
                region,
            } => GenKind::Mbw {
                mode: *mode,
                block_lines: (block_bytes / LINE).max(1),
                call: ns(*call_ns),
                region: region_of(region),
                slot,
                pos: 0,
            },
            WorkloadSpec::Memcached {
                op,
                value_bytes,
                lookups,
                compute_ns,
                region,
            } => GenKind::Kv {
                op: *op,
                value_lines: value_bytes.div_ceil(LINE),
                lookups: *lookups,
                compute: ns(*compute_ns),
                region: region_of(region),
                slot,
            },
            WorkloadSpec::PmStream {
                rw,
                pattern,
                request_bytes,
                store,
                per_request_ns,
                region,
                ..
            } => GenKind::PmStream {
                rw: *rw,
                pattern: *pattern,
                request_bytes: *request_bytes,
                store: *store,
                per_request: ns(*per_request_ns),
                region: region_of(region),
                slot,
                pos: 0,
            },
            WorkloadSpec::Antagonist {
                rw,
                pattern,
                gap_ns,
                region,
            } => GenKind::Antagonist {
                rw: *rw,
                pattern: *pattern,
                gap: ns(*gap_ns),
                region: region_of(region),
                slot,
                pos: 0,
            },
            WorkloadSpec::LatencyProbe { region, pattern } => GenKind::Probe {
                region: region_of(region),
                slot,
                pattern: *pattern,
                pos: 0,
            },
            WorkloadSpec::Cpu {
                compute_ns,
                mem_lines,
                region,
            } => GenKind::Cpu {
                compute: ns(*compute_ns),
                mem_lines: *mem_lines,
                region: region_of(region),
                slot,
            },
            WorkloadSpec::LcServer {
                compute_ns,
                dram_lines,
                pm_read_lines,
                pm_write_lines,
                dram_region,
                pm_region,
                ..
            } => GenKind::Lc {
                compute: ns(*compute_ns),
                dram_lines: *dram_lines,
                pm_read_lines: *pm_read_lines,
                pm_write_lines: *pm_write_lines,
                dram: region_of(dram_region),
                pm: region_of(pm_region),
                slot,
                pos: 0,
            },
        };
        Generator {
            kind,
            pending: Default::default(),
        }
    }

    /// The next op of this thread.
    pub fn next(&mut self, rng: &mut Rng) -> Op {
        if let Some(op) = self.pending.pop_front() {
            return op;
        }
        self.refill(rng);
        self.pending.pop_front().unwrap_or(Op::Compute(NS))
    }

    fn refill(&mut self, rng: &mut Rng) {
        let q = &mut self.pending;
        match &mut self.kind {
            GenKind::Mbw {
                mode,
                block_lines,
                call,
                region,
                slot,
                pos,
            } => {
                // One 4 KiB chunk per refill; memcpy() call overhead once per call.
                let half = MBW_ARRAY / 2;
                let chunk = 64u64;
                let call_every = match mode {
                    MbwMode::Mcblock => *block_lines,
                    _ => half / LINE,
                };
                for _ in 0..chunk {
                    if *pos % call_every == 0 && *call > 0 {
                        q.push_back(Op::Compute(*call));
                    }
                    let off = (*pos * LINE) % half;
                    let src = addr(*region, *slot, off);
                    let dst = addr(*region, *slot, half + off);
                    match mode {
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
                    *pos += 1;
                }
                q.push_back(Op::Done {
                    units: chunk * LINE,
                    bytes: chunk * LINE,
                });
            }
            GenKind::Kv {
                op,
                value_lines,
                lookups,
                compute,
                region,
                slot,
            } => {
                q.push_back(Op::Compute(*compute));
                for _ in 0..*lookups {
                    let a = addr(*region, *slot, rng.below(RANDOM_FOOTPRINT / LINE) * LINE);
                    q.push_back(Op::Load {
                        addr: a,
                        dep: true,
                        stream: false,
                    });
                }
                let item = rng.below(RANDOM_FOOTPRINT / 4096) * 4096;
                for l in 0..*value_lines {
                    let a = addr(*region, *slot, item + l * LINE);
                    match op {
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
                    bytes: *value_lines * LINE,
                });
            }
            GenKind::PmStream {
                rw,
                pattern,
                request_bytes,
                store,
                per_request,
                region,
                slot,
                pos,
            } => {
                let req = *request_bytes;
                let lines = req.div_ceil(LINE);
                let base = match pattern {
                    Pattern::Seq => {
                        let b = *pos % FILE_BYTES;
                        *pos += req;
                        b
                    }
                    Pattern::Rand => rng.below(FILE_BYTES / req.max(1)) * req,
                    Pattern::Stride => {
                        let b = *pos % FILE_BYTES;
                        *pos += lines * 256;
                        b
                    }
                };
                let write = *rw == Rw::Write;
                q.push_back(Op::PmBegin { bytes: req, write });
                for l in 0..lines {
                    let off = match pattern {
                        Pattern::Stride => base + l * 256,
                        _ => base + l * LINE,
                    };
                    let a = addr(*region, *slot, off);
                    q.push_back(match (write, *store) {
                        (false, _) => Op::Load {
                            addr: a,
                            dep: false,
                            stream: *pattern != Pattern::Rand,
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
                if *per_request > 0 {
                    // software overhead varies per request (uniform +-50%), which
                    // keeps threads from running in artificial lock-step
                    let jitter = *per_request / 2 + rng.below(*per_request + 1);
                    q.push_back(Op::Compute(jitter));
                }
                q.push_back(Op::Done {
                    units: req,
                    bytes: req,
                });
            }
            GenKind::Antagonist {
                rw,
                pattern,
                gap,
                region,
                slot,
                pos,
            } => {
                for _ in 0..16 {
                    let step = if *pattern == Pattern::Stride {
                        256
                    } else {
                        LINE
                    };
                    let a = addr(*region, *slot, *pos % FILE_BYTES);
                    *pos += step;
                    if *gap > 0 {
                        q.push_back(Op::Compute(*gap));
                    }
                    q.push_back(match rw {
                        Rw::Read => Op::Load {
                            addr: a,
                            dep: false,
                            stream: true,
                        },
                        Rw::Write => Op::StoreNt { addr: a },
                    });
                }
                q.push_back(Op::Done {
                    units: 16 * LINE,
                    bytes: 16 * LINE,
                });
            }
            GenKind::Probe {
                region,
                slot,
                pattern,
                pos,
            } => {
                let off = match pattern {
                    Pattern::Rand => rng.below(RANDOM_FOOTPRINT / LINE) * LINE,
                    _ => {
                        *pos += LINE;
                        *pos % RANDOM_FOOTPRINT
                    }
                };
                q.push_back(Op::Load {
                    addr: addr(*region, *slot, off),
                    dep: true,
                    stream: false,
                });
                q.push_back(Op::Done {
                    units: 1,
                    bytes: LINE,
                });
            }
            GenKind::Cpu {
                compute,
                mem_lines,
                region,
                slot,
            } => {
                q.push_back(Op::Compute(*compute));
                for _ in 0..*mem_lines {
                    let a = addr(*region, *slot, rng.below(RANDOM_FOOTPRINT / LINE) * LINE);
                    q.push_back(Op::Load {
                        addr: a,
                        dep: false,
                        stream: false,
                    });
                }
                if *mem_lines > 0 {
                    q.push_back(Op::Drain);
                }
                q.push_back(Op::Done {
                    units: 1,
                    bytes: *mem_lines as u64 * LINE,
                });
            }
            GenKind::Lc {
                compute,
                dram_lines,
                pm_read_lines,
                pm_write_lines,
                dram,
                pm,
                slot,
                pos,
            } => {
                q.push_back(Op::NextArrival);
                q.push_back(Op::Compute(*compute));
                for _ in 0..*dram_lines {
                    let a = addr(*dram, *slot, rng.below(RANDOM_FOOTPRINT / LINE) * LINE);
                    q.push_back(Op::Load {
                        addr: a,
                        dep: true,
                        stream: false,
                    });
                }
                if *pm_read_lines > 0 {
                    let base = rng.below(FILE_BYTES / 4096) * 4096;
                    let bytes = *pm_read_lines as u64 * LINE;
                    q.push_back(Op::PmBegin {
                        bytes,
                        write: false,
                    });
                    for l in 0..*pm_read_lines as u64 {
                        q.push_back(Op::Load {
                            addr: addr(*pm, *slot, base + l * LINE),
                            dep: false,
                            stream: false,
                        });
                    }
                    q.push_back(Op::Drain);
                    q.push_back(Op::PmEnd);
                }
                if *pm_write_lines > 0 {
                    let bytes = *pm_write_lines as u64 * LINE;
                    q.push_back(Op::PmBegin { bytes, write: true });
                    for _ in 0..*pm_write_lines {
                        q.push_back(Op::StoreNt {
                            addr: addr(*pm, *slot, (1 << 34) + *pos % FILE_BYTES),
                        });
                        *pos += LINE;
                    }
                    q.push_back(Op::Drain);
                    q.push_back(Op::PmEnd);
                }
                q.push_back(Op::ArrivalDone);
                q.push_back(Op::Done { units: 1, bytes: 0 });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops(spec: &WorkloadSpec, n: usize) -> Vec<Op> {
        let mut g = Generator::new(spec, 0, &|_| 1);
        let mut rng = Rng::new(1, 1);
        (0..n).map(|_| g.next(&mut rng)).collect()
    }

    #[test]
    fn fio_writer_fences_each_request() {
        let spec = WorkloadSpec::PmStream {
            rw: Rw::Write,
            pattern: Pattern::Seq,
            request_bytes: 4096,
            store: StoreKind::Nt,
            per_request_ns: 100.0,
            gated: true,
            region: "pm".into(),
        };
        let o = ops(&spec, 2 * 69);
        assert_eq!(
            o[0],
            Op::PmBegin {
                bytes: 4096,
                write: true
            }
        );
        assert_eq!(
            o.iter().filter(|x| matches!(x, Op::StoreNt { .. })).count(),
            128
        );
        assert_eq!(o.iter().filter(|x| matches!(x, Op::Drain)).count(), 2);
        // sequential: second request starts 4 KiB after the first
        if let (Op::StoreNt { addr: a }, Op::StoreNt { addr: b }) = (o[1], o[70]) {
            assert_eq!(b - a, 4096);
        } else {
            panic!("unexpected ops {:?} {:?}", o[1], o[70]);
        }
    }

    #[test]
    fn stride_touches_one_line_per_xpline() {
        let spec = WorkloadSpec::Antagonist {
            rw: Rw::Write,
            pattern: Pattern::Stride,
            gap_ns: 0.0,
            region: "pm".into(),
        };
        let addrs: Vec<u64> = ops(&spec, 16)
            .into_iter()
            .filter_map(|o| match o {
                Op::StoreNt { addr } => Some(addr),
                _ => None,
            })
            .collect();
        assert!(addrs.windows(2).all(|w| w[1] - w[0] == 256));
    }
}
