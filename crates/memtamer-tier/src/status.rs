//! Per-rank status files of the tier runtime, and their reader
//! (`memtamer tier status`, issue 20 item 6).
//!
//! With `MEMTAMER_TIER_STATUS_DIR` set, every process running the tier
//! runtime keeps one JSON document there (`rank<R>.json` under MPI, else
//! `pid<P>.json`) describing its objects (name, size, tier, share of the
//! sampled accesses, moves, bytes moved, exposed time), its DRAM budget
//! use and its moves per direction (promotions to DRAM, evictions to the
//! slow tier: moves, bytes, copy time, copy bandwidth). It is rewritten on each decision and after moves complete (never per
//! access), always as a whole: written to a dot-file beside it, then renamed
//! over it, so a reader sees the old or the new document, never half of one.
//!
//! The reader is pure apart from listing and reading the directory: each
//! file is parsed and checked on its own, and a file that cannot be read,
//! is not JSON, is not a status document, has impossible values or belongs
//! to a process that is gone without finishing (stale) yields a
//! [`StatusError`] that names it; the other files are still shown.

use memtamer_core::text::pad_right;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The `format` tag of a status document.
pub const FORMAT: &str = "memtamer-tier-status";
/// The schema version this code writes and reads. Fields added later are
/// optional (`to_dram`, `to_slow`: absent in a document of a memtamer
/// before them), so old and new documents stay version 1: a reader ignores
/// fields it does not know and shows `-` for one that is absent.
pub const VERSION: u32 = 1;

/// Whether the process was still running when it last wrote the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunState {
    /// Written during the run (a decision, completed moves).
    Running,
    /// Written by `mt_tier_finish` (`MPI_Finalize`): the final totals.
    Finished,
}

/// Where an object is, as the status file spells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TierName {
    /// DRAM (the fast tier).
    Dram,
    /// The slow tier (NVM, CPU-less NUMA node, or its file emulation).
    Slow,
}

impl From<crate::Tier> for TierName {
    fn from(t: crate::Tier) -> Self {
        match t {
            crate::Tier::Dram => TierName::Dram,
            crate::Tier::Slow => TierName::Slow,
        }
    }
}

/// One object of one rank.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ObjectStatus {
    /// Name given at allocation (`mt_tier_malloc`, or `malloc#N:size`).
    pub name: String,
    /// Bytes asked for.
    pub size: u64,
    /// Current tier.
    pub tier: TierName,
    /// A move of it is in flight.
    pub migrating: bool,
    /// Its share (0..=1) of the sampled accesses in the last profiled
    /// iteration; absent before the first decision or with Unimem off.
    pub access_share: Option<f64>,
    /// Completed moves.
    pub moves: u64,
    /// Bytes those moves copied.
    pub bytes_moved: u64,
    /// Milliseconds the application waited for its moves or was blocked
    /// writing it during a copy.
    pub exposed_ms: f64,
}

/// The completed moves of one direction, part of the rank's totals.
/// Why apart: Eq. 3.3 (thesis §3.4.1) prices a promotion and an eviction
/// with their own copy bandwidth, and the runtime's driver plans with the
/// bandwidth measured on its own moves per direction
/// (`MigrationStats::measured_platform`); these are the numbers it used.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DirectionStatus {
    /// Completed moves in this direction.
    pub moves: u64,
    /// Bytes they copied.
    pub bytes: u64,
    /// Milliseconds they spent copying (write-protect to remap).
    pub copy_ms: f64,
    /// `bytes / copy time` in bytes per second (Eq. 3.3's `mem_copy_bw`,
    /// [`crate::DirectionStats::bandwidth`]); absent without a sample.
    pub copy_bw: Option<f64>,
}

impl From<&crate::DirectionStats> for DirectionStatus {
    fn from(d: &crate::DirectionStats) -> Self {
        DirectionStatus {
            moves: d.moves,
            bytes: d.bytes,
            copy_ms: d.copy_ns as f64 / 1e6,
            copy_bw: d.bandwidth(),
        }
    }
}

