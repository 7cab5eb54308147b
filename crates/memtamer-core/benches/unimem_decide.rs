//! Time per Unimem decision on MG's recorded 4-rank problems (docs/notebook/unimem.md
//! "A decision's CPU"): the whole decision as `memtamer-tier`'s
//! decision thread makes it (`plan::decide`, unbounded, then the schedule and
//! the one-time moves), and its parts. Prints the median of `ROUNDS`
//! timings per case (process CPU time is not available without libc here,
//! so wall time of a single thread: run it on a quiet core, or compare
//! medians taken in one sitting).
//!
//! `nice -n 19 cargo bench -p memtamer-core --bench unimem_decide [-- FILTER]`

#[path = "../tests/support/mod.rs"]
mod support;

use memtamer_core::unimem::plan::{
    decide, global_search, leave_room, local_search, predict, settle,
};
use memtamer_core::unimem::schedule::schedule_checked;
use memtamer_core::unimem::transition::transition;
use support::mg_problem::cases;

const ROUNDS: usize = 7;

/// The calling thread's CPU seconds.
fn cpu_s() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec the call writes.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return f64::NAN;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

fn median_ms(mut f: impl FnMut()) -> f64 {
    let mut v: Vec<f64> = (0..ROUNDS)
        .map(|_| {
            let t = cpu_s();
            f();
            (cpu_s() - t) * 1e3
        })
        .collect();
    v.sort_by(f64::total_cmp);
    v[ROUNDS / 2]
}

fn main() {
    let filter: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    println!(
        "{:<48} {:>9} {:>8} {:>8} {:>10} {:>8} {:>8} {:>8}",
        "case", "decide_ms", "global", "local", "leave_room", "settle", "predict", "sched+tr"
    );
    let mut total = 0.0;
    for c in cases() {
        if filter
            .as_ref()
            .is_some_and(|f| !c.name.contains(f.as_str()))
        {
            continue;
        }
        let (p, start) = (&c.problem, &c.start);
        let uses: Vec<Vec<bool>> = (0..p.sizes.len()).map(|o| p.uses(o)).collect();
        let whole = median_ms(|| {
            let plan = decide(p, start);
            let (moves, _) = schedule_checked(&plan.dram, &uses, &p.sizes, p.capacity);
            std::hint::black_box(transition(start, &plan.dram, &moves, &uses, &uses));
        });
        let global = median_ms(|| {
            std::hint::black_box(global_search(p, start));
        });
        let local_sets = local_search(p, start);
        let local = median_ms(|| {
            std::hint::black_box(local_search(p, start));
        });
        let roomy = leave_room(p, &local_sets, start);
        let room = median_ms(|| {
            std::hint::black_box(leave_room(p, &local_sets, start));
        });
        let set = median_ms(|| {
            std::hint::black_box(settle(p, &roomy));
        });
        let pred = median_ms(|| {
            std::hint::black_box(predict(p, &roomy, start));
        });
        let plan = decide(p, start);
        let sched = median_ms(|| {
            let (moves, _) = schedule_checked(&plan.dram, &uses, &p.sizes, p.capacity);
            std::hint::black_box(transition(start, &plan.dram, &moves, &uses, &uses));
        });
        total += whole;
        println!(
            "{:<48} {:>9.3} {:>8.3} {:>8.3} {:>10.3} {:>8.3} {:>8.4} {:>8.3}",
            c.name, whole, global, local, room, set, pred, sched
        );
    }
    println!("sum of decide_ms: {total:.3}");
}
