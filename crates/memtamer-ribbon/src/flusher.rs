//! The flusher threads, the dispatcher (M > N) and the control thread
//! (thesis §6.3.1). Imperative shell around [`crate::controller`].

use std::sync::atomic::{fence, Ordering};
use std::time::{Duration, Instant};

use crate::bandwidth::{BandwidthSource, FLUSHED_BYTES};
use crate::comember::{Member, TickInput};
use crate::controller::{ControlConfig, Controller, Event};
use crate::proactive::{lines_to_flush, StoreSampler, POLL};
use crate::queue::{Batch, Request};
use crate::shared::{case_code, CorunRole, Helper, Shared, PARK};

/// Spin rounds, then yield rounds, before a flusher sleeps.
const IDLE_SPIN: u32 = 64;
const IDLE_YIELD: u32 = 96;
/// The dispatcher gives no worker fewer lines than this (a job's hand-off
/// costs about as much as flushing a few lines).
const MIN_JOB_LINES: usize = 8;

/// Flusher `id`'s loop: its job ring first, then its queues (or, as
/// flusher 0 with M > N, dispatching), until Ribbon stops and all is drained.
pub(crate) fn run(s: &Shared, id: usize) {
    let mut idle = 0u32;
    let mut pieces: Vec<Vec<Request>> = Vec::new();
    let mut round: Vec<Batch<'_>> = Vec::new();
    s.flusher_tids[id].store(crate::pin::current_tid(), Ordering::Relaxed);
    // the placement this flusher last pinned itself for
    let mut placed = u64::MAX;
    loop {
        if s.pin.is_some() {
            let e = s.pin_epoch.load(Ordering::Acquire);
            if e != placed {
                placed = e;
                s.repin(id);
            }
        }
        let mut did = false;
        if let Some(b) = s.jobs[id].take() {
            s.execute_job(b);
            did = true;
        }
        let m = s.m.load(Ordering::Acquire);
        if s.stopping.load(Ordering::Acquire) {
            for q in s.queues.iter() {
                if let Some(b) = q.take() {
                    s.execute(b);
                    did = true;
                }
            }
            if !did && !s.any_work(id) {
                return;
            }
            continue;
        }
        let active = id < m;
        if active {
            let n = s.active_len.load(Ordering::Acquire);
            if m > n && n > 0 {
                if id == 0 {
                    did |= dispatch(s, m, n, &mut pieces);
                }
            } else {
                // One round: take every served queue's batch, flush them
                // all, fence once, publish them all (docs/ribbon.md, "One
                // fence per round").
                for rank in ranks_of(id, m, n) {
                    let slot = s.active[rank].load(Ordering::Relaxed);
                    if let Some(b) = s.queues.get(slot).and_then(|q| q.take()) {
                        round.push(b);
                    }
                }
                if !round.is_empty() {
                    s.counters
                        .flusher_batches
                        .fetch_add(round.len() as u64, Ordering::Relaxed);
                    s.execute_round(&mut round);
                    did = true;
                }
            }
        }
        if did {
            idle = 0;
            continue;
        }
        idle += 1;
        if idle < IDLE_SPIN {
            std::hint::spin_loop();
        } else if idle < IDLE_YIELD {
            std::thread::yield_now();
        } else {
            sleep(s, id, active);
            idle = IDLE_SPIN;
        }
    }
}

/// The ranks (positions in the active-queue list) flusher `id` of `m`
/// serves among `n` queues: `id, id+m, id+2m, ...`, so each flusher gets
/// ⌊n/m⌋ or ⌊n/m⌋+1 queues and each queue exactly one flusher (thesis
/// §6.3.1: "each flusher serves at most ⌊N/M⌋ + 1 queues").
pub(crate) fn ranks_of(id: usize, m: usize, n: usize) -> impl Iterator<Item = usize> {
    (id..n).step_by(m.max(1))
}

