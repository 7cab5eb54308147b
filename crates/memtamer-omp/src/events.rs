//! Per-thread event buffers between the OMPT callbacks and the
//! [`Tracker`], so that a callback does not take the tracker's lock.
//!
//! Why: every callback (task create, dependences, dependence edge, task
//! schedule) used to take one `Mutex<Tracker>`. At 16 threads the tool
//! cost 5% wall time overall and 20-28% on cg and fft (docs/tahoe.md "Tool
//! overhead at 16 threads"): the threads serialise on that lock, and a
//! contended futex costs microseconds per task. Now each thread appends its
//! events to its own buffer (a lock nobody else takes, except a drainer),
//! stamped with a global sequence number, and the events reach the tracker
//! in sequence order in batches ([`Shared::drained`]): when a buffer fills,
//! when a callback needs the tracker's answer (placement on: the task
//! starting must see every earlier event, so the buffers are drained first,
//! then the planner decides), and at finalize.
//!
//! Order: a thread takes its sequence number while holding its own
//! buffer's lock and appends before releasing it, and a drainer holds the
//! tracker's lock and then every buffer's lock at once while it takes their
//! contents. So a drain takes every number allocated so far (a contiguous
//! run after the previous drain's), and drains are serialised by the
//! tracker's lock: the tracker sees the events in one global order, a
//! linearisation of the callbacks just like the order in which they used
//! to win the lock. The tracker itself is unchanged; this module is the
//! shell around it (the buffer, the merge and the replay are pure and
//! unit-tested, [`Shared`] adds the locks).

use crate::tracker::Tracker;
use memtamer_tahoe::counters::TaskCounts;
use memtamer_tahoe::task::Access;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Events a buffer holds before its thread drains every buffer into the
/// tracker (about 20 KiB of events per thread).
pub const DEFAULT_CAP: usize = 256;

/// A thread whose buffer is this many times [`Shared::cap`] long waits for
/// the tracker's lock to drain, rather than skip the drain because another
/// thread holds it: a bound on the memory a busy tracker lets pile up.
const BLOCK_FACTOR: usize = 16;

/// One `ompt_callback_task_schedule`, as the tracker applies it with
/// placement off: the prior task's counter interval, its completion, the
/// next task's begin.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sched {
    /// The task switched away from (0: an implicit task).
    pub prior: u64,
    /// The prior task completed (or was cancelled).
    pub done: bool,
    /// The task switched to (0: an implicit task).
    pub next: u64,
    /// The callback's clock, ns since the tool started.
    pub now: u64,
    /// The prior task's counter interval on this thread, if read.
    pub counted: Option<TaskCounts>,
    /// A finished representative's sampled per-page counts.
    pub samples: Option<Vec<(u64, f64)>>,
}

/// One callback's worth of tracker input.
#[derive(Clone, Debug, PartialEq)]
enum Event {
    Create {
        id: u64,
        code: u64,
    },
    /// Ranges into the buffer's `exact` and `deps` arenas (no vector per
    /// callback).
    Deps {
        id: u64,
        exact: Range<u32>,
        deps: Range<u32>,
    },
    Edge {
        src: u64,
        sink: u64,
    },
    /// A switch without counters or samples (the common case), kept
    /// small: an event is 40 bytes, not the 100 of a whole [`Sched`].
    Switch {
        prior: u64,
        next: u64,
        now: u64,
        done: bool,
    },
    Sched(Box<Sched>),
}

/// One thread's events in the order it produced them, each with its
/// global sequence number (increasing within a buffer).
#[derive(Debug, Default)]
pub struct EventBuf {
    seqs: Vec<u64>,
    evs: Vec<Event>,
    /// The program's own dependence lengths ([`crate::deps`]).
    exact: Vec<(u64, u64)>,
    deps: Vec<(u64, Access)>,
}

fn arena_range(start: usize, end: usize) -> Range<u32> {
    // a buffer is drained long before 4 G items
    start as u32..end as u32
}

