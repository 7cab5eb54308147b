//! Frees inside a task program ([`Free`], [`TaskGraph::frees`]): the
//! arrays' lifetimes, which the runtime ends by freeing their pages in the
//! tier space ([`super::TierSpace::free_object`]).

use super::TaskGraph;

/// A `free` of arrays inside the program: KASTORS's Strassen frees each
/// recursion node's temporaries after the node's `taskwait`
/// (`strassen-task-dep.c` @ b6a842d, `OptimizedStrassenMultiply_par`:
/// `#pragma omp taskwait` then `free(StartHeap)`), i.e. once every task the
/// node created, its sub-nodes' tasks included, has completed. The runtime
/// then frees the arrays' pages in the tier space ([`super::TierSpace::free_object`]:
/// DRAM given back, no write-back) and tells the policy
/// ([`super::TaskPolicy::freed`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Free {
    /// Arrays freed (indices into [`TaskGraph::arrays`]).
    pub arrays: Vec<usize>,
    /// Tasks that complete before the free (the `taskwait`'s set); it must
    /// hold every task naming a block of the arrays ([`TaskGraph::validate`]).
    pub after: Vec<usize>,
}

impl TaskGraph {
    /// Per task, the indices of the [`TaskGraph::frees`] whose `after`
    /// set holds it (what the runtime counts down at each completion).
    pub fn frees_of(&self) -> Vec<Vec<usize>> {
        let mut v = vec![Vec::new(); self.tasks.len()];
        for (f, free) in self.frees.iter().enumerate() {
            for &t in &free.after {
                if let Some(l) = v.get_mut(t) {
                    if l.last() != Some(&f) {
                        l.push(f);
                    }
                }
            }
        }
        v
    }

    /// The [`TaskGraph::frees`] part of [`TaskGraph::validate`] (block
    /// indices already checked): indices in range, and no task naming a
    /// freed array outside the free's `after` set (a use after the free).
    pub(super) fn validate_frees(&self) -> Result<(), String> {
        for (i, f) in self.frees.iter().enumerate() {
            if f.after.is_empty()
                || f.arrays.iter().any(|&a| a >= self.arrays.len())
                || f.after.iter().any(|&t| t >= self.tasks.len())
            {
                return Err(format!("{}: free {i}: bad array or task", self.name));
            }
            // a task naming a freed array must complete before the free
            let mut before = vec![false; self.tasks.len()];
            for &t in &f.after {
                before[t] = true;
            }
            for (t, task) in self.tasks.iter().enumerate() {
                let uses = task
                    .args
                    .iter()
                    .any(|a| f.arrays.contains(&self.blocks[a.block].array));
                if uses && !before[t] {
                    return Err(format!(
                        "{}: free {i}: task {t} uses a freed array after the free",
                        self.name
                    ));
                }
            }
        }
        Ok(())
    }
}
