//! `memtamer gate check|repair`: what is wrong with a gate file, and
//! putting it right without removing it (programs that have it mapped keep
//! working). Any process that can write the file can corrupt it; the gate
//! refuses a bad fixed header (`GateError::Corrupt`) and rebuilds bad
//! lock-protected words itself, and these two let an operator see and fix
//! the first kind (issue 22).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use crate::gate::{Gate, GateOptions};
use crate::shm::{
    header_check, header_fault, Header, Mapping, HOLDING, IDLE, LAYOUT_BYTES, MAGIC, MAX_BYPASS,
    RUNNING, SLOTS,
};
use crate::{os, GateError};

/// Where the words of a gate file lie, for tools that corrupt them on
/// purpose (`memtamer gate hostile`, `scripts/check-hostile`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Bytes of the header (global words, the FIFO ring, retired stats),
    /// from offset 0.
    pub header_bytes: usize,
    /// Bytes of one slot; slot `i` starts at `header_bytes + i * slot_bytes`.
    pub slot_bytes: usize,
    /// Bytes of the fixed header words the checksum covers (magic, layout,
    /// slot count, bypass size, checksum), from offset 0.
    pub fixed_bytes: usize,
}

/// The layout of this version's gate file.
pub fn layout() -> Layout {
    let slot_bytes = std::mem::size_of::<crate::shm::Slot>();
    Layout {
        header_bytes: LAYOUT_BYTES - SLOTS * slot_bytes,
        slot_bytes,
        fixed_bytes: 32,
    }
}

/// The problems found in the gate file `options` names (empty: healthy).
/// Reads only.
pub fn check(options: &GateOptions) -> Result<Vec<String>, GateError> {
    let map = Mapping::open_existing_raw(&options.path())?;
    Ok(problems(&map))
}

fn problems(map: &Mapping) -> Vec<String> {
    let h = map.header();
    let mut found = Vec::new();
    let magic = h.magic.load(Ordering::Acquire);
    if magic != MAGIC {
        found.push(format!("layout magic {magic:#x}, expected {MAGIC:#x}"));
        return found;
    }
    found.extend(header_fault(h));
    found.extend(bound_faults(h));
    for i in 0..SLOTS {
        let slot = map.slot(i);
        let state = slot.state.load(Ordering::Relaxed);
        if slot.owner_pid.load(Ordering::Relaxed) != 0 && state > HOLDING {
            found.push(format!("slot {i}: state {state} unknown"));
        }
    }
    let lock = h.lock.load(Ordering::Relaxed);
    if lock != 0 && !os::alive((lock >> 32) as u32, lock as u32) {
        found.push(format!(
            "lock held by dead thread {}/{}",
            lock >> 32,
            lock as u32
        ));
    }
    found
}

/// Faults of the lock-protected words that their bounds alone reveal: a
/// serving count or queue length beyond the slots, a queue start or entry
/// naming no slot, a zero limit. The one implementation of these checks:
/// `gate check` reports them, and the gate rebuilds its state when it finds
/// one each time it takes its lock (`Gate::check_locked`).
pub(crate) fn bound_faults(h: &Header) -> Vec<String> {
    let l = |a: &AtomicU32| a.load(Ordering::Relaxed);
    let mut found = Vec::new();
    let (serving, len, start) = (l(&h.serving), l(&h.queue_len), l(&h.queue_start));
    if serving > SLOTS as u32 {
        found.push(format!("serving {serving} > {SLOTS} slots"));
    }
    if len > SLOTS as u32 {
        found.push(format!("queue_len {len} > {SLOTS}"));
    }
    if start >= SLOTS as u32 {
        found.push(format!("queue_start {start} >= {SLOTS}"));
    }
    if l(&h.limit) == 0 {
        found.push("limit 0".into());
    }
    for i in 0..(len as usize).min(SLOTS) {
        let q = l(&h.queue[(start as usize + i) % SLOTS]);
        if q >= SLOTS as u32 {
            found.push(format!("queue entry {i} names slot {q} >= {SLOTS}"));
        }
    }
    found
}

/// How often waiters run the online heal, system-wide (`heal_due`): a
/// waiter that has waited a reap interval heals at most this long after a
/// word was corrupted, whatever the admission bound (issue 22). One heal is
/// one lock hold and one scan of the slots (microseconds).
pub(crate) const HEAL_INTERVAL_NS: u64 = 10_000_000;

/// The reaper's try-lock held this long since the reaper last started is
/// held by nobody (a reaper scans the slots in milliseconds): `heal_locked`
/// resets it. Fixed, not the admission bound: a corrupted try-lock must
/// not stop reaping for a whole bound.
pub(crate) const REAPER_STALE_NS: u64 = 50_000_000;

