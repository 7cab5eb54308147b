//! Memory-controller counters through the perf uncore iMC PMUs: DRAM CAS
//! counts and the PM read/write pending queues' occupancy and inserts, from
//! which Dicio §4.1's WPQ queuing delay follows.
//!
//! Discovery reads `/sys/bus/event_source/devices/uncore_imc_*` (type,
//! cpumask, format, events); event encodings are placed into `config` by the
//! PMU's own format description. An event's encoding comes from the kernel's
//! own alias (`events/cas_count_read`, with its `.scale` and `.unit`) where
//! the kernel has one, else from a table keyed by CPU model; on any other
//! model the counter is reported unknown, never guessed. The arithmetic from
//! two readings to a `ChannelObs` is pure.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use memtamer_core::{ChannelObs, CpuSet};

/// The counters read per channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImcEvent {
    /// UNC_M_CAS_COUNT.RD: DRAM 64 B reads.
    CasRead,
    /// UNC_M_CAS_COUNT.WR: DRAM 64 B writes.
    CasWrite,
    /// UNC_M_PMM_RPQ_OCCUPANCY.ALL: PM read-pending-queue occupancy per cycle.
    PmmRpqOccupancy,
    /// UNC_M_PMM_RPQ_INSERTS.
    PmmRpqInserts,
    /// UNC_M_PMM_WPQ_OCCUPANCY.ALL.
    PmmWpqOccupancy,
    /// UNC_M_PMM_WPQ_INSERTS.
    PmmWpqInserts,
}

impl ImcEvent {
    /// All counters, in `Reading::counts` order.
    pub const ALL: [ImcEvent; 6] = [
        ImcEvent::CasRead,
        ImcEvent::CasWrite,
        ImcEvent::PmmRpqOccupancy,
        ImcEvent::PmmRpqInserts,
        ImcEvent::PmmWpqOccupancy,
        ImcEvent::PmmWpqInserts,
    ];

    /// The kernel's alias file name under `events/`, for the events the
    /// kernel names (the PM queue events have no alias).
    pub fn alias(self) -> Option<&'static str> {
        match self {
            ImcEvent::CasRead => Some("cas_count_read"),
            ImcEvent::CasWrite => Some("cas_count_write"),
            _ => None,
        }
    }

    /// (event, umask) on `model`, for the models whose uncore event lists
    /// we checked; None elsewhere (unknown, not guessed).
    ///
    /// Family 6 model 85 is Skylake-SP (steppings 0-4) and Cascade Lake
    /// (5-7); only Cascade Lake has the PMM queue events (Intel Xeon
    /// Scalable uncore performance monitoring reference; perfmon CLX uncore
    /// event list).
    pub fn encoding(self, model: CpuModel) -> Option<(u64, u64)> {
        if model.vendor != "GenuineIntel" || model.family != 6 || model.model != 85 {
            return None;
        }
        let cascade_lake = model.stepping >= 5;
        match self {
            ImcEvent::CasRead => Some((0x04, 0x03)),
            ImcEvent::CasWrite => Some((0x04, 0x0c)),
            ImcEvent::PmmRpqOccupancy if cascade_lake => Some((0xe0, 0x01)),
            ImcEvent::PmmRpqInserts if cascade_lake => Some((0xe3, 0x00)),
            ImcEvent::PmmWpqOccupancy if cascade_lake => Some((0xe4, 0x01)),
            ImcEvent::PmmWpqInserts if cascade_lake => Some((0xe7, 0x00)),
            _ => None,
        }
    }
}

/// The CPU model as `/proc/cpuinfo` states it: the key of the event table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuModel {
    /// `vendor_id` (`GenuineIntel`, `AuthenticAMD`).
    pub vendor: String,
    /// `cpu family`.
    pub family: u32,
    /// `model`.
    pub model: u32,
    /// `stepping`.
    pub stepping: u32,
}

