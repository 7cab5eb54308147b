//! Unimem's address-sampling access source (thesis §3.4 Step 1: PEBS/IBS
//! samples of memory references, each mapped to the data object its
//! address falls in), beside the PMU-free fault sampler ([`crate::profiler`]).
//!
//! Per rank, while an iteration is profiled, one PEBS load sampler
//! (MEM_LOAD_RETIRED.L3_MISS, the thesis's last-level-cache misses, so that
//! Eq. 3.1's `#data_access` counts main-memory loads; every load,
//! MEM_INST_RETIRED.ALL_LOADS, with `MEMTAMER_TIER_PEBS_LOADS=all`) and one PEBS store
//! sampler (MEM_INST_RETIRED.ALL_STORES) are opened on every thread of the
//! process but the runtime's own (`mt-tier-*`: the migrator's copies are
//! not the program's accesses), through `memtamer_linux::perf` (the
//! wrapper `memtamer-sense` uses too). A drain thread empties the rings
//! every tick so that a long phase does not overflow them (an overflow
//! would drop the end of the phase, not a fair sample of it); each phase
//! boundary attributes the phase's samples to the registry's objects with
//! the pure [`crate::access`] core.
//!
//! Which source runs ([`select`]): `MEMTAMER_TIER_PROFILER=auto` (default:
//! PEBS where it opens, else the fault sampler), `pebs` (the same, but a
//! PEBS that does not open is reported on stderr with the variable and the
//! errno) or `faults`. The choice and its reason end the `mt_tier_finish`
//! line (`profiler <source>`, [`Selection::token`]). The program is never
//! aborted for a missing PMU.
//!
//! Threads: an inherited per-task event cannot be memory-mapped (the
//! kernel's `perf_mmap` refuses `inherit` with `cpu == -1`), so the
//! samplers follow the threads alive when profiling starts; threads
//! created during the profiled iteration are not sampled (each profile
//! reopens, so they are from the next one on).

use crate::access::{AccessKind, AccessSample, PhaseAccesses, RangeIndex};
use crate::unimem::model::PhaseProfile;
use crate::TierError;
use memtamer_linux::perf::{EventSpec, Record, Sampler, Target};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// The variable that picks the access source.
pub const ENV: &str = "MEMTAMER_TIER_PROFILER";
/// The variable that sets the PEBS sampling period (events per sample).
pub const PERIOD_ENV: &str = "MEMTAMER_TIER_PEBS_PERIOD";
/// The variable that picks the load event (`l3miss`, the default, or `all`).
pub const LOADS_ENV: &str = "MEMTAMER_TIER_PEBS_LOADS";
/// Default period: the prime the KIT thesis's PEBS store sampling uses
/// (`memtamer_sense::sources`), so that a period does not beat with loops.
pub const DEFAULT_PERIOD: u64 = 9973;
/// Ring of 2^5 pages per event and thread (128 KiB with 4 KiB pages): two
/// per thread stay inside the default unprivileged perf mlock allowance
/// (`perf_event_mlock_kb` = 516 KiB per CPU) for a few threads.
const RING_PAGES_LOG2: u32 = 5;

/// What `MEMTAMER_TIER_PROFILER` asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Choice {
    /// PEBS where it opens, else the fault sampler (the default).
    Auto,
    /// PEBS; if it does not open, say why, then the fault sampler.
    Pebs,
    /// The fault sampler only.
    Faults,
}

impl Choice {
    /// Parses the variable's value (None: unset, which is `auto`).
    pub fn parse(v: Option<&str>) -> Result<Choice, TierError> {
        match v.map(str::trim) {
            None | Some("") | Some("auto") => Ok(Choice::Auto),
            Some("pebs") => Ok(Choice::Pebs),
            Some("faults") => Ok(Choice::Faults),
            Some(other) => Err(TierError::BadEnv {
                key: ENV,
                value: other.into(),
                why: "expected auto, pebs or faults".into(),
            }),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Choice::Auto => "auto",
            Choice::Pebs => "pebs",
            Choice::Faults => "faults",
        }
    }
}

