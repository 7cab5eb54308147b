//! Tests of `tier_eval.rs`.

use super::*;
use crate::config::phased::{AccessSpec, ObjectSpec, PhaseSpec};
use crate::config::{JobSpec, Pattern, Scenario, WorkloadSpec};
use crate::engine::{Engine, EngineConfig};
use crate::runner::metrics;

/// Idle load latency of `region` on `p` (one latency probe).
fn idle_ns(p: &Platform, region: &str) -> f64 {
    let job = JobSpec {
        name: "probe".into(),
        class: Default::default(),
        threads: 1,
        cpus: Some("0".into()),
        start_cpus: None,
        group: None,
        workload: WorkloadSpec::LatencyProbe {
            region: region.into(),
            pattern: Pattern::Rand,
        },
    };
    let mut sc = Scenario::with_jobs("probe", &p.name, vec![job]);
    sc.duration_ms = 0.5;
    sc.warmup_ms = 0.1;
    let cfg = EngineConfig {
        seed: 1,
        warmup: 100_000_000,
        duration: 500_000_000,
        window: 1_000_000_000,
        sampler: None,
        trace_search: false,
    };
    let r = Engine::new(p, &sc, &cfg)
        .unwrap()
        .run(&mut memtamer_core::Baseline);
    metrics(&sc, p, &r)["probe.latency_ns"]
}

#[test]
fn emulated_platforms_emulate_what_they_say() {
    // 4x latency: a pointer chase over the slow tier takes 4x as long per
    // load as over DRAM (±10%), Quartz's delays included
    let p = load_platform("emul-lat4").unwrap();
    let (d, s) = (idle_ns(&p, "dram"), idle_ns(&p, "slow"));
    assert!((s / d - 4.0).abs() < 0.4, "{d} {s}");
    // 1/2 bandwidth: same idle latency, half the channels
    let p = load_platform("emul-bw2").unwrap();
    let (d, s) = (idle_ns(&p, "dram"), idle_ns(&p, "slow"));
    assert!((s / d - 1.0).abs() < 0.05, "{d} {s}");
    let chans = |r: &str| {
        p.regions
            .iter()
            .find(|x| x.name == r)
            .map_or(0, |x| x.channels.len())
    };
    assert_eq!(2 * chans("slow"), chans("dram"));
}

#[test]
fn quartz_platform_latencies_are_the_simulated_ones() {
    // the hardware latencies [quartz] names are what Quartz would measure
    // at start-up on this platform without its delays (src/lib/measure_lat.c)
    // (Unimem's emul-lat4 and Tahoe's tahoe-4x-latency, issue 21)
    for p in [
        load_platform("emul-lat4").unwrap(),
        crate::tahoe_eval::load_platform("tahoe-4x-latency").unwrap(),
    ] {
        let q = p.quartz.clone().unwrap();
        let mut hw = p.clone();
        hw.quartz = None;
        let (d, s) = (idle_ns(&hw, "dram"), idle_ns(&hw, "slow"));
        assert!(
            (d / q.hw_local_ns - 1.0).abs() < 0.05,
            "{} {d} {q:?}",
            p.name
        );
        assert!(
            (s / q.hw_remote_ns - 1.0).abs() < 0.05,
            "{} {s} {q:?}",
            p.name
        );
        // and the emulated latency is the target (±5%), 4x DRAM's
        let e = idle_ns(&p, "slow");
        assert!((e / q.target_ns - 1.0).abs() < 0.05, "{} {e} {q:?}", p.name);
        assert!((q.target_ns / q.hw_local_ns - 4.0).abs() < 1e-9, "{q:?}");
    }
}

