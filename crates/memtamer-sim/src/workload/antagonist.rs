//! Dicio's antagonist (Dicio §5.1 PMantagonist, §5.2 MEMantagonist): 64 B
//! accesses in a stream, stride or random pattern, rate-limited with nops, whose
//! gap, write amplification and DRAM share may follow schedules over
//! simulated time.

use super::{addr, ns, OpBatch, FILE_BYTES, STRIDE_BASE};
use crate::config::{Pattern, Rw};
use crate::rng::Rng;
use crate::workload::{Op, Ps, LINE};

/// A value that changes over simulated time: `values[i]` holds during
/// `[i*period, (i+1)*period)`, cycling; a single value holds forever.
#[derive(Clone, Debug)]
pub(super) struct Schedule {
    values: Vec<f64>,
    period: Ps,
}

impl Schedule {
    fn constant(v: f64) -> Schedule {
        Schedule {
            values: vec![v],
            period: 0,
        }
    }

    /// From an optional scalar and an optional schedule with its period (ms);
    /// `map` converts each value (validated before).
    pub(super) fn from_spec(
        value: Option<f64>,
        schedule: &Option<Vec<f64>>,
        period_ms: Option<f64>,
        default: f64,
        map: impl Fn(f64) -> f64,
    ) -> Schedule {
        match schedule {
            Some(v) if !v.is_empty() => Schedule {
                values: v.iter().map(|&x| map(x)).collect(),
                period: (period_ms.unwrap_or(0.0) * 1e9).round().max(0.0) as Ps,
            },
            _ => Schedule::constant(map(value.unwrap_or(default))),
        }
    }

    fn at(&self, now: Ps) -> f64 {
        if self.values.len() <= 1 || self.period == 0 {
            return self.values.first().copied().unwrap_or(0.0);
        }
        self.values[((now / self.period) % self.values.len() as u64) as usize]
    }
}

/// What an antagonist does at a point of simulated time, each a schedule.
#[derive(Clone, Debug)]
pub(super) struct Rates {
    /// Nop time between accesses, ns.
    pub(super) gap_ns: Schedule,
    /// Probability that an access goes to a fresh XPLine ((WA-1)/3).
    pub(super) stride_p: Schedule,
    /// Probability that an access goes to the DRAM stream.
    pub(super) dram_p: Schedule,
}

/// One antagonist thread: a main stream in `region`, a stride-style stream
/// of fresh XPLines (write amplification) and a DRAM stream.
#[derive(Clone, Debug)]
pub(super) struct Antagonist {
    rw: Rw,
    pattern: Pattern,
    rates: Rates,
    region: u8,
    dram: u8,
    slot: u32,
    /// Next offset of the main stream.
    pos: u64,
    /// Next fresh XPLine of the stride-style part (write amplification).
    stride_pos: u64,
    /// Next line of the DRAM stream.
    dram_pos: u64,
}

impl Antagonist {
    /// `region`: the main (PM) stream's region; `dram`: the DRAM stream's.
    pub(super) fn new(
        rw: Rw,
        pattern: Pattern,
        rates: Rates,
        region: u8,
        dram: u8,
        slot: u32,
    ) -> Antagonist {
        Antagonist {
            rw,
            pattern,
            rates,
            region,
            dram,
            slot,
            pos: 0,
            stride_pos: 0,
            dram_pos: 0,
        }
    }

