//! Tahoe in the simulator (issue 21 item 4; thesis §4.4): task-graph
//! programs ([`bench`], or a recording of the OMPT tool, [`recorded`]) run
//! by 8 worker threads on a DRAM + slow-tier platform, under Tahoe
//! ([`policy::TahoePolicy`], the pure `memtamer-tahoe` planner) and the
//! thesis's comparison systems ([`baselines`], [`policy::Oracle`]).
//!
//! [`evaluate`] runs every benchmark on both slow tiers (1/4 bandwidth, 4x
//! latency) in three rounds: the references (all-slow, all-DRAM,
//! round-robin pages, unmanaged first touch, static, oracle); Unimem (its
//! phase times come from the all-slow run); Tahoe, whose PMU-free model
//! (`T_dram = T_slow - beta * accesses`) is fitted leave-one-out, as the
//! thesis trains its models (§4.3.4): beta for a benchmark comes from the
//! all-slow and all-DRAM task times of the *other* benchmarks. Tahoe runs
//! with and without its cost-benefit check, each with sibling scheduling
//! (§4.3.6) and, for the Figure 4.6-like ablation, without (`-nosib`).

pub mod baselines;
pub mod bench;
mod oracle;
pub mod outnocopy;
pub mod policy;
pub mod recorded;
mod report;
pub mod reuse;

use crate::config::{Platform, Scenario};
use crate::engine::{Engine, EngineConfig};
use crate::error::SimError;
use crate::runner::parallel_map;
use crate::workload::taskgraph::{lock_rt, Runtime, TaskGraph, TaskPolicy, TaskRecord, Worker};
use crate::workload::tiered::{lock, MigrationHelper, MoveReq, TierSpace, TierStats, PAGE};
use crate::workload::{Generator, Ps, NS};
use baselines::{FirstTouch, Fixed, FixedKind, PhaseTimes, StaticHot, UnimemTasks};
use memtamer_core::unimem::model::Platform as UPlatform;
use memtamer_core::unimem::Tier;
use memtamer_tahoe::benefit::RwSlopes;
use memtamer_tahoe::model::LinearAccess;
pub use memtamer_tahoe::model::PartialForm;
pub use outnocopy::{OutNoCopy, OUT_RUN};
pub use policy::ModelLearning;
use policy::{Oracle, TahoePolicy};
pub use report::{markdown, Headroom, Row, Siblings, SIBLING_RUNS};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The two slow tiers of the evaluation: (name, platform file).
pub const PLATFORMS: [(&str, &str); 2] = [
    (
        "tahoe-quarter-bw",
        include_str!("../../builtin/platforms/tahoe-quarter-bw.toml"),
    ),
    (
        "tahoe-4x-latency",
        include_str!("../../builtin/platforms/tahoe-4x-latency.toml"),
    ),
];

/// Worker threads (thesis §4.4 default: 8).
pub const WORKERS: u32 = 8;
/// Co-running tasks Tahoe plans together (the OMPT tool's default K).
pub const CORUN: usize = 4;
/// Tahoe starts from the first-touch placement, as the unmanaged baseline
/// does (the same machine and OS; Tahoe adopts those pages as resident).
/// The thesis's runs started every page in the slow tier (§4.3.1).
pub const FIRST_TOUCH: bool = true;
/// Poll period of idle workers and of the migration helper.
const POLL: Ps = NS * 1000;
/// Simulated time the all-slow run may take (ms).
const SLOW_LIMIT_MS: f64 = 1000.0;

/// Loads a platform of [`PLATFORMS`] by name, or a platform file.
pub fn load_platform(name: &str) -> Result<Platform, SimError> {
    match PLATFORMS.iter().find(|p| p.0 == name) {
        Some((n, text)) => {
            Platform::parse_with(&format!("<builtin platform {n}>"), text, &BTreeMap::new())
        }
        None => crate::runner::load_platform(name, &BTreeMap::new()),
    }
}

