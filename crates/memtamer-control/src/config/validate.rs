//! Raw config to [`DaemonConfig`]: every check names the key path it
//! concerns.

use super::error::{root, KeyPath};
use super::raw::*;
use super::types::*;
use crate::select::{JobMatch, JobRequire, Selector, SelectorError};
use memtamer_core::isolation::IsolationParams;
use memtamer_core::registry::{self, PolicyName, RegistryError};
use memtamer_core::{CpuSet, JobClass};
use std::collections::HashSet;
use std::path::PathBuf;

// ---------------------------------------------------------------------------
// Validation

pub(super) type Invalid = (KeyPath, String);

pub(super) fn positive(path: KeyPath, v: f64) -> Result<f64, Invalid> {
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err((path, format!("must be a finite number > 0, got {v}")))
    }
}

pub(super) fn at_least(path: KeyPath, v: u64, min: u64) -> Result<u64, Invalid> {
    if v >= min {
        Ok(v)
    } else {
        Err((path, format!("must be at least {min}, got {v}")))
    }
}

/// A duration (or other count) key with both ends bounded: an unbounded one
/// such as `period_us = 9223372036854775807` would be accepted and then make
/// the daemon sleep for ever between iterations (issue 22 item 3).
pub(super) fn within(path: KeyPath, v: u64, min: u64, max: u64) -> Result<u64, Invalid> {
    if (min..=max).contains(&v) {
        Ok(v)
    } else {
        Err((path, format!("must be between {min} and {max}, got {v}")))
    }
}

pub(super) fn cpu_list(path: KeyPath, s: &str) -> Result<CpuSet, Invalid> {
    match CpuSet::parse_list(s) {
        Ok(set) if set.is_empty() => Err((path, format!("empty CPU list {s:?}"))),
        Ok(set) => Ok(set),
        Err(e) => Err((path, format!("bad CPU list {s:?}: {e}"))),
    }
}

pub(super) fn non_empty_path(path: KeyPath, p: PathBuf) -> Result<PathBuf, Invalid> {
    if p.as_os_str().is_empty() {
        Err((path, "must not be empty".into()))
    } else {
        Ok(p)
    }
}

/// caladan-pm's registry arguments: PM and DRAM thresholds, GB/s.
pub(super) type CaladanArgs = (Option<f64>, Option<f64>);

/// `[isolation] policy` through the registry: the policy, and the
/// caladan-pm arguments (PM and DRAM thresholds, GB/s) if written.
pub(super) fn isolation_policy(
    i: &KeyPath,
    text: &str,
) -> Result<(IsolationPolicy, CaladanArgs), Invalid> {
    let at = || i.key("policy");
    let parsed = registry::parse(text).map_err(|e| match e {
        RegistryError::Unknown { name, .. } => (
            at(),
            format!(
                "unknown policy {name:?}, expected one of {}",
                registry::describe(&ISOLATION_POLICIES)
            ),
        ),
        e => (at(), e.to_string()),
    })?;
    registry::check_allowed(&parsed.parts, &ISOLATION_POLICIES, "in [isolation]")
        .map_err(|e| (at(), e.to_string()))?;
    match parsed.parts.as_slice() {
        [PolicyName::Dicio] => Ok((IsolationPolicy::Dicio, (None, None))),
        [PolicyName::CaladanPm { pm_gbps, dram_gbps }] => {
            Ok((IsolationPolicy::CaladanPm, (*pm_gbps, *dram_gbps)))
        }
        [PolicyName::PmCounterOnly] => Ok((IsolationPolicy::PmCounterOnly, (None, None))),
        [PolicyName::Off] => Ok((IsolationPolicy::Off, (None, None))),
        _ => Err((
            at(),
            format!(
                "one isolation policy, not a composition; expected one of {} (core_spec and placement have their own sections)",
                registry::describe(&ISOLATION_POLICIES)
            ),
        )),
    }
}

