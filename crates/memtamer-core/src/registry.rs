//! The one policy registry: every place that names a policy (simulator
//! scenarios and `--set policy=`, the gate's `MEMTAMER_GATE_POLICY`, the
//! daemon's TOML) parses it here, with one grammar (docs/policy.md,
//! "Policy names"):
//!
//! ```text
//! POLICY := PART ('+' PART)*        a composition (one part per slot)
//! PART   := NAME (':' ARG)*         e.g. pats:0.2, caladan-pm:2.5:25
//! ```
//!
//! Parsing is pure: it yields a [`PolicyName`] per part, which each consumer
//! builds into its policy objects with its own facts (the simulator knows
//! the platform, the gate its interleave set, the daemon its CPUs). Which
//! names a consumer accepts is checked with [`check_allowed`], so every
//! consumer's error lists the names valid *there*. Old spellings
//! (`fixed:N`, `calibrated:FILE`) are deprecated aliases: they parse, and
//! the parse reports the canonical name so the caller can warn.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::isolation::IsolationKind;
use crate::pats::{CalibratedModel, ModelError};

/// One part of a policy name, with its arguments parsed and range-checked.
#[derive(Clone, Debug, PartialEq)]
pub enum PolicyName {
    /// `baseline`: no decisions at all.
    Baseline,
    /// `gate:N`: a fixed gate limit of N concurrent PM requests (N >= 1).
    Gate(u32),
    /// `pats[:T_MC]`: PATS Eq. 1 with tolerance T_mc in [0, 1] (default 0.2).
    Pats {
        /// T_mc.
        t_mc: f64,
    },
    /// `pats-calibrated[:FILE]`: PATS with a model measured by `memtamer
    /// calibrate`; without FILE the consumer supplies one (the simulator:
    /// the platform's model).
    PatsCalibrated {
        /// The model file, if named.
        model: Option<PathBuf>,
    },
    /// `pats-adaptive[:MAX_LOSS]`: PATS steered by measured DRAM loss,
    /// MAX_LOSS in (0, 1] (default 0.05).
    PatsAdaptive {
        /// Tolerated DRAM loss.
        max_loss: f64,
    },
    /// `dicio`: Dicio §4.3 LC/BE isolation.
    Dicio,
    /// `caladan-pm[:PM_GBPS[:DRAM_GBPS]]`: Caladan extended to PM (Dicio §5).
    CaladanPm {
        /// Request-level PM write threshold, GB/s (default: the params').
        pm_gbps: Option<f64>,
        /// DRAM threshold, GB/s (default: none).
        dram_gbps: Option<f64>,
    },
    /// `pm-counter-only`: throttle on PM media counters only (Dicio §5).
    PmCounterOnly,
    /// `core-spec[:N_PM_CPUS]`: the KIT thesis's core specialization.
    CoreSpec {
        /// PM cores (default: the consumer's, 3 in the simulator).
        pm_cpus: Option<usize>,
    },
    /// `placement`: Ahn et al. §3.3 PM I/O-aware placement.
    Placement,
    /// `external`: nobody in this process sets the gate limit (the daemon or
    /// `memtamer gate set-limit` does).
    External,
    /// `off`: observe only, never throttle (the daemon's isolation).
    Off,
}

/// Which part of a composition a policy fills; at most one part per slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// Stands alone (`baseline`, `external`, `off`): never composed.
    Alone,
    /// LC/BE isolation (first in `memtamer_core::compose` precedence).
    Isolation,
    /// Thread placement.
    Placement,
    /// Core specialization.
    CoreSpec,
    /// The gate limit (PATS and friends).
    Gate,
}

/// A row of the registry's table: what docs/policy.md lists.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    /// Canonical name.
    pub name: &'static str,
    /// Argument syntax after the name (empty when none).
    pub args: &'static str,
    /// The composition slot.
    pub slot: Slot,
    /// One line on what it is.
    pub about: &'static str,
}

