//! 0/1 knapsack by dynamic programming (thesis §3.4 Step 3: value = the
//! Eq. 3.4 weight, weight = object size, capacity = DRAM).
//!
//! Sizes are counted in `granule`s, rounded *up*, and the capacity
//! rounded *down*, so a chosen set always fits the real capacity; the DP
//! is O(n · capacity/granule) (pseudo-polynomial, as in the thesis).

/// One candidate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Item {
    /// Gain if chosen (items with value ≤ 0 are never chosen).
    pub value: f64,
    /// Bytes.
    pub size: u64,
}

/// A granule that keeps the DP table at most `cells` wide.
pub fn granule_for(capacity: u64, cells: u64) -> u64 {
    capacity.div_ceil(cells.max(1)).max(1)
}

/// Indices of the chosen items (ascending), maximising total value with
/// total size ≤ `capacity`.
pub fn solve(items: &[Item], capacity: u64, granule: u64) -> Vec<usize> {
    let g = granule.max(1);
    let cap = (capacity / g) as usize;
    let cand: Vec<(usize, usize, f64)> = items
        .iter()
        .enumerate()
        .filter(|(_, it)| it.value > 0.0 && it.size.div_ceil(g) as usize <= cap)
        .map(|(i, it)| (i, it.size.div_ceil(g) as usize, it.value))
        .collect();
    let mut best = vec![0.0f64; cap + 1];
    let mut take = vec![vec![false; cap + 1]; cand.len()];
    for (k, &(_, w, v)) in cand.iter().enumerate() {
        for c in (w..=cap).rev() {
            let with = best[c - w] + v;
            if with > best[c] {
                best[c] = with;
                take[k][c] = true;
            }
        }
    }
    let mut c = cap;
    let mut out = Vec::new();
    for k in (0..cand.len()).rev() {
        if take[k][c] {
            out.push(cand[k].0);
            c -= cand[k].1;
        }
    }
    out.sort_unstable();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brute(items: &[Item], cap: u64) -> f64 {
        (0u32..1 << items.len())
            .filter_map(|m| {
                let (s, v) = items
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| m >> i & 1 == 1)
                    .fold((0, 0.0), |(s, v), (_, it)| (s + it.size, v + it.value));
                (s <= cap).then_some(v)
            })
            .fold(0.0, f64::max)
    }

    #[test]
    fn matches_brute_force_on_random_instances() {
        let mut x = 0x1234_5678u64;
        let mut r = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        for _ in 0..400 {
            let n = 1 + r(10) as usize;
            let items: Vec<Item> = (0..n)
                .map(|_| Item {
                    value: r(100) as f64 - 20.0,
                    size: 1 + r(30),
                })
                .collect();
            let cap = r(80);
            let chosen = solve(&items, cap, 1);
            let size: u64 = chosen.iter().map(|&i| items[i].size).sum();
            let value: f64 = chosen.iter().map(|&i| items[i].value).sum();
            assert!(size <= cap);
            assert!(
                (value - brute(&items, cap)).abs() < 1e-9,
                "{items:?} cap {cap}"
            );
            assert!(chosen.iter().all(|&i| items[i].value > 0.0));
        }
    }

    #[test]
    fn coarse_granule_never_overfills() {
        let items = [
            Item {
                value: 5.0,
                size: 3000,
            },
            Item {
                value: 4.0,
                size: 2100,
            },
            Item {
                value: 3.0,
                size: 1000,
            },
        ];
        for g in [1, 100, 512, 1000, 4096] {
            let c = solve(&items, 5000, g);
            assert!(
                c.iter().map(|&i| items[i].size).sum::<u64>() <= 5000,
                "g {g}: {c:?}"
            );
        }
        assert_eq!(solve(&items, 5000, 1), vec![0, 2]); // {0,1} is 5100 B
        assert!(solve(&items, 0, 1).is_empty());
        assert!(solve(&[], 100, 1).is_empty());
        assert_eq!(granule_for(1 << 30, 4096), 1 << 18);
        assert_eq!(granule_for(10, 4096), 1);
    }
}
