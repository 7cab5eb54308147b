use super::bench::{heat, random_access, strassen};
use super::*;

fn quarter() -> Platform {
    load_platform("tahoe-quarter-bw").unwrap()
}

#[test]
fn platforms_emulate_a_quarter_bandwidth_and_four_times_latency() {
    let q = unimem_model(&quarter()).unwrap();
    assert!((q.dram_bw / q.slow_bw - 4.0).abs() < 1e-9, "{q:?}");
    assert!((q.slow_lat / q.dram_lat - 1.0).abs() < 1e-9);
    let l = unimem_model(&load_platform("tahoe-4x-latency").unwrap()).unwrap();
    assert!((l.dram_bw / l.slow_bw - 1.0).abs() < 1e-9);
    // 81 ns DRAM, 324 ns slow tier
    assert!((l.dram_lat * 1e9 - 81.0).abs() < 1.0, "{l:?}");
    assert!((l.slow_lat / l.dram_lat - 4.0).abs() < 0.03, "{l:?}");
}

fn small() -> Arc<TaskGraph> {
    Arc::new(heat(4, 32, 3))
}

#[test]
fn the_slow_tier_is_slower_and_every_task_completes() {
    let p = quarter();
    let g = small();
    let cap = capacity(&g, 4);
    let slow = run(
        &p,
        g.clone(),
        Box::new(Fixed(FixedKind::AllSlow)),
        cap,
        200.0,
        1,
    )
    .unwrap();
    let dram = run(
        &p,
        g.clone(),
        Box::new(Fixed(FixedKind::AllDram)),
        cap,
        200.0,
        1,
    )
    .unwrap();
    assert!(slow
        .records
        .iter()
        .all(|r| r.ended >= r.started && r.lines > 0));
    assert!(slow.records.iter().all(|r| r.dram_lines == 0));
    assert!(dram.records.iter().all(|r| r.dram_lines == r.lines));
    assert!(
        dram.makespan_ms < slow.makespan_ms,
        "dram {} slow {}",
        dram.makespan_ms,
        slow.makespan_ms
    );
    // the dependence order holds: a task starts after its predecessors end
    let preds = g.predecessors();
    for (t, ps) in preds.iter().enumerate() {
        for &q in ps {
            assert!(slow.records[t].dispatched >= slow.records[q].ended);
        }
    }
    // same seed, same result
    let again = run(&p, g, Box::new(Fixed(FixedKind::AllSlow)), cap, 200.0, 1).unwrap();
    assert_eq!(again.makespan_ms, slow.makespan_ms);
}

#[test]
fn policies_respect_the_dram_capacity() {
    let p = quarter();
    let g = Arc::new(random_access(1 << 20, 8, 3, 256));
    let cap = capacity(&g, 4);
    let policies: Vec<Box<dyn TaskPolicy>> = vec![
        Box::new(FirstTouch::default()),
        Box::new(StaticHot),
        Box::new(Oracle::new(3)),
        Box::new(Oracle::checked(3)),
        Box::new(Oracle::wide(8)),
        Box::new(TahoePolicy::new(
            (cap / PAGE) as usize,
            50.0,
            CORUN,
            None,
            false,
            PartialForm::Additive,
        )),
        Box::new(TahoePolicy::new(
            (cap / PAGE) as usize,
            50.0,
            CORUN,
            Some(1.0),
            true,
            PartialForm::ParallelTiers,
        )),
    ];
    for pol in policies {
        let r = run(&p, g.clone(), pol, cap, 200.0, 1).unwrap();
        // Migrating policies: a block being demoted holds its DRAM until its
        // copy is done while the promotion planned in its place already
        // counts, so the peak may pass the capacity by one block in flight.
        let slack = match r.policy.as_str() {
            "oracle-min" | "oracle-min-checked" | "oracle-min-wide" | "tahoe" | "tahoe-nocheck" => {
                g.blocks[0].bytes
            }
            _ => 0,
        };
        assert!(
            r.tier.peak_dram_bytes <= cap + slack,
            "{}: peak {} > {cap}",
            r.policy,
            r.tier.peak_dram_bytes
        );
        if r.policy == "unmanaged" || r.policy == "static" {
            assert_eq!(r.tier.peak_dram_bytes, cap, "{}", r.policy);
            assert_eq!(r.tier.bytes_moved, 0);
        }
        if r.policy.starts_with("tahoe") {
            // one representative (one type), then placements; without the
            // check they move pages; with it, none: each page gets about 8
            // updates per task (1/8 per line), far below the two passes
            // of slow-tier traffic a move into the full DRAM costs
            let c: BTreeMap<_, _> = r.counters.iter().copied().collect();
            assert_eq!(c["profiled"], 1.0);
            if r.policy == "tahoe-nocheck" {
                assert!(c["promoted_pages"] > 0.0 && r.tier.bytes_moved > 0);
            } else {
                assert_eq!(c["promoted_pages"], 0.0, "{}", r.policy);
            }
            assert_eq!(r.records.iter().filter(|x| x.profiled).count(), 1);
            assert!(
                r.records
                    .iter()
                    .filter(|x| x.predicted_ns.is_some())
                    .count()
                    > 10
            );
        }
    }
}

