//! Building the daemon's composed policy from its config: isolation
//! (`[isolation]`), placement (`[placement]`), core specialization
//! (`[core_spec]`) and the gate policy (`[gate]`), in the precedence of
//! `memtamer_core::compose`.

use super::DaemonError;
use crate::config::{CpuChoice, DaemonConfig, IsolationPolicy, PmCpus};
use memtamer_core::compose::Composite;
use memtamer_core::core_spec::{CoreSpec, CoreSpecParams};
use memtamer_core::isolation::{Isolation, IsolationKind};
use memtamer_core::placement::Placement;
use memtamer_core::{CpuSet, JobClass, Policy};
use std::path::Path;

/// Online CPUs of this host.
pub fn online_cpus() -> CpuSet {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|t| CpuSet::parse_list(t.trim()).ok())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| CpuSet::first_n(1))
}

/// Builds the composed policy the config asks for.
pub fn build_policy(cfg: &DaemonConfig, online: &CpuSet) -> Result<Composite, DaemonError> {
    let topology = memtamer_sense::topology::read_topology(Path::new("/sys/devices/system"))
        .map_err(|e| format!("/sys/devices/system: {e}"));
    build_policy_on(cfg, online, topology)
}

/// [`build_policy`] on a given CPU topology, or why it could not be read
/// (placement then cannot run, and BE CPUs are handed out in numeric order).
/// Tests use it with fake topologies.
pub fn build_policy_on(
    cfg: &DaemonConfig,
    online: &CpuSet,
    topology: Result<memtamer_core::topology::Topology, String>,
) -> Result<Composite, DaemonError> {
    let iso = &cfg.isolation;
    let params = iso.params.clone();
    let mut lc = CpuSet::empty();
    for j in cfg.jobs.iter().filter(|j| j.class == JobClass::Lc) {
        for c in j.cpus.iter().flat_map(|s| s.iter()) {
            lc.insert(c);
        }
    }
    let pool_set = cfg.be_cpu_pool(online);
    // SMT-aware: whole cores first, LC cores' siblings last (numeric order
    // if sysfs cannot be read)
    let pool: Vec<u32> = match &topology {
        Ok(t) => memtamer_core::topology::be_pool_order(t, &pool_set, &lc),
        Err(_) => pool_set.iter().map(|c| c as u32).collect(),
    };
    let isolation = match iso.policy {
        IsolationPolicy::Off => None,
        IsolationPolicy::Dicio => Some(Isolation::new(IsolationKind::Dicio, params, Some(pool))),
        IsolationPolicy::CaladanPm => {
            Some(Isolation::new(IsolationKind::CaladanPm, params, Some(pool)))
        }
        IsolationPolicy::PmCounterOnly => Some(Isolation::new(
            IsolationKind::PmCounterOnly,
            params,
            Some(pool),
        )),
    };
    let concurrency = if cfg.core_spec.enabled {
        let general = match &cfg.isolation.be_cpus {
            CpuChoice::All => *online,
            CpuChoice::List(s) => s.intersect(online),
        };
        let pm = match &cfg.core_spec.pm_cpus {
            PmCpus::List(s) => s.intersect(online),
            // the last N CPUs: CPU 0 takes most interrupts and housekeeping
            PmCpus::Count(n) => {
                let all: Vec<usize> = general.iter().collect();
                let mut s = CpuSet::empty();
                for &c in all.iter().rev().take(*n) {
                    s.insert(c);
                }
                s
            }
        };
        if pm.is_empty() {
            return Err(DaemonError::Config(
                "core_spec.pm_cpus: none of these CPUs is online".into(),
            ));
        }
        let mut p = CoreSpecParams::new(pm, general);
        p.pm_expiry_ns = cfg.core_spec.pm_expiry_ms * 1_000_000;
        p.general_expiry_ns = cfg.core_spec.general_expiry_ms * 1_000_000;
        Some(CoreSpec::new(p))
    } else {
        None
    };
    let placement: Option<Box<dyn Policy>> = match (cfg.placement.enabled, topology) {
        (false, _) => None,
        (true, Ok(t)) => Some(Box::new(Placement::new(t, cfg.placement.params()))),
        (true, Err(e)) => {
            return Err(DaemonError::Config(format!(
                "placement.enabled: cannot read the CPU topology: {e}"
            )))
        }
    };
    // `[gate]`: the daemon owns T_S with the policy named there (none for
    // `external`); its decisions reach the gate through GateActuator
    let gate: Option<Box<dyn Policy>> = cfg
        .gate
        .as_ref()
        .and_then(|g| g.policy.build(g.pm_interleave))
        .map(|p| -> Box<dyn Policy> { p });
    Ok(Composite::new(isolation, placement, concurrency, gate))
}
