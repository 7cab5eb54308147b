//! Unit tests of the isolation controllers.

use super::*;
use crate::{AccessStats, ChannelObs, CpuObs, DimmObs, JobObs, Policy, ThreadObs};

const WINDOW: u64 = 10_000; // 10 µs, Dicio's main loop

/// A 6-channel, 8-CPU observation: LC job 0 on CPUs 0-1 (thread 0), BE
/// jobs 1.. with `be_threads` threads each.
struct Obs {
    t: u64,
    be_jobs: usize,
    be_threads: usize,
}

impl Obs {
    fn new(be_jobs: usize, be_threads: usize) -> Obs {
        Obs {
            t: 0,
            be_jobs,
            be_threads,
        }
    }
    /// One window with WPQ delay `wpq` cycles, PM request writes `req_gbps`,
    /// DRAM `dram_gbps`, per-BE-job PM write bytes, and optionally a media
    /// reading (write, read GB/s) that is `age` ns old.
    fn window(
        &mut self,
        wpq: f64,
        req_gbps: f64,
        dram_gbps: f64,
        job_write: &[u64],
        media: Option<(f64, f64, u64)>,
    ) -> Observation {
        let start = self.t;
        self.t += WINDOW;
        let mut jobs = vec![JobObs {
            id: 0,
            name: "lc".into(),
            class: JobClass::Lc,
            threads: vec![0],
            ..Default::default()
        }];
        let mut lc = CpuSet::empty();
        lc.insert(0);
        lc.insert(1);
        let mut threads = vec![ThreadObs {
            tid: 0,
            job: 0,
            allowed: lc,
            ..Default::default()
        }];
        let mut tid = 1;
        for j in 0..self.be_jobs {
            let id = j as u32 + 1;
            let mut ts = Vec::new();
            for k in 0..self.be_threads {
                ts.push(tid);
                threads.push(ThreadObs {
                    tid,
                    job: id,
                    allowed: CpuSet::first_n(8),
                    pm: job_write.get(j).map(|&w| AccessStats {
                        write_bytes: if k == 0 { w } else { 0 },
                        ..Default::default()
                    }),
                    ..Default::default()
                });
                tid += 1;
            }
            jobs.push(JobObs {
                id,
                name: format!("be{id}"),
                class: JobClass::Be,
                threads: ts,
                ..Default::default()
            });
        }
        // spread request writes and DRAM CAS over 6 channels
        let inserts = (req_gbps * WINDOW as f64 / 64.0 / 6.0).round() as u64;
        let cas = (dram_gbps * WINDOW as f64 / 64.0 / 6.0).round() as u64;
        let channels = (0..6)
            .map(|c| ChannelObs {
                channel: c,
                cas_reads: Some(cas),
                cas_writes: Some(0),
                pmm_wpq_inserts: Some(inserts.max(1)),
                pmm_wpq_occupancy: Some((wpq * inserts.max(1) as f64) as u64),
                ..Default::default()
            })
            .collect();
        let dimms = (0..6)
            .map(|d| match media {
                Some((w, r, age)) => DimmObs {
                    dimm: d,
                    media_write_bytes: Some((w * 4.5e6 / 6.0) as u64),
                    media_read_bytes: Some((r * 4.5e6 / 6.0) as u64),
                    interval_ns: Some(4_500_000),
                    age_ns: Some(age),
                },
                None => DimmObs {
                    dimm: d,
                    ..Default::default()
                },
            })
            .collect();
        Observation {
            start_ns: start,
            duration_ns: WINDOW,
            threads,
            jobs,
            channels,
            dimms,
            cpus: (0..8)
                .map(|c| CpuObs {
                    cpu: c,
                    utilization: Some(1.0),
                })
                .collect(),
            gate: None,
        }
    }
    fn quiet(&mut self) -> Observation {
        self.window(100.0, 1.0, 2.0, &[], None)
    }
}

fn dicio() -> Isolation {
    Isolation::new(IsolationKind::Dicio, IsolationParams::default(), None)
}

fn cores(iso: &Isolation, job: JobId) -> f64 {
    iso.shares()
        .into_iter()
        .find(|(j, _)| *j == job)
        .map_or(-1.0, |(_, s)| s)
}

