//! A compact set of logical CPUs, used for affinity in both backends.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A set of logical CPU ids (0..256). Fixed size so it is `Copy` and cheap to
/// compare on the simulator's hot path; 256 covers every platform we model.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct CpuSet {
    bits: [u64; 4],
}

/// Largest CPU id + 1 that a [`CpuSet`] can hold.
pub const MAX_CPUS: usize = 256;

/// Why a CPU list string could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuListError(pub String);

impl fmt::Display for CpuListError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for CpuListError {}

impl CpuSet {
    /// The raw bitmap (bit c of word c/64 = CPU c), for cheap hashing and
    /// for building kernel `cpu_set_t`s.
    pub const fn words(&self) -> [u64; 4] {
        self.bits
    }

    /// The empty set.
    pub const fn empty() -> Self {
        CpuSet { bits: [0; 4] }
    }
    /// CPUs `0..n`.
    pub fn first_n(n: usize) -> Self {
        let mut s = Self::empty();
        for c in 0..n.min(MAX_CPUS) {
            s.insert(c);
        }
        s
    }
    /// The set of one CPU (a thread pinned there); empty for ids >= [`MAX_CPUS`].
    pub fn single(cpu: usize) -> Self {
        let mut s = Self::empty();
        s.insert(cpu);
        s
    }
    /// Adds `cpu`; ids >= [`MAX_CPUS`] are ignored (callers validate ranges first).
    pub fn insert(&mut self, cpu: usize) {
        if cpu < MAX_CPUS {
            self.bits[cpu / 64] |= 1 << (cpu % 64);
        }
    }
    /// Removes `cpu`.
    pub fn remove(&mut self, cpu: usize) {
        if cpu < MAX_CPUS {
            self.bits[cpu / 64] &= !(1 << (cpu % 64));
        }
    }
    /// Whether `cpu` is in the set.
    pub fn contains(&self, cpu: usize) -> bool {
        cpu < MAX_CPUS && self.bits[cpu / 64] & (1 << (cpu % 64)) != 0
    }
    /// Number of CPUs in the set.
    pub fn len(&self) -> usize {
        self.bits.iter().map(|b| b.count_ones() as usize).sum()
    }
    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.bits.iter().all(|b| *b == 0)
    }
    /// Set intersection.
    pub fn intersect(&self, other: &CpuSet) -> CpuSet {
        let mut bits = self.bits;
        for (b, o) in bits.iter_mut().zip(other.bits.iter()) {
            *b &= *o;
        }
        CpuSet { bits }
    }
    /// CPU ids in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        (0..MAX_CPUS).filter(move |c| self.contains(*c))
    }
    /// Parses the Linux list format (`"0-3,8,10-11"`), as in `Cpus_allowed_list`.
    pub fn parse_list(s: &str) -> Result<CpuSet, CpuListError> {
        let mut set = CpuSet::empty();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (lo, hi) = match part.split_once('-') {
                Some((a, b)) => (parse_id(a)?, parse_id(b)?),
                None => {
                    let v = parse_id(part)?;
                    (v, v)
                }
            };
            if lo > hi {
                return Err(CpuListError(format!("range `{part}` is reversed")));
            }
            for c in lo..=hi {
                set.insert(c);
            }
        }
        Ok(set)
    }
}

fn parse_id(s: &str) -> Result<usize, CpuListError> {
    let v: usize = s
        .trim()
        .parse()
        .map_err(|_| CpuListError(format!("`{s}` is not a CPU number")))?;
    if v >= MAX_CPUS {
        return Err(CpuListError(format!(
            "CPU {v} is beyond the limit of {MAX_CPUS}"
        )));
    }
    Ok(v)
}

impl fmt::Display for CpuSet {
    /// Formats in the Linux list format, e.g. `0-3,8`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ids: Vec<usize> = self.iter().collect();
        let mut out = Vec::new();
        let mut i = 0;
        while i < ids.len() {
            let mut j = i;
            while j + 1 < ids.len() && ids[j + 1] == ids[j] + 1 {
                j += 1;
            }
            out.push(if i == j {
                ids[i].to_string()
            } else {
                format!("{}-{}", ids[i], ids[j])
            });
            i = j + 1;
        }
        f.write_str(&out.join(","))
    }
}

impl fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CpuSet({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_holds_one_cpu() {
        assert_eq!(CpuSet::single(5).to_string(), "5");
        assert!(CpuSet::single(MAX_CPUS).is_empty());
    }

    #[test]
    fn list_round_trips() {
        let s = CpuSet::parse_list("0-3,8,10-11").unwrap();
        assert_eq!(s.len(), 7);
        assert_eq!(s.to_string(), "0-3,8,10-11");
        assert!(s.contains(8) && !s.contains(9));
    }

    #[test]
    fn bad_lists_are_errors_not_panics() {
        assert!(CpuSet::parse_list("3-1").is_err());
        assert!(CpuSet::parse_list("x").is_err());
        assert!(CpuSet::parse_list("999").is_err());
        assert!(CpuSet::parse_list("").unwrap().is_empty());
    }

    #[test]
    fn intersect_and_remove() {
        let a = CpuSet::first_n(8);
        let mut b = CpuSet::parse_list("4-12").unwrap();
        assert_eq!(a.intersect(&b).to_string(), "4-7");
        b.remove(5);
        assert_eq!(a.intersect(&b).to_string(), "4,6-7");
    }
}
