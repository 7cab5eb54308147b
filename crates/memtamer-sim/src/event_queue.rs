//! The engine's pending events, popped in ascending key order (equal keys in
//! insertion order).
//!
//! A simulation keeps a few dozen events pending, most of them scheduled a
//! constant delay ahead (a request crossing the mesh to its memory
//! controller, a completion on its way back), so that events of such a kind
//! arrive mostly in key order. Those wait in FIFO lanes, one per kind, which
//! an event joins at the back in constant time while its key is not below
//! the back's. Every other event, and any that would break its lane's order,
//! goes to a vector sorted by descending key. The next event is the first of
//! the lanes' fronts and the vector's end.
//!
//! Before the lanes every event went into the sorted vector, and finding
//! its place and shifting the later ones up was about a fifth of the
//! engine's work.
//!
//! An event that would go more than a few places from the vector's end
//! waits in a binary heap instead: tiered runs whose slow tier backs up
//! keep thousands of events pending, and walking past them took nearly all
//! of such a run's time. Every part pops in the same order (by key, then
//! by insertion), so splitting them never changes which event comes next.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Events from the end of the sorted vector an insertion may walk past one
/// by one; an event that would go further waits in the far heap instead.
const NEAR: usize = 8;

/// Number of FIFO lanes.
pub(crate) const LANES: usize = 2;

/// A pending event.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ev<K> {
    /// Pop order: the smallest first.
    pub key: u64,
    /// Orders events whose keys are equal (the engine's keys keep only the
    /// low bits of its sequence number, these are the high ones) when they
    /// wait in different parts of the queue; within a part, equal keys pop
    /// in insertion order anyway.
    pub seq_hi: u32,
    pub kind: K,
}

impl<K> Ev<K> {
    /// Position in the pop order: by key, then by insertion.
    fn rank(&self) -> u128 {
        ((self.key as u128) << 32) | self.seq_hi as u128
    }
}

/// A FIFO of events in key order: a ring buffer whose capacity is a power
/// of two.
struct Lane<K> {
    ring: Vec<Ev<K>>,
    head: usize,
    len: usize,
    /// Key of the first event; `u64::MAX` when empty.
    front_key: u64,
    /// Key of the last event.
    back_key: u64,
}

impl<K: Copy> Lane<K> {
    fn new() -> Lane<K> {
        Lane {
            ring: Vec::new(),
            head: 0,
            len: 0,
            front_key: u64::MAX,
            back_key: 0,
        }
    }

    /// Whether `key` can join at the back without breaking the key order.
    #[inline(always)]
    fn accepts(&self, key: u64) -> bool {
        self.len == 0 || self.back_key <= key
    }

    #[inline(always)]
    fn push_back(&mut self, ev: Ev<K>) {
        if self.len == self.ring.len() {
            self.grow(ev);
        }
        let mask = self.ring.len() - 1;
        self.ring[(self.head + self.len) & mask] = ev;
        if self.len == 0 {
            self.front_key = ev.key;
        }
        self.len += 1;
        self.back_key = ev.key;
    }

    /// Doubles the ring (`fill` fills the new slots).
    #[cold]
    #[inline(never)]
    fn grow(&mut self, fill: Ev<K>) {
        let mut ring = vec![fill; (2 * self.ring.len()).max(16)];
        for (i, slot) in ring.iter_mut().enumerate().take(self.len) {
            *slot = self.ring[(self.head + i) & (self.ring.len() - 1)];
        }
        self.ring = ring;
        self.head = 0;
    }

    /// The first event, if any.
    fn front(&self) -> Option<&Ev<K>> {
        (self.len > 0).then(|| &self.ring[self.head])
    }

    /// Removes the first event (the lane must not be empty).
    #[inline(always)]
    fn pop_front(&mut self) -> Ev<K> {
        let mask = self.ring.len() - 1;
        let ev = self.ring[self.head];
        self.head = (self.head + 1) & mask;
        self.len -= 1;
        self.front_key = if self.len > 0 {
            self.ring[self.head].key
        } else {
            u64::MAX
        };
        ev
    }
}

/// The pending events (see the module documentation).
pub(crate) struct EventQueue<K> {
    lanes: [Lane<K>; LANES],
    /// Events outside the lanes, sorted by descending key.
    sorted: Vec<Ev<K>>,
    /// Key of `sorted`'s last event; `u64::MAX` when empty.
    sorted_key: u64,
    /// Events outside the lanes that would have gone more than [`NEAR`]
    /// places from `sorted`'s end: a binary heap by pop order.
    far: BinaryHeap<Far<K>>,
    /// Key of `far`'s first event; `u64::MAX` when empty.
    far_key: u64,
}

/// An event in the far heap, ordered so that the heap's top is the first
/// to pop ([`Ev::rank`], smallest first).
struct Far<K>(Ev<K>);

impl<K> PartialEq for Far<K> {
    fn eq(&self, o: &Far<K>) -> bool {
        self.0.rank() == o.0.rank()
    }
}

impl<K> Eq for Far<K> {}

impl<K> PartialOrd for Far<K> {
    fn partial_cmp(&self, o: &Far<K>) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

impl<K> Ord for Far<K> {
    fn cmp(&self, o: &Far<K>) -> Ordering {
        o.0.rank().cmp(&self.0.rank())
    }
}

impl<K: Copy> Default for EventQueue<K> {
    fn default() -> EventQueue<K> {
        EventQueue {
            lanes: [Lane::new(), Lane::new()],
            sorted: Vec::new(),
            sorted_key: u64::MAX,
            far: BinaryHeap::new(),
            far_key: u64::MAX,
        }
    }
}

impl<K: Copy> EventQueue<K> {
    /// Adds `ev`, into `lane` if its order allows; it pops after every
    /// event with a smaller key, and after those with an equal key and a
    /// smaller or equal `seq_hi`.
    #[inline(always)]
    pub(crate) fn push(&mut self, ev: Ev<K>, lane: Option<usize>) {
        match lane {
            Some(l) if self.lanes[l].accepts(ev.key) => self.lanes[l].push_back(ev),
            _ => self.insert_sorted(ev),
        }
    }

