//! The copy-cost prior of the migration cost-benefit check (thesis
//! Eq. 3.3's `data_size / mem_copy_bw`, §3.4.1): what one page move costs
//! before the run has timed enough of its own batches
//! (`memtamer_tahoe::benefit::measured_copy_ns`). Measured at tool start,
//! not assumed: [`CALIB_PAGES`] touched pages of a private mapping are
//! moved [`CALIB_ROUNDS`] times to the slow node and back with the tool's
//! own batched move (`memtamer_tier::backing::move_page_batch`, one
//! `move_pages` call per batch), in batches of two sizes ([`CALIB_PAGES`]
//! and [`CALIB_SMALL`]), and the prior is the least squares fit of a
//! batch's time as a fixed part plus a per-page part over the batches that
//! landed (`memtamer_tahoe::copycost`: a call costs the same whatever its
//! size on top of its pages, thesis §4.3.6, which batches for that reason). On a host where no page lands anywhere (`move_pages` refused,
//! e.g. by a seccomp filter) the prior is the time of a plain copy of the
//! same pages between two buffers, the data transfer every move contains
//! (a lower bound). `MEMTAMER_TAHOE_COPY_NS` replaces the measurement.
//!
//! On a one-NUMA-node host the move to node+1 fails as a whole (the node
//! does not exist) and the move back is a no-op for pages already there,
//! so the prior is what a no-op batch costs: exactly what the tool's
//! promotions cost on such a host (docs/notebook/tahoe.md "The check in the tool").

use memtamer_tahoe::benefit::measured_copy_ns;
use memtamer_tahoe::copycost::{CopyCost, CopySamples};
use memtamer_tier::backing::{move_page_batch, AnonMap};
use memtamer_tier::TierError;
use std::time::Instant;

/// Pages moved per calibration batch (two heat blocks' worth of 4 KiB
/// pages is 256; 64 keeps the start-up cost near a millisecond).
pub const CALIB_PAGES: usize = 64;
/// Pages of the small calibration batches: a second size, so the fit can
/// tell a call's fixed cost from its pages' ([`CopySamples::fit`]).
pub const CALIB_SMALL: usize = 8;
/// Round trips timed.
pub const CALIB_ROUNDS: usize = 4;

/// Where the prior came from (printed in the closing line).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PriorSource {
    /// `MEMTAMER_TAHOE_COPY_NS`.
    Env,
    /// Timed page moves between the DRAM node and node+1.
    Moved,
    /// Timed plain copies (no page could be moved).
    Memcpy,
}

impl PriorSource {
    /// Short name for the closing line.
    pub fn name(self) -> &'static str {
        match self {
            PriorSource::Env => "MEMTAMER_TAHOE_COPY_NS",
            PriorSource::Moved => "moved",
            PriorSource::Memcpy => "memcpy",
        }
    }
}

/// The check's copy cost per page before the run's own batches.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CopyPrior {
    /// ns per page (`c1`).
    pub ns_per_page: f64,
    /// ns per batch whatever its size (`c0`; 0 for a given or memcpy
    /// prior).
    pub fixed_ns: f64,
    /// How it was obtained.
    pub source: PriorSource,
    /// The timed calibration batches (empty unless moved): the run's own
    /// batches are fitted together with them, so a run whose batches all
    /// have one size still gets both terms.
    pub samples: CopySamples,
}

impl CopyPrior {
    /// A per-page prior with no fixed part and no samples.
    pub fn per_page(ns: f64, source: PriorSource) -> Self {
        CopyPrior {
            ns_per_page: ns,
            fixed_ns: 0.0,
            source,
            samples: CopySamples::default(),
        }
    }

    /// The prior as the planner takes it.
    pub fn cost(&self) -> CopyCost {
        CopyCost {
            fixed_ns: self.fixed_ns,
            per_page_ns: self.ns_per_page,
        }
    }
}

