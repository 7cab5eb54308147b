//! Fixtures shared by the engine's unit tests.

use super::EngineConfig;

impl EngineConfig {
    /// Test fixture: seed 1, no warm-up, a 1 ns run and a 1 µs policy window,
    /// the configuration the engine's unit tests build their engines with.
    pub(crate) fn for_tests() -> Self {
        EngineConfig {
            seed: 1,
            warmup: 0,
            duration: crate::workload::NS,
            window: 1000 * crate::workload::NS,
            sampler: None,
            trace_search: false,
        }
    }
}