/// Every policy name, in documentation order.
pub const POLICIES: [Entry; 12] = [
    Entry {
        name: "baseline",
        args: "",
        slot: Slot::Alone,
        about: "no decisions",
    },
    Entry {
        name: "gate",
        args: ":N",
        slot: Slot::Gate,
        about: "fixed gate limit, N >= 1",
    },
    Entry {
        name: "pats",
        args: "[:T_MC]",
        slot: Slot::Gate,
        about: "PATS Eq. 1, T_MC in [0, 1], default 0.2",
    },
    Entry {
        name: "pats-calibrated",
        args: "[:MODEL.toml]",
        slot: Slot::Gate,
        about: "PATS with a calibrated model",
    },
    Entry {
        name: "pats-adaptive",
        args: "[:MAX_LOSS]",
        slot: Slot::Gate,
        about: "PATS steered by DRAM loss, MAX_LOSS in (0, 1], default 0.05",
    },
    Entry {
        name: "dicio",
        args: "",
        slot: Slot::Isolation,
        about: "Dicio §4.3 LC/BE isolation",
    },
    Entry {
        name: "caladan-pm",
        args: "[:PM_GBPS[:DRAM_GBPS]]",
        slot: Slot::Isolation,
        about: "Caladan on request-level PM writes",
    },
    Entry {
        name: "pm-counter-only",
        args: "",
        slot: Slot::Isolation,
        about: "throttle on PM media counters only",
    },
    Entry {
        name: "core-spec",
        args: "[:N_PM_CPUS]",
        slot: Slot::CoreSpec,
        about: "core specialization with N PM cores",
    },
    Entry {
        name: "placement",
        args: "",
        slot: Slot::Placement,
        about: "Ahn §3.3 PM I/O-aware placement",
    },
    Entry {
        name: "external",
        args: "",
        slot: Slot::Alone,
        about: "the gate limit is set from outside",
    },
    Entry {
        name: "off",
        args: "",
        slot: Slot::Alone,
        about: "observe only",
    },
];

/// Deprecated spellings and their canonical names (the gate's old
/// `MEMTAMER_GATE_POLICY` names). They parse; callers warn.
pub const ALIASES: [(&str, &str); 2] = [("fixed", "gate"), ("calibrated", "pats-calibrated")];

/// A deprecated spelling met while parsing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deprecated {
    /// As written.
    pub old: String,
    /// The canonical name to write instead.
    pub new: &'static str,
}

impl fmt::Display for Deprecated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "policy name `{}` is deprecated, write `{}`",
            self.old, self.new
        )
    }
}

/// A parsed policy: its parts in the order written, and the deprecated
/// spellings used (for a warning).
#[derive(Clone, Debug, PartialEq)]
pub struct Parsed {
    /// One per `+`-separated part.
    pub parts: Vec<PolicyName>,
    /// Deprecated aliases met.
    pub deprecated: Vec<Deprecated>,
}

/// Why a policy name does not parse or is not accepted.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum RegistryError {
    /// No such name.
    #[error("unknown policy `{name}`; valid: {valid}")]
    Unknown {
        /// The name as written.
        name: String,
        /// The valid names.
        valid: String,
    },
    /// A known name with arguments out of range or of the wrong count.
    #[error("policy `{part}`: {message}")]
    BadArgs {
        /// The part as written.
        part: String,
        /// What is wrong and what is expected.
        message: String,
    },
    /// Parts that cannot be composed.
    #[error("policy `{text}`: {message}")]
    BadComposition {
        /// The whole name.
        text: String,
        /// What is wrong.
        message: String,
    },
    /// A valid name this consumer cannot run.
    #[error("policy `{name}` is not available {context}; valid there: {valid}")]
    NotHere {
        /// The canonical name.
        name: &'static str,
        /// Where (e.g. "in MEMTAMER_GATE_POLICY").
        context: String,
        /// The names valid there.
        valid: String,
    },
}

/// The valid names as `name[args]`, comma-separated, for error messages;
/// `only` restricts to some names (empty: all).
pub fn describe(only: &[&str]) -> String {
    POLICIES
        .iter()
        .filter(|e| only.is_empty() || only.contains(&e.name))
        .map(|e| format!("{}{}", e.name, e.args))
        .collect::<Vec<_>>()
        .join(", ")
}

fn entry(name: &str) -> Option<&'static Entry> {
    POLICIES.iter().find(|e| e.name == name)
}

