//! Whether the helper thread has a CPU of its own on this node: the input
//! of [`CopyOverlap`] (the pure rule, [`CopyOverlap::of_node`]), read from
//! the OS and the MPI interposer here, and how the report spells it.
//!
//! Why: the thesis's Eq. 3.3 credits a copy with the computation it runs
//! beside (Fig. 3.5). With 4 MPI ranks on this 2-CPU VM, MG under Unimem
//! ran 2.2-2.4x of Unimem off: a rank's local plan copied 272 MB per run
//! that the model had counted as hidden, while the copy thread ran in a
//! rank's place (docs/notebook/unimem.md, "Quiet-host MG after the merges"). When
//! the node's ranks fill its CPUs, copies are charged in full instead.

use crate::unimem::model::CopyOverlap;
use crate::TierError;

/// What decides [`CopyOverlap`] for this process, and how it was set.
/// The default (nothing known, nothing forced) is the thesis's overlap.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HelperCpu {
    /// Ranks competing for this process's CPUs: with the node's affinity
    /// masks known ([`Sharing`]), the node's ranks whose masks meet this
    /// one's; else every rank on the node (the interposer's
    /// `MPI_COMM_TYPE_SHARED` communicator, the one the node's DRAM budget
    /// is split over); 0: unknown (outside MPI: one process).
    pub node_ranks: u32,
    /// CPUs those ranks may run on: with the node's masks known, their
    /// union; else this process's own count (`sched_getaffinity`, else the
    /// online CPUs); 0: unknown.
    pub cpus: u32,
    /// Whether `node_ranks` and `cpus` come from the node's affinity
    /// masks ([`sharing`]) rather than the node's rank count and this
    /// process's own mask.
    pub from_node_masks: bool,
    /// `MEMTAMER_COPIES_EXPOSED`: `None` for `auto` (the rule), else the
    /// answer it forces.
    pub forced: Option<CopyOverlap>,
}

/// The ranks that compete with this one for CPUs and the CPUs they have,
/// from the affinity masks of every rank on the node.
///
/// Why: counting every rank of the node against this rank's own CPUs
/// charges copies in full when ranks are bound to disjoint CPU sets with a
/// CPU to spare in each (`mpirun --map-by core:PE=2`, 4 ranks on 8 CPUs:
/// 4 ranks >= 2 CPUs said "no CPU for the helper"), while the helper thread
/// inherits its rank's mask and runs on the spare CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sharing {
    /// Ranks whose masks meet this rank's (itself included; a rank whose
    /// mask is unknown, all zero, counts as meeting every mask).
    pub ranks: u32,
    /// CPUs in the union of those masks.
    pub cpus: u32,
}

/// [`Sharing`] for rank `me` of the node, `masks[i]` being node rank
/// `i`'s affinity mask as bytes (bit `c % 8` of byte `c / 8` set when the
/// rank may run on CPU `c`, as `cpu_set_t` lays it out on Linux). `None`
/// when `me` is out of range or its own mask is empty (unknown): the
/// caller keeps the node-wide count.
///
/// Only masks that meet this rank's count: a rank on other CPUs takes none
/// of this rank's time, even if it shares CPUs with a rank that does.
pub fn sharing(masks: &[&[u8]], me: usize) -> Option<Sharing> {
    let mine = *masks.get(me)?;
    if mine.iter().all(|&b| b == 0) {
        return None;
    }
    let width = masks.iter().map(|m| m.len()).max().unwrap_or(0);
    let mut union = vec![0u8; width];
    let mut ranks = 0u32;
    for m in masks {
        let unknown = m.iter().all(|&b| b == 0);
        let meets = m.iter().zip(mine).any(|(a, b)| a & b != 0);
        if unknown || meets {
            ranks += 1;
            for (u, b) in union.iter_mut().zip(m.iter()) {
                *u |= b;
            }
        }
    }
    Some(Sharing {
        ranks,
        cpus: union.iter().map(|b| b.count_ones()).sum(),
    })
}

impl HelperCpu {
    /// The decisions' input: what was forced, else the node rule.
    pub fn overlap(&self) -> CopyOverlap {
        self.forced
            .unwrap_or_else(|| CopyOverlap::of_node(self.node_ranks, self.cpus))
    }

    /// With the node's affinity masks ([`sharing`]) in place of the
    /// node-wide rank count and this process's own CPU count.
    pub fn with_sharing(self, s: Option<Sharing>) -> Self {
        match s {
            Some(s) => HelperCpu {
                node_ranks: s.ranks,
                cpus: s.cpus,
                from_node_masks: true,
                ..self
            },
            None => self,
        }
    }

