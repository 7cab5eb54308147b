//! The cost-benefit check's settings on the planner: the copy cost a
//! shell measures, and the per-load / per-store slopes
//! (docs/notebook/tahoe.md, "The check and later tasks' reuse").

use super::Planner;
use crate::benefit::RwSlopes;
use crate::copycost::CopyCost;

impl Planner {
    /// The copy cost the check uses from now on: the run's own measured
    /// time per copied page (Eq. 3.3's `data_size / mem_copy_bw` with the
    /// copy bandwidth this program leaves the helper, which a saturated
    /// slow tier makes lower than any other program's). Ignored when the
    /// check is off or `ns` is not a positive number.
    pub fn set_copy_ns(&mut self, ns: f64) {
        if self.cfg.copy_ns_per_page.is_some() && ns.is_finite() && ns > 0.0 {
            self.cfg.copy_ns_per_page = Some(ns);
        }
    }

    /// The batch copy cost the check uses from now on: `c.fixed_ns` once
    /// per batch plus `c.per_page_ns` per page ([`crate::copycost`], fitted
    /// from the run's timed batches). Ignored when the check is off, a term
    /// is negative or not finite, or a one-page batch would cost nothing.
    pub fn set_copy_cost(&mut self, c: CopyCost) {
        let ok = |x: f64| x.is_finite() && x >= 0.0;
        if self.cfg.copy_ns_per_page.is_some()
            && ok(c.fixed_ns)
            && ok(c.per_page_ns)
            && c.batch_ns(1) > 0.0
        {
            self.cfg.copy_ns_per_page = Some(c.per_page_ns);
            self.cfg.copy_fixed_ns = c.fixed_ns;
        }
    }

    /// The batch copy cost the check uses (None: no check).
    pub fn copy_cost(&self) -> Option<CopyCost> {
        self.cfg.copy_ns_per_page.map(|c| CopyCost {
            fixed_ns: self.cfg.copy_fixed_ns,
            per_page_ns: c,
        })
    }

    /// The copy cost per page the check uses (None: no check).
    pub fn copy_ns(&self) -> Option<f64> {
        self.cfg.copy_ns_per_page
    }

    /// Prices the check's saving and traffic per load and per store
    /// ([`RwSlopes`], fitted on all-slow and all-DRAM times), before
    /// planning starts; None: every access at its type's one slope (the
    /// check as before). Ignored unless both slopes are finite and >= 0.
    pub fn set_rw_slopes(&mut self, rw: Option<RwSlopes>) {
        let ok = |x: f64| x.is_finite() && x >= 0.0;
        self.cfg.rw_slopes = rw.filter(|r| ok(r.read_ns) && ok(r.write_ns));
    }
}