impl PolicyName {
    /// The canonical name (without arguments).
    pub fn name(&self) -> &'static str {
        match self {
            PolicyName::Baseline => "baseline",
            PolicyName::Gate(_) => "gate",
            PolicyName::Pats { .. } => "pats",
            PolicyName::PatsCalibrated { .. } => "pats-calibrated",
            PolicyName::PatsAdaptive { .. } => "pats-adaptive",
            PolicyName::Dicio => "dicio",
            PolicyName::CaladanPm { .. } => "caladan-pm",
            PolicyName::PmCounterOnly => "pm-counter-only",
            PolicyName::CoreSpec { .. } => "core-spec",
            PolicyName::Placement => "placement",
            PolicyName::External => "external",
            PolicyName::Off => "off",
        }
    }

    /// The composition slot.
    pub fn slot(&self) -> Slot {
        entry(self.name()).map_or(Slot::Alone, |e| e.slot)
    }

    /// The isolation controller, for the isolation names.
    pub fn isolation_kind(&self) -> Option<IsolationKind> {
        match self {
            PolicyName::Dicio => Some(IsolationKind::Dicio),
            PolicyName::CaladanPm { .. } => Some(IsolationKind::CaladanPm),
            PolicyName::PmCounterOnly => Some(IsolationKind::PmCounterOnly),
            _ => None,
        }
    }

    /// Parses one part (no `+`).
    pub fn parse(part: &str) -> Result<(PolicyName, Option<Deprecated>), RegistryError> {
        let part = part.trim();
        let mut pieces = part.split(':');
        let written = pieces.next().unwrap_or_default();
        let args: Vec<&str> = pieces.collect();
        let (name, deprecated) = match ALIASES.iter().find(|(old, _)| *old == written) {
            Some((old, new)) => (
                *new,
                Some(Deprecated {
                    old: (*old).to_string(),
                    new,
                }),
            ),
            None => (written, None),
        };
        let Some(e) = entry(name) else {
            return Err(RegistryError::Unknown {
                name: written.to_string(),
                valid: describe(&[]),
            });
        };
        let bad = |message: &str| RegistryError::BadArgs {
            part: part.to_string(),
            message: format!("{message} (syntax: {}{})", e.name, e.args),
        };
        let number = |a: &str, ok: &dyn Fn(f64) -> bool, what: &str| {
            a.trim()
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && ok(*v))
                .ok_or_else(|| bad(what))
        };
        let p = match (name, args.as_slice()) {
            ("baseline", []) => PolicyName::Baseline,
            ("dicio", []) => PolicyName::Dicio,
            ("pm-counter-only", []) => PolicyName::PmCounterOnly,
            ("placement", []) => PolicyName::Placement,
            ("external", []) => PolicyName::External,
            ("off", []) => PolicyName::Off,
            ("gate", [n]) => PolicyName::Gate(
                n.trim()
                    .parse::<u32>()
                    .ok()
                    .filter(|n| *n >= 1 && *n != u32::MAX)
                    .ok_or_else(|| bad("N must be a whole number >= 1"))?,
            ),
            ("pats", []) => PolicyName::Pats { t_mc: 0.2 },
            ("pats", [t]) => PolicyName::Pats {
                t_mc: number(t, &|v| (0.0..=1.0).contains(&v), "T_MC must be in [0, 1]")?,
            },
            ("pats-calibrated", []) => PolicyName::PatsCalibrated { model: None },
            ("pats-calibrated", [f]) if !f.trim().is_empty() => PolicyName::PatsCalibrated {
                model: Some(PathBuf::from(f.trim())),
            },
            ("pats-adaptive", []) => PolicyName::PatsAdaptive { max_loss: 0.05 },
            ("pats-adaptive", [l]) => PolicyName::PatsAdaptive {
                max_loss: number(l, &|v| v > 0.0 && v <= 1.0, "MAX_LOSS must be in (0, 1]")?,
            },
            ("caladan-pm", rest) if rest.len() <= 2 => {
                let gbps = |a: &str| number(a, &|v| v > 0.0, "thresholds must be GB/s > 0");
                PolicyName::CaladanPm {
                    pm_gbps: rest.first().map(|a| gbps(a)).transpose()?,
                    dram_gbps: rest.get(1).map(|a| gbps(a)).transpose()?,
                }
            }
            ("core-spec", []) => PolicyName::CoreSpec { pm_cpus: None },
            ("core-spec", [n]) => PolicyName::CoreSpec {
                pm_cpus: Some(
                    n.trim()
                        .parse::<usize>()
                        .ok()
                        .filter(|n| *n >= 1)
                        .ok_or_else(|| bad("N_PM_CPUS must be a whole number >= 1"))?,
                ),
            },
            (_, []) => return Err(bad("an argument is required")),
            _ => return Err(bad("wrong number of arguments")),
        };
        Ok((p, deprecated))
    }
}