/// The calibration could not measure anything.
#[derive(Debug, thiserror::Error)]
pub enum CalibError {
    /// No memory for the calibration pages (the error names the bytes and
    /// the mapping: `mmap DRAM N B for 'copy-cost calibration': ...`).
    #[error(transparent)]
    Map(#[from] TierError),
    /// Every timing came out as zero (no usable clock).
    #[error("the copy-cost calibration measured no time; set MEMTAMER_TAHOE_COPY_NS")]
    NoTime,
}

/// The prior per page from `ns` spent on `pages` pages: the run's own rule
/// (`measured_copy_ns`, at least 32 pages) and a positive number, or None.
pub fn prior_of(ns: u64, pages: u64) -> Option<f64> {
    measured_copy_ns(ns as f64, pages).filter(|c| c.is_finite() && *c > 0.0)
}

/// The prior from timed calibration batches: their fit (fixed part and
/// per page, both >= 0) if it prices a one-page batch above zero, else
/// None (nothing landed, or no time measured).
pub fn prior_fit(samples: &CopySamples) -> Option<CopyCost> {
    samples.fit().filter(|c| c.batch_ns(1) > 0.0)
}

/// Measures the copy-cost prior for moves between `dram_node` and
/// `dram_node + 1` (module doc).
pub fn calibrate(dram_node: u32) -> Result<CopyPrior, CalibError> {
    let page = memtamer_tier::guard::page_size();
    let len = CALIB_PAGES * page;
    let a = AnonMap::new(len, "copy-cost calibration")?;
    // SAFETY: `a` is a writable mapping of `len` bytes; touching every
    // page makes it movable (an untouched page has no frame to move).
    unsafe { std::ptr::write_bytes(a.as_ptr(), 0x5a, len) };
    let addrs: Vec<usize> = (0..CALIB_PAGES).map(|i| a.addr() + i * page).collect();
    let mut samples = CopySamples::default();
    for _ in 0..CALIB_ROUNDS {
        for n in [CALIB_PAGES, CALIB_SMALL] {
            for node in [dram_node.saturating_add(1), dram_node] {
                let t0 = Instant::now();
                let r = move_page_batch(&addrs[..n.min(addrs.len())], node);
                let el = t0.elapsed().as_nanos() as u64;
                if let Ok(r) = r {
                    if r.on_node > 0 {
                        samples.add(r.on_node as u64, el as f64);
                    }
                }
            }
        }
    }
    if let Some(c) = prior_fit(&samples) {
        return Ok(CopyPrior {
            ns_per_page: c.per_page_ns,
            fixed_ns: c.fixed_ns,
            source: PriorSource::Moved,
            samples,
        });
    }
    let b = AnonMap::new(len, "copy-cost calibration copy target")?;
    let t0 = Instant::now();
    for _ in 0..CALIB_ROUNDS {
        // SAFETY: two distinct mappings of `len` bytes each.
        unsafe { std::ptr::copy_nonoverlapping(a.as_ptr(), b.as_ptr(), len) };
        std::hint::black_box(b.as_ptr());
    }
    let el = t0.elapsed().as_nanos() as u64;
    prior_of(el, (CALIB_ROUNDS * CALIB_PAGES) as u64)
        .map(|c| CopyPrior::per_page(c, PriorSource::Memcpy))
        .ok_or(CalibError::NoTime)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prior_needs_enough_pages_and_time() {
        assert_eq!(prior_of(6400, 32), Some(200.0));
        assert_eq!(prior_of(6400, 31), None);
        assert_eq!(prior_of(0, 64), None);
    }

    #[test]
    fn two_batch_sizes_give_both_terms_of_the_prior() {
        // 4 rounds of 64- and 8-page batches, 1 ms per call + 2 us a page
        let mut s = CopySamples::default();
        for _ in 0..CALIB_ROUNDS {
            for n in [CALIB_PAGES, CALIB_SMALL] {
                s.add(n as u64, 1e6 + 2000.0 * n as f64);
            }
        }
        let c = prior_fit(&s).unwrap();
        assert!((c.fixed_ns - 1e6).abs() < 1e-3, "{c:?}");
        assert!((c.per_page_ns - 2000.0).abs() < 1e-6, "{c:?}");
        // nothing landed: no prior
        assert_eq!(prior_fit(&CopySamples::default()), None);
    }

    #[test]
    fn calibration_measures_a_positive_cost_on_this_host() {
        // Whatever the host (one node or two, move_pages allowed or not),
        // the prior is a positive, finite time per page from a real
        // measurement.
        let p = calibrate(0).expect("calibration");
        assert!(
            p.cost().batch_ns(1).is_finite() && p.cost().batch_ns(1) > 0.0,
            "{p:?}"
        );
        assert!(p.ns_per_page >= 0.0 && p.fixed_ns >= 0.0, "{p:?}");
        assert_ne!(p.source, PriorSource::Env);
    }
}
