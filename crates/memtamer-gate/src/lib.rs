//! memtamer-gate: PATS admission control for PM-accessing threads, as a
//! library any PM application links (Rust here, C through `memtamer-capi`).
//!
//! A thread brackets each PM request with [`GateThread::begin`] /
//! [`GateThread::end`] (or holds a [`Permit`]). At most T_S gated requests
//! run at once, system-wide: the state lives in a shared file under
//! `/dev/shm`, so every process using the same gate name shares one limit.
//! A [`Collector`] recomputes T_S from the published request mix every
//! window with any `memtamer_core` policy (PATS Eq. 1, a calibrated model, a
//! fixed limit). Threads that die while admitted have their capacity
//! reclaimed; see docs/pats.md.
//!
//! ```no_run
//! use memtamer_gate::{Gate, GateOptions};
//! let gate = Gate::open(&GateOptions::default())?;
//! let me = gate.register()?;
//! {
//!     let _permit = me.enter(4096, true); // blocks while T_S requests run
//!     // ... copy 4 KiB to PM and flush ...
//! }
//! # Ok::<(), memtamer_gate::GateError>(())
//! ```

mod collector;
mod config;
mod error;
mod gate;
pub mod host_calibrate;
pub mod os;
pub mod persist;
pub mod process;
mod shm;
mod stats;

pub use collector::{Collector, CollectorCore, GateActuator, NOT_A_GATE_KNOB};
pub use config::{valid_gate_name, GateConfig, PolicySpec, ENV_VARS, GATE_POLICIES};
pub use error::GateError;
pub use gate::integrity;
pub use gate::{Admission, Gate, GateOptions, GateThread, Permit};
pub use shm::SLOTS;
pub use stats::{GateSnapshot, GateWindow, ThreadSnapshot, ThreadState, ThreadStats};

/// Opens the gate a config names and starts this process's collector.
pub fn start(config: &GateConfig) -> Result<(std::sync::Arc<Gate>, Collector), GateError> {
    let gate = Gate::open(&config.options)?;
    let collector = Collector::spawn(
        std::sync::Arc::clone(&gate),
        config.policy.build(config.n_pm),
        config.window,
    )
    .map_err(|source| GateError::Io {
        path: gate.path().to_path_buf(),
        source,
    })?;
    Ok((gate, collector))
}
