//! The hybrid performance model (thesis §4.3.4).
//!
//! * Complete placement: predict the all-DRAM time of a task type from its
//!   all-slow-tier profile. With counters, either multiple linear regression
//!   on (IPC, LLC miss rate) (Eq. 4.3) or the small ANN (2 -> 10 -> 5 -> 1,
//!   ReLU; digest §3.6 on the "10 input neurons" text issue). Without a PMU,
//!   a linear fallback in the access count: `T_dram = T_slow - beta * acc`.
//! * Partial placement: the analytical interpolation T_p (Eq. 4.4).

// Dense-layer maths reads clearest with explicit indices.
#![allow(clippy::needless_range_loop)]

use crate::error::TahoeError;
use crate::profile::{Counters, TypeProfile};

/// Eq. 4.4: `T_p = (T_c_NVM - T_c_DRAM) * p_nvm_acc / tot_mem_acc + T_c_DRAM`,
/// the partial-placement time as the all-slow/all-DRAM gap scaled by the
/// share of accesses left in the slow tier. A zero total means the task
/// touches no memory: no gap to close.
pub fn t_partial(t_slow: f64, t_dram: f64, slow_acc: f64, total_acc: f64) -> f64 {
    if total_acc <= 0.0 {
        return t_slow;
    }
    let share = (slow_acc / total_acc).clamp(0.0, 1.0);
    (t_slow - t_dram) * share + t_dram
}

/// The parallel-tiers variant of Eq. 4.4 (a deviation from the thesis,
/// docs/notebook/tahoe.md "The partial-placement form"): when DRAM and the slow tier
/// are separate memory controllers serving a task's accesses at the same
/// time, the task takes as long as the slower of the two shares, not their
/// sum: `T_p = max(p * T_c_NVM, T_c_DRAM)` with `p = p_nvm_acc /
/// tot_mem_acc`. `p * T_c_NVM` is the slow share's traffic at the all-slow
/// rate; `T_c_DRAM` floors it (compute and the DRAM share). Both end points
/// equal Eq. 4.4's; in between it is never longer. A zero total means the
/// task touches no memory: no gap to close.
pub fn t_partial_parallel(t_slow: f64, t_dram: f64, slow_acc: f64, total_acc: f64) -> f64 {
    if total_acc <= 0.0 {
        return t_slow;
    }
    let share = (slow_acc / total_acc).clamp(0.0, 1.0);
    (share * t_slow).max(t_dram.min(t_slow))
}

/// Which partial-placement form the planner predicts with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PartialForm {
    /// Eq. 4.4 as the thesis states it (additive: the slow share's time
    /// gap plus the all-DRAM time). The OMPT tool's default.
    #[default]
    Additive,
    /// [`t_partial_parallel`]: the tiers serve in parallel.
    ParallelTiers,
}

impl PartialForm {
    /// The form's `T_p` (see [`t_partial`] and [`t_partial_parallel`]).
    pub fn t_partial(self, t_slow: f64, t_dram: f64, slow_acc: f64, total_acc: f64) -> f64 {
        match self {
            PartialForm::Additive => t_partial(t_slow, t_dram, slow_acc, total_acc),
            PartialForm::ParallelTiers => t_partial_parallel(t_slow, t_dram, slow_acc, total_acc),
        }
    }

    /// Parses `additive` or `parallel` (command lines, environment).
    pub fn parse(s: &str) -> Option<PartialForm> {
        match s {
            "additive" => Some(PartialForm::Additive),
            "parallel" => Some(PartialForm::ParallelTiers),
            _ => None,
        }
    }

    /// The name [`PartialForm::parse`] reads.
    pub fn name(self) -> &'static str {
        match self {
            PartialForm::Additive => "additive",
            PartialForm::ParallelTiers => "parallel",
        }
    }
}

/// Eq. 4.3: `y = b1*x1 + b2*x2 + eps`, x1 = IPC all-slow, x2 = LLC miss
/// rate, y = IPC all-DRAM.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinearIpc {
    /// Coefficient of IPC.
    pub b1: f64,
    /// Coefficient of the LLC miss rate.
    pub b2: f64,
    /// Intercept.
    pub eps: f64,
}

