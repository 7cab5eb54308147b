//! The imperative shell of allocation-time placement
//! ([`crate::alloc_place`], the pure policy): the process's identity book,
//! the room read from the registry and the plan in force, and the two
//! hooks the C ABI calls, at an object's birth ([`alloc`]) and after its
//! free ([`freed`]).
//!
//! Configuration, read when a runtime starts ([`start`]):
//! `MEMTAMER_ALLOC_PLACE` (`0`/`off`: every object is born in the slow
//! tier, as before; unset, empty, `1`/`on`: placement on; only with Unimem
//! on) and `MEMTAMER_ALLOC_MIN_DENSITY` (the least learned density, the
//! fraction of an object's pages touched per sampler tick, that earns a
//! DRAM birth; default 0: any sampled access).

use crate::alloc_place::{Counts, Reason, Room, SiteBook, Verdict};
use crate::driver::Driver;
use crate::{Tier, TierError, TierRuntime};
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

struct State {
    min_density: f64,
    book: SiteBook,
}

/// The book of the running runtime; `None`: placement off (or no runtime).
/// Lock order: the C ABI's `DRIVER`, then this, then the registry.
static STATE: Mutex<Option<State>> = Mutex::new(None);

fn state() -> MutexGuard<'static, Option<State>> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

fn on_from_env() -> Result<bool, TierError> {
    crate::env::switch("MEMTAMER_ALLOC_PLACE", "every object born in the slow tier")
}

fn min_density_from_env() -> Result<f64, TierError> {
    match std::env::var("MEMTAMER_ALLOC_MIN_DENSITY") {
        Err(_) => Ok(0.0),
        Ok(v) => v
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite() && (0.0..=1.0).contains(x))
            .ok_or(TierError::BadEnv {
                key: "MEMTAMER_ALLOC_MIN_DENSITY",
                value: v,
                why: "expected a fraction of pages per tick in 0..1".into(),
            }),
    }
}

/// Starts a fresh book for a new runtime (`unimem`: whether Unimem runs;
/// without it nothing is learned and every object is born slow). A bad
/// variable is an error naming it.
pub fn start(unimem: bool) -> Result<(), TierError> {
    let on = on_from_env()?;
    let min_density = min_density_from_env()?;
    *state() = (unimem && on).then(|| State {
        min_density,
        book: SiteBook::default(),
    });
    Ok(())
}

/// Forgets the book (the runtime ended).
pub fn stop() {
    *state() = None;
}

/// The births so far (`None`: placement off).
pub fn counts() -> Option<Counts> {
    state().as_ref().map(|s| s.book.counts)
}

fn round(n: usize) -> usize {
    let page = crate::guard::page_size();
    n.div_ceil(page) * page
}

/// The DRAM room under the plan in force (`drv`'s), and the boundary count.
fn room(rt: &TierRuntime, drv: Option<&Driver>) -> (Room, u64) {
    let Some(d) = drv else {
        return (Room::default(), 0);
    };
    let (sets, phase, boundaries) = d.plan_dram();
    let objs: HashMap<(usize, u64), (Tier, usize)> = rt
        .objects()
        .into_iter()
        .map(|o| ((o.addr, o.id), (o.tier, round(o.size))))
        .collect();
    let plan_pending = sets
        .iter()
        .map(|s| {
            s.iter()
                .filter_map(|k| objs.get(k))
                .filter(|(t, _)| *t != Tier::Dram)
                .map(|(_, len)| len)
                .sum()
        })
        .collect();
    let room = Room {
        budget: rt.config().dram_budget,
        dram_used: rt.dram_used(),
        plan_pending,
        phase,
    };
    (room, boundaries)
}

/// Allocates an object of identity `site` (0: none) in the tier the policy
/// picks. Placement off: the slow tier, as `mt_tier_malloc` always did. A
/// DRAM birth the registry refuses is retried in the slow tier, so the
/// budget is never exceeded and the program gets its memory.
pub fn alloc(
    rt: &TierRuntime,
    drv: Option<&Driver>,
    size: usize,
    name: &str,
    site: u64,
) -> Result<*mut u8, TierError> {
    let mut g = state();
    let Some(st) = g.as_mut() else {
        return rt.alloc(size, name, Tier::Slow);
    };
    let len = round(size);
    // the room costs a registry snapshot: only for a learned identity
    let known = st.book.learned(site).and_then(|l| l.density()).is_some();
    let (room, boundary) = if known {
        room(rt, drv)
    } else {
        (Room::default(), drv.map_or(0, |d| d.stats().boundaries))
    };
    let v = st.book.place(site, len, &room, st.min_density);
    let (p, v) = match v.tier {
        Tier::Dram => match rt.alloc(size, name, Tier::Dram) {
            Ok(p) => (p, v),
            Err(_) => (
                rt.alloc(size, name, Tier::Slow)?,
                Verdict {
                    tier: Tier::Slow,
                    reason: Reason::Fallback,
                },
            ),
        },
        Tier::Slow => (rt.alloc(size, name, Tier::Slow)?, v),
    };
    st.book.born(p as usize, site, boundary, v, size);
    Ok(p)
}

/// Learns from the object that was at `addr` and has just been freed
/// (`sample`: what the sampler saw of it, [`TierRuntime::free_sampled`]).
pub fn freed(drv: Option<&Driver>, addr: usize, sample: Option<crate::alloc_place::Sample>) {
    let mut g = state();
    let Some(st) = g.as_mut() else { return };
    if !st.book.knows(addr) {
        return;
    }
    let boundary = drv.map_or(0, |d| d.stats().boundaries);
    st.book.died(addr, boundary, sample);
}
