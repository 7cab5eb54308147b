//! Allocation-time placement: the tier of an object at its birth, from what
//! earlier objects of the same allocation identity taught the runtime.
//!
//! Why: Unimem decides at iteration tops (thesis §3.3), so an object that
//! is allocated and freed between two of them is never placed by a plan:
//! it is born in the slow tier and gone before the next decision. hpcc's
//! arrays are such objects (docs/notebook/unimem.md, "Objects allocated after
//! profiling began": at 21 of 23 iteration tops no interposed object was
//! live). The thesis's own answer, a main loop whose objects outlive an
//! iteration, does not hold for them; what does repeat is the *allocation
//! identity*: the same call site allocates the same kind of array again
//! (hpcc's Star and Single runs of one benchmark call the same function).
//!
//! * **Identity.** For `mt_tier_malloc` the object's name (a program names
//!   an array once and allocates it again under that name); for the
//!   interposed `malloc`/`mmap` (`mpi/malloc_hook.c`) the call site's
//!   return address mixed with the size class (`floor(log2 size)`), since
//!   their names number the calls. 0 means "no identity".
//! * **What is learned** ([`SiteBook::died`]): at each free, the fault
//!   sampler's estimate of the pages the object touched
//!   ([`crate::profiler`]: visits, the thesis's `#data_access` stand-in)
//!   over the ticks it was sampled, as a *density*, the fraction of its
//!   pages touched per tick; and its lifetime in phase boundaries. Only
//!   lifetimes the sampler saw (a profiled iteration) teach a density.
//! * **The decision** ([`decide`], pure): DRAM when the identity has a
//!   learned density of at least `min_density` and its page-rounded size
//!   fits in the DRAM the current plan leaves free over the phases the
//!   object is expected to live ([`Room::left`]); else the slow tier, with
//!   a [`Reason`] counted for the report (`alloc_placed` ... in
//!   `mt_tier_finish`'s line). The default is the thesis's: every object
//!   starts in the slow tier (§3.3, "initial placement").
//! * **Budget.** The registry refuses any DRAM allocation above the budget
//!   (`Registry::reserve_dram`); a refused DRAM birth is retried in the
//!   slow tier ([`Reason::Fallback`]). [`Room::left`] also keeps the
//!   plan's own promotions' room free, so a birth does not make a later
//!   promotion of the plan fail.

use crate::Tier;
use std::collections::HashMap;

/// Why an object was born where it was (counted for the report).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// Born in DRAM: a learned identity that fits the room left.
    Placed,
    /// Allocation-time placement is off (Unimem off or
    /// `MEMTAMER_ALLOC_PLACE=0`).
    Off,
    /// No identity (0): nothing to learn from.
    BadIdentity,
    /// No earlier sampled lifetime of this identity.
    Unknown,
    /// Its learned density is below the threshold.
    Cold,
    /// It does not fit the DRAM the plan leaves free.
    NoRoom,
    /// DRAM was chosen but the registry refused it (budget used meanwhile,
    /// or a mapping failed): born in the slow tier instead.
    Fallback,
}

/// A tier and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// Where the object is born.
    pub tier: Tier,
    /// Why there.
    pub reason: Reason,
}

/// What earlier lifetimes of one identity taught.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Learned {
    /// Lifetimes seen (sampled or not).
    pub lifetimes: u64,
    /// Estimated page visits summed over the sampled lifetimes.
    pub visits: f64,
    /// Page-ticks sampled (pages x ticks) over the sampled lifetimes.
    pub page_ticks: f64,
    /// Longest lifetime seen, in phase boundaries.
    pub max_phases: u64,
}

impl Learned {
    /// Fraction of the pages touched per sampler tick over every sampled
    /// lifetime (visits / page-ticks); `None` if none was sampled.
    pub fn density(&self) -> Option<f64> {
        (self.page_ticks > 0.0).then(|| self.visits / self.page_ticks)
    }
}

/// One freed object's samples (from [`crate::TierRuntime::profile_peek`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    /// Estimated page visits (the profiler's `visits`).
    pub visits: f64,
    /// Sampler intervals it was armed in.
    pub ticks: u64,
    /// Its pages.
    pub pages: usize,
}

/// The DRAM left under the current plan.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Room {
    /// The process's DRAM budget.
    pub budget: usize,
    /// DRAM in use or reserved now (the registry's count).
    pub dram_used: usize,
    /// Per phase of the plan: bytes of live plan objects the plan holds in
    /// DRAM in that phase that are not in DRAM now (their promotions are
    /// still to come). Empty without a plan.
    pub plan_pending: Vec<usize>,
    /// The phase the program is in (an index into `plan_pending`).
    pub phase: usize,
}

impl Room {
    /// Bytes a new object may take in DRAM without exceeding the budget
    /// and without taking the room of a promotion the plan makes in the
    /// phases it will live: `lifetime` phase boundaries if learned
    /// (phases `phase ..= phase + lifetime`, wrapping, as iterations
    /// repeat), else every phase of the plan.
    pub fn left(&self, lifetime: Option<u64>) -> usize {
        let free = self.budget.saturating_sub(self.dram_used);
        let n = self.plan_pending.len();
        if n == 0 {
            return free;
        }
        let window = lifetime.map_or(n, |l| (l.saturating_add(1)).min(n as u64) as usize);
        let need = (0..window)
            .map(|k| self.plan_pending[(self.phase + k) % n])
            .max()
            .unwrap_or(0);
        free.saturating_sub(need)
    }
}