impl EventBuf {
    /// An empty buffer with room for `n` events.
    pub fn with_capacity(n: usize) -> Self {
        EventBuf {
            seqs: Vec::with_capacity(n),
            evs: Vec::with_capacity(n),
            exact: Vec::new(),
            deps: Vec::with_capacity(2 * n),
        }
    }

    /// Empties the buffer, keeping its storage (the locked path's
    /// scratch, [`Shared::apply_now`]).
    pub fn clear(&mut self) {
        self.seqs.clear();
        self.evs.clear();
        self.exact.clear();
        self.deps.clear();
    }

    /// Events held.
    pub fn len(&self) -> usize {
        self.evs.len()
    }

    /// Nothing held.
    pub fn is_empty(&self) -> bool {
        self.evs.is_empty()
    }

    /// The sequence numbers held, in order.
    pub fn seqs(&self) -> &[u64] {
        &self.seqs
    }

    /// `ompt_callback_task_create` of explicit task `id`.
    pub fn create(&mut self, seq: u64, id: u64, code: u64) {
        self.push(seq, Event::Create { id, code });
    }

    /// `ompt_callback_dependences` of `id`, with the lengths the creation
    /// call noted (`exact`, applied first, as [`Tracker::exact_lengths`]
    /// then [`Tracker::dependences_iter`]).
    pub fn dependences(
        &mut self,
        seq: u64,
        id: u64,
        exact: &[(u64, u64)],
        deps: impl Iterator<Item = (u64, Access)>,
    ) {
        let e0 = self.exact.len();
        self.exact.extend_from_slice(exact);
        let d0 = self.deps.len();
        self.deps.extend(deps);
        let ev = Event::Deps {
            id,
            exact: arena_range(e0, self.exact.len()),
            deps: arena_range(d0, self.deps.len()),
        };
        self.push(seq, ev);
    }

    /// `ompt_callback_task_dependence`: `sink` waits for `src`.
    pub fn edge(&mut self, seq: u64, src: u64, sink: u64) {
        self.push(seq, Event::Edge { src, sink });
    }

    /// `ompt_callback_task_schedule` with placement off.
    pub fn sched(&mut self, seq: u64, s: Sched) {
        let ev = match (&s.counted, &s.samples) {
            (None, None) => Event::Switch {
                prior: s.prior,
                next: s.next,
                now: s.now,
                done: s.done,
            },
            _ => Event::Sched(Box::new(s)),
        };
        self.push(seq, ev);
    }

    fn push(&mut self, seq: u64, ev: Event) {
        self.seqs.push(seq);
        self.evs.push(ev);
    }

    /// Applies event `i` to `tr`, exactly as the callback applied it
    /// under the tracker's lock.
    fn apply(&self, i: usize, tr: &mut Tracker) {
        match &self.evs[i] {
            Event::Create { id, code } => tr.create(*id, *code),
            Event::Deps { id, exact, deps } => {
                let ex = &self.exact[exact.start as usize..exact.end as usize];
                if !ex.is_empty() {
                    tr.exact_lengths(ex);
                }
                let d = &self.deps[deps.start as usize..deps.end as usize];
                tr.dependences_iter(*id, d.iter().copied());
            }
            Event::Edge { src, sink } => tr.edge(*src, *sink),
            &Event::Switch {
                prior,
                next,
                now,
                done,
            } => apply_sched(
                tr,
                &Sched {
                    prior,
                    done,
                    next,
                    now,
                    counted: None,
                    samples: None,
                },
            ),
            Event::Sched(s) => apply_sched(tr, s),
        }
    }
}

/// A task switch with placement off: the prior task's counters charged,
/// its completion, the next task's begin (representatives picked, no
/// decision).
pub fn apply_sched(tr: &mut Tracker, s: &Sched) {
    apply_sched_with(tr, s, |tr, next, now| {
        tr.begin(next, now, 1, false);
    });
}

