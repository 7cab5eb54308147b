//! The bounded single-producer FIFO of flush requests (thesis §6.3.1:
//! "a circular buffer sharing only head and tail indexes; one writer per
//! index makes it lock-free").
//!
//! The owning application thread is the only writer of `tail`. `head` is
//! written only by whoever holds the consumer flag: normally one flusher
//! thread, but when the queue is full or Ribbon falls back to
//! application-thread flushing the producer takes the flag itself and
//! drains its own queue. `head` advances only after the batch's flushes
//! were executed and fenced, so `head >= n` means "the first n requests
//! are in the persistence domain": that is what a fence waits for.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// One flush request: the byte range `addr..addr+len` (thesis Table 6.2,
/// `ribbon_flush(addr, len)`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Request {
    /// First byte to flush.
    pub addr: usize,
    /// Bytes to flush.
    pub len: usize,
}

/// Keeps the producer's and the consumer's index on separate cache lines
/// (no false sharing between the application thread and its flusher).
#[repr(align(128))]
#[derive(Default)]
pub(crate) struct Padded<T>(pub T);

/// A bounded SPSC ring of [`Request`]s with a consumer try-lock.
pub(crate) struct Queue {
    slots: Box<[UnsafeCell<Request>]>,
    mask: usize,
    /// Requests enqueued so far (written by the producer only).
    tail: Padded<AtomicUsize>,
    /// Requests executed and fenced so far (written under `consumer`).
    head: Padded<AtomicUsize>,
    /// Held by the one thread consuming right now.
    consumer: Padded<AtomicBool>,
}

// SAFETY: a slot is written by the single producer only while it is free
// (tail - head < capacity) and read by the single consumer (flag held)
// only after the producer's Release store of `tail` published it.
unsafe impl Sync for Queue {}
// SAFETY: as above; the queue owns plain data.
unsafe impl Send for Queue {}

impl Queue {
    /// A queue holding `capacity` requests (a power of two, checked by the
    /// caller).
    pub(crate) fn new(capacity: usize) -> Queue {
        debug_assert!(capacity.is_power_of_two());
        Queue {
            slots: (0..capacity)
                .map(|_| UnsafeCell::new(Request::default()))
                .collect(),
            mask: capacity - 1,
            tail: Padded(AtomicUsize::new(0)),
            head: Padded(AtomicUsize::new(0)),
            consumer: Padded(AtomicBool::new(false)),
        }
    }

    /// Requests enqueued so far.
    pub(crate) fn tail(&self) -> usize {
        self.tail.0.load(Ordering::Acquire)
    }

    /// Requests executed and fenced so far.
    pub(crate) fn head(&self) -> usize {
        self.head.0.load(Ordering::Acquire)
    }

    /// True when some request is waiting.
    pub(crate) fn has_work(&self) -> bool {
        self.head() != self.tail()
    }

    /// Enqueues `req`; false if the ring is full.
    ///
    /// # Safety
    /// Only the queue's single producer may call this.
    pub(crate) unsafe fn push(&self, req: Request) -> bool {
        let tail = self.tail.0.load(Ordering::Relaxed);
        if tail.wrapping_sub(self.head()) > self.mask {
            return false;
        }
        // SAFETY: the slot is free (checked above) and only we write it.
        unsafe { *self.slots[tail & self.mask].get() = req };
        self.tail.0.store(tail.wrapping_add(1), Ordering::Release);
        true
    }

    /// Takes the consumer flag and the waiting requests, or None if the
    /// queue is empty or another thread is consuming it.
    pub(crate) fn take(&self) -> Option<Batch<'_>> {
        if !self.has_work() {
            return None;
        }
        if self
            .consumer
            .0
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return None;
        }
        let start = self.head.0.load(Ordering::Relaxed);
        let end = self.tail();
        Some(Batch {
            queue: self,
            start,
            end,
        })
    }
}

/// The requests `start..end` of a queue, held by one consumer. Dropping
/// it without [`Batch::complete`] releases the flag and leaves the
/// requests queued.
pub(crate) struct Batch<'a> {
    queue: &'a Queue,
    start: usize,
    end: usize,
}

impl Batch<'_> {
    /// The batch's requests in program order.
    pub(crate) fn requests(&self) -> impl Iterator<Item = Request> + '_ {
        (self.start..self.end).map(move |i| {
            // SAFETY: i is in head..tail, published by the producer's
            // Release store of tail and not overwritten before head passes it.
            unsafe { *self.queue.slots[i & self.queue.mask].get() }
        })
    }

    /// Marks the batch executed and fenced: the caller must have run every
    /// flush and then a store fence. Frees the slots and wakes fences.
    pub(crate) fn complete(self) {
        self.queue.head.0.store(self.end, Ordering::Release);
        // Drop releases the flag.
    }

    /// Publishes the batch as done before its flushes ran: the deliberate
    /// bug that the fence-ordering test must catch.
    #[cfg(test)]
    pub(crate) fn publish_early(&self) {
        self.queue.head.0.store(self.end, Ordering::Release);
    }
}

impl Drop for Batch<'_> {
    fn drop(&mut self) {
        self.queue.consumer.0.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(addr: usize) -> Request {
        Request { addr, len: 1 }
    }

    #[test]
    fn fifo_order_and_bounded() {
        let q = Queue::new(4);
        for i in 0..4 {
            // SAFETY: single-threaded test: we are the only producer.
            assert!(unsafe { q.push(r(i)) });
        }
        // SAFETY: as above.
        assert!(
            !unsafe { q.push(r(9)) },
            "a full ring must refuse, never overwrite"
        );
        let b = q.take().unwrap();
        assert_eq!(
            b.requests().map(|x| x.addr).collect::<Vec<_>>(),
            vec![0, 1, 2, 3]
        );
        assert_eq!(q.head(), 0, "head moves only on complete");
        b.complete();
        assert_eq!(q.head(), 4);
        // SAFETY: as above.
        assert!(unsafe { q.push(r(4)) });
        assert_eq!(q.take().unwrap().requests().next(), Some(r(4)));
    }

    #[test]
    fn one_consumer_at_a_time() {
        let q = Queue::new(8);
        // SAFETY: single producer.
        unsafe { q.push(r(1)) };
        let b = q.take().unwrap();
        assert!(q.take().is_none(), "second consumer must be refused");
        drop(b);
        assert!(q.take().is_some(), "dropping a batch releases the flag");
    }

    #[test]
    fn spsc_across_threads_keeps_every_request_in_order() {
        let q = std::sync::Arc::new(Queue::new(16));
        let q2 = q.clone();
        let n = 20_000;
        let consumer = std::thread::spawn(move || {
            let mut seen = Vec::with_capacity(n);
            while seen.len() < n {
                if let Some(b) = q2.take() {
                    seen.extend(b.requests().map(|x| x.addr));
                    b.complete();
                } else {
                    std::thread::yield_now();
                }
            }
            seen
        });
        for i in 0..n {
            // SAFETY: this thread is the only producer.
            while !unsafe { q.push(r(i)) } {
                std::thread::yield_now();
            }
        }
        let seen = consumer.join().unwrap();
        assert_eq!(seen, (0..n).collect::<Vec<_>>());
    }
}
