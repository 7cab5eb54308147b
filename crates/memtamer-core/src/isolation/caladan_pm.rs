//! CaladanPM (Dicio §5): Caladan's controller on request-level PM write
//! bandwidth (and, if set, DRAM bandwidth), evaluated every window: throttle
//! while above the threshold, relax otherwise.

use super::*;

impl Isolation {
    /// One CaladanPM step.
    pub(super) fn caladan_pm_step(&mut self, s: &Signals, pool: &[u32], reasons: &mut Vec<String>) {
        let Signals {
            now,
            req_write_gbps,
            dram_gbps,
            ..
        } = *s;
        let p = self.params.clone();
        let mut over = Vec::new();
        if let Some(r) = req_write_gbps.filter(|&r| r > p.request_write_gbps) {
            over.push(format!(
                "request PM write {r:.2} GB/s > {}",
                p.request_write_gbps
            ));
        }
        if let (Some(t), Some(bw)) = (p.caladan_dram_gbps, dram_gbps) {
            if bw > t {
                over.push(format!("DRAM {bw:.1} GB/s > {t}"));
            }
        }
        if !over.is_empty() {
            self.throttle(now, reasons, &over.join(", "));
        } else if req_write_gbps.is_some() {
            self.relax(pool, reasons, "request bandwidth below threshold");
        }
    }
}