/// The source that profiles, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selection {
    /// What was asked for.
    pub asked: Choice,
    /// Whether PEBS runs (else the fault sampler).
    pub pebs: bool,
    /// Why, in words (the open error where PEBS did not open).
    pub reason: String,
    /// The errno of a failed open, for the report line.
    pub errno: Option<i32>,
}

impl Selection {
    /// The tokens at the end of the `mt_tier_finish` line: `profiler pebs`
    /// or `profiler faults`, then `(<asked>)` or `(<asked>: no PEBS, errno
    /// N)`: one word each, so that a parser of `key value` pairs skips it.
    pub fn token(&self) -> String {
        format!("profiler {}", self.describe())
    }

    /// The source and how it was chosen, as the status file shows it:
    /// `faults (auto:no-pebs,errno-2)`, `pebs (auto)`, `faults (faults)`.
    pub fn describe(&self) -> String {
        let src = if self.pebs { "pebs" } else { "faults" };
        match (self.pebs, self.errno, self.asked) {
            (false, Some(e), a) => format!("{src} ({}:no-pebs,errno-{e})", a.name()),
            (false, None, a) if a != Choice::Faults => format!("{src} ({}:no-pebs)", a.name()),
            (_, _, a) => format!("{src} ({})", a.name()),
        }
    }

    /// The line to print once on stderr: where the variable was set (the
    /// user asked, so they hear what they got) and always where `pebs`
    /// was asked and did not open. None: the default, silent (the finish
    /// line still says it).
    pub fn message(&self, env_set: bool) -> Option<String> {
        if self.asked == Choice::Pebs && !self.pebs {
            return Some(format!(
                "memtamer-tier: {ENV}=pebs but PEBS sampling did not open: {}; profiling with the fault sampler instead",
                self.reason
            ));
        }
        env_set.then(|| {
            format!(
                "memtamer-tier: {ENV}={}: access profiling by {} ({})",
                self.asked.name(),
                if self.pebs {
                    "PEBS"
                } else {
                    "protection faults"
                },
                self.reason
            )
        })
    }
}

/// Picks the source from what was asked and, unless `faults` was asked,
/// the outcome of opening PEBS (`try_open`, called at most once: an errno
/// and a message on failure). Pure apart from `try_open`.
pub fn select(
    asked: Choice,
    try_open: impl FnOnce() -> Result<String, (Option<i32>, String)>,
) -> Selection {
    if asked == Choice::Faults {
        return Selection {
            asked,
            pebs: false,
            reason: format!("{ENV}=faults"),
            errno: None,
        };
    }
    match try_open() {
        Ok(what) => Selection {
            asked,
            pebs: true,
            reason: what,
            errno: None,
        },
        Err((errno, why)) => Selection {
            asked,
            pebs: false,
            reason: why,
            errno,
        },
    }
}

/// The samples drained since the phase began.
#[derive(Default)]
struct Rings {
    samplers: Vec<(AccessKind, Sampler)>,
    samples: Vec<AccessSample>,
    lost: u64,
}

impl Rings {
    fn drain(&mut self, pid: u32) {
        let Rings {
            samplers, samples, ..
        } = self;
        for (kind, s) in samplers.iter_mut() {
            s.drain(|r| samples.extend(access_sample(r, pid, *kind)));
        }
        self.lost = samplers.iter().map(|(_, s)| s.lost).sum();
    }
}

/// The access a perf record stands for: `pid`'s samples with a data
/// address (a PEBS record without one, or another process's, is none).
pub fn access_sample(r: &Record, pid: u32, kind: AccessKind) -> Option<AccessSample> {
    match r {
        Record::Sample(x) if x.pid == pid && x.addr != 0 => Some(AccessSample {
            addr: x.addr,
            kind,
            period: x.period,
        }),
        _ => None,
    }
}

