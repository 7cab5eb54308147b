//! Drives the OMPT tool's callback path from N threads without OpenMP and
//! prints ns per event for the old path (one `Mutex<Tracker>` taken by
//! every callback) and the buffered one (`memtamer_omp::events::Shared`:
//! per-thread buffers drained in sequence order), in the same run.
//!
//! Why: the tool's overhead at 16 threads was blamed on that lock
//! (docs/tahoe.md "Tool overhead at 16 threads"); this isolates the
//! callbacks' cost from the programs' noise. Each thread runs a chain of
//! tasks as a worker would: task create, its dependences (its own block
//! inout, a shared block in), the edge from its previous task, then one
//! task switch completing the previous task and starting the new one:
//! four events per task, placement off, then (`--work-ns W`) a task body
//! that spins W ns. The output is a ratio between the two paths on this
//! host, not a wall-clock promise.
//!
//! ```sh
//! cargo run --release -p memtamer-omp --example callback_bench -- 1 2 4 8 16 --tasks 10000 --reps 3
//! ```

use memtamer_omp::events::{Sched, Shared, DEFAULT_CAP};
use memtamer_omp::tracker::Tracker;
use memtamer_tahoe::model::HybridModel;
use memtamer_tahoe::plan::{PlanConfig, Planner};
use memtamer_tahoe::task::Access;
use std::sync::{Arc, Barrier, Mutex};
use std::time::Instant;

/// Events each task produces (create, dependences, edge, switch).
const EVENTS_PER_TASK: u64 = 4;

fn tracker() -> Tracker {
    Tracker::new(Planner::new(
        PlanConfig {
            page: 4096,
            corun: 4,
            access_bytes: 4096,
            ..PlanConfig::default()
        },
        HybridModel::fallback_only(1200.0),
        32768,
    ))
    .with_workers(16)
}

/// Task `k` of thread `th`: (id, code, its dependences).
fn task(th: u64, k: u64, per: u64) -> (u64, u64, [(u64, Access); 2]) {
    let id = 1 + th * per + k;
    let own = 0x1000_0000 + th * (1 << 20);
    let shared = 0x8000_0000 + (k % 8) * (1 << 16);
    (
        id,
        0xa00 + k % 3,
        [(own, Access::InOut), (shared, Access::In)],
    )
}

/// One thread's chain through `step`: (create, deps, edge, switch) per task.
trait Path: Send + Sync {
    fn create(&self, id: u64, code: u64);
    fn deps(&self, id: u64, d: &[(u64, Access)]);
    fn edge(&self, src: u64, sink: u64);
    fn switch(&self, s: Sched);
    fn finish(&self) -> (u64, u64);
}

/// The callbacks as they were: the one lock per event.
struct Locked(Mutex<Tracker>);

impl Path for Locked {
    fn create(&self, id: u64, code: u64) {
        self.0.lock().expect("lock").create(id, code);
    }
    fn deps(&self, id: u64, d: &[(u64, Access)]) {
        let mut t = self.0.lock().expect("lock");
        t.exact_lengths(&[]);
        t.dependences_iter(id, d.iter().copied());
    }
    fn edge(&self, src: u64, sink: u64) {
        self.0.lock().expect("lock").edge(src, sink);
    }
    fn switch(&self, s: Sched) {
        let mut t = self.0.lock().expect("lock");
        if s.done {
            t.complete_with(s.prior, s.now, None);
        }
        if s.next != 0 {
            t.begin_ahead(s.next, s.now, 4, false, 0);
        }
    }
    fn finish(&self) -> (u64, u64) {
        let t = self.0.lock().expect("lock");
        (t.stats().created, t.stats().completed)
    }
}

thread_local! {
    static MINE: std::cell::RefCell<Option<memtamer_omp::events::Handle>> =
        const { std::cell::RefCell::new(None) };
}

/// The buffered path, with the tool's thread-local handle lookup.
struct Buffered(Shared);

impl Buffered {
    fn rec(&self, f: impl FnOnce(&mut memtamer_omp::events::EventBuf, u64)) {
        MINE.with(|m| {
            let mut m = m.borrow_mut();
            let h = m.get_or_insert_with(|| self.0.handle());
            self.0.record(Some(h), f);
        });
    }
}

impl Path for Buffered {
    fn create(&self, id: u64, code: u64) {
        self.rec(|b, seq| b.create(seq, id, code));
    }
    fn deps(&self, id: u64, d: &[(u64, Access)]) {
        self.rec(|b, seq| b.dependences(seq, id, &[], d.iter().copied()));
    }
    fn edge(&self, src: u64, sink: u64) {
        self.rec(|b, seq| b.edge(seq, src, sink));
    }
    fn switch(&self, s: Sched) {
        self.rec(|b, seq| b.sched(seq, s));
    }
    fn finish(&self) -> (u64, u64) {
        let t = self.0.drained();
        (t.stats().created, t.stats().completed)
    }
}