/// Run time (s) of one rank touching `a` (random loads) and, with
/// `stores`, also `b` (sequential stores) in one phase, all in the slow tier.
fn loads_and_stores_s(p: &Platform, stores: bool) -> f64 {
    let mut access = vec![AccessSpec {
        object: "a".into(),
        bytes: 64 * 1024,
        pattern: Pattern::Rand,
        write_fraction: 0.0,
        dependent: false,
    }];
    if stores {
        access.push(AccessSpec {
            object: "b".into(),
            bytes: 512 * 1024,
            pattern: Pattern::Seq,
            write_fraction: 1.0,
            dependent: false,
        });
    }
    let prog = PhasedProgram {
        objects: vec![
            ObjectSpec {
                name: "a".into(),
                bytes: 1 << 20,
            },
            ObjectSpec {
                name: "b".into(),
                bytes: 1 << 20,
            },
        ],
        phases: vec![PhaseSpec {
            name: "x".into(),
            compute_ns: 0.0,
            comm_ns: 0.0,
            access,
        }],
        iterations: 2,
    };
    run_program(
        p,
        &prog,
        1,
        0,
        PlacementSpec::SlowOnly,
        50.0,
        slow_region(p),
    )
    .unwrap()
    .seconds
}

#[test]
fn quartz_delays_load_stalls_not_store_stalls() {
    // Quartz's stall counter (CYCLE_ACTIVITY:STALLS_L2_PENDING) counts
    // stalls with a load miss pending: time a thread is held up by its
    // stores alone gets no delay, so adding stores costs what it costs on
    // the hardware, not (target / hw_remote) = 2.4x that
    let p = load_platform("emul-lat4").unwrap();
    let mut hw = p.clone();
    hw.quartz = None;
    let extra_hw = loads_and_stores_s(&hw, true) - loads_and_stores_s(&hw, false);
    let extra_q = loads_and_stores_s(&p, true) - loads_and_stores_s(&p, false);
    assert!(extra_hw > 0.0, "{extra_hw}");
    assert!(extra_q / extra_hw < 1.3, "{extra_q} {extra_hw}");
    // loads alone are delayed (the emulation is on)
    assert!(loads_and_stores_s(&p, false) > 1.5 * loads_and_stores_s(&hw, false));
}

fn small() -> TierScenario {
    let mut s = load_scenario("nek").unwrap();
    s.ranks = 2;
    if let Some(p) = &mut s.program {
        p.iterations = 3;
    }
    s
}

fn run(p: &Platform, s: &TierScenario, pol: PlacementSpec) -> Outcome {
    run_program(
        p,
        s.program(),
        s.ranks,
        s.dram_bytes(),
        pol,
        s.max_ms,
        slow_region(p),
    )
    .unwrap()
}

#[test]
fn placement_decides_where_accesses_go_and_migrations_are_traffic() {
    let p = load_platform("emul-lat4").unwrap();
    let mut s = small();
    if let Some(p) = &mut s.program {
        p.iterations = 4;
    }
    let dram = run(&p, &s, PlacementSpec::DramOnly);
    let slow = run(&p, &s, PlacementSpec::SlowOnly);
    assert_eq!(dram.dram_line_share, 1.0);
    assert_eq!(slow.dram_line_share, 0.0);
    assert!(slow.seconds > 1.2 * dram.seconds, "{slow:?} {dram:?}");
    assert_eq!(dram.stats.moves + slow.stats.moves, 0);
    // Unimem: profiled iteration in place, then moves that take time,
    // never more DRAM than the budget, exposed time within copy time
    let cal = calibrate(&p, s.ranks, slow_region(&p)).unwrap();
    let model = cal.model;
    assert!(model.slow_lat > 2.0 * model.dram_lat, "{model:?}");
    // the chase's CF_lat is fitted (a serial miss costs more than an
    // access at the ranks' parallelism) but not planned with
    assert!(cal.factors.lat.value > 1.0, "{:?}", cal.factors);
    assert_eq!(model.cf_lat, 1.0);
    // without the initial placement everything starts slow, so the
    // decision must move objects in
    let u = run(
        &p,
        &s,
        PlacementSpec::Unimem {
            model,
            search: SearchSpec::Both,
            initial_placement: false,
            profile_iterations: 1,
        },
    );
    assert_eq!(u.policy, "unimem");
    assert!(u.stats.moves > 0 && u.stats.copy_ps > 0, "{u:?}");
    assert!(u.stats.peak_dram_bytes <= s.dram_bytes(), "{u:?}");
    // exposed may exceed the copies by the helper's wake-up (<= 1 us poll) per move
    assert!(
        u.stats.exposed_ps <= u.stats.copy_ps + u.stats.moves * 1_100_000,
        "{u:?}"
    );
    assert!(u.seconds < slow.seconds, "{u:?} {slow:?}");
    assert!(u.dram_line_share > 0.0 && u.dram_line_share < 1.0);
}