#[test]
fn be_starts_with_every_cpu_not_used_by_lc_and_lc_is_never_budgeted() {
    let mut o = Obs::new(1, 8);
    let mut iso = dicio();
    let d = iso.decide(&o.quiet());
    assert_eq!(d.job_budgets.len(), 1);
    let (job, b) = d.job_budgets[0];
    assert_eq!(job, 1);
    assert_eq!(b.cpus, CpuSet::parse_list("2-7").unwrap());
    assert_eq!(b.duty_cycle, 1.0);
    // nothing changes => nothing emitted
    let d = iso.decide(&o.quiet());
    assert!(d.job_budgets.iter().all(|(j, _)| *j != 0));
}

#[test]
fn wpq_delay_at_threshold_takes_one_core_per_window() {
    let mut o = Obs::new(1, 8);
    let mut iso = dicio();
    iso.decide(&o.quiet());
    assert_eq!(cores(&iso, 1), 6.0);
    let d = iso.decide(&o.window(699.0, 1.0, 2.0, &[], None));
    assert!(d.job_budgets.is_empty(), "699 < T_WPQ");
    let d = iso.decide(&o.window(700.0, 1.0, 2.0, &[], None));
    assert_eq!(cores(&iso, 1), 5.0);
    assert_eq!(iso.state(), ControlState::Throttling);
    assert!(d.reasons[0].contains("WPQ delay"), "{:?}", d.reasons);
    assert_eq!(d.job_budgets[0].1.cpus.len(), 5);
    iso.decide(&o.window(900.0, 1.0, 2.0, &[], None));
    assert_eq!(cores(&iso, 1), 4.0);
}

#[test]
fn media_conditions_are_evaluated_only_on_a_fresh_reading() {
    let mut o = Obs::new(1, 8);
    let mut iso = dicio();
    iso.decide(&o.quiet());
    iso.decide(&o.window(100.0, 1.0, 2.0, &[], Some((6.5, 7.0, 1000))));
    assert_eq!(cores(&iso, 1), 5.0, "media write >= 6 GB/s throttles");
    // the same reading seen again (older now) is not new
    iso.decide(&o.window(100.0, 1.0, 2.0, &[], Some((6.5, 7.0, 11_000))));
    assert_eq!(cores(&iso, 1), 5.0);
    // a newer reading with media read >= 10 GB/s throttles again
    iso.decide(&o.window(100.0, 1.0, 2.0, &[], Some((3.0, 10.5, 100))));
    assert_eq!(cores(&iso, 1), 4.0);
    // a newer reading below every threshold relaxes
    let d = iso.decide(&o.window(100.0, 1.0, 2.0, &[], Some((3.0, 5.0, 100))));
    assert_eq!(cores(&iso, 1), 5.0);
    assert!(d.reasons[0].starts_with("relax"), "{:?}", d.reasons);
    assert_eq!(iso.state(), ControlState::Relaxing);
}

#[test]
fn dram_threshold_follows_pm_media_load() {
    // media load < 0.4 T: 30 GB/s; < 0.8: 15; above: 5 (Dicio §4.3)
    for (media_write, dram, throttles) in [
        (1.0, 29.0, false),
        (1.0, 31.0, true),
        (3.0, 14.0, false),
        (3.0, 16.0, true),
        (5.0, 4.0, false),
        (5.0, 6.0, true),
    ] {
        let mut o = Obs::new(1, 8);
        let mut iso = dicio();
        iso.decide(&o.quiet());
        iso.decide(&o.window(100.0, 1.0, 2.0, &[], Some((media_write, 1.0, 100))));
        let before = cores(&iso, 1);
        iso.decide(&o.window(100.0, 1.0, dram, &[], Some((media_write, 1.0, 10_100))));
        let after = cores(&iso, 1);
        assert_eq!(
            after < before,
            throttles,
            "media {media_write} dram {dram}: {before} -> {after}"
        );
    }
}

#[test]
fn relax_by_prediction_and_throttle_by_prediction() {
    let mut o = Obs::new(1, 8);
    let mut iso = dicio();
    iso.decide(&o.quiet());
    for _ in 0..3 {
        iso.decide(&o.window(800.0, 1.0, 2.0, &[], None));
    }
    assert_eq!(cores(&iso, 1), 3.0);
    // Throttling state: a low estimate alone does not relax
    iso.decide(&o.window(100.0, 1.0, 2.0, &[], None));
    assert_eq!(cores(&iso, 1), 3.0);
    // a fresh quiet reading relaxes (slow path) ...
    iso.decide(&o.window(100.0, 1.0, 2.0, &[], Some((2.0, 3.0, 100))));
    assert_eq!(cores(&iso, 1), 4.0);
    // ... and then each window with estimate < T_mediawrite relaxes by prediction
    iso.decide(&o.window(100.0, 5.0, 2.0, &[], None));
    assert_eq!(cores(&iso, 1), 5.0);
    // estimate 6.5 GB/s: not below T, not above 1.2 T: hold
    iso.decide(&o.window(100.0, 6.5, 2.0, &[], None));
    assert_eq!(cores(&iso, 1), 5.0);
    // estimate >= 1.2 T while relaxed by prediction: throttle
    let d = iso.decide(&o.window(100.0, 7.3, 2.0, &[], None));
    assert_eq!(cores(&iso, 1), 4.0);
    assert!(d.reasons[0].contains("predicted"), "{:?}", d.reasons);
}