#[test]
fn unfinished_runs_are_an_error() {
    let e = run(
        &quarter(),
        small(),
        Box::new(Fixed(FixedKind::AllSlow)),
        0,
        0.01,
        1,
    )
    .unwrap_err();
    assert!(e.to_string().contains("tasks completed"), "{e}");
}

#[test]
fn a_copy_dearer_than_any_saving_moves_nothing() {
    let p = quarter();
    let g = Arc::new(random_access(1 << 20, 8, 3, 256));
    let cap = capacity(&g, 4);
    let pol = TahoePolicy::new(
        (cap / PAGE) as usize,
        50.0,
        CORUN,
        Some(1e12),
        false,
        PartialForm::Additive,
    );
    let r = run(&p, g, Box::new(pol), cap, 200.0, 1).unwrap();
    assert_eq!(r.tier.bytes_moved, 0);
    let c: BTreeMap<_, _> = r.counters.iter().copied().collect();
    assert_eq!(c["promoted_pages"], 0.0);
    assert!(c["decisions"] > 10.0);
}

#[test]
fn the_checked_oracle_fetches_only_blocks_reused_enough() {
    let p = quarter();
    // one round of a quarter pass per block: nothing is worth a copy
    let once = Arc::new(random_access(1 << 20, 8, 1, 512));
    let cap = capacity(&once, 4);
    let r = run(
        &p,
        once.clone(),
        Box::new(Oracle::checked(3)),
        cap,
        200.0,
        1,
    )
    .unwrap();
    assert_eq!(r.tier.bytes_moved, 0);
    let plain = run(&p, once, Box::new(Oracle::new(3)), cap, 200.0, 1).unwrap();
    assert!(plain.tier.bytes_moved > 0);
    // 4 passes per block and task: the blocks the DRAM lacks are fetched
    let hot = Arc::new(random_access(1 << 20, 32, 1, 2048));
    let r = run(&p, hot, Box::new(Oracle::checked(3)), cap, 200.0, 1).unwrap();
    assert!(r.tier.bytes_moved > 0);
    // 2 passes: past the checked oracle's 1.5, short of the wide one's 2.5
    // (a fetch into the full DRAM also writes a victim back)
    let two = Arc::new(random_access(1 << 20, 32, 1, 1024));
    let r = run(&p, two.clone(), Box::new(Oracle::checked(3)), cap, 200.0, 1).unwrap();
    assert!(r.tier.bytes_moved > 0);
    let r = run(&p, two, Box::new(Oracle::wide(8)), cap, 200.0, 1).unwrap();
    assert_eq!(r.tier.bytes_moved, 0);
}