/// The tier of a new object of `len` (page-rounded) bytes, identity
/// `site`, given what its identity taught (`learned`) and the room the
/// plan leaves. Pure: see the module doc for the rule.
pub fn decide(
    site: u64,
    len: usize,
    learned: Option<&Learned>,
    room: &Room,
    min_density: f64,
) -> Verdict {
    let slow = |reason| Verdict {
        tier: Tier::Slow,
        reason,
    };
    if site == 0 {
        return slow(Reason::BadIdentity);
    }
    let Some(l) = learned else {
        return slow(Reason::Unknown);
    };
    let Some(d) = l.density() else {
        return slow(Reason::Unknown);
    };
    if !(d >= min_density && d > 0.0) {
        return slow(Reason::Cold);
    }
    if len == 0 || len > room.left(Some(l.max_phases)) {
        return slow(Reason::NoRoom);
    }
    Verdict {
        tier: Tier::Dram,
        reason: Reason::Placed,
    }
}

/// How many births had each [`Reason`], and the bytes born in DRAM (also
/// in the status file, [`crate::status::RankStatus::alloc`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Counts {
    /// Born in DRAM.
    pub placed: u64,
    /// Their bytes (as asked for).
    pub placed_bytes: u64,
    /// Slow: unknown identity.
    pub unknown: u64,
    /// Slow: learned cold.
    pub cold: u64,
    /// Slow: no room under the plan.
    pub no_room: u64,
    /// Slow: no identity.
    pub no_identity: u64,
    /// Slow: DRAM refused by the registry.
    pub fallback: u64,
    /// Freed objects whose samples taught their identity a density.
    pub learned: u64,
}

impl Counts {
    /// One line for `memtamer tier status`.
    pub fn text(&self) -> String {
        format!(
            "born in DRAM {} ({} B); born slow: {} unknown, {} cold, {} no room, {} no identity, {} refused; {} frees learned",
            self.placed,
            self.placed_bytes,
            self.unknown,
            self.cold,
            self.no_room,
            self.no_identity,
            self.fallback,
            self.learned
        )
    }

    /// The report tokens (`mt_tier_finish`'s line).
    pub fn report(&self) -> String {
        format!(
            "alloc_placed {} alloc_placed_bytes {} alloc_unknown {} alloc_cold {} alloc_no_room {} alloc_no_identity {} alloc_fallback {} alloc_learned {}",
            self.placed,
            self.placed_bytes,
            self.unknown,
            self.cold,
            self.no_room,
            self.no_identity,
            self.fallback,
            self.learned
        )
    }
}

/// Identities learned so far and the live objects' identities.
#[derive(Debug, Default)]
pub struct SiteBook {
    sites: HashMap<u64, Learned>,
    /// Live objects by address: identity and the boundary count at birth.
    live: HashMap<usize, (u64, u64)>,
    /// The births so far.
    pub counts: Counts,
}

impl SiteBook {
    /// What identity `site` taught so far.
    pub fn learned(&self, site: u64) -> Option<&Learned> {
        self.sites.get(&site)
    }

    /// Whether the live object at `addr` has an identity in the book.
    pub fn knows(&self, addr: usize) -> bool {
        self.live.contains_key(&addr)
    }

    /// Decides a birth (see [`decide`]) without recording it.
    pub fn place(&self, site: u64, len: usize, room: &Room, min_density: f64) -> Verdict {
        decide(site, len, self.sites.get(&site), room, min_density)
    }

    /// Records a birth at `addr` (`boundary`: the driver's boundary count)
    /// with the verdict it got; `bytes` as asked for.
    pub fn born(&mut self, addr: usize, site: u64, boundary: u64, v: Verdict, bytes: usize) {
        let c = &mut self.counts;
        match v.reason {
            Reason::Placed => {
                c.placed += 1;
                c.placed_bytes += bytes as u64;
            }
            Reason::Off => {}
            Reason::BadIdentity => c.no_identity += 1,
            Reason::Unknown => c.unknown += 1,
            Reason::Cold => c.cold += 1,
            Reason::NoRoom => c.no_room += 1,
            Reason::Fallback => c.fallback += 1,
        }
        if site != 0 {
            self.live.insert(addr, (site, boundary));
        }
    }

    /// Learns from the object at `addr` as it is freed: its lifetime in
    /// boundaries and, if the sampler saw it, its density. An address the
    /// book does not know (no identity) teaches nothing.
    pub fn died(&mut self, addr: usize, boundary: u64, sample: Option<Sample>) {
        let Some((site, born)) = self.live.remove(&addr) else {
            return;
        };
        let l = self.sites.entry(site).or_default();
        l.lifetimes += 1;
        l.max_phases = l.max_phases.max(boundary.saturating_sub(born));
        if let Some(s) = sample.filter(|s| s.ticks > 0 && s.pages > 0 && s.visits.is_finite()) {
            l.visits += s.visits.max(0.0);
            l.page_ticks += s.pages as f64 * s.ticks as f64;
            self.counts.learned += 1;
        }
    }
}

/// The identity of a named object (`mt_tier_malloc`): FNV-1a of the
/// name, never 0.
pub fn name_identity(name: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h.max(1)
}

#[cfg(test)]
#[path = "alloc_place_tests.rs"]
mod tests;