/// One rank's status document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankStatus {
    /// Always [`FORMAT`].
    pub format: String,
    /// Always [`VERSION`].
    pub version: u32,
    /// Host the process runs on (liveness is only checked on this host).
    pub host: String,
    /// Process id.
    pub pid: u32,
    /// MPI rank in `MPI_COMM_WORLD`, when run under the interposer.
    pub rank: Option<u32>,
    /// Size of `MPI_COMM_WORLD`, likewise.
    pub ranks: Option<u32>,
    /// Running or finished.
    pub state: RunState,
    /// When this document was written (Unix milliseconds).
    pub updated_unix_ms: u64,
    /// Whether Unimem profiles and moves (`MEMTAMER_UNIMEM` not 0).
    pub unimem: bool,
    /// The access source that profiles and why (`faults
    /// (auto:no-pebs,errno-2)`, `pebs (auto)`; [`crate::pebs`]); absent
    /// with Unimem off and in a document written before it existed.
    #[serde(default)]
    pub profiler: Option<String>,
    /// DRAM this process may hold (bytes).
    pub dram_budget: u64,
    /// DRAM held or reserved by moves in flight (bytes).
    pub dram_used: u64,
    /// Main-loop iterations seen.
    pub iterations: u64,
    /// Placement decisions made.
    pub decisions: u64,
    /// The last plan's search (`local` / `global`).
    pub plan: Option<String>,
    /// Completed moves (all objects, freed ones included).
    pub moves: u64,
    /// Moves that failed and were rolled back.
    pub failed: u64,
    /// Bytes copied by completed moves.
    pub bytes_moved: u64,
    /// Milliseconds spent copying.
    pub copy_ms: f64,
    /// Milliseconds of that the application was exposed to.
    pub exposed_ms: f64,
    /// The completed moves to DRAM (promotions), part of the totals above;
    /// absent in a document written before per-direction stats.
    #[serde(default)]
    pub to_dram: Option<DirectionStatus>,
    /// The completed moves to the slow tier (evictions), likewise.
    #[serde(default)]
    pub to_slow: Option<DirectionStatus>,
    /// The last recorded failure of a move, if any.
    pub last_move_error: Option<String>,
    /// Births by allocation-time placement, per reason
    /// ([`crate::alloc_place`]); absent with it off and in a document
    /// written before it existed.
    #[serde(default)]
    pub alloc: Option<crate::alloc_place::Counts>,
    /// How the decisions charge copies and what the regression guard did
    /// ([`DecisionsStatus`]); absent with Unimem off and in a document
    /// written before it existed.
    #[serde(default)]
    pub decisions_detail: Option<DecisionsStatus>,
    /// The live objects.
    pub objects: Vec<ObjectStatus>,
}

/// What shaped a rank's decisions beyond its plan. Why: on a node whose
/// ranks fill its CPUs, copies are charged in full ([`crate::cpus`]), and
/// the measured regression guard may revert an adopted plan
/// ([`crate::unimem::regress`]); both change what the rank moves, and the
/// counters of moves alone do not say why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DecisionsStatus {
    /// `no` (copies overlapped with the computation), `oversubscribed`
    /// (ranks on the node >= its CPUs: every copy charged in full) or
    /// `forced` (`MEMTAMER_COPIES_EXPOSED=1`; [`crate::cpus::HelperCpu::why`]).
    pub copies_exposed: String,
    /// Ranks competing for the rank's CPUs: the node's ranks whose
    /// affinity masks meet its mask when `cpus_from` is `node`, else every
    /// rank on the node (0: unknown).
    pub node_ranks: u32,
    /// CPUs those ranks may run on: their masks' union (`node`), else the
    /// rank's own count (0: unknown).
    pub cpus: u32,
    /// `node` or `own` ([`crate::cpus::HelperCpu::cpus_from`]); empty in a
    /// document written before the node's masks were gathered.
    #[serde(default)]
    pub cpus_from: String,
    /// Plans the regression guard reverted.
    pub guard_reverts: u64,
    /// Decisions not adopted because the guard had reverted the same plan.
    pub guard_refused: u64,
}

impl RankStatus {
    /// The file name this document is published under.
    pub fn file_name(&self) -> String {
        file_name(self.rank, self.pid)
    }
}

/// `rank<R>.json` under MPI, else `pid<P>.json`.
pub fn file_name(rank: Option<u32>, pid: u32) -> String {
    match rank {
        Some(r) => format!("rank{r}.json"),
        None => format!("pid{pid}.json"),
    }
}

