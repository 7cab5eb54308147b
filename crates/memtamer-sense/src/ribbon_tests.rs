//! Ribbon's sensing inputs, with recorded iMC readings, recorded PEBS
//! records and fake sysfs trees.

use super::*;
use crate::perf::Sample;
use memtamer_ribbon::controller::ControlConfig;
use memtamer_ribbon::{Config, Flushers, Ribbon};
use std::time::{Duration, Instant};

/// A reading with `wpq` PM write inserts and `cas` DRAM writes (None:
/// the counter is not open on this channel).
fn reading(channel: u32, cas: Option<u64>, wpq: Option<u64>) -> Reading {
    let mut counts = [None; 6];
    counts[index(ImcEvent::CasWrite)] = cas;
    counts[index(ImcEvent::PmmWpqInserts)] = wpq;
    Reading {
        socket: 0,
        channel,
        counts,
    }
}

#[test]
fn pm_write_inserts_win_over_cas_writes_and_nothing_counted_is_none() {
    let both = [reading(0, Some(5), None), reading(1, Some(7), Some(3))];
    assert_eq!(
        pick_event(&both),
        Some((ImcEvent::PmmWpqInserts, IMC_PM_WRITES))
    );
    let cas = [reading(0, Some(5), None), reading(1, Some(7), None)];
    assert_eq!(pick_event(&cas), Some((ImcEvent::CasWrite, IMC_CAS_WRITES)));
    assert_eq!(pick_event(&[reading(0, None, None)]), None);
    assert_eq!(pick_event(&[]), None);
}

#[test]
fn written_bytes_sum_the_counting_channels_at_64_bytes_a_write() {
    let r = [reading(0, Some(10), Some(3)), reading(1, Some(20), None)];
    assert_eq!(written_bytes(&r, ImcEvent::CasWrite), Some(30 * 64));
    assert_eq!(written_bytes(&r, ImcEvent::PmmWpqInserts), Some(3 * 64));
    assert_eq!(
        written_bytes(&[reading(0, Some(1), None)], ImcEvent::PmmWpqInserts),
        None
    );
}

#[test]
fn an_imc_source_over_recorded_readings_feeds_ribbon_and_names_itself() {
    // Two channels whose PM write inserts grow by 1000 per reading.
    let mut n = 0u64;
    let read = Box::new(move || {
        n += 1000;
        vec![reading(0, Some(n), Some(n)), reading(1, Some(n), Some(n))]
    });
    let src = ImcWrites::new(read).expect("counts PM writes");
    assert_eq!(src.name(), IMC_PM_WRITES);
    let mut cfg = Config::new(2, 64);
    cfg.flushers = Flushers::Adaptive;
    cfg.cores = 4;
    cfg.detect_idle = false;
    cfg.control = ControlConfig {
        probe: Duration::from_millis(4),
        ..ControlConfig::thesis(4)
    };
    cfg.bandwidth = Some(Box::new(src));
    let r = Ribbon::start(cfg).expect("starts");
    let deadline = Instant::now() + Duration::from_secs(10);
    while r.stats().last_case.is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(2));
    }
    let st = r.stats();
    r.stop();
    assert_eq!(st.bandwidth_source, IMC_PM_WRITES);
    assert!(
        st.last_case.is_some(),
        "a search finished on the iMC signal: {st:?}"
    );
}

#[test]
fn readings_without_write_counters_give_no_source() {
    assert!(ImcWrites::new(Box::new(|| vec![reading(0, None, None)])).is_none());
}