impl CpuModel {
    /// Parses the first processor's block of `/proc/cpuinfo` text; fields
    /// that are missing stay 0 / empty (which matches no table entry).
    pub fn parse(cpuinfo: &str) -> CpuModel {
        let mut m = CpuModel::default();
        for line in cpuinfo.lines() {
            if line.trim().is_empty() {
                break;
            }
            let Some((k, v)) = line.split_once(':') else {
                continue;
            };
            let v = v.trim();
            match k.trim() {
                "vendor_id" => m.vendor = v.to_string(),
                "cpu family" => m.family = v.parse().unwrap_or(0),
                "model" => m.model = v.parse().unwrap_or(0),
                "stepping" => m.stepping = v.parse().unwrap_or(0),
                _ => {}
            }
        }
        m
    }

    /// This host's model (default, matching nothing, if unreadable).
    pub fn this_host() -> CpuModel {
        std::fs::read_to_string("/proc/cpuinfo")
            .map(|t| CpuModel::parse(&t))
            .unwrap_or_default()
    }
}

/// One kernel event alias (`events/cas_count_read` = `event=0x04,umask=0x03`
/// plus `.scale` and `.unit`).
#[derive(Clone, Debug, PartialEq)]
pub struct EventAlias {
    /// (term, value) pairs.
    pub terms: Vec<(String, u64)>,
    /// The `.scale` file: what one count is worth in `unit`.
    pub scale: Option<f64>,
    /// The `.unit` file (`MiB`).
    pub unit: Option<String>,
}

impl EventAlias {
    /// Bytes one count stands for, from `.scale` and `.unit` (64 for a CAS
    /// of a 64 B line: scale 6.103515625e-5 MiB).
    pub fn bytes_per_count(&self) -> Option<f64> {
        let unit = match self.unit.as_deref()? {
            "B" | "Bytes" => 1.0,
            "KiB" => 1024.0,
            "MiB" => 1024.0 * 1024.0,
            "GiB" => 1024.0 * 1024.0 * 1024.0,
            _ => return None,
        };
        Some(self.scale? * unit)
    }
}

/// Parses an alias file: `event=0x04,umask=0x03` (decimal or 0x hex; a bare
/// term means 1, as perf reads it). None if any term is malformed.
pub fn parse_alias(text: &str) -> Option<Vec<(String, u64)>> {
    text.trim()
        .split(',')
        .filter(|t| !t.is_empty())
        .map(|t| {
            let (k, v) = t.split_once('=').unwrap_or((t, "1"));
            let v = v.trim();
            let n = match v.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16).ok()?,
                None => v.parse().ok()?,
            };
            Some((k.trim().to_string(), n))
        })
        .collect()
}

/// Where the bits of one format term go in `config`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormatField {
    /// Term name (`event`, `umask`).
    pub name: String,
    /// Bit ranges, low to high (a term may be split).
    pub ranges: Vec<(u32, u32)>,
}

/// An iMC PMU found in sysfs.
#[derive(Clone, Debug, PartialEq)]
pub struct ImcPmu {
    /// PMU name (`uncore_imc_0`): one memory channel.
    pub name: String,
    /// perf type number.
    pub pmu_type: u32,
    /// One CPU per socket to open the counters on.
    pub cpus: Vec<u32>,
    /// Format terms of `config`.
    pub format: Vec<FormatField>,
    /// The kernel's event aliases by name (`cas_count_read`).
    pub aliases: BTreeMap<String, EventAlias>,
    /// The host's CPU model, for events without an alias.
    pub model: CpuModel,
}

/// Why discovery or encoding failed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum UncoreError {
    /// A sysfs file is missing or malformed.
    #[error("{path}: {what}")]
    Sysfs {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        what: String,
    },
    /// Neither the kernel nor our table knows the event on this CPU model.
    #[error(
        "{pmu}: {event:?} is unknown on this CPU ({model:?}): no kernel alias, no table entry"
    )]
    Unknown {
        /// PMU.
        pmu: String,
        /// The event.
        event: ImcEvent,
        /// The host's CPU model.
        model: CpuModel,
    },
    /// The PMU's format lacks a term an event needs.
    #[error("{pmu}: no format term {term:?} in config")]
    NoTerm {
        /// PMU.
        pmu: String,
        /// Term.
        term: String,
    },
}

