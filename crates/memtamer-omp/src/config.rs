//! Environment configuration of the tool, parsed once at start-up. A bad
//! value is reported by name and the tool stays out of the way.

use memtamer_tier::registry::parse_bytes;

/// What the tool does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Not registered at all: the program runs exactly as without the tool.
    Off,
    /// Placement off: track tasks, dependences and the ready queue, and
    /// profile one representative per type; no decisions, no moves (what
    /// the <= 3% overhead goal is measured on).
    Profile,
    /// As `Profile`, plus a Tahoe decision at every task start and the
    /// migration batches carried out.
    Place,
}

/// How the OMPT callbacks feed the tracker (`MEMTAMER_TAHOE_EVENTS`,
/// [`crate::events`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventPath {
    /// `buffered` on a process allowed [`BUFFERED_MIN_CPUS`] CPUs or more,
    /// else `locked` (the default).
    Auto,
    /// Per-thread buffers drained in sequence order: no shared lock on a
    /// callback that needs no answer; about 130 instructions more per event.
    Buffered,
    /// Every event applied at once under the tracker's one lock: cheapest
    /// while few threads contend for it.
    Locked,
}

/// CPUs from which `auto` buffers events: with this many threads running
/// callbacks at once, one lock taken per callback serializes them (the
/// 16-CPU measurement in docs/tahoe.md, "Tool overhead at 16 threads");
/// below it the lock measured cheaper per event than the buffers.
pub const BUFFERED_MIN_CPUS: usize = 8;

impl EventPath {
    /// Whether events are buffered on a process allowed `cpus` CPUs.
    pub fn buffered(self, cpus: usize) -> bool {
        match self {
            EventPath::Auto => cpus >= BUFFERED_MIN_CPUS,
            EventPath::Buffered => true,
            EventPath::Locked => false,
        }
    }
}

/// Where a representative's per-page hotness comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hotness {
    /// Protection-fault sampling of its dependence ranges while it runs
    /// (`memtamer_tier::pagesample`): a PMU-free stand-in for the thesis's
    /// PEBS samples (§4.3.3).
    Sample,
    /// Every page of every object equally hot (`TypeProfile::uniform`):
    /// no faults at all.
    Uniform,
}

/// Which per-task counters the tool reads (`MEMTAMER_TAHOE_COUNTERS`,
/// [`crate::counters`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CounterSource {
    /// Hardware events (instructions, cycles, LLC references and misses):
    /// the thesis's model inputs (§4.3.4). Where the host has no PMU the
    /// tool says so once and runs without counters.
    Hw,
    /// Software events in the same group machinery (task-clock, cpu-clock,
    /// page-faults, minor-faults standing in for the four): exercises the
    /// pipeline on a host without a PMU. Not model inputs.
    Sw,
    /// No counters: the PMU-free path only.
    Off,
}

impl CounterSource {
    /// The setting's value.
    pub fn name(self) -> &'static str {
        match self {
            CounterSource::Hw => "hw",
            CounterSource::Sw => "sw",
            CounterSource::Off => "off",
        }
    }
}

