//! The per-task counter pipeline of the tool outside libomp: the tracker
//! sums the deltas charged to a task, hands a representative's to its
//! profile and writes the counter columns of the recording; the shell's
//! group reads real software events on this thread (`sw`, no PMU here).

use memtamer_omp::config::CounterSource;
use memtamer_omp::counters;
use memtamer_omp::tracker::Tracker;
use memtamer_tahoe::counters::TaskCounts;
use memtamer_tahoe::model::HybridModel;
use memtamer_tahoe::plan::{PlanConfig, Planner};
use memtamer_tahoe::record::RowCounters;
use memtamer_tahoe::task::Access;

const B: u64 = 1 << 16;

fn tracker(dram_pages: usize) -> Tracker {
    Tracker::new(Planner::new(
        PlanConfig::default(),
        HybridModel::fallback_only(1.0),
        dram_pages,
    ))
}

#[test]
fn charged_counts_reach_the_recording_and_the_representative() {
    let mut t = tracker(10).with_record();
    for i in 1..=3u64 {
        t.create(i, 0xa);
        t.dependences(i, &[(0x1000_0000 + i * B, Access::In)]);
    }
    let d = |i, c, r, m| TaskCounts {
        instructions: i,
        cycles: c,
        llc_refs: r,
        llc_misses: m,
    };
    t.begin(1, 0, 1, false);
    // two intervals (a task switch in between), then an implicit
    // task's (id 0) and a finished task's counts, which are dropped
    t.charge(1, &d(300, 1000, 10, 2));
    t.charge(1, &d(700, 1000, 10, 3));
    t.charge(0, &d(1, 1, 1, 1));
    t.complete(1, 100);
    t.charge(1, &d(1, 1, 1, 1));
    let (_, prof) = t.planner().db().iter().next().unwrap();
    let c = prof.counters.expect("the representative's counters");
    assert_eq!(
        (c.instructions, c.ipc, c.llc_miss_rate),
        (1000.0, 0.5, 0.25)
    );
    // a sibling with counts, one without (never charged)
    t.begin(2, 200, 1, false);
    t.charge(2, &d(3000, 2000, 20, 5));
    t.complete(2, 300);
    t.begin(3, 400, 1, false);
    t.complete(3, 500);
    assert_eq!(t.stats().counted, 2);
    let r = t.recorded(|c| format!("{c:#x}"));
    assert_eq!(r[0].instances, 3);
    // the counted instances' totals: 4000 / 4000 and 10 / 40
    assert_eq!(
        r[0].counters,
        Some(RowCounters {
            ipc: 1.0,
            llc_miss_rate: 0.25
        })
    );
    // nothing counted: an old-format row
    let mut u = tracker(10).with_record();
    u.create(1, 0xb);
    u.begin(1, 0, 1, false);
    u.complete(1, 10);
    assert_eq!(u.recorded(|c| format!("{c:#x}"))[0].counters, None);
}

#[test]
fn software_counters_flow_from_the_thread_group_to_a_task() {
    // before the probe nothing is counted
    assert_eq!(counters::active(), "off");
    assert!(counters::sample().is_none());
    counters::probe(CounterSource::Off, true).unwrap();
    assert_eq!(counters::active(), "off");
    assert!(!counters::every());
    if let Err(why) = counters::probe(CounterSource::Sw, false) {
        // a host that refuses even software events names them
        assert!(why.contains("task-clock"), "{why}");
        return;
    }
    assert_eq!(counters::active(), "sw");
    let mut t = tracker(10).with_record();
    t.create(1, 0xa);
    t.dependences(1, &[(0x1000_0000, Access::In)]);
    counters::sample().expect("a reading"); // the switch to task 1
    t.begin(1, 0, 1, false);
    // the task's body: fresh pages and CPU time
    let v: Vec<u8> = (0..(2 << 20)).map(|i| (i % 251) as u8).collect();
    assert!(v.iter().map(|&x| u64::from(x)).sum::<u64>() > 0);
    let d = counters::sample().expect("a reading"); // the switch away
    assert!(d.instructions > 0 && d.cycles > 0, "{d:?}");
    assert!(d.llc_refs > 0 && d.llc_misses > 0, "faults {d:?}");
    t.charge(1, &d);
    t.complete(1, 1000);
    let r = t.recorded(|c| format!("{c:#x}"));
    assert!(r[0].counters.is_some_and(|c| c.ipc > 0.0), "{r:?}");
    // another thread opens its own group at its first reading
    let other = std::thread::spawn(|| {
        counters::sample();
        counters::sample()
    })
    .join()
    .unwrap();
    assert!(other.is_some());
    assert_eq!(counters::thread_fails(), 0);
    // only representatives: a task is read only between track and the
    // switch away from it; another task's switch reads nothing
    assert!(!counters::every());
    assert!(counters::sample_tracked(7).is_none(), "not tracked");
    counters::track(7);
    let v: Vec<u8> = (0..(1 << 20)).map(|i| (i % 251) as u8).collect();
    assert!(v.iter().map(|&x| u64::from(x)).sum::<u64>() > 0);
    assert!(counters::sample_tracked(8).is_none(), "another task");
    let d = counters::sample_tracked(7).expect("its interval");
    assert!(d.instructions > 0 && d.llc_refs > 0, "{d:?}");
    assert!(counters::sample_tracked(7).is_none(), "read once");
    assert!(counters::sample_tracked(0).is_none());
}