/// Parses a format file: `config:0-7` or `config:0-7,32-35` or `config:21`.
/// Returns None for terms that are not in `config` (config1, config2).
pub fn parse_format(text: &str) -> Option<Vec<(u32, u32)>> {
    let spec = text.trim().strip_prefix("config:")?;
    spec.split(',')
        .map(|r| match r.split_once('-') {
            Some((a, b)) => Some((a.trim().parse().ok()?, b.trim().parse().ok()?)),
            None => r.trim().parse().ok().map(|a| (a, a)),
        })
        .collect::<Option<Vec<_>>>()
        .filter(|v| v.iter().all(|(a, b)| a <= b && *b < 64))
}

impl ImcPmu {
    /// The `config` value for `terms` (name, value) by this PMU's format.
    pub fn encode(&self, terms: &[(&str, u64)]) -> Result<u64, UncoreError> {
        let mut config = 0u64;
        for (name, value) in terms {
            let field = self
                .format
                .iter()
                .find(|f| f.name == *name)
                .ok_or_else(|| UncoreError::NoTerm {
                    pmu: self.name.clone(),
                    term: name.to_string(),
                })?;
            let mut v = *value;
            for (lo, hi) in &field.ranges {
                let width = hi - lo + 1;
                let mask = if width >= 64 {
                    u64::MAX
                } else {
                    (1u64 << width) - 1
                };
                config |= (v & mask) << lo;
                v = if width >= 64 { 0 } else { v >> width };
            }
        }
        Ok(config)
    }

    /// The `config` of one iMC event: the kernel's alias if it has one,
    /// else the model table, else [`UncoreError::Unknown`].
    pub fn config(&self, event: ImcEvent) -> Result<u64, UncoreError> {
        if let Some(alias) = event.alias().and_then(|a| self.aliases.get(a)) {
            let terms: Vec<(&str, u64)> =
                alias.terms.iter().map(|(k, v)| (k.as_str(), *v)).collect();
            return self.encode(&terms);
        }
        match event.encoding(self.model.clone()) {
            Some((e, u)) => self.encode(&[("event", e), ("umask", u)]),
            None => Err(UncoreError::Unknown {
                pmu: self.name.clone(),
                event,
                model: self.model.clone(),
            }),
        }
    }
}

/// Finds the iMC PMUs under `root` (normally
/// `/sys/bus/event_source/devices`), sorted by channel number. An empty
/// list means no uncore iMC PMU (a VM, another vendor, an old kernel).
pub fn discover(root: &Path) -> Result<Vec<ImcPmu>, UncoreError> {
    discover_on(root, &CpuModel::this_host())
}

/// [`discover`] for a given CPU model (tests use made-up ones).
pub fn discover_on(root: &Path, model: &CpuModel) -> Result<Vec<ImcPmu>, UncoreError> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Ok(Vec::new());
    };
    let mut pmus = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        let Some(index) = name.strip_prefix("uncore_imc_") else {
            continue;
        };
        let Ok(index) = index.parse::<u32>() else {
            continue; // uncore_imc_free_running_0 etc.
        };
        let dir = entry.path();
        let read = |file: &str| {
            std::fs::read_to_string(dir.join(file)).map_err(|e| UncoreError::Sysfs {
                path: dir.join(file),
                what: e.to_string(),
            })
        };
        let pmu_type = read("type")?
            .trim()
            .parse::<u32>()
            .map_err(|_| UncoreError::Sysfs {
                path: dir.join("type"),
                what: "not a number".into(),
            })?;
        let cpus: Vec<u32> = CpuSet::parse_list(read("cpumask")?.trim())
            .map_err(|e| UncoreError::Sysfs {
                path: dir.join("cpumask"),
                what: e.to_string(),
            })?
            .iter()
            .map(|c| c as u32)
            .collect();
        let mut format = Vec::new();
        if let Ok(files) = std::fs::read_dir(dir.join("format")) {
            for f in files.flatten() {
                let text = std::fs::read_to_string(f.path()).unwrap_or_default();
                if let Some(ranges) = parse_format(&text) {
                    format.push(FormatField {
                        name: f.file_name().to_string_lossy().to_string(),
                        ranges,
                    });
                }
            }
        }
        format.sort_by(|a, b| a.name.cmp(&b.name));
        let aliases = read_aliases(&dir.join("events"));
        pmus.push((
            index,
            ImcPmu {
                name,
                pmu_type,
                cpus,
                format,
                aliases,
                model: model.clone(),
            },
        ));
    }
    pmus.sort_by_key(|(i, _)| *i);
    Ok(pmus.into_iter().map(|(_, p)| p).collect())
}