/// Tool settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// `MEMTAMER_TAHOE`: off | profile | place (default profile).
    pub mode: Mode,
    /// `MEMTAMER_TAHOE_DRAM`: DRAM budget in bytes (default 128M, the
    /// thesis's evaluation default).
    pub dram_bytes: usize,
    /// `MEMTAMER_TAHOE_DRAM_NODE`: NUMA node that is DRAM (default 0).
    pub dram_node: u32,
    /// `MEMTAMER_TAHOE_BETA_NS`: fallback model's ns saved per page access
    /// moved to DRAM (default 1200: one 4 KiB page at 10 GB/s DRAM vs a
    /// 1/4-bandwidth slow tier, 400 ns vs 1600 ns).
    pub beta_ns: f64,
    /// `MEMTAMER_TAHOE_CORUN`: co-running tasks planned together (default
    /// 4: head + 3 look-ahead).
    pub corun: usize,
    /// `MEMTAMER_TAHOE_QUIET=1`: no summary line at the end.
    pub quiet: bool,
    /// `MEMTAMER_TAHOE_RECORD=FILE`: write per-type mean task times at the
    /// end (`memtamer_tahoe::record` format), for fitting the model.
    pub record: Option<String>,
    /// `MEMTAMER_TAHOE_HOTNESS`: sample | uniform (default sample).
    /// Sampling runs with `place`, or with `profile` when
    /// `MEMTAMER_TAHOE_PROFILES` asks for the profiles: with placement off
    /// nothing else reads them.
    pub hotness: Hotness,
    /// `MEMTAMER_TAHOE_SAMPLE_PAGES`: most pages armed per representative
    /// (default 256), the bound on its extra faults per interval.
    pub sample_pages: usize,
    /// `MEMTAMER_TAHOE_SAMPLE_US`: sampling interval, microseconds
    /// (default 1000, at least 100): touched pages are re-armed this often.
    pub sample_us: u64,
    /// `MEMTAMER_TAHOE_PROFILES=FILE`: write the stored profiles (hot
    /// ranges per type) at the end, for checking the sampler.
    pub profiles: Option<String>,
    /// `MEMTAMER_TAHOE_CHECK`: on | off (default on). With `place`, the
    /// migration cost-benefit check (`memtamer_tahoe::benefit`, the
    /// simulator's Tahoe's): a page moves only when its predicted saving
    /// exceeds its movement cost. `off` is the thesis's §4.3.3 planner,
    /// which moves whatever fits, kept for comparison.
    pub check: bool,
    /// `MEMTAMER_TAHOE_EVENTS`: auto | buffered | locked (default auto):
    /// how the callbacks feed the tracker ([`EventPath`]).
    pub events: EventPath,
    /// `MEMTAMER_TAHOE_COPY_NS`: the check's copy cost per page before the
    /// run has timed its own batches (ns, > 0). Default: measured at tool
    /// start by moving pages between the two nodes the tool uses
    /// ([`crate::calib`]).
    pub copy_ns: Option<f64>,
    /// `MEMTAMER_TAHOE_MODEL`: refined | slow-rep | thesis (default
    /// refined), where a type's all-slow time comes from
    /// ([`memtamer_tahoe::learning::ModelLearning`]): the simulator's
    /// `sim tahoe --model`, so the tool learns as the simulated Tahoe does.
    pub model: memtamer_tahoe::learning::ModelLearning,
    /// `MEMTAMER_TAHOE_COUNTERS`: hw | sw | off (default hw), the per-task
    /// counters read at each task switch ([`crate::counters`]).
    pub counters: CounterSource,
    /// `MEMTAMER_TAHOE_COUNTER_MODEL=FILE`: a counter model
    /// (`memtamer_tahoe::counters::format_model`, written by `tahoe_fit
    /// --model-out`) that predicts the all-DRAM time from a
    /// representative's counters; without it, or for a type without
    /// counters, the PMU-free fallback (beta) does.
    pub counter_model: Option<String>,
}

/// A setting that could not be parsed.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("{key}={value}: {why}")]
pub struct ConfigError {
    /// Variable name.
    pub key: &'static str,
    /// Its value.
    pub value: String,
    /// What was expected.
    pub why: &'static str,
}

/// An output file (`MEMTAMER_TAHOE_RECORD`, `MEMTAMER_TAHOE_PROFILES`)
/// that cannot be opened for writing.
#[derive(Debug, thiserror::Error)]
#[error("{key}={path}: cannot write it: {source}")]
pub struct OutputError {
    /// Variable name.
    pub key: &'static str,
    /// Its value.
    pub path: String,
    /// Why it cannot be opened.
    pub source: std::io::Error,
}

impl Config {
    /// Opens each output file for writing now (created empty if missing,
    /// never truncated here), so that an unwritable path is reported
    /// before the program runs: it was found only at the end, when the
    /// whole run's recording was lost.
    pub fn check_outputs(&self) -> Result<(), OutputError> {
        for (key, path) in [
            ("MEMTAMER_TAHOE_RECORD", &self.record),
            ("MEMTAMER_TAHOE_PROFILES", &self.profiles),
        ] {
            if let Some(path) = path {
                std::fs::OpenOptions::new()
                    .append(true)
                    .create(true)
                    .open(path)
                    .map_err(|source| OutputError {
                        key,
                        path: path.clone(),
                        source,
                    })?;
            }
        }
        Ok(())
    }

