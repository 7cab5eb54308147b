use super::*;

fn arg(block: usize, mode: Mode) -> Arg {
    Arg {
        block,
        mode,
        pattern: Pattern::Seq,
        passes: 1.0,
    }
}

fn graph(tasks: Vec<Vec<Arg>>) -> TaskGraph {
    TaskGraph {
        name: "t".into(),
        arrays: vec!["a".into()],
        blocks: vec![
            Block {
                array: 0,
                bytes: 3 * PAGE,
            },
            Block {
                array: 0,
                bytes: 100,
            },
            Block {
                array: 0,
                bytes: 2 * PAGE,
            },
        ],
        types: vec!["k".into()],
        tasks: tasks
            .into_iter()
            .map(|args| TaskDef {
                ty: 0,
                args,
                parent: IMPLICIT,
                compute_ns_per_line: 1.0,
            })
            .collect(),
        iterations: 1,
        task_touched: Vec::new(),
        frees: Vec::new(),
    }
}

#[test]
fn dependences_follow_the_openmp_rule() {
    let g = graph(vec![
        vec![arg(0, Mode::Out)],                     // 0 writes a
        vec![arg(0, Mode::In), arg(1, Mode::Out)],   // 1 reads a (after 0)
        vec![arg(0, Mode::In)],                      // 2 reads a (after 0)
        vec![arg(0, Mode::InOut)],                   // 3 after 0 (writer) and 1, 2 (readers)
        vec![arg(1, Mode::In), arg(1, Mode::InOut)], // 4: b named twice, write wins: after 1
        vec![arg(2, Mode::In)],                      // 5: nothing before
    ]);
    assert_eq!(
        g.predecessors(),
        vec![vec![], vec![0], vec![0], vec![0, 1, 2], vec![1], vec![]]
    );
}

#[test]
fn layout_matches_the_tier_space_and_groups_moves() {
    let g = graph(vec![vec![arg(0, Mode::In)]]);
    let l = Layout::new(&g);
    assert_eq!((l.base(0), l.base(1), l.base(2)), (0, 3 * PAGE, 4 * PAGE));
    let objs: Vec<(String, u64, Tier)> = g
        .blocks
        .iter()
        .map(|b| ("x".to_string(), b.bytes, Tier::Slow))
        .collect();
    let s = TierSpace::new(1, 2, 0, &objs, 0);
    for b in 0..3 {
        assert_eq!(
            s.line_addr(b, 0) & (super::super::THREAD_SPAN - 1),
            l.base(b),
            "block {b}"
        );
    }
    assert_eq!(l.locate(3), Some((1, 0)));
    assert_eq!(l.locate(5), Some((2, 1)));
    assert_eq!(l.locate(6), None);
    let m = l.moves(&[5, 0, 1, 4, 2, 9], Tier::Dram);
    assert_eq!(
        m,
        vec![
            MoveReq {
                obj: 0,
                first_page: 0,
                pages: 3,
                to: Tier::Dram
            },
            MoveReq {
                obj: 2,
                first_page: 0,
                pages: 2,
                to: Tier::Dram
            },
        ]
    );
}

#[test]
fn validate_names_the_bad_task() {
    let mut g = graph(vec![vec![arg(0, Mode::In)], vec![arg(7, Mode::In)]]);
    let e = g.validate().unwrap_err();
    assert!(e.contains("task 1"), "{e}");
    g.tasks[1].args[0].block = 2;
    assert!(g.validate().is_ok());
    g.tasks[0].args[0].passes = 0.0;
    assert!(g.validate().is_err());
}

#[test]
fn lines_round_up_passes() {
    let g = graph(vec![vec![Arg {
        block: 0,
        mode: Mode::In,
        pattern: Pattern::Rand,
        passes: 0.5,
    }]]);
    // 3 pages = 192 lines, half a pass = 96
    assert_eq!(g.task_lines(0), 96);
    assert_eq!(g.footprint(), 6 * PAGE);
}

/// Serves the ready queue backwards (a test of [`TaskPolicy::order`]), or
/// answers with a task that is not in it.
#[derive(Debug)]
struct Backwards {
    broken: bool,
}

impl TaskPolicy for Backwards {
    fn name(&self) -> String {
        "backwards".into()
    }

    fn order(&self, _g: &TaskGraph, queue: &[usize]) -> Option<Vec<usize>> {
        let mut v: Vec<usize> = queue.iter().rev().copied().collect();
        if self.broken {
            v[0] = 99;
        }
        Some(v)
    }
}

fn runtime(g: &TaskGraph, policy: Box<dyn TaskPolicy>) -> Runtime {
    let objs: Vec<(String, u64, Tier)> = g
        .blocks
        .iter()
        .map(|b| ("x".to_string(), b.bytes, Tier::Slow))
        .collect();
    let tier = TierSpace::new(1, 2, 0, &objs, 0).into_handle();
    Runtime::new(Arc::new(g.clone()), tier, policy)
}