/// The steps of a task switch, with `begin` (given the tracker, the next
/// task and the clock) in place of the placement-off begin: the shell
/// decides there with placement on, after a drain ([`Shared::drained`]).
/// None when the switch starts no explicit task.
pub fn apply_sched_with<R>(
    tr: &mut Tracker,
    s: &Sched,
    begin: impl FnOnce(&mut Tracker, u64, u64) -> R,
) -> Option<R> {
    if let Some(d) = &s.counted {
        tr.charge(s.prior, d);
    }
    if s.done {
        tr.complete_with(s.prior, s.now, s.samples.as_deref());
    }
    (s.next != 0).then(|| begin(tr, s.next, s.now))
}

/// Calls `f(buffer, index)` for the events of `bufs` in global sequence
/// order: a k-way merge of runs that are each in order, taking from the
/// buffer with the smallest next number every event below the other
/// buffers' next numbers (one thread's run) at once.
fn for_each_merged(bufs: &[EventBuf], mut f: impl FnMut(usize, usize)) {
    if let [one] = bufs {
        (0..one.len()).for_each(|i| f(0, i));
        return;
    }
    let mut at = vec![0usize; bufs.len()];
    loop {
        // the smallest next number and the second smallest
        let mut best: Option<(usize, u64)> = None;
        let mut second = u64::MAX;
        for (b, buf) in bufs.iter().enumerate() {
            let Some(&s) = buf.seqs.get(at[b]) else {
                continue;
            };
            match best {
                Some((_, bs)) if bs <= s => second = second.min(s),
                _ => {
                    if let Some((_, bs)) = best {
                        second = second.min(bs);
                    }
                    best = Some((b, s));
                }
            }
        }
        let Some((b, _)) = best else { break };
        let buf = &bufs[b];
        while at[b] < buf.len() && buf.seqs[at[b]] < second {
            f(b, at[b]);
            at[b] += 1;
        }
    }
}

/// The events of `bufs` in global sequence order, as (buffer, index)
/// pairs.
pub fn merge_order(bufs: &[EventBuf]) -> Vec<(usize, usize)> {
    let mut out = Vec::with_capacity(bufs.iter().map(EventBuf::len).sum());
    for_each_merged(bufs, |b, i| out.push((b, i)));
    out
}

/// Applies every event of `bufs` to `tr` in global sequence order.
pub fn apply_merged(tr: &mut Tracker, bufs: &[EventBuf]) {
    for_each_merged(bufs, |b, i| bufs[b].apply(i, tr));
}

/// A thread's buffer, shared with the drainers through the registry.
pub type Handle = Arc<Mutex<EventBuf>>;

fn relock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The tracker behind its lock, the registry of every thread's buffer and
/// the sequence counter.
#[derive(Debug)]
pub struct Shared {
    track: Mutex<Tracker>,
    /// The locked path's one-event buffer ([`Shared::apply_now`]), taken
    /// only while `track` is held, so never contended.
    scratch: Mutex<EventBuf>,
    bufs: Mutex<Vec<Handle>>,
    seq: AtomicU64,
    cap: usize,
    drains: AtomicU64,
}

impl Shared {
    /// `tr` fed through per-thread buffers of `cap` events (at least 1).
    pub fn new(tr: Tracker, cap: usize) -> Self {
        Shared {
            track: Mutex::new(tr),
            scratch: Mutex::new(EventBuf::default()),
            bufs: Mutex::new(Vec::new()),
            seq: AtomicU64::new(0),
            cap: cap.max(1),
            drains: AtomicU64::new(0),
        }
    }

    /// A new buffer, registered: one per thread (the shell keeps it in a
    /// thread-local). The registry keeps it too, so a thread that exits
    /// leaves its events for the next drain.
    pub fn handle(&self) -> Handle {
        let h = Handle::default();
        relock(&self.bufs).push(h.clone());
        h
    }