/// Whether the caller should run the online heal now, claiming this
/// interval for itself: true when the last heal is `HEAL_INTERVAL_NS` old
/// or stamped in the future (a corrupted stamp), and this caller won the
/// stamp. Lock-free: one load when not due.
pub(crate) fn heal_due(h: &Header, now_ns: u64) -> bool {
    let last = h.last_heal_ns.load(Ordering::Relaxed);
    if last <= now_ns && now_ns - last < HEAL_INTERVAL_NS {
        return false;
    }
    h.last_heal_ns
        .compare_exchange(last, now_ns, Ordering::AcqRel, Ordering::Relaxed)
        .is_ok()
}

/// Online repair (issue 22), with the gate lock held: finds what is
/// provably inconsistent in the shared state and puts it right, so that a
/// corrupted word costs a waiter at most one heal interval
/// (`HEAL_INTERVAL_NS`), never an admission bound. Run by waiters
/// (`Gate::heal_if_due`), by collectors each window and by `repair`.
/// Returns what was wrong (empty: nothing touched).
///
/// Only what the slots contradict is reset; the slots are the source of
/// truth, and under the lock these invariants hold exactly (every change of
/// `serving`, `queue_*` and of a slot's admitted state is made under it; a
/// holder's unlocked RUNNING <-> HOLDING flips keep its unit counted):
/// * `serving` equals the slots RUNNING or HOLDING and not `taken`, and
///   every WAITING slot is in the queue: otherwise both are rebuilt from the
///   slots (`Gate::repair`). A recount admits exactly the units the slots
///   hold, so it cannot put more than the limit in flight beyond what was
///   already running; an over-count (units nobody holds) is what it frees.
/// * a slot state beyond HOLDING is no state: reset to IDLE (its owner, if
///   running, ends unadmitted; the recount no longer counts it).
/// * a unit on a slot with no owner (a zeroed owner pid) is counted by no
///   recount, and its owner would go on reusing it unseen: taken back, as
///   from an idle holder (`taken`); the owner puts its words back at its
///   next request through the lock.
/// * waiters the queue had lost get the units parked while it looked
///   empty (`Gate::reclaim_held`), as a first waiter would.
/// * `slot_hwm` below an owned slot hides that slot from every scan (its
///   unit could never be reaped): raised. Raising only widens scans.
/// * the reaper's try-lock held longer than `REAPER_STALE_NS` since the
///   reaper last started, or a last start in the future, stops all
///   reaping: reset.
///   The try-lock only saves duplicate work; reapers re-judge every slot
///   under the gate lock, so two at once are safe.
///
/// The limit itself is policy, not checked beyond `bound_faults` (a zero
/// limit becomes 1); whoever sets it sets it again.
pub(crate) fn heal_locked(gate: &Gate, now_ns: u64) -> Vec<String> {
    let h = gate.header();
    let mut found = bound_faults(h);
    if h.limit.load(Ordering::Relaxed) == 0 {
        h.limit.store(1, Ordering::Relaxed);
    }
    let mut owned_to = 0;
    for i in 0..SLOTS {
        let slot = gate.slot(i);
        if slot.owner_pid.load(Ordering::Acquire) == 0 {
            if matches!(slot.state.load(Ordering::Acquire), RUNNING | HOLDING)
                && slot.taken.load(Ordering::Relaxed) == 0
            {
                // a unit on a slot with no owner (a corrupted owner word):
                // counted by no one, so the owner would reuse it unseen;
                // taken back as from a holder (the owner, if any, settles
                // under the lock at its next request and puts its words back)
                found.push(format!("slot {i}: admitted with no owner"));
                slot.taken.store(1, Ordering::Release);
                slot.state.store(IDLE, Ordering::Release);
            }
            continue;
        }
        owned_to = i + 1;
        let state = slot.state.load(Ordering::Acquire);
        if state > HOLDING {
            found.push(format!("slot {i}: state {state} unknown"));
            slot.state.store(IDLE, Ordering::Release);
        }
    }
    let hwm = h.slot_hwm.load(Ordering::Acquire) as usize;
    if hwm < owned_to || hwm > SLOTS {
        found.push(format!(
            "slot_hwm {hwm}, slot {} is owned",
            owned_to.max(1) - 1
        ));
        h.slot_hwm.store(owned_to as u32, Ordering::Release);
    }
    let (serving, waiting) = gate.tally();
    let counted = h.serving.load(Ordering::Relaxed);
    if counted != serving {
        found.push(format!("serving {counted}, the slots hold {serving}"));
    }
    let start = h.queue_start.load(Ordering::Relaxed) as usize;
    let len = (h.queue_len.load(Ordering::Relaxed) as usize).min(SLOTS);
    let queued: Vec<u32> = (0..len)
        .map(|i| h.queue[(start + i) % SLOTS].load(Ordering::Relaxed))
        .collect();
    let lost = waiting.iter().filter(|(_, w)| !queued.contains(w)).count();
    if lost > 0 {
        found.push(format!("{lost} waiting slots missing from the queue"));
    }
    let mut last = h.last_reap_ns.load(Ordering::Relaxed);
    if last > now_ns {
        found.push(format!("last_reap_ns {last} in the future"));
        h.last_reap_ns.store(0, Ordering::Relaxed);
        last = 0;
    }
    if h.reaper_busy.load(Ordering::Acquire) != 0 && now_ns.saturating_sub(last) > REAPER_STALE_NS {
        found.push("reaper try-lock held by nobody".into());
        h.reaper_busy.store(0, Ordering::Release);
    }
    if !found.is_empty() {
        gate.repair();
        h.lock_repairs.fetch_add(1, Ordering::Relaxed);
        if h.queue_len.load(Ordering::Relaxed) != 0 {
            // waiters the queue had lost: units parked while it looked
            // empty are theirs, as for a first waiter
            gate.reclaim_held();
        }
    }
    found
}

