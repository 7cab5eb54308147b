//! The controller's bandwidth signal (thesis §6.3.1 reads Optane write
//! bandwidth from iMC counters). Any cumulative PM-write byte counter can
//! feed it through [`BandwidthSource`] (e.g. `memtamer-sense`'s iMC/DIMM
//! counters); without one, or while it has no reading, Ribbon uses its own
//! flushed-bytes counter and says so in [`crate::Stats::bandwidth_source`].

/// Name of the built-in signal: bytes Ribbon's flushes wrote back.
pub const FLUSHED_BYTES: &str = "ribbon-flushed-bytes";

/// A cumulative counter of bytes written to PM.
pub trait BandwidthSource: Send {
    /// Short name shown in statistics (e.g. "imc-cas-writes").
    fn name(&self) -> &'static str;
    /// Bytes written so far, or None if unavailable right now (Ribbon then
    /// falls back to its flushed-bytes counter for this sample).
    fn bytes(&mut self) -> Option<u64>;
}

/// Adapts any closure returning a cumulative byte count.
pub struct FnSource<F> {
    name: &'static str,
    f: F,
}

impl<F: FnMut() -> Option<u64> + Send> FnSource<F> {
    /// A source called `name` reading `f`.
    pub fn new(name: &'static str, f: F) -> FnSource<F> {
        FnSource { name, f }
    }
}

impl<F: FnMut() -> Option<u64> + Send> BandwidthSource for FnSource<F> {
    fn name(&self) -> &'static str {
        self.name
    }
    fn bytes(&mut self) -> Option<u64> {
        (self.f)()
    }
}
