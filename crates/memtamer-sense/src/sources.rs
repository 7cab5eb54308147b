//! One `Observation` from every source this host has, and an honest list
//! of the ones it lacks (a missing figure is unknown, never 0).

use std::collections::HashMap;
use std::time::Instant;

use memtamer_core::{AccessStats, CpuSet, Observation, ThreadObs};
use memtamer_gate::{Gate, GateOptions, GateWindow};
use serde::Serialize;

use crate::attribute::Attributor;
use crate::decode::Decoder;
use crate::media::{self, MediaCounters};
use crate::mounts::PmClassifier;
use crate::perf::{EventSpec, Sampler, Target};
use crate::uncore::{self, ImcCounters, Reading};

/// A source and whether it is active.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SourceStatus {
    /// Source name.
    pub source: &'static str,
    /// Active?
    pub active: bool,
    /// What it provides, or why it is missing.
    pub detail: String,
}

/// Where to look.
#[derive(Clone, Debug)]
pub struct SourceConfig {
    /// Gate name whose library reports to read.
    pub gate: GateOptions,
    /// sysfs directory of perf PMUs.
    pub pmu_root: std::path::PathBuf,
    /// The `ipmctl` program.
    pub ipmctl: String,
    /// The sampled store event (PEBS stores by default; tests use page faults).
    pub sample_event: EventSpec,
    /// The sampled PM-load event (MEM_LOAD_RETIRED.LOCAL_PMM by default).
    pub load_event: EventSpec,
    /// CPUs to sample on (default: every online CPU).
    pub cpus: Option<Vec<u32>>,
    /// Path prefixes that count as PM besides DAX mounts and devdax
    /// (emulated PM, e.g. `/dev/shm/pm-`).
    pub pm_paths: Vec<String>,
    /// NUMA nodes whose memory is the slow tier (PM or CXL as a node).
    pub slow_nodes: Vec<u32>,
    /// How often the media-counter thread runs `ipmctl` (Dicio's "PM poll
    /// thread"; each reading takes milliseconds through ACPI and a process
    /// spawn, so it never runs on the caller's thread).
    pub media_period: std::time::Duration,
    /// Limit on one run of an external program (`ipmctl`): a hanging one
    /// is killed, so it can stall neither start-up nor exit.
    pub command_timeout: std::time::Duration,
}

impl SourceConfig {
    /// Defaults plus `MEMTAMER_PM_PATHS` (colon-separated path prefixes) and
    /// `MEMTAMER_SLOW_NODES` (a node list such as `2-3`; empty for none).
    /// Without `MEMTAMER_SLOW_NODES` the slow nodes are sensed: every NUMA
    /// node with memory and no CPU ([`crate::topology::memory_only_nodes`]).
    /// A bad value is an error naming the variable.
    pub fn from_env() -> Result<SourceConfig, String> {
        let mut c = SourceConfig::default();
        if let Ok(v) = std::env::var("MEMTAMER_PM_PATHS") {
            c.pm_paths = v
                .split(':')
                .filter(|p| !p.is_empty())
                .map(String::from)
                .collect();
        }
        c.slow_nodes = slow_nodes_from(
            std::env::var("MEMTAMER_SLOW_NODES").ok().as_deref(),
            std::path::Path::new("/sys/devices/system/node"),
        )?;
        Ok(c)
    }
}

/// The slow NUMA nodes: the list in `setting` if given (an error naming
/// `MEMTAMER_SLOW_NODES` if malformed), else those sensed under `node_root`.
fn slow_nodes_from(setting: Option<&str>, node_root: &std::path::Path) -> Result<Vec<u32>, String> {
    match setting {
        Some(v) => Ok(CpuSet::parse_list(v.trim())
            .map_err(|e| {
                format!(
                    "MEMTAMER_SLOW_NODES = {v:?}: expected a node list such as 2 or 2-3,5 ({e})"
                )
            })?
            .iter()
            .map(|n| n as u32)
            .collect()),
        None => crate::topology::memory_only_nodes(node_root),
    }
}

