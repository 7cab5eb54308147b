//! Proactive flushing (thesis §6.3.2): a thread takes recently sampled
//! store addresses (PEBS/IBS in the thesis; any [`StoreSampler`] here) and
//! writes their lines back early, so the application's own flush later
//! finds them clean and resident, which is cheaper. The flushes are extra:
//! no application flush is skipped, none is reordered, and the thread
//! never synchronises with the flushers. It runs only while the controller
//! has not lowered concurrency, and only inside ranges the application
//! declared with `Ribbon::allow_proactive` (a sampled address may belong to
//! memory unmapped since; flushing it would fault).

use std::time::Duration;

/// A source of sampled store addresses (e.g. `memtamer-sense`'s PEBS
/// sampler, or recorded samples in tests).
pub trait StoreSampler: Send {
    /// Appends the store addresses sampled since the last call to `out`.
    fn drain(&mut self, out: &mut Vec<u64>);
}

/// Replays recorded batches of store addresses, one batch per call, then
/// nothing: lets tests and benchmarks drive proactive flushing without PEBS.
pub struct Recorded {
    batches: std::collections::VecDeque<Vec<u64>>,
}

impl Recorded {
    /// A sampler that yields `batches` in order.
    pub fn new(batches: Vec<Vec<u64>>) -> Recorded {
        Recorded {
            batches: batches.into(),
        }
    }
}

impl StoreSampler for Recorded {
    fn drain(&mut self, out: &mut Vec<u64>) {
        if let Some(b) = self.batches.pop_front() {
            out.extend(b);
        }
    }
}

/// How often the proactive thread looks for samples.
pub(crate) const POLL: Duration = Duration::from_micros(200);

/// The cache lines of `samples` that lie in an allowed range, each once,
/// in address order: the pure part of one proactive round.
pub fn lines_to_flush(samples: &[u64], allowed: &[(usize, usize)]) -> Vec<usize> {
    let line = memtamer_pmem::CACHE_LINE;
    let mut lines: Vec<usize> = samples
        .iter()
        .map(|&a| a as usize & !(line - 1))
        .filter(|&l| {
            allowed
                .iter()
                .any(|&(start, len)| l + line > start && l < start.saturating_add(len))
        })
        .collect();
    lines.sort_unstable();
    lines.dedup();
    lines
}

/// Drops every allowed range that overlaps `addr..addr+len` (memory about
/// to be unmapped, whatever part of a range it is).
pub fn retain_outside(allowed: &mut Vec<(usize, usize)>, addr: usize, len: usize) {
    let end = addr.saturating_add(len);
    allowed.retain(|&(start, l)| start.saturating_add(l) <= addr || start >= end);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unmapping_any_part_of_a_range_forbids_all_of_it() {
        let mut a = vec![(0x1000, 0x1000), (0x3000, 0x1000), (0x5000, 0x100)];
        retain_outside(&mut a, 0x3800, 0x10);
        assert_eq!(a, vec![(0x1000, 0x1000), (0x5000, 0x100)]);
        retain_outside(&mut a, 0x2000, 0x3000); // touches neither end
        assert_eq!(a, vec![(0x1000, 0x1000), (0x5000, 0x100)]);
        retain_outside(&mut a, 0, usize::MAX);
        assert!(a.is_empty());
    }

    #[test]
    fn only_allowed_lines_each_once() {
        let allowed = [(4096usize, 256usize)];
        let samples = [4096 + 3, 4096 + 10, 4096 + 200, 8192, 4000, 4096 + 256];
        assert_eq!(lines_to_flush(&samples, &allowed), vec![4096, 4096 + 192]);
        assert!(lines_to_flush(&samples, &[]).is_empty());
    }

    #[test]
    fn a_range_starting_mid_line_still_covers_that_line() {
        assert_eq!(lines_to_flush(&[130], &[(129, 10)]), vec![128]);
    }
}
