//! The helper thread's FIFO over one iteration of a cyclic schedule
//! (thesis §3.5: one helper thread per process copies the requested
//! objects one at a time, in request order; §3.4 "Enforcement": a phase
//! waits only for the moves it needs).
//!
//! Eq. 3.3 prices each copy alone: its time `size / copy_bw` minus the
//! execution time of the phases before its need that do not use the object
//! (Eq. 3.4's overlap with the phases before). That is right for a
//! promotion the next phase waits for, but an *eviction* is waited for by
//! no phase that does not use the object: it costs the program time only
//! when a copy that is waited for queues behind it in the FIFO (or, in the
//! runtime, when a phase writes the object while it moves). Here the FIFO
//! is played out: each copy starts when it is requested and the helper is
//! free, takes its Eq. 3.3 time, and each phase starts when the copies it
//! waits for are done. A phase's wait is split by the kind of copy the
//! helper runs meanwhile, so an eviction is charged exactly the time a
//! waiting phase spends behind it.

/// One copy the helper makes every iteration.
#[derive(Clone, Debug, PartialEq)]
pub struct Copy {
    /// Phase at whose start it is requested (queued in the order given).
    pub issue: usize,
    /// Its copy time, s (Eq. 3.3's `size / copy_bw`).
    pub secs: f64,
    /// Phases from `issue` to the phase that waits for it (0: the phase
    /// of its request), `None` if no phase waits for it.
    pub waited_after: Option<usize>,
    /// A move to the slow tier.
    pub eviction: bool,
}

/// Seconds per iteration the phases wait, by the kind of copy the helper
/// was running meanwhile.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Waits {
    /// Behind promotions.
    pub promotions: f64,
    /// Behind evictions.
    pub evictions: f64,
}

/// Iterations played before the one measured (the copies requested in an
/// iteration for the next one, and any backlog, are then in the FIFO).
const WARMUP: usize = 2;

/// Plays `copies` (in request order within a phase) over iterations of
/// phases lasting `times` (s, without waits) and returns the waits of one
/// iteration in steady state.
pub fn waits(times: &[f64], copies: &[Copy]) -> Waits {
    let n = times.len();
    let mut out = Waits::default();
    if n == 0 || copies.is_empty() {
        return out;
    }
    // (start, end, eviction, phase index that waits for it)
    let mut run: Vec<(f64, f64, bool, Option<usize>)> = Vec::new();
    let (mut t, mut free) = (0.0f64, 0.0f64);
    for c in 0..=WARMUP {
        for (k, &time) in times.iter().enumerate() {
            let now = c * n + k;
            for cp in copies.iter().filter(|cp| cp.issue == k) {
                let start = free.max(t);
                free = start + cp.secs;
                run.push((start, free, cp.eviction, cp.waited_after.map(|d| now + d)));
            }
            let ready = run
                .iter()
                .filter(|r| r.3 == Some(now))
                .map(|r| r.1)
                .fold(t, f64::max);
            if c == WARMUP {
                for &(a, b, ev, _) in &run {
                    let o = (b.min(ready) - a.max(t)).max(0.0);
                    if ev {
                        out.evictions += o;
                    } else {
                        out.promotions += o;
                    }
                }
            }
            t = ready + time;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy(issue: usize, secs: f64, waited_after: Option<usize>, eviction: bool) -> Copy {
        Copy {
            issue,
            secs,
            waited_after,
            eviction,
        }
    }

    #[test]
    fn an_eviction_no_copy_queues_behind_costs_nothing() {
        // 2 phases of 1 s; a 3 s eviction at phase 0, waited for by none
        let w = waits(&[1.0, 1.0], &[copy(0, 3.0, None, true)]);
        assert_eq!(w, Waits::default());
    }

    #[test]
    fn a_promotion_behind_an_eviction_waits_for_both() {
        // at phase 1's start: a 1.5 s eviction, then a 1 s promotion phase
        // 1 waits for (no lead): 1.5 s behind the eviction, 1 s copying
        let w = waits(
            &[1.0, 1.0],
            &[copy(1, 1.5, None, true), copy(1, 1.0, Some(0), false)],
        );
        assert_eq!(w.evictions, 1.5);
        assert_eq!(w.promotions, 1.0);
        // requested one phase ahead (1 s of lead): the wait is what is
        // left, 1.5 s, all of it while the promotion copies
        let w = waits(
            &[1.0, 1.0],
            &[copy(0, 1.5, None, true), copy(0, 1.0, Some(1), false)],
        );
        assert_eq!(w.evictions, 0.5);
        assert_eq!(w.promotions, 1.0);
    }

    #[test]
    fn a_promotion_alone_is_eq_3_3() {
        // 2 s copy requested two phases (1.5 s) before its need: 0.5 s
        let w = waits(&[0.5, 1.0, 0.5], &[copy(0, 2.0, Some(2), false)]);
        assert!((w.promotions - 0.5).abs() < 1e-12, "{w:?}");
        assert_eq!(w.evictions, 0.0);
        // a lead longer than the copy hides it
        let w = waits(&[0.5, 3.0, 0.5], &[copy(0, 2.0, Some(2), false)]);
        assert_eq!(w, Waits::default());
    }

    #[test]
    fn an_eviction_finished_before_the_request_delays_nothing() {
        // the eviction (0.5 s) runs in phase 0 (1 s); the promotion is
        // requested at phase 1 and waited for at phase 0 of the next
        // iteration, with phase 1's 1 s of lead for its 1 s copy
        let w = waits(
            &[1.0, 1.0],
            &[copy(0, 0.5, None, true), copy(1, 1.0, Some(1), false)],
        );
        assert_eq!(w, Waits::default());
    }
}