/// An address-sampling access source: the events, and while profiling
/// their samplers on the process's threads and the drain thread.
pub struct AddressSource {
    events: Vec<(AccessKind, EventSpec)>,
    rings: Arc<Mutex<Rings>>,
    drainer: Option<(Arc<AtomicBool>, JoinHandle<()>)>,
    /// Samples the kernel dropped (full rings) in this profile.
    pub lost: u64,
}

impl AddressSource {
    /// PEBS loads and stores every `period` events (`l3miss`: the load
    /// event is MEM_LOAD_RETIRED.L3_MISS instead of ALL_LOADS).
    pub fn pebs(period: u64, l3miss: bool) -> Self {
        let loads = if l3miss {
            EventSpec::pebs_l3_miss_loads(period)
        } else {
            EventSpec::pebs_loads(period)
        };
        AddressSource::with_events(vec![
            (AccessKind::Load, loads),
            (AccessKind::Store, EventSpec::pebs_stores(period)),
        ])
    }

    /// A source over any events whose samples carry data addresses: the
    /// software page-fault event runs the same path on a host without a
    /// PMU (tests).
    pub fn with_events(events: Vec<(AccessKind, EventSpec)>) -> Self {
        AddressSource {
            events,
            rings: Arc::new(Mutex::new(Rings::default())),
            drainer: None,
            lost: 0,
        }
    }

    /// The events, for messages.
    pub fn describe(&self) -> String {
        let names: Vec<&str> = self.events.iter().map(|(_, e)| e.name).collect();
        format!("{} every {} events", names.join(" + "), self.period())
    }

    fn period(&self) -> u64 {
        self.events.first().map_or(0, |(_, e)| e.period)
    }

    /// Whether a profile is being sampled.
    pub fn running(&self) -> bool {
        self.drainer.is_some()
    }

    /// Opens every event on every thread of this process but the
    /// runtime's own and starts draining every `tick` (at least 1 ms);
    /// returns the number of threads sampled (a thread that ended while
    /// being opened is skipped). On an error nothing stays open: the errno
    /// and a message naming the event and the thread.
    pub fn start(&mut self, tick: Duration) -> Result<usize, (Option<i32>, String)> {
        self.stop();
        let tids = program_threads();
        let mut samplers = Vec::new();
        for &tid in &tids {
            let mut mine = Vec::new();
            for (kind, spec) in &self.events {
                match Sampler::open(*spec, Target::Task(tid), RING_PAGES_LOG2) {
                    Ok(s) => mine.push((*kind, s)),
                    Err(e) => {
                        let errno = match &e {
                            memtamer_linux::perf::PerfError::Open { source, .. } => source,
                            memtamer_linux::perf::PerfError::Map(source) => source,
                        }
                        .raw_os_error();
                        // the thread ended since it was listed: nothing to sample
                        if errno == Some(libc::ESRCH) {
                            mine.clear();
                            break;
                        }
                        return Err((errno, e.to_string()));
                    }
                }
            }
            samplers.append(&mut mine);
        }
        let threads = samplers.len() / self.events.len().max(1);
        *lock(&self.rings) = Rings {
            samplers,
            ..Rings::default()
        };
        let stop = Arc::new(AtomicBool::new(false));
        let (rings, s2, pid) = (self.rings.clone(), stop.clone(), std::process::id());
        let tick = tick.max(Duration::from_millis(1));
        let handle = std::thread::Builder::new()
            .name("mt-tier-pebs".into())
            .spawn(move || {
                while !s2.load(Ordering::SeqCst) {
                    lock(&rings).drain(pid);
                    std::thread::sleep(tick);
                }
            })
            .map_err(|e| (e.raw_os_error(), format!("the drain thread: {e}")))?;
        self.drainer = Some((stop, handle));
        Ok(threads)
    }

