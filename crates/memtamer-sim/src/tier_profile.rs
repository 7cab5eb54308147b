//! Reads a per-phase object profile recorded by the MPI runtime
//! (`memtamer-tier`'s driver with `MEMTAMER_TIER_PROFILE_OUT`; format
//! `memtamer_core::unimem::profile_file`, versions 1 and 2) into a phased
//! program the simulator can run (issue 20 item 5: "feed it profiles
//! recorded from the real MPI runs"; docs/notebook/unimem.md section 5, "Profiles
//! recorded from real MPI runs").
//!
//! How a recording becomes a program (no factor is fitted; each rule is
//! what the recording says, or the driver's own assumption):
//!
//! * **Objects**: as recorded (page-rounded bytes of one rank).
//! * **Accesses**: `LINES × LINE_BYTES` bytes, streamed (`seq`), no
//!   stores. The fault sampler counts page visits, not patterns or writes;
//!   the driver reads a visit as a streamed page too (visits × lines per
//!   page), so the replay makes the same assumption.
//! * **Compute**: the rank thread's CPU time in the phase minus its CPU
//!   time in the MPI call that began it (v2; CPU, not wall, time, so that
//!   the time a rank waited for a core on an oversubscribed host is not
//!   compute). The recording's host had one NUMA node and a DRAM-backed
//!   slow tier, so that time includes the phase's memory stalls at DRAM
//!   speed and the sampler's faults; the simulator overlaps it with the
//!   phase's accesses, which therefore cost extra only where the simulated
//!   tier makes them slower than that. v1 has only the wall time: all of
//!   it is compute.
//! * **MPI call** (`comm_ns`, no memory traffic): the call's wall time (a
//!   scenario may drop it, `drop_calls`). The simulator's phase
//!   *ends* with its call, the recording's phase *begins* with one, so
//!   phase `k`'s call is the call recorded at the start of phase `k + 1`
//!   (for the last phase, the first phase's, cyclically: the call that
//!   ended the previous iteration).

use crate::config::phased::{AccessSpec, ObjectSpec, PhaseSpec, PhasedProgram};
use crate::config::Pattern;
use crate::error::SimError;

/// First line of a version-1 recording.
pub const HEADER_V1: &str = "# memtamer-phase-profile v1";
/// First line of a version-2 recording.
pub const HEADER_V2: &str = "# memtamer-phase-profile v2";

/// Where and how a recording was made (version 2's `rank`, `iteration` and
/// `sampler` records; `None` when a record is absent).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RecordingMeta {
    /// Format version (1 or 2).
    pub version: u32,
    /// `(rank, size)` in `MPI_COMM_WORLD`.
    pub rank: Option<(u64, u64)>,
    /// The profiled iteration (1-based).
    pub iteration: Option<u64>,
    /// Sampler period (ns), pages per object per tick, page and line bytes.
    pub sampler: Option<[u64; 4]>,
}

/// Parses a recording into a program of `iterations` iterations. Errors
/// name the file and the 1-based line.
pub fn parse_profile(file: &str, text: &str, iterations: u32) -> Result<PhasedProgram, SimError> {
    parse_recording(file, text, iterations).map(|(p, _)| p)
}