/// Reads a PMU's `events/` directory: every alias file with a parsable
/// body, with its `.scale` and `.unit` companions. Unreadable or malformed
/// aliases are left out (the event then goes to the model table).
fn read_aliases(dir: &Path) -> BTreeMap<String, EventAlias> {
    let mut out = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).ok();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if name.contains('.') {
            continue;
        }
        let Some(terms) = read(&name).as_deref().and_then(parse_alias) else {
            continue;
        };
        let scale = read(&format!("{name}.scale")).and_then(|t| t.trim().parse().ok());
        let unit = read(&format!("{name}.unit")).map(|t| t.trim().to_string());
        out.insert(name, EventAlias { terms, scale, unit });
    }
    out
}

/// One channel's cumulative counts at one moment, in `ImcEvent::ALL` order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reading {
    /// Socket.
    pub socket: u32,
    /// Channel (PMU index).
    pub channel: u32,
    /// Counter values; None where the counter could not be opened.
    pub counts: [Option<u64>; 6],
}

/// The window between two readings of the same channel, as the policy
/// interface wants it (unknown stays unknown; counter wrap is handled).
pub fn channel_obs(before: &Reading, after: &Reading) -> ChannelObs {
    let d = |i: usize| match (before.counts[i], after.counts[i]) {
        (Some(a), Some(b)) => Some(b.wrapping_sub(a)),
        _ => None,
    };
    ChannelObs {
        socket: after.socket,
        channel: after.channel,
        cas_reads: d(0),
        cas_writes: d(1),
        pmm_rpq_occupancy: d(2),
        pmm_rpq_inserts: d(3),
        pmm_wpq_occupancy: d(4),
        pmm_wpq_inserts: d(5),
    }
}

/// Open iMC counters: one counting perf event per (PMU, socket CPU, event).
pub struct ImcCounters {
    /// (socket, channel, fds in ImcEvent::ALL order; -1 where not opened)
    channels: Vec<(u32, u32, [i32; 6])>,
    /// Counters that could not be opened, and why.
    pub missing: Vec<String>,
}

impl ImcCounters {
    /// Opens every counter of every PMU on each socket's CPU. Counters that
    /// fail are listed in `missing` (unknown, never 0).
    pub fn open(pmus: &[ImcPmu]) -> ImcCounters {
        let mut channels = Vec::new();
        let mut missing = Vec::new();
        for (channel, pmu) in pmus.iter().enumerate() {
            for (socket, &cpu) in pmu.cpus.iter().enumerate() {
                let mut fds = [-1i32; 6];
                for (i, event) in ImcEvent::ALL.iter().enumerate() {
                    match pmu.config(*event) {
                        Ok(config) => match crate::perf::open_counter(pmu.pmu_type, config, cpu) {
                            Ok(fd) => fds[i] = fd,
                            Err(e) => {
                                missing.push(format!("{} {event:?} on CPU {cpu}: {e}", pmu.name))
                            }
                        },
                        Err(e) => missing.push(e.to_string()),
                    }
                }
                channels.push((socket as u32, channel as u32, fds));
            }
        }
        ImcCounters { channels, missing }
    }