    /// Everything sampled since the last call (or the start), attributed
    /// to `objs` (the registry now: freed objects' samples are other).
    pub fn take_phase(&mut self, objs: &[crate::ObjectView]) -> PhaseAccesses {
        let mut r = lock(&self.rings);
        r.drain(std::process::id());
        self.lost = r.lost;
        let samples = std::mem::take(&mut r.samples);
        crate::access::attribute(&RangeIndex::of_views(objs), &samples)
    }

    /// Stops the drain thread and closes every sampler.
    pub fn stop(&mut self) {
        if let Some((stop, h)) = self.drainer.take() {
            stop.store(true, Ordering::SeqCst);
            let _ = h.join();
        }
        *lock(&self.rings) = Rings::default();
    }
}

/// The driver's access source: an [`AddressSource`] if one was chosen
/// (else the fault sampler profiles) and how it was chosen. Its three
/// hooks are all the driver knows of it.
#[derive(Default)]
pub struct AccessProfiler {
    source: Option<AddressSource>,
    selection: Option<Selection>,
}

impl AccessProfiler {
    /// Profiles with `source` (None: the fault sampler); `selection` says
    /// how it was chosen ([`from_env`]).
    pub fn new(source: Option<AddressSource>, selection: Selection) -> Self {
        AccessProfiler {
            source,
            selection: Some(selection),
        }
    }

    /// How the source was chosen (None: never asked; the fault sampler).
    pub fn selection(&self) -> Option<&Selection> {
        self.selection.as_ref()
    }

    /// Profiling begins: true if the address source runs (the fault
    /// sampler must not). A source that opened when chosen but not now
    /// (a thread over its limits, say) is reported, and this profile
    /// falls back to the fault sampler.
    pub fn start(&mut self, tick: Duration) -> bool {
        let Some(s) = self.source.as_mut() else {
            return false;
        };
        match s.start(tick) {
            Ok(_) => true,
            Err((_, e)) => {
                say(&format!("memtamer-tier: PEBS sampling did not open ({e}); this profile uses the fault sampler"));
                false
            }
        }
    }

    /// Profiling ends.
    pub fn stop(&mut self) {
        if let Some(s) = self.source.as_mut() {
            s.stop();
        }
    }

    /// A profiled phase closes: if the address source runs, `ph`'s samples
    /// and objects become the phase's attributed samples (`ids`: the
    /// driver's profiled objects' registry ids, in its order; objects as
    /// `rt` holds them now).
    pub fn fill_phase(&mut self, rt: &crate::TierRuntime, ids: &[u64], ph: &mut PhaseProfile) {
        let Some(s) = self.source.as_mut().filter(|s| s.running()) else {
            return;
        };
        let acc = s.take_phase(&rt.objects());
        ph.samples = acc.samples() as f64;
        ph.objs = acc.obj_phases(ids);
    }
}

impl Drop for AddressSource {
    fn drop(&mut self) {
        self.stop();
    }
}

fn lock(m: &Mutex<Rings>) -> std::sync::MutexGuard<'_, Rings> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One line on stderr in one `write` (ranks of one job share the stream:
/// `eprintln!` may split a line into several writes that interleave).
fn say(line: &str) {
    use std::io::Write;
    let _ = std::io::stderr().write_all(format!("{line}\n").as_bytes());
}

/// This process's threads but the runtime's own (`mt-tier-*`), from
/// `/proc/self/task` (just this thread if it cannot be read).
fn program_threads() -> Vec<u32> {
    let mut out: Vec<u32> = std::fs::read_dir("/proc/self/task")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
                .filter(|tid| {
                    let comm = std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"))
                        .unwrap_or_default();
                    is_program_thread(&comm)
                })
                .collect()
        })
        .unwrap_or_default();
    if out.is_empty() {
        // SAFETY: gettid has no preconditions.
        out.push(unsafe { libc::syscall(libc::SYS_gettid) } as u32);
    }
    out.sort_unstable();
    out
}

