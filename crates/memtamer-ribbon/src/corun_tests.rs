//! Tests of `corun.rs`: the split (exhaustively over small inputs) and the
//! coordinator's search over the summed counters.

use super::*;

fn d(rate: f64, max: usize) -> Demand {
    Demand { rate, max }
}

#[test]
fn the_thesis_pair_splits_by_throughput_ratio() {
    // two applications of 24 threads each (thesis §6.5.4), 3:1 throughput
    assert_eq!(
        split_flushers(8, &[d(3e9, 24), d(1e9, 24)]),
        vec![6, 2],
        "8 flushers at 3:1"
    );
    // 7.5 / 2.5: equal remainders, the earlier entry gets the ceiling
    assert_eq!(split_flushers(10, &[d(3e9, 24), d(1e9, 24)]), vec![8, 2]);
    assert_eq!(split_flushers(10, &[d(1e9, 24), d(3e9, 24)]), vec![3, 7]);
    // equal throughput: equal halves
    assert_eq!(split_flushers(24, &[d(5.0, 24), d(5.0, 24)]), vec![12, 12]);
}

#[test]
fn every_live_application_gets_one_and_zero_throughput_gets_only_that() {
    // 100:0 would give the idle one nothing; it keeps its minimum
    assert_eq!(split_flushers(6, &[d(100.0, 24), d(0.0, 24)]), vec![5, 1]);
    // a very small share is lifted to one, the rest shrink to fit
    assert_eq!(
        split_flushers(4, &[d(1000.0, 24), d(1.0, 24), d(1.0, 24)]),
        vec![2, 1, 1]
    );
    // all idle: equal split
    assert_eq!(split_flushers(7, &[d(0.0, 8), d(0.0, 8)]), vec![4, 3]);
    // the busy one is at its maximum: the rest go to the idle ones
    assert_eq!(
        split_flushers(7, &[d(0.0, 8), d(5.0, 2), d(0.0, 8)]),
        vec![3, 2, 2]
    );
}

#[test]
fn fewer_flushers_than_applications_go_to_the_busiest() {
    assert_eq!(
        split_flushers(2, &[d(1.0, 4), d(9.0, 4), d(5.0, 4)]),
        vec![0, 1, 1]
    );
    // ties: the earlier entry
    assert_eq!(split_flushers(1, &[d(2.0, 4), d(2.0, 4)]), vec![1, 0]);
    assert_eq!(split_flushers(0, &[d(2.0, 4), d(2.0, 4)]), vec![0, 0]);
}

#[test]
fn no_application_gets_more_than_it_can_run() {
    // the busy one can run only 2: the rest go to the other
    assert_eq!(split_flushers(10, &[d(9.0, 2), d(1.0, 24)]), vec![2, 8]);
    // more than everyone together can run: each gets its maximum
    assert_eq!(split_flushers(100, &[d(9.0, 2), d(1.0, 3)]), vec![2, 3]);
    // an application that started no flusher takes none
    assert_eq!(split_flushers(5, &[d(9.0, 0), d(1.0, 8)]), vec![0, 5]);
}

#[test]
fn bad_rates_count_as_zero_throughput() {
    let bad = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -3.0];
    for b in bad {
        assert_eq!(split_flushers(6, &[d(b, 8), d(2.0, 8)]), vec![1, 5], "{b}");
    }
    assert!(split_flushers(3, &[]).is_empty());
}