#[test]
fn headroom_measures_stall_first_touch_share_and_corunning_data() {
    let p = quarter();
    // 8 blocks of 128 KiB, one block per task; DRAM a quarter of the data.
    let g = Arc::new(random_access(1 << 20, 8, 3, 256));
    let cap = capacity(&g, 4);
    let mut runs = BTreeMap::new();
    for (name, pol) in [
        (
            "slow-only",
            Box::new(Fixed(FixedKind::AllSlow)) as Box<dyn TaskPolicy>,
        ),
        ("dram-only", Box::new(Fixed(FixedKind::AllDram))),
        ("unmanaged", Box::new(FirstTouch::default())),
        ("static", Box::new(StaticHot)),
    ] {
        runs.insert(
            name.to_string(),
            run(&p, g.clone(), pol, cap, 200.0, 1).unwrap(),
        );
    }
    let m = Measured {
        platform: "q".into(),
        bench: "ra".into(),
        capacity: cap,
        runs,
        beta_ns: 0.0,
        copy_ns_per_page: 0.0,
        oracle_pick: String::new(),
    };
    let h = Headroom::of(&m, &g);
    let ms = |n: &str| m.runs[n].makespan_ms;
    assert!((h.stall - (1.0 - ms("dram-only") / ms("slow-only"))).abs() < 1e-12);
    assert!((h.best_gain - (1.0 - ms("dram-only") / ms("unmanaged"))).abs() < 1e-12);
    assert!(h.stall > 0.0 && h.best_gain > 0.0 && h.best_gain <= h.stall + 1e-9);
    assert!((h.dram_of_data - 0.25).abs() < 1e-9, "{h:?}");
    // Uniform updates: first touch serves about the DRAM's share of the
    // data from DRAM, and full knowledge cannot pick a hotter set.
    assert!((h.unmanaged_dram_acc - 0.25).abs() < 0.05, "{h:?}");
    assert!(
        (h.static_dram_acc - h.unmanaged_dram_acc).abs() < 0.05,
        "{h:?}"
    );
    // 8 workers x one 128 KiB block over a 256 KiB DRAM.
    assert!((h.corun_of_dram - 4.0).abs() < 1e-9, "{h:?}");
}

#[test]
fn sibling_scheduling_groups_siblings_and_keeps_dependences() {
    let p = quarter();
    let g = Arc::new(strassen(2, 4, 16));
    let cap = capacity(&g, 5);
    let preds = g.predecessors();
    let adjacent = |r: &RunOut| {
        let mut order: Vec<usize> = (0..g.tasks.len()).collect();
        order.sort_by_key(|&t| (r.records[t].dispatched, t));
        order
            .windows(2)
            .filter(|w| g.tasks[w[0]].parent == g.tasks[w[1]].parent)
            .count()
    };
    let mut runs = Vec::new();
    for sib in [false, true] {
        let pol = TahoePolicy::new(
            (cap / PAGE) as usize,
            50.0,
            CORUN,
            Some(1000.0),
            true,
            PartialForm::ParallelTiers,
        );
        let pol = if sib { pol } else { pol.without_siblings() };
        let r = run(&p, g.clone(), Box::new(pol), cap, 200.0, 1).unwrap();
        assert_eq!(r.policy, if sib { "tahoe" } else { "tahoe-nosib" });
        for (t, ps) in preds.iter().enumerate() {
            for &q in ps {
                assert!(
                    r.records[t].dispatched >= r.records[q].ended,
                    "{t} after {q}"
                );
            }
        }
        runs.push(r);
    }
    // the reordering runs more siblings back to back than FIFO does
    assert!(
        adjacent(&runs[1]) > adjacent(&runs[0]),
        "{} vs {}",
        adjacent(&runs[1]),
        adjacent(&runs[0])
    );
    // the report's ablation: adjacency as counted here, busy shares in
    // (0, 1], the runs it lacks NaN
    let n = (g.tasks.len() - 1) as f64;
    let m = Measured {
        platform: "q".into(),
        bench: "strassen".into(),
        capacity: cap,
        runs: runs.iter().map(|r| (r.policy.clone(), r.clone())).collect(),
        beta_ns: 50.0,
        copy_ns_per_page: 1000.0,
        oracle_pick: String::new(),
    };
    let s = report::Siblings::of(&m, &g);
    assert_eq!(s.adjacent[0], adjacent(&runs[0]) as f64 / n);
    assert_eq!(s.adjacent[1], adjacent(&runs[1]) as f64 / n);
    assert_eq!(s.ms[1], runs[1].makespan_ms);
    assert!(s.busy[..2].iter().all(|&b| b > 0.0 && b <= 1.0), "{s:?}");
    assert!(s.dram_acc[..2].iter().all(|&d| (0.0..=1.0).contains(&d)));
    assert!(s.ms[2].is_nan() && s.busy[3].is_nan());
    // a flat program (one parent) is served alike with and without it
    let h = small();
    let cap = capacity(&h, 4);
    let ms: Vec<f64> = [false, true]
        .into_iter()
        .map(|sib| {
            let pol = TahoePolicy::new(
                (cap / PAGE) as usize,
                50.0,
                CORUN,
                None,
                false,
                PartialForm::Additive,
            );
            let pol = if sib { pol } else { pol.without_siblings() };
            run(&p, h.clone(), Box::new(pol), cap, 200.0, 1)
                .unwrap()
                .makespan_ms
        })
        .collect();
    assert_eq!(ms[0], ms[1]);
}

