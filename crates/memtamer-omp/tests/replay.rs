//! Replays a deterministic heat-like OMPT event stream (task create,
//! dependences, dependence edges, begin/complete on two simulated workers)
//! through the tracker and pins what it records: the stats line, the
//! planner's counters, the per-type recording and the model errors. The
//! expected digest was taken from the tracker before the overhead cuts
//! (docs/notebook/tahoe.md "overhead"), so a cut that changes what the tool records
//! fails here.

use memtamer_omp::tracker::Tracker;
use memtamer_tahoe::model::HybridModel;
use memtamer_tahoe::plan::{PlanConfig, Planner};
use memtamer_tahoe::task::Access;
use std::collections::HashMap;

#[path = "support/digest.rs"]
mod digest_part;

fn tracker(dram_pages: usize) -> Tracker {
    Tracker::new(Planner::new(
        PlanConfig {
            page: 4096,
            corun: 2,
            ..PlanConfig::default()
        },
        HybridModel::fallback_only(1.0),
        dram_pages,
    ))
    .with_record()
}

/// libomp's dependence bookkeeping: last writer and readers since.
#[derive(Default)]
struct Deps {
    writer: HashMap<u64, u64>,
    readers: HashMap<u64, Vec<u64>>,
}

impl Deps {
    fn edges(&mut self, id: u64, deps: &[(u64, Access)]) -> Vec<(u64, u64)> {
        let mut e = Vec::new();
        for &(a, acc) in deps {
            if let Some(&w) = self.writer.get(&a) {
                e.push((w, id));
            }
            if acc == Access::In {
                self.readers.entry(a).or_default().push(id);
            } else {
                for r in self.readers.remove(&a).unwrap_or_default() {
                    e.push((r, id));
                }
                self.writer.insert(a, id);
            }
        }
        e.sort_unstable();
        e.dedup();
        e
    }
}

/// Heat: `nb`×`nb` blocks of two arrays, `sweeps` Jacobi sweeps, four
/// task codes (interior/edge by position), run on two workers in the
/// tracker's ready order with a deterministic clock.
fn replay(nb: u64, sweeps: u64, place: bool) -> String {
    let mut t = tracker(64);
    let block = 256 * 256 * 8u64;
    let base = [0x1000_0000u64, 0x4000_0000u64];
    let mut deps = Deps::default();
    let mut id = 0u64;
    let mut now = 0u64;
    let mut batches = 0usize;
    let mut running: Vec<u64> = Vec::new();
    for s in 0..sweeps {
        let (src, dst) = (base[(s % 2) as usize], base[((s + 1) % 2) as usize]);
        for i in 0..nb {
            for j in 0..nb {
                id += 1;
                let code = 0xa00 + (i == 0) as u64 + 2 * (j == 0) as u64;
                t.create(id, code);
                let mut d = vec![(dst + (i * nb + j) * block, Access::Out)];
                for (di, dj) in [(0i64, 0i64), (-1, 0), (1, 0), (0, -1), (0, 1)] {
                    let (ii, jj) = (i as i64 + di, j as i64 + dj);
                    if ii >= 0 && jj >= 0 && ii < nb as i64 && jj < nb as i64 {
                        d.push((src + (ii as u64 * nb + jj as u64) * block, Access::In));
                    }
                }
                t.dependences(id, &d);
                for (a, b) in deps.edges(id, &d) {
                    t.edge(a, b);
                }
                // A worker picks up ready work every few creations.
                if id.is_multiple_of(5) {
                    step(&mut t, &mut running, &mut now, place, &mut batches);
                }
            }
        }
    }
    while !running.is_empty() || !t.ready().is_empty() {
        step(&mut t, &mut running, &mut now, place, &mut batches);
    }
    let s = t.stats();
    let p = t.planner().stats();
    let (errs, rows) = digest_part::errs_and_rows(&t);
    format!(
        "created={} completed={} edges={} ready_max={} types={} decisions={} profiled={} promoted={} evicted={} batches={} returned={} errs={:?} rows={:?}",
        s.created,
        s.completed,
        s.edges,
        s.ready_max,
        t.planner().db().len(),
        p.decisions,
        p.profiled,
        p.promoted,
        p.evicted,
        p.batches,
        batches,
        errs,
        rows
    )
}

/// Two workers: complete the oldest running task, start ready heads.
fn step(t: &mut Tracker, running: &mut Vec<u64>, now: &mut u64, place: bool, n: &mut usize) {
    if running.len() >= 2 || (t.ready().is_empty() && !running.is_empty()) {
        let done = running.remove(0);
        *now += 1000 + (done * 7919) % 613;
        t.complete(done, *now);
    }
    while running.len() < 2 {
        let Some(&head) = t.ready().first() else {
            break;
        };
        *now += 37;
        *n += t.begin(head, *now, 2, place).len();
        running.push(head);
    }
}

fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

#[test]
fn recording_is_pinned_placement_off() {
    let d = replay(8, 6, false);
    assert!(d.starts_with("created=384 completed=384"), "{d}");
    assert_eq!(fnv(&d), 10310917742523498669, "{d}");
}

#[test]
fn recording_is_pinned_placement_on() {
    let d = replay(8, 6, true);
    assert!(d.starts_with("created=384 completed=384"), "{d}");
    assert_eq!(fnv(&d), 3251057580699215805, "{d}");
}
