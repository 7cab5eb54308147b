//! Where the cost of handing a flush to another thread goes (issue 19,
//! "overhead when Ribbon is on but M = N"): each piece of the hand-off
//! measured alone on one 4 KiB block per persist, one application thread.
//!
//! * `local`: write the block, then `clwb` its 64 lines + `sfence` on the
//!   same thread, timing the flush part alone.
//! * `ring`: the same, but each request goes through a Ribbon ring on the
//!   same thread (push, take, execute, complete): the queue's own cost.
//! * `spin`: the request is handed to a helper thread that spins for it
//!   and flushes; the application spins for the answer. No futex, no
//!   sleeping: the cost of the cache-line transfers (the ring indexes and
//!   the 64 freshly written lines the helper's `clwb`s must snoop from the
//!   writer's cache), plus waiting for a core when the helper is
//!   descheduled. The helper's flush part is timed alone, so it can be set
//!   beside `local`'s.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use crate::queue::{Queue, Request};

/// The measured pieces, ns per 4 KiB persist.
#[derive(Clone, Copy, Debug, Default)]
pub struct Pieces {
    /// Whole persist on one thread (write + flush + fence).
    pub local_total: f64,
    /// Its flush + fence part.
    pub local_flush: f64,
    /// Whole persist with each request passing through a ring on the
    /// same thread.
    pub ring_total: f64,
    /// Whole persist handed to a spinning helper thread.
    pub spin_total: f64,
    /// The helper's flush + fence part (lines dirty in another core).
    pub spin_flush: f64,
}

impl Pieces {
    /// The per-field median of several rounds.
    pub fn median(rounds: &[Pieces]) -> Pieces {
        let m = |f: fn(&Pieces) -> f64| {
            let mut v: Vec<f64> = rounds.iter().map(f).collect();
            if v.is_empty() {
                return f64::NAN;
            }
            super::median(&mut v)
        };
        Pieces {
            local_total: m(|p| p.local_total),
            local_flush: m(|p| p.local_flush),
            ring_total: m(|p| p.ring_total),
            spin_total: m(|p| p.spin_total),
            spin_flush: m(|p| p.spin_flush),
        }
    }
}

/// Measures the pieces over `iters` persists cycling through `blocks`
/// blocks of `block` bytes at `base` (owned by the caller, unused by any
/// other thread meanwhile).
pub(crate) fn measure(base: usize, block: usize, blocks: usize, iters: usize) -> Pieces {
    let at = |i: usize| (base + (i % blocks) * block) as *mut u8;
    let mut p = Pieces::default();
    // local
    let mut flush_ns = 0u128;
    let t0 = Instant::now();
    for i in 0..iters {
        // SAFETY: the caller owns base..base+blocks*block.
        unsafe { std::ptr::write_bytes(at(i), i as u8, block) };
        let f = Instant::now();
        // SAFETY: as above.
        unsafe { memtamer_pmem::persist(at(i), block) };
        flush_ns += f.elapsed().as_nanos();
    }
    p.local_total = per(t0.elapsed().as_nanos(), iters);
    p.local_flush = per(flush_ns, iters);
    // ring on the same thread
    let q = Queue::new(1024);
    let t0 = Instant::now();
    for i in 0..iters {
        // SAFETY: as above.
        unsafe { std::ptr::write_bytes(at(i), i as u8, block) };
        let req = Request {
            addr: at(i) as usize,
            len: block,
        };
        // SAFETY: this thread is the ring's only producer.
        let _ = unsafe { q.push(req) };
        if let Some(b) = q.take() {
            for r in b.requests() {
                // SAFETY: as above.
                unsafe { memtamer_pmem::flush(r.addr as *const u8, r.len) };
            }
            memtamer_pmem::fence();
            b.complete();
        }
    }
    p.ring_total = per(t0.elapsed().as_nanos(), iters);
    // spinning helper
    let posted = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let quit = AtomicBool::new(false);
    let mut helper_ns = 0u128;
    let t0 = Instant::now();
    std::thread::scope(|s| {
        let helper = s.spawn(|| {
            let mut seen = 0usize;
            let mut ns = 0u128;
            let mut spins = 0u32;
            while !quit.load(Ordering::Relaxed) {
                let now = posted.load(Ordering::Acquire);
                if now == seen {
                    spin_or_yield(&mut spins);
                    continue;
                }
                spins = 0;
                let f = Instant::now();
                // SAFETY: the application wrote this block and waits for us.
                unsafe { memtamer_pmem::persist(at(now - 1), block) };
                ns += f.elapsed().as_nanos();
                seen = now;
                done.store(now, Ordering::Release);
            }
            ns
        });
        for i in 0..iters {
            // SAFETY: the helper is done with every earlier block.
            unsafe { std::ptr::write_bytes(at(i), i as u8, block) };
            posted.store(i + 1, Ordering::Release);
            let mut spins = 0u32;
            while done.load(Ordering::Acquire) != i + 1 {
                spin_or_yield(&mut spins);
            }
        }
        quit.store(true, Ordering::Relaxed);
        helper_ns = helper.join().unwrap_or(0);
    });
    p.spin_total = per(t0.elapsed().as_nanos(), iters);
    p.spin_flush = per(helper_ns, iters);
    p
}

/// Spins, then yields (both threads may share one core on a small machine).
fn spin_or_yield(spins: &mut u32) {
    *spins += 1;
    if *spins < 256 {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

fn per(ns: u128, iters: usize) -> f64 {
    ns as f64 / iters.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_piece_is_measured() {
        let mut buf = vec![0u8; 8 * 4096];
        let p = measure(buf.as_mut_ptr() as usize, 4096, 8, 50);
        for (what, v) in [
            ("local_total", p.local_total),
            ("local_flush", p.local_flush),
            ("ring_total", p.ring_total),
            ("spin_total", p.spin_total),
            ("spin_flush", p.spin_flush),
        ] {
            assert!(v > 0.0 && v.is_finite(), "{what} = {v}");
        }
        assert!(p.local_flush <= p.local_total && p.spin_flush <= p.spin_total);
    }
}
