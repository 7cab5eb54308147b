//! Golden test for placement (issue: the daemon makes the simulator's
//! decisions for the same inputs). The same two-socket SMT2 machine is
//! described twice: as a fake sysfs tree that the daemon reads, and as the
//! simulator's `ahn` platform cut to two cores per socket. Both must give the
//! same topology; then the daemon's policy (built from a config file, as
//! `memtamer run` builds it) and the simulator's `placement` policy get the
//! same synthetic observations and must emit the same decisions, which are
//! also checked against the expected moves written out below.

use std::path::Path;

use memtamer_control::config::DaemonConfig;
use memtamer_control::daemon::build_policy_on;
use memtamer_core::topology::Topology;
use memtamer_core::{AccessStats, CpuSet, Decision, Observation, Policy, ThreadObs};

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    std::fs::write(p, text).expect("write");
}

/// The simulator's numbering in sysfs: 2 nodes x 2 cores x SMT2; CPU c is
/// core c % 4, its sibling c +- 4; cores 0-1 on node 0.
fn fake_sysfs(root: &Path) {
    write(root, "cpu/online", "0-7\n");
    for cpu in 0..8u32 {
        let core = cpu % 4;
        let base = format!("cpu/cpu{cpu}");
        write(
            root,
            &format!("{base}/topology/thread_siblings_list"),
            &format!("{},{}\n", core, core + 4),
        );
        write(root, &format!("{base}/cache/index3/level"), "3\n");
        write(
            root,
            &format!("{base}/cache/index3/shared_cpu_list"),
            if core < 2 { "0-1,4-5\n" } else { "2-3,6-7\n" },
        );
    }
    write(root, "node/node0/cpulist", "0-1,4-5\n");
    write(root, "node/node1/cpulist", "2-3,6-7\n");
    write(root, "node/node2/cpulist", "\n"); // PM as a CPU-less node
    write(root, "node/has_memory", "0-2\n");
}

fn two_cores() -> std::collections::BTreeMap<String, toml::Value> {
    [("cpu.cores_per_socket".to_string(), toml::Value::Integer(2))]
        .into_iter()
        .collect()
}

fn sim_platform() -> memtamer_sim::Platform {
    memtamer_sim::experiment::load_platform("ahn", &two_cores()).expect("ahn platform")
}

fn sim_topology(platform: &memtamer_sim::Platform) -> Topology {
    let facts = memtamer_sim::platform_cpu_facts(platform);
    Topology::build(&facts, &[2]).expect("sim topology")
}

fn set(s: &str) -> CpuSet {
    CpuSet::parse_list(s).expect("cpu list")
}

/// Ahn Table 2 in small: 2 SPEC-like threads (1, 2) on node 0's cores and 2
/// PM writers (3, 4) on node 1's, one per core; then at 30 ms thread 2 starts
/// writing too.
fn window(i: u64, cpus: &[(u32, u32, CpuSet)]) -> Observation {
    let writes = |tid: u32| match tid {
        3 | 4 => 40_000_000,
        2 if i >= 30 => 40_000_000,
        _ => 0,
    };
    Observation {
        start_ns: i * 1_000_000,
        duration_ns: 1_000_000,
        threads: cpus
            .iter()
            .map(|&(tid, cpu, allowed)| ThreadObs {
                tid,
                job: 0,
                cpu: Some(cpu),
                allowed,
                pm: Some(AccessStats {
                    write_bytes: writes(tid),
                    ..Default::default()
                }),
                dram: None,
                cpu_util: Some(1.0),
                gate_wait_ns: None,
            })
            .collect(),
        ..Default::default()
    }
}

/// Runs 60 windows, applying each decision like an actuator (a single-CPU
/// set moves the thread there), and returns every decision.
fn drive(policy: &mut dyn Policy) -> Vec<Decision> {
    let all = set("0-7");
    let mut state: Vec<(u32, u32, CpuSet)> =
        vec![(1, 0, all), (2, 1, all), (3, 2, all), (4, 3, all)];
    let mut out = Vec::new();
    for i in 0..60 {
        let d = policy.decide(&window(i, &state));
        for (tid, s) in &d.thread_cpus {
            if let Some(t) = state.iter_mut().find(|t| t.0 == *tid) {
                t.2 = *s;
                if s.len() == 1 {
                    t.1 = s.iter().next().expect("one") as u32;
                }
            }
        }
        out.push(d);
    }
    out
}

