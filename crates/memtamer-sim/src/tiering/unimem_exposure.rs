//! Measured exposure in the simulated Unimem (`unimem::exposure`, and
//! which per-object exposures the measured placements identify,
//! `unimem::exposure_obj`; docs/notebook/unimem.md section 5, "Measured exposure"
//! and "Per-object exposure: what the run's measurements identify").

use super::*;
use memtamer_core::unimem::exposure_obj::identify;

impl UnimemPolicy {
    /// Measured exposure (`unimem::exposure`), once per profile, when the
    /// guard has judged the first plan at the end of iteration `iter`
    /// (`sigma`: its noise; `reverted`: it found the plan slower): each
    /// phase's exposure from the profiled iteration's times (the
    /// placement replaced) against the plan's quiet iterations, then the
    /// configured search again from where the units are, with the
    /// calibrated models. The reference is the placement the guard keeps
    /// (the plan, or the one it replaced if it reverts); a new plan
    /// predicted faster than the reference by the calibrated models
    /// replaces it and is judged by the guard against the reference's
    /// measured iterations. True if a new plan was adopted (the caller's
    /// revert is then moot: the new plan's one-time moves start from the
    /// units' places now, and the guard reverts it to the reference if it
    /// measures slower).
    pub(super) fn recalibrate(
        &mut self,
        iter: u32,
        sigma: f64,
        reverted: bool,
        v: &dyn SpaceView,
    ) -> bool {
        let Some((prev_dram, prev_moves)) = self.prev.clone() else {
            return false;
        };
        if self.plan_quiet.is_empty() || self.profiled_times.len() != self.phases {
            return false;
        }
        let Some(after) = self.mean_quiet() else {
            return false;
        };
        let remaining = f64::from(self.iterations.saturating_sub(iter + 1));
        let full = self.problem(remaining, Vec::new());
        let Some(e) = calibrate(
            &full,
            &Measured {
                dram: &prev_dram,
                times: &self.profiled_times,
            },
            &Measured {
                dram: &self.dram,
                times: &after,
            },
            sigma,
        ) else {
            self.decided += "; exposure: nothing measured beyond the noise";
            return false;
        };
        self.learned = e.clone();
        self.observed = vec![
            (prev_dram.clone(), self.profiled_times.clone()),
            (self.dram.clone(), after),
        ];
        let objects = self.per_object(sigma);
        let problem = self.problem(remaining, e.clone());
        let now = self.resident(v);
        let (search, dram) = self.search_plan(&problem, &now);
        // the reference: what the guard keeps, with its schedule
        let (ref_dram, ref_moves) = if reverted {
            (prev_dram, prev_moves)
        } else {
            (self.dram.clone(), self.moves.clone().unwrap_or_default())
        };
        let (pn, pr) = (
            predict(&problem, &dram, &now),
            predict(&problem, &ref_dram, &now),
        );
        let exp: Vec<String> = e.iter().map(|x| format!("{x:.2}")).collect();
        self.decided += &format!(
            "; exposure at iteration {iter} [{}]{objects}: re-decided {} {:.3} ms vs {} {:.3} ms",
            exp.join(" "),
            if search == Search::Local {
                "local"
            } else {
                "global"
            },
            pn * 1e3,
            if reverted { "the replaced" } else { "the plan" },
            pr * 1e3,
        );
        if dram == ref_dram || pn >= pr || self.guard.is_rejected(&dram) {
            self.decided += ", kept";
            return false;
        }
        let uses: Vec<Vec<bool>> = (0..self.sizes.len()).map(|o| problem.uses(o)).collect();
        let (moves, _) = schedule_checked(&dram, &uses, &self.sizes, self.capacity);
        let sets = self.set_labels(&dram);
        self.decided += &format!(
            ", adopted: {} moves per iteration, DRAM sets [{}]",
            moves.len(),
            sets.join(" | ")
        );
        if reverted {
            self.guard.reject(&self.dram);
        }
        self.once = transition(&now, &dram, &moves, &self.uses, &self.unit_writes);
        self.prev = Some((ref_dram, ref_moves));
        self.guard.adopted();
        self.plan_quiet.clear();
        self.observe_next = true;
        self.adopted_at = iter + 1;
        self.dram = dram;
        self.moves = Some(moves);
        true
    }

    /// The mean of the plan's quiet iterations' phase times (waits taken
    /// out); `None` before the first or on a short one.
    fn mean_quiet(&self) -> Option<Vec<f64>> {
        let k = self.plan_quiet.len() as f64;
        if k == 0.0 || self.plan_quiet.iter().any(|t| t.len() != self.phases) {
            return None;
        }
        Some(
            (0..self.phases)
                .map(|i| self.plan_quiet.iter().map(|t| t[i]).sum::<f64>() / k)
                .collect(),
        )
    }

    /// The re-decided plan's quiet iterations, judged by the guard at the
    /// end of iteration `iter` (`sigma`: its noise), as one more measured
    /// placement: what the per-object reading identifies with it, added to
    /// the decision text. Reported only; the models keep the per-phase
    /// exposure (docs/notebook/unimem.md, "Per-object exposure").
    pub(super) fn observe_plan(&mut self, iter: u32, sigma: f64) {
        let Some(after) = self.mean_quiet() else {
            return;
        };
        self.observed.push((self.dram.clone(), after));
        let text = self.per_object(sigma);
        self.decided += &format!("; at iteration {iter}{text}");
    }

    /// Which (phase, unit) exposures the placements measured so far
    /// identify (`unimem::exposure_obj::identify`), as decision text:
    /// per phase `phase: unit=exposure` for identified units and
    /// `unit+unit` for units only their sum is known of, with the count
    /// of units that moved but are within the noise (held).
    fn per_object(&self, sigma: f64) -> String {
        let problem = self.problem(0.0, Vec::new());
        let obs: Vec<Measured> = self
            .observed
            .iter()
            .map(|(dram, times)| Measured { dram, times })
            .collect();
        let r = identify(&problem, &obs, sigma, &self.learned);
        let label = |u: &ObjId| self.units.get(*u).map_or(u.to_string(), |x| x.label());
        let (mut known, mut changed) = (0, 0);
        let held: usize = r.iter().map(|p| p.within_noise.len()).sum();
        let parts: Vec<String> = r
            .iter()
            .enumerate()
            .filter(|(_, p)| !p.identified.is_empty() || !p.unidentified.is_empty())
            .map(|(i, p)| {
                known += p.identified.len();
                changed += p.identified.len() + p.unidentified.len();
                let mut s: Vec<String> = p
                    .identified
                    .iter()
                    .map(|(u, e)| format!("{}={e:.2}", label(u)))
                    .collect();
                if !p.unidentified.is_empty() {
                    let tied: Vec<String> = p.unidentified.iter().map(label).collect();
                    s.push(tied.join("+"));
                }
                format!("{i}: {}", s.join(" "))
            })
            .collect();
        format!(
            ", per object from {} placements: {known} of {changed} identified ({held} within the noise) [{}]",
            obs.len(),
            parts.join(" | ")
        )
    }
}