/// Parks flusher `id` until woken or `PARK` passes. Only active flushers
/// count in `sleepers` (the producers' cue to wake someone); inactive ones
/// are woken by the control thread, the dispatcher or stop.
fn sleep(s: &Shared, id: usize, active: bool) {
    s.sleeping[id].store(true, Ordering::SeqCst);
    if active {
        s.sleepers.fetch_add(1, Ordering::SeqCst);
    }
    fence(Ordering::SeqCst);
    let timeout = if active { PARK } else { PARK * 20 };
    if !s.stopping.load(Ordering::SeqCst)
        && !(if active {
            s.any_work(id)
        } else {
            s.jobs[id].has_work()
        })
    {
        s.counters.parks.fetch_add(1, Ordering::Relaxed);
        std::thread::park_timeout(timeout);
    }
    s.sleeping[id].store(false, Ordering::SeqCst);
    if active {
        s.sleepers.fetch_sub(1, Ordering::SeqCst);
    }
}

/// M > N (thesis §6.3.1): flusher 0 takes each queue's batch, splits its
/// cache lines over flushers 0..m, waits for all, then publishes the
/// batch. Only flusher 0 pushes to job rings, so they stay single-producer.
fn dispatch(s: &Shared, m: usize, n: usize, pieces: &mut Vec<Vec<Request>>) -> bool {
    let mut did = false;
    let workers = m.min(s.max_flushers);
    pieces.resize_with(workers, Vec::new);
    for rank in 0..n {
        let slot = s.active[rank].load(Ordering::Relaxed);
        let Some(batch) = s.queues.get(slot).and_then(|q| q.take()) else {
            continue;
        };
        did = true;
        s.counters.flusher_batches.fetch_add(1, Ordering::Relaxed);
        let lines: usize = batch
            .requests()
            .map(|r| memtamer_pmem::lines_covered(r.addr, r.len))
            .sum();
        let share = lines.div_ceil(workers).max(MIN_JOB_LINES);
        for p in pieces.iter_mut() {
            p.clear();
        }
        split(batch.requests(), share, pieces);
        let mut targets = vec![None; workers];
        for (w, p) in pieces.iter().enumerate().skip(1) {
            for &r in p {
                // SAFETY: flusher 0 (this thread) is the only producer of job rings.
                if unsafe { s.jobs[w].push(r) } {
                    s.counters.dispatched_jobs.fetch_add(1, Ordering::Relaxed);
                    targets[w] = Some(s.jobs[w].tail());
                } else {
                    // ring full: do it here
                    // SAFETY: the producer promised the range is mapped.
                    unsafe { (s.exec.flush)(r.addr as *const u8, r.len) };
                }
            }
            if targets[w].is_some() {
                fence(Ordering::SeqCst);
                s.wake(w);
            }
        }
        for r in &pieces[0] {
            // SAFETY: as above.
            unsafe { (s.exec.flush)(r.addr as *const u8, r.len) };
        }
        (s.exec.fence)();
        for (w, t) in targets.iter().enumerate() {
            let Some(t) = *t else { continue };
            let mut spins = 0u32;
            while (t.wrapping_sub(s.jobs[w].head()) as isize) > 0 {
                spins += 1;
                if spins < 256 {
                    std::hint::spin_loop();
                } else if let Some(b) = s.jobs[w].take() {
                    // The worker is slow, descheduled, or gone (it may have
                    // exited on stop before these jobs arrived): run its
                    // jobs here. The ring's consumer flag keeps one consumer.
                    s.execute_job(b);
                } else {
                    s.wake(w);
                    std::thread::yield_now();
                }
            }
        }
        // Every line is flushed and fenced (by us, or by the worker that
        // published its ring's head after its own fence): the batch is done.
        let total: usize = batch
            .requests()
            .map(|r| memtamer_pmem::lines_covered(r.addr, r.len) * memtamer_pmem::CACHE_LINE)
            .sum();
        s.counters
            .flushed_bytes
            .fetch_add(total as u64, Ordering::Relaxed);
        batch.complete();
    }
    did
}

/// Cuts requests into pieces of at most `share` cache lines, cache-line
/// aligned, filling `out[0]`, then `out[1]`, ...
fn split(reqs: impl Iterator<Item = Request>, share: usize, out: &mut [Vec<Request>]) {
    const L: usize = memtamer_pmem::CACHE_LINE;
    let mut who = 0usize;
    let mut room = share;
    for r in reqs {
        let end = r.addr + r.len;
        let mut at = r.addr;
        while at < end {
            let line_end = (at & !(L - 1)) + L * room;
            let cut = line_end.min(end);
            out[who].push(Request {
                addr: at,
                len: cut - at,
            });
            room -= memtamer_pmem::lines_covered(at, cut - at).min(room);
            at = cut;
            if room == 0 {
                if who + 1 < out.len() {
                    who += 1;
                }
                room = share;
            }
        }
    }
}