#[test]
fn hot_page_promotes_within_capacity() {
    let p = load_platform("emul-lat4").unwrap();
    let s = small();
    let h = run(
        &p,
        &s,
        PlacementSpec::HotPage {
            scan_us: 50.0,
            max_pages_per_scan: 32,
        },
    );
    assert!(h.stats.pages_moved > 0, "{h:?}");
    assert!(h.stats.peak_dram_bytes <= s.dram_bytes(), "{h:?}");
}

#[test]
fn scenario_and_profile_errors_name_the_problem() {
    let e = TierScenario::parse(
        "x.toml",
        "name = \"x\"\nranks = 0\ndram_share = 0.5\nmax_ms = 1.0\n",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("ranks"), "{e}");
    let e = parse_profile("p", "# memtamer-phase-profile v1\naccess a 10\n", 2)
        .unwrap_err()
        .to_string();
    assert!(e.contains("p:2") && e.contains("before any phase"), "{e}");
    let e = parse_profile("p", "nope\n", 2).unwrap_err().to_string();
    assert!(e.contains("memtamer-phase-profile v1"), "{e}");
    let prog = parse_profile(
        "p",
        "# memtamer-phase-profile v1\nobject a 8192\nobject b 4096\nphase spmv 50000\naccess a 128\naccess b 4\nphase dot 1000\naccess b 64\n",
        5,
    )
    .unwrap();
    assert_eq!(prog.phases.len(), 2);
    assert_eq!(prog.phases[0].access[0].bytes, 128 * 64);
    assert_eq!(prog.iterations, 5);
    let e = parse_profile(
        "p",
        "# memtamer-phase-profile v1\nobject a 64\nphase x 5\naccess zz 1\n",
        1,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("unknown object zz"), "{e}");
}

/// A tiny phased scenario with `[[program.phases]]` tables; `p2_compute`
/// and `b_access` are spliced into its second phase.
fn phased_text(p2_compute: &str, b_access: &str) -> String {
    format!(
        "name = \"tiny\"\nranks = 1\ndram_share = 0.5\nmax_ms = 10.0\n\n\
         [program]\niterations = 2\nobjects = [\n  {{ name = \"a\", bytes = 65536 }},\n  \
         {{ name = \"b\", bytes = 65536 }},\n]\n\n\
         [[program.phases]]\nname = \"p1\"\ncompute_ns = 5.0\naccess = [\n  \
         {{ object = \"a\", bytes = 4096, pattern = \"seq\" }},\n]\n\n\
         [[program.phases]]\nname = \"p2\"\ncompute_ns = {p2_compute} # the second phase\n\
         access = [\n  {{ object = \"a\", bytes = 4096, pattern = \"seq\" }},\n  \
         {{ object = \"b\", bytes = 4096, pattern = \"rand\"{b_access} }},\n]\n"
    )
}