#[test]
fn write_amplification_is_media_over_request_bytes_of_the_interval() {
    let mut o = Obs::new(1, 8);
    let mut iso = dicio();
    iso.decide(&o.quiet());
    for _ in 0..3 {
        iso.decide(&o.window(800.0, 1.0, 2.0, &[], None));
    }
    // 4.5 ms of 1 GB/s request writes (Throttling: no relaxing), then a
    // reading of 3 GB/s media writes
    for _ in 0..450 {
        iso.decide(&o.window(100.0, 1.0, 2.0, &[], None));
    }
    iso.decide(&o.window(100.0, 1.0, 2.0, &[], Some((3.0, 3.0, 0))));
    let wa = iso.write_amplification();
    assert!((wa - 3.0).abs() < 0.1, "WA {wa}");
    // the estimate uses it: 2 GB/s requests x 3 = 6 >= 6? not below T: no relax by prediction
    let before = cores(&iso, 1);
    iso.decide(&o.window(100.0, 2.0, 2.0, &[], None));
    assert_eq!(cores(&iso, 1), before);
    iso.decide(&o.window(100.0, 1.5, 2.0, &[], None));
    assert!(cores(&iso, 1) > before, "4.5 GB/s predicted < 6 relaxes");
}

#[test]
fn one_thread_saturating_pm_is_duty_cycled() {
    let mut o = Obs::new(1, 1);
    let mut iso = dicio();
    iso.decide(&o.quiet());
    assert_eq!(cores(&iso, 1), 1.0);
    // the single stride thread: 2 GB/s requests -> 8 GB/s media at WA 4
    let mut duty_seen = None;
    for i in 0..40 {
        let saturated = cores(&iso, 1) > 0.0;
        let reading = (i % 2 == 0).then_some((if saturated { 8.0 } else { 0.5 }, 1.0, 0));
        let req = if saturated { 2.0 } else { 0.0 };
        let bytes = (req * WINDOW as f64) as u64;
        let d = iso.decide(&o.window(100.0, req, 2.0, &[bytes], reading));
        for (_, b) in &d.job_budgets {
            if b.duty_cycle > 0.0 && b.duty_cycle < 1.0 {
                assert_eq!(b.cpus.len(), 1, "a duty cycle is a fraction of one core");
                duty_seen = Some(b.duty_cycle);
            }
        }
    }
    let x = duty_seen.expect("never duty-cycled");
    // 2 GB/s requests at WA 1 (no reading long enough for WA): 5.4 / 2
    // clamps to 0.95; what matters is 0 < x < 1 on one core
    assert!(x > 0.0 && x < 1.0, "duty {x}");
}

#[test]
fn baselines_never_duty_cycle_and_stop_a_single_thread() {
    let mut o = Obs::new(1, 1);
    let mut iso = Isolation::new(IsolationKind::CaladanPm, IsolationParams::default(), None);
    iso.decide(&o.quiet());
    for _ in 0..10 {
        let d = iso.decide(&o.window(100.0, 3.0, 2.0, &[], None));
        for (_, b) in &d.job_budgets {
            assert!(b.duty_cycle == 0.0 || b.duty_cycle == 1.0);
        }
        iso.decide(&o.window(100.0, 1.0, 2.0, &[], None));
    }
    iso.decide(&o.window(100.0, 3.0, 2.0, &[], None));
    assert_eq!(cores(&iso, 1), 0.0);
}

