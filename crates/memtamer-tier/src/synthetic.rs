//! Synthetic access patterns with known ground truth, to measure how well
//! the protection-fault profiler ([`crate::profiler`]) estimates each
//! object's access share. Used by the accuracy test and the
//! `tier_profile_accuracy` example (the figure in docs/unimem.md).
//!
//! A *visit* writes one byte of one page of one object; the ground truth is
//! the number of visits per object. The workload thread itself calls the
//! profiler tick every `visits_per_tick` visits, so a run is a deterministic
//! function of its seeds (no timing involved).

use crate::{Tier, TierError, TierRuntime};

/// How an object's pages are visited.
#[derive(Clone, Debug, PartialEq)]
pub enum PageOrder {
    /// Sequential sweep, wrapping around (streaming kernels).
    Stream,
    /// Uniformly random page.
    Uniform,
    /// A hot prefix: fraction `frac` of the pages gets `p_hot` of the visits.
    Hot {
        /// Fraction of pages that are hot.
        frac: f64,
        /// Probability that a visit goes to a hot page.
        p_hot: f64,
    },
}

/// One object of a pattern.
#[derive(Clone, Debug, PartialEq)]
pub struct SynthObject {
    /// Name (shown in the figure).
    pub name: String,
    /// Size in pages.
    pub pages: usize,
    /// Page order of its visits.
    pub order: PageOrder,
}

/// Objects plus, per phase, each object's probability of being visited.
#[derive(Clone, Debug, PartialEq)]
pub struct Pattern {
    /// Name (shown in the figure).
    pub name: String,
    /// The objects.
    pub objects: Vec<SynthObject>,
    /// Per phase: visit weights (one per object).
    pub phases: Vec<Vec<f64>>,
    /// Visits per phase.
    pub visits_per_phase: u64,
    /// Visits between two profiler ticks.
    pub visits_per_tick: u64,
    /// Pages armed per object per tick.
    pub pages_per_tick: usize,
}

/// Truth against estimate for one object in one phase.
#[derive(Clone, Debug, PartialEq)]
pub struct AccuracyRow {
    /// Phase number.
    pub phase: usize,
    /// Object name.
    pub object: String,
    /// Visits counted by the workload.
    pub true_visits: u64,
    /// True share of the phase's visits.
    pub true_share: f64,
    /// Profiler's estimated share.
    pub est_share: f64,
    /// Sampling faults behind the estimate.
    pub faults: u64,
}

impl AccuracyRow {
    /// |estimate - truth| / truth (0 when the truth is 0 and so is the estimate).
    pub fn rel_error(&self) -> f64 {
        if self.true_share == 0.0 {
            self.est_share
        } else {
            (self.est_share - self.true_share).abs() / self.true_share
        }
    }
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The patterns of the accuracy figure.
pub fn standard_patterns() -> Vec<Pattern> {
    let o = |name: &str, pages, order| SynthObject {
        name: name.into(),
        pages,
        order,
    };
    let base = |name: &str, objects, phases| Pattern {
        name: name.into(),
        objects,
        phases,
        visits_per_phase: 100_000,
        visits_per_tick: 32,
        pages_per_tick: 32,
    };
    vec![
        base(
            "stream",
            vec![
                o("a", 256, PageOrder::Stream),
                o("b", 512, PageOrder::Stream),
                o("c", 1024, PageOrder::Stream),
                o("d", 2048, PageOrder::Stream),
            ],
            vec![vec![0.1, 0.2, 0.3, 0.4]],
        ),
        base(
            "uniform",
            vec![
                o("small", 256, PageOrder::Uniform),
                o("big", 2048, PageOrder::Uniform),
                o("mid", 512, PageOrder::Uniform),
            ],
            vec![vec![0.5, 0.3, 0.2]],
        ),
        base(
            "hot-subset",
            vec![
                o(
                    "skewed",
                    2048,
                    PageOrder::Hot {
                        frac: 0.1,
                        p_hot: 0.9,
                    },
                ),
                o("flat", 1024, PageOrder::Uniform),
                o("scan", 2048, PageOrder::Stream),
            ],
            vec![vec![0.4, 0.35, 0.25]],
        ),
        base(
            "phases",
            vec![
                o("A", 512, PageOrder::Stream),
                o("x", 1024, PageOrder::Uniform),
                o("p", 256, PageOrder::Stream),
            ],
            vec![
                vec![0.7, 0.2, 0.1],
                vec![0.1, 0.1, 0.8],
                vec![0.34, 0.33, 0.33],
            ],
        ),
    ]
}

/// Runs `pat` on `rt` (objects in the slow tier), profiling each phase
/// separately, and returns truth vs estimate per phase and object.
pub fn run(rt: &TierRuntime, pat: &Pattern, seed: u64) -> Result<Vec<AccuracyRow>, TierError> {
    let page = crate::guard::page_size();
    let mut ptrs = Vec::new();
    for o in &pat.objects {
        match rt.alloc(o.pages * page, &o.name, Tier::Slow) {
            Ok(p) => ptrs.push(p),
            Err(e) => {
                for p in ptrs {
                    let _ = rt.free(p);
                }
                return Err(e);
            }
        }
    }
    let mut rng = Rng(seed | 1);
    let mut cursor = vec![0usize; pat.objects.len()];
    let mut rows = Vec::new();
    for (ph, weights) in pat.phases.iter().enumerate() {
        let total: f64 = weights.iter().sum();
        let mut truth = vec![0u64; pat.objects.len()];
        rt.profile_tick(0);
        rt.profile_reset();
        rt.profile_tick(pat.pages_per_tick);
        for v in 0..pat.visits_per_phase {
            let mut r = rng.unit() * total;
            let mut i = 0;
            while i + 1 < weights.len() && r >= weights[i] {
                r -= weights[i];
                i += 1;
            }
            let o = &pat.objects[i];
            let pg = match o.order {
                PageOrder::Stream => {
                    cursor[i] = (cursor[i] + 1) % o.pages;
                    cursor[i]
                }
                PageOrder::Uniform => (rng.next() % o.pages as u64) as usize,
                PageOrder::Hot { frac, p_hot } => {
                    let hot = ((o.pages as f64 * frac) as usize).clamp(1, o.pages);
                    if rng.unit() < p_hot || hot == o.pages {
                        (rng.next() % hot as u64) as usize
                    } else {
                        hot + (rng.next() % (o.pages - hot) as u64) as usize
                    }
                }
            };
            // SAFETY: pg < pages, so the byte lies inside the object.
            unsafe {
                std::ptr::write_volatile(ptrs[i].add(pg * page + (v as usize * 64) % page), v as u8)
            };
            truth[i] += 1;
            if (v + 1) % pat.visits_per_tick == 0 {
                rt.profile_tick(pat.pages_per_tick);
            }
        }
        let est = rt.profile_take();
        let sum: u64 = truth.iter().sum();
        for (i, o) in pat.objects.iter().enumerate() {
            let e = est.iter().find(|e| e.addr == ptrs[i] as usize);
            rows.push(AccuracyRow {
                phase: ph,
                object: o.name.clone(),
                true_visits: truth[i],
                true_share: truth[i] as f64 / sum.max(1) as f64,
                est_share: e.map_or(0.0, |e| e.share),
                faults: e.map_or(0, |e| e.faults),
            });
        }
    }
    for p in ptrs {
        rt.free(p)?;
    }
    Ok(rows)
}