#[test]
fn errors_inside_phase_tables_name_their_line_and_key() {
    let ok = phased_text("7.0", "");
    assert!(TierScenario::parse("t.toml", &ok).is_ok());
    let line_of =
        |text: &str, needle: &str| text.lines().position(|l| l.contains(needle)).unwrap() + 1;
    // a phase's own field: the line of that field in the second phase
    let t = phased_text("nan", "");
    let e = TierScenario::parse("t.toml", &t).unwrap_err().to_string();
    let want = format!(
        "t.toml:{}: key `program.phases[1].compute_ns`: phase p2: compute_ns must be >= 0",
        line_of(&t, "compute_ns = nan")
    );
    assert_eq!(e, want);
    // an access's field: the line of that access (the second one of p2)
    let t = phased_text("7.0", ", write_fraction = 2.0");
    let e = TierScenario::parse("t.toml", &t).unwrap_err().to_string();
    let want = format!(
        "t.toml:{}: key `program.phases[1].access[1].write_fraction`: phase p2: write_fraction must be in [0, 1]",
        line_of(&t, "write_fraction = 2.0")
    );
    assert_eq!(e, want);
    // an unknown object: its access's line
    let t = ok.replace("{ object = \"b\",", "{ object = \"zz\",");
    let e = TierScenario::parse("t.toml", &t).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!(
            "t.toml:{}: key `program.phases[1].access[1].object`",
            line_of(&t, "\"zz\"")
        )),
        "{e}"
    );
    // phases written inline: the `phases =` line
    let t = "name = \"x\"\nranks = 1\ndram_share = 0.5\nmax_ms = 1.0\n[program]\niterations = 1\n\
             objects = [{ name = \"a\", bytes = 64 }]\n\
             phases = [{ name = \"p\", comm_ns = -1.0 }]\n";
    let e = TierScenario::parse("t.toml", t).unwrap_err().to_string();
    assert!(
        e.starts_with("t.toml:8: key `program.phases[0].comm_ns`"),
        "{e}"
    );
}

#[test]
fn recorded_builtins_parse_and_say_where_they_come_from() {
    for (name, text) in PROFILES {
        let (p, meta) = crate::tier_profile::parse_recording(name, text, 1).unwrap();
        assert_eq!(meta.version, 2, "{name}");
        assert_eq!(meta.rank, Some((1, 4)), "{name}");
        assert_eq!(meta.iteration, Some(1), "{name}");
        assert!(p.phases.iter().any(|ph| !ph.access.is_empty()), "{name}");
    }
    for (name, _) in RECORDED {
        let s = load_scenario(name).unwrap();
        assert!(s.profile.is_some(), "{name}");
        let calls: f64 = s.program().phases.iter().map(|p| p.comm_ns).sum();
        assert_eq!(s.drop_calls, calls == 0.0, "{name}");
        let compute: f64 = s.program().phases.iter().map(|p| p.compute_ns).sum();
        assert_eq!(s.drop_compute, compute == 0.0, "{name}");
    }
    let e = TierScenario::parse(
        "x.toml",
        "name = \"x\"\nranks = 1\ndram_share = 0.5\nmax_ms = 1.0\ndrop_calls = true\n\
         [program]\niterations = 1\nobjects = [{ name = \"a\", bytes = 4096 }]\n\
         [[program.phases]]\nname = \"p\"\n",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("drop_calls needs a profile"), "{e}");
}

#[test]
fn a_recorded_builtin_runs() {
    let p = load_platform("emul-bw2").unwrap();
    let mut s = load_scenario("cg-recorded-nocalls").unwrap();
    s.ranks = 2;
    if let Some(p) = &mut s.program {
        p.iterations = 2;
    }
    let dram = run(&p, &s, PlacementSpec::DramOnly);
    let slow = run(&p, &s, PlacementSpec::SlowOnly);
    assert_eq!(dram.dram_line_share, 1.0);
    assert_eq!(slow.dram_line_share, 0.0);
    assert!(
        dram.seconds > 0.0 && slow.seconds >= dram.seconds,
        "{slow:?} {dram:?}"
    );
}
