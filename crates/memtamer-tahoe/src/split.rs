//! Splitting free DRAM among K co-running tasks (thesis §4.3.5, Eq. 4.1 and
//! 4.2): choose m_i with `sum m_i <= size` minimising `Perf = max_i perf_i`,
//! where `perf_i(m)` is task i's predicted time (Eq. 4.4) with m units of
//! its hottest pages in DRAM. Solved by dynamic programming over
//! (tasks, units), O(K * C^2) for C capacity units.

/// Result of a split.
#[derive(Clone, Debug, PartialEq)]
pub struct Split {
    /// Units given to each task.
    pub units: Vec<usize>,
    /// The predicted makespan `max_i perf_i(units_i)` (Eq. 4.2).
    pub makespan: f64,
}

/// DP split. `curves[i][m]` is task i's time with m units in DRAM,
/// m = 0..curves[i].len() (more units than that gain nothing). Ties keep
/// the smaller total, so spare DRAM stays free for look-ahead tasks.
pub fn split_dp(curves: &[Vec<f64>], capacity: usize) -> Split {
    let k = curves.len();
    if k == 0 {
        return Split {
            units: vec![],
            makespan: 0.0,
        };
    }
    // best[i][c]: min makespan of tasks 0..=i using at most c units,
    // choice[i][c]: units given to task i there.
    let mut best = vec![vec![f64::INFINITY; capacity + 1]; k];
    let mut choice = vec![vec![0usize; capacity + 1]; k];
    for c in 0..=capacity {
        for i in 0..k {
            let cur = &curves[i];
            let top = cur.len().saturating_sub(1).min(c);
            let mut b = f64::INFINITY;
            let mut arg = 0;
            for m in 0..=top {
                let here = cur.get(m).copied().unwrap_or(0.0);
                let rest = if i == 0 { 0.0 } else { best[i - 1][c - m] };
                let v = here.max(rest);
                if v < b {
                    b = v;
                    arg = m;
                }
            }
            if cur.is_empty() {
                b = if i == 0 { 0.0 } else { best[i - 1][c] };
            }
            best[i][c] = b;
            choice[i][c] = arg;
        }
    }
    // Smallest c reaching the optimum: no unit given without gain.
    let opt = best[k - 1][capacity];
    let mut c = (0..=capacity)
        .find(|&c| best[k - 1][c] <= opt)
        .unwrap_or(capacity);
    let mut units = vec![0; k];
    for i in (0..k).rev() {
        units[i] = choice[i][c];
        c -= units[i];
    }
    Split {
        units,
        makespan: opt,
    }
}

/// Same-type co-runners: the thesis splits evenly and skips the DP; the
/// remainder goes to the earliest tasks.
pub fn split_even(k: usize, capacity: usize) -> Vec<usize> {
    if k == 0 {
        return vec![];
    }
    (0..k)
        .map(|i| capacity / k + usize::from(i < capacity % k))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Brute force over every allocation, for checking the DP.
    fn brute(curves: &[Vec<f64>], cap: usize) -> f64 {
        fn go(curves: &[Vec<f64>], cap: usize, i: usize, cur: f64) -> f64 {
            if i == curves.len() {
                return cur;
            }
            let top = curves[i].len().saturating_sub(1).min(cap);
            (0..=top)
                .map(|m| go(curves, cap - m, i + 1, cur.max(curves[i][m])))
                .fold(f64::INFINITY, f64::min)
        }
        go(curves, cap, 0, 0.0)
    }

    #[test]
    fn dp_matches_brute_force_on_many_cases() {
        let mut s = 12345u64;
        for _ in 0..200 {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let k = 1 + (s >> 60) as usize % 4;
            let cap = (s >> 50) as usize % 9;
            let mut curves = Vec::new();
            for t in 0..k {
                let len = 1 + ((s >> (8 * t)) as usize % 6);
                let start = 50.0 + ((s >> (3 * t)) % 100) as f64;
                let mut v = start;
                let c: Vec<f64> = (0..len)
                    .map(|m| {
                        if m > 0 {
                            v -= ((s >> (m + t)) % 20) as f64;
                        }
                        v
                    })
                    .collect();
                curves.push(c);
            }
            let d = split_dp(&curves, cap);
            assert!((d.makespan - brute(&curves, cap)).abs() < 1e-9);
            assert!(d.units.iter().sum::<usize>() <= cap);
            let got = d
                .units
                .iter()
                .zip(&curves)
                .map(|(&m, c)| c[m])
                .fold(0.0, f64::max);
            assert!((got - d.makespan).abs() < 1e-9);
        }
    }

    #[test]
    fn dp_gives_memory_to_the_critical_task() {
        // Task 0 is long and memory-bound, task 1 short.
        let curves = vec![vec![100.0, 80.0, 60.0, 40.0], vec![30.0, 29.0, 28.0, 27.0]];
        let d = split_dp(&curves, 3);
        assert_eq!(d.units, vec![3, 0]);
        assert_eq!(d.makespan, 40.0);
        // Spare units with no gain are not handed out.
        let d = split_dp(&[vec![5.0, 5.0, 5.0]], 2);
        assert_eq!(d.units, vec![0]);
        assert_eq!(split_dp(&[], 4).units, Vec::<usize>::new());
    }

    #[test]
    fn even_split_spreads_remainder() {
        assert_eq!(split_even(3, 10), vec![4, 3, 3]);
        assert_eq!(split_even(4, 2), vec![1, 1, 0, 0]);
        assert!(split_even(0, 5).is_empty());
    }
}