/// The control thread (thesis §6.3.1): feeds the pure controller with the
/// bandwidth signal and applies its decision. With a co-running
/// registration (`member`, thesis §6.5.4) it publishes its counter and
/// applies the flusher count the coordinator assigned it instead; if the
/// registry turns out corrupt it drops the registration and runs its own
/// search from then on.
pub(crate) fn control(
    s: &Shared,
    cfg: ControlConfig,
    mut source: Option<Box<dyn BandwidthSource>>,
    proactive: bool,
    detect_idle: bool,
    mut member: Option<Member>,
) {
    let own = |s: &Shared| {
        s.total(crate::shared::Ev::FlushedBytes)
            + s.counters.proactive_bytes.load(Ordering::Relaxed)
    };
    let mut read = |s: &Shared| -> (u64, &'static str) {
        if let Some(src) = source.as_mut() {
            if let Some(b) = src.bytes() {
                return (b, src.name());
            }
        }
        (own(s), FLUSHED_BYTES)
    };
    // pinned apart from the flushers (placement::helper_cpus)
    let mut placed = u64::MAX;
    s.helper_placement(Helper::Control, &mut placed);
    let t0 = Instant::now();
    let (bytes, name) = read(s);
    if let Ok(mut n) = s.source_name.lock() {
        *n = name;
    }
    let mut ctl = Controller::new(cfg.clone(), Duration::ZERO, bytes, proactive);
    s.counters.searches.store(ctl.searches(), Ordering::Relaxed);
    // at least two readings per probe slice, so each slice closes close
    // to its length (controller::ControlConfig::slices)
    let tick = (cfg.probe / (2 * cfg.slices.max(2)))
        .clamp(Duration::from_millis(1), Duration::from_millis(50));
    // Hardware threads left by other processes, over windows of >= 100 ms.
    let cores = cfg.cores;
    let mut avail = cores as f64;
    let mut last = crate::idle::sample();
    let mut last_at = Instant::now();
    while !s.stopping.load(Ordering::Acquire) {
        std::thread::sleep(tick);
        s.helper_placement(Helper::Control, &mut placed);
        let (bytes, name) = read(s);
        if let Ok(mut n) = s.source_name.lock() {
            *n = name;
        }
        let mut cpu = None;
        if detect_idle && last_at.elapsed() >= Duration::from_millis(100) {
            let now = crate::idle::sample();
            if let (Some(a), Some(b)) = (last, now) {
                avail = crate::idle::available(cores, a, b).unwrap_or(avail);
            }
            cpu = now;
            last = now;
            last_at = Instant::now();
        }
        let apps = s.active_len.load(Ordering::Relaxed);
        if let Some(mb) = member.as_mut() {
            let input = TickInput {
                bytes: own(s),
                app_threads: apps,
                machine_bytes: (name != FLUSHED_BYTES).then_some(bytes),
                cpu,
            };
            match mb.tick(crate::coshm::now_ns(), &input) {
                Ok(got) => {
                    let role = match (got.is_some(), mb.is_coordinator()) {
                        (_, true) => CorunRole::Coordinator,
                        (true, false) => CorunRole::Member,
                        (false, false) => CorunRole::Waiting,
                    };
                    let c = &s.counters;
                    c.corun_role.store(role as usize, Ordering::Relaxed);
                    c.corun_total.store(mb.m_total(), Ordering::Relaxed);
                    if mb.is_coordinator() {
                        c.searches.store(mb.searches(), Ordering::Relaxed);
                    }
                    // no fresh assignment: keep the flusher count as it is
                    if let Some(a) = got {
                        apply(s, a.flushers, a.proactive && proactive);
                    }
                    continue;
                }
                Err(e) => {
                    eprintln!("memtamer ribbon: {e}");
                    if let Ok(mut err) = s.corun_error.lock() {
                        *err = Some(e.to_string());
                    }
                    s.counters
                        .corun_role
                        .store(CorunRole::Off as usize, Ordering::Relaxed);
                    member = None;
                    ctl = Controller::new(cfg.clone(), t0.elapsed(), bytes, proactive);
                }
            }
        }
        let d = ctl.observe(t0.elapsed(), bytes, apps, avail);
        if let Event::Decided { case } = d.event {
            s.counters
                .last_case
                .store(case_code(case), Ordering::Relaxed);
        }
        s.counters.searches.store(ctl.searches(), Ordering::Relaxed);
        if let (Ok(mut last), Some(rec)) = (s.last_search.lock(), ctl.last_search()) {
            if last.as_ref() != Some(rec) {
                *last = Some(rec.clone());
            }
        }
        apply(s, d.flushers, d.proactive);
    }
}

