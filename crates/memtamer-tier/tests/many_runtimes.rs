//! Several runtimes in one process at once (issue 20): each thread owns its
//! own `TierRuntime` (its own registry and registry mutex) and allocates,
//! profiles (every page armed `PROT_NONE`), touches, migrates and frees
//! small objects in a loop. All of them share the one process-wide SIGSEGV
//! handler and its slot table (`guard::SLOTS`), which is what this test
//! exercises: before the fix two registries could claim the same slot, or a
//! free could zero the length of a slot another registry had just claimed,
//! and a sampled fault on the loser's object was then not recognised and
//! killed the process with SIGSEGV (or was counted for the wrong object).
//!
//! Pass/fail does not depend on time: every round checks the data and the
//! fault counts exactly; a lost fault crashes the test binary.

use memtamer_tier::{SlowTier, Tier, TierConfig, TierRuntime};
use std::sync::{Arc, Barrier};

const THREADS: usize = 4;
const ROUNDS: usize = 300;
const BURST: usize = 6;
const PAGE: usize = 4096;

fn fill(p: *mut u8, pages: usize, v: u8) {
    for pg in 0..pages {
        // SAFETY: `p` is a live object of at least `pages` pages.
        unsafe { std::ptr::write_volatile(p.add(pg * PAGE + pg % 7), v) };
    }
}

fn all(p: *mut u8, pages: usize, v: u8) -> bool {
    // SAFETY: `p` is a live object of at least `pages` pages.
    (0..pages).all(|pg| unsafe { std::ptr::read_volatile(p.add(pg * PAGE + pg % 7)) } == v)
}

/// One thread's runtime and rounds; returns a description of the first
/// wrong datum or count. A thread that failed still meets the others at
/// every round, so they finish and report too.
fn worker(id: usize, start: &Barrier) -> Result<(), String> {
    let cfg = TierConfig::new(1 << 20, SlowTier::File("/dev/shm".into()));
    let rt = cfg.and_then(TierRuntime::new).map_err(|e| e.to_string());
    let mut old = Vec::new();
    let mut first_err = None;
    for round in 0..ROUNDS {
        // All threads allocate (and free) at the same moment: the claims of
        // the slot table race as hard as they can. Only a meeting point, no
        // timing: the result does not depend on how long anything takes.
        start.wait();
        if first_err.is_none() {
            let r = rt.as_ref().map_err(|e| e.clone());
            if let Err(e) = r.and_then(|rt| round_trip(rt, id, round, &mut old)) {
                first_err = Some(e);
            }
        }
    }
    let rt = rt?;
    for (p, _) in old {
        rt.free(p).map_err(|e| e.to_string())?;
    }
    first_err.map_or(Ok(()), Err)
}

/// One round: allocate a burst of small objects (both tiers), free the
/// previous round's burst, profile them all with every page armed, move
/// one, check every datum and every count.
fn round_trip(
    rt: &TierRuntime,
    id: usize,
    round: usize,
    old: &mut Vec<(*mut u8, usize)>,
) -> Result<(), String> {
    let v = (id * 31 + round) as u8;
    let mut objs = Vec::with_capacity(BURST);
    for j in 0..BURST {
        let pages = 1 + (round + id + j) % 3;
        let tier = if j % 2 == 0 { Tier::Slow } else { Tier::Dram };
        let p = rt
            .alloc(pages * PAGE, "o", tier)
            .map_err(|e| e.to_string())?;
        objs.push((p, pages));
    }
    // The previous round's burst is freed while the others allocate.
    for (p, _) in old.drain(..) {
        rt.free(p).map_err(|e| e.to_string())?;
    }
    for (j, &(p, pages)) in objs.iter().enumerate() {
        fill(p, pages, v.wrapping_add(j as u8));
    }
    // Arm every page of every object, then touch each once: every touch is
    // a sampling fault the handler must recognise and count for its object.
    rt.profile_tick(4);
    for (j, &(p, pages)) in objs.iter().enumerate() {
        if !all(p, pages, v.wrapping_add(j as u8)) {
            return Err(format!("thread {id} round {round}: data lost while armed"));
        }
    }
    let est = rt.profile_take();
    rt.profile_reset();
    if est.len() != BURST {
        return Err(format!(
            "thread {id} round {round}: {} estimates",
            est.len()
        ));
    }
    for e in &est {
        let want = objs
            .iter()
            .find(|o| o.0 as usize == e.addr)
            .map_or(0, |o| o.1 as u64);
        if e.armed != want || e.faults != want {
            return Err(format!(
                "thread {id} round {round}: object at {:#x} armed {} faulted {}, want {want} each",
                e.addr, e.armed, e.faults
            ));
        }
    }
    // A move while the object is armed again (the move disarms it).
    rt.profile_tick(4);
    let (a, pa) = objs[0];
    rt.migrate_now(a, Tier::Dram).map_err(|e| e.to_string())?;
    fill(a, pa, v.wrapping_add(100));
    for (j, &(p, pages)) in objs.iter().enumerate() {
        let want = if j == 0 {
            v.wrapping_add(100)
        } else {
            v.wrapping_add(j as u8)
        };
        if !all(p, pages, want) {
            return Err(format!("thread {id} round {round}: data lost by the move"));
        }
    }
    let _ = rt.profile_take();
    rt.profile_reset();
    *old = objs;
    Ok(())
}

#[test]
fn several_runtimes_share_the_fault_handler() {
    let start = Arc::new(Barrier::new(THREADS));
    let handles: Vec<_> = (0..THREADS)
        .map(|id| {
            let start = start.clone();
            std::thread::spawn(move || worker(id, &start))
        })
        .collect();
    for h in handles {
        h.join().expect("worker panicked").unwrap();
    }
}