    /// A batch of 16 accesses per refill.
    pub(super) fn refill(&mut self, q: &mut OpBatch, rng: &mut Rng, now: Ps) {
        // schedules are sampled once per batch of 16 accesses
        let gap = ns(self.rates.gap_ns.at(now));
        let sp = self.rates.stride_p.at(now);
        let dp = self.rates.dram_p.at(now);
        // a random draw only where there is a choice, so that
        // scenarios without schedules keep their random streams
        let chance = |p: f64, rng: &mut Rng| p >= 1.0 || (p > 0.0 && rng.unit() < p);
        for _ in 0..16 {
            let a = if chance(dp, rng) {
                let a = addr(self.dram, self.slot, self.dram_pos % FILE_BYTES);
                self.dram_pos += LINE;
                a
            } else if chance(sp, rng) {
                // a fresh XPLine: this line is all the XPBuffer gets of it
                let a = addr(
                    self.region,
                    self.slot,
                    STRIDE_BASE + self.stride_pos % FILE_BYTES,
                );
                self.stride_pos += 256;
                a
            } else if self.pattern == Pattern::Rand {
                // fence-free small stores (or loads) to random lines: each
                // access lands on its own XPLine, so the DIMMs cannot combine
                // them (the access pattern of issue 24 item 5)
                addr(self.region, self.slot, rng.below(FILE_BYTES / LINE) * LINE)
            } else {
                let step = if self.pattern == Pattern::Stride {
                    256
                } else {
                    LINE
                };
                let a = addr(self.region, self.slot, self.pos % FILE_BYTES);
                self.pos += step;
                a
            };
            if gap > 0 {
                q.push_back(Op::Compute(gap));
            }
            q.push_back(match self.rw {
                Rw::Read => Op::Load {
                    addr: a,
                    dep: false,
                    stream: self.pattern != Pattern::Rand,
                },
                Rw::Write => Op::StoreNt { addr: a },
            });
        }
        q.push_back(Op::Done {
            units: 16 * LINE,
            bytes: 16 * LINE,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Generator, THREAD_SPAN};
    use crate::config::{Pattern, Rw, WorkloadSpec};
    use crate::rng::Rng;
    use crate::workload::{Op, LINE};

    fn accesses(pattern: Pattern, rw: Rw, n: usize) -> Vec<Op> {
        let spec = WorkloadSpec::Antagonist {
            rw,
            pattern,
            gap_ns: 0.0,
            gap_ns_schedule: None,
            gap_period_ms: None,
            write_amplification: None,
            wa_schedule: None,
            wa_period_ms: None,
            dram_fraction: None,
            dram_fraction_schedule: None,
            dram_period_ms: None,
            dram_region: None,
            region: "pm".into(),
        };
        let mut g = Generator::new(&spec, 0, &|_| 1);
        let mut rng = Rng::new(1, 1);
        (0..n).map(|_| g.next(&mut rng, 0)).collect()
    }

    #[test]
    fn rand_pattern_stores_to_random_lines_without_fences() {
        let o = accesses(Pattern::Rand, Rw::Write, 17 * 200);
        assert!(!o.iter().any(|o| matches!(o, Op::Drain)), "no fence");
        let a: Vec<u64> = o
            .iter()
            .filter_map(|o| match o {
                Op::StoreNt { addr } => Some(addr & (THREAD_SPAN - 1)),
                _ => None,
            })
            .collect();
        assert_eq!(a.len(), 16 * 200);
        assert!(a.iter().all(|x| x % LINE == 0), "line-aligned");
        // consecutive stores rarely share an XPLine (256 B) or follow each other
        let same_xpline = a.windows(2).filter(|w| w[0] / 256 == w[1] / 256).count();
        let sequential = a.windows(2).filter(|w| w[1] == w[0] + LINE).count();
        assert!(
            same_xpline <= 2 && sequential <= 2,
            "{same_xpline} {sequential}"
        );
        // and they spread over the file
        let max = a.iter().copied().max().unwrap_or(0);
        assert!(max > (1 << 32), "{max:x}");
    }

    #[test]
    fn rand_loads_are_not_prefetchable_streams() {
        let o = accesses(Pattern::Rand, Rw::Read, 17 * 10);
        let loads: Vec<bool> = o
            .iter()
            .filter_map(|o| match o {
                Op::Load { stream, .. } => Some(*stream),
                _ => None,
            })
            .collect();
        assert_eq!(loads.len(), 160);
        assert!(loads.iter().all(|s| !s));
        let o = accesses(Pattern::Seq, Rw::Read, 17 * 10);
        assert!(o
            .iter()
            .all(|o| !matches!(o, Op::Load { stream: false, .. })));
    }
}