/// Why a status file (or directory) cannot be shown.
#[derive(Debug, thiserror::Error)]
pub enum StatusError {
    /// The directory or a file could not be read.
    #[error("{}: {source}", path.display())]
    Read {
        /// The path.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// Not JSON, or not a status document (truncated, wrong fields).
    #[error("{}: not a tier status file: {source}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's error (with line and column).
        source: serde_json::Error,
    },
    /// Parsed, but a value is impossible.
    #[error("{}: invalid tier status: {why}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The field and what is wrong with it.
        why: String,
    },
    /// Its process is gone and never wrote its final status.
    #[error("{}: stale: process {pid} on {host} is gone and did not finish (killed or crashed); the file shows its last state", path.display())]
    Stale {
        /// The file.
        path: PathBuf,
        /// The process it names.
        pid: u32,
        /// Its host.
        host: String,
    },
    /// The directory holds no status files.
    #[error("{}: no tier status files (*.json); run the program with MEMTAMER_TIER_STATUS_DIR={} set", dir.display(), dir.display())]
    Empty {
        /// The directory.
        dir: PathBuf,
    },
    /// More than one file is unusable; each is listed.
    #[error("{} status files cannot be shown:\n  {}", .0.len(), .0.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n  "))]
    Several(Vec<StatusError>),
}

/// Parses and checks one document; `path` only names it in errors.
pub fn parse(text: &str, path: &Path) -> Result<RankStatus, StatusError> {
    let s: RankStatus = serde_json::from_str(text).map_err(|source| StatusError::Parse {
        path: path.to_path_buf(),
        source,
    })?;
    let bad = |why: String| StatusError::Invalid {
        path: path.to_path_buf(),
        why,
    };
    if s.format != FORMAT {
        return Err(bad(format!(
            "format is {:?}, expected {FORMAT:?}",
            s.format
        )));
    }
    if s.version != VERSION {
        return Err(bad(format!(
            "version {} (this memtamer reads version {VERSION})",
            s.version
        )));
    }
    if s.dram_budget == 0 {
        return Err(bad("dram_budget is 0".into()));
    }
    if s.dram_used > s.dram_budget {
        return Err(bad(format!(
            "dram_used {} exceeds dram_budget {}",
            s.dram_used, s.dram_budget
        )));
    }
    if let (Some(r), Some(n)) = (s.rank, s.ranks) {
        if r >= n {
            return Err(bad(format!("rank {r} is not below ranks {n}")));
        }
    }
    for (what, v) in [("copy_ms", s.copy_ms), ("exposed_ms", s.exposed_ms)] {
        if !(v.is_finite() && v >= 0.0) {
            return Err(bad(format!("{what} is {v}")));
        }
    }
    for (what, d) in [("to_dram", &s.to_dram), ("to_slow", &s.to_slow)] {
        if let Some(d) = d {
            check_direction(what, d, &s).map_err(bad)?;
        }
    }
    if let (Some(up), Some(down)) = (&s.to_dram, &s.to_slow) {
        if (up.moves + down.moves, up.bytes + down.bytes) != (s.moves, s.bytes_moved) {
            return Err(bad(format!(
                "to_dram and to_slow add up to {} moves of {} B, the totals are {} moves of {} B",
                up.moves + down.moves,
                up.bytes + down.bytes,
                s.moves,
                s.bytes_moved
            )));
        }
    }
    for o in &s.objects {
        if let Some(a) = o.access_share {
            if !(0.0..=1.0 + 1e-9).contains(&a) {
                return Err(bad(format!(
                    "object {:?}: access_share {a} is not in 0..1",
                    o.name
                )));
            }
        }
        if !(o.exposed_ms.is_finite() && o.exposed_ms >= 0.0) {
            return Err(bad(format!(
                "object {:?}: exposed_ms is {}",
                o.name, o.exposed_ms
            )));
        }
    }
    Ok(s)
}

/// One direction's values: finite non-negative time, a positive finite
/// bandwidth, and no more moves or bytes than the rank's totals.
fn check_direction(what: &str, d: &DirectionStatus, s: &RankStatus) -> Result<(), String> {
    if !(d.copy_ms.is_finite() && d.copy_ms >= 0.0) {
        return Err(format!("{what}.copy_ms is {}", d.copy_ms));
    }
    if let Some(bw) = d.copy_bw {
        if !(bw.is_finite() && bw > 0.0) {
            return Err(format!("{what}.copy_bw is {bw}"));
        }
    }
    if d.moves > s.moves || d.bytes > s.bytes_moved {
        return Err(format!(
            "{what} has {} moves of {} B, more than the totals ({} moves of {} B)",
            d.moves, d.bytes, s.moves, s.bytes_moved
        ));
    }
    Ok(())
}

