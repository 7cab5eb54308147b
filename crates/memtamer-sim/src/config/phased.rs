//! The `phased` workload's program and placement policy (issue 20 item 5):
//! an iterative MPI-like program as a sequence of phases delimited by
//! communication (thesis §3.2: a phase is a computation region between MPI
//! calls), each touching some data objects with a pattern and a read/write
//! mix, and the policy that places those objects between DRAM and the slow
//! tier.

use super::workload_spec::Pattern;
use serde::{Deserialize, Serialize};

/// One data object (the thesis's "target object", allocated by
/// `unimem_malloc`).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ObjectSpec {
    /// Name (unique in the program).
    pub name: String,
    /// Size, bytes.
    pub bytes: u64,
}

/// What one phase does with one object.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AccessSpec {
    /// Object name.
    pub object: String,
    /// Bytes of main-memory traffic to it in the phase (LLC misses × 64 B).
    pub bytes: u64,
    /// `seq` (streamed, L2-prefetched) or `rand` (independent random lines).
    pub pattern: Pattern,
    /// Share of the lines that are stores (read-for-ownership + write-back).
    #[serde(default)]
    pub write_fraction: f64,
    /// Each load waits for the previous one (pointer chasing: no memory-level
    /// parallelism; the thesis's `CF_lat` benchmark, §3.4.1).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dependent: bool,
}

/// One phase: a computation region ended by an MPI call.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PhaseSpec {
    /// Name (for reports).
    pub name: String,
    /// CPU time of the phase beside its memory accesses, ns (overlaps them).
    #[serde(default)]
    pub compute_ns: f64,
    /// Time of the MPI call that ends the phase, ns (no memory traffic).
    #[serde(default)]
    pub comm_ns: f64,
    /// Objects touched.
    #[serde(default)]
    pub access: Vec<AccessSpec>,
}

/// An iterative program: the phase sequence runs `iterations` times.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PhasedProgram {
    /// Data objects.
    pub objects: Vec<ObjectSpec>,
    /// Phases of one iteration.
    pub phases: Vec<PhaseSpec>,
    /// Iterations of the main loop.
    pub iterations: u32,
}

impl PhasedProgram {
    /// Index of the object called `name`.
    pub fn object_index(&self, name: &str) -> Option<usize> {
        self.objects.iter().position(|o| o.name == name)
    }