/// Repairs the gate file `options` names in place: rewrites the fixed
/// header words (bypass clamped to 2^30) and their checksum, resets slot
/// states it does not know, then takes the lock (taking it over from a dead
/// or stuck owner) and rebuilds the serving count and the queue from the
/// slots. A file of another layout is refused, not rewritten. Returns what
/// was wrong before.
pub fn repair(options: &GateOptions) -> Result<Vec<String>, GateError> {
    let map = Mapping::open_existing_raw(&options.path())?;
    let found = problems(&map);
    let h = map.header();
    let magic = h.magic.load(Ordering::Acquire);
    if magic != MAGIC {
        return Err(GateError::Incompatible {
            path: options.path(),
            found: format!("layout magic {magic:#x}, this version needs {MAGIC:#x}"),
        });
    }
    let bypass = h.bypass_bytes.load(Ordering::Relaxed).min(MAX_BYPASS);
    h.layout_bytes.store(LAYOUT_BYTES as u64, Ordering::Relaxed);
    h.slots.store(SLOTS as u32, Ordering::Relaxed);
    h.bypass_bytes.store(bypass, Ordering::Relaxed);
    h.check.store(
        header_check(MAGIC, LAYOUT_BYTES as u64, SLOTS as u32, bypass),
        Ordering::Release,
    );
    let gate = Arc::new(Gate::from_mapping(map, options));
    gate.heal();
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layout_is_that_of_the_structs() {
        let l = layout();
        assert_eq!(l.header_bytes + SLOTS * l.slot_bytes, LAYOUT_BYTES);
        assert_eq!(l.header_bytes % 128, 0);
        // the checksum is the fifth word, right after the four it covers
        assert_eq!(std::mem::offset_of!(crate::shm::Header, check), 24);
        assert_eq!(std::mem::offset_of!(crate::shm::Header, lock), 64);
    }

    #[test]
    fn check_names_a_corrupted_word_and_repair_makes_the_gate_open_again() {
        let options = GateOptions {
            name: format!("unit-integrity-{}", std::process::id()),
            initial_limit: 2,
            ..GateOptions::default()
        };
        let path = options.path();
        let _ = std::fs::remove_file(&path);
        let gate = Gate::open(&options).expect("create");
        assert!(check(&options).expect("check").is_empty());
        gate.header().bypass_bytes.store(u32::MAX, Ordering::SeqCst);
        gate.header().queue_len.store(u32::MAX, Ordering::SeqCst);
        let found = check(&options).expect("check");
        assert!(
            found.iter().any(|p| p.contains("bypass_bytes")),
            "{found:?}"
        );
        assert!(found.iter().any(|p| p.contains("queue_len")), "{found:?}");
        assert!(matches!(
            Gate::open(&options),
            Err(GateError::Corrupt { .. })
        ));
        let fixed = repair(&options).expect("repair");
        assert_eq!(fixed, found);
        assert!(check(&options).expect("check").is_empty());
        let again = Gate::open(&options).expect("opens after repair");
        assert_eq!(again.snapshot().bypass_bytes, MAX_BYPASS);
        assert_eq!(again.snapshot().waiting, 0);
        drop((gate, again));
        let _ = std::fs::remove_file(path);
    }
}