/// The bounded quota of app `i` recomputed independently (bisection on λ).
fn quotas(total: usize, apps: &[Demand]) -> Vec<f64> {
    let total = total.min(apps.iter().map(|a| a.max).sum()) as f64;
    let zero = apps
        .iter()
        .all(|a| a.max == 0 || a.rate.is_nan() || a.rate <= 0.0);
    let w: Vec<f64> = apps
        .iter()
        .map(|a| {
            if zero {
                1.0
            } else if a.rate > 0.0 {
                a.rate
            } else {
                0.0
            }
        })
        .collect();
    // every application with throughput at its maximum: the rest in equal
    // parts to those without
    let saturated: f64 = apps
        .iter()
        .zip(&w)
        .map(|(a, w)| if *w > 0.0 { a.max } else { a.max.min(1) } as f64)
        .sum();
    let (w, lo): (Vec<f64>, Vec<f64>) = if total > saturated {
        apps.iter()
            .zip(&w)
            .map(|(a, w)| {
                if *w > 0.0 {
                    (0.0, a.max as f64)
                } else {
                    (1.0, a.max.min(1) as f64)
                }
            })
            .unzip()
    } else {
        (
            w.clone(),
            apps.iter().map(|a| a.max.min(1) as f64).collect(),
        )
    };
    let at = |l: f64| -> Vec<f64> {
        (0..apps.len())
            .map(|i| (l * w[i]).clamp(lo[i], apps[i].max as f64))
            .collect()
    };
    let (mut lo, mut hi) = (0.0f64, 1e12f64);
    for _ in 0..200 {
        let mid = (lo + hi) / 2.0;
        if at(mid).iter().sum::<f64>() < total {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    at(hi)
}

#[test]
fn the_split_keeps_its_promises_on_every_small_input() {
    let rates = [0.0, 1.0, 2.0, 5.0, 7.5];
    let mut cases = 0;
    for n in 1..=3usize {
        let combos = (rates.len() * 5).pow(n as u32);
        for code in 0..combos {
            let mut c = code;
            let apps: Vec<Demand> = (0..n)
                .map(|_| {
                    let r = rates[c % rates.len()];
                    c /= rates.len();
                    let m = c % 5;
                    c /= 5;
                    d(r, m)
                })
                .collect();
            for total in 0..=14usize {
                cases += 1;
                let got = split_flushers(total, &apps);
                let caps: usize = apps.iter().map(|a| a.max).sum();
                let want = total.min(caps);
                let ctx = format!("total {total} apps {apps:?} -> {got:?}");
                assert_eq!(got.len(), n, "{ctx}");
                assert_eq!(got.iter().sum::<usize>(), want, "sum: {ctx}");
                assert!(got.iter().zip(&apps).all(|(g, a)| *g <= a.max), "{ctx}");
                let live = apps.iter().filter(|a| a.max >= 1).count();
                if want >= live {
                    // minimum one each, quota within one (floor or ceiling)
                    assert!(
                        got.iter().zip(&apps).all(|(g, a)| a.max == 0 || *g >= 1),
                        "minimum: {ctx}"
                    );
                    let q = quotas(total, &apps);
                    for i in 0..n {
                        let g = got[i] as f64;
                        assert!(
                            g >= q[i].floor() - 1e-6 && g <= q[i].ceil() + 1e-6,
                            "quota {:?}: {ctx}",
                            q
                        );
                    }
                    // the busier of two applications never gets fewer
                    for i in 0..n {
                        for j in 0..n {
                            if apps[i].rate > apps[j].rate && apps[i].max >= apps[j].max {
                                assert!(got[i] >= got[j], "order: {ctx}");
                            }
                        }
                    }
                } else {
                    assert!(got.iter().all(|&g| g <= 1), "{ctx}");
                }
                // deterministic
                assert_eq!(split_flushers(total, &apps), got, "{ctx}");
            }
        }
    }
    assert!(cases > 100_000, "{cases}");
}

const MS: Duration = Duration::from_millis(1);

fn reg(id: u64, bytes: u64, n: usize, max: usize) -> Registrant {
    Registrant {
        id,
        bytes,
        app_threads: n,
        max_flushers: max,
    }
}

/// Drives a coordinator and a plain controller with the same single
/// application's counter: a process alone is controlled exactly as today.
#[test]
fn one_registrant_gets_what_its_own_controller_would_choose() {
    let cfg = ControlConfig::thesis(16);
    let mut co = Coordinator::new(cfg.clone(), Duration::ZERO, true);
    let mut own: Option<Controller> = None;
    let mut bytes = 0u64;
    let mut m = 4usize;
    for step in 0..4000u64 {
        let now = MS * step as u32 * 5;
        // a curve with a peak at 6 flushers, in bytes per 5 ms
        let per = 1_000_000.0 * (1.0 + m.min(6) as f64 - 0.2 * m.saturating_sub(6) as f64);
        bytes += per as u64;
        let p = co.step(now, &[reg(7, bytes, 3, 16)], None, 16.0);
        let c = own.get_or_insert_with(|| Controller::new(cfg.clone(), now, bytes, true));
        let d = if step == 0 {
            c.current()
        } else {
            c.observe(now, bytes, 3, 16.0)
        };
        assert_eq!(p.total, d.flushers, "step {step}");
        assert_eq!(p.flushers, vec![d.flushers], "step {step}");
        assert_eq!(p.proactive, d.proactive, "step {step}");
        m = p.flushers[0];
    }
    assert!(co.searches() >= 1);
}

#[test]
fn the_search_runs_on_the_sum_and_the_split_follows_the_ratio() {
    let cfg = ControlConfig::thesis(24);
    let mut co = Coordinator::new(cfg, Duration::ZERO, false);
    let (mut a, mut b) = (0u64, 0u64);
    let mut last = None;
    for step in 0..2000u32 {
        let now = MS * step * 5;
        // application A flushes three times as fast as B
        a += 3_000_000;
        b += 1_000_000;
        let p = co.step(now, &[reg(1, a, 12, 24), reg(2, b, 8, 24)], None, 24.0);
        assert_eq!(
            p.flushers.iter().sum::<usize>(),
            p.total.min(48),
            "step {step}"
        );
        last = Some(p);
    }
    let p = last.expect("steps ran");
    assert!(p.total >= 2, "{p:?}");
    // 3:1 within the rounding
    let q = p.total as f64 * 0.75;
    assert!((p.flushers[0] as f64 - q).abs() <= 1.0, "{p:?}");
    assert_eq!(co.summed_bytes(), (a - 3_000_000) + (b - 1_000_000));
}

#[test]
fn a_membership_change_restarts_the_search_and_keeps_the_sum_continuous() {
    let cfg = ControlConfig::thesis(8);
    let mut co = Coordinator::new(cfg, Duration::ZERO, false);
    let mut a = 0u64;
    for step in 0..400u32 {
        a += 1000;
        co.step(MS * step * 5, &[reg(1, a, 2, 8)], None, 8.0);
    }
    let before = co.searches();
    let sum = co.summed_bytes();
    // B arrives with a large counter of its own: only its growth is added
    let p = co.step(
        MS * 400 * 5,
        &[reg(1, a + 1000, 2, 8), reg(2, 1 << 40, 2, 8)],
        None,
        8.0,
    );
    assert_eq!(co.summed_bytes(), sum + 1000);
    assert_eq!(co.searches(), before + 1);
    assert!(matches!(p.event, Event::Probing { index: 0 } | Event::Hold));
    // B goes away: a new search again, the sum does not jump
    co.step(MS * 401 * 5, &[reg(1, a + 2000, 2, 8)], None, 8.0);
    assert_eq!(co.summed_bytes(), sum + 2000);
    assert_eq!(co.searches(), before + 2);
}

#[test]
fn no_idle_hardware_thread_system_wide_gives_every_application_zero() {
    let cfg = ControlConfig::thesis(8);
    let mut co = Coordinator::new(cfg, Duration::ZERO, false);
    // 4 + 4 application threads on 8 hardware threads: no room for a flusher
    let p = co.step(MS, &[reg(1, 10, 4, 8), reg(2, 10, 4, 8)], None, 8.0);
    assert_eq!((p.total, p.flushers), (0, vec![0, 0]));
    assert_eq!(p.event, Event::NoIdleCores);
}

#[test]
fn a_machine_wide_counter_is_the_signal_when_there_is_one() {
    let cfg = ControlConfig::thesis(8);
    let mut co = Coordinator::new(cfg.clone(), Duration::ZERO, false);
    let mut own: Option<Controller> = None;
    for step in 1..600u32 {
        let now = MS * step * 5;
        let imc = u64::from(step) * 7_000;
        let p = co.step(now, &[reg(1, u64::from(step), 1, 8)], Some(imc), 8.0);
        let d = match own.as_mut() {
            None => own
                .insert(Controller::new(cfg.clone(), now, imc, false))
                .current(),
            Some(c) => c.observe(now, imc, 1, 8.0),
        };
        assert_eq!(p.total, d.flushers, "step {step}");
    }
}
