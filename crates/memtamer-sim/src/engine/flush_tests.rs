//! Tests of `engine/flush.rs`.

use super::*;

fn spec(mode: FlushMode, fixed: u32) -> FlushJobSpec {
    FlushJobSpec {
        scenario_job: 0,
        mode,
        fixed,
        proactive: false,
        sample_period: 1,
        cores: 8,
        probe: 100_000 * NS,
        interval: 1_000_000 * NS,
        available: 8,
    }
}

fn job(n: u32, mode: FlushMode, m: u32) -> FlushJob {
    let s = spec(mode, m);
    let mut j = FlushJob::new(&s, (0..n).collect());
    for f in 0..FlushJob::flusher_threads(&s) {
        j.add_flusher(100 + f as u32);
    }
    j
}

#[test]
fn each_flusher_serves_at_most_floor_n_over_m_plus_one_queues_and_every_queue_is_served() {
    for n in 1..=24u32 {
        for m in 1..=30u32 {
            let j = job(n, FlushMode::Fixed, m);
            let mut served = vec![0usize; n as usize];
            for f in 0..m as usize {
                let (qs, share) = j.served(f, m as usize);
                assert!(qs.len() <= (n / m) as usize + 1, "n {n} m {m} f {f}");
                for q in qs {
                    served[q] += 1;
                    // the flusher is among the queue's servers, and the
                    // share is how many serve it
                    let s = j.servers(q, m as usize);
                    assert!(s.contains(&f));
                    assert_eq!(s.len(), share);
                }
            }
            assert!(served.iter().all(|&c| c >= 1), "n {n} m {m}: {served:?}");
            if m <= n {
                assert!(served.iter().all(|&c| c == 1));
            }
        }
    }
}

#[test]
fn ribbon_starts_at_p1_fixed_at_m_eager_at_zero() {
    assert_eq!(job(4, FlushMode::Ribbon, 0).active, 4);
    assert_eq!(job(4, FlushMode::Ribbon, 0).flushers.len(), 8);
    assert_eq!(job(4, FlushMode::Fixed, 3).active, 3);
    assert_eq!(job(4, FlushMode::Eager, 0).active, 0);
    assert!(job(4, FlushMode::Eager, 0).flushers.is_empty());
}

#[test]
fn the_line_table_evicts_in_fifo_order_and_reports_dirty_victims() {
    let mut t = LineTable {
        state: HashMap::new(),
        fifo: VecDeque::new(),
        cap: 2,
    };
    assert!(!t.set(0, LineState::Dirty));
    assert!(!t.set(64, LineState::Clean));
    // re-setting a cached line does not move it
    assert!(!t.set(0, LineState::Dirty));
    assert!(t.set(128, LineState::Clean), "line 0 was dirty");
    assert_eq!(t.get(0), None);
    assert!(!t.set(192, LineState::Clean), "line 64 was clean");
    assert_eq!(t.get(128), Some(LineState::Clean));
}