#[test]
fn caladan_pm_follows_request_bandwidth_every_window() {
    let mut o = Obs::new(1, 8);
    let params = IsolationParams {
        request_write_gbps: 2.5,
        ..Default::default()
    };
    let mut iso = Isolation::new(IsolationKind::CaladanPm, params, None);
    assert_eq!(iso.name(), "caladan-pm");
    iso.decide(&o.quiet());
    iso.decide(&o.window(2000.0, 2.6, 2.0, &[], None));
    assert_eq!(cores(&iso, 1), 5.0);
    // it ignores WPQ delay and media: 2.4 GB/s relaxes even at high delay
    iso.decide(&o.window(5000.0, 2.4, 2.0, &[], Some((9.0, 9.0, 0))));
    assert_eq!(cores(&iso, 1), 6.0);
    // DRAM threshold only when configured
    iso.decide(&o.window(100.0, 2.4, 40.0, &[], None));
    assert_eq!(cores(&iso, 1), 6.0);
    let mut iso = Isolation::new(
        IsolationKind::CaladanPm,
        IsolationParams {
            caladan_dram_gbps: Some(25.0),
            ..Default::default()
        },
        None,
    );
    iso.decide(&o.quiet());
    iso.decide(&o.window(100.0, 1.0, 40.0, &[], None));
    assert_eq!(cores(&iso, 1), 5.0);
}

#[test]
fn pm_counter_only_reacts_only_to_fresh_media_readings() {
    let mut o = Obs::new(1, 8);
    let mut iso = Isolation::new(
        IsolationKind::PmCounterOnly,
        IsolationParams::default(),
        None,
    );
    iso.decide(&o.quiet());
    for _ in 0..5 {
        iso.decide(&o.window(5000.0, 9.0, 40.0, &[], None));
    }
    assert_eq!(
        cores(&iso, 1),
        6.0,
        "WPQ, DRAM, request bandwidth are ignored"
    );
    iso.decide(&o.window(100.0, 1.0, 2.0, &[], Some((7.0, 7.0, 0))));
    assert_eq!(cores(&iso, 1), 5.0);
    iso.decide(&o.window(100.0, 1.0, 2.0, &[], Some((7.0, 7.0, 10_000))));
    assert_eq!(cores(&iso, 1), 5.0, "same reading");
}

#[test]
fn several_be_jobs_throttle_the_biggest_pm_writer_first() {
    let mut o = Obs::new(3, 4);
    let mut iso = dicio();
    iso.decide(&o.quiet());
    // pool 2-7 split evenly: 2 cores each
    assert_eq!(iso.shares(), vec![(1, 2.0), (2, 2.0), (3, 2.0)]);
    // job 2 writes the most PM
    let writes = [1_000, 50_000, 5_000];
    for _ in 0..2 {
        iso.decide(&o.window(800.0, 3.0, 2.0, &writes, None));
    }
    let s = iso.shares();
    assert_eq!(s[1], (2, 0.0), "{s:?}");
    // then the next biggest
    iso.decide(&o.window(800.0, 3.0, 2.0, &writes, None));
    assert_eq!(iso.shares()[2], (3, 1.0));
    // relaxing goes first to the job whose cores cost the PM least (job
    // 1), the biggest writer (job 2) last, although it holds the least
    let relax = |iso: &mut Isolation, o: &mut Obs| {
        iso.decide(&o.window(100.0, 0.5, 2.0, &writes, Some((1.0, 1.0, 0))));
        iso.shares()
    };
    assert_eq!(relax(&mut iso, &mut o), vec![(1, 3.0), (2, 0.0), (3, 1.0)]);
    assert_eq!(relax(&mut iso, &mut o), vec![(1, 4.0), (2, 0.0), (3, 1.0)]);
    // job 1 has all its threads' cores: next the second lightest
    assert_eq!(relax(&mut iso, &mut o)[2], (3, 2.0));
    assert_eq!(relax(&mut iso, &mut o)[1], (2, 0.0));
}

/// Two BE jobs of 6 threads on 6 pool CPUs, throttled three times
/// without attribution (the most CPU first, lower id on ties) to 1 + 2.
fn two_jobs_at_one_and_two_cores() -> (Obs, Isolation) {
    let mut o = Obs::new(2, 6);
    let mut iso = dicio();
    iso.decide(&o.quiet());
    for _ in 0..3 {
        iso.decide(&o.window(800.0, 3.0, 2.0, &[], None));
    }
    assert_eq!(iso.shares(), vec![(1, 1.0), (2, 2.0)]);
    (o, iso)
}

#[test]
fn the_job_writing_most_per_core_is_throttled_before_a_bigger_total() {
    let (mut o, mut iso) = two_jobs_at_one_and_two_cores();
    // job 2 writes more in total (3000 on 2 cores), job 1 more per core
    // (2000 on 1): taking job 1's core removes more PM traffic
    iso.decide(&o.window(800.0, 3.0, 2.0, &[2_000, 3_000], None));
    assert_eq!(iso.shares(), vec![(1, 0.0), (2, 2.0)]);
}