/// Whether a thread named `comm` is the program's (the runtime names its
/// helpers `mt-tier-*`).
pub fn is_program_thread(comm: &str) -> bool {
    !comm.trim_end().starts_with("mt-tier-")
}

/// The source `MEMTAMER_TIER_PROFILER` (and the PEBS period and load
/// event variables) pick, probed once by opening and closing PEBS: the
/// source to hand the driver (None: the fault sampler) and the selection.
/// A bad value is refused by name.
pub fn from_env() -> Result<(Option<AddressSource>, Selection), TierError> {
    let raw = std::env::var(ENV).ok();
    let asked = Choice::parse(raw.as_deref())?;
    let period = match std::env::var(PERIOD_ENV) {
        Err(_) => DEFAULT_PERIOD,
        Ok(v) => v
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or(TierError::BadEnv {
                key: PERIOD_ENV,
                value: v,
                why: "expected a positive whole number of events per sample".into(),
            })?,
    };
    let l3miss =
        match std::env::var(LOADS_ENV).as_deref().map(str::trim) {
            Err(_) | Ok("") | Ok("l3miss") => true,
            Ok("all") => false,
            Ok(v) => return Err(TierError::BadEnv {
                key: LOADS_ENV,
                value: v.into(),
                why:
                    "expected all (MEM_INST_RETIRED.ALL_LOADS) or l3miss (MEM_LOAD_RETIRED.L3_MISS)"
                        .into(),
            }),
        };
    let mut src = AddressSource::pebs(period, l3miss);
    let sel = select(asked, || {
        let n = src.start(Duration::from_millis(1))?;
        src.stop();
        Ok(format!("{} on {n} thread(s)", src.describe()))
    });
    let set = raw.as_deref().is_some_and(|v| !v.trim().is_empty());
    if let Some(m) = sel.message(set) {
        say(&m);
    }
    Ok((sel.pebs.then_some(src), sel))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variable_parses_and_a_bad_value_is_refused_by_name() {
        assert_eq!(Choice::parse(None).unwrap(), Choice::Auto);
        assert_eq!(Choice::parse(Some(" auto ")).unwrap(), Choice::Auto);
        assert_eq!(Choice::parse(Some("")).unwrap(), Choice::Auto);
        assert_eq!(Choice::parse(Some("pebs")).unwrap(), Choice::Pebs);
        assert_eq!(Choice::parse(Some("faults")).unwrap(), Choice::Faults);
        let e = Choice::parse(Some("ibs")).unwrap_err().to_string();
        assert!(e.contains(ENV) && e.contains("ibs"), "{e}");
    }

    fn no_pmu() -> Result<String, (Option<i32>, String)> {
        Err((
            Some(2),
            "perf_event_open(...): No such file or directory (os error 2)".into(),
        ))
    }

    #[test]
    fn auto_falls_back_quietly_and_says_so_on_the_finish_line() {
        let s = select(Choice::Auto, no_pmu);
        assert!(!s.pebs);
        assert_eq!(s.token(), "profiler faults (auto:no-pebs,errno-2)");
        assert_eq!(s.message(false), None, "the default is silent on stderr");
        assert!(s.message(true).unwrap().contains("protection faults"));
    }

    #[test]
    fn pebs_asked_and_missing_names_the_variable_and_the_errno() {
        let s = select(Choice::Pebs, no_pmu);
        assert!(!s.pebs);
        let m = s.message(true).unwrap();
        assert!(m.contains("MEMTAMER_TIER_PROFILER=pebs"), "{m}");
        assert!(m.contains("os error 2"), "{m}");
        assert!(m.contains("fault sampler"), "{m}");
        assert_eq!(s.token(), "profiler faults (pebs:no-pebs,errno-2)");
    }

    #[test]
    fn pebs_where_it_opens_and_faults_without_trying() {
        let s = select(Choice::Auto, || Ok("loads + stores".into()));
        assert!(s.pebs);
        assert_eq!(s.token(), "profiler pebs (auto)");
        let mut tried = false;
        let s = select(Choice::Faults, || {
            tried = true;
            Ok(String::new())
        });
        assert!(!s.pebs && !tried);
        assert_eq!(s.token(), "profiler faults (faults)");
    }

    /// A recorded PEBS stream (the perf ring layout `Sampler::open`
    /// asks for, ALL_LOADS and ALL_STORES at period 9973) decodes and
    /// attributes: samples of another process, without an address, of a
    /// freed object, and lost and exec records are told apart.
    #[test]
    fn a_recorded_pebs_ring_is_attributed_to_objects() {
        use memtamer_linux::perf::{encode_sample, parse_ring, Sample};
        let (pid, other_pid) = (4242, 99);
        let s = |addr: u64, pid: u32| Sample {
            ip: 0x40_1a2b,
            pid,
            tid: pid,
            time: 1,
            addr,
            cpu: 0,
            period: 9973,
        };
        // objects: A [0x7f00_0000_0000, +64 KiB), B [.. + 1 MiB, +4 KiB)
        let (a, b) = (0x7f00_0000_0000u64, 0x7f00_0010_0000u64);
        let objs = [
            crate::ObjectView {
                addr: a as usize,
                id: 1,
                name: "A".into(),
                size: 65536,
                tier: crate::Tier::Slow,
                migrating: false,
                moves: 0,
                bytes_moved: 0,
                exposed_ns: 0,
            },
            crate::ObjectView {
                addr: b as usize,
                id: 2,
                name: "B".into(),
                size: 4096,
                tier: crate::Tier::Dram,
                migrating: false,
                moves: 1,
                bytes_moved: 4096,
                exposed_ns: 0,
            },
        ];
        let loads: Vec<u64> = vec![a, a + 8, a + 65535, b + 4095, b + 4096, 0x7ffd_0000_1000, 0];
        let mut ring_l = Vec::new();
        for &x in &loads {
            ring_l.extend(encode_sample(&s(x, pid)));
        }
        ring_l.extend(encode_sample(&s(a + 16, other_pid)));
        let mut ring_s = Vec::new();
        for x in [a + 4096, b] {
            ring_s.extend(encode_sample(&s(x, pid)));
        }
        let mut got = Vec::new();
        let mut lost = 0;
        for (ring, kind) in [(&ring_l, AccessKind::Load), (&ring_s, AccessKind::Store)] {
            let (tail, _) = parse_ring(ring, 0, ring.len() as u64, &mut lost, |r| {
                got.extend(access_sample(r, pid, kind))
            });
            assert_eq!(tail, ring.len() as u64);
        }
        assert_eq!(
            got.len(),
            6 + 2,
            "the other pid's and the address-less sample are dropped"
        );
        let acc = crate::access::attribute(&RangeIndex::of_views(&objs), &got);
        let (ca, cb) = (acc.objects[&1], acc.objects[&2]);
        assert_eq!((ca.load_samples, ca.store_samples), (3, 1));
        assert_eq!((cb.load_samples, cb.store_samples), (1, 1));
        assert_eq!(ca.accesses(), 4.0 * 9973.0);
        assert_eq!(acc.other.load_samples, 2, "one past B and the stack");
        assert_eq!(acc.samples(), 8);
        // the driver's view: index 0 is B, index 1 is A
        let ph = acc.obj_phases(&[2, 1]);
        assert_eq!((ph[&0].samples, ph[&1].samples), (2.0, 4.0));
    }

    #[test]
    fn the_runtimes_threads_are_not_sampled() {
        assert!(!is_program_thread("mt-tier-migrate\n"));
        assert!(!is_program_thread("mt-tier-sample"));
        assert!(is_program_thread("cg.x\n"));
        assert!(is_program_thread("mt-tiermain"));
    }
}