/// Idle load latency (s) and peak bandwidth (B/s) of region `name` seen
/// from socket 0, from the platform's parameters.
fn region_facts(p: &Platform, name: &str) -> Option<(f64, f64)> {
    let r = p.regions.iter().find(|r| r.name == name)?;
    let chans: Vec<_> = p
        .channels
        .iter()
        .filter(|c| r.channels.contains(&c.name))
        .collect();
    let remote = chans.iter().any(|c| c.socket != 0);
    let lat_ns = p.cpu.core_to_uncore_ns
        + p.uncore.cha_to_imc_ns
        + p.dram.access_ns
        + 64.0 / p.dram.bus_gbps
        + p.cpu.uncore_to_core_ns
        + if remote {
            2.0 * p.uncore.numa_link_ns
        } else {
            0.0
        };
    // under a [quartz] emulation the slow tier's latency is the one Quartz
    // is set to, target / hw_local times DRAM's (thesis §4.4: "4x DRAM")
    let lat_ns = match &p.quartz {
        Some(q) if remote => (lat_ns - 2.0 * p.uncore.numa_link_ns) * q.target_ns / q.hw_local_ns,
        _ => lat_ns,
    };
    Some((lat_ns * 1e-9, chans.len() as f64 * p.dram.bus_gbps * 1e9))
}

/// Unimem's machine model for a platform with regions `dram` and `slow`
/// (thesis §3.6's emulated platform: the slow tier's bandwidth divisor
/// and latency multiplier, constant factors 1).
pub fn unimem_model(p: &Platform) -> Result<UPlatform, SimError> {
    let bad = || SimError::Invalid {
        file: p.name.clone(),
        line: 0,
        key: "region".into(),
        message: "the Tahoe evaluation needs regions `dram` and `slow`".into(),
    };
    let (dl, db) = region_facts(p, "dram").ok_or_else(bad)?;
    let (sl, sb) = region_facts(p, "slow").ok_or_else(bad)?;
    Ok(UPlatform::emulated(db, dl, db / sb, sl / dl))
}

