//! Co-running applications (thesis §6.5.4, "Heavily loaded system"): the
//! pure part. "When multiple applications share a machine, Ribbon predicts
//! the optimal system-wide CLF concurrency according to the method described
//! in Section 6.3.1. Ribbon decides the number of flushing threads for each
//! application based on the CLF throughput ratio of the two applications."
//!
//! * [`split_flushers`]: the system-wide flusher count M_total cut into one
//!   count per application, proportional to each one's CLF throughput over
//!   the last window, with a minimum of one flusher per live application
//!   (when M_total allows it), each application's own maximum, and
//!   largest-remainder rounding.
//! * [`Coordinator`]: the four-point search ([`crate::controller`]) run over
//!   the SUM of the registered applications' flushed-bytes counters, followed
//!   by the split. No threads, no clocks, no shared memory: the runtime
//!   (`cocoord.rs`) feeds it readings from the shared registry.

use std::time::Duration;

use crate::controller::{ControlConfig, Controller, Event};

/// One application's share of the machine's flushers, as the split sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Demand {
    /// CLF throughput over the last window, bytes/s (non-finite or negative
    /// counts as zero).
    pub rate: f64,
    /// The most flushers this application can use: the flusher threads it
    /// started (its P4, `Config::cores`). 0 = it takes none.
    pub max: usize,
}

/// Splits `total` flushers between applications (thesis §6.5.4: "based on
/// the CLF throughput ratio"). The result, one count per entry of `apps`:
///
/// * sums to `min(total, Σ max)` (no application gets more than its `max`,
///   so flushers no one can run are not handed out);
/// * gives every application with `max >= 1` at least one flusher when
///   that sum allows one each; when it does not, the applications with the
///   highest throughput get one each (ties: the earlier entry) and the rest
///   none (their application threads flush themselves, as Ribbon's inline
///   mode);
/// * above that minimum, is proportional to throughput: each count is the
///   floor or the ceiling of the bounded quota `clamp(λ·rate, min, max)`
///   whose sum is the total (water-filling), the ceilings going to the
///   largest fractional parts (largest-remainder rounding; ties: the
///   earlier entry), so the answer is deterministic;
/// * an application with zero throughput gets the minimum, unless every
///   application with throughput is already at its maximum (then the rest
///   go to the ones without, in equal parts: the sum comes first); when
///   every application has zero throughput they count as equal (the thesis
///   gives no ratio then, and an equal split is the only one that favours
///   none).
pub fn split_flushers(total: usize, apps: &[Demand]) -> Vec<usize> {
    let n = apps.len();
    let mut out = vec![0usize; n];
    let cap_sum: usize = apps.iter().map(|a| a.max).sum();
    let total = total.min(cap_sum);
    if total == 0 {
        return out;
    }
    let rate = |a: &Demand| {
        if a.rate.is_finite() && a.rate > 0.0 {
            a.rate
        } else {
            0.0
        }
    };
    let live: Vec<usize> = (0..n).filter(|&i| apps[i].max >= 1).collect();
    if total < live.len() {
        // fewer flushers than applications: one each to the busiest
        let mut order = live;
        order.sort_by(|&a, &b| rate(&apps[b]).total_cmp(&rate(&apps[a])).then(a.cmp(&b)));
        for &i in order.iter().take(total) {
            out[i] = 1;
        }
        return out;
    }
    let all_zero = live.iter().all(|&i| rate(&apps[i]) == 0.0);
    let weight: Vec<f64> = apps
        .iter()
        .map(|a| if all_zero { 1.0 } else { rate(a) })
        .collect();
    let lo: Vec<f64> = apps.iter().map(|a| a.max.min(1) as f64).collect();
    let hi: Vec<f64> = apps.iter().map(|a| a.max as f64).collect();
    let quota = bounded_quotas(total as f64, &weight, &lo, &hi);
    let mut given = 0usize;
    for i in 0..n {
        // the floor, kept inside the bounds against rounding error
        let f = (quota[i] + 1e-9).floor().clamp(lo[i], hi[i]) as usize;
        out[i] = f;
        given += f;
    }
    // largest remainder: the missing flushers go to the largest fractional
    // parts among those below their maximum (ties: the earlier entry)
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| {
        let fa = quota[a] - out[a] as f64;
        let fb = quota[b] - out[b] as f64;
        fb.total_cmp(&fa).then(a.cmp(&b))
    });
    for &i in &order {
        if given == total {
            break;
        }
        if out[i] < apps[i].max {
            out[i] += 1;
            given += 1;
        }
    }
    // (only after rounding error) whatever is still missing, in index order
    while given < total {
        let Some(i) = (0..n).find(|&i| out[i] < apps[i].max) else {
            break;
        };
        out[i] += 1;
        given += 1;
    }
    while given > total {
        // only reachable through rounding error: take back where the count
        // lies furthest above its quota, above its minimum
        let Some(i) = (0..n).filter(|&i| out[i] as f64 > lo[i]).max_by(|&a, &b| {
            let ea = out[a] as f64 - quota[a];
            let eb = out[b] as f64 - quota[b];
            ea.total_cmp(&eb).then(a.cmp(&b))
        }) else {
            break;
        };
        out[i] -= 1;
        given -= 1;
    }
    out
}