/// Solves the 3x3 system `a x = b` by Gaussian elimination with partial
/// pivoting; None if singular.
fn solve3(mut a: [[f64; 3]; 3], mut b: [f64; 3]) -> Option<[f64; 3]> {
    for c in 0..3 {
        let p = (c..3).max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs()))?;
        if a[p][c].abs() < 1e-12 {
            return None;
        }
        a.swap(c, p);
        b.swap(c, p);
        for r in c + 1..3 {
            let f = a[r][c] / a[c][c];
            for k in c..3 {
                a[r][k] -= f * a[c][k];
            }
            b[r] -= f * b[c];
        }
    }
    let mut x = [0.0; 3];
    for r in (0..3).rev() {
        let s: f64 = (r + 1..3).map(|k| a[r][k] * x[k]).sum();
        x[r] = (b[r] - s) / a[r][r];
    }
    Some(x)
}

impl LinearIpc {
    /// Least-squares fit on (ipc_slow, miss_rate, ipc_dram) samples
    /// (normal equations).
    pub fn fit(samples: &[(f64, f64, f64)]) -> Result<Self, TahoeError> {
        if samples.len() < 3 {
            return Err(TahoeError::Fit {
                model: "linear (Eq. 4.3)",
                why: format!("needs >= 3 samples, got {}", samples.len()),
            });
        }
        let mut a = [[0.0; 3]; 3];
        let mut b = [0.0; 3];
        for &(x1, x2, y) in samples {
            let x = [x1, x2, 1.0];
            for i in 0..3 {
                for j in 0..3 {
                    a[i][j] += x[i] * x[j];
                }
                b[i] += x[i] * y;
            }
        }
        let [b1, b2, eps] = solve3(a, b).ok_or_else(|| TahoeError::Fit {
            model: "linear (Eq. 4.3)",
            why: "samples are collinear".into(),
        })?;
        Ok(LinearIpc { b1, b2, eps })
    }

    /// Predicted all-DRAM IPC.
    pub fn predict(&self, ipc: f64, miss: f64) -> f64 {
        self.b1 * ipc + self.b2 * miss + self.eps
    }
}

/// PMU-free linear fallback: the all-DRAM time is the all-slow time minus
/// a per-access saving `beta` (ns), the Unimem-style latency benefit
/// (thesis Eq. 3.2, latency form) fitted on recorded runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinearAccess {
    /// Nanoseconds saved per access moved to DRAM.
    pub beta_ns: f64,
}

impl LinearAccess {
    /// Least-squares fit through the origin of `t_slow - t_dram = beta *
    /// acc` on (accesses, t_slow_ns, t_dram_ns) samples.
    pub fn fit(samples: &[(f64, f64, f64)]) -> Result<Self, TahoeError> {
        let sxx: f64 = samples.iter().map(|s| s.0 * s.0).sum();
        if samples.is_empty() || sxx <= 0.0 {
            return Err(TahoeError::Fit {
                model: "linear fallback",
                why: "needs a sample with accesses > 0".into(),
            });
        }
        let sxy: f64 = samples.iter().map(|s| s.0 * (s.1 - s.2)).sum();
        Ok(LinearAccess {
            beta_ns: (sxy / sxx).max(0.0),
        })
    }

    /// Predicted all-DRAM time; never below 0.
    pub fn predict(&self, t_slow_ns: f64, accesses: f64) -> f64 {
        (t_slow_ns - self.beta_ns * accesses).max(0.0)
    }
}

/// Hidden widths of the thesis's ANN (digest §3.6: 2 -> 10 -> 5 -> 1).
pub const ANN_H1: usize = 10;
/// Second hidden layer width.
pub const ANN_H2: usize = 5;
/// Parameters of the ANN: weights and biases of its three layers.
pub const ANN_WEIGHTS: usize = 2 * ANN_H1 + ANN_H1 + ANN_H1 * ANN_H2 + ANN_H2 + ANN_H2 + 1;

/// The small fully connected network predicting all-DRAM IPC from
/// (IPC, LLC miss rate) with ReLU hidden layers and a linear output.
#[derive(Clone, Debug, PartialEq)]
pub struct Ann {
    w1: [[f64; 2]; ANN_H1],
    b1: [f64; ANN_H1],
    w2: [[f64; ANN_H1]; ANN_H2],
    b2: [f64; ANN_H2],
    w3: [f64; ANN_H2],
    b3: f64,
}

