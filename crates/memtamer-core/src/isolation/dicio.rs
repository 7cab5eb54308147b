//! Dicio (APSys'21 §4.3): throttle on PM media write/read bandwidth (slow
//! media counters), DRAM bandwidth (a threshold that falls as PM media load
//! rises) and WPQ delay (fast), or on a media write predicted from
//! request-level bandwidth times the write amplification; relax on a quiet
//! media reading, or early by prediction.

use super::*;

impl Isolation {
    /// Updates WA from a fresh media reading: media write bytes over the
    /// request-level write bytes of the same interval (Dicio §4.3).
    pub(super) fn update_write_amplification(&mut self, reading: &MediaReading, interval_ns: u64) {
        let from = reading.end_ns.saturating_sub(interval_ns);
        let req: f64 = self
            .request_history
            .iter()
            .filter(|(t, _)| *t > from && *t <= reading.end_ns)
            .map(|(_, b)| *b)
            .sum();
        let media = reading.write_gbps * interval_ns as f64;
        // below ~1 MB of requests the ratio is noise; keep the previous one
        if req > 1e6 {
            self.write_amplification = (media / req).clamp(0.5, 8.0);
        }
    }

    /// Dicio's DRAM threshold for the current PM media load (§4.3).
    pub(super) fn dram_threshold(&self) -> f64 {
        let load = self.last_media.map_or(0.0, |m| {
            (m.write_gbps / self.params.media_write_gbps)
                .max(m.read_gbps / self.params.media_read_gbps)
        });
        if load < 0.4 {
            self.params.dram_gbps[0]
        } else if load < 0.8 {
            self.params.dram_gbps[1]
        } else {
            self.params.dram_gbps[2]
        }
    }

    /// One Dicio step (§4.3).
    pub(super) fn dicio_step(&mut self, s: &Signals, pool: &[u32], reasons: &mut Vec<String>) {
        let Signals {
            now,
            fresh,
            req_write_gbps,
            dram_gbps,
            wpq,
        } = *s;
        let p = self.params.clone();
        let mut throttle = Vec::new();
        if let Some(m) = fresh {
            if m.write_gbps >= p.media_write_gbps {
                throttle.push(format!(
                    "media write {:.2} GB/s >= {}",
                    m.write_gbps, p.media_write_gbps
                ));
            }
            if m.read_gbps >= p.media_read_gbps {
                throttle.push(format!(
                    "media read {:.2} GB/s >= {}",
                    m.read_gbps, p.media_read_gbps
                ));
            }
        }
        let t_dram = self.dram_threshold();
        if let Some(bw) = dram_gbps.filter(|&bw| bw >= t_dram) {
            throttle.push(format!("DRAM {bw:.1} GB/s >= {t_dram}"));
        }
        if let Some(w) = wpq.filter(|&w| w >= p.wpq_delay_cycles) {
            throttle.push(format!("WPQ delay {w:.0} cycles >= {}", p.wpq_delay_cycles));
        }
        let estimate = req_write_gbps.map(|r| r * self.write_amplification);
        if self.relaxed_by_prediction {
            if let Some(e) = estimate.filter(|&e| e >= p.predict_factor * p.media_write_gbps) {
                throttle.push(format!(
                    "predicted media write {e:.2} GB/s >= {:.1}",
                    p.predict_factor * p.media_write_gbps
                ));
            }
        }
        if !throttle.is_empty() {
            self.throttle(now, reasons, &throttle.join(", "));
            self.relaxed_by_prediction = false;
        } else if fresh.is_some() {
            // the slow path: nothing is saturated by measurement
            if self.relax(pool, reasons, "media, DRAM and WPQ below thresholds") {
                self.relaxed_by_prediction = false;
            }
        } else if self.state == ControlState::Relaxing
            && estimate.is_some_and(|e| e < p.media_write_gbps)
        {
            let e = estimate.unwrap_or(0.0);
            if self.relax(
                pool,
                reasons,
                &format!("predicted media write {e:.2} GB/s < {}", p.media_write_gbps),
            ) {
                self.relaxed_by_prediction = true;
            }
        }
    }
}