    /// Parses from a lookup function (the environment in the tool, a map
    /// in tests).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let bad =
            |key: &'static str, value: String, why: &'static str| ConfigError { key, value, why };
        let mode = match get("MEMTAMER_TAHOE").as_deref() {
            None | Some("profile") => Mode::Profile,
            Some("off") => Mode::Off,
            Some("place") => Mode::Place,
            Some(v) => {
                return Err(bad(
                    "MEMTAMER_TAHOE",
                    v.into(),
                    "expected off|profile|place",
                ))
            }
        };
        let dram_bytes = match get("MEMTAMER_TAHOE_DRAM") {
            None => 128 << 20,
            Some(v) => match parse_bytes(&v) {
                Some(b) if b > 0 => b,
                _ => {
                    return Err(bad(
                        "MEMTAMER_TAHOE_DRAM",
                        v,
                        "expected bytes > 0, e.g. 128M",
                    ))
                }
            },
        };
        let dram_node = match get("MEMTAMER_TAHOE_DRAM_NODE") {
            None => 0,
            // Linux has at most 1024 nodes (NODES_SHIFT <= 10) and demotions
            // go to node + 1: u32::MAX wrapped that to node 0, "demoting"
            // into DRAM.
            Some(v) => match v.trim().parse::<u32>() {
                Ok(n) if n < MAX_NODE => n,
                _ => {
                    return Err(bad(
                        "MEMTAMER_TAHOE_DRAM_NODE",
                        v,
                        "expected a node number in 0..=1022 (demotions go to node + 1)",
                    ))
                }
            },
        };
        let beta_ns = match get("MEMTAMER_TAHOE_BETA_NS") {
            None => 1200.0,
            Some(v) => match v.parse::<f64>() {
                Ok(b) if b.is_finite() && b >= 0.0 => b,
                _ => return Err(bad("MEMTAMER_TAHOE_BETA_NS", v, "expected ns >= 0")),
            },
        };
        let corun = match get("MEMTAMER_TAHOE_CORUN") {
            None => 4,
            Some(v) => match v.parse::<usize>() {
                Ok(k) if k >= 1 => k,
                _ => return Err(bad("MEMTAMER_TAHOE_CORUN", v, "expected an integer >= 1")),
            },
        };
        let hotness = match get("MEMTAMER_TAHOE_HOTNESS").as_deref() {
            None | Some("sample") => Hotness::Sample,
            Some("uniform") => Hotness::Uniform,
            Some(v) => {
                return Err(bad(
                    "MEMTAMER_TAHOE_HOTNESS",
                    v.into(),
                    "expected sample|uniform",
                ))
            }
        };
        let sample_pages = match get("MEMTAMER_TAHOE_SAMPLE_PAGES") {
            None => 256,
            Some(v) => match v.parse::<usize>() {
                Ok(k) if (1..=memtamer_tier::pagesample::TABLE / 2).contains(&k) => k,
                _ => {
                    return Err(bad(
                        "MEMTAMER_TAHOE_SAMPLE_PAGES",
                        v,
                        "expected an integer in 1..=4096",
                    ))
                }
            },
        };
        let sample_us = match get("MEMTAMER_TAHOE_SAMPLE_US") {
            None => 1000,
            Some(v) => match v.parse::<u64>() {
                Ok(k) if k >= 100 => k,
                _ => {
                    return Err(bad(
                        "MEMTAMER_TAHOE_SAMPLE_US",
                        v,
                        "expected microseconds >= 100",
                    ))
                }
            },
        };
        let check = match get("MEMTAMER_TAHOE_CHECK").as_deref() {
            None | Some("on") => true,
            Some("off") => false,
            Some(v) => return Err(bad("MEMTAMER_TAHOE_CHECK", v.into(), "expected on|off")),
        };
        let events = match get("MEMTAMER_TAHOE_EVENTS").as_deref() {
            None | Some("auto") => EventPath::Auto,
            Some("buffered") => EventPath::Buffered,
            Some("locked") => EventPath::Locked,
            Some(v) => {
                return Err(bad(
                    "MEMTAMER_TAHOE_EVENTS",
                    v.into(),
                    "expected auto|buffered|locked",
                ))
            }
        };
        let model = match get("MEMTAMER_TAHOE_MODEL") {
            None => Default::default(),
            Some(v) => match memtamer_tahoe::learning::ModelLearning::parse(&v) {
                Some(m) => m,
                None => {
                    return Err(bad(
                        "MEMTAMER_TAHOE_MODEL",
                        v,
                        "expected refined|slow-rep|thesis",
                    ))
                }
            },
        };
        let copy_ns = match get("MEMTAMER_TAHOE_COPY_NS") {
            None => None,
            Some(v) => match v.parse::<f64>() {
                Ok(c) if c.is_finite() && c > 0.0 => Some(c),
                _ => {
                    return Err(bad(
                        "MEMTAMER_TAHOE_COPY_NS",
                        v,
                        "expected ns per page > 0, e.g. 2000",
                    ))
                }
            },
        };
        let counters = match get("MEMTAMER_TAHOE_COUNTERS").as_deref() {
            None | Some("hw") => CounterSource::Hw,
            Some("sw") => CounterSource::Sw,
            Some("off") => CounterSource::Off,
            Some(v) => {
                return Err(bad(
                    "MEMTAMER_TAHOE_COUNTERS",
                    v.into(),
                    "expected hw|sw|off",
                ))
            }
        };
        // Anything but `1` meant "not quiet" without a word: `yes` or `on`
        // printed the summary the user asked to suppress.
        let quiet = match get("MEMTAMER_TAHOE_QUIET").as_deref().map(str::trim) {
            None | Some("") | Some("0") | Some("off") => false,
            Some("1") | Some("on") => true,
            Some(_) => {
                return Err(bad(
                    "MEMTAMER_TAHOE_QUIET",
                    get("MEMTAMER_TAHOE_QUIET").unwrap_or_default(),
                    "expected 1/on (no closing summary) or 0/off",
                ))
            }
        };
        Ok(Config {
            counters,
            counter_model: get("MEMTAMER_TAHOE_COUNTER_MODEL").filter(|s| !s.is_empty()),
            check,
            events,
            model,
            copy_ns,
            mode,
            dram_bytes,
            dram_node,
            beta_ns,
            corun,
            quiet,
            record: get("MEMTAMER_TAHOE_RECORD").filter(|s| !s.is_empty()),
            hotness,
            sample_pages,
            sample_us,
            profiles: get("MEMTAMER_TAHOE_PROFILES").filter(|s| !s.is_empty()),
        })
    }
}

