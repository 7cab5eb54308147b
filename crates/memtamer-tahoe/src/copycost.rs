//! The copy cost of one migration batch, fixed part plus per page:
//! `cost(k) = c0 + c1 * k` for a batch of `k` pages moved by one call.
//!
//! Why affine: the thesis batches a task's pages into one `move_pages`
//! call precisely because a call has a cost that does not grow with its
//! size ("Calling the page migration function (i.e., move_pages())
//! involves flushing translation lookaside buffer ... we combine multiple
//! TLB flushes in one invocation of move_pages() into one TLB flush",
//! §4.3.6 "Performance optimization for data migration"). A per-page price
//! (Eq. 3.3's `data_size / mem_copy_bw`, §3.4.1) fitted as the mean time
//! per page of the timed batches mixes that fixed part into every page:
//! on a host where a call costs ~1 ms whatever its size the mean swings
//! with the batch sizes the run happened to time (docs/notebook/tahoe.md "The check
//! in the tool": 9,000 to 3,000,000 ns/page), and the check with it. Here
//! the two terms are fitted by least squares over the timed batches'
//! `(pages, ns)` samples ([`CopySamples::fit`]), and the planner charges a
//! batch its fixed part once ([`crate::plan::PlanConfig::copy_fixed_ns`]).

/// Samples (timed batches) the fit needs before it trusts two terms: with
/// fewer, two points say nothing about the noise of either.
pub const MIN_FIT_SAMPLES: u64 = 4;

/// A batch's copy cost: `fixed_ns + per_page_ns * pages`, both >= 0.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CopyCost {
    /// `c0`: the cost of one call whatever its size (ns).
    pub fixed_ns: f64,
    /// `c1`: the cost of each page it moves (ns).
    pub per_page_ns: f64,
}

impl CopyCost {
    /// A per-page price with no fixed part (the model before this module,
    /// and the simulator's copy model).
    pub fn per_page(ns: f64) -> Self {
        CopyCost {
            fixed_ns: 0.0,
            per_page_ns: ns,
        }
    }

    /// Predicted time (ns) of one batch of `pages` pages.
    pub fn batch_ns(&self, pages: u64) -> f64 {
        self.fixed_ns + self.per_page_ns * pages as f64
    }
}

/// Running sums of `(pages, ns)` samples, one per timed batch: all a least
/// squares fit of a line needs, in constant space (the OMPT tool adds a
/// sample per batch for the whole run).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CopySamples {
    /// Samples.
    pub n: u64,
    /// Pages over all samples.
    pub pages: u64,
    sx: f64,
    sy: f64,
    sxx: f64,
    sxy: f64,
    syy: f64,
}

impl CopySamples {
    /// Adds one batch that moved `pages` pages in `ns` ns. A batch that
    /// moved nothing, or a time that is not a finite number >= 0, says
    /// nothing about a page's copy and is dropped.
    pub fn add(&mut self, pages: u64, ns: f64) {
        if pages == 0 || !ns.is_finite() || ns < 0.0 {
            return;
        }
        let x = pages as f64;
        self.n += 1;
        self.pages += pages;
        self.sx += x;
        self.sy += ns;
        self.sxx += x * x;
        self.sxy += x * ns;
        self.syy += ns * ns;
    }

    /// Adds every sample of `other`.
    pub fn merge(&mut self, other: &CopySamples) {
        self.n += other.n;
        self.pages += other.pages;
        self.sx += other.sx;
        self.sy += other.sy;
        self.sxx += other.sxx;
        self.sxy += other.sxy;
        self.syy += other.syy;
    }

    /// Sum of squared residuals of `c0 + c1 * x` over the samples.
    fn sse(&self, c0: f64, c1: f64) -> f64 {
        let n = self.n as f64;
        self.syy - 2.0 * c0 * self.sy - 2.0 * c1 * self.sxy
            + n * c0 * c0
            + 2.0 * c0 * c1 * self.sx
            + c1 * c1 * self.sxx
    }

    /// The per-page mean (total time over total pages, no fixed part):
    /// the check's price before this module
    /// ([`crate::benefit::measured_copy_ns`]), once
    /// [`crate::benefit::COPY_SAMPLE_PAGES`] pages were timed.
    pub fn mean(&self) -> Option<CopyCost> {
        crate::benefit::measured_copy_ns(self.sy, self.pages)
            .filter(|c| c.is_finite() && *c > 0.0)
            .map(CopyCost::per_page)
    }