#[test]
fn out_blocks_written_whole_are_placed_without_a_copy_only_with_the_ablation() {
    // heat: each task writes its block of the other grid whole (`out`,
    // one sequential pass); no check, all pages start slow, so Tahoe
    // promotes whatever fits, and the written blocks' pages go without a
    // copy only when the ablation is on
    let p = quarter();
    let g = small();
    let cap = capacity(&g, 4);
    let preds = g.predecessors();
    let mut runs = Vec::new();
    for out in [false, true] {
        let pol = TahoePolicy::new(
            (cap / PAGE) as usize,
            50.0,
            CORUN,
            None,
            false,
            PartialForm::ParallelTiers,
        );
        let pol = if out {
            pol.with_out_no_copy(500.0)
        } else {
            pol
        };
        let r = run(&p, g.clone(), Box::new(pol), cap, 200.0, 1).unwrap();
        let name = if out {
            "tahoe-nocheck-outnocopy"
        } else {
            "tahoe-nocheck"
        };
        assert_eq!(r.policy, name);
        for (t, ps) in preds.iter().enumerate() {
            for &q in ps {
                assert!(r.records[t].dispatched >= r.records[q].ended);
            }
        }
        let fresh = r
            .counters
            .iter()
            .find(|c| c.0 == "promoted_fresh_pages")
            .map_or(0.0, |c| c.1);
        if out {
            assert!(r.tier.pages_fresh > 0 && fresh > 0.0, "{:?}", r.tier);
            assert!(r.tier.pages_fresh <= r.tier.pages_moved);
        } else {
            assert_eq!((r.tier.pages_fresh, fresh), (0, 0.0));
        }
        runs.push(r);
    }
    let m = Measured {
        platform: "q".into(),
        bench: "heat".into(),
        capacity: cap,
        // the table reads the checked runs' names
        runs: [("tahoe", &runs[0]), (OUT_RUN, &runs[1])]
            .into_iter()
            .map(|(n, r)| (n.to_string(), r.clone()))
            .collect(),
        beta_ns: 50.0,
        copy_ns_per_page: f64::NAN,
        oracle_pick: String::new(),
    };
    let o = OutNoCopy::of(&m, &g).unwrap();
    // every heat task writes one block whole; over 3 sweeps each grid is
    // written, so every block is some task's whole-written block
    assert_eq!(o.task_share, 1.0);
    assert_eq!(o.page_share, 1.0, "{o:?}");
    assert_eq!(o.fresh, runs[1].tier.pages_fresh);
    assert_eq!(o.ms, [runs[0].makespan_ms, runs[1].makespan_ms]);
    // without the run, no table
    let mut m = m;
    m.runs.remove(OUT_RUN);
    assert!(OutNoCopy::of(&m, &g).is_none());
}