pub(super) fn validate(raw: RawConfig) -> Result<DaemonConfig, Invalid> {
    let d = root().key("daemon");
    let daemon = DaemonSection {
        period_us: within(
            d.key("period_us"),
            raw.daemon.period_us,
            MIN_PERIOD_US,
            MAX_PERIOD_US,
        )?,
        media_period_ms: within(
            d.key("media_period_ms"),
            raw.daemon.media_period_ms,
            1,
            MAX_SLOW_PERIOD_MS,
        )?,
        rescan_ms: within(
            d.key("rescan_ms"),
            raw.daemon.rescan_ms,
            10,
            MAX_SLOW_PERIOD_MS,
        )?,
        watchdog_ms: within(
            d.key("watchdog_ms"),
            raw.daemon.watchdog_ms,
            MIN_WATCHDOG_MS,
            MAX_WATCHDOG_MS,
        )?,
        socket: non_empty_path(d.key("socket"), raw.daemon.socket)?,
        journal: non_empty_path(d.key("journal"), raw.daemon.journal)?,
        dry_run: raw.daemon.dry_run,
    };
    // the loop beats once per iteration: a watchdog shorter than a few
    // periods would kill a healthy daemon
    if daemon.watchdog_ms.saturating_mul(1000) < daemon.period_us.saturating_mul(4) {
        return Err((
            d.key("watchdog_ms"),
            format!(
                "{} ms is shorter than 4 loop periods (period_us = {}); a healthy daemon would be killed",
                daemon.watchdog_ms, daemon.period_us
            ),
        ));
    }

    let i = root().key("isolation");
    let ri = raw.isolation;
    let (policy, policy_params) = isolation_policy(&i, &ri.policy)?;
    let dram_path = i.key("dram_gbps");
    let dram_gbps: [f64; 3] = ri.dram_gbps.as_slice().try_into().map_err(|_| {
        (
            dram_path.clone(),
            format!(
                "expected 3 values (for PM media use < 0.4, < 0.8, >= 0.8 of T_media), got {}",
                ri.dram_gbps.len()
            ),
        )
    })?;
    let request_write_gbps = match (ri.request_write_gbps, policy_params.0) {
        (Some(key), Some(arg)) if key != arg => {
            return Err((
                i.key("request_write_gbps"),
                format!(
                    "{key} contradicts policy = {:?}; set it in one place",
                    ri.policy
                ),
            ))
        }
        (Some(v), _) | (None, Some(v)) => v,
        (None, None) => IsolationParams::default().request_write_gbps,
    };
    let params = IsolationParams {
        media_write_gbps: ri.media_write_gbps,
        media_read_gbps: ri.media_read_gbps,
        dram_gbps,
        wpq_delay_cycles: ri.wpq_delay_cycles,
        predict_factor: ri.predict_factor,
        request_write_gbps,
        caladan_dram_gbps: policy_params.1,
        ..IsolationParams::default()
    };
    params.validate().map_err(|e| {
        let path = i.key(e.key);
        (e.index.map_or(path.clone(), |n| path.index(n)), e.message)
    })?;
    let be_cpus = if ri.be_cpus == "all" {
        CpuChoice::All
    } else {
        CpuChoice::List(cpu_list(i.key("be_cpus"), &ri.be_cpus).map_err(|(p, m)| {
            (
                p,
                format!("{m} (use \"all\" or a CPU list such as \"4-15\")"),
            )
        })?)
    };
    let isolation = IsolationConfig {
        policy,
        params,
        duty_period_us: within(
            i.key("duty_period_us"),
            ri.duty_period_us,
            MIN_PERIOD_US,
            MAX_PERIOD_US,
        )?,
        be_cpus,
        actuator: match ri.actuator.as_str() {
            "affinity" => Actuator::Affinity,
            "cgroup" => Actuator::Cgroup,
            other => {
                return Err((
                    i.key("actuator"),
                    format!("unknown actuator {other:?}, expected one of affinity, cgroup"),
                ))
            }
        },
    };

    let c = root().key("core_spec");
    let rc = raw.core_spec;
    let pm_cpus = match rc.pm_cpus {
        RawPmCpus::Count(n) if (1..=memtamer_core::cpuset::MAX_CPUS as i64).contains(&n) => {
            PmCpus::Count(n as usize)
        }
        RawPmCpus::Count(n) => {
            return Err((
                c.key("pm_cpus"),
                format!(
                    "CPU count must be between 1 and {}, got {n}",
                    memtamer_core::cpuset::MAX_CPUS
                ),
            ))
        }
        RawPmCpus::List(s) => PmCpus::List(cpu_list(c.key("pm_cpus"), &s)?),
    };
    let core_spec = CoreSpecConfig {
        enabled: rc.enabled,
        pm_cpus,
        pm_expiry_ms: within(c.key("pm_expiry_ms"), rc.pm_expiry_ms, 1, MAX_EXPIRY_MS)?,
        general_expiry_ms: within(
            c.key("general_expiry_ms"),
            rc.general_expiry_ms,
            1,
            MAX_EXPIRY_MS,
        )?,
    };

    let pl = root().key("placement");
    let rp = raw.placement;
    let pct = |k: &str, v: f64| -> Result<f64, Invalid> {
        if v.is_finite() && (0.0..100.0).contains(&v) {
            Ok(v)
        } else {
            Err((
                pl.key(k),
                format!("must be a percentage in [0, 100), got {v}"),
            ))
        }
    };
    let placement = PlacementConfig {
        enabled: rp.enabled,
        period_ms: within(pl.key("period_ms"), rp.period_ms, 1, MAX_SLOW_PERIOD_MS)?,
        min_residency_ms: within(
            pl.key("min_residency_ms"),
            rp.min_residency_ms,
            0,
            MAX_EXPIRY_MS,
        )?,
        max_moves: at_least(pl.key("max_moves"), rp.max_moves, 2)?,
        numa_imbalance_pct: pct("numa_imbalance_pct", rp.numa_imbalance_pct)?,
        llc_imbalance_pct: pct("llc_imbalance_pct", rp.llc_imbalance_pct)?,
        smt_imbalance_pct: pct("smt_imbalance_pct", rp.smt_imbalance_pct)?,
        min_delta_cut_pct: pct("min_delta_cut_pct", rp.min_delta_cut_pct)?,
        pm_task_min_load: positive(pl.key("pm_task_min_load"), rp.pm_task_min_load)?,
        clock_ghz: positive(pl.key("clock_ghz"), rp.clock_ghz)?,
    };

    let jobs = validate_jobs(raw.job)?;
    if let CpuChoice::List(be) = isolation.be_cpus {
        let mut pool = be;
        for j in jobs.iter().filter(|j| j.class == JobClass::Lc) {
            for cpu in j.cpus.iter().flat_map(|s| s.iter()) {
                pool.remove(cpu);
            }
        }
        if pool.is_empty() && jobs.iter().any(|j| j.class == JobClass::Be) {
            return Err((
                i.key("be_cpus"),
                format!("every CPU in {be} is reserved by an LC job; BE jobs could never run"),
            ));
        }
    }

    // the kubelet owns a pod's cgroups: for a BE job that selects pods the
    // cgroup actuator changes each pod's own cgroup in place and moves no
    // process (daemon/pods.rs); a job that also selects processes outside
    // pods would need both ways at once
    if isolation.actuator == Actuator::Cgroup {
        if let Some(j) = jobs.iter().find(|j| {
            j.class == JobClass::Be && j.matcher.selects_pods() && j.matcher.selects_non_pods()
        }) {
            return Err((
                i.key("actuator"),
                format!(
                    "job {:?} selects Kubernetes pods and other processes; the cgroup actuator changes a pod's own cgroup in place but moves other processes into memtamer/JOB: split it into two jobs (docs/kubernetes.md)",
                    j.name
                ),
            ));
        }
    }

    let (gate, warnings) = match raw.gate {
        Some(g) => {
            let (g, w) = validate_gate(g)?;
            (Some(g), w)
        }
        None => (None, Vec::new()),
    };

    let mut warnings = warnings;
    warnings.extend(spoofable_jobs(&jobs));
    Ok(DaemonConfig {
        daemon,
        isolation,
        core_spec,
        placement,
        gate,
        jobs,
        warnings,
    })
}

