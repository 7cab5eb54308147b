//! Work pools for independent simulated runs: every run is seeded on its own
//! and deterministic, so the order runs start and finish in changes nothing
//! but the wall time. [`parallel_map`] takes items in order (a sweep);
//! [`parallel_map_ordered`] takes them in a caller-given order, so a suite can
//! start its longest runs first and not end on one long run with the other
//! cores idle (longest-processing-time-first list scheduling, Graham 1969).

use crate::error::SimError;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Runs `f` over `items` on `jobs` worker threads (0 = all cores) and
/// returns the results in item order; the first error in item order wins.
/// With `progress = Some((label, unit))` it counts `label: done/total unit`
/// on stderr, when stderr is a terminal. Simulated runs are independent and deterministic, so the
/// order they finish in does not matter.
pub fn parallel_map<T: Sync, R: Send>(
    items: &[T],
    jobs: usize,
    progress: Option<(&str, &str)>,
    f: impl Fn(usize, &T) -> Result<R, SimError> + Sync,
) -> Result<Vec<R>, SimError> {
    let order: Vec<usize> = (0..items.len()).collect();
    parallel_map_ordered(items, &order, jobs, progress, f)
}

/// [`parallel_map`] starting the items in `order` (a permutation of the item
/// indices; indices out of range or repeated are skipped) instead of item
/// order. Results are still in item order, so the order only moves wall time.
pub fn parallel_map_ordered<T: Sync, R: Send>(
    items: &[T],
    order: &[usize],
    jobs: usize,
    progress: Option<(&str, &str)>,
    f: impl Fn(usize, &T) -> Result<R, SimError> + Sync,
) -> Result<Vec<R>, SimError> {
    let workers = if jobs == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        jobs
    }
    .min(items.len().max(1));
    let mut seen = vec![false; items.len()];
    let mut order: Vec<usize> = order
        .iter()
        .copied()
        .filter(|&i| i < items.len() && !std::mem::replace(&mut seen[i], true))
        .collect();
    // items the order forgot still run, last
    order.extend((0..items.len()).filter(|&i| !seen[i]));
    // progress lines only on a terminal: pipes, logs and CI keep results
    // and errors only (docs/cli.md "Progress")
    let progress = progress.filter(|_| std::io::stderr().is_terminal());
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<R, SimError>>>> =
        Mutex::new((0..items.len()).map(|_| None).collect());
    std::thread::scope(|sc| {
        for _ in 0..workers {
            sc.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::SeqCst);
                let Some(&i) = order.get(k) else { break };
                let res = f(i, &items[i]);
                if let Ok(mut g) = results.lock() {
                    g[i] = Some(res);
                }
                let d = done.fetch_add(1, Ordering::SeqCst) + 1;
                if let Some((label, unit)) = progress {
                    eprint!("\r{label}: {d}/{} {unit}", items.len());
                    if d == items.len() {
                        eprintln!();
                    }
                }
            });
        }
    });
    let mut out = Vec::with_capacity(items.len());
    for r in results.into_inner().unwrap_or_default() {
        match r {
            Some(Ok(v)) => out.push(v),
            Some(Err(e)) => return Err(e),
            None => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordered_map_returns_item_order_whatever_the_start_order() {
        let items: Vec<u64> = (0..20).collect();
        let order: Vec<usize> = (0..20).rev().collect();
        for jobs in [1, 2, 3] {
            let out =
                parallel_map_ordered(&items, &order, jobs, None, |i, &v| Ok((i, v * v))).unwrap();
            let want: Vec<(usize, u64)> = items.iter().map(|&v| (v as usize, v * v)).collect();
            assert_eq!(out, want);
        }
    }

    #[test]
    fn ordered_map_runs_forgotten_and_skips_repeated_items() {
        let items = [10, 20, 30, 40];
        let ran = Mutex::new(Vec::new());
        let out = parallel_map_ordered(&items, &[2, 2, 9, 0], 1, None, |i, &v| {
            ran.lock().unwrap().push(i);
            Ok(v + 1)
        })
        .unwrap();
        assert_eq!(out, vec![11, 21, 31, 41]);
        assert_eq!(ran.into_inner().unwrap(), vec![2, 0, 1, 3]);
    }

    #[test]
    fn first_error_in_item_order_wins() {
        let items = [0, 1, 2, 3];
        let r = parallel_map_ordered(&items, &[3, 2, 1, 0], 2, None, |i, _| {
            if i >= 1 {
                Err(SimError::Override {
                    arg: format!("{i}"),
                    message: String::new(),
                })
            } else {
                Ok(i)
            }
        });
        match r {
            Err(SimError::Override { arg, .. }) => assert_eq!(arg, "1"),
            other => panic!("{other:?}"),
        }
    }
}