/// [`parse_profile`], also returning what the file says about its origin.
pub fn parse_recording(
    file: &str,
    text: &str,
    iterations: u32,
) -> Result<(PhasedProgram, RecordingMeta), SimError> {
    let err = |line: usize, m: String| SimError::Invalid {
        file: file.to_string(),
        line,
        key: "profile".into(),
        message: m,
    };
    let mut lines = text.lines().enumerate();
    let version = match lines.next().map(|(_, l)| l.trim()) {
        Some(HEADER_V1) => 1,
        Some(HEADER_V2) => 2,
        _ => {
            return Err(err(
                1,
                format!("first line must be `{HEADER_V2}` (or `{HEADER_V1}`)"),
            ))
        }
    };
    let mut meta = RecordingMeta {
        version,
        ..Default::default()
    };
    let mut objects: Vec<ObjectSpec> = Vec::new();
    let mut phases: Vec<PhaseSpec> = Vec::new();
    // Per phase, the call that began it (ns).
    let mut calls: Vec<f64> = Vec::new();
    for (i, l) in lines {
        let line = i + 1;
        let l = l.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let f: Vec<&str> = l.split_whitespace().collect();
        let num = |s: &str| -> Result<u64, SimError> {
            s.parse::<u64>()
                .map_err(|_| err(line, format!("`{s}` is not a whole number")))
        };
        let v2_only = |what: &str| -> Result<(), SimError> {
            if version < 2 {
                Err(err(line, format!("`{what}` needs format v2")))
            } else {
                Ok(())
            }
        };
        let body_started = !objects.is_empty() || !phases.is_empty();
        let header_record = |what: &str| -> Result<(), SimError> {
            v2_only(what)?;
            if body_started {
                return Err(err(line, format!("`{what}` must come before the objects")));
            }
            Ok(())
        };
        match f.as_slice() {
            ["rank", r, n] => {
                header_record("rank")?;
                let (r, n) = (num(r)?, num(n)?);
                if r >= n {
                    return Err(err(line, format!("rank {r} is not below the size {n}")));
                }
                meta.rank = Some((r, n));
            }
            ["iteration", k] => {
                header_record("iteration")?;
                meta.iteration = Some(num(k)?);
            }
            ["sampler", t, p, pb, lb] => {
                header_record("sampler")?;
                let s = [num(t)?, num(p)?, num(pb)?, num(lb)?];
                if s[3] == 0 || s[3] > 4096 {
                    return Err(err(line, "line bytes must be in 1..=4096".into()));
                }
                meta.sampler = Some(s);
            }
            ["object", name, bytes] => {
                if !phases.is_empty() {
                    return Err(err(line, "objects must come before the phases".into()));
                }
                if objects.iter().any(|o| o.name == *name) {
                    return Err(err(line, format!("object {name} named twice")));
                }
                let bytes = num(bytes)?;
                if bytes == 0 {
                    return Err(err(line, format!("object {name} has 0 bytes")));
                }
                objects.push(ObjectSpec {
                    name: name.to_string(),
                    bytes,
                });
            }
            ["phase", name, ns] if version == 1 => {
                phases.push(phase(name, num(ns)?));
                calls.push(0.0);
            }
            ["phase", name, ns, call, cpu, call_cpu] if version >= 2 => {
                let (ns, call, cpu, call_cpu) = (num(ns)?, num(call)?, num(cpu)?, num(call_cpu)?);
                if call > ns {
                    return Err(err(
                        line,
                        format!("call time {call} ns exceeds the phase's {ns} ns"),
                    ));
                }
                if call_cpu > cpu {
                    return Err(err(
                        line,
                        format!("call CPU time {call_cpu} ns exceeds the phase's {cpu} ns"),
                    ));
                }
                phases.push(phase(name, cpu - call_cpu));
                calls.push(call as f64);
            }
            ["access", obj, n, rest @ ..] if rest.len() == usize::from(version >= 2) => {
                if let Some(s) = rest.first() {
                    num(s)?; // the samples: checked, not used by the replay
                }
                let line_bytes = meta.sampler.map_or(64, |s| s[3]);
                let p = phases
                    .last_mut()
                    .ok_or_else(|| err(line, "access before any phase".into()))?;
                if !objects.iter().any(|o| o.name == *obj) {
                    return Err(err(line, format!("unknown object {obj}")));
                }
                p.access.push(AccessSpec {
                    object: obj.to_string(),
                    bytes: num(n)?.saturating_mul(line_bytes),
                    pattern: Pattern::Seq,
                    write_fraction: 0.0,
                    dependent: false,
                });
            }
            _ => {
                return Err(err(
                    line,
                    format!("cannot read `{l}` as a v{version} record"),
                ))
            }
        }
    }
    let n = phases.len();
    for (k, p) in phases.iter_mut().enumerate() {
        p.comm_ns = calls[(k + 1) % n];
    }
    let p = PhasedProgram {
        objects,
        phases,
        iterations,
    };
    p.validate().map_err(|(k, m)| err(0, format!("{k}: {m}")))?;
    Ok((p, meta))
}

