//! Log-linear latency histogram (HdrHistogram-like, ~1.5% bucket precision):
//! constant memory, mergeable, deterministic percentiles.

/// Sub-buckets per power of two.
const SUB: u64 = 64;

/// A histogram of non-negative integer values (we record nanoseconds).
#[derive(Clone, Debug, Default)]
pub struct Histogram {
    counts: Vec<u64>,
    total: u64,
    sum: u128,
}

fn bucket(v: u64) -> usize {
    if v < SUB {
        return v as usize;
    }
    let msb = 63 - v.leading_zeros() as u64; // >= 6
    let shift = msb - 6;
    ((shift + 1) * SUB + ((v >> shift) - SUB)) as usize
}

fn bucket_value(b: usize) -> u64 {
    let b = b as u64;
    if b < SUB {
        return b;
    }
    let shift = b / SUB - 1;
    let sub = b % SUB + SUB;
    // middle of the bucket
    (sub << shift) + ((1u64 << shift) >> 1)
}

impl Histogram {
    /// Records one value.
    pub fn record(&mut self, v: u64) {
        let b = bucket(v);
        if b >= self.counts.len() {
            self.counts.resize(b + 1, 0);
        }
        self.counts[b] += 1;
        self.total += 1;
        self.sum += v as u128;
    }
    /// Number of values.
    pub fn count(&self) -> u64 {
        self.total
    }
    /// Mean, if any value.
    pub fn mean(&self) -> Option<f64> {
        (self.total > 0).then(|| self.sum as f64 / self.total as f64)
    }
    /// The value at quantile `q` in [0, 1], if any value.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        if self.total == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (b, c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Some(bucket_value(b));
            }
        }
        None
    }
    /// Adds another histogram.
    pub fn merge(&mut self, other: &Histogram) {
        if other.counts.len() > self.counts.len() {
            self.counts.resize(other.counts.len(), 0);
        }
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += b;
        }
        self.total += other.total;
        self.sum += other.sum;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn quantiles_within_precision() {
        let mut h = Histogram::default();
        assert_eq!(h.quantile(0.5), None);
        for v in 1..=100_000u64 {
            h.record(v);
        }
        for (q, want) in [(0.5, 50_000.0), (0.99, 99_000.0), (0.999, 99_900.0)] {
            let got = h.quantile(q).unwrap() as f64;
            assert!((got - want).abs() / want < 0.02, "q={q} got={got}");
        }
        assert!((h.mean().unwrap() - 50_000.5).abs() < 1.0);
    }
    #[test]
    fn bucket_is_monotonic() {
        let mut last = 0;
        for v in 0..1_000_000u64 {
            let b = bucket(v);
            assert!(b >= last);
            last = b;
        }
        assert!(bucket(u64::MAX) > 0);
    }
}