/// What a status directory holds.
#[derive(Debug)]
pub struct DirStatus {
    /// The usable documents with their files, by rank then pid.
    pub ranks: Vec<(PathBuf, RankStatus)>,
    /// One error per unusable file (each names its file).
    pub problems: Vec<StatusError>,
}

/// Every `*.json` file of `dir` (dot-files, the writers' temporaries, are
/// skipped), parsed and checked, sorted by rank then pid; plus one error per
/// unusable file. `here` is this host's name and `alive(pid)` whether a
/// process of this host exists: a `running` document of this host whose
/// process is gone is stale.
pub fn read_dir(
    dir: &Path,
    here: &str,
    alive: impl Fn(u32) -> bool,
) -> Result<DirStatus, StatusError> {
    let rd = std::fs::read_dir(dir).map_err(|source| StatusError::Read {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut paths: Vec<PathBuf> = rd
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|x| x == "json")
                && !p
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with('.'))
        })
        .collect();
    if paths.is_empty() {
        return Err(StatusError::Empty {
            dir: dir.to_path_buf(),
        });
    }
    paths.sort();
    let (mut good, mut errors) = (Vec::new(), Vec::new());
    for p in paths {
        let r = read_status_file(&p)
            .and_then(|t| parse(&t, &p))
            .and_then(|s| {
                if s.state == RunState::Running && s.host == here && !alive(s.pid) {
                    Err(StatusError::Stale {
                        path: p.clone(),
                        pid: s.pid,
                        host: s.host,
                    })
                } else {
                    Ok(s)
                }
            });
        match r {
            Ok(s) => good.push((p, s)),
            Err(e) => errors.push(e),
        }
    }
    good.sort_by_key(|(_, s)| (s.rank.unwrap_or(u32::MAX), s.pid));
    Ok(DirStatus {
        ranks: good,
        problems: errors,
    })
}

/// Largest status file read: 64 MiB (a document is a few hundred bytes per
/// object; this is hundreds of thousands of objects).
pub const MAX_STATUS_BYTES: u64 = 64 << 20;

/// Reads one `*.json` of the status directory. Anyone who can write the
/// directory can put a FIFO, a device or a link to one there under a
/// `.json` name: a FIFO without a writer blocked `memtamer tier status`
/// forever and `/dev/zero` grew it without bound. The file is opened
/// without blocking, must be a regular file (checked on the open file, so a
/// swap after a check cannot slip through) and at most
/// [`MAX_STATUS_BYTES`] long.
pub fn read_status_file(p: &Path) -> Result<String, StatusError> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let io = |source| StatusError::Read {
        path: p.to_path_buf(),
        source,
    };
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(p)
        .map_err(io)?;
    let meta = f.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(StatusError::Invalid {
            path: p.to_path_buf(),
            why: "not a regular file (a FIFO, device or socket is never a status file)".into(),
        });
    }
    let mut text = String::new();
    f.take(MAX_STATUS_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(io)?;
    if text.len() as u64 > MAX_STATUS_BYTES {
        return Err(StatusError::Invalid {
            path: p.to_path_buf(),
            why: format!("larger than {MAX_STATUS_BYTES} bytes"),
        });
    }
    Ok(text)
}

/// Bytes for people: `12.0 MiB`.
pub fn human_bytes(b: u64) -> String {
    const U: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < U.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", U[i])
    }
}

