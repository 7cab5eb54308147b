#![warn(missing_docs)]
//! Ribbon (thesis ch. 6; digest `shared/design/thesis-archtm-ribbon.md` §3):
//! faster cache-line flushing by decoupling *who* flushes from the
//! application. Application threads enqueue flush requests into private
//! lock-free FIFOs; M flusher threads execute them (clwb, then sfence); a
//! fence blocks until the caller's queue drained. A pure controller picks
//! M by the four-point search; an optional proactive thread flushes sampled
//! store addresses early; a coalescing allocator places a value and its
//! key in the same cache lines.

pub mod alloc;
pub mod bandwidth;
pub mod bench;
pub mod capi;
mod comember;
pub mod controller;
pub mod corun;
pub mod coshm;
mod error;
mod flusher;
pub mod global;
pub mod idle;
pub mod interior;
pub mod pin;
pub mod placement;
pub mod proactive;
pub mod probe;
mod queue;
pub mod route;
mod runtime;
pub mod search_record;
mod shared;
#[cfg(test)]
mod test_dir;

pub use error::{RibbonError, MAX_APP_THREADS, MAX_FLUSHERS, MAX_FLUSH_LEN, MAX_QUEUE_ENTRIES};
pub use queue::Request;
pub use runtime::{
    check_range, hardware_threads, Config, CorunRole, Executor, Flushers, Producer, Ribbon, Stats,
};
