//! PMcounterOnly (Dicio §5): the same controller on PM media write
//! bandwidth, evaluated only when a new (slow, delayed) media reading
//! arrives.

use super::*;

impl Isolation {
    /// One PMcounterOnly step.
    pub(super) fn pm_counter_only_step(
        &mut self,
        s: &Signals,
        pool: &[u32],
        reasons: &mut Vec<String>,
    ) {
        let Signals { now, fresh, .. } = *s;
        let p = self.params.clone();
        if let Some(m) = fresh {
            if m.write_gbps >= p.media_write_gbps {
                self.throttle(
                    now,
                    reasons,
                    &format!(
                        "media write {:.2} GB/s >= {}",
                        m.write_gbps, p.media_write_gbps
                    ),
                );
            } else {
                self.relax(pool, reasons, "media write below threshold");
            }
        }
    }
}