#[test]
fn the_policy_orders_the_ready_queue_and_a_bad_order_is_ignored() {
    // 0, 1, 2 independent; 3 and 4 after 0 (they enter together)
    let g = graph(vec![
        vec![arg(0, Mode::InOut)],
        vec![arg(1, Mode::In)],
        vec![arg(2, Mode::In)],
        vec![arg(0, Mode::In)],
        vec![arg(0, Mode::In)],
    ]);
    let mut rt = runtime(&g, Box::new(Backwards { broken: false }));
    assert_eq!(rt.ready, [2, 1, 0]);
    let (t, _) = rt.take(0).unwrap();
    assert_eq!(t, 2);
    let (t, _) = rt.take(0).unwrap();
    assert_eq!(t, 1);
    let (t, _) = rt.take(0).unwrap();
    assert_eq!(t, 0);
    rt.complete(0, 10, (0, 1), None);
    assert_eq!(rt.ready, [4, 3]);
    // without an order (every baseline) and with a broken one: FIFO
    for pol in [
        Box::new(Fifo) as Box<dyn TaskPolicy>,
        Box::new(Backwards { broken: true }),
    ] {
        let mut rt = runtime(&g, pol);
        assert_eq!(rt.ready, [0, 1, 2]);
        let (t, _) = rt.take(0).unwrap();
        rt.complete(t, 10, (0, 1), None);
        assert_eq!(rt.ready, [1, 2, 3, 4]);
    }
}

/// A policy that keeps every default (the FIFO queue).
#[derive(Debug)]
struct Fifo;

impl TaskPolicy for Fifo {
    fn name(&self) -> String {
        "fifo".into()
    }
}

#[test]
fn frees_are_counted_per_task_and_a_use_after_the_free_is_refused() {
    let mut g = graph(vec![
        vec![arg(0, Mode::Out)],
        vec![arg(0, Mode::In), arg(2, Mode::Out)],
        vec![arg(2, Mode::In)],
    ]);
    g.arrays.push("t".into());
    g.blocks[2].array = 1;
    g.frees = vec![Free {
        arrays: vec![1],
        after: vec![1, 2, 2],
    }];
    assert_eq!(g.frees_of(), vec![vec![], vec![0], vec![0]]);
    assert_eq!(g.validate(), Ok(()));
    // task 2 reads the array but is not in the taskwait's set
    g.frees[0].after = vec![1];
    assert!(g.validate().unwrap_err().contains("after the free"));
    g.frees[0] = Free {
        arrays: vec![5],
        after: vec![0],
    };
    assert!(g.validate().is_err());
}

/// Places everything in DRAM at the start and records the frees it is told of.
#[derive(Debug, Default)]
struct Freed(Vec<usize>);

impl TaskPolicy for Freed {
    fn name(&self) -> String {
        "freed".into()
    }

    fn start(&mut self, g: &TaskGraph, tier: &mut TierSpace) {
        for (b, blk) in g.blocks.iter().enumerate() {
            for p in 0..blk.bytes.div_ceil(PAGE) {
                tier.place_page(b, p, Tier::Dram);
            }
        }
    }

    fn freed(&mut self, _g: &TaskGraph, _tier: &mut TierSpace, arrays: &[usize]) {
        self.0.extend_from_slice(arrays);
    }
}

#[test]
fn the_runtime_frees_after_the_last_task_of_the_taskwait() {
    let mut g = graph(vec![
        vec![arg(0, Mode::Out)],
        vec![arg(2, Mode::Out)],
        vec![arg(2, Mode::In)],
    ]);
    g.arrays.push("t".into());
    g.blocks[2].array = 1;
    g.frees = vec![Free {
        arrays: vec![1],
        after: vec![1, 2],
    }];
    let mut rt = runtime(&g, Box::new(Freed::default()));
    let dram = |rt: &Runtime| lock(&rt.tier).dram_bytes();
    assert_eq!(dram(&rt), 6 * PAGE);
    for _ in 0..2 {
        rt.take(0).unwrap();
    }
    rt.complete(1, 10, (0, 1), None);
    // task 2 still reads the array: nothing freed yet
    assert_eq!(dram(&rt), 6 * PAGE);
    rt.complete(0, 20, (0, 1), None);
    let (t, _) = rt.take(20).unwrap();
    assert_eq!(t, 2);
    rt.complete(2, 30, (0, 1), None);
    // block 2's 2 pages given back, no move
    assert_eq!(dram(&rt), 4 * PAGE);
    assert!(lock(&rt.tier).is_freed(2) && !lock(&rt.tier).is_freed(0));
    assert_eq!(lock(&rt.tier).stats().pages_moved, 0);
    assert!(format!("{:?}", rt.policy()).contains("Freed([1])"));
}