/// Deterministic xorshift for weight initialisation and shuffling.
fn rng(s: &mut u64) -> f64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    (*s >> 11) as f64 / (1u64 << 53) as f64
}

struct Fwd {
    h1: [f64; ANN_H1],
    h2: [f64; ANN_H2],
    y: f64,
}

impl Ann {
    /// He-style random initialisation from `seed`.
    pub fn new(seed: u64) -> Self {
        let mut s = seed | 1;
        let mut r = |scale: f64| (rng(&mut s) * 2.0 - 1.0) * scale;
        let mut a = Ann {
            w1: [[0.0; 2]; ANN_H1],
            b1: [0.1; ANN_H1],
            w2: [[0.0; ANN_H1]; ANN_H2],
            b2: [0.1; ANN_H2],
            w3: [0.0; ANN_H2],
            b3: 0.0,
        };
        for w in a.w1.iter_mut().flatten() {
            *w = r(1.0);
        }
        for w in a.w2.iter_mut().flatten() {
            *w = r((2.0 / ANN_H1 as f64).sqrt());
        }
        for w in a.w3.iter_mut() {
            *w = r((2.0 / ANN_H2 as f64).sqrt());
        }
        a
    }

    fn forward(&self, x: [f64; 2]) -> Fwd {
        let mut h1 = [0.0; ANN_H1];
        for (i, h) in h1.iter_mut().enumerate() {
            *h = (self.w1[i][0] * x[0] + self.w1[i][1] * x[1] + self.b1[i]).max(0.0);
        }
        let mut h2 = [0.0; ANN_H2];
        for (i, h) in h2.iter_mut().enumerate() {
            let s: f64 = self.w2[i].iter().zip(&h1).map(|(w, v)| w * v).sum();
            *h = (s + self.b2[i]).max(0.0);
        }
        let y = self.w3.iter().zip(&h2).map(|(w, v)| w * v).sum::<f64>() + self.b3;
        Fwd { h1, h2, y }
    }

    /// Predicted all-DRAM IPC (75 weights: the thesis's inference cost).
    pub fn predict(&self, ipc: f64, miss: f64) -> f64 {
        self.forward([ipc, miss]).y
    }

    /// Every parameter in a fixed order (layer 1 weights row by row, its
    /// biases, layer 2 likewise, the output weights and bias): how a
    /// trained network is written to a model file
    /// ([`crate::counters::format_model`]) for the OMPT tool to load.
    pub fn weights(&self) -> Vec<f64> {
        let mut v = Vec::with_capacity(ANN_WEIGHTS);
        v.extend(self.w1.iter().flatten());
        v.extend(self.b1);
        v.extend(self.w2.iter().flatten());
        v.extend(self.b2);
        v.extend(self.w3);
        v.push(self.b3);
        v
    }

    /// The network whose [`Ann::weights`] are `w`; None unless `w` has
    /// [`ANN_WEIGHTS`] finite numbers.
    pub fn from_weights(w: &[f64]) -> Option<Ann> {
        if w.len() != ANN_WEIGHTS || !w.iter().all(|x| x.is_finite()) {
            return None;
        }
        let mut it = w.iter().copied();
        let mut a = Ann::new(1);
        for x in a.w1.iter_mut().flatten() {
            *x = it.next()?;
        }
        for x in a.b1.iter_mut() {
            *x = it.next()?;
        }
        for x in a.w2.iter_mut().flatten() {
            *x = it.next()?;
        }
        for x in a.b2.iter_mut() {
            *x = it.next()?;
        }
        for x in a.w3.iter_mut() {
            *x = it.next()?;
        }
        a.b3 = it.next()?;
        Some(a)
    }

