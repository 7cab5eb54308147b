//! The PATS gate (PATS §IV) as the simulator's actuator: a counting
//! semaphore over PM requests with a FIFO wait queue.

use super::Engine;
use std::collections::VecDeque;

/// Requests below this size never wait at the PATS gate (PATS §IV).
pub const GATE_BYPASS_BYTES: u64 = 256;

/// The PATS gate as the simulator's actuator: a counting semaphore with a
/// FIFO (round-robin) wait queue, bypassed by requests below 256 B. It owns
/// its limit, its admissions and its queue; the engine only parks and
/// wakes the threads it names.
#[derive(Default)]
pub(super) struct Gate {
    limit: Option<u32>,
    admitted: u32,
    waiters: VecDeque<u32>,
    max_admitted_seen: u32,
}

impl Gate {
    /// Thread `tid` begins a gated PM request: admitted now (true), or
    /// queued behind the limit or earlier waiters (false).
    #[inline]
    pub(super) fn arrive(&mut self, tid: u32) -> bool {
        if let Some(limit) = self.limit {
            if self.admitted >= limit || !self.waiters.is_empty() {
                self.waiters.push_back(tid);
                return false;
            }
        }
        self.admit();
        true
    }

    fn admit(&mut self) {
        self.admitted += 1;
        // highest concurrency the gate itself allowed while a limit was in force
        if self.limit.is_some() {
            self.max_admitted_seen = self.max_admitted_seen.max(self.admitted);
        }
    }

    /// An admitted request ended.
    #[inline]
    pub(super) fn leave(&mut self) {
        self.admitted -= 1;
    }

    /// The next waiter admitted while under the limit (FIFO), if any.
    pub(super) fn next_admitted(&mut self) -> Option<u32> {
        if self.admitted >= self.limit.unwrap_or(u32::MAX) {
            return None;
        }
        let w = self.waiters.pop_front()?;
        self.admit();
        Some(w)
    }

    /// Sets the limit (`None`: unlimited; a limit is at least 1).
    pub(super) fn set_limit(&mut self, limit: Option<u32>) {
        self.limit = limit.map(|n| n.max(1));
    }

    /// The limit in force.
    pub(super) fn limit(&self) -> Option<u32> {
        self.limit
    }

    /// Requests admitted now.
    pub(super) fn admitted(&self) -> u32 {
        self.admitted
    }

    /// Threads waiting.
    pub(super) fn waiting(&self) -> u32 {
        self.waiters.len() as u32
    }

    /// Highest number of concurrently admitted requests, counted at
    /// admissions made while a limit was in force.
    pub(super) fn max_admitted_seen(&self) -> u32 {
        self.max_admitted_seen
    }
}

impl Engine {
    /// Admits waiting threads round-robin (FIFO) while under the limit.
    pub(super) fn gate_release(&mut self) {
        while let Some(w) = self.gate.next_admitted() {
            let th = &mut self.threads[w as usize];
            th.gate_held = true;
            th.gate_wait += self.now - th.gate_wait_start;
            self.wake_yielded(w);
        }
    }
}