/// Applies a flusher count (clamped to the threads started) and the
/// proactive switch; the flushers re-pin when the count changed.
fn apply(s: &Shared, flushers: usize, proactive: bool) {
    let m = flushers.min(s.max_flushers);
    if s.m.swap(m, Ordering::AcqRel) != m {
        for i in 0..s.max_flushers {
            s.wake(i);
        }
        s.placement_changed();
    }
    s.proactive_on.store(proactive, Ordering::Relaxed);
}

/// The proactive thread's loop.
pub(crate) fn proactive(s: &Shared, mut sampler: Box<dyn StoreSampler>) {
    let mut buf = Vec::new();
    // pinned apart from the flushers (placement::helper_cpus)
    let mut placed = u64::MAX;
    while !s.stopping.load(Ordering::Acquire) {
        s.helper_placement(Helper::Proactive, &mut placed);
        buf.clear();
        sampler.drain(&mut buf);
        if !buf.is_empty() && s.proactive_on.load(Ordering::Relaxed) {
            // Holding the read lock: forbid_proactive waits for this round.
            if let Ok(allowed) = s.proactive_regions.read() {
                let lines = lines_to_flush(&buf, &allowed);
                for &l in &lines {
                    // SAFETY: the line lies in a range the application declared
                    // mapped until forbid_proactive, which waits for this lock.
                    unsafe { (s.exec.flush)(l as *const u8, 1) };
                }
                let bytes = (lines.len() * memtamer_pmem::CACHE_LINE) as u64;
                s.counters
                    .proactive_bytes
                    .fetch_add(bytes, Ordering::Relaxed);
            }
        }
        std::thread::sleep(POLL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_queue_has_one_flusher_and_none_serves_more_than_floor_plus_one() {
        for n in 0..40 {
            for m in 1..=n.max(1) {
                let mut owner = vec![0usize; n];
                for id in 0..m {
                    let mine: Vec<usize> = ranks_of(id, m, n).collect();
                    assert!(
                        mine.len() <= n / m + 1,
                        "n {n} m {m} id {id}: {}",
                        mine.len()
                    );
                    for r in mine {
                        owner[r] += 1;
                    }
                }
                assert!(owner.iter().all(|&c| c == 1), "n {n} m {m}: {owner:?}");
            }
        }
    }

    #[test]
    fn split_covers_every_byte_once_in_line_aligned_pieces() {
        let reqs = [
            Request {
                addr: 100,
                len: 1000,
            },
            Request {
                addr: 5000,
                len: 64,
            },
            Request {
                addr: 8192,
                len: 4096,
            },
        ];
        for workers in 1..6 {
            for share in [1, 3, 8, 20] {
                let mut out = vec![Vec::new(); workers];
                split(reqs.iter().copied(), share, &mut out);
                let mut bytes: Vec<usize> = out
                    .iter()
                    .flatten()
                    .flat_map(|r| r.addr..r.addr + r.len)
                    .collect();
                bytes.sort_unstable();
                let mut want: Vec<usize> =
                    reqs.iter().flat_map(|r| r.addr..r.addr + r.len).collect();
                want.sort_unstable();
                assert_eq!(bytes, want, "workers {workers} share {share}");
                for p in out.iter().take(workers - 1) {
                    let lines: usize = p
                        .iter()
                        .map(|r| memtamer_pmem::lines_covered(r.addr, r.len))
                        .sum();
                    assert!(
                        lines <= share,
                        "a piece list over its share: {lines} > {share}"
                    );
                }
            }
        }
    }
}
