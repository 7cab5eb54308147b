//! Where along the x axis a curve has a feature: the x of its peak or
//! trough, or the knee where a rising curve saturates. Scenario checks of
//! `kind = "argmax" | "argmin" | "knee"` (docs/scenarios.md) bound these x
//! values, because papers state such claims as positions ("bandwidth peaks
//! at 4 threads", "saturates at 8"), not as values (issue 24 item 5).

use crate::config::CheckKind;

/// Fraction of the largest value that marks a knee when a check gives none:
/// the curve is "saturated" within 10% of its best.
pub const DEFAULT_KNEE_FRACTION: f64 = 0.9;

/// The x a shape check bounds, from `(x, value)` points in any order; `None`
/// when there are no points, two points share an x (the other swept keys
/// were not pinned with `with`), a value is not finite, or `kind` is `Point`.
/// Ties go to the smallest x.
pub fn feature_x(points: &[(f64, f64)], kind: CheckKind, fraction: Option<f64>) -> Option<f64> {
    let mut p: Vec<(f64, f64)> = points.to_vec();
    if p.is_empty() || p.iter().any(|(x, v)| !x.is_finite() || !v.is_finite()) {
        return None;
    }
    p.sort_by(|a, b| a.0.total_cmp(&b.0));
    if p.windows(2).any(|w| (w[1].0 - w[0].0).abs() < 1e-9) {
        return None;
    }
    // first extreme in ascending x: replace only on a strict improvement
    let extreme = |better: fn(f64, f64) -> bool| {
        p.iter()
            .copied()
            .reduce(|best, q| if better(q.1, best.1) { q } else { best })
            .map(|(x, _)| x)
    };
    match kind {
        CheckKind::Point => None,
        CheckKind::Argmax => extreme(|a, b| a > b),
        CheckKind::Argmin => extreme(|a, b| a < b),
        CheckKind::Knee => {
            let f = fraction.unwrap_or(DEFAULT_KNEE_FRACTION);
            let max = p.iter().map(|q| q.1).fold(f64::NEG_INFINITY, f64::max);
            p.iter().find(|q| q.1 >= f * max).map(|q| q.0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argmax_finds_an_interior_peak_in_any_order() {
        let pts = [(8.0, 5.0), (1.0, 2.0), (4.0, 9.0), (2.0, 6.0), (16.0, 3.0)];
        assert_eq!(feature_x(&pts, CheckKind::Argmax, None), Some(4.0));
        assert_eq!(feature_x(&pts, CheckKind::Argmin, None), Some(1.0));
    }

    #[test]
    fn ties_go_to_the_smallest_x() {
        let pts = [(4.0, 7.0), (2.0, 7.0), (1.0, 1.0)];
        assert_eq!(feature_x(&pts, CheckKind::Argmax, None), Some(2.0));
        let pts = [(4.0, 1.0), (2.0, 1.0), (1.0, 7.0)];
        assert_eq!(feature_x(&pts, CheckKind::Argmin, None), Some(2.0));
    }

    #[test]
    fn knee_is_where_a_rising_curve_reaches_the_fraction() {
        // saturating curve: 10, 18, 27, 29, 30 at x = 1, 2, 4, 8, 16
        let pts = [
            (1.0, 10.0),
            (2.0, 18.0),
            (4.0, 27.0),
            (8.0, 29.0),
            (16.0, 30.0),
        ];
        assert_eq!(feature_x(&pts, CheckKind::Knee, None), Some(4.0)); // 27 >= 0.9 * 30
        assert_eq!(feature_x(&pts, CheckKind::Knee, Some(0.95)), Some(8.0));
        assert_eq!(feature_x(&pts, CheckKind::Knee, Some(0.5)), Some(2.0));
        assert_eq!(feature_x(&pts, CheckKind::Knee, Some(1.0)), Some(16.0));
    }

    #[test]
    fn ambiguous_or_empty_input_has_no_feature() {
        assert_eq!(feature_x(&[], CheckKind::Argmax, None), None);
        let dup = [(1.0, 1.0), (1.0, 2.0)];
        assert_eq!(feature_x(&dup, CheckKind::Argmax, None), None);
        let nan = [(1.0, f64::NAN), (2.0, 2.0)];
        assert_eq!(feature_x(&nan, CheckKind::Knee, None), None);
        assert_eq!(feature_x(&[(1.0, 1.0)], CheckKind::Point, None), None);
    }
}