/// The quotas of [`split_flushers`]: proportional to `w` within the bounds
/// while that can reach `total`; once every application with throughput
/// is at its maximum, the rest go to those without, in equal parts.
fn bounded_quotas(total: f64, w: &[f64], lo: &[f64], hi: &[f64]) -> Vec<f64> {
    let n = w.len();
    let saturated: f64 = (0..n).map(|i| if w[i] > 0.0 { hi[i] } else { lo[i] }).sum();
    if total <= saturated {
        return water_fill(total, w, lo, hi);
    }
    let w2: Vec<f64> = w.iter().map(|&x| if x > 0.0 { 0.0 } else { 1.0 }).collect();
    let lo2: Vec<f64> = (0..n)
        .map(|i| if w[i] > 0.0 { hi[i] } else { lo[i] })
        .collect();
    water_fill(total, &w2, &lo2, hi)
}

/// The bounded proportional quotas: `clamp(λ·w_i, lo_i, hi_i)` with the λ
/// that makes them sum to `total` (which lies in `[Σ lo, Σ hi]`). The sum is
/// piecewise linear and non-decreasing in λ, with breakpoints at `lo_i/w_i`
/// and `hi_i/w_i`; λ is found exactly on the segment that brackets `total`.
fn water_fill(total: f64, w: &[f64], lo: &[f64], hi: &[f64]) -> Vec<f64> {
    let at = |l: f64| -> Vec<f64> {
        (0..w.len())
            .map(|i| (l * w[i]).clamp(lo[i], hi[i]))
            .collect()
    };
    let sum = |l: f64| at(l).iter().sum::<f64>();
    let mut breaks: Vec<f64> = (0..w.len())
        .filter(|&i| w[i] > 0.0)
        .flat_map(|i| [lo[i] / w[i], hi[i] / w[i]])
        .collect();
    breaks.push(0.0);
    breaks.sort_by(f64::total_cmp);
    breaks.dedup();
    let mut below = 0.0;
    for &b in &breaks {
        if sum(b) >= total {
            // the sum is linear between `below` and `b`
            let (s0, s1) = (sum(below), sum(b));
            let l = if s1 > s0 {
                below + (b - below) * (total - s0) / (s1 - s0)
            } else {
                b
            };
            return at(l);
        }
        below = b;
    }
    at(below)
}

/// One registered application as the coordinator reads it from the
/// shared registry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Registrant {
    /// Identity of the registration (unique system-wide for the segment's
    /// life: a slot reused by another process gets a new one).
    pub id: u64,
    /// Its cumulative flushed-bytes counter (flushes plus proactive).
    pub bytes: u64,
    /// Application threads with a queue now (N_i).
    pub app_threads: usize,
    /// Flusher threads it started (its most useful M_i).
    pub max_flushers: usize,
}

/// The coordinator's answer for one step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The system-wide flusher count the four-point search chose (or is
    /// probing), before the split.
    pub total: usize,
    /// M_i per registrant, in the order given.
    pub flushers: Vec<usize>,
    /// Whether proactive flushing may run (the controller's switch).
    pub proactive: bool,
    /// What the controller did this step.
    pub event: Event,
}