#[test]
fn without_attribution_relaxing_goes_to_the_job_with_least_cpu() {
    let (mut o, mut iso) = two_jobs_at_one_and_two_cores();
    iso.decide(&o.window(100.0, 0.5, 2.0, &[], Some((1.0, 1.0, 0))));
    assert_eq!(iso.shares(), vec![(1, 2.0), (2, 2.0)]);
}

#[test]
fn without_attribution_the_job_with_most_cpu_is_throttled() {
    let mut o = Obs::new(2, 6);
    let mut iso = dicio();
    iso.decide(&o.quiet());
    assert_eq!(iso.shares(), vec![(1, 3.0), (2, 3.0)]);
    iso.decide(&o.window(800.0, 3.0, 2.0, &[], None));
    assert_eq!(
        iso.shares(),
        vec![(1, 2.0), (2, 3.0)],
        "tie: lower id first"
    );
    iso.decide(&o.window(800.0, 3.0, 2.0, &[], None));
    assert_eq!(iso.shares(), vec![(1, 2.0), (2, 2.0)]);
}

#[test]
fn relaxing_never_gives_more_cores_than_threads_or_lc_cpus() {
    let mut o = Obs::new(1, 3);
    let mut iso = dicio();
    let d = iso.decide(&o.quiet());
    assert_eq!(d.job_budgets[0].1.cpus, CpuSet::parse_list("2-4").unwrap());
    for _ in 0..5 {
        let d = iso.decide(&o.window(100.0, 0.1, 2.0, &[], Some((0.1, 0.1, 0))));
        for (_, b) in d.job_budgets {
            assert!(!b.cpus.contains(0) && !b.cpus.contains(1));
        }
        o.t += 5_000_000;
    }
    assert_eq!(cores(&iso, 1), 3.0);
}

#[test]
fn more_be_jobs_than_pool_cpus_share_instead_of_starving() {
    // 8 CPUs, LC on 0-1, pool 2-7: 8 BE jobs of 1 thread
    let mut o = Obs::new(8, 1);
    let mut iso = Isolation::new(IsolationKind::CaladanPm, IsolationParams::default(), None);
    iso.decide(&o.quiet());
    assert!(
        iso.shares().iter().all(|(_, s)| *s >= 1.0),
        "{:?}",
        iso.shares()
    );
    // every job stopped by a burst, then relaxed: each gets a core back
    for _ in 0..8 {
        iso.decide(&o.window(100.0, 5.0, 2.0, &[], None));
    }
    assert!(iso.shares().iter().all(|(_, s)| *s == 0.0));
    for _ in 0..8 {
        iso.decide(&o.window(100.0, 0.1, 2.0, &[], None));
    }
    assert!(
        iso.shares().iter().all(|(_, s)| *s >= 1.0),
        "{:?}",
        iso.shares()
    );
}

#[test]
fn departed_jobs_free_their_cpus() {
    let mut o = Obs::new(2, 6);
    let mut iso = dicio();
    iso.decide(&o.quiet());
    assert_eq!(iso.shares(), vec![(1, 3.0), (2, 3.0)]);
    o.be_jobs = 1;
    // job 2's CPUs are free again: the quiet window relaxes job 1 into one
    let d = iso.decide(&o.quiet());
    assert_eq!(iso.shares(), vec![(1, 4.0)]);
    assert_eq!(d.job_budgets[0].1.cpus, CpuSet::parse_list("2-5").unwrap());
}

#[test]
fn params_validate_names_the_field() {
    assert_eq!(IsolationParams::default().validate(), Ok(()));
    let bad = IsolationParams {
        media_read_gbps: f64::NAN,
        ..IsolationParams::default()
    };
    assert_eq!(bad.validate().expect_err("nan").key, "media_read_gbps");
    let bad = IsolationParams {
        dram_gbps: [30.0, 15.0, 16.0],
        ..IsolationParams::default()
    };
    let e = bad.validate().expect_err("increasing");
    assert_eq!((e.key, e.index), ("dram_gbps", Some(2)));
    assert!(
        e.to_string()
            .starts_with("dram_gbps[2]: thresholds must not increase"),
        "{e}"
    );
    let bad = IsolationParams {
        caladan_dram_gbps: Some(0.0),
        ..IsolationParams::default()
    };
    assert_eq!(bad.validate().expect_err("zero").key, "caladan_dram_gbps");
    let bad = IsolationParams {
        min_duty: 0.0,
        ..IsolationParams::default()
    };
    assert_eq!(bad.validate().expect_err("zero").key, "min_duty");
}