impl Default for SourceConfig {
    fn default() -> Self {
        SourceConfig {
            gate: GateOptions::default(),
            pmu_root: "/sys/bus/event_source/devices".into(),
            ipmctl: "ipmctl".into(),
            sample_event: EventSpec::pebs_stores(9973),
            load_event: EventSpec::pebs_pm_loads(9973),
            cpus: None,
            pm_paths: Vec::new(),
            slow_nodes: Vec::new(),
            media_period: std::time::Duration::from_millis(100),
            command_timeout: crate::command::DEFAULT_TIMEOUT,
        }
    }
}

/// Two consecutive media readings and when each completed.
struct MediaPair {
    before: Vec<MediaCounters>,
    after: Vec<MediaCounters>,
    interval: std::time::Duration,
    after_at: Instant,
}

/// Dicio §4.1's PM poll thread: reads the DIMM media counters every
/// `period` in the background and publishes the latest pair, so that a
/// fast control loop never waits for ACPI.
struct MediaPoller {
    latest: std::sync::Arc<std::sync::Mutex<Option<MediaPair>>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl MediaPoller {
    fn start(
        program: String,
        first: Vec<MediaCounters>,
        period: std::time::Duration,
        limit: std::time::Duration,
    ) -> MediaPoller {
        use std::sync::atomic::Ordering;
        let latest = std::sync::Arc::new(std::sync::Mutex::new(None));
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (latest2, stop2) = (latest.clone(), stop.clone());
        let spawned = std::thread::Builder::new()
            .name("memtamer-media".into())
            .spawn(move || {
                let mut prev = (Instant::now(), first);
                while !stop2.load(Ordering::Relaxed) {
                    std::thread::sleep(period);
                    let Ok(now) = run_ipmctl(&program, limit) else {
                        continue;
                    };
                    let at = Instant::now();
                    let pair = MediaPair {
                        before: std::mem::take(&mut prev.1),
                        after: now.clone(),
                        interval: at.duration_since(prev.0),
                        after_at: at,
                    };
                    prev = (at, now);
                    if let Ok(mut l) = latest2.lock() {
                        *l = Some(pair);
                    }
                }
            });
        if spawned.is_err() {
            stop.store(true, Ordering::Relaxed);
        }
        MediaPoller { latest, stop }
    }

    /// The latest reading as DIMM observations with their age, if any.
    fn observe(&self) -> Vec<memtamer_core::DimmObs> {
        let Ok(l) = self.latest.lock() else {
            return Vec::new();
        };
        match l.as_ref() {
            Some(p) => media::dimm_obs(
                &p.before,
                &p.after,
                p.interval.as_nanos() as u64,
                p.after_at.elapsed().as_nanos() as u64,
            ),
            None => Vec::new(),
        }
    }
}

impl Drop for MediaPoller {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Online CPUs from sysfs (CPU 0 alone if it cannot be read).
pub(crate) fn online_cpus() -> Vec<u32> {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|t| CpuSet::parse_list(t.trim()).ok())
        .map(|set| set.iter().map(|c| c as u32).collect::<Vec<u32>>())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| vec![0])
}

/// Ring buffer per CPU: 2^6 pages (256 KiB, about 4,600 samples) between
/// two windows before the kernel drops samples.
const RING_PAGES_LOG2: u32 = 6;

/// One sampled event on every CPU, attributed to PM.
struct Sampled {
    samplers: Vec<Sampler>,
    attributor: Attributor,
    is_write: bool,
}

/// Opens `event` on every CPU in `cpus`; Err(reason) if any CPU refuses.
fn open_sampled(
    event: EventSpec,
    cpus: &[u32],
    config: &SourceConfig,
    is_write: bool,
) -> Result<Sampled, String> {
    let mut samplers = Vec::new();
    for &cpu in cpus {
        samplers.push(
            Sampler::open(event, Target::Cpu(cpu), RING_PAGES_LOG2).map_err(|e| e.to_string())?,
        );
    }
    let a = Attributor::new(
        PmClassifier::from_system(&config.pm_paths).with_slow_nodes(&config.slow_nodes),
    );
    let attributor = match Decoder::new() {
        Ok(d) => a.with_decoder(d),
        Err(_) => a,
    };
    Ok(Sampled {
        samplers,
        attributor,
        is_write,
    })
}

