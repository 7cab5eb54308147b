//! The simulator's policy factory: a policy name parsed by the one registry
//! (`memtamer_core::registry`, docs/policy.md "Policy names") built with
//! the platform's facts (its PM interleave set, its CPUs, its calibrated
//! model).

pub use crate::config::scenario::{check_policy_name, SIM_POLICIES};
use crate::config::Platform;
use crate::error::SimError;
use memtamer_core::compose::Composite;
use memtamer_core::core_spec::{CoreSpec, CoreSpecParams};
use memtamer_core::isolation::{Isolation, IsolationParams};
use memtamer_core::pats::{CalibratedModel, Pats, PatsCalibrated};
use memtamer_core::pats_adaptive::PatsAdaptive;
use memtamer_core::placement::{Placement, PlacementParams};
use memtamer_core::registry::{self, PolicyName, RegistryError};
use memtamer_core::topology::Topology;
use memtamer_core::CpuSet;
use memtamer_core::{Baseline, FixedGate, Policy};

/// PM cores of `core-spec` without an argument (the thesis's evaluation).
const DEFAULT_CORE_SPEC_PM_CPUS: usize = 3;

/// Where `pats-calibrated` without a file gets its model: a function of the platform name
/// (the built-in model, or a calibration run). Passed in, so this module never imports the
/// calibrator, which itself runs scenarios through the policies (`crate::experiment` wires
/// `crate::calibrate::model_for` in).
pub type ModelSource = fn(&str) -> Result<CalibratedModel, SimError>;

/// Policies the simulator can run by name (docs/policy.md "Policy names"):
/// one registry name, or a `+` composition combined in the precedence of
/// `memtamer_core::compose`, built for `platform`. `pats-calibrated` without a
/// file uses the platform's calibrated model, which `models` supplies.
pub fn policy_by_name(
    name: &str,
    platform: &Platform,
    models: ModelSource,
) -> Result<Box<dyn Policy>, SimError> {
    check_policy_name(name)?;
    let parsed = registry::parse(name)?;
    match parsed.parts.as_slice() {
        [one] if !name.contains('+') => build_one(one, platform, models),
        parts => {
            let (mut iso, mut cs, mut gate) = (None, None, None);
            let mut placement: Option<Box<dyn Policy>> = None;
            for p in parts {
                match p {
                    PolicyName::Dicio
                    | PolicyName::CaladanPm { .. }
                    | PolicyName::PmCounterOnly => iso = Some(isolation_policy(p)?),
                    PolicyName::CoreSpec { pm_cpus } => {
                        cs = Some(core_spec_policy(name, *pm_cpus, platform)?)
                    }
                    PolicyName::Placement => {
                        placement = Some(Box::new(placement_policy(platform)?))
                    }
                    _ => gate = Some(build_one(p, platform, models)?),
                }
            }
            Ok(Box::new(Composite::new(iso, placement, cs, gate)))
        }
    }
}

fn build_one(
    p: &PolicyName,
    platform: &Platform,
    models: ModelSource,
) -> Result<Box<dyn Policy>, SimError> {
    Ok(match p {
        PolicyName::Baseline => Box::new(Baseline),
        PolicyName::Gate(n) => Box::new(FixedGate::new(*n)),
        PolicyName::Pats { t_mc } => Box::new(Pats::new(*t_mc, pm_interleave(platform))),
        PolicyName::PatsCalibrated { model: Some(path) } => {
            Box::new(PatsCalibrated::new(registry::load_model(path)?))
        }
        PolicyName::PatsCalibrated { model: None } => {
            Box::new(PatsCalibrated::new(models(&platform.name)?))
        }
        PolicyName::PatsAdaptive { max_loss } => {
            Box::new(PatsAdaptive::new(*max_loss, 0.2, pm_interleave(platform)))
        }
        PolicyName::Dicio | PolicyName::CaladanPm { .. } | PolicyName::PmCounterOnly => {
            Box::new(isolation_policy(p)?)
        }
        PolicyName::CoreSpec { pm_cpus } => {
            Box::new(core_spec_policy(&p.to_string(), *pm_cpus, platform)?)
        }
        PolicyName::Placement => Box::new(placement_policy(platform)?),
        PolicyName::External | PolicyName::Off => {
            return Err(RegistryError::NotHere {
                name: p.name(),
                context: "in the simulator".into(),
                valid: registry::describe(&SIM_POLICIES),
            }
            .into())
        }
    })
}