/// The table `memtamer tier status` prints: per rank a summary line, then
/// its objects, largest first. `now_ms` (Unix ms) dates the documents.
pub fn render_table(ranks: &[(PathBuf, RankStatus)], now_ms: u64) -> String {
    let mut out = String::new();
    for (path, s) in ranks {
        let who = match (s.rank, s.ranks) {
            (Some(r), Some(n)) => format!("rank {r} of {n}"),
            (Some(r), None) => format!("rank {r}"),
            _ => format!("pid {}", s.pid),
        };
        let age = now_ms.saturating_sub(s.updated_unix_ms) as f64 / 1e3;
        let pct = 100.0 * s.dram_used as f64 / s.dram_budget as f64;
        out.push_str(&format!(
            "{who} (pid {} on {}, {}, updated {age:.1} s ago, {})\n",
            s.pid,
            s.host,
            match s.state {
                RunState::Running => "running",
                RunState::Finished => "finished",
            },
            path.display()
        ));
        out.push_str(&format!(
            "  DRAM {} of {} ({pct:.0}%); unimem {}{}; {} iterations, {} decisions{}; {} moves ({} failed), {} moved, copy {:.3} ms, exposed {:.3} ms\n",
            human_bytes(s.dram_used),
            human_bytes(s.dram_budget),
            if s.unimem { "on" } else { "off" },
            s.profiler
                .as_ref()
                .map_or(String::new(), |p| format!(", profiler {p}")),
            s.iterations,
            s.decisions,
            s.plan.as_ref().map_or(String::new(), |p| format!(" (plan {p})")),
            s.moves,
            s.failed,
            human_bytes(s.bytes_moved),
            s.copy_ms,
            s.exposed_ms,
        ));
        out.push_str(&format!(
            "  to DRAM {}; to slow {}\n",
            direction_text(s.to_dram.as_ref()),
            direction_text(s.to_slow.as_ref())
        ));
        if let Some(c) = &s.alloc {
            out.push_str(&format!("  at allocation: {}\n", c.text()));
        }
        if let Some(d) = &s.decisions_detail {
            let sharing = if d.cpus_from == "node" {
                format!("{} ranks on its {} CPUs", d.node_ranks, d.cpus)
            } else {
                format!("{} ranks on the node, {} CPUs", d.node_ranks, d.cpus)
            };
            out.push_str(&format!(
                "  copies exposed: {} ({sharing}); guard: {} reverted, {} refused\n",
                d.copies_exposed, d.guard_reverts, d.guard_refused
            ));
        }
        if let Some(e) = &s.last_move_error {
            out.push_str(&format!("  last move error: {e}\n"));
        }
        let mut objs: Vec<&ObjectStatus> = s.objects.iter().collect();
        objs.sort_by(|a, b| b.size.cmp(&a.size).then_with(|| a.name.cmp(&b.name)));
        let w = objs.iter().map(|o| o.name.len()).max().unwrap_or(0).max(6);
        out.push_str(&format!(
            "  {}  {:>10}  {:<5}  {:>6}  {:>5}  {:>10}  {:>10}\n",
            pad_right("object", w),
            "size",
            "tier",
            "access",
            "moves",
            "moved",
            "exposed_ms"
        ));
        for o in objs {
            out.push_str(&format!(
                "  {}  {:>10}  {:<5}  {:>6}  {:>5}  {:>10}  {:>10.3}\n",
                pad_right(&o.name, w),
                human_bytes(o.size),
                match (o.tier, o.migrating) {
                    (_, true) => "move",
                    (TierName::Dram, _) => "dram",
                    (TierName::Slow, _) => "slow",
                },
                o.access_share
                    // + 0.0 turns a -0.0 share into 0.0 (no "-0.0%")
                    .map_or("-".into(), |a| format!("{:.1}%", 100.0 * a + 0.0)),
                o.moves,
                human_bytes(o.bytes_moved),
                o.exposed_ms
            ));
        }
    }
    out
}

/// One direction for the table: `3 moves, 7.0 MiB, copy 10.000 ms,
/// 0.73 GB/s`; `-` for a document without it, `- GB/s` without a sample.
pub fn direction_text(d: Option<&DirectionStatus>) -> String {
    match d {
        None => "-".into(),
        Some(d) => format!(
            "{} moves, {}, copy {:.3} ms, {} GB/s",
            d.moves,
            human_bytes(d.bytes),
            d.copy_ms,
            d.copy_bw.map_or("-".into(), |b| format!("{:.2}", b / 1e9))
        ),
    }
}

/// Writes `text` to `dir/name` atomically: a dot-file beside it, then a
/// rename over it (readers see the old or the new document, never part).
pub fn write_atomic(dir: &Path, name: &str, text: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, dir.join(name)).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// This host's name ("" if it cannot be read).
pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: buf is writable for its length; gethostname NUL-terminates
    // on success when the name fits (we pass one byte less to be sure).
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr() as *mut libc::c_char, buf.len() - 1) };
    if rc != 0 {
        return String::new();
    }
    let n = buf.iter().position(|&c| c == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

/// Whether process `pid` exists on this host.
pub fn pid_alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

#[cfg(test)]
#[path = "status_tests.rs"]
mod tests;