    /// Trains by plain SGD on squared error over `epochs` shuffled passes
    /// of (ipc_slow, miss_rate, ipc_dram) samples; returns the final mean
    /// squared error on the training set.
    pub fn train(
        &mut self,
        samples: &[(f64, f64, f64)],
        epochs: usize,
        lr: f64,
        seed: u64,
    ) -> Result<f64, TahoeError> {
        if samples.len() < 2 {
            return Err(TahoeError::Fit {
                model: "ANN",
                why: format!("needs >= 2 samples, got {}", samples.len()),
            });
        }
        let mut s = seed | 1;
        let mut idx: Vec<usize> = (0..samples.len()).collect();
        for _ in 0..epochs {
            for i in (1..idx.len()).rev() {
                let j = (rng(&mut s) * (i + 1) as f64) as usize;
                idx.swap(i, j.min(i));
            }
            for &k in &idx {
                let (x1, x2, y) = samples[k];
                self.step([x1, x2], y, lr);
            }
        }
        let mse = samples
            .iter()
            .map(|&(a, b, y)| (self.predict(a, b) - y).powi(2))
            .sum::<f64>()
            / samples.len() as f64;
        if !mse.is_finite() {
            return Err(TahoeError::Fit {
                model: "ANN",
                why: format!("training diverged (learning rate {lr})"),
            });
        }
        Ok(mse)
    }

    fn step(&mut self, x: [f64; 2], y: f64, lr: f64) {
        let f = self.forward(x);
        let d3 = f.y - y;
        let mut d2 = [0.0; ANN_H2];
        for i in 0..ANN_H2 {
            d2[i] = if f.h2[i] > 0.0 { d3 * self.w3[i] } else { 0.0 };
        }
        let mut d1 = [0.0; ANN_H1];
        for (j, d) in d1.iter_mut().enumerate() {
            if f.h1[j] > 0.0 {
                *d = (0..ANN_H2).map(|i| d2[i] * self.w2[i][j]).sum();
            }
        }
        for i in 0..ANN_H2 {
            self.w3[i] -= lr * d3 * f.h2[i];
        }
        self.b3 -= lr * d3;
        for i in 0..ANN_H2 {
            for j in 0..ANN_H1 {
                self.w2[i][j] -= lr * d2[i] * f.h1[j];
            }
            self.b2[i] -= lr * d2[i];
        }
        for j in 0..ANN_H1 {
            self.w1[j][0] -= lr * d1[j] * x[0];
            self.w1[j][1] -= lr * d1[j] * x[1];
            self.b1[j] -= lr * d1[j];
        }
    }
}

/// The hybrid model: the counter model where counters exist, the linear
/// access fallback otherwise.
#[derive(Clone, Debug)]
pub enum CompleteModel {
    /// Eq. 4.3 on counters.
    Linear(LinearIpc),
    /// The ANN on counters (the thesis's choice, < 6% error there).
    Ann(Box<Ann>),
}

impl CompleteModel {
    /// `linear` or `ann`: the name in summaries and model files.
    pub fn name(&self) -> &'static str {
        match self {
            CompleteModel::Linear(_) => "linear",
            CompleteModel::Ann(_) => "ann",
        }
    }

    /// Predicted all-DRAM IPC from the all-slow IPC and LLC miss rate.
    pub fn predict(&self, ipc: f64, miss: f64) -> f64 {
        match self {
            CompleteModel::Linear(l) => l.predict(ipc, miss),
            CompleteModel::Ann(a) => a.predict(ipc, miss),
        }
    }
}

/// Predicts task times under any placement.
#[derive(Clone, Debug)]
pub struct HybridModel {
    /// Counter model, used when the profile carries counters.
    pub counters: Option<CompleteModel>,
    /// PMU-free fallback.
    pub fallback: LinearAccess,
    /// Partial-placement form (Eq. 4.4 unless told otherwise).
    pub form: PartialForm,
}

impl HybridModel {
    /// The PMU-free model: the linear fallback alone with Eq. 4.4's form,
    /// what a host without counters (or a profile without them) runs.
    pub fn fallback_only(beta_ns: f64) -> Self {
        HybridModel {
            counters: None,
            fallback: LinearAccess { beta_ns },
            form: PartialForm::default(),
        }
    }

    /// The same model with another partial-placement form (the
    /// parallel-tiers ablation, docs/notebook/tahoe.md).
    pub fn with_form(self, form: PartialForm) -> Self {
        HybridModel { form, ..self }
    }

    /// All-DRAM time of a task type (T_c_DRAM of Eq. 4.4). With counters,
    /// `T_dram = T_slow * ipc_slow / ipc_dram` (same instruction count);
    /// an IPC prediction that is not positive falls back to the linear model.
    pub fn t_dram(&self, p: &TypeProfile) -> f64 {
        self.counter_t_dram(p)
            .unwrap_or_else(|| self.fallback.predict(p.t_slow_ns, p.total_accesses))
    }