#[test]
fn the_representative_runs_from_the_slow_tier_unless_the_thesis_model_is_asked() {
    let p = quarter();
    // DRAM a quarter of the table: first touch puts blocks 0 and 1 there,
    // so the first task (block 0) finds its data in DRAM.
    let g = Arc::new(random_access(1 << 20, 8, 3, 256));
    let cap = capacity(&g, 4);
    let mut rep_dram = Vec::new();
    for learn in [
        ModelLearning::Thesis,
        ModelLearning::SlowRep,
        ModelLearning::Refined,
    ] {
        let pol = TahoePolicy::new(
            (cap / PAGE) as usize,
            50.0,
            CORUN,
            None,
            true,
            PartialForm::ParallelTiers,
        )
        .with_learning(learn);
        let r = run(&p, g.clone(), Box::new(pol), cap, 200.0, 1).unwrap();
        let reps: Vec<&TaskRecord> = r.records.iter().filter(|x| x.profiled).collect();
        assert_eq!(reps.len(), 1, "{learn:?}");
        rep_dram.push(reps[0].dram_lines);
        let c: BTreeMap<_, _> = r.counters.iter().copied().collect();
        assert_eq!(c["rep_skipped"] > 0.0, learn != ModelLearning::Thesis);
    }
    assert!(rep_dram[0] > 0, "the thesis's first instance ran from DRAM");
    assert_eq!(rep_dram[1..], [0, 0]);
    assert_eq!(
        ModelLearning::parse("slow-rep"),
        Some(ModelLearning::SlowRep)
    );
    assert_eq!(ModelLearning::parse("bogus"), None);
    assert_eq!(ModelLearning::default(), ModelLearning::Refined);
    assert_eq!(ModelLearning::Thesis.planner_knobs(16), (0, false));
}

#[test]
fn first_touch_fills_dram_with_the_initialised_arrays_then_with_what_tasks_touch_first() {
    // one level over 2 x 2 tiles of 8 x 8 doubles: every block is one page
    let g = strassen(1, 2, 8);
    assert_eq!(g.task_touched, (2..g.arrays.len()).collect::<Vec<_>>());
    let blocks = |g: &TaskGraph| -> Vec<(String, u64, Tier)> {
        g.blocks
            .iter()
            .map(|b| (g.arrays[b.array].clone(), b.bytes, Tier::Slow))
            .collect()
    };
    let in_dram = |t: &TierSpace| -> Vec<usize> {
        (0..t.objects().len())
            .filter(|&b| t.objects()[b].tier_at(0) == Tier::Dram)
            .collect()
    };
    // 10 pages of DRAM: A and B (8 blocks) at the start, 2 pages left
    let mut t = TierSpace::new(0, 1, 0, &blocks(&g), 10 * PAGE);
    let mut ft = FirstTouch::default();
    ft.start(&g, &mut t);
    assert_eq!(in_dram(&t), (0..8).collect::<Vec<_>>());
    // the first task (S1 = A11 + A22) writes tile 0 of S1 (block 12, after
    // C's 4): it takes a page of the room left, C does not
    let s1 = g.tasks[0].args[2].block;
    assert_eq!(s1, 12);
    ft.dispatch(&g, &mut t, 0, &[], &[]);
    ft.dispatch(&g, &mut t, 0, &[], &[]);
    assert_eq!(in_dram(&t), [0, 1, 2, 3, 4, 5, 6, 7, 12]);
    assert_eq!(t.dram_bytes(), 9 * PAGE);
    // DRAM full: later first touches stay in the slow tier
    for task in 1..g.tasks.len() {
        ft.dispatch(&g, &mut t, task, &[], &[]);
    }
    assert_eq!(t.dram_bytes(), 10 * PAGE);
    assert_eq!(in_dram(&t).len(), 10);
    // every array initialised (the tables before 2026-11-27): C follows B
    let mut old = g.clone();
    old.task_touched.clear();
    let mut t = TierSpace::new(0, 1, 0, &blocks(&old), 10 * PAGE);
    let mut ft = FirstTouch::default();
    ft.start(&old, &mut t);
    assert_eq!(in_dram(&t), (0..10).collect::<Vec<_>>());
    ft.dispatch(&old, &mut t, 0, &[], &[]);
    assert_eq!(in_dram(&t), (0..10).collect::<Vec<_>>());
    // a dispatch without a start places nothing (and does not panic)
    let mut t = TierSpace::new(0, 1, 0, &blocks(&g), 10 * PAGE);
    FirstTouch::default().dispatch(&g, &mut t, 0, &[], &[]);
    assert_eq!(t.dram_bytes(), 0);
}