/// `[gate]` through the gate library's own validation
/// (`memtamer_gate::GateConfig::from_lookup`), its variables renamed to the
/// section's keys in errors and warnings.
pub(super) fn validate_gate(g: RawGate) -> Result<(GateSection, Vec<String>), Invalid> {
    const KEYS: [(&str, &str); 4] = [
        ("MEMTAMER_GATE", "name"),
        ("MEMTAMER_GATE_DIR", "dir"),
        ("MEMTAMER_GATE_POLICY", "policy"),
        ("MEMTAMER_PM_INTERLEAVE", "pm_interleave"),
    ];
    let at = |var: &str| {
        let key = KEYS
            .iter()
            .find(|(v, _)| *v == var)
            .map_or("name", |(_, k)| *k);
        root().key("gate").key(key)
    };
    let value = |var: &str| -> Option<String> {
        match var {
            "MEMTAMER_GATE" => Some(g.name.clone()),
            "MEMTAMER_GATE_DIR" => g.dir.clone(),
            "MEMTAMER_GATE_POLICY" => g.policy.clone(),
            "MEMTAMER_PM_INTERLEAVE" => g.pm_interleave.map(|n| n.to_string()),
            _ => None,
        }
    };
    let c = memtamer_gate::GateConfig::from_lookup(value).map_err(|e| match e {
        memtamer_gate::GateError::BadSetting {
            key,
            value,
            expected,
        } => (at(&key), format!("{value:?}: {expected}")),
        memtamer_gate::GateError::Model { key, source } => (at(&key), source.to_string()),
        other => (at("MEMTAMER_GATE"), other.to_string()),
    })?;
    let warnings = c
        .warnings
        .iter()
        .map(|w| w.replacen("MEMTAMER_GATE_POLICY", "gate.policy", 1))
        .collect();
    Ok((
        GateSection {
            name: c.options.name,
            dir: c.options.dir,
            policy: c.policy,
            pm_interleave: c.n_pm,
        },
        warnings,
    ))
}

