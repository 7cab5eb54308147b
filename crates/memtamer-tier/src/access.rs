//! Attribution of sampled data addresses to tier objects: the pure core of
//! the address-sampling access source ([`crate::pebs`]).
//!
//! Unimem's Step 1 (thesis §3.4) samples memory references with PEBS/IBS,
//! maps each sample's data address to the data object whose address range
//! holds it, and counts per object and phase `#data_access` and
//! `#samples_with_data_accesses` (Eq. 3.1). Here:
//!
//! * an object is its registry address range `[addr, addr + size)`; tier
//!   moves keep an object's virtual address (`crate::migrator` remaps at a
//!   fixed address), so a moved object's samples stay its own;
//! * a sample whose address is in no live object (stack, MPI buffers, an
//!   object freed before the phase closed) counts as *other*: it is one of
//!   the phase's `#samples` but no object's;
//! * one sample of an event sampled every `period` events stands for
//!   `period` of them (the kernel reports the period in each sample,
//!   `PERF_SAMPLE_PERIOD`), so an object's accesses are the sum of its
//!   samples' periods, kept apart for loads and stores.
//!
//! Pure and deterministic: the shell drains the perf rings and takes the
//! registry's ranges at a phase boundary; everything here is tested with
//! made-up and recorded samples.

use crate::unimem::model::ObjPhase;
use std::collections::BTreeMap;

/// Which sampled event a data address came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessKind {
    /// A load (MEM_INST_RETIRED.ALL_LOADS, or a stand-in event in tests).
    Load,
    /// A store (MEM_INST_RETIRED.ALL_STORES).
    Store,
}

/// One sampled data address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccessSample {
    /// The data address the sampled instruction touched.
    pub addr: u64,
    /// Its event.
    pub kind: AccessKind,
    /// Events the sample stands for (its sampling period; 0 counts as 1).
    pub period: u64,
}

/// One object's address range, as the registry holds it when the phase
/// closes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObjectRange {
    /// Start address (fixed for the object's life, moves included).
    pub addr: usize,
    /// Bytes asked for: the range is `[addr, addr + len)`.
    pub len: usize,
    /// Registry id ([`crate::ObjectView::id`]): tells an object from an
    /// earlier one freed at the same address.
    pub id: u64,
}

/// The objects' ranges, ordered by start for lookup by address.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangeIndex {
    by_start: BTreeMap<usize, ObjectRange>,
}

impl RangeIndex {
    /// Indexes `ranges` (empty ones never match; registry objects do not
    /// overlap, and if two did the one starting later would win).
    pub fn new(ranges: impl IntoIterator<Item = ObjectRange>) -> Self {
        RangeIndex {
            by_start: ranges
                .into_iter()
                .filter(|r| r.len > 0)
                .map(|r| (r.addr, r))
                .collect(),
        }
    }

    /// The live objects of a registry snapshot.
    pub fn of_views(objs: &[crate::ObjectView]) -> Self {
        RangeIndex::new(objs.iter().map(|o| ObjectRange {
            addr: o.addr,
            len: o.size,
            id: o.id,
        }))
    }

    /// The object holding `addr`, if any.
    pub fn find(&self, addr: u64) -> Option<&ObjectRange> {
        let a = usize::try_from(addr).ok()?;
        let (_, r) = self.by_start.range(..=a).next_back()?;
        (a - r.addr < r.len).then_some(r)
    }
}

/// Samples and the accesses they stand for, loads and stores apart.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Counts {
    /// Load samples.
    pub load_samples: u64,
    /// Store samples.
    pub store_samples: u64,
    /// Loads they stand for (sum of their periods).
    pub loads: f64,
    /// Stores they stand for.
    pub stores: f64,
}

impl Counts {
    /// Samples of either kind.
    pub fn samples(&self) -> u64 {
        self.load_samples + self.store_samples
    }

    /// Accesses of either kind.
    pub fn accesses(&self) -> f64 {
        self.loads + self.stores
    }

    fn add(&mut self, s: &AccessSample) {
        let n = s.period.max(1) as f64;
        match s.kind {
            AccessKind::Load => {
                self.load_samples += 1;
                self.loads += n;
            }
            AccessKind::Store => {
                self.store_samples += 1;
                self.stores += n;
            }
        }
    }
}

/// One phase's samples by object (registry id) and the rest.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PhaseAccesses {
    /// Per object id, its counts.
    pub objects: BTreeMap<u64, Counts>,
    /// Samples in no object.
    pub other: Counts,
}

impl PhaseAccesses {
    /// Adds one sample, attributed by `ranges`.
    pub fn add(&mut self, ranges: &RangeIndex, s: &AccessSample) {
        match ranges.find(s.addr) {
            Some(r) => self.objects.entry(r.id).or_default().add(s),
            None => self.other.add(s),
        }
    }

    /// Every sample of the phase, objects and other (the thesis's
    /// `#samples`).
    pub fn samples(&self) -> u64 {
        self.other.samples() + self.objects.values().map(Counts::samples).sum::<u64>()
    }

    /// The phase's entries of a `PhaseProfile`, by the driver's object
    /// index: `ids[i]` is profiled object `i`'s registry id. An object
    /// with no sample gets no entry, as with the fault sampler; a sampled
    /// object the driver does not profile is left out.
    pub fn obj_phases(&self, ids: &[u64]) -> BTreeMap<usize, ObjPhase> {
        ids.iter()
            .enumerate()
            .filter_map(|(i, id)| {
                let c = self.objects.get(id).filter(|c| c.samples() > 0)?;
                Some((
                    i,
                    ObjPhase {
                        accesses: c.accesses(),
                        samples: c.samples() as f64,
                    },
                ))
            })
            .collect()
    }
}

/// Attributes `samples` to the objects of `ranges`.
pub fn attribute(ranges: &RangeIndex, samples: &[AccessSample]) -> PhaseAccesses {
    let mut out = PhaseAccesses::default();
    for s in samples {
        out.add(ranges, s);
    }
    out
}

#[cfg(test)]
#[path = "access_tests.rs"]
mod tests;