/// One past the largest node `MEMTAMER_TAHOE_DRAM_NODE` accepts: Linux's
/// `MAX_NUMNODES` is at most 1024 and the slow tier is the next node.
pub const MAX_NODE: u32 = 1023;

/// Worker threads the OpenMP runtime will use, for the look-ahead slack
/// (`memtamer_tahoe::benefit::list_starts`): the first entry of
/// `OMP_NUM_THREADS` (the outermost level's team size, OpenMP 5.0 §6.2)
/// when it is a positive integer, else `cpus` (libomp's default, one
/// thread per available CPU). A bad `OMP_NUM_THREADS` is libomp's to
/// report; the tool then assumes its default too.
pub fn workers(omp_num_threads: Option<&str>, cpus: usize) -> usize {
    omp_num_threads
        .and_then(|v| v.split(',').next())
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n >= 1)
        .unwrap_or(cpus.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn cfg(kv: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let m: HashMap<String, String> = kv
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(|k| m.get(k).cloned())
    }

    #[test]
    fn defaults_and_values() {
        let c = cfg(&[]).unwrap();
        assert_eq!(c.mode, Mode::Profile);
        assert_eq!(c.dram_bytes, 128 << 20);
        let c = cfg(&[
            ("MEMTAMER_TAHOE", "place"),
            ("MEMTAMER_TAHOE_DRAM", "64M"),
            ("MEMTAMER_TAHOE_DRAM_NODE", "1"),
            ("MEMTAMER_TAHOE_CORUN", "2"),
            ("MEMTAMER_TAHOE_QUIET", "1"),
        ])
        .unwrap();
        assert_eq!(
            (c.mode, c.dram_bytes, c.dram_node, c.corun, c.quiet),
            (Mode::Place, 64 << 20, 1, 2, true)
        );
        assert_eq!(cfg(&[("MEMTAMER_TAHOE", "off")]).unwrap().mode, Mode::Off);
        let c = cfg(&[]).unwrap();
        assert_eq!(
            (c.hotness, c.sample_pages, c.sample_us, c.profiles),
            (Hotness::Sample, 256, 1000, None)
        );
        let c = cfg(&[
            ("MEMTAMER_TAHOE_HOTNESS", "uniform"),
            ("MEMTAMER_TAHOE_SAMPLE_PAGES", "64"),
            ("MEMTAMER_TAHOE_SAMPLE_US", "500"),
            ("MEMTAMER_TAHOE_PROFILES", "/tmp/p"),
        ])
        .unwrap();
        assert_eq!(
            (
                c.hotness,
                c.sample_pages,
                c.sample_us,
                c.profiles.as_deref()
            ),
            (Hotness::Uniform, 64, 500, Some("/tmp/p"))
        );
    }

    #[test]
    fn bad_values_name_the_key() {
        let e = cfg(&[("MEMTAMER_TAHOE", "yes")]).unwrap_err();
        assert_eq!(e.key, "MEMTAMER_TAHOE");
        assert!(e.to_string().contains("off|profile|place"));
        assert_eq!(
            cfg(&[("MEMTAMER_TAHOE_DRAM", "lots")]).unwrap_err().key,
            "MEMTAMER_TAHOE_DRAM"
        );
        assert_eq!(
            cfg(&[("MEMTAMER_TAHOE_DRAM", "0")]).unwrap_err().key,
            "MEMTAMER_TAHOE_DRAM"
        );
        assert!(cfg(&[("MEMTAMER_TAHOE_BETA_NS", "-1")]).is_err());
        assert!(cfg(&[("MEMTAMER_TAHOE_CORUN", "0")]).is_err());
        assert!(cfg(&[("MEMTAMER_TAHOE_DRAM_NODE", "x")]).is_err());
        assert_eq!(
            cfg(&[("MEMTAMER_TAHOE_HOTNESS", "pebs")]).unwrap_err().key,
            "MEMTAMER_TAHOE_HOTNESS"
        );
        assert!(cfg(&[("MEMTAMER_TAHOE_SAMPLE_PAGES", "0")]).is_err());
        assert!(cfg(&[("MEMTAMER_TAHOE_SAMPLE_PAGES", "5000")]).is_err());
        assert!(cfg(&[("MEMTAMER_TAHOE_SAMPLE_US", "10")]).is_err());
        for (k, v) in [
            ("MEMTAMER_TAHOE_CHECK", "yes"),
            ("MEMTAMER_TAHOE_COPY_NS", "0"),
            ("MEMTAMER_TAHOE_COPY_NS", "-3"),
            ("MEMTAMER_TAHOE_COPY_NS", "inf"),
            ("MEMTAMER_TAHOE_COPY_NS", "fast"),
            ("MEMTAMER_TAHOE_MODEL", "ann"),
            ("MEMTAMER_TAHOE_COUNTERS", "pmu"),
        ] {
            let e = cfg(&[(k, v)]).unwrap_err();
            assert_eq!(e.key, k);
            assert!(
                e.to_string().starts_with(&format!("{k}={v}: expected")),
                "{e}"
            );
        }
    }

    /// Hostile-input sweep (docs/bad-input.md, 2026-11-27): a node whose
    /// successor wraps (demotions into node 0, DRAM) or that no Linux can
    /// have, and a `MEMTAMER_TAHOE_QUIET` that is neither on nor off, were
    /// taken without a word.
    #[test]
    fn absurd_nodes_and_unknown_quiet_spellings_are_refused_by_name() {
        for v in ["4294967295", "1023", "-1", ""] {
            let e = cfg(&[("MEMTAMER_TAHOE_DRAM_NODE", v)]).unwrap_err();
            assert_eq!(e.key, "MEMTAMER_TAHOE_DRAM_NODE", "{v}");
            assert!(e.to_string().contains("0..=1022"), "{e}");
        }
        let c = cfg(&[("MEMTAMER_TAHOE_DRAM_NODE", "1022")]).unwrap();
        assert_eq!(c.dram_node + 1, 1023);
        for v in ["yes", "true", "2", "quiet"] {
            let e = cfg(&[("MEMTAMER_TAHOE_QUIET", v)]).unwrap_err();
            assert_eq!(e.key, "MEMTAMER_TAHOE_QUIET", "{v}");
        }
        for (v, q) in [
            ("1", true),
            ("on", true),
            ("0", false),
            ("off", false),
            ("", false),
        ] {
            assert_eq!(cfg(&[("MEMTAMER_TAHOE_QUIET", v)]).unwrap().quiet, q, "{v}");
        }
    }

    /// Hostile-input sweep: an unwritable recording path lost the whole
    /// run's recording at exit; it is now refused before the program runs.
    #[test]
    fn unwritable_output_files_are_refused_up_front() {
        let dir = std::env::temp_dir().join(format!("mt-omp-out-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let missing = dir.join("no/such/dir/rec.csv");
        let d = dir.to_string_lossy().into_owned();
        for (k, v) in [
            (
                "MEMTAMER_TAHOE_RECORD",
                missing.to_string_lossy().into_owned(),
            ),
            ("MEMTAMER_TAHOE_PROFILES", d.clone()),
        ] {
            let c = cfg(&[(k, &v)]).unwrap();
            let e = c.check_outputs().unwrap_err();
            assert_eq!(e.key, k);
            assert!(
                e.to_string().starts_with(&format!("{k}={v}: cannot write")),
                "{e}"
            );
        }
        // a writable path is created, and an existing file left as it was
        let ok = dir.join("rec.csv");
        std::fs::write(&ok, "kept\n").unwrap();
        let c = cfg(&[("MEMTAMER_TAHOE_RECORD", &ok.to_string_lossy())]).unwrap();
        c.check_outputs().unwrap();
        assert_eq!(std::fs::read_to_string(&ok).unwrap(), "kept\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn events_are_buffered_from_eight_cpus_by_default() {
        let c = cfg(&[]).unwrap();
        assert_eq!(c.events, EventPath::Auto);
        assert!(!c.events.buffered(BUFFERED_MIN_CPUS - 1));
        assert!(c.events.buffered(BUFFERED_MIN_CPUS));
        let b = cfg(&[("MEMTAMER_TAHOE_EVENTS", "buffered")]).unwrap();
        assert!(b.events.buffered(1));
        let l = cfg(&[("MEMTAMER_TAHOE_EVENTS", "locked")]).unwrap();
        assert!(!l.events.buffered(64));
        let e = cfg(&[("MEMTAMER_TAHOE_EVENTS", "fast")]).unwrap_err();
        assert_eq!(e.key, "MEMTAMER_TAHOE_EVENTS");
    }

    #[test]
    fn the_check_is_on_by_default_with_a_measured_prior() {
        let c = cfg(&[]).unwrap();
        assert_eq!((c.check, c.copy_ns), (true, None));
        let c = cfg(&[
            ("MEMTAMER_TAHOE_CHECK", "off"),
            ("MEMTAMER_TAHOE_COPY_NS", "1500.5"),
        ])
        .unwrap();
        assert_eq!((c.check, c.copy_ns), (false, Some(1500.5)));
        assert!(cfg(&[("MEMTAMER_TAHOE_CHECK", "on")]).unwrap().check);
    }

    #[test]
    fn the_model_learns_as_the_simulator_by_default() {
        use memtamer_tahoe::learning::ModelLearning;
        assert_eq!(cfg(&[]).unwrap().model, ModelLearning::Refined);
        assert_eq!(
            cfg(&[("MEMTAMER_TAHOE_MODEL", "thesis")]).unwrap().model,
            ModelLearning::Thesis
        );
        assert_eq!(
            cfg(&[("MEMTAMER_TAHOE_MODEL", "slow-rep")]).unwrap().model,
            ModelLearning::SlowRep
        );
    }

    #[test]
    fn counters_default_to_hardware_with_no_model() {
        let c = cfg(&[]).unwrap();
        assert_eq!((c.counters, c.counter_model), (CounterSource::Hw, None));
        for v in ["hw", "sw", "off"] {
            let c = cfg(&[("MEMTAMER_TAHOE_COUNTERS", v)]).unwrap();
            assert_eq!(c.counters.name(), v);
        }
        let c = cfg(&[("MEMTAMER_TAHOE_COUNTER_MODEL", "/tmp/m")]).unwrap();
        assert_eq!(c.counter_model.as_deref(), Some("/tmp/m"));
    }

    #[test]
    fn workers_come_from_omp_num_threads_or_the_cpus() {
        assert_eq!(workers(Some("3"), 8), 3);
        assert_eq!(workers(Some("4,2"), 8), 4);
        assert_eq!(workers(Some("0"), 8), 8);
        assert_eq!(workers(Some("many"), 8), 8);
        assert_eq!(workers(None, 2), 2);
        assert_eq!(workers(None, 0), 1);
    }
}
