//! Whether the helper thread has a CPU of its own on this node: the input
//! of [`CopyOverlap`] (the pure rule, [`CopyOverlap::of_node`]), read from
//! the OS and the MPI interposer here, and how the report spells it.
//!
//! Why: the thesis's Eq. 3.3 credits a copy with the computation it runs
//! beside (Fig. 3.5). With 4 MPI ranks on this 2-CPU VM, MG under Unimem
//! ran 2.2-2.4x of Unimem off: a rank's local plan copied 272 MB per run
//! that the model had counted as hidden, while the copy thread ran in a
//! rank's place (docs/unimem.md, "Quiet-host MG after the merges"). When
//! the node's ranks fill its CPUs, copies are charged in full instead.

use crate::unimem::model::CopyOverlap;
use crate::TierError;

/// What decides [`CopyOverlap`] for this process, and how it was set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HelperCpu {
    /// Ranks on this node (the interposer's `MPI_COMM_TYPE_SHARED`
    /// communicator, the one the node's DRAM budget is split over); 0:
    /// unknown (outside MPI: one process).
    pub node_ranks: u32,
    /// CPUs this process may run on (`sched_getaffinity`, else the online
    /// CPUs); 0: unknown.
    pub cpus: u32,
    /// `MEMTAMER_COPIES_EXPOSED`: `None` for `auto` (the rule), else the
    /// answer it forces.
    pub forced: Option<CopyOverlap>,
}

impl Default for HelperCpu {
    /// Nothing known, nothing forced: the thesis's overlap.
    fn default() -> Self {
        HelperCpu {
            node_ranks: 0,
            cpus: 0,
            forced: None,
        }
    }
}

impl HelperCpu {
    /// The decisions' input: what was forced, else the node rule.
    pub fn overlap(&self) -> CopyOverlap {
        self.forced
            .unwrap_or_else(|| CopyOverlap::of_node(self.node_ranks, self.cpus))
    }

    /// The report's tokens: `copies_exposed X node_ranks N cpus M`, `X`
    /// being `no` (copies overlapped), `oversubscribed` (the rule charged
    /// them in full: ranks >= CPUs) or `forced` (`MEMTAMER_COPIES_EXPOSED=1`).
    pub fn token(&self) -> String {
        format!(
            "copies_exposed {} node_ranks {} cpus {}",
            self.why(),
            self.node_ranks,
            self.cpus
        )
    }

    /// `no`, `oversubscribed` or `forced` (see [`Self::token`]).
    pub fn why(&self) -> &'static str {
        match (self.overlap(), self.forced) {
            (CopyOverlap::Overlapped, _) => "no",
            (CopyOverlap::Exposed, None) => "oversubscribed",
            (CopyOverlap::Exposed, Some(_)) => "forced",
        }
    }
}

/// `MEMTAMER_COPIES_EXPOSED`: unset, empty or `auto`: the node rule;
/// `1`/`on`: every copy charged in full; `0`/`off`: the thesis's overlap
/// whatever the node (for comparisons). Anything else is refused by name.
pub fn forced_from_env() -> Result<Option<CopyOverlap>, TierError> {
    const KEY: &str = "MEMTAMER_COPIES_EXPOSED";
    match std::env::var(KEY) {
        Err(_) => Ok(None),
        Ok(v) => parse_forced(&v).ok_or_else(|| TierError::BadEnv {
            key: KEY,
            value: v.clone(),
            why: "expected auto (ranks on the node >= its CPUs), 1/on (always) or 0/off (never)"
                .into(),
        }),
    }
}

/// [`forced_from_env`]'s parser: `Some(answer)` for a valid spelling.
pub fn parse_forced(v: &str) -> Option<Option<CopyOverlap>> {
    match v.trim() {
        "" | "auto" => Some(None),
        "1" | "on" => Some(Some(CopyOverlap::Exposed)),
        "0" | "off" => Some(Some(CopyOverlap::Overlapped)),
        _ => None,
    }
}

/// CPUs this process may run on: its affinity mask's count, else the
/// online CPUs, else 0 (unknown).
pub fn available_cpus() -> u32 {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; the call writes at
    // most size_of::<cpu_set_t>() bytes into it.
    let n = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0 {
            libc::CPU_COUNT(&set)
        } else {
            0
        }
    };
    if n > 0 {
        return n as u32;
    }
    // SAFETY: sysconf has no memory effects.
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    u32::try_from(online).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule_unless_forced() {
        let h = |node_ranks, cpus, forced| HelperCpu {
            node_ranks,
            cpus,
            forced,
        };
        assert_eq!(h(4, 2, None).overlap(), CopyOverlap::Exposed);
        assert_eq!(h(4, 2, None).why(), "oversubscribed");
        assert_eq!(
            h(4, 2, None).token(),
            "copies_exposed oversubscribed node_ranks 4 cpus 2"
        );
        assert_eq!(h(1, 2, None).why(), "no");
        let off = h(4, 2, Some(CopyOverlap::Overlapped));
        assert_eq!((off.overlap(), off.why()), (CopyOverlap::Overlapped, "no"));
        let on = h(1, 2, Some(CopyOverlap::Exposed));
        assert_eq!((on.overlap(), on.why()), (CopyOverlap::Exposed, "forced"));
        assert_eq!(HelperCpu::default().overlap(), CopyOverlap::Overlapped);
    }

    #[test]
    fn spellings() {
        assert_eq!(parse_forced(""), Some(None));
        assert_eq!(parse_forced(" auto "), Some(None));
        assert_eq!(parse_forced("on"), Some(Some(CopyOverlap::Exposed)));
        assert_eq!(parse_forced("0"), Some(Some(CopyOverlap::Overlapped)));
        assert_eq!(parse_forced("yes"), None);
    }

    #[test]
    fn this_process_runs_somewhere() {
        assert!(available_cpus() >= 1);
    }
}