impl fmt::Display for PolicyName {
    /// The canonical spelling, arguments included: parsing it gives `self`
    /// back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())?;
        match self {
            PolicyName::Gate(n) => write!(f, ":{n}"),
            PolicyName::Pats { t_mc } => write!(f, ":{t_mc}"),
            PolicyName::PatsCalibrated { model: Some(p) } => write!(f, ":{}", p.display()),
            PolicyName::PatsAdaptive { max_loss } => write!(f, ":{max_loss}"),
            PolicyName::CaladanPm { pm_gbps, dram_gbps } => {
                if let Some(pm) = pm_gbps {
                    write!(f, ":{pm}")?;
                }
                if let Some(d) = dram_gbps {
                    write!(f, ":{d}")?;
                }
                Ok(())
            }
            PolicyName::CoreSpec { pm_cpus: Some(n) } => write!(f, ":{n}"),
            _ => Ok(()),
        }
    }
}

/// Parses a whole policy name: one part, or a `+` composition with at most
/// one part per [`Slot`] and no [`Slot::Alone`] part.
pub fn parse(text: &str) -> Result<Parsed, RegistryError> {
    let mut parts = Vec::new();
    let mut deprecated = Vec::new();
    for piece in text.split('+') {
        if piece.trim().is_empty() {
            return Err(RegistryError::BadComposition {
                text: text.to_string(),
                message: "empty part".into(),
            });
        }
        let (p, d) = PolicyName::parse(piece)?;
        deprecated.extend(d);
        parts.push(p);
    }
    if parts.len() > 1 {
        for (i, p) in parts.iter().enumerate() {
            if p.slot() == Slot::Alone {
                return Err(RegistryError::BadComposition {
                    text: text.to_string(),
                    message: format!("`{}` cannot be composed", p.name()),
                });
            }
            if let Some(q) = parts[..i].iter().find(|q| q.slot() == p.slot()) {
                return Err(RegistryError::BadComposition {
                    text: text.to_string(),
                    message: format!(
                        "`{}` and `{}` fill the same slot ({:?}); compose at most one of each",
                        q.name(),
                        p.name(),
                        p.slot()
                    ),
                });
            }
        }
    }
    Ok(Parsed { parts, deprecated })
}

/// Refuses parts whose name is not in `allowed`, naming `context` and the
/// names valid there.
pub fn check_allowed(
    parts: &[PolicyName],
    allowed: &[&str],
    context: &str,
) -> Result<(), RegistryError> {
    match parts.iter().find(|p| !allowed.contains(&p.name())) {
        Some(p) => Err(RegistryError::NotHere {
            name: p.name(),
            context: context.to_string(),
            valid: describe(allowed),
        }),
        None => Ok(()),
    }
}

/// Why a calibrated model file could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ModelLoadError {
    /// The file could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file is larger than any model (or never ends, like /dev/zero).
    #[error("{}: larger than {max} bytes, not a model file", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The bound.
        max: u64,
    },
    /// The file is not a model.
    #[error("{}:{}: {}{}", path.display(), error.line, error.key.map(|k| format!("{k}: ")).unwrap_or_default(), error.message)]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong, and where.
        error: ModelError,
    },
}

/// Largest model file accepted: a real one is a few KiB.
pub const MAX_MODEL_BYTES: u64 = 1 << 20;

/// Loads a model written by `memtamer calibrate` (the one loader: the
/// simulator, the gate and the daemon call it for `pats-calibrated:FILE`).
/// Reads at most [`MAX_MODEL_BYTES`]: the path comes from an environment
/// variable any user sets, and `/dev/zero` must not take all memory.
pub fn load_model(path: &Path) -> Result<CalibratedModel, ModelLoadError> {
    use std::io::Read;
    let io = |source| ModelLoadError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .map_err(io)?
        .take(MAX_MODEL_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > MAX_MODEL_BYTES {
        return Err(ModelLoadError::TooLarge {
            path: path.to_path_buf(),
            max: MAX_MODEL_BYTES,
        });
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            e.utf8_error(),
        ))
    })?;
    CalibratedModel::parse(&text).map_err(|error| ModelLoadError::Parse {
        path: path.to_path_buf(),
        error,
    })
}

#[cfg(test)]
#[path = "registry_tests.rs"]
mod tests;
