//! A compact set of logical CPUs, used for affinity in both backends.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// Words in the bitmap: [`MAX_CPUS`] / 64.
const WORDS: usize = MAX_CPUS / 64;

/// A set of logical CPU ids (`0..MAX_CPUS`). Fixed size so it stays `Copy`
/// and cheap to compare on the simulator's hot path; the size is glibc's
/// `CPU_SETSIZE` (1024), the widest set `sched_setaffinity` through a
/// `cpu_set_t` takes, which covers today's largest two- and four-socket
/// hosts (2 x 192 cores x SMT2 = 768 logical CPUs).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CpuSet {
    bits: [u64; WORDS],
}

/// Largest CPU id + 1 that a [`CpuSet`] can hold (glibc `CPU_SETSIZE`).
pub const MAX_CPUS: usize = 1024;

/// Words always written when serializing: the format of the earlier
/// 256-CPU set, so journals written by older versions and new ones of small
/// hosts read back alike.
const MIN_SERIALIZED_WORDS: usize = 4;

/// Why a CPU list string could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuListError(pub String);

impl fmt::Display for CpuListError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for CpuListError {}

/// The serialized shape: `{"bits": [w0, w1, ...]}`, trailing zero words
/// beyond the fourth dropped.
#[derive(Serialize, Deserialize)]
struct Wire {
    bits: Vec<u64>,
}

impl Serialize for CpuSet {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let used = self
            .bits
            .iter()
            .rposition(|w| *w != 0)
            .map_or(0, |i| i + 1)
            .max(MIN_SERIALIZED_WORDS);
        Wire {
            bits: self.bits[..used].to_vec(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for CpuSet {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let wire = Wire::deserialize(d)?;
        if wire.bits.len() > WORDS {
            return Err(serde::de::Error::custom(format!(
                "a CPU set of {} words is beyond the limit of {MAX_CPUS} CPUs",
                wire.bits.len()
            )));
        }
        let mut bits = [0u64; WORDS];
        bits[..wire.bits.len()].copy_from_slice(&wire.bits);
        Ok(CpuSet { bits })
    }
}

impl CpuSet {
    /// The raw bitmap (bit c of word c/64 = CPU c), for cheap hashing and
    /// for building kernel `cpu_set_t`s.
    pub const fn words(&self) -> [u64; WORDS] {
        self.bits
    }

    /// The empty set.
    pub const fn empty() -> Self {
        CpuSet { bits: [0; WORDS] }
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
    /// Highest CPU id + 1 in the set (0 when empty): how wide a kernel
    /// bitmap must be to carry it.
    pub fn span(&self) -> usize {
        self.bits
            .iter()
            .rposition(|w| *w != 0)
            .map_or(0, |i| i * 64 + 64 - self.bits[i].leading_zeros() as usize)
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
        // word by word, skipping empty words: a 1024-bit scan per call would
        // cost the simulator's scheduler more than the 256-bit one did
        self.bits.iter().enumerate().flat_map(|(i, &w)| {
            let mut rest = w;
            std::iter::from_fn(move || {
                if rest == 0 {
                    return None;
                }
                let bit = rest.trailing_zeros() as usize;
                rest &= rest - 1;
                Some(i * 64 + bit)
            })
        })
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
        assert!(CpuSet::parse_list("4096").is_err());
        assert!(CpuSet::parse_list("").unwrap().is_empty());
    }

    #[test]
    fn hosts_beyond_256_cpus_parse_iterate_and_print() {
        // a 2-socket host with 384 logical CPUs (sysfs `cpu/online`)
        let s = CpuSet::parse_list("0-383").unwrap();
        assert_eq!(s.len(), 384);
        assert_eq!(s.iter().last(), Some(383));
        assert_eq!(s.span(), 384);
        assert_eq!(s.to_string(), "0-383");
        let odd = CpuSet::parse_list("1,255-257,700,1023").unwrap();
        assert_eq!(
            odd.iter().collect::<Vec<_>>(),
            [1, 255, 256, 257, 700, 1023]
        );
        assert!(CpuSet::parse_list("1024").is_err(), "beyond CPU_SETSIZE");
        assert_eq!(CpuSet::empty().span(), 0);
    }

    #[test]
    fn serialized_sets_keep_the_256_cpu_format_and_read_old_journals() {
        let small = CpuSet::parse_list("0-3").unwrap();
        assert_eq!(toml::to_string(&small).unwrap(), "bits = [15, 0, 0, 0]\n");
        let wide = CpuSet::parse_list("0,300").unwrap();
        let back: CpuSet = toml::from_str(&toml::to_string(&wide).unwrap()).unwrap();
        assert_eq!(back, wide);
        let too_wide = format!("bits = {:?}", vec![1u64; WORDS + 1]);
        assert!(toml::from_str::<CpuSet>(&too_wide).is_err());
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