/// The sensors of one host.
pub struct Sensors {
    gate: Option<std::sync::Arc<Gate>>,
    /// Where the gate would be, and when we last looked: a PM application
    /// started after the sensors creates it, and its reports count from then.
    gate_options: GateOptions,
    gate_checked: Instant,
    gate_window: GateWindow,
    imc: Option<ImcCounters>,
    imc_last: Vec<Reading>,
    media: Option<MediaPoller>,
    /// Sampled stores (writes) and, where the CPU has the event, PM loads.
    sampled: Vec<Sampled>,
    last: Instant,
    /// What is active and what is missing.
    pub status: Vec<SourceStatus>,
}

fn run_ipmctl(program: &str, limit: std::time::Duration) -> Result<Vec<MediaCounters>, String> {
    let out = crate::command::output_within(
        std::process::Command::new(program).args(["show", "-dimm", "-performance"]),
        limit,
    )
    .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "{program} show -dimm -performance failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    media::parse_ipmctl(&String::from_utf8_lossy(&out.stdout)).map_err(|e| e.to_string())
}

impl Sensors {
    /// Probes every source once and opens those that exist.
    pub fn open(config: &SourceConfig) -> Sensors {
        let mut status = Vec::new();
        // 1. library reports
        let gate = if config.gate.path().exists() {
            match Gate::open(&config.gate) {
                Ok(g) => {
                    status.push(SourceStatus {
                        source: "library reports",
                        active: true,
                        detail: format!(
                            "{} (exact request-level PM traffic of gated threads)",
                            g.path().display()
                        ),
                    });
                    Some(g)
                }
                Err(e) => {
                    status.push(SourceStatus {
                        source: "library reports",
                        active: false,
                        detail: e.to_string(),
                    });
                    None
                }
            }
        } else {
            status.push(SourceStatus {
                source: "library reports",
                active: false,
                detail: format!(
                    "no gate {} (no process uses the memtamer gate or shim)",
                    config.gate.path().display()
                ),
            });
            None
        };
        // 2. sampled stores (PEBS) and PM loads, one sampler per CPU each
        let cpus = config.cpus.clone().unwrap_or_else(online_cpus);
        let mut sampled = Vec::new();
        for (source, event, is_write) in [
            ("PEBS stores", config.sample_event, true),
            ("PEBS PM loads", config.load_event, false),
        ] {
            match open_sampled(event, &cpus, config, is_write) {
                Ok(s) => {
                    status.push(SourceStatus {
                        source,
                        active: true,
                        detail: format!(
                            "{}, period {}, {} CPUs, attributed to PM mappings",
                            event.name,
                            event.period,
                            s.samplers.len()
                        ),
                    });
                    sampled.push(s);
                }
                Err(why) => status.push(SourceStatus {
                    source,
                    active: false,
                    detail: why,
                }),
            }
        }
        // 3. iMC uncore counters
        let imc = match uncore::discover(&config.pmu_root) {
            Ok(pmus) if pmus.is_empty() => {
                status.push(SourceStatus {
                    source: "iMC counters",
                    active: false,
                    detail: format!(
                        "no uncore_imc_* PMU in {} (VM, other vendor, or old kernel)",
                        config.pmu_root.display()
                    ),
                });
                None
            }
            Ok(pmus) => {
                let c = ImcCounters::open(&pmus);
                status.push(SourceStatus {
                    source: "iMC counters",
                    active: c.missing.len() < pmus.len() * 6,
                    detail: if c.missing.is_empty() {
                        format!(
                            "{} channels: CAS, PMM RPQ/WPQ occupancy and inserts",
                            pmus.len()
                        )
                    } else {
                        format!("missing: {}", c.missing.join("; "))
                    },
                });
                Some(c)
            }
            Err(e) => {
                status.push(SourceStatus {
                    source: "iMC counters",
                    active: false,
                    detail: e.to_string(),
                });
                None
            }
        };
        // 4. DIMM media counters
        let (_ipmctl, media) = match run_ipmctl(&config.ipmctl, config.command_timeout) {
            Ok(d) if !d.is_empty() => {
                status.push(SourceStatus {
                    source: "DIMM media counters",
                    active: true,
                    detail: format!("{} DIMMs via {}", d.len(), config.ipmctl),
                });
                (
                    Some(config.ipmctl.clone()),
                    Some(MediaPoller::start(
                        config.ipmctl.clone(),
                        d,
                        config.media_period,
                        config.command_timeout,
                    )),
                )
            }
            Ok(_) => {
                status.push(SourceStatus {
                    source: "DIMM media counters",
                    active: false,
                    detail: "ipmctl reports no PM DIMM".into(),
                });
                (None, None)
            }
            Err(e) => {
                status.push(SourceStatus {
                    source: "DIMM media counters",
                    active: false,
                    detail: e,
                });
                (None, None)
            }
        };
        let imc_last = imc.as_ref().map(ImcCounters::read).unwrap_or_default();
        let mut s = Sensors {
            gate,
            gate_options: config.gate.clone(),
            gate_checked: Instant::now(),
            gate_window: GateWindow::default(),
            imc,
            imc_last,
            media,
            sampled,
            last: Instant::now(),
            status,
        };
        s.observe(); // baseline for the first window
        s
    }

