//! The Unimem decision on MG's recorded 4-rank problems must not change
//! when the decision is made cheaper: the plans, predictions (to the
//! bit), per-iteration schedules and one-time moves are compared with
//! `fixtures/mg128-decide.golden`, written by the code before the change
//! (docs/notebook/unimem.md, "A decision's CPU"). Regenerate only for a
//! change meant to move plans: `MEMTAMER_WRITE_GOLDEN=1 cargo test -p
//! memtamer-core --test unimem_decide_golden`.

mod support;

use memtamer_core::unimem::plan::{
    decide, global_search, leave_room, local_search, predict, settle,
};
use memtamer_core::unimem::schedule::schedule_checked;
use memtamer_core::unimem::transition::transition;
use std::collections::BTreeSet;
use std::fmt::Write;
use support::mg_problem::cases;

fn sets(out: &mut String, dram: &[BTreeSet<usize>]) {
    for s in dram {
        let v: Vec<String> = s.iter().map(|o| o.to_string()).collect();
        let _ = write!(out, "{{{}}}", v.join(","));
    }
    out.push('\n');
}

/// The cases an unoptimised build skips: the overlapped search from an
/// empty DRAM takes seconds per case even in release.
fn slow(name: &str) -> bool {
    cfg!(debug_assertions) && name.ends_with("overlapped/empty")
}

/// Everything the decision and its parts produce, as text.
fn render() -> String {
    let mut out = String::new();
    for c in cases().into_iter().filter(|c| !slow(&c.name)) {
        let (p, start) = (&c.problem, &c.start);
        let _ = writeln!(out, "case {}", c.name);
        let g = global_search(p, start);
        let global = vec![g; p.phases.len()];
        let _ = writeln!(
            out,
            "global predicted {:016x}",
            predict(p, &global, start).to_bits()
        );
        let local = local_search(p, start);
        out.push_str("local ");
        sets(&mut out, &local);
        let _ = writeln!(
            out,
            "local predicted {:016x}",
            predict(p, &local, start).to_bits()
        );
        let roomy = leave_room(p, &local, start);
        out.push_str("leave_room ");
        sets(&mut out, &roomy);
        let settled = settle(p, &roomy);
        out.push_str("settled ");
        sets(&mut out, &settled);
        let plan = decide(p, start);
        let _ = writeln!(
            out,
            "plan {:?} predicted {:016x} ({})",
            plan.search,
            plan.predicted.to_bits(),
            plan.predicted
        );
        out.push_str("plan ");
        sets(&mut out, &plan.dram);
        let uses: Vec<Vec<bool>> = (0..p.sizes.len()).map(|o| p.uses(o)).collect();
        let (moves, kept) = schedule_checked(&plan.dram, &uses, &p.sizes, p.capacity);
        let _ = writeln!(out, "moves {kept} {moves:?}");
        let once = transition(start, &plan.dram, &moves, &uses, &uses);
        let _ = writeln!(out, "once {once:?}");
    }
    out
}

#[test]
fn decisions_on_mg_recorded_problems_are_unchanged() {
    let got = render();
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/mg128-decide.golden"
    );
    if std::env::var_os("MEMTAMER_WRITE_GOLDEN").is_some() {
        std::fs::write(path, &got).expect("write the golden file");
    }
    let want = std::fs::read_to_string(path).expect("the golden file");
    // the golden file's cases, less those this build skips
    let mut kept = String::new();
    let mut on = true;
    for line in want.lines() {
        if let Some(name) = line.strip_prefix("case ") {
            on = !slow(name);
        }
        if on {
            kept.push_str(line);
            kept.push('\n');
        }
    }
    assert!(
        got.lines().filter(|l| l.starts_with("case ")).count() >= 10,
        "too few cases"
    );
    for (k, (a, b)) in got.lines().zip(kept.lines()).enumerate() {
        assert_eq!(a, b, "line {} differs", k + 1);
    }
    assert_eq!(got.lines().count(), kept.lines().count());
}
