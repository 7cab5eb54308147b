//! Sibling scheduling, Tahoe's third optimisation (thesis §4.3.6,
//! "Optimization of task scheduling"; digest `thesis-unimem-tahoe.md`
//! §3.8): "tasks with the same parent usually perform the same computation
//! and work on overlapped memory pages. [...] we slightly change scheduling
//! orders of tasks in *readyQueue*, such that those tasks with the same
//! parent are scheduled one after another", so DRAM pages are reused
//! before the FIFO eviction (§4.3.5) turns them out. Figure 4.6 credits it
//! for FFT, Strassen and BT, the benchmarks with recursive task
//! parallelism.
//!
//! The thesis gives no finer rule. [`sibling_order`] is the smallest
//! reordering that meets it: the queue's tasks grouped by parent, the
//! groups in the order of their first task in the queue, each group in
//! queue (FIFO) order. Only tasks already in the ready queue are moved,
//! and every one of them has all its dependences resolved (thesis §4.2:
//! *Ready*), so no order of them breaks a dependence; tasks with one
//! parent keep their relative order, and a queue whose tasks all share a
//! parent (a flat program: every task created by the implicit task) is
//! left as it is.

use std::collections::HashMap;
use std::hash::Hash;

/// The order in which to serve a ready queue under sibling scheduling:
/// `parents[i]` is the parent (creating task) of the queue's `i`-th task,
/// FIFO order; the result is a permutation of `0..parents.len()` (queue
/// positions), siblings consecutive, groups ordered by their first
/// position, positions within a group ascending (see the module doc).
pub fn sibling_order<P: Eq + Hash + Copy>(parents: &[P]) -> Vec<usize> {
    let mut group: HashMap<P, usize> = HashMap::new();
    let mut members: Vec<Vec<usize>> = Vec::new();
    for (i, p) in parents.iter().enumerate() {
        let g = *group.entry(*p).or_insert_with(|| {
            members.push(Vec::new());
            members.len() - 1
        });
        members[g].push(i);
    }
    members.into_iter().flatten().collect()
}

/// Applies [`sibling_order`] to `queue` (task ids in FIFO order) with
/// `parent` giving each task's parent; returns the reordered queue.
pub fn reorder<T: Copy, P: Eq + Hash + Copy>(queue: &[T], parent: impl Fn(T) -> P) -> Vec<T> {
    let parents: Vec<P> = queue.iter().map(|&t| parent(t)).collect();
    sibling_order(&parents)
        .into_iter()
        .map(|i| queue[i])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    /// Whether `v` lists the tasks of each parent consecutively.
    fn consecutive(v: &[usize], parent: &[u32]) -> bool {
        let mut seen: Vec<u32> = Vec::new();
        for (i, &t) in v.iter().enumerate() {
            let p = parent[t];
            if i > 0 && parent[v[i - 1]] == p {
                continue;
            }
            if seen.contains(&p) {
                return false;
            }
            seen.push(p);
        }
        true
    }

    #[test]
    fn siblings_become_consecutive_groups_in_first_seen_order() {
        // parents of the queue's tasks: a b a c b a
        let order = sibling_order(&['a', 'b', 'a', 'c', 'b', 'a']);
        assert_eq!(order, vec![0, 2, 5, 1, 4, 3]);
        let q = [10, 11, 12, 13, 14, 15];
        let par = |t: usize| ['a', 'b', 'a', 'c', 'b', 'a'][t - 10];
        assert_eq!(reorder(&q, par), vec![10, 12, 15, 11, 14, 13]);
    }

    #[test]
    fn one_parent_or_already_grouped_queues_are_unchanged() {
        assert_eq!(sibling_order(&[7u32; 5]), vec![0, 1, 2, 3, 4]);
        assert_eq!(sibling_order(&[1, 1, 2, 2, 3]), vec![0, 1, 2, 3, 4]);
        assert!(sibling_order::<u32>(&[]).is_empty());
    }

    #[test]
    fn result_is_a_permutation_and_stable_within_a_parent() {
        // a pseudo-random parent sequence (LCG): every position exactly
        // once, and the positions of one parent ascending
        let mut x = 12345u64;
        let parents: Vec<u64> = (0..200)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (x >> 60) % 5
            })
            .collect();
        let order = sibling_order(&parents);
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..200).collect::<Vec<_>>());
        for p in 0..5 {
            let pos: Vec<usize> = order.iter().copied().filter(|&i| parents[i] == p).collect();
            assert!(pos.windows(2).all(|w| w[0] < w[1]));
        }
    }

    /// A toy runtime: tasks become ready when their predecessors are
    /// done, enter the queue's tail, the queue is reordered on every
    /// entry, and the head runs to completion. Returns the run order.
    fn run(preds: &[Vec<usize>], parent: &[u32], sib: bool) -> Vec<usize> {
        let n = preds.len();
        let mut left: Vec<usize> = preds.iter().map(Vec::len).collect();
        let mut q: VecDeque<usize> = (0..n).filter(|&t| left[t] == 0).collect();
        let mut out = Vec::new();
        if sib {
            let v: Vec<usize> = q.iter().copied().collect();
            q = reorder(&v, |x| parent[x]).into();
        }
        while let Some(t) = q.pop_front() {
            out.push(t);
            for s in 0..n {
                if preds[s].contains(&t) {
                    left[s] -= 1;
                    if left[s] == 0 {
                        q.push_back(s);
                    }
                }
            }
            if sib {
                let v: Vec<usize> = q.iter().copied().collect();
                q = reorder(&v, |x| parent[x]).into();
            }
        }
        out
    }

    #[test]
    fn reordering_the_ready_queue_never_breaks_a_dependence() {
        // two recursion nodes (parents 1 and 2), each with two ready
        // tasks and a third after its first; a join (parent 0) after all
        let preds: Vec<Vec<usize>> = vec![
            vec![],           // 0: node 1
            vec![],           // 1: node 1
            vec![],           // 2: node 2
            vec![],           // 3: node 2
            vec![0],          // 4: node 1, ready once 0 is done
            vec![2],          // 5: node 2, ready once 2 is done
            vec![1, 3, 4, 5], // 6: the join
        ];
        let parent = [1, 1, 2, 2, 1, 2, 0];
        let fifo = run(&preds, &parent, false);
        let sib = run(&preds, &parent, true);
        assert_eq!(fifo, vec![0, 1, 2, 3, 4, 5, 6]);
        // 4 joins its siblings, ahead of node 2's tasks queued before it
        assert_eq!(sib, vec![0, 1, 4, 2, 3, 5, 6]);
        assert!(consecutive(&sib, &parent));
        assert!(!consecutive(&fifo, &parent));
        for order in [&fifo, &sib] {
            assert_eq!(order.len(), preds.len());
            let at = |t: usize| order.iter().position(|&x| x == t).unwrap();
            for (t, p) in preds.iter().enumerate() {
                assert!(p.iter().all(|&q| at(q) < at(t)), "{order:?}");
            }
        }
    }
}