#[test]
fn run_time_first_touch_goes_to_free_dram_and_tahoe_adopts_it_only_with_the_ablation() {
    // one level over 2 x 2 tiles of 8 x 8 doubles: every block is one page
    let g = strassen(1, 2, 8);
    let blocks: Vec<(String, u64, Tier)> = g
        .blocks
        .iter()
        .map(|b| (g.arrays[b.array].clone(), b.bytes, Tier::Slow))
        .collect();
    let s1 = g.tasks[0].args[2].block;
    let tahoe = |pages: usize, os: bool| {
        let p = TahoePolicy::new(pages, 50.0, CORUN, None, true, PartialForm::ParallelTiers);
        if os {
            p.with_os_touch()
        } else {
            p
        }
    };
    for (budget, os, placed) in [(10, true, true), (10, false, false), (8, true, false)] {
        let mut t = TierSpace::new(0, 1, 0, &blocks, 10 * PAGE);
        let mut pol = tahoe(budget, os);
        pol.start(&g, &mut t);
        // A and B (8 pages) where the initialisation put them, adopted
        assert_eq!((t.dram_bytes(), pol.dram_used()), (8 * PAGE, 8));
        // the first task writes S1's tile: the OS's first touch puts it
        // in DRAM if both the tier and Tahoe's budget have room
        pol.dispatch(&g, &mut t, 0, &[], &[]);
        let in_dram = t.objects()[s1].tier_at(0) == Tier::Dram;
        assert_eq!(in_dram, placed, "budget {budget}, os {os}");
        let n = 8 + usize::from(placed);
        assert_eq!((t.dram_bytes(), pol.dram_used()), (n as u64 * PAGE, n));
        // a block is first touched once: a second dispatch places nothing
        pol.dispatch(&g, &mut t, 0, &[], &[]);
        assert_eq!(pol.dram_used(), n);
    }
}

#[test]
fn strassen_frees_each_nodes_temporaries_after_its_taskwait_under_every_policy() {
    // two levels over 4 x 4 tiles: the root and its 7 products have
    // temporaries (10 S + 7 M each), the last level none
    let g = strassen(2, 4, 64);
    assert_eq!(g.frees.len(), 8);
    assert_eq!(g.validate(), Ok(()));
    // the root's free waits for every task (its sub-nodes' included)
    let root = g.frees.last().unwrap();
    assert_eq!(root.after.len(), g.tasks.len());
    assert_eq!(root.arrays, vec![3, 4]);
    let g = Arc::new(g);
    let p = quarter();
    let cap = capacity(&g, 5);
    let mut never = (*g).clone();
    never.frees.clear();
    let policies = || -> Vec<Box<dyn TaskPolicy>> {
        vec![
            Box::new(FirstTouch::default()),
            Box::new(StaticHot),
            Box::new(Oracle::wide(8)),
            Box::new(TahoePolicy::new(
                (cap / PAGE) as usize,
                50.0,
                CORUN,
                Some(1.0),
                true,
                PartialForm::ParallelTiers,
            )),
        ]
    };
    for pol in policies() {
        let r = run(&p, g.clone(), pol, cap, 200.0, 1).unwrap();
        assert!(r.makespan_ms.is_finite(), "{}", r.policy);
        // every policy had temporaries in DRAM when they died
        assert!(r.tier.pages_freed > 0, "{}", r.policy);
    }
    for pol in policies() {
        let r = run(&p, Arc::new(never.clone()), pol, cap, 200.0, 1).unwrap();
        assert_eq!(r.tier.pages_freed, 0, "{}", r.policy);
    }
}