/// Wall ns for `threads` threads running `per` tasks each through `path`,
/// the final drain included; checks every task was created and completed.
fn run<P: Path + 'static>(path: Arc<P>, threads: u64, per: u64, work_ns: u64) -> f64 {
    let bar = Arc::new(Barrier::new(threads as usize + 1));
    let epoch = Instant::now();
    let joins: Vec<_> = (0..threads)
        .map(|th| {
            let (p, bar) = (path.clone(), bar.clone());
            std::thread::spawn(move || {
                bar.wait();
                let start = epoch.elapsed().as_nanos() as u64;
                let mut prev = 0u64;
                for k in 0..per {
                    let (id, code, d) = task(th, k, per);
                    p.create(id, code);
                    p.deps(id, &d);
                    if prev != 0 {
                        p.edge(prev, id);
                    }
                    p.switch(Sched {
                        prior: prev,
                        done: prev != 0,
                        next: id,
                        now: epoch.elapsed().as_nanos() as u64,
                        ..Sched::default()
                    });
                    prev = id;
                    // the task's body
                    let body = Instant::now();
                    while (body.elapsed().as_nanos() as u64) < work_ns {
                        std::hint::spin_loop();
                    }
                }
                p.switch(Sched {
                    prior: prev,
                    done: true,
                    now: epoch.elapsed().as_nanos() as u64,
                    ..Sched::default()
                });
                (start, epoch.elapsed().as_nanos() as u64)
            })
        })
        .collect();
    bar.wait();
    // from the first thread's start to the last one's end (the threads
    // time themselves: on a loaded host this thread may not run when the
    // barrier opens), plus the final drain
    let (mut first, mut last) = (u64::MAX, 0u64);
    for j in joins {
        match j.join() {
            Ok((s, e)) => (first, last) = (first.min(s), last.max(e)),
            Err(_) => {
                eprintln!("callback_bench: a worker thread panicked");
                std::process::exit(1);
            }
        }
    }
    let t0 = Instant::now();
    let done = path.finish();
    let ns = (last - first) as f64 + t0.elapsed().as_nanos() as f64;
    if done != (threads * per, threads * per) {
        eprintln!(
            "callback_bench: created/completed {done:?}, expected {}",
            threads * per
        );
        std::process::exit(1);
    }
    ns
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn main() {
    let mut threads: Vec<u64> = Vec::new();
    let (mut per, mut reps, mut work) = (10_000u64, 3usize, 0u64);
    // one path only (for a profiler): "locked" or "buffered"
    let mut only = String::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let num = |v: Option<String>| v.and_then(|s| s.parse::<u64>().ok()).filter(|&n| n > 0);
        match a.as_str() {
            "--tasks" => per = num(args.next()).unwrap_or(per),
            "--reps" => reps = num(args.next()).map_or(reps, |n| n as usize),
            "--only" => only = args.next().unwrap_or_default(),
            "--work-ns" => work = args.next().and_then(|s| s.parse().ok()).unwrap_or(0),
            s => match s.parse::<u64>() {
                Ok(n) if n > 0 && n <= 1024 => threads.push(n),
                _ => {
                    eprintln!("usage: callback_bench [THREADS...] [--tasks N] [--reps R] [--only locked|buffered] [--work-ns W]");
                    std::process::exit(2);
                }
            },
        }
    }
    if threads.is_empty() {
        threads = vec![1, 2, 4, 8, 16];
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "callback path, placement off, {per} tasks x {EVENTS_PER_TASK} events per thread, task bodies {work} ns, median of {reps} alternating runs, {cpus} CPUs"
    );
    println!("threads  locked ns/event  buffered ns/event  locked/buffered");
    for &n in &threads {
        let (mut l, mut b) = (Vec::new(), Vec::new());
        for _ in 0..reps {
            if only != "buffered" {
                l.push(run(Arc::new(Locked(Mutex::new(tracker()))), n, per, work));
            }
            if only != "locked" {
                b.push(run(
                    Arc::new(Buffered(Shared::new(tracker(), DEFAULT_CAP))),
                    n,
                    per,
                    work,
                ));
            }
        }
        let events = (n * per * EVENTS_PER_TASK) as f64;
        let (l, b) = (median(l) / events, median(b) / events);
        println!("{n:>7}  {l:>15.1}  {b:>17.1}  {:>15.2}", l / b);
    }
    println!("(ns/event: wall time of all threads over all events, task bodies included; the switch events' clock reads included)");
}