/// A job name is a directory name under the cgroup hierarchy
/// (`memtamer/NAME`), so `.` and `..` are refused besides any character
/// outside `[A-Za-z0-9_.-]` (issue 22 item 7).
/// One warning per managed job that any user can join: selected by `comm`
/// or `exe` (which whoever starts a process chooses) with no
/// `[job.require]` (issue 22 item 5, docs/control.md "Trust model").
pub(super) fn spoofable_jobs(jobs: &[JobConfig]) -> Vec<String> {
    jobs.iter()
        .enumerate()
        .filter(|(_, j)| j.class != JobClass::Unmanaged)
        .filter(|(_, j)| j.matcher.comm.is_some() || j.matcher.exe.is_some())
        .filter(|(_, j)| j.selector.require.is_empty())
        .map(|(n, j)| {
            let effect = match (j.class, j.cpus) {
                (JobClass::Lc, Some(c)) => format!("managed as LC and pinned to CPUs {c}"),
                (JobClass::Lc, None) => "managed as LC".to_string(),
                _ => "throttled as BE".to_string(),
            };
            format!(
                "job[{n}] ({:?}) is selected by comm/exe, which any user chooses: any user's process of that name is {effect}; add [job.require] uid or cgroup",
                j.name
            )
        })
        .collect()
}

pub(super) fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'-')
}

