//! How noisy a host's phase times are, read the way a control chart reads
//! its subgroups (Shewhart 1931; Montgomery, *Introduction to Statistical
//! Quality Control*, range estimator with Appendix Table VI's d2): the
//! estimate `memtamer-tier`'s drift monitor (`memtamer_tier::drift`) and
//! the regression guard ([`super::regress`]) share, so "slower than the
//! noise" means the same thing to both.
//!
//! Pure: samples in, numbers out.

/// Per phase of `samples` (quiet iterations, each one time per phase, all
/// the same length): its centre (median) and its range relative to the
/// centre; `None` for a phase whose centre is under `min_s` (all jitter
/// on the clock that measured it) or not finite.
pub fn phase_stats(samples: &[Vec<f64>], min_s: f64) -> Vec<Option<(f64, f64)>> {
    let n = samples.first().map_or(0, Vec::len);
    (0..n)
        .map(|k| {
            let mut v: Vec<f64> = samples
                .iter()
                .map(|s| s.get(k).copied().unwrap_or(f64::NAN))
                .collect();
            v.sort_by(f64::total_cmp);
            let centre = median(&v);
            let range = v.last().copied().unwrap_or(0.0) - v.first().copied().unwrap_or(0.0);
            (centre >= min_s && centre.is_finite() && range.is_finite())
                .then_some((centre, range / centre))
        })
        .collect()
}

/// The pooled relative sigma of `n`-sample subgroups whose relative
/// ranges are `stats` (from [`phase_stats`]): the median relative range
/// over the phases / d2(n). Host noise hits all phases alike, so it is
/// pooled over them as a chart pools its subgroups' ranges; the median
/// rather than the mean, so that a few phases a preempted rank stalled do
/// not widen every band. 0 when no phase counts.
pub fn relative_sigma(stats: &[Option<(f64, f64)>], n: usize) -> f64 {
    let mut rel: Vec<f64> = stats.iter().flatten().map(|&(_, r)| r).collect();
    rel.sort_by(f64::total_cmp);
    median(&rel) / d2(n)
}

/// The control chart's d2(n): the expected range of `n` independent
/// normal samples in units of their standard deviation (Montgomery,
/// Appendix Table VI), so that range / d2 estimates sigma. Past 10 the
/// table's last entry (a wider band: fewer false alarms); under 2 there
/// is no range (the first entry; a range of one sample is 0 anyway).
pub fn d2(n: usize) -> f64 {
    const D2: [f64; 9] = [
        1.128, 1.693, 2.059, 2.326, 2.534, 2.704, 2.847, 2.970, 3.078,
    ];
    D2[n.clamp(2, 10) - 2]
}

/// Median of a sorted slice (0 for an empty one).
pub fn median(v: &[f64]) -> f64 {
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => 0.5 * (v[n / 2 - 1] + v[n / 2]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn d2_follows_the_table_and_clamps() {
        assert_eq!(d2(0), 1.128);
        assert_eq!(d2(2), 1.128);
        assert_eq!(d2(3), 1.693);
        assert_eq!(d2(10), 3.078);
        assert_eq!(d2(50), 3.078);
    }

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(&[]), 0.0);
        assert_eq!(median(&[1.0, 2.0, 9.0]), 2.0);
        assert_eq!(median(&[1.0, 2.0, 4.0, 9.0]), 3.0);
    }

    #[test]
    fn short_phases_do_not_count_and_sigma_pools_by_the_median() {
        let s = vec![
            vec![0.010, 0.0001, 0.020],
            vec![0.011, 0.0002, 0.020],
            vec![0.012, 0.0001, 0.022],
        ];
        let st = phase_stats(&s, 1e-3);
        assert_eq!(st[1], None);
        let (c0, r0) = st[0].unwrap();
        assert!((c0 - 0.011).abs() < 1e-12 && (r0 - 0.002 / 0.011).abs() < 1e-12);
        let (c2, r2) = st[2].unwrap();
        assert!((c2 - 0.020).abs() < 1e-12 && (r2 - 0.1).abs() < 1e-12);
        // median of the two relative ranges, over d2(3)
        let want = 0.5 * (0.002 / 0.011 + 0.1) / 1.693;
        assert!((relative_sigma(&st, 3) - want).abs() < 1e-12);
        // nothing counts: 0
        assert_eq!(relative_sigma(&phase_stats(&s, 1.0), 3), 0.0);
        // one sample: every range 0
        assert_eq!(relative_sigma(&phase_stats(&s[..1], 1e-3), 1), 0.0);
    }
}