fn fake_root(tag: &str) -> std::path::PathBuf {
    let root = std::env::temp_dir().join(format!("mt-ribbon-sysfs-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join("cpu")).expect("mkdir");
    root
}

#[test]
fn without_imc_pmus_ribbon_uses_its_flushed_bytes_and_says_why() {
    let root = fake_root("none");
    let (src, choice) = choose_bandwidth(&root);
    assert!(src.is_none());
    assert_eq!(choice.name, FLUSHED_BYTES);
    assert!(
        choice.detail.contains("no uncore_imc") && choice.detail.contains("flushed-bytes"),
        "{}",
        choice.detail
    );
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn imc_pmus_whose_counters_do_not_open_fall_back_with_the_reason() {
    let root = fake_root("dead");
    let d = root.join("uncore_imc_0");
    std::fs::create_dir_all(d.join("format")).expect("mkdir");
    // a PMU type no kernel has, so perf_event_open refuses it everywhere
    std::fs::write(d.join("type"), "999999\n").expect("type");
    std::fs::write(d.join("cpumask"), "0\n").expect("cpumask");
    std::fs::write(d.join("format/event"), "config:0-7\n").expect("event");
    std::fs::write(d.join("format/umask"), "config:8-15\n").expect("umask");
    std::fs::create_dir_all(d.join("events")).expect("mkdir");
    std::fs::write(d.join("events/cas_count_write"), "event=0x04,umask=0x0c\n").expect("a");
    let (src, choice) = choose_bandwidth(&root);
    assert!(src.is_none());
    assert_eq!(choice.name, FLUSHED_BYTES);
    assert!(
        choice.detail.contains("no write counter opens"),
        "{}",
        choice.detail
    );
    let _ = std::fs::remove_dir_all(&root);
}

fn sample(pid: u32, addr: u64) -> Record {
    Record::Sample(Sample {
        pid,
        addr,
        ..Sample::default()
    })
}

#[test]
fn only_this_process_s_store_addresses_are_kept() {
    let recs = [
        sample(7, 0x1000),
        sample(8, 0x2000),
        Record::Exec { pid: 7, tid: 7 },
        sample(7, 0),
        sample(7, 0x3040),
    ];
    let mut out = Vec::new();
    store_addresses(&recs, 7, &mut out);
    assert_eq!(out, vec![0x1000, 0x3040]);
}

#[test]
fn recorded_pebs_samples_drive_ribbon_s_proactive_flushes() {
    let buf = vec![0u8; 4096];
    let base = buf.as_ptr() as u64;
    let me = std::process::id();
    // two "CPUs" yielding their records once the range is allowed
    let open = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (gate, gate1) = (open.clone(), open.clone());
    let mut cpu0 = Some(vec![
        sample(me, base + 3),
        sample(me, base + 70),
        sample(me + 1, base + 640), // another process: ignored
        sample(me, base + 8192),    // outside the allowed range: ignored
    ]);
    let mut cpu1 = Some(vec![sample(me, base + 4000), sample(me, base + 10)]);
    let drains: Vec<RecordDrain> = vec![
        Box::new(move |out: &mut Vec<Record>| {
            if gate.load(std::sync::atomic::Ordering::Acquire) {
                out.extend(cpu0.take().unwrap_or_default());
            }
        }),
        Box::new(move |out: &mut Vec<Record>| {
            if gate1.load(std::sync::atomic::Ordering::Acquire) {
                out.extend(cpu1.take().unwrap_or_default());
            }
        }),
    ];
    let mut cfg = Config::new(1, 16);
    cfg.flushers = Flushers::Fixed(1);
    cfg.sampler = Some(Box::new(PebsStores::from_drains(drains, me)));
    let r = Ribbon::start(cfg).expect("starts");
    r.allow_proactive(buf.as_ptr() as usize, buf.len());
    open.store(true, std::sync::atomic::Ordering::Release);
    // lines base (3 and 10), base+64 (70), base+3968 (4000)
    let deadline = Instant::now() + Duration::from_secs(10);
    while r.stats().proactive_bytes < 3 * 64 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    std::thread::sleep(Duration::from_millis(5));
    r.forbid_proactive(buf.as_ptr() as usize, buf.len());
    let st = r.stats();
    r.stop();
    assert_eq!(
        st.proactive_bytes,
        3 * 64,
        "this process's allowed lines, each once: {st:?}"
    );
}