    /// Least squares `c0 + c1 * pages` over the samples, with `c0, c1 >=
    /// 0` (non-negative least squares in two unknowns: the unconstrained
    /// line if both terms are >= 0, else the better of the two one-term
    /// fits, the line through the origin and the constant). Falls back to
    /// the per-page mean ([`CopySamples::mean`]) with fewer than
    /// [`MIN_FIT_SAMPLES`] samples or when every batch had the same size
    /// (one batch size cannot tell the terms apart). None before
    /// [`crate::benefit::COPY_SAMPLE_PAGES`] pages were timed, or with no time measured.
    pub fn fit(&self) -> Option<CopyCost> {
        let mean = self.mean()?;
        let n = self.n as f64;
        let var = n * self.sxx - self.sx * self.sx;
        // relative guard: equal batch sizes leave only rounding in `var`
        if self.n < MIN_FIT_SAMPLES || var <= 1e-9 * n * self.sxx {
            return Some(mean);
        }
        let c1 = (n * self.sxy - self.sx * self.sy) / var;
        let c0 = (self.sy - c1 * self.sx) / n;
        let c = if c0 >= 0.0 && c1 >= 0.0 {
            CopyCost {
                fixed_ns: c0,
                per_page_ns: c1,
            }
        } else {
            let origin = CopyCost::per_page((self.sxy / self.sxx).max(0.0));
            let flat = CopyCost {
                fixed_ns: (self.sy / n).max(0.0),
                per_page_ns: 0.0,
            };
            if self.sse(origin.fixed_ns, origin.per_page_ns) <= self.sse(flat.fixed_ns, 0.0) {
                origin
            } else {
                flat
            }
        };
        (c.fixed_ns.is_finite() && c.per_page_ns.is_finite()).then_some(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples(s: &[(u64, f64)]) -> CopySamples {
        let mut c = CopySamples::default();
        for &(p, ns) in s {
            c.add(p, ns);
        }
        c
    }

    #[test]
    fn an_affine_cost_is_recovered_exactly() {
        // 1 ms per call plus 2 us per page, batches of 8 .. 256 pages
        let s = samples(&[
            (8, 1_016_000.0),
            (32, 1_064_000.0),
            (64, 1_128_000.0),
            (256, 1_512_000.0),
        ]);
        let c = s.fit().unwrap();
        assert!((c.fixed_ns - 1e6).abs() < 1e-3, "{c:?}");
        assert!((c.per_page_ns - 2000.0).abs() < 1e-6, "{c:?}");
        // the mean prices every page at ~10 us, 5x the copy of a page
        let m = s.mean().unwrap();
        assert!(m.per_page_ns > 5.0 * c.per_page_ns && m.fixed_ns == 0.0);
    }

    #[test]
    fn a_per_page_cost_fits_with_no_fixed_part() {
        // the simulator's copy model: time proportional to pages
        let s = samples(&[(1, 900.0), (4, 3600.0), (32, 28_800.0), (64, 57_600.0)]);
        let c = s.fit().unwrap();
        assert!(c.fixed_ns.abs() < 1e-6, "{c:?}");
        assert!((c.per_page_ns - 900.0).abs() < 1e-9, "{c:?}");
    }

    #[test]
    fn the_terms_stay_non_negative() {
        // time falling with size (noise): c1 < 0 unconstrained; the
        // constant fits better than the line through the origin
        let s = samples(&[(8, 1.2e6), (16, 1.1e6), (64, 1.0e6), (128, 0.9e6)]);
        let c = s.fit().unwrap();
        assert_eq!(c.per_page_ns, 0.0);
        assert!((c.fixed_ns - 1.05e6).abs() < 1e-3, "{c:?}");
        // a negative intercept: through the origin instead
        let s = samples(&[(8, 0.0), (16, 100.0), (64, 10_000.0), (128, 20_000.0)]);
        let c = s.fit().unwrap();
        assert_eq!(c.fixed_ns, 0.0);
        assert!(c.per_page_ns > 0.0, "{c:?}");
    }

    #[test]
    fn too_few_or_equal_samples_fall_back_to_the_mean() {
        // below COPY_SAMPLE_PAGES: nothing
        assert_eq!(samples(&[(8, 1e6), (8, 1e6)]).fit(), None);
        // three samples: the mean
        let s = samples(&[(8, 1e6), (16, 1e6), (64, 1e6)]);
        assert_eq!(s.fit(), s.mean());
        // one batch size: the mean
        let s = samples(&[(32, 1e6), (32, 2e6), (32, 1e6), (32, 2e6)]);
        assert_eq!(s.fit(), Some(CopyCost::per_page(6e6 / 128.0)));
        // empty and bad samples are dropped
        let mut s = CopySamples::default();
        s.add(0, 5.0);
        s.add(64, f64::NAN);
        s.add(64, -1.0);
        assert_eq!(s.n, 0);
        assert_eq!(s.fit(), None);
    }

    #[test]
    fn merged_samples_fit_as_one_set() {
        let a = samples(&[(8, 1_016_000.0), (256, 1_512_000.0)]);
        let b = samples(&[(32, 1_064_000.0), (64, 1_128_000.0)]);
        let mut m = a;
        m.merge(&b);
        let c = m.fit().unwrap();
        assert!((c.fixed_ns - 1e6).abs() < 1e-3, "{c:?}");
        assert_eq!(CopyCost::per_page(3.0).batch_ns(4), 12.0);
        assert_eq!(c.batch_ns(0), c.fixed_ns);
    }
}