    /// The gate's state now (threads, their states), if library reports are active.
    pub fn gate_snapshot(&self) -> Option<memtamer_gate::GateSnapshot> {
        self.gate.as_ref().map(|g| g.snapshot())
    }

    /// The window since the previous call.
    pub fn observe(&mut self) -> Observation {
        let now = Instant::now();
        let mut obs = Observation {
            duration_ns: now.duration_since(self.last).as_nanos() as u64,
            ..Default::default()
        };
        self.last = now;
        if self.gate.is_none() && now.duration_since(self.gate_checked).as_millis() >= 500 {
            self.gate_checked = now;
            if self.gate_options.path().exists() {
                if let Ok(g) = Gate::open(&self.gate_options) {
                    if let Some(st) = self
                        .status
                        .iter_mut()
                        .find(|s| s.source == "library reports")
                    {
                        st.active = true;
                        st.detail = format!(
                            "{} (exact request-level PM traffic of gated threads)",
                            g.path().display()
                        );
                    }
                    self.gate_window = GateWindow::default();
                    self.gate_window.next(&g.snapshot());
                    self.gate = Some(g);
                }
            }
        }
        if let Some(g) = &self.gate {
            let (threads, gate) = self.gate_window.next(&g.snapshot());
            obs.threads = threads;
            obs.gate = Some(gate);
        }
        // sampled traffic of threads the library does not report
        let reported: Vec<(u32, u32)> = obs.threads.iter().map(|t| (t.job, t.tid)).collect();
        let mut sampled: HashMap<(u32, u32), AccessStats> = HashMap::new();
        for src in &mut self.sampled {
            let a = &mut src.attributor;
            for sampler in &mut src.samplers {
                sampler.drain(|r| a.apply(r));
            }
            for (key, tally) in a.take_window().threads {
                if reported.contains(&key) {
                    continue; // library reports are exact: they win
                }
                let stats = sampled.entry(key).or_default();
                if src.is_write {
                    stats.write_bytes += tally.bytes;
                } else {
                    stats.read_bytes += tally.bytes;
                }
            }
        }
        for ((pid, tid), pm) in sampled {
            obs.threads.push(ThreadObs {
                tid,
                job: pid,
                pm: Some(pm),
                ..Default::default()
            });
        }
        if let Some(imc) = &self.imc {
            let readings = imc.read();
            obs.channels = readings
                .iter()
                .zip(self.imc_last.iter())
                .map(|(after, before)| uncore::channel_obs(before, after))
                .collect();
            self.imc_last = readings;
        }
        if let Some(m) = &self.media {
            obs.dimms = m.observe();
        }
        obs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_nodes_are_sensed_as_cpu_less_nodes_unless_set() {
        let root = std::env::temp_dir().join(format!("mt-slow-{}", std::process::id()));
        crate::topology::write_fake_host(&root, 2, 2).expect("fake sysfs");
        let nodes = root.join("node");
        assert_eq!(slow_nodes_from(None, &nodes), Ok(vec![2]));
        assert_eq!(slow_nodes_from(Some("1,3"), &nodes), Ok(vec![1, 3]));
        assert_eq!(slow_nodes_from(Some(""), &nodes), Ok(vec![]), "empty: none");
        let err = slow_nodes_from(Some("x"), &nodes).expect_err("bad list");
        assert!(err.contains("MEMTAMER_SLOW_NODES"), "{err}");
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn media_counters_are_polled_in_the_background_and_carry_their_age() {
        // a fake ipmctl whose counters grow by 0x1000 lines per call
        let dir = std::env::temp_dir().join(format!("memtamer-ipmctl-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let script = dir.join("ipmctl");
        let count = dir.join("count");
        std::fs::write(&count, "0").expect("count");
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\nn=$(cat {c}); n=$((n + 4096)); echo $n > {c}\n\
                 printf ' ---DimmID=0x0001---\\n   MediaReads=0x%x\\n   MediaWrites=0x%x\\n' $n $n\n",
                c = count.display()
            ),
        )
        .expect("script");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let config = SourceConfig {
            gate: GateOptions {
                name: format!("sense-media-{}", std::process::id()),
                ..GateOptions::default()
            },
            pmu_root: "/nonexistent".into(),
            ipmctl: script.display().to_string(),
            media_period: std::time::Duration::from_millis(10),
            ..Default::default()
        };
        let mut s = Sensors::open(&config);
        assert!(s.status[4].active, "{:?}", s.status[4]);
        // observe() never runs ipmctl itself: it returns at once
        let t = Instant::now();
        let mut dimms = Vec::new();
        while t.elapsed() < std::time::Duration::from_secs(5) && dimms.is_empty() {
            std::thread::sleep(std::time::Duration::from_millis(20));
            let o0 = Instant::now();
            dimms = s.observe().dimms;
            assert!(
                o0.elapsed() < std::time::Duration::from_millis(5),
                "observe blocked"
            );
        }
        assert_eq!(dimms.len(), 1, "no reading published");
        assert_eq!(dimms[0].media_write_bytes, Some(4096 * 64));
        assert!(dimms[0].interval_ns.is_some_and(|i| i > 0));
        assert!(dimms[0].age_ns.is_some_and(|a| a < 5_000_000_000));
        drop(s);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Issue 22 item 3: a hanging ipmctl blocked start-up for ever.
    #[test]
    fn a_hanging_ipmctl_is_killed_and_reported() {
        let dir = std::env::temp_dir().join(format!("memtamer-ipmctl-hang-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let script = dir.join("ipmctl");
        std::fs::write(&script, "#!/bin/sh\nexec sleep 600\n").expect("script");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let config = SourceConfig {
            gate: GateOptions {
                name: format!("sense-hang-{}", std::process::id()),
                ..GateOptions::default()
            },
            pmu_root: "/nonexistent".into(),
            ipmctl: script.display().to_string(),
            command_timeout: std::time::Duration::from_millis(200),
            ..Default::default()
        };
        let s = Sensors::open(&config);
        assert!(!s.status[4].active);
        assert!(
            s.status[4].detail.contains("no answer within 200 ms"),
            "{:?}",
            s.status[4]
        );
        drop(s);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_bare_vm_reports_every_missing_source_with_a_reason() {
        let config = SourceConfig {
            gate: GateOptions {
                name: format!("sense-none-{}", std::process::id()),
                ..GateOptions::default()
            },
            pmu_root: "/nonexistent".into(),
            ipmctl: "/nonexistent/ipmctl".into(),
            ..Default::default()
        };
        let mut s = Sensors::open(&config);
        let names: Vec<&str> = s.status.iter().map(|x| x.source).collect();
        assert_eq!(
            names,
            [
                "library reports",
                "PEBS stores",
                "PEBS PM loads",
                "iMC counters",
                "DIMM media counters"
            ]
        );
        assert!(!s.status[0].active && !s.status[3].active && !s.status[4].active);
        if !s.status[1].active {
            assert!(s.status[1].detail.contains("perf_event_open"));
        }
        assert!(s.status.iter().all(|x| !x.detail.is_empty()));
        let obs = s.observe();
        assert!(obs.channels.is_empty() && obs.dimms.is_empty());
        assert!(obs.gate.is_none(), "unknown, not zero");
    }

    #[test]
    fn sampled_pm_stores_become_thread_observations() {
        // a page-fault event stands in for PEBS: each sample's IP is the
        // storing instruction, decoded to its size
        let prefix = format!("/dev/shm/memtamer-sense-src-{}-", std::process::id());
        let config = SourceConfig {
            gate: GateOptions {
                name: format!("sense-src-none-{}", std::process::id()),
                ..GateOptions::default()
            },
            pmu_root: "/nonexistent".into(),
            ipmctl: "/nonexistent/ipmctl".into(),
            sample_event: EventSpec::page_faults(1),
            // no PM-load stand-in: keep it the hardware event (missing here)
            load_event: EventSpec::pebs_pm_loads(9973),
            cpus: None,
            pm_paths: vec![prefix.clone()],
            slow_nodes: Vec::new(),
            media_period: std::time::Duration::from_millis(100),
            command_timeout: crate::command::DEFAULT_TIMEOUT,
        };
        let mut s = Sensors::open(&config);
        assert!(s.status[1].active, "{:?}", s.status[1]);
        // this thread writes 32 fresh pages of a "PM" file
        let path = format!("{prefix}pm");
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .expect("pm file");
        f.set_len(32 * 4096).expect("size");
        use std::os::unix::io::AsRawFd;
        // SAFETY: a fresh shared mapping of the file, written page by page.
        unsafe {
            let p = libc::mmap(
                std::ptr::null_mut(),
                32 * 4096,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                f.as_raw_fd(),
                0,
            );
            assert_ne!(p, libc::MAP_FAILED);
            for page in 0..32 {
                std::ptr::write_volatile(p.cast::<u64>().add(page * 512), 7);
            }
            let obs = s.observe();
            libc::munmap(p, 32 * 4096);
            let me = obs
                .threads
                .iter()
                .find(|t| t.job == std::process::id())
                .expect("this process's PM writes are observed");
            // 32 touches, each an 8-byte store (decoded), period 1
            assert_eq!(me.pm.map(|p| p.write_bytes), Some(32 * 8));
        }
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn library_reports_become_thread_observations() {
        let options = GateOptions {
            name: format!("sense-lib-{}", std::process::id()),
            initial_limit: 4,
            ..GateOptions::default()
        };
        let gate = Gate::open(&options).expect("gate");
        let config = SourceConfig {
            gate: options.clone(),
            pmu_root: "/nonexistent".into(),
            ipmctl: "/nonexistent/ipmctl".into(),
            ..Default::default()
        };
        let me = gate.register().expect("register");
        let mut s = Sensors::open(&config);
        assert!(s.status[0].active);
        for _ in 0..5 {
            let _p = me.enter(4096, true);
        }
        let obs = s.observe();
        assert_eq!(obs.pm_total().write_bytes, 5 * 4096);
        assert_eq!(obs.gate.map(|g| g.limit), Some(Some(4)));
        // the next window only has what happened since
        let _p = me.enter(1024, false);
        let obs = s.observe();
        assert_eq!(obs.pm_total().read_bytes, 1024);
        assert_eq!(obs.pm_total().write_bytes, 0);
        drop(_p);
        drop(me);
        let _ = std::fs::remove_file(options.path());
    }
}