    /// The counter model's all-DRAM time, None where it does not apply
    /// (no counter model, a profile without counters, or a prediction
    /// that is not positive): then [`HybridModel::t_dram`] takes the
    /// linear fallback. Public so that a summary can say which of the two
    /// predicted each type.
    pub fn counter_t_dram(&self, p: &TypeProfile) -> Option<f64> {
        let m = self.counters.as_ref()?;
        let Counters {
            ipc, llc_miss_rate, ..
        } = p.counters?;
        let y = m.predict(ipc, llc_miss_rate);
        (y > 0.0 && ipc > 0.0).then(|| (p.t_slow_ns * ipc / y).min(p.t_slow_ns))
    }

    /// Eq. 4.4 (or the configured [`PartialForm`]) for a placement leaving
    /// `slow_acc` accesses in the slow tier.
    pub fn t_partial(&self, p: &TypeProfile, slow_acc: f64) -> f64 {
        self.form
            .t_partial(p.t_slow_ns, self.t_dram(p), slow_acc, p.total_accesses)
    }
}

/// The all-slow time T_c_NVM that makes `model` predict `measured_ns` for
/// a task of profile `p` (its `total_accesses` and counters) that ran with
/// `slow_acc` of its accesses in the slow tier: the model's partial form
/// inverted, so that a time measured at any placement (a representative
/// that found pages in DRAM, any later instance) gives the type's
/// all-slow time under the same model that predicts with it. Both forms
/// are monotone in T_c_NVM (the complete-placement models make T_c_DRAM
/// grow with it), so the root is found by bisection. None when
/// `measured_ns` is not a positive number or no all-slow time reaches it.
pub fn invert_t_slow(
    model: &HybridModel,
    p: &TypeProfile,
    slow_acc: f64,
    measured_ns: f64,
) -> Option<f64> {
    if !(measured_ns.is_finite() && measured_ns > 0.0) {
        return None;
    }
    let at = |s: f64| {
        let q = TypeProfile {
            t_slow_ns: s,
            total_accesses: p.total_accesses,
            counters: p.counters,
            ranges: Vec::new(),
        };
        model.t_partial(&q, slow_acc)
    };
    // T_p <= T_c_NVM, so the root is at or above the measured time.
    let (mut lo, mut hi) = (measured_ns, measured_ns);
    let mut n = 0;
    while at(hi) < measured_ns {
        lo = hi;
        hi *= 2.0;
        n += 1;
        if n > 64 {
            return None;
        }
    }
    // to the last bit: each step halves the bracket until no double lies
    // strictly inside it
    for _ in 0..2100 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if at(mid) < measured_ns {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inverting_the_partial_form_recovers_the_all_slow_time() {
        let p = TypeProfile {
            t_slow_ns: 1000.0,
            total_accesses: 100.0,
            counters: None,
            ranges: vec![],
        };
        for form in [PartialForm::Additive, PartialForm::ParallelTiers] {
            let h = HybridModel::fallback_only(6.0).with_form(form);
            for slow in [0.0, 30.0, 50.0, 90.0, 100.0] {
                let t = h.t_partial(&p, slow);
                let s = invert_t_slow(&h, &p, slow, t).unwrap();
                assert!((s - 1000.0).abs() < 1e-6, "{form:?} {slow}: {s}");
            }
        }
        // The additive form's inversion is the representative's rule,
        // T_measured + beta * DRAM accesses; the parallel form's is not:
        // 600 ns measured with 50 of 100 accesses slow is T_c_NVM 1200
        // (0.5 * 1200 > 1200 - 600), not 600 + 6 * 50 = 900.
        let par = HybridModel::fallback_only(6.0).with_form(PartialForm::ParallelTiers);
        let add = HybridModel {
            form: PartialForm::Additive,
            ..par.clone()
        };
        assert!((invert_t_slow(&add, &p, 50.0, 600.0).unwrap() - 900.0).abs() < 1e-6);
        assert!((invert_t_slow(&par, &p, 50.0, 600.0).unwrap() - 1200.0).abs() < 1e-6);
        // Bad measurements give nothing.
        assert_eq!(invert_t_slow(&par, &p, 50.0, 0.0), None);
        assert_eq!(invert_t_slow(&par, &p, 50.0, f64::NAN), None);
    }

    #[test]
    fn eq_4_4_interpolates_between_the_two_complete_placements() {
        assert_eq!(t_partial(10.0, 4.0, 0.0, 100.0), 4.0);
        assert_eq!(t_partial(10.0, 4.0, 100.0, 100.0), 10.0);
        assert_eq!(t_partial(10.0, 4.0, 50.0, 100.0), 7.0);
        // Clamped share, zero total.
        assert_eq!(t_partial(10.0, 4.0, 150.0, 100.0), 10.0);
        assert_eq!(t_partial(10.0, 4.0, 5.0, 0.0), 10.0);
        // Table 4.3 FFT ratio 0.48: 48% of the gap remains.
        assert!((t_partial(2.0, 1.0, 5.7e7, 1.2e8) - 1.475).abs() < 1e-9);
    }

    #[test]
    fn parallel_form_takes_the_slower_tier_and_keeps_the_end_points() {
        let f = PartialForm::ParallelTiers;
        // End points equal Eq. 4.4's.
        assert_eq!(f.t_partial(10.0, 4.0, 100.0, 100.0), 10.0);
        assert_eq!(f.t_partial(10.0, 4.0, 0.0, 100.0), 4.0);
        // Half the accesses slow: the slow half's traffic (5) outlasts
        // the all-DRAM time (4); Eq. 4.4 adds them to 7.
        assert_eq!(f.t_partial(10.0, 4.0, 50.0, 100.0), 5.0);
        assert_eq!(t_partial(10.0, 4.0, 50.0, 100.0), 7.0);
        // Below the knee p = T_dram / T_slow the DRAM time bounds it.
        assert_eq!(f.t_partial(10.0, 4.0, 30.0, 100.0), 4.0);
        // Never longer than the additive form, clamped, zero total.
        for k in 0..=20 {
            let a = k as f64 * 5.0;
            assert!(f.t_partial(10.0, 4.0, a, 100.0) <= t_partial(10.0, 4.0, a, 100.0) + 1e-12);
        }
        assert_eq!(f.t_partial(10.0, 4.0, 150.0, 100.0), 10.0);
        assert_eq!(f.t_partial(10.0, 4.0, 5.0, 0.0), 10.0);
        // A DRAM time above the slow one (a bad prediction) cannot raise it.
        assert_eq!(f.t_partial(10.0, 12.0, 0.0, 100.0), 10.0);
        // Heat at 1/4 bandwidth (docs/notebook/tahoe.md): T_slow 8.102, T_dram 1.989,
        // p = 0.5 -> the parallel form 4.051, Eq. 4.4 5.046 (+25%).
        let (a, b) = (
            t_partial(8.102, 1.989, 0.5, 1.0),
            f.t_partial(8.102, 1.989, 0.5, 1.0),
        );
        assert!((b - 4.051).abs() < 1e-9 && (a / b - 1.0 - 0.2456).abs() < 1e-3);
        assert_eq!(PartialForm::parse("parallel"), Some(f));
        assert_eq!(
            PartialForm::parse(PartialForm::Additive.name()),
            Some(PartialForm::Additive)
        );
        assert_eq!(PartialForm::parse("sum"), None);
    }

    #[test]
    fn hybrid_model_predicts_with_its_form() {
        let p = TypeProfile {
            t_slow_ns: 1000.0,
            total_accesses: 100.0,
            counters: None,
            ranges: vec![],
        };
        let mut h = HybridModel::fallback_only(6.0).with_form(PartialForm::Additive);
        assert_eq!(h.t_partial(&p, 50.0), 700.0);
        h.form = PartialForm::ParallelTiers;
        assert_eq!(h.t_partial(&p, 50.0), 500.0);
        assert_eq!(h.t_partial(&p, 30.0), 400.0);
    }

    #[test]
    fn linear_ipc_recovers_exact_coefficients() {
        let truth = LinearIpc {
            b1: 1.5,
            b2: -2.0,
            eps: 0.3,
        };
        let mut s = Vec::new();
        for i in 0..20 {
            let x1 = 0.2 + 0.1 * i as f64;
            let x2 = ((i * 7) % 11) as f64 / 11.0;
            s.push((x1, x2, truth.predict(x1, x2)));
        }
        let f = LinearIpc::fit(&s).unwrap();
        assert!((f.b1 - 1.5).abs() < 1e-9 && (f.b2 + 2.0).abs() < 1e-9);
        assert!((f.eps - 0.3).abs() < 1e-9);
        assert!(LinearIpc::fit(&s[..2]).is_err());
        // Collinear: x2 = x1.
        let col: Vec<_> = (0..5).map(|i| (i as f64, i as f64, 1.0)).collect();
        assert!(matches!(LinearIpc::fit(&col), Err(TahoeError::Fit { .. })));
    }

    #[test]
    fn linear_access_fallback_fits_saving_per_access() {
        let s = [(100.0, 1000.0, 800.0), (200.0, 1500.0, 1100.0)];
        let f = LinearAccess::fit(&s).unwrap();
        assert!((f.beta_ns - 2.0).abs() < 1e-12);
        assert_eq!(f.predict(1000.0, 100.0), 800.0);
        assert_eq!(f.predict(10.0, 100.0), 0.0);
        assert!(LinearAccess::fit(&[(0.0, 1.0, 1.0)]).is_err());
    }

    #[test]
    fn ann_learns_a_nonlinear_map_better_than_linear() {
        // ipc_dram = ipc * (1 + 3 * miss^2): non-linear in miss.
        let f = |ipc: f64, m: f64| ipc * (1.0 + 3.0 * m * m);
        let mut s = Vec::new();
        for i in 0..12 {
            for j in 0..12 {
                let (ipc, m) = (0.3 + 0.1 * i as f64, j as f64 / 11.0);
                s.push((ipc, m, f(ipc, m)));
            }
        }
        let mut ann = Ann::new(7);
        let mse = ann.train(&s, 800, 0.01, 3).unwrap();
        let lin = LinearIpc::fit(&s).unwrap();
        let lin_mse = s
            .iter()
            .map(|&(a, b, y)| (lin.predict(a, b) - y).powi(2))
            .sum::<f64>()
            / s.len() as f64;
        assert!(mse < lin_mse / 3.0, "ann {mse} linear {lin_mse}");
        assert!(ann.train(&s[..1], 1, 0.01, 1).is_err());
        let mut bad = Ann::new(1);
        assert!(bad.train(&s, 50, 1e6, 1).is_err());
    }

    #[test]
    fn ann_weights_round_trip_and_bad_lists_are_refused() {
        let a = Ann::new(11);
        let w = a.weights();
        assert_eq!(w.len(), ANN_WEIGHTS);
        let b = Ann::from_weights(&w).unwrap();
        assert_eq!(a, b);
        assert_eq!(b.predict(0.7, 0.2), a.predict(0.7, 0.2));
        assert!(Ann::from_weights(&w[1..]).is_none());
        let mut nan = w.clone();
        nan[3] = f64::NAN;
        assert!(Ann::from_weights(&nan).is_none());
        assert_eq!(CompleteModel::Ann(Box::new(a)).name(), "ann");
    }

    #[test]
    fn hybrid_uses_counters_when_present_else_fallback() {
        let mut p = TypeProfile {
            t_slow_ns: 1000.0,
            total_accesses: 100.0,
            counters: None,
            ranges: vec![],
        };
        let h = HybridModel {
            counters: Some(CompleteModel::Linear(LinearIpc {
                b1: 2.0,
                b2: 0.0,
                eps: 0.0,
            })),
            fallback: LinearAccess { beta_ns: 3.0 },
            form: PartialForm::Additive,
        };
        assert_eq!(h.t_dram(&p), 700.0);
        assert_eq!(h.t_partial(&p, 50.0), 850.0);
        p.counters = Some(Counters {
            instructions: 1e6,
            ipc: 0.5,
            llc_miss_rate: 0.2,
        });
        // IPC doubles in DRAM: half the time.
        assert_eq!(h.t_dram(&p), 500.0);
        assert_eq!(h.counter_t_dram(&p), Some(500.0));
        // A model predicting a slowdown is capped at the slow time.
        let slow = HybridModel {
            counters: Some(CompleteModel::Linear(LinearIpc {
                b1: 0.5,
                b2: 0.0,
                eps: 0.0,
            })),
            fallback: LinearAccess { beta_ns: 3.0 },
            form: PartialForm::Additive,
        };
        assert_eq!(slow.t_dram(&p), 1000.0);
    }
}