    /// Reads every open counter.
    pub fn read(&self) -> Vec<Reading> {
        self.channels
            .iter()
            .map(|(socket, channel, fds)| Reading {
                socket: *socket,
                channel: *channel,
                counts: std::array::from_fn(|i| crate::perf::read_counter(fds[i])),
            })
            .collect()
    }
}

impl Drop for ImcCounters {
    fn drop(&mut self) {
        for (_, _, fds) in &self.channels {
            for fd in fds.iter().filter(|fd| **fd >= 0) {
                // SAFETY: closing descriptors this value opened.
                unsafe { libc::close(*fd) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_sysfs(root: &Path) {
        for (i, ty) in [(0, 13), (1, 14), (10, 15)] {
            let d = root.join(format!("uncore_imc_{i}"));
            std::fs::create_dir_all(d.join("format")).expect("mkdir");
            std::fs::write(d.join("type"), format!("{ty}\n")).expect("type");
            std::fs::write(d.join("cpumask"), "0,28\n").expect("cpumask");
            std::fs::write(d.join("format/event"), "config:0-7\n").expect("event");
            std::fs::write(d.join("format/umask"), "config:8-15\n").expect("umask");
            std::fs::write(d.join("format/thresh"), "config:24-31\n").expect("thresh");
            std::fs::write(d.join("format/filter"), "config1:0-9\n").expect("filter");
        }
        std::fs::create_dir_all(root.join("uncore_imc_free_running_0")).expect("mkdir");
        std::fs::create_dir_all(root.join("cpu")).expect("mkdir");
    }

    #[test]
    fn discovery_reads_types_cpus_and_formats_and_orders_channels() {
        let root = std::env::temp_dir().join(format!("mt-sysfs-{}", std::process::id()));
        fake_sysfs(&root);
        let pmus = discover_on(&root, &clx()).expect("discovers");
        assert_eq!(
            pmus.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
            ["uncore_imc_0", "uncore_imc_1", "uncore_imc_10"]
        );
        assert_eq!(pmus[0].pmu_type, 13);
        assert_eq!(pmus[0].cpus, vec![0, 28]);
        assert_eq!(
            pmus[0].format.len(),
            3,
            "config1 terms are not config terms"
        );
        // CAS_COUNT.WR = event 0x04, umask 0x0c
        assert_eq!(pmus[0].config(ImcEvent::CasWrite), Ok(0x0c04));
        assert_eq!(pmus[0].config(ImcEvent::PmmWpqOccupancy), Ok(0x01e4));
        assert!(matches!(
            pmus[0].encode(&[("cmask", 1)]),
            Err(UncoreError::NoTerm { .. })
        ));
        std::fs::write(root.join("uncore_imc_1/type"), "x").expect("corrupt");
        assert!(matches!(
            discover_on(&root, &clx()),
            Err(UncoreError::Sysfs { .. })
        ));
        let _ = std::fs::remove_dir_all(&root);
        assert_eq!(discover(Path::new("/nonexistent")), Ok(vec![]));
    }

    fn clx() -> CpuModel {
        CpuModel::parse(
            "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 85\nstepping\t: 7\n\nprocessor\t: 1\nmodel\t: 1\n",
        )
    }

    #[test]
    fn cpuinfo_gives_the_model_of_the_first_processor() {
        let m = clx();
        assert_eq!(
            (m.vendor.as_str(), m.family, m.model, m.stepping),
            ("GenuineIntel", 6, 85, 7)
        );
    }

    #[test]
    fn kernel_aliases_win_and_unknown_models_say_unknown() {
        // a Sapphire Rapids-like host: the kernel's aliases, a model not in
        // our table
        let root = std::env::temp_dir().join(format!("mt-alias-{}", std::process::id()));
        let d = root.join("uncore_imc_0");
        std::fs::create_dir_all(d.join("format")).expect("mkdir");
        std::fs::create_dir_all(d.join("events")).expect("mkdir");
        std::fs::write(d.join("type"), "20\n").expect("type");
        std::fs::write(d.join("cpumask"), "0,192\n").expect("cpumask");
        std::fs::write(d.join("format/event"), "config:0-7\n").expect("event");
        std::fs::write(d.join("format/umask"), "config:8-15\n").expect("umask");
        std::fs::write(d.join("events/cas_count_read"), "event=0x05,umask=0xcf\n").expect("a");
        std::fs::write(d.join("events/cas_count_read.scale"), "6.103515625e-5\n").expect("s");
        std::fs::write(d.join("events/cas_count_read.unit"), "MiB\n").expect("u");
        std::fs::write(d.join("events/clockticks"), "event=0x01,umask=0x01\n").expect("c");
        let spr = CpuModel {
            vendor: "GenuineIntel".into(),
            family: 6,
            model: 143,
            stepping: 8,
        };
        let pmus = discover_on(&root, &spr).expect("discovers");
        assert_eq!(pmus[0].config(ImcEvent::CasRead), Ok(0xcf05));
        let alias = &pmus[0].aliases["cas_count_read"];
        assert_eq!(alias.bytes_per_count(), Some(64.0));
        // no alias for writes on this fake, and model 143 is not in the table
        assert!(matches!(
            pmus[0].config(ImcEvent::CasWrite),
            Err(UncoreError::Unknown { .. })
        ));
        assert!(matches!(
            pmus[0].config(ImcEvent::PmmWpqInserts),
            Err(UncoreError::Unknown { .. })
        ));
        // Skylake-SP (stepping 4) has CAS but no PMM queue events
        let skx = CpuModel {
            stepping: 4,
            ..clx()
        };
        assert_eq!(ImcEvent::CasWrite.encoding(skx.clone()), Some((0x04, 0x0c)));
        assert_eq!(ImcEvent::PmmWpqInserts.encoding(skx), None);
        assert_eq!(
            parse_alias("event=0x04,umask=3,edge"),
            Some(vec![
                ("event".into(), 4),
                ("umask".into(), 3),
                ("edge".into(), 1)
            ])
        );
        assert_eq!(parse_alias("event=zz"), None);
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn formats_with_split_ranges_place_every_bit() {
        let pmu = ImcPmu {
            name: "x".into(),
            pmu_type: 1,
            cpus: vec![0],
            format: vec![FormatField {
                name: "event".into(),
                ranges: parse_format("config:0-7,32-35").expect("parses"),
            }],
            aliases: BTreeMap::new(),
            model: CpuModel::default(),
        };
        assert_eq!(pmu.encode(&[("event", 0x1ff)]), Ok(0x1_0000_00ff));
        assert_eq!(parse_format("config:21"), Some(vec![(21, 21)]));
        assert_eq!(parse_format("config1:0-9"), None);
        assert_eq!(parse_format("config:9-3"), None);
        assert_eq!(parse_format("config:0-64"), None);
    }

    #[test]
    fn recorded_readings_become_channel_observations() {
        // two readings of a channel 1 ms apart on a busy Cascade Lake (recorded shape)
        let before = Reading {
            socket: 0,
            channel: 2,
            counts: [
                Some(1_000),
                Some(500),
                Some(40_000),
                Some(1_000),
                Some(u64::MAX - 99),
                None,
            ],
        };
        let after = Reading {
            socket: 0,
            channel: 2,
            counts: [
                Some(157_250),
                Some(78_625),
                Some(2_440_000),
                Some(61_000),
                Some(1_000_000),
                None,
            ],
        };
        let obs = channel_obs(&before, &after);
        assert_eq!(obs.cas_reads, Some(156_250)); // 10 GB/s of 64 B reads over 1 ms
        assert_eq!(obs.cas_writes, Some(78_125));
        assert_eq!(obs.pmm_rpq_occupancy, Some(2_400_000));
        assert_eq!(obs.pmm_wpq_occupancy, Some(1_000_100), "wraps");
        assert_eq!(obs.pmm_wpq_inserts, None, "unknown stays unknown");
        assert_eq!(obs.wpq_delay_cycles(), None);
        let known = ChannelObs {
            pmm_wpq_inserts: Some(10_000),
            ..obs
        };
        assert_eq!(known.wpq_delay_cycles(), Some(100.01));
    }
}