    /// Inserts `ev` into `sorted` after every event with a greater key and
    /// before those with a smaller or equal one.
    fn insert_sorted(&mut self, ev: Ev<K>) {
        // The events outside the lanes are mostly scheduled a few places
        // from the end: shifting those up one by one beats a binary search
        // and a memmove call.
        // When thousands of events wait (tiered runs whose slow tier backs
        // up, so that requests and completions miss the lanes), that walk
        // took nearly all of the engine's time: an event that would go
        // more than NEAR places from the end waits in the far heap instead
        // (O(log n)). Each part pops in rank order and `pop` takes the
        // smallest front, so the order of events is unchanged.
        let n = self.sorted.len();
        if n >= NEAR && self.sorted[n - NEAR].key <= ev.key {
            self.far.push(Far(ev));
            self.far_key = self.far_key.min(ev.key);
            return;
        }
        let mut i = n;
        self.sorted.push(ev);
        let events = self.sorted.as_mut_slice();
        while i > 0 && events[i - 1].key <= ev.key {
            events[i] = events[i - 1];
            i -= 1;
        }
        events[i] = ev;
        self.sorted_key = self.sorted[self.sorted.len() - 1].key;
    }

    /// Removes the last event of `sorted`.
    #[inline(always)]
    fn pop_sorted(&mut self) -> Option<Ev<K>> {
        let ev = self.sorted.pop();
        self.sorted_key = self.sorted.last().map_or(u64::MAX, |e| e.key);
        ev
    }

    /// Removes the first event of `far`.
    fn pop_far(&mut self) -> Option<Ev<K>> {
        let ev = self.far.pop().map(|f| f.0);
        self.far_key = self.far.peek().map_or(u64::MAX, |f| f.0.key);
        ev
    }

    /// Removes and returns the next event.
    #[inline(always)]
    pub(crate) fn pop(&mut self) -> Option<Ev<K>> {
        let [a, b] = [self.lanes[0].front_key, self.lanes[1].front_key];
        let (c, d) = (self.sorted_key, self.far_key);
        let other = c.min(d);
        if a < b && a < other {
            Some(self.lanes[0].pop_front())
        } else if b < a && b < other {
            Some(self.lanes[1].pop_front())
        } else if c < a && c < b && c < d {
            self.pop_sorted()
        } else if d < a && d < b && d < c {
            self.pop_far()
        } else {
            self.pop_tied()
        }
    }

    /// [`EventQueue::pop`] when the first keys tie (or all parts are empty).
    #[cold]
    fn pop_tied(&mut self) -> Option<Ev<K>> {
        let a = self.lanes[0].front().map_or(u128::MAX, Ev::rank);
        let b = self.lanes[1].front().map_or(u128::MAX, Ev::rank);
        let other = self.sorted.last().map_or(u128::MAX, Ev::rank);
        let far = self.far.peek().map_or(u128::MAX, |f| f.0.rank());
        let first = a.min(b).min(other).min(far);
        if first == u128::MAX {
            None
        } else if first == a {
            Some(self.lanes[0].pop_front())
        } else if first == b {
            Some(self.lanes[1].pop_front())
        } else if first == other {
            self.pop_sorted()
        } else {
            self.pop_far()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    /// The queue pops by key, equal keys in insertion order, whether events
    /// wait in a lane or in the sorted vector. Keys keep only 2 bits of the
    /// sequence number here, so that equal keys are frequent.
    #[test]
    fn pops_in_key_then_insertion_order() {
        check_order(51, 30_000);
    }

    /// Hundreds of events pending (pushes outnumber pops until the end), so
    /// that insertions far from the sorted vector's end take the binary
    /// search: same order.
    #[test]
    fn many_pending_events_keep_the_order() {
        check_order(80, 6_000);
    }

    /// Pushes with probability `push_pct`% for `steps` steps, then drains;
    /// every pop must be the smallest (key, sequence number) pending.
    fn check_order(push_pct: u64, steps: usize) {
        for seed in 0..10 {
            let mut rng = Rng::new(seed, 7);
            let mut q = EventQueue::default();
            // (key, sequence number)
            let mut pending: Vec<(u64, u64)> = Vec::new();
            let (mut now, mut seq) = (0u64, 0u64);
            for step in 0..2 * steps {
                if step < steps && rng.below(100) < push_pct {
                    seq += 1;
                    let t = match rng.below(10) {
                        0 => now,
                        1 => now + rng.below(400),
                        _ => now + 30 + rng.below(2),
                    };
                    let key = (t << 2) | (seq & 3);
                    let ev = Ev {
                        key,
                        seq_hi: (seq >> 2) as u32,
                        kind: seq,
                    };
                    let lane = match rng.below(3) {
                        0 => None,
                        l => Some(l as usize - 1),
                    };
                    q.push(ev, lane);
                    pending.push((key, seq));
                } else {
                    let first = (0..pending.len()).min_by_key(|&i| pending[i]);
                    let want = first.map(|i| pending.remove(i));
                    let got = q.pop().map(|e| (e.key, e.kind));
                    assert_eq!(got, want, "seed {seed}");
                    if let Some((key, _)) = got {
                        now = now.max(key >> 2);
                    }
                }
            }
        }
    }
}
