//! Where one flush request runs (thesis §6.3.1 plus the runtime's M = N
//! short-cut; docs/ribbon.md "Inline when dedicated (M = N)"). Pure: the
//! runtime's `Producer::flush` and fence, and the simulator's Ribbon policy
//! (`memtamer-sim` `engine/flush.rs`), take the same decisions from this
//! module, so a simulated Ribbon does what the runtime does.

/// Where a flush request is executed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// On the calling thread because no flusher will take it: M = 0 (no
    /// idle hardware thread), the runtime is stopping, or the thread got no
    /// queue (`Stats::inline_requests`).
    Caller,
    /// On the calling thread because M = N: every queue would have a
    /// flusher of its own, so the hand-off buys no flushing concurrency
    /// (`Stats::dedicated_requests`). What the queue still holds from
    /// before runs first, on the caller, so program order holds.
    Dedicated,
    /// Into the thread's queue, for its flusher (M < N: the throttle; M > N:
    /// the dispatcher spreads it).
    Queue,
}

/// Whether each of the `queues` registered queues has a flusher of its own
/// (M = N, M > 0) and the caller may run its flushes itself
/// (`Config::inline_when_dedicated`; false forces the hand-off).
pub fn dedicated(inline_when_dedicated: bool, flushers: usize, queues: usize) -> bool {
    inline_when_dedicated && flushers > 0 && flushers == queues
}

/// Where a flush of a thread runs, with `flushers` (M) serving `queues`
/// (N) registered queues. `has_queue`: the thread holds a queue;
/// `stopping`: the runtime is shutting down (or was forked away).
pub fn route(
    inline_when_dedicated: bool,
    flushers: usize,
    queues: usize,
    has_queue: bool,
    stopping: bool,
) -> Route {
    if !has_queue || flushers == 0 || stopping {
        Route::Caller
    } else if dedicated(inline_when_dedicated, flushers, queues) {
        Route::Dedicated
    } else {
        Route::Queue
    }
}

/// Whether a fence whose batch no flusher has taken (after its spin rounds)
/// may run that batch itself: only with exactly one flusher per queue
/// (M = N), where at most N threads flush either way. Never with M < N (it
/// would bypass the throttle) nor M > N (one thread cannot match the
/// dispatcher's spread). Independent of `inline_when_dedicated`: with the
/// hand-off forced this is what bounds a fence's wait for a descheduled
/// flusher (docs/ribbon.md "Helping at M = N").
pub fn fence_may_help(flushers: usize, queues: usize) -> bool {
    flushers > 0 && flushers == queues
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_m_equal_to_n_runs_on_the_caller_when_dedicated_mode_is_on() {
        for n in 1..=8 {
            for m in 0..=10 {
                let r = route(true, m, n, true, false);
                let want = if m == 0 {
                    Route::Caller
                } else if m == n {
                    Route::Dedicated
                } else {
                    Route::Queue
                };
                assert_eq!(r, want, "M {m} N {n}");
                assert_eq!(dedicated(true, m, n), m == n && m > 0, "M {m} N {n}");
            }
        }
    }

    #[test]
    fn the_forced_hand_off_queues_at_m_equal_to_n() {
        for n in 1..=8 {
            assert_eq!(route(false, n, n, true, false), Route::Queue, "N {n}");
            assert!(!dedicated(false, n, n));
        }
        assert_eq!(route(false, 0, 4, true, false), Route::Caller);
    }

    #[test]
    fn no_queue_or_stopping_runs_on_the_caller_whatever_m() {
        for inline in [true, false] {
            for m in 0..=6 {
                assert_eq!(route(inline, m, 4, false, false), Route::Caller);
                assert_eq!(route(inline, m, 4, true, true), Route::Caller);
            }
        }
    }

    #[test]
    fn a_fence_helps_only_at_m_equal_to_n() {
        for n in 1..=8 {
            for m in 0..=10 {
                assert_eq!(fence_may_help(m, n), m == n && m > 0, "M {m} N {n}");
            }
        }
        // no queue registered, no flusher: nothing to help (the M = 0
        // path drains instead)
        assert!(!fence_may_help(0, 0));
    }
}
