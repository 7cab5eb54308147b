//! The recorded per-phase object profile, format `memtamer-phase-profile v1`
//! (issue 20 item 5: the simulator's phased scenarios can take a profile
//! recorded by the MPI runtime instead of a hand-written program; the
//! simulator's `tier_eval::parse_profile` reads it back):
//!
//! ```text
//! # memtamer-phase-profile v1
//! object NAME BYTES
//! phase NAME TIME_NS            one phase of the profiled iteration, its wall time
//! access OBJECT LINES           main-memory lines of OBJECT in the phase above
//! ```

use super::model::PhaseProfile;
use std::fmt::Write;

/// Writes `phases` (object ids index `names` and `sizes`) in the format
/// above. Phases are named `phaseN`; names with white space get `_`.
pub fn format_profile(names: &[String], sizes: &[u64], phases: &[PhaseProfile]) -> String {
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
    let mut out = String::from("# memtamer-phase-profile v1\n");
    for (n, s) in names.iter().zip(sizes) {
        let _ = writeln!(out, "object {} {s}", clean(n));
    }
    for (i, p) in phases.iter().enumerate() {
        let _ = writeln!(
            out,
            "phase phase{i} {}",
            (p.time * 1e9).round().max(0.0) as u64
        );
        for (&o, a) in &p.objs {
            if let Some(n) = names.get(o) {
                let lines = a.accesses.round().max(0.0) as u64;
                if lines > 0 {
                    let _ = writeln!(out, "access {} {lines}", clean(n));
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
    fn writes_objects_phases_and_accesses() {
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
        let t = format_profile(&["a b".into(), "x".into()], &[4096, 8192], &[p]);
        assert_eq!(
            t,
            "# memtamer-phase-profile v1\nobject a_b 4096\nobject x 8192\nphase phase0 1500000\naccess x 100\n"
        );
    }
}