    /// Checks names, sizes and mixes; on error, the key and why.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        self.check().map_err(|f| (f.key, f.message))
    }

    /// [`Self::validate`] with where the fault lies (which phase, which
    /// access, which field), so that a file's error can name its line.
    pub fn check(&self) -> Result<(), ProgramFault> {
        let top = |key: &'static str, message: String| ProgramFault {
            key,
            phase: None,
            access: None,
            field: None,
            message,
        };
        if self.objects.is_empty() {
            return Err(top("objects", "a phased program needs objects".into()));
        }
        if self.phases.is_empty() {
            return Err(top("phases", "a phased program needs phases".into()));
        }
        if self.iterations == 0 {
            return Err(top("iterations", "iterations must be >= 1".into()));
        }
        for (i, o) in self.objects.iter().enumerate() {
            if o.bytes == 0 || o.bytes > 1 << 34 {
                return Err(top(
                    "objects",
                    format!("object {}: bytes must be in 1..=16 GiB", o.name),
                ));
            }
            if self.objects[..i].iter().any(|p| p.name == o.name) {
                return Err(top("objects", format!("object {} named twice", o.name)));
            }
        }
        for (k, p) in self.phases.iter().enumerate() {
            let fault =
                |access: Option<usize>, field: &'static str, message: String| ProgramFault {
                    key: "phases",
                    phase: Some(k),
                    access,
                    field: Some(field),
                    message: format!("phase {}: {message}", p.name),
                };
            for (what, v) in [("compute_ns", p.compute_ns), ("comm_ns", p.comm_ns)] {
                if !(v.is_finite() && v >= 0.0) {
                    return Err(fault(None, what, format!("{what} must be >= 0")));
                }
                if let Err((_, m)) = super::workload_spec::check_max_ns(what, v) {
                    return Err(fault(None, what, m));
                }
            }
            for (j, a) in p.access.iter().enumerate() {
                if self.object_index(&a.object).is_none() {
                    return Err(fault(
                        Some(j),
                        "object",
                        format!("unknown object {}", a.object),
                    ));
                }
                if a.pattern == Pattern::Stride {
                    return Err(fault(
                        Some(j),
                        "pattern",
                        "pattern must be seq or rand".into(),
                    ));
                }
                if !(0.0..=1.0).contains(&a.write_fraction) {
                    return Err(fault(
                        Some(j),
                        "write_fraction",
                        "write_fraction must be in [0, 1]".into(),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Where a [`PhasedProgram::check`] error lies. Serde has no spans once a
/// file is parsed, so the line is found again in the text
/// ([`ProgramFault::line_in`]); without it an error inside a
/// `[[program.phases]]` table named line 0.
#[derive(Clone, Debug, PartialEq)]
pub struct ProgramFault {
    /// The program's key at fault: `objects`, `phases` or `iterations`.
    pub key: &'static str,
    /// Index of the phase at fault.
    pub phase: Option<usize>,
    /// Index of the access (in that phase) at fault.
    pub access: Option<usize>,
    /// The field at fault (`compute_ns`, `object`, `write_fraction`, ...).
    pub field: Option<&'static str>,
    /// Why.
    pub message: String,
}

impl ProgramFault {
    /// The dotted key under `table` (the program's own key in the file,
    /// e.g. `program`): `program.phases[1].access[0].write_fraction`.
    pub fn path(&self, table: &str) -> String {
        let mut s = format!("{table}.{}", self.key);
        if let Some(k) = self.phase {
            s += &format!("[{k}]");
        }
        if let Some(j) = self.access {
            s += &format!(".access[{j}]");
        }
        if let Some(f) = self.field {
            s += &format!(".{f}");
        }
        s
    }

    /// The 1-based line of the fault in `text`, a file whose program is
    /// the table `table` with its phases as `[[TABLE.phases]]` tables (or
    /// an inline `phases = [..]`): a phase field's line, an access's line,
    /// else the phase's header; 0 when none is found.
    pub fn line_in(&self, text: &str, table: &str) -> usize {
        let lines: Vec<&str> = text.lines().collect();
        let Some(k) = self.phase else {
            return crate::error::line_of_key(text, self.key);
        };
        let header = format!("[[{table}.phases]]");
        // A line's code (before any `#` comment) with its blanks removed.
        let code = |l: &str| -> String {
            l.split('#')
                .next()
                .unwrap_or("")
                .split_whitespace()
                .collect()
        };
        let is_header = |l: &str| {
            let t = code(l);
            t.starts_with('[') && t.ends_with(']') && !t.contains('=')
        };
        let Some(start) = lines
            .iter()
            .enumerate()
            .filter(|(_, l)| code(l) == header)
            .map(|(i, _)| i)
            .nth(k)
        else {
            return crate::error::line_of_key(text, self.key);
        };
        let end = (start + 1..lines.len())
            .find(|&i| is_header(lines[i]))
            .unwrap_or(lines.len());
        let block = start + 1..end;
        let field = self.field.unwrap_or("");
        let Some(j) = self.access else {
            return block
                .clone()
                .find(|&i| assigns(lines[i], field) > 0)
                .map_or(start + 1, |i| i + 1);
        };
        // the access's line (an inline table is one line in TOML 1.0): the
        // one holding the phase's (j+1)-th `object =`
        let mut seen = 0;
        block
            .clone()
            .find(|&i| {
                seen += assigns(lines[i], "object");
                seen > j
            })
            .or_else(|| block.clone().find(|&i| assigns(lines[i], "access") > 0))
            .map_or(start + 1, |i| i + 1)
    }
}

/// How many times `key` is assigned (`key =`, as a whole word) in `line`
/// (comments ignored).
fn assigns(line: &str, key: &str) -> usize {
    if key.is_empty() {
        return 0;
    }
    let line = line.split('#').next().unwrap_or("");
    line.match_indices(key)
        .filter(|(i, _)| {
            let before = line[..*i].chars().next_back();
            let after = line[i + key.len()..].trim_start();
            !before.is_some_and(|c| c.is_alphanumeric() || c == '_') && after.starts_with('=')
        })
        .count()
}

/// Which objects a search may use (Unimem's ablations, thesis Fig. 3.11).
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum SearchSpec {
    /// Both searches, the better prediction wins (the thesis's Unimem).
    #[default]
    Both,
    /// Phase-local search only.
    Local,
    /// Cross-phase global search only.
    Global,
}

/// Unimem's platform constants (thesis §3.4: measured offline per platform
/// with STREAM and a pointer chaser; the evaluation harness measures them on
/// the simulated platform the same way). Bandwidths in B/s, latencies in s.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    /// Streaming bandwidth of one rank from DRAM.
    pub dram_bw: f64,
    /// Streaming bandwidth of one rank from the slow tier.
    pub slow_bw: f64,
    /// Time per random access from DRAM.
    pub dram_lat: f64,
    /// Time per random access from the slow tier.
    pub slow_lat: f64,
    /// Bandwidth of one helper's copy from the slow tier into DRAM (a
    /// promotion; Eq. 3.3's `mem_copy_bw`). Without `evict_bw`, the
    /// bandwidth of both directions, as the thesis has one.
    pub copy_bw: f64,
    /// Bandwidth of one helper's copy from DRAM to the slow tier (an
    /// eviction), measured like `copy_bw` on evictions (`tier_calib`);
    /// absent: `copy_bw` (a scenario written before the two were apart).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evict_bw: Option<f64>,
    /// `CF_bw` of Eq. 3.2 (§3.4.1; fitted by `tier_calib::calibrate`).
    #[serde(default = "unit")]
    pub cf_bw: f64,
    /// `CF_lat` of the latency benefit (§3.4.1; fitted likewise).
    #[serde(default = "unit")]
    pub cf_lat: f64,
    /// Whether Unimem re-decides with each phase's exposure measured from
    /// its phase times (`memtamer_core::unimem::exposure`), or keeps the
    /// thesis's full exposure (the ablation).
    #[serde(default, skip_serializing_if = "ExposureSpec::is_measured")]
    pub exposure: ExposureSpec,
    /// Whether Unimem fills the DRAM its plan leaves free in every phase
    /// with the leading pages of one more regular unit
    /// (`memtamer_core::unimem::fill`), or leaves it free (the ablation).
    #[serde(default, skip_serializing_if = "FillSpec::is_remainder")]
    pub fill: FillSpec,
}

/// What Unimem does with the DRAM its plan of whole units leaves free
/// (docs/notebook/unimem.md section 5, "Partial units").
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum FillSpec {
    /// Cut the leading pages of the regular unit the models predict best
    /// there, and keep them in DRAM (when predicted faster than leaving the
    /// room free).
    #[default]
    Remainder,
    /// Leave it free: units whole, or in the §3.4.2 chunks of objects larger
    /// than the DRAM only (the planner before the fill).
    Off,
}

impl FillSpec {
    fn is_remainder(&self) -> bool {
        *self == FillSpec::Remainder
    }
}

/// How much of the modelled slow-tier cost Unimem's benefits count
/// (docs/notebook/unimem.md section 5, "Measured exposure").
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum ExposureSpec {
    /// Learned per phase once a plan has run: the profiled iteration's and
    /// the plan's quiet iterations' phase times against the models'
    /// prediction, then one re-decision with the calibrated models.
    #[default]
    Measured,
    /// Every slow-tier access exposed (thesis Eq. 3.2 and the latency
    /// benefit as written): the behaviour before the calibration.
    Full,
}

impl ExposureSpec {
    fn is_measured(&self) -> bool {
        *self == ExposureSpec::Measured
    }
}

fn unit() -> f64 {
    1.0
}

/// Where the objects go (issue 20 item 5: Unimem and its baselines).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(tag = "name", rename_all = "kebab-case", deny_unknown_fields)]
pub enum PlacementSpec {
    /// Everything in DRAM (capacity ignored): the upper bound.
    DramOnly,
    /// Everything in the slow tier: the lower bound.
    SlowOnly,
    /// Pages go to DRAM in the order the program first touches them, until
    /// DRAM is full (Linux's default local allocation); never moved.
    FirstTouch,
    /// At the first phase start every object that still fits (in object
    /// order) is promoted by the helper and the program waits: the naive
    /// "copy everything first" policy; the evaluation measures the copy
    /// bandwidth of the helper with it.
    Eager,
    /// Every object that fits starts in DRAM and is evicted by the helper
    /// at the first phase start, waited for: the evaluation measures the
    /// helper's eviction bandwidth with it, as it measures the promotion
    /// bandwidth with [`PlacementSpec::Eager`].
    EagerEvict,
    /// X-Mem-like: an offline profile of the whole run (every access, no
    /// timing), objects classified by their access pattern, one knapsack;
    /// placed at allocation, never moved.
    Static {
        /// Platform constants for the benefit model.
        model: ModelSpec,
    },
    /// Unimem: profile the first iteration(s), decide with the phase-local
    /// and cross-phase searches, migrate proactively by the helper.
    Unimem {
        /// Platform constants.
        model: ModelSpec,
        /// Which searches (ablations).
        #[serde(default)]
        search: SearchSpec,
        /// §3.4.2 opt. 2: start with the most-referenced objects in DRAM.
        #[serde(default = "yes")]
        initial_placement: bool,
        /// Iterations profiled before deciding.
        #[serde(default = "one")]
        profile_iterations: u32,
    },
    /// The named objects wholly in DRAM, the rest in the slow tier, fixed
    /// at allocation (capacity ignored, like DRAM-only): measures what one
    /// object's placement really buys, against the model's prediction
    /// (`memtamer sim unimem --per-object`).
    Pinned {
        /// Object names.
        dram: Vec<String>,
    },
    /// Hindsight baseline (no runtime could run it: it is chosen offline
    /// by evaluating candidate placements in the simulator itself,
    /// `tier_oracle`): per phase, the leading pages of each object in
    /// DRAM. With `free_moves` each phase's pages are set at its start
    /// without copies or time (a bound on any phase-granular placement
    /// under the DRAM budget); without, phase 0's pages are placed at
    /// allocation and never moved (an attainable static placement).
    Oracle {
        /// `pages[phase][object]`: leading pages of the object in DRAM.
        pages: Vec<Vec<u64>>,
        /// Set each phase's pages instantly at its start.
        free_moves: bool,
    },
    /// A hot-page policy in the style of Linux memory tiering / TPP: every
    /// `scan_us` the pages touched in two consecutive scan periods are
    /// promoted, cold DRAM pages demoted to make room.
    HotPage {
        /// Scan period, µs.
        scan_us: f64,
        /// Most pages moved per scan (the kernel's promotion rate limit).
        max_pages_per_scan: u64,
    },
}

fn yes() -> bool {
    true
}

fn one() -> u32 {
    1
}

impl PlacementSpec {
    /// Short name for tables.
    pub fn label(&self) -> String {
        match self {
            PlacementSpec::DramOnly => "dram-only".into(),
            PlacementSpec::SlowOnly => "slow-only".into(),
            PlacementSpec::FirstTouch => "first-touch".into(),
            PlacementSpec::Eager => "eager".into(),
            PlacementSpec::EagerEvict => "eager-evict".into(),
            PlacementSpec::Static { .. } => "static".into(),
            PlacementSpec::Unimem { search, .. } => match search {
                SearchSpec::Both => "unimem".into(),
                SearchSpec::Local => "local-only".into(),
                SearchSpec::Global => "global-only".into(),
            },
            PlacementSpec::HotPage { .. } => "hot-page".into(),
            PlacementSpec::Pinned { dram } => format!("pinned {{{}}}", dram.join(",")),
            PlacementSpec::Oracle { free_moves, .. } => if *free_moves {
                "oracle-free"
            } else {
                "oracle-static"
            }
            .into(),
        }
    }

    /// [`Self::validate`], and every object a placement names exists in
    /// `program`.
    pub fn validate_for(&self, program: &PhasedProgram) -> Result<(), (&'static str, String)> {
        self.validate()?;
        if let PlacementSpec::Pinned { dram } = self {
            if let Some(bad) = dram.iter().find(|n| program.object_index(n).is_none()) {
                return Err((
                    "placement",
                    format!("pinned object `{bad}` is not in the program"),
                ));
            }
        }
        Ok(())
    }

    /// Checks values; on error, the key and why.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        let model_ok = |m: &ModelSpec| {
            [m.dram_bw, m.slow_bw, m.dram_lat, m.slow_lat, m.copy_bw]
                .iter()
                .chain(m.evict_bw.as_ref())
                .all(|v| v.is_finite() && *v > 0.0)
                && [m.cf_bw, m.cf_lat]
                    .iter()
                    .all(|v| v.is_finite() && *v >= 0.0)
        };
        match self {
            PlacementSpec::Static { model } | PlacementSpec::Unimem { model, .. }
                if !model_ok(model) =>
            {
                Err((
                    "placement",
                    "model bandwidths and latencies must be > 0, constant factors >= 0".into(),
                ))
            }
            PlacementSpec::Unimem {
                profile_iterations: 0,
                ..
            } => Err(("placement", "profile_iterations must be >= 1".into())),
            PlacementSpec::HotPage {
                scan_us,
                max_pages_per_scan,
            } if !(scan_us.is_finite() && *scan_us > 0.0) || *max_pages_per_scan == 0 => Err((
                "placement",
                "hot-page needs scan_us > 0 and max_pages_per_scan >= 1".into(),
            )),
            PlacementSpec::Oracle { pages, .. } if pages.is_empty() => Err((
                "placement",
                "oracle needs the pages of at least one phase".into(),
            )),
            _ => Ok(()),
        }
    }
}