pub(super) fn validate_jobs(raw: Vec<RawJob>) -> Result<Vec<JobConfig>, Invalid> {
    if raw.is_empty() {
        return Err((
            root().key("job"),
            "no [[job]] given; at least one job is required".into(),
        ));
    }
    let mut names = HashSet::new();
    let mut jobs: Vec<JobConfig> = Vec::with_capacity(raw.len());
    for (n, rj) in raw.into_iter().enumerate() {
        let p = root().key("job").index(n);
        if !valid_name(&rj.name) {
            return Err((
                p.key("name"),
                format!(
                    "invalid job name {:?}: must be non-empty, not . or .., and use only A-Z a-z 0-9 _ . -",
                    rj.name
                ),
            ));
        }
        if !names.insert(rj.name.clone()) {
            return Err((p.key("name"), format!("duplicate job name {:?}", rj.name)));
        }
        let class = match rj.class.as_str() {
            "lc" => JobClass::Lc,
            "be" => JobClass::Be,
            "unmanaged" => JobClass::Unmanaged,
            other => {
                return Err((
                    p.key("class"),
                    format!("unknown class {other:?}, expected one of lc, be, unmanaged"),
                ))
            }
        };
        let cpus = rj
            .cpus
            .as_deref()
            .map(|s| cpu_list(p.key("cpus"), s))
            .transpose()?;
        if cpus.is_some() && class == JobClass::Unmanaged {
            return Err((
                p.key("cpus"),
                "an unmanaged job is never acted upon, so cpus has no effect; remove it".into(),
            ));
        }
        let mp = p.key("match");
        let rm = rj.matcher;
        let mut pid = Vec::new();
        for (k, v) in rm.pid.unwrap_or_default().into_iter().enumerate() {
            match i32::try_from(v) {
                Ok(v) if v > 0 => pid.push(v),
                _ => return Err((mp.key("pid").index(k), format!("not a valid pid: {v}"))),
            }
        }
        let matcher = JobMatch {
            cgroup: rm.cgroup,
            unit: rm.unit,
            comm: rm.comm,
            exe: rm.exe,
            pid,
            pod: rm.pod,
            namespace: rm.namespace,
            labels: rm.labels.unwrap_or_default(),
        };
        let selector = Selector::compile(&matcher).map_err(|e| match e {
            SelectorError::NoSelector => (mp.clone(), e.to_string()),
            SelectorError::Glob { field, source } => (mp.key(field), source.to_string()),
            SelectorError::Label { ref key, ref why } => (mp.key("labels").key(key), why.clone()),
        })?;
        let rp = p.key("require");
        let require = match rj.require {
            None => JobRequire::default(),
            Some(r) => {
                let mut uid = Vec::new();
                for (k, v) in r.uid.unwrap_or_default().into_iter().enumerate() {
                    match u32::try_from(v) {
                        Ok(v) if v != u32::MAX => uid.push(v),
                        _ => return Err((rp.key("uid").index(k), format!("not a valid uid: {v}"))),
                    }
                }
                JobRequire {
                    uid,
                    cgroup: r.cgroup,
                }
            }
        };
        let selector = selector.with_require(&require).map_err(|e| match e {
            SelectorError::Glob { source, .. } => (rp.key("cgroup"), source.to_string()),
            e => (rp.clone(), e.to_string()),
        })?;
        if let Some(mine) = cpus {
            for (m, other) in jobs.iter().enumerate() {
                let Some(theirs) = other.cpus else { continue };
                let overlap = mine.intersect(&theirs);
                if overlap.is_empty() {
                    continue;
                }
                let why = match (class, other.class) {
                    (JobClass::Lc, JobClass::Lc) => "LC jobs' reserved CPUs must not overlap",
                    (JobClass::Lc, JobClass::Be) | (JobClass::Be, JobClass::Lc) => {
                        "BE jobs may not be allowed on an LC job's reserved CPUs"
                    }
                    _ => continue,
                };
                return Err((
                    p.key("cpus"),
                    format!(
                        "CPUs {overlap} are also in job[{m}] ({:?}): {why}",
                        other.name
                    ),
                ));
            }
        }
        jobs.push(JobConfig {
            name: rj.name,
            class,
            cpus,
            matcher,
            require,
            selector,
        });
    }
    Ok(jobs)
}