/// What one run gives.
#[derive(Clone, Debug)]
pub struct RunOut {
    /// Policy name.
    pub policy: String,
    /// Completion of the last task, ms.
    pub makespan_ms: f64,
    /// Per task.
    pub records: Vec<TaskRecord>,
    /// Migration accounting.
    pub tier: TierStats,
    /// The policy's counters.
    pub counters: Vec<(&'static str, f64)>,
}

/// Share of a run's line accesses served from DRAM (NaN without a run):
/// the placement's effect, read the same way by every report table.
pub(crate) fn dram_access_share(r: Option<&RunOut>) -> f64 {
    let Some(r) = r else { return f64::NAN };
    let (d, l) = r
        .records
        .iter()
        .fold((0u64, 0u64), |a, x| (a.0 + x.dram_lines, a.1 + x.lines));
    d as f64 / l.max(1) as f64
}

fn scenario(
    platform: &Platform,
    graph: &TaskGraph,
    duration_ms: f64,
    seed: u64,
) -> Result<Scenario, SimError> {
    let text = format!(
        "name = \"tahoe-{g}\"\ntitle = \"{g} task graph\"\nplatform = \"{p}\"\nduration_ms = {d}\nwarmup_ms = 0.0\nseed = {seed}\n\n[[job]]\nname = \"tasks\"\nthreads = {t}\ncpus = \"0-{w}\"\nworkload = {{ kind = \"cpu\", compute_ns = 1000.0, mem_lines = 0, region = \"dram\" }}\n",
        g = graph.name,
        p = platform.name,
        d = duration_ms,
        t = WORKERS + 1,
        w = WORKERS,
    );
    Scenario::parse(&format!("<tahoe {}>", graph.name), &text)
}

/// Runs `graph` under `policy` with `capacity` bytes of DRAM; fails if
/// the graph does not complete within `duration_ms` of simulated time.
pub fn run(
    platform: &Platform,
    graph: Arc<TaskGraph>,
    policy: Box<dyn TaskPolicy>,
    capacity: u64,
    duration_ms: f64,
    seed: u64,
) -> Result<RunOut, SimError> {
    graph.validate().map_err(|m| SimError::Invalid {
        file: graph.name.clone(),
        line: 0,
        key: "task".into(),
        message: m,
    })?;
    let region = |n: &str| {
        platform
            .regions
            .iter()
            .position(|r| r.name == n)
            .map(|i| i as u8)
    };
    let (Some(fast), Some(slow)) = (region("dram"), region("slow")) else {
        return Err(SimError::Invalid {
            file: platform.name.clone(),
            line: 0,
            key: "region".into(),
            message: "the Tahoe evaluation needs regions `dram` and `slow`".into(),
        });
    };
    let objs: Vec<(String, u64, Tier)> = graph
        .blocks
        .iter()
        .enumerate()
        .map(|(i, b)| {
            (
                format!("{}[{i}]", graph.arrays[b.array]),
                b.bytes,
                Tier::Slow,
            )
        })
        .collect();
    let tier = TierSpace::new(fast, slow, 0, &objs, capacity).into_handle();
    let name = policy.name();
    let rt = Runtime::new(graph.clone(), tier.clone(), policy).into_handle();
    let mut gens: Vec<Generator> = (0..WORKERS)
        .map(|_| Generator::task_worker(Worker::new(rt.clone(), POLL)))
        .collect();
    gens.push(Generator::tier_helper(MigrationHelper::new(
        tier.clone(),
        POLL,
    )));
    let sc = scenario(platform, &graph, duration_ms, seed)?;
    let cfg = EngineConfig {
        seed,
        warmup: 0,
        duration: (duration_ms * 1e9) as Ps,
        window: 1_000_000 * NS,
        sampler: None,
        trace_search: false,
    };
    let engine = Engine::with_generators(platform, &sc, &cfg, vec![Some(gens)]).map_err(|m| {
        SimError::Invalid {
            file: sc.name.clone(),
            line: 0,
            key: "job".into(),
            message: m,
        }
    })?;
    engine.run(&mut memtamer_core::Baseline);
    let r = lock_rt(&rt);
    let Some(end) = r.makespan() else {
        return Err(SimError::Invalid {
            file: graph.name.clone(),
            line: 0,
            key: "duration_ms".into(),
            message: format!(
                "{name}: {} of {} tasks completed within {duration_ms} ms of simulated time",
                r.done(),
                graph.tasks.len()
            ),
        });
    };
    let out = RunOut {
        policy: name,
        makespan_ms: end as f64 / 1e9,
        records: r.records().to_vec(),
        tier: lock(&tier).stats().clone(),
        counters: r.policy().report(),
    };
    Ok(out)
}

/// DRAM bytes of a graph at a data : DRAM ratio (whole pages).
pub fn capacity(g: &TaskGraph, ratio: u64) -> u64 {
    (g.footprint() / ratio.max(1)) / PAGE * PAGE
}

/// Per task type: (mean line accesses, mean run ns) over a run.
pub fn type_means(g: &TaskGraph, recs: &[TaskRecord]) -> Vec<(f64, f64)> {
    let mut acc = vec![(0.0, 0.0, 0u64); g.types.len()];
    for (t, r) in recs.iter().enumerate() {
        let a = &mut acc[g.tasks[t].ty];
        a.0 += r.lines as f64;
        a.1 += r.run_ns();
        a.2 += 1;
    }
    acc.into_iter()
        .map(|(l, ns, n)| (l / n.max(1) as f64, ns / n.max(1) as f64))
        .collect()
}

/// Mean stores (line accesses to `out`/`inout` blocks) of an instance of
/// each task type of `g`, in [`type_means`]'s order.
pub fn type_stores(g: &TaskGraph) -> Vec<f64> {
    let mut acc = vec![(0.0, 0u64); g.types.len()];
    for t in &g.tasks {
        let a = &mut acc[t.ty];
        a.0 += t
            .args
            .iter()
            .filter(|x| x.mode != crate::workload::taskgraph::Mode::In)
            .map(|x| g.arg_lines(x) as f64)
            .sum::<f64>();
        a.1 += 1;
    }
    acc.into_iter().map(|(w, n)| w / n.max(1) as f64).collect()
}

/// One program to evaluate: a name, its graph, its DRAM : data ratio.
#[derive(Clone, Debug)]
pub struct Case {
    /// The graph.
    pub graph: Arc<TaskGraph>,
    /// Data bytes per DRAM byte.
    pub ratio: u64,
}

/// The built-in benchmarks as cases.
pub fn builtin_cases(names: &[String]) -> Result<Vec<Case>, SimError> {
    let list: Vec<bench::Bench> = if names.is_empty() {
        bench::ALL.to_vec()
    } else {
        names
            .iter()
            .map(|n| {
                bench::Bench::parse(n).ok_or_else(|| SimError::Unknown {
                    what: "benchmark",
                    name: n.clone(),
                    known: bench::ALL.map(|b| b.name()).join(", "),
                })
            })
            .collect::<Result<_, _>>()?
    };
    Ok(list
        .into_iter()
        .map(|b| Case {
            graph: Arc::new(b.graph()),
            ratio: b.dram_ratio(),
        })
        .collect())
}

/// What [`evaluate`] measured for one case on one platform.
#[derive(Clone, Debug)]
pub struct Measured {
    /// Platform name.
    pub platform: String,
    /// Case (benchmark) name.
    pub bench: String,
    /// DRAM capacity, bytes.
    pub capacity: u64,
    /// Runs by policy name.
    pub runs: BTreeMap<String, RunOut>,
    /// Fallback beta (ns per line access) Tahoe used, fitted leave-one-out.
    pub beta_ns: f64,
    /// Copy cost per page (ns) of Tahoe's cost-benefit check, measured
    /// leave-one-out (NaN: none measured, no check).
    pub copy_ns_per_page: f64,
    /// Which of [`ORACLE_CANDIDATES`] the reported "oracle" run is.
    pub oracle_pick: String,
}

/// Page-fault handling time (ns) per page placed in DRAM without a copy
/// (the `out` no-copy ablation, [`policy::TahoePolicy::with_out_no_copy`]):
/// measured on this repository's host (AMD EPYC, Linux 6.18 in a
/// Firecracker VM) as the time to write-fault 16384 pages of an anonymous
/// mapping after `madvise(MADV_DONTNEED)`, less a `memset` of the same,
/// mapped pages (the zeroing, which the simulator charges as DRAM writes
/// instead): 2050 - 107 and 1985 - 103 ns in two runs (program and
/// command in docs/notebook/tahoe.md, "Out blocks placed without a copy"). A VM's
/// fault path is slower than bare metal's, so this is against the
/// mechanism; `memtamer sim tahoe --out-fault-ns` changes it.
pub const OUT_FAULT_NS: f64 = 1900.0;

/// Round-1 runs per case: dram-only, round-robin, unmanaged, static, the
/// unchecked, the checked and the wide MIN oracle, Unimem.
const R1: usize = 8;

/// Round-2 runs per case, (cost-benefit check, sibling scheduling):
/// `tahoe`, `tahoe-nocheck`, and the two without sibling scheduling
/// (`-nosib`, the ablation of docs/notebook/tahoe.md "Sibling scheduling").
const R2: [(bool, bool); 4] = [(true, true), (false, true), (true, false), (false, false)];

/// The runs the reported oracle is the best of: a full-knowledge system
/// can pick any of these placements, doing nothing included, so the
/// reference is never slower than unmanaged (see `policy::Oracle`).
pub const ORACLE_CANDIDATES: [&str; 5] = [
    "oracle-min",
    "oracle-min-checked",
    "oracle-min-wide",
    "unmanaged",
    "static",
];

/// A run that did not complete in time stays in the table as NaN (with
/// the reason on stderr) instead of aborting the whole evaluation.
fn unfinished(policy: String, r: Result<RunOut, SimError>) -> RunOut {
    r.unwrap_or_else(|e| {
        eprintln!("memtamer sim tahoe: {e}");
        RunOut {
            policy,
            makespan_ms: f64::NAN,
            records: Vec::new(),
            tier: TierStats::default(),
            counters: Vec::new(),
        }
    })
}

/// Where a dispatch's moves run (thesis §4.3.3): those of the task about
/// to start (`on_worker`: its own blocks and the evictions that make room
/// for them) join `own`, which its worker runs before the task, in order;
/// the look-ahead's go to the helper thread's queue, in order, and overlap
/// with computation. Shared by Tahoe's policy and the oracle, so both
/// split a plan the same way.
fn route_moves(on_worker: bool, moves: Vec<MoveReq>, own: &mut Vec<MoveReq>, tier: &mut TierSpace) {
    if on_worker {
        own.extend(moves);
    } else {
        for m in moves {
            tier.request(m);
        }
    }
}

/// The policies of round 1 (references and baselines without inputs).
fn round1(k: usize) -> Box<dyn TaskPolicy> {
    match k {
        0 => Box::new(Fixed(FixedKind::AllDram)),
        1 => Box::new(Fixed(FixedKind::RoundRobin)),
        2 => Box::new(FirstTouch::default()),
        3 => Box::new(StaticHot),
        4 => Box::new(Oracle::new(CORUN - 1)),
        5 => Box::new(Oracle::checked(CORUN - 1)),
        _ => Box::new(Oracle::wide(WORKERS as usize)),
    }
}

/// Runs every case on every platform (see the module doc); `jobs` worker
/// threads for independent runs (0 = all cores); Tahoe predicts partial
/// placements with `form`. `out_fault_ns`: also run Tahoe placing the
/// `out` blocks its tasks write whole without a copy, with this page-fault
/// time per page (`tahoe-outnocopy`, docs/notebook/tahoe.md "Out blocks placed
/// without a copy"); None: not run, the tables are Tahoe's as before.
/// `learn`: where Tahoe's all-slow times come from ([`ModelLearning`]).
/// `os_touch`: the OS also places Tahoe's run-time first touches in free
/// DRAM, and Tahoe adopts them ([`TahoePolicy::with_os_touch`], an
/// ablation); false: they start in the slow tier, as the thesis starts
/// every page (§4.3.5). `rw_check`: the check prices loads and stores
/// with their own slopes, fitted leave-one-out like beta
/// ([`memtamer_tahoe::benefit::RwSlopes`]); false: one slope per type (the
/// tables before branch `tahoera`).
#[allow(clippy::too_many_arguments)]
pub fn evaluate(
    platforms: &[String],
    cases: &[Case],
    seed: u64,
    jobs: usize,
    form: PartialForm,
    out_fault_ns: Option<f64>,
    learn: ModelLearning,
    os_touch: bool,
    rw_check: bool,
) -> Result<Vec<Measured>, SimError> {
    let plats: Vec<Platform> = platforms
        .iter()
        .map(|p| load_platform(p))
        .collect::<Result<_, _>>()?;
    let pairs: Vec<(usize, usize)> = (0..plats.len())
        .flat_map(|p| (0..cases.len()).map(move |c| (p, c)))
        .collect();
    let cap = |c: usize| capacity(&cases[c].graph, cases[c].ratio);
    // Round 0: all-slow (bounds every other run's duration).
    let slow: Vec<RunOut> = parallel_map(
        &pairs,
        jobs,
        Some(("tahoe all-slow", "runs")),
        |_, &(p, c)| {
            run(
                &plats[p],
                cases[c].graph.clone(),
                Box::new(Fixed(FixedKind::AllSlow)),
                cap(c),
                SLOW_LIMIT_MS,
                seed,
            )
        },
    )?;
    let limit = |i: usize| 8.0 * slow[i].makespan_ms + 5.0;
    // Round 1: references, first touch, static, the two MIN oracles;
    // Unimem.
    let items: Vec<(usize, usize)> = (0..pairs.len())
        .flat_map(|i| (0..R1).map(move |k| (i, k)))
        .collect();
    let r1: Vec<RunOut> = parallel_map(
        &items,
        jobs,
        Some(("tahoe references", "runs")),
        |_, &(i, k)| {
            let (p, c) = pairs[i];
            let pol: Box<dyn TaskPolicy> = if k < R1 - 1 {
                round1(k)
            } else {
                let g = &cases[c].graph;
                let means = type_means(g, &slow[i].records);
                let mut per_type = vec![0usize; g.types.len()];
                for t in &g.tasks {
                    per_type[t.ty] += 1;
                }
                let iters = g.iterations.max(1) as f64;
                let times = means
                    .iter()
                    .zip(&per_type)
                    .map(|(m, &n)| m.1 * 1e-9 * n as f64 / WORKERS as f64 / iters)
                    .collect();
                Box::new(UnimemTasks::new(
                    unimem_model(&plats[p])?,
                    PhaseTimes(times),
                ))
            };
            let name = pol.name();
            Ok(unfinished(
                name,
                run(
                    &plats[p],
                    cases[c].graph.clone(),
                    pol,
                    cap(c),
                    limit(i),
                    seed,
                ),
            ))
        },
    )?;
    // Leave-one-out fit of the fallback per platform and case, on each
    // pair's (accesses, all-slow, all-DRAM) per type, computed once.
    let samples: Vec<Vec<(f64, f64, f64)>> = pairs
        .iter()
        .enumerate()
        .map(|(i, &(_, c))| {
            let g = &cases[c].graph;
            let s = type_means(g, &slow[i].records);
            let d = type_means(g, &r1[i * R1].records);
            s.iter().zip(&d).map(|(s, d)| (s.0, s.1, d.1)).collect()
        })
        .collect();
    let same_platform = &pairs;
    let others = |i: usize| {
        (0..same_platform.len())
            .filter(move |&j| j != i && same_platform[j].0 == same_platform[i].0)
    };
    let betas: Vec<f64> = (0..pairs.len())
        .map(|i| {
            let v: Vec<(f64, f64, f64)> =
                others(i).flat_map(|j| samples[j].iter().copied()).collect();
            LinearAccess::fit(&v).map(|m| m.beta_ns).unwrap_or(0.0)
        })
        .collect();
    // The check's per-load and per-store slopes, leave-one-out like beta,
    // on (loads, stores, all-slow less all-DRAM time) per type.
    let rw_samples: Vec<Vec<(f64, f64, f64)>> = pairs
        .iter()
        .enumerate()
        .map(|(j, &(_, c))| {
            if !rw_check {
                return Vec::new();
            }
            let stores = type_stores(&cases[c].graph);
            samples[j]
                .iter()
                .zip(stores)
                .map(|(&(acc, s, d), w)| ((acc - w).max(0.0), w.min(acc), s - d))
                .collect()
        })
        .collect();
    let rw: Vec<Option<RwSlopes>> = (0..pairs.len())
        .map(|i| {
            let v: Vec<(f64, f64, f64)> = others(i)
                .flat_map(|j| rw_samples[j].iter().copied())
                .collect();
            RwSlopes::fit(&v)
        })
        .collect();
    // Copy cost per page for the cost-benefit check, measured leave-one-out
    // like beta: the oracle's copies (time per moved page, both directions,
    // under the contention of its runs) on the other benchmarks.
    let copy_ns: Vec<Option<f64>> = (0..pairs.len())
        .map(|i| {
            let (ps, pages) = (0..pairs.len())
                .filter(|&j| j != i && pairs[j].0 == pairs[i].0)
                .map(|j| &r1[j * R1 + 4].tier)
                .fold((0u64, 0u64), |a, t| (a.0 + t.copy_ps, a.1 + t.pages_moved));
            (pages > 0).then(|| ps as f64 / NS as f64 / pages as f64)
        })
        .collect();
    // Round 2: Tahoe with the check, and without it (the thesis's planner,
    // also deciding at ready-queue entry); each with sibling scheduling
    // (§4.3.6) and, for the Figure 4.6-like ablation, without it.
    let mut r2_runs: Vec<(bool, bool, bool)> = R2.iter().map(|&(c, s)| (c, s, false)).collect();
    if out_fault_ns.is_some() {
        r2_runs.push((true, true, true));
    }
    let items2: Vec<(usize, bool, bool, bool)> = (0..pairs.len())
        .flat_map(|i| {
            r2_runs
                .iter()
                .map(move |&(check, sib, out)| (i, check, sib, out))
        })
        .collect();
    let r2: Vec<RunOut> = parallel_map(
        &items2,
        jobs,
        Some(("tahoe", "runs")),
        |_, &(i, check, sib, out)| {
            let (p, c) = pairs[i];
            let pol = TahoePolicy::new(
                (cap(c) / PAGE) as usize,
                betas[i],
                CORUN,
                if check { copy_ns[i] } else { None },
                FIRST_TOUCH,
                form,
            )
            .with_learning(learn)
            .with_rw_slopes(rw[i]);
            let pol = if os_touch { pol.with_os_touch() } else { pol };
            let pol = if sib { pol } else { pol.without_siblings() };
            let pol = match out_fault_ns {
                Some(f) if out => pol.with_out_no_copy(f),
                _ => pol,
            };
            let name = pol.name();
            Ok(unfinished(
                name,
                run(
                    &plats[p],
                    cases[c].graph.clone(),
                    Box::new(pol),
                    cap(c),
                    limit(i),
                    seed,
                ),
            ))
        },
    )?;
    let n2 = r2_runs.len();
    let mut out = Vec::new();
    for (i, &(p, c)) in pairs.iter().enumerate() {
        let mut runs = BTreeMap::new();
        for r in std::iter::once(&slow[i])
            .chain(&r1[i * R1..i * R1 + R1])
            .chain(&r2[i * n2..i * n2 + n2])
        {
            runs.insert(r.policy.clone(), r.clone());
        }
        let pick = ORACLE_CANDIDATES
            .iter()
            .filter_map(|n| runs.get(*n))
            .filter(|r| r.makespan_ms.is_finite())
            .min_by(|a, b| a.makespan_ms.total_cmp(&b.makespan_ms))
            .cloned();
        let oracle_pick = pick.as_ref().map_or(String::new(), |r| r.policy.clone());
        if let Some(r) = pick {
            runs.insert("oracle".into(), r);
        }
        out.push(Measured {
            platform: plats[p].name.clone(),
            bench: cases[c].graph.name.clone(),
            capacity: cap(c),
            runs,
            beta_ns: betas[i],
            copy_ns_per_page: copy_ns[i].unwrap_or(f64::NAN),
            oracle_pick,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