/// A recorded phase with `compute_ns` of computation (call set later).
fn phase(name: &str, compute_ns: u64) -> PhaseSpec {
    PhaseSpec {
        name: name.to_string(),
        compute_ns: compute_ns as f64,
        comm_ns: 0.0,
        access: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(text: &str) -> String {
        parse_profile("rec", text, 2).unwrap_err().to_string()
    }

    const V2: &str =
        "# memtamer-phase-profile v2\nrank 1 4\niteration 1\nsampler 1000000 16 4096 64\n\
        object a 8192\nobject b 4096\n\
        phase phase0 1000 0 800 0\naccess a 128 16\n\
        phase phase1 50000 20000 31000 1000\naccess a 128 3\naccess b 4 1\n\
        phase phase2 9000 4000 6000 1000\n";

    #[test]
    fn v2_splits_calls_from_compute_and_moves_them_to_the_phase_they_end() {
        let (p, m) = parse_recording("rec", V2, 3).unwrap();
        assert_eq!(m.version, 2);
        assert_eq!(m.rank, Some((1, 4)));
        assert_eq!(m.iteration, Some(1));
        assert_eq!(m.sampler, Some([1_000_000, 16, 4096, 64]));
        assert_eq!(p.iterations, 3);
        let c: Vec<(f64, f64)> = p.phases.iter().map(|x| (x.compute_ns, x.comm_ns)).collect();
        // phase k's comm = the call that began phase k + 1 (cyclic)
        assert_eq!(c, vec![(800.0, 20000.0), (30000.0, 4000.0), (5000.0, 0.0)]);
        assert_eq!(p.phases[1].access[1].bytes, 4 * 64);
        assert!(p.phases[1]
            .access
            .iter()
            .all(|a| a.pattern == Pattern::Seq && a.write_fraction == 0.0));
    }

    #[test]
    fn v2_line_bytes_come_from_the_sampler_record() {
        let t = V2.replace("4096 64\n", "4096 128\n");
        let p = parse_profile("rec", &t, 1).unwrap();
        assert_eq!(p.phases[0].access[0].bytes, 128 * 128);
    }

    #[test]
    fn v1_still_reads_all_time_as_compute() {
        let p = parse_profile(
            "rec",
            "# memtamer-phase-profile v1\nobject a 8192\nphase spmv 50000\naccess a 128\n",
            5,
        )
        .unwrap();
        assert_eq!(p.phases[0].compute_ns, 50000.0);
        assert_eq!(p.phases[0].comm_ns, 0.0);
        assert_eq!(p.phases[0].access[0].bytes, 128 * 64);
    }

    #[test]
    fn bad_lines_are_named() {
        let h = "# memtamer-phase-profile v2\n";
        let cases: &[(&str, &str, &str)] = &[
            ("object a 8192\naccess a 1 1\n", "rec:3", "before any phase"),
            (
                "object a 8192\nphase x 5 0 5 0\naccess zz 1 1\n",
                "rec:4",
                "unknown object zz",
            ),
            ("object a 8192\nobject a 4096\n", "rec:3", "named twice"),
            ("object a 0\n", "rec:2", "0 bytes"),
            ("object a 12k\n", "rec:2", "`12k` is not a whole number"),
            (
                "object a 8192\nphase x 5 9 5 0\n",
                "rec:3",
                "call time 9 ns exceeds",
            ),
            (
                "object a 8192\nphase x 5 0 5 6\n",
                "rec:3",
                "call CPU time 6 ns exceeds",
            ),
            (
                "object a 8192\nphase x 5 0\n",
                "rec:3",
                "cannot read `phase x 5 0` as a v2",
            ),
            (
                "object a 8192\nphase x 5 0 5 0\naccess a 1\n",
                "rec:4",
                "cannot read",
            ),
            ("object a 8192\nrank 0 4\n", "rec:3", "before the objects"),
            ("rank 4 4\n", "rec:2", "not below the size"),
            ("sampler 1 1 4096 0\n", "rec:2", "line bytes"),
            (
                "object a 8192\nphase x 5 0 5 0\nobject b 1\n",
                "rec:4",
                "before the phases",
            ),
            ("bogus\n", "rec:2", "cannot read `bogus`"),
        ];
        for (body, at, what) in cases {
            let m = e(&format!("{h}{body}"));
            assert!(m.contains(at) && m.contains(what), "{body:?}: {m}");
        }
        for bad in ["nope\n", ""] {
            let m = e(bad);
            assert!(m.contains("rec:1") && m.contains(HEADER_V2), "{bad:?}: {m}");
        }
        let v1 = "# memtamer-phase-profile v1\n";
        let m = e(&format!("{v1}rank 0 1\n"));
        assert!(m.contains("rec:2") && m.contains("needs format v2"), "{m}");
        let m = e(&format!("{v1}object a 64\nphase x 5 0\n"));
        assert!(m.contains("rec:3") && m.contains("as a v1"), "{m}");
        // a file with objects and no phases: the program's own check
        let m = e(&format!("{h}object a 64\n"));
        assert!(m.contains("phases"), "{m}");
    }
}