    /// The report's tokens: `copies_exposed X node_ranks N cpus M
    /// cpus_from F`, `X` being `no` (copies overlapped), `oversubscribed`
    /// (the rule charged them in full: ranks >= CPUs) or `forced`
    /// (`MEMTAMER_COPIES_EXPOSED=1`), `F` being `node` (the ranks whose
    /// affinity masks meet this one's and their union) or `own` (every rank
    /// of the node against this process's mask).
    pub fn token(&self) -> String {
        format!(
            "copies_exposed {} node_ranks {} cpus {} cpus_from {}",
            self.why(),
            self.node_ranks,
            self.cpus,
            self.cpus_from()
        )
    }

    /// `node` or `own` (see [`Self::token`]).
    pub fn cpus_from(&self) -> &'static str {
        if self.from_node_masks {
            "node"
        } else {
            "own"
        }
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
            from_node_masks: false,
            forced,
        };
        assert_eq!(h(4, 2, None).overlap(), CopyOverlap::Exposed);
        assert_eq!(h(4, 2, None).why(), "oversubscribed");
        assert_eq!(
            h(4, 2, None).token(),
            "copies_exposed oversubscribed node_ranks 4 cpus 2 cpus_from own"
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

    /// One byte per 8 CPUs; `mask(&[0, 1])` is a mask of CPUs 0 and 1.
    fn mask(cpus: &[usize]) -> Vec<u8> {
        let mut m = vec![0u8; 2];
        for &c in cpus {
            m[c / 8] |= 1 << (c % 8);
        }
        m
    }

    #[test]
    fn ranks_bound_to_disjoint_sets_with_a_spare_cpu_overlap() {
        // 4 ranks on 8 CPUs, 2 each (`--map-by core:PE=2`): the node-wide
        // rule said exposed (4 >= 2); each rank has a spare CPU
        let m: Vec<Vec<u8>> = (0..4).map(|r| mask(&[2 * r, 2 * r + 1])).collect();
        let v: Vec<&[u8]> = m.iter().map(|x| x.as_slice()).collect();
        let s = sharing(&v, 1).unwrap();
        assert_eq!(s, Sharing { ranks: 1, cpus: 2 });
        let h = HelperCpu {
            node_ranks: 4,
            cpus: 2,
            ..Default::default()
        };
        assert_eq!(h.overlap(), CopyOverlap::Exposed);
        let h = h.with_sharing(Some(s));
        assert_eq!(h.overlap(), CopyOverlap::Overlapped);
        assert_eq!(
            h.token(),
            "copies_exposed no node_ranks 1 cpus 2 cpus_from node"
        );
    }

    #[test]
    fn unbound_ranks_share_every_cpu() {
        // this VM's MG: 4 unbound ranks on 2 CPUs
        let m: Vec<Vec<u8>> = (0..4).map(|_| mask(&[0, 1])).collect();
        let v: Vec<&[u8]> = m.iter().map(|x| x.as_slice()).collect();
        for me in 0..4 {
            assert_eq!(sharing(&v, me), Some(Sharing { ranks: 4, cpus: 2 }));
        }
        // one rank per CPU (`--bind-to core`): the helper shares its rank's
        let m = [mask(&[0]), mask(&[1])];
        let v: Vec<&[u8]> = m.iter().map(|x| x.as_slice()).collect();
        let s = sharing(&v, 0).unwrap();
        assert_eq!(s, Sharing { ranks: 1, cpus: 1 });
        assert_eq!(
            HelperCpu::default().with_sharing(Some(s)).overlap(),
            CopyOverlap::Exposed
        );
    }

    #[test]
    fn partial_overlaps_and_unknown_masks() {
        // A {0,1}, B {1,2}, C {2,3}: A competes with B only (3 CPUs, 2
        // ranks); B with both (4 CPUs, 3 ranks)
        let m = [mask(&[0, 1]), mask(&[1, 2]), mask(&[2, 3])];
        let v: Vec<&[u8]> = m.iter().map(|x| x.as_slice()).collect();
        assert_eq!(sharing(&v, 0), Some(Sharing { ranks: 2, cpus: 3 }));
        assert_eq!(sharing(&v, 1), Some(Sharing { ranks: 3, cpus: 4 }));
        // a rank whose mask is unknown (all zero) counts against everyone
        let m = [mask(&[0, 1]), mask(&[]), mask(&[2, 3])];
        let v: Vec<&[u8]> = m.iter().map(|x| x.as_slice()).collect();
        assert_eq!(sharing(&v, 0), Some(Sharing { ranks: 2, cpus: 2 }));
        // this rank's own mask unknown, or out of range: keep the old rule
        assert_eq!(sharing(&v, 1), None);
        assert_eq!(sharing(&v, 3), None);
        assert_eq!(sharing(&[], 0), None);
        assert_eq!(
            HelperCpu::default().with_sharing(None),
            HelperCpu::default()
        );
        // masks of different lengths
        let a = mask(&[9]);
        let b = [0b10u8];
        assert_eq!(sharing(&[&a, &b], 1), Some(Sharing { ranks: 1, cpus: 1 }));
    }
}