#[derive(Clone, Copy, Debug)]
struct Seen {
    id: u64,
    last: u64,
    window_start: u64,
    rate: f64,
}

/// The system-wide controller: one four-point search over the sum of the
/// registrants' counters (thesis §6.5.4 with §6.3.1), then
/// [`split_flushers`] by each one's throughput over the last window.
///
/// The summed counter stays continuous when registrants come and go: a new
/// one contributes only what it flushes after it was first seen, a gone one
/// stops contributing. A change of membership starts a new search (the
/// load changed; the thesis re-searches on a phase change).
pub struct Coordinator {
    cfg: ControlConfig,
    ctl: Controller,
    seen: Vec<Seen>,
    total: u64,
    window_start: Duration,
    proactive_allowed: bool,
    /// Searches of the controllers replaced by a membership change.
    past_searches: u64,
    /// Whether `step` ran (the first step rebases the controller without
    /// counting its search twice).
    stepped: bool,
}

impl Coordinator {
    /// A coordinator that starts a search at `now` (`cfg.cores` is the
    /// machine's hardware threads: P4 is system-wide).
    pub fn new(cfg: ControlConfig, now: Duration, proactive_allowed: bool) -> Coordinator {
        Coordinator {
            ctl: Controller::new(cfg.clone(), now, 0, proactive_allowed),
            cfg,
            seen: Vec::new(),
            total: 0,
            window_start: now,
            proactive_allowed,
            past_searches: 0,
            stepped: false,
        }
    }

    /// Searches started (a membership change starts one).
    pub fn searches(&self) -> u64 {
        self.past_searches + self.ctl.searches()
    }

    /// The summed counter so far.
    pub fn summed_bytes(&self) -> u64 {
        self.total
    }

    /// Advances to `now` with the registrants' readings. `machine_bytes`
    /// is a machine-wide write counter when one exists (the iMC's, which
    /// already sees every process's write-backs); otherwise the summed
    /// counters are the signal. `available`: hardware threads not kept busy
    /// by processes other than the registrants ([`crate::idle`]).
    pub fn step(
        &mut self,
        now: Duration,
        regs: &[Registrant],
        machine_bytes: Option<u64>,
        available: f64,
    ) -> Plan {
        let changed =
            regs.len() != self.seen.len() || regs.iter().zip(&self.seen).any(|(r, s)| r.id != s.id);
        let mut seen = Vec::with_capacity(regs.len());
        for r in regs {
            match self.seen.iter().find(|s| s.id == r.id) {
                Some(s) => {
                    // a counter that went backwards (a corrupted word) adds nothing
                    self.total = self.total.wrapping_add(r.bytes.saturating_sub(s.last));
                    seen.push(Seen {
                        last: r.bytes.max(s.last),
                        ..*s
                    });
                }
                None => seen.push(Seen {
                    id: r.id,
                    last: r.bytes,
                    window_start: r.bytes,
                    rate: 0.0,
                }),
            }
        }
        self.seen = seen;
        let signal = machine_bytes.unwrap_or(self.total);
        if changed && !regs.is_empty() {
            if self.stepped {
                self.past_searches += self.ctl.searches();
            }
            self.ctl = Controller::new(self.cfg.clone(), now, signal, self.proactive_allowed);
        }
        self.stepped = true;
        // per-registrant throughput over the last window (one probe long)
        let elapsed = now.saturating_sub(self.window_start);
        if elapsed >= self.cfg.probe && !elapsed.is_zero() {
            for s in &mut self.seen {
                s.rate = s.last.saturating_sub(s.window_start) as f64 / elapsed.as_secs_f64();
                s.window_start = s.last;
            }
            self.window_start = now;
        }
        let apps: usize = regs.iter().map(|r| r.app_threads).sum();
        let d = self.ctl.observe(now, signal, apps, available);
        let demands: Vec<Demand> = regs
            .iter()
            .zip(&self.seen)
            .map(|(r, s)| Demand {
                rate: s.rate,
                max: r.max_flushers,
            })
            .collect();
        Plan {
            total: d.flushers,
            flushers: split_flushers(d.flushers, &demands),
            proactive: d.proactive,
            event: d.event,
        }
    }
}

#[cfg(test)]
#[path = "corun_tests.rs"]
mod tests;
