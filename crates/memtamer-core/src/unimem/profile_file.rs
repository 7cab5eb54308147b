//! The recorded per-phase object profile (issue 20 item 5: the simulator's
//! phased scenarios can take a profile recorded by the MPI runtime instead
//! of a hand-written program; the simulator's `tier_eval::parse_profile`
//! reads it back). Written by `memtamer-tier`'s driver when
//! `MEMTAMER_TIER_PROFILE_OUT` is set, one file per rank and profiled
//! iteration. Format `memtamer-phase-profile v2`, one record per line,
//! `#` comments:
//!
//! ```text
//! # memtamer-phase-profile v2
//! rank R SIZE                  MPI_COMM_WORLD rank and size (absent outside MPI)
//! iteration K                  the profiled iteration (1-based; a re-profile writes a later one)
//! sampler TICK_NS PAGES PAGE_BYTES LINE_BYTES
//!                              the fault sampler: period, pages armed per object per tick,
//!                              page size, and the cache line ACCESS counts are in
//! object NAME BYTES            a data object (page-rounded bytes)
//! phase NAME TIME_NS CALL_NS CPU_NS CALL_CPU_NS
//!                              one phase of the profiled iteration: its wall time, of which
//!                              CALL_NS inside the MPI call that began it (0 for the first),
//!                              and the rank thread's CPU time in the phase and in that call
//!                              (CLOCK_THREAD_CPUTIME_ID: without the time the rank waited
//!                              for a core, which an oversubscribed host adds to the wall time)
//! access OBJECT LINES SAMPLES  OBJECT in the phase above: estimated main-memory lines
//!                              (page visits x lines per page) and the faults they come from
//! ```
//!
//! Version 1 (the first recordings) had no `rank`, `iteration` or
//! `sampler` record, `phase NAME TIME_NS` without the call time and
//! `access OBJECT LINES` without the samples; the reader takes both.

use super::model::PhaseProfile;
use std::fmt::Write;

/// The first line of a version-2 file.
pub const HEADER_V2: &str = "# memtamer-phase-profile v2";
/// The first line of a version-1 file.
pub const HEADER_V1: &str = "# memtamer-phase-profile v1";

/// What the file says about where and how it was recorded.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProfileMeta {
    /// `(rank, size)` in `MPI_COMM_WORLD`, when known.
    pub rank: Option<(u32, u32)>,
    /// The profiled iteration, 1-based.
    pub iteration: u64,
    /// Sampler period, ns.
    pub tick_ns: u64,
    /// Pages armed per object per tick.
    pub pages_per_tick: usize,
    /// Page size, bytes.
    pub page_bytes: u64,
    /// Cache line the line counts are in, bytes.
    pub line_bytes: u64,
}

/// One profiled phase's clocks beside its wall time ([`PhaseProfile::time`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PhaseClock {
    /// Wall seconds in the MPI call that began the phase.
    pub call_s: f64,
    /// The rank thread's CPU seconds in the phase.
    pub cpu_s: f64,
    /// The rank thread's CPU seconds in the MPI call that began it.
    pub call_cpu_s: f64,
}

/// Writes `phases` (object ids index `names` and `sizes`; `clocks[k]`
/// phase `k`'s call and CPU times, missing = 0) in the format above.
/// Phases are named `phaseN`; names with white space get `_`. A call is
/// clamped to its phase (clock granularity).
pub fn format_profile(
    meta: &ProfileMeta,
    names: &[String],
    sizes: &[u64],
    phases: &[PhaseProfile],
    clocks: &[PhaseClock],
) -> String {
    let clean = |s: &str| -> String {
        let t: String = s
            .chars()
            .map(|c| if c.is_whitespace() { '_' } else { c })
            .collect();
        if t.is_empty() {
            "_".into()
        } else {
            t
        }
    };
    let ns = |s: f64| (s * 1e9).round().max(0.0) as u64;
    let mut out = format!("{HEADER_V2}\n");
    if let Some((r, n)) = meta.rank {
        let _ = writeln!(out, "rank {r} {n}");
    }
    let _ = writeln!(out, "iteration {}", meta.iteration);
    let _ = writeln!(
        out,
        "sampler {} {} {} {}",
        meta.tick_ns, meta.pages_per_tick, meta.page_bytes, meta.line_bytes
    );
    for (n, s) in names.iter().zip(sizes) {
        let _ = writeln!(out, "object {} {s}", clean(n));
    }
    for (i, p) in phases.iter().enumerate() {
        let c = clocks.get(i).copied().unwrap_or_default();
        let time = ns(p.time);
        let call = ns(c.call_s).min(time);
        let cpu = ns(c.cpu_s);
        let call_cpu = ns(c.call_cpu_s).min(cpu);
        let _ = writeln!(out, "phase phase{i} {time} {call} {cpu} {call_cpu}");
        for (&o, a) in &p.objs {
            if let Some(n) = names.get(o) {
                let lines = a.accesses.round().max(0.0) as u64;
                if lines > 0 {
                    let samples = a.samples.round().max(0.0) as u64;
                    let _ = writeln!(out, "access {} {lines} {samples}", clean(n));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::unimem::model::ObjPhase;

    #[test]
    fn writes_meta_objects_phases_calls_and_accesses() {
        let mut p = PhaseProfile {
            time: 0.0015,
            samples: 10.0,
            objs: Default::default(),
        };
        p.objs.insert(
            1,
            ObjPhase {
                accesses: 99.6,
                samples: 3.0,
            },
        );
        p.objs.insert(
            0,
            ObjPhase {
                accesses: 0.2,
                samples: 1.0,
            },
        );
        let meta = ProfileMeta {
            rank: Some((1, 4)),
            iteration: 1,
            tick_ns: 1_000_000,
            pages_per_tick: 16,
            page_bytes: 4096,
            line_bytes: 64,
        };
        let q = PhaseProfile {
            time: 0.000_002,
            ..Default::default()
        };
        let t = format_profile(
            &meta,
            &["a b".into(), "x".into()],
            &[4096, 8192],
            &[p, q],
            // the second call longer than its phase: clamped to the phase
            &[
                PhaseClock {
                    call_s: 0.0005,
                    cpu_s: 0.001,
                    call_cpu_s: 0.0002,
                },
                PhaseClock {
                    call_s: 0.1,
                    cpu_s: 0.000_001,
                    call_cpu_s: 0.5,
                },
            ],
        );
        assert_eq!(
            t,
            "# memtamer-phase-profile v2\nrank 1 4\niteration 1\nsampler 1000000 16 4096 64\n\
             object a_b 4096\nobject x 8192\nphase phase0 1500000 500000 1000000 200000\n\
             access x 100 3\nphase phase1 2000 2000 1000 1000\n"
        );
    }

    #[test]
    fn no_rank_record_outside_mpi() {
        let t = format_profile(&ProfileMeta::default(), &[], &[], &[], &[]);
        assert_eq!(
            t,
            "# memtamer-phase-profile v2\niteration 0\nsampler 0 0 0 0\n"
        );
    }
}