    /// The locked path: applies one event at once under the tracker's lock,
    /// after draining whatever is buffered (nothing, when every event takes
    /// this path). No allocation once the scratch buffer has grown. Why a
    /// second path: on a few CPUs the lock is rarely contended and cheaper
    /// than a buffered event (docs/tahoe.md, "Per-thread event buffers
    /// instead of the tracker lock").
    pub fn apply_now(&self, f: impl FnOnce(&mut EventBuf, u64)) {
        let mut tr = self.drained();
        let mut one = relock(&self.scratch);
        one.clear();
        f(&mut one, 0);
        apply_merged(&mut tr, std::slice::from_ref(&*one));
        one.clear();
    }

    /// Drains that applied at least one event.
    pub fn drains(&self) -> u64 {
        self.drains.load(Ordering::Relaxed)
    }

    /// Buffers registered (a thread that exited is dropped from the
    /// registry once its events were drained).
    pub fn buffers(&self) -> usize {
        relock(&self.bufs).len()
    }

    /// The tracker without draining (a reader that may see it a batch
    /// behind, e.g. the sampling ticker).
    pub fn lock(&self) -> MutexGuard<'_, Tracker> {
        relock(&self.track)
    }

    /// The tracker after every event recorded so far was applied in
    /// sequence order. Holding the guard keeps later events in the
    /// buffers, so whatever the caller applies now comes between the
    /// drained events and any later one.
    pub fn drained(&self) -> MutexGuard<'_, Tracker> {
        let mut tr = relock(&self.track);
        self.drain_into(&mut tr);
        tr
    }

    /// Takes every buffer's contents while holding all their locks (so
    /// every allocated sequence number is among them), then applies them
    /// with only the tracker's lock held.
    fn drain_into(&self, tr: &mut Tracker) {
        let taken: Vec<EventBuf> = {
            let mut reg = relock(&self.bufs);
            let mut guards: Vec<MutexGuard<'_, EventBuf>> = reg.iter().map(|h| relock(h)).collect();
            // fresh storage only for the buffers that held events (a drain
            // at every begin finds most of them empty), sized so a thread's
            // next events do not grow it from empty
            let taken = guards
                .iter_mut()
                .filter(|g| !g.is_empty())
                .map(|g| std::mem::replace(&mut **g, EventBuf::with_capacity(self.cap)))
                .collect();
            drop(guards);
            // a thread that exited (only the registry holds its buffer),
            // now empty
            reg.retain(|h| Arc::strong_count(h) > 1);
            taken
        };
        if !taken.is_empty() {
            self.drains.fetch_add(1, Ordering::Relaxed);
            apply_merged(tr, &taken);
        }
    }

    /// Records one event in `h` (the calling thread's buffer) with the
    /// next sequence number, taken under the buffer's lock; a full buffer
    /// then drains every buffer if the tracker is free (or, once it is
    /// [`BLOCK_FACTOR`] times full, waits for it). `None` (a thread whose
    /// thread-locals are gone): the event is applied at once, after a
    /// drain, as it was before buffering.
    pub fn record(&self, h: Option<&Handle>, f: impl FnOnce(&mut EventBuf, u64)) {
        let Some(h) = h else {
            self.apply_now(f);
            return;
        };
        let len = {
            let mut b = relock(h);
            let seq = self.seq.fetch_add(1, Ordering::AcqRel);
            f(&mut b, seq);
            b.len()
        };
        if len < self.cap {
            return;
        }
        let tr = if len >= self.cap.saturating_mul(BLOCK_FACTOR) {
            Some(relock(&self.track))
        } else {
            match self.track.try_lock() {
                Ok(g) => Some(g),
                Err(std::sync::TryLockError::Poisoned(e)) => Some(e.into_inner()),
                Err(std::sync::TryLockError::WouldBlock) => None,
            }
        };
        if let Some(mut tr) = tr {
            self.drain_into(&mut tr);
        }
    }
}

#[cfg(test)]
#[path = "events_tests.rs"]
mod tests;