#[test]
fn the_daemon_and_the_simulator_place_alike() {
    let root = std::env::temp_dir().join(format!("mt-placement-golden-{}", std::process::id()));
    fake_sysfs(&root);
    let host = memtamer_sense::topology::read_topology(&root).expect("fake sysfs");
    let _ = std::fs::remove_dir_all(&root);
    let platform = sim_platform();
    let sim = sim_topology(&platform);
    assert_eq!(
        host, sim,
        "sysfs and the platform file describe the same machine"
    );
    assert_eq!(host.memory_tiers, vec![2]);

    // the daemon, configured with the simulator's placement parameters
    let cfg = DaemonConfig::parse(
        &format!(
            "[isolation]\npolicy = \"off\"\n[placement]\nenabled = true\nperiod_ms = {}\nmin_residency_ms = {}\n[[job]]\nname = \"all\"\nclass = \"be\"\nmatch = {{ comm = \"x\" }}\n",
            memtamer_sim::experiment::SIM_PLACEMENT_PERIOD_MS,
            memtamer_sim::experiment::SIM_PLACEMENT_RESIDENCY_MS,
        ),
        "golden.toml",
    )
    .expect("config");
    let mut daemon = build_policy_on(&cfg, &set("0-7"), Ok(host)).expect("daemon policy");
    let mut simulated =
        memtamer_sim::experiment::policy_by_name("placement", &platform).expect("sim policy");

    let d_daemon = drive(&mut daemon);
    let d_sim = drive(simulated.as_mut());
    let affinities = |ds: &[Decision]| -> Vec<(usize, Vec<(u32, String)>)> {
        ds.iter()
            .enumerate()
            .filter(|(_, d)| !d.thread_cpus.is_empty())
            .map(|(i, d)| {
                (i, {
                    let mut v: Vec<(u32, String)> = d
                        .thread_cpus
                        .iter()
                        .map(|(t, s)| (*t, s.to_string()))
                        .collect();
                    v.sort();
                    v
                })
            })
            .collect()
    };
    assert_eq!(affinities(&d_daemon), affinities(&d_sim));

    // the expected decisions (sorted by thread):
    // * 0 ms: the node-level write pass swaps writer 3 (node 1) with SPEC 1
    //   (node 0), each taking the other's CPU; writer 4 is held where it is;
    // * 10 ms: SPEC 1 has rested its 10 ms and does no PM I/O: it gets its
    //   own mask back (Linux may balance it again);
    // * 30 ms: SPEC 2 starts writing: node 0 now carries two writers and
    //   node 1 one; no swap cuts that gap (it would only mirror it), so
    //   thread 2 is held on its CPU.
    let s = |v: &str| v.to_string();
    assert_eq!(
        affinities(&d_sim),
        vec![
            (0, vec![(1, s("2")), (3, s("0")), (4, s("3"))]),
            (10, vec![(1, s("0-7"))]),
            (30, vec![(2, s("1"))]),
        ]
    );
    let reasons: Vec<String> = d_sim.iter().flat_map(|d| d.reasons.clone()).collect();
    assert_eq!(
        reasons,
        vec![
            "swap thread 3 cpu 2 -> 0 (numa write load)",
            "swap thread 1 cpu 0 -> 2 (numa write load)",
            "hold thread 4 on cpu 3 (pm i/o)",
            "release thread 1 to cpus 0-7 (no pm i/o)",
            "hold thread 2 on cpu 1 (pm i/o)",
        ]
    );
}

#[test]
fn placement_without_a_topology_is_a_config_error_naming_the_key() {
    let text = "[isolation]\npolicy = \"off\"\n[placement]\nenabled = true\n\
                [[job]]\nname = \"all\"\nclass = \"be\"\nmatch = { comm = \"x\" }\n";
    let cfg = DaemonConfig::parse(text, "p.toml").expect("config");
    let err = build_policy_on(&cfg, &set("0-7"), Err("no sysfs".into()))
        .err()
        .expect("refused");
    let msg = err.to_string();
    assert!(
        msg.contains("placement.enabled") && msg.contains("no sysfs"),
        "{msg}"
    );
    // without placement, an unknown topology only changes the BE CPU order
    let off = DaemonConfig::parse(&text.replace("enabled = true", "enabled = false"), "p.toml")
        .expect("config");
    assert!(build_policy_on(&off, &set("0-7"), Err("no sysfs".into())).is_ok());
}