/// Period of the simulator's `placement` policy, ms: a simulated run lasts
/// milliseconds, so placement runs every millisecond (the daemon's default
/// is 100 ms); the golden test configures the daemon with the same values.
pub const SIM_PLACEMENT_PERIOD_MS: u64 = 1;
/// Hysteresis of the simulator's `placement` policy, ms.
pub const SIM_PLACEMENT_RESIDENCY_MS: u64 = 10;

/// Ahn §3.3 placement over the platform's scheduling-domain tree, with the
/// paper's parameters and the simulator's period and hysteresis.
pub fn placement_policy(platform: &Platform) -> Result<Placement, SimError> {
    let facts = crate::topology::platform_cpu_facts(platform);
    let topology = Topology::build(&facts, &[]).map_err(|e| SimError::Invalid {
        file: platform.name.clone(),
        line: 0,
        key: "cpu".into(),
        message: format!("the platform's CPUs do not form a topology: {e}"),
    })?;
    let params = PlacementParams {
        period_ns: SIM_PLACEMENT_PERIOD_MS * 1_000_000,
        min_residency_ns: SIM_PLACEMENT_RESIDENCY_MS * 1_000_000,
        ..PlacementParams::default()
    };
    Ok(Placement::new(topology, params))
}

/// `dicio`, `caladan-pm[:PM_GBPS[:DRAM_GBPS]]` or `pm-counter-only`, with
/// Dicio §4.3's thresholds. The BE pool is every CPU not used by an LC job.
fn isolation_policy(p: &PolicyName) -> Result<Isolation, SimError> {
    let mut params = IsolationParams::default();
    if let PolicyName::CaladanPm { pm_gbps, dram_gbps } = p {
        if let Some(pm) = pm_gbps {
            params.request_write_gbps = *pm;
        }
        params.caladan_dram_gbps = *dram_gbps;
    }
    let kind = p.isolation_kind().ok_or_else(|| SimError::Unknown {
        what: "isolation policy",
        name: p.to_string(),
        known: registry::describe(&["dicio", "caladan-pm", "pm-counter-only"]),
    })?;
    Ok(Isolation::new(kind, params, None))
}

/// `core-spec[:N]`: the KIT thesis's core specialization with N PM cores
/// (default 3, as in the thesis's evaluation), the last N CPUs of the platform.
fn core_spec_policy(
    name: &str,
    pm_cpus: Option<usize>,
    platform: &Platform,
) -> Result<CoreSpec, SimError> {
    let n = pm_cpus.unwrap_or(DEFAULT_CORE_SPEC_PM_CPUS);
    let cpus = platform_cpus(platform);
    if n >= cpus {
        return Err(RegistryError::BadArgs {
            part: name.to_string(),
            message: format!(
                "N_PM_CPUS = {n} leaves no general CPU on platform {} ({cpus} CPUs)",
                platform.name
            ),
        }
        .into());
    }
    let general = CpuSet::first_n(cpus);
    let mut pm = CpuSet::empty();
    for c in cpus - n..cpus {
        pm.insert(c);
    }
    // every managed thread is "seen" each window in the simulator
    let mut p = CoreSpecParams::new(pm, general);
    p.include_lc = false;
    Ok(CoreSpec::new(p))
}

/// Logical CPUs of a platform.
fn platform_cpus(platform: &Platform) -> usize {
    (platform.cpu.sockets * platform.cpu.cores_per_socket * platform.cpu.threads_per_core) as usize
}

/// N of PATS Eq. 3: the PM channels of the platform's `pm` region.
pub fn pm_interleave(platform: &Platform) -> u32 {
    platform
        .regions
        .iter()
        .find(|r| r.name == "pm")
        .map_or(1, |r| r.channels.len() as u32)
}
