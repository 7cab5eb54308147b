//! The simulated platform's CPUs as the policies' topology facts.
//!
//! The engine numbers logical CPUs as Linux does: CPUs `0..cores` are the
//! first hardware thread of each core (socket 0's cores first), and with SMT2
//! CPU `c + cores` is the sibling of CPU `c`. Each socket is one NUMA node
//! with one last-level cache shared by all its CPUs.

use crate::config::Platform;
use memtamer_core::topology::CpuFacts;
use memtamer_core::CpuSet;

/// Describes every logical CPU of `platform` in the engine's numbering:
/// `node` is its socket, `llc` every CPU of that socket, `smt` the CPU and
/// its sibling (itself alone without SMT). CPUs beyond what a [`CpuSet`] can
/// hold are left out (platform validation rejects such platforms).
pub fn platform_cpu_facts(platform: &Platform) -> Vec<CpuFacts> {
    let c = &platform.cpu;
    let ncores = c.sockets * c.cores_per_socket;
    let ncpus = (ncores * c.threads_per_core).min(memtamer_core::cpuset::MAX_CPUS as u32);
    let core_of = |cpu: u32| cpu % ncores.max(1);
    let socket_of = |cpu: u32| core_of(cpu) / c.cores_per_socket.max(1);
    let mut sockets = vec![CpuSet::empty(); c.sockets as usize];
    for cpu in 0..ncpus {
        if let Some(set) = sockets.get_mut(socket_of(cpu) as usize) {
            set.insert(cpu as usize);
        }
    }
    (0..ncpus)
        .map(|cpu| {
            let mut smt = CpuSet::empty();
            for t in 0..c.threads_per_core {
                let sibling = core_of(cpu) + t * ncores;
                if sibling < ncpus {
                    smt.insert(sibling as usize);
                }
            }
            let node = socket_of(cpu);
            CpuFacts {
                cpu,
                node,
                llc: sockets.get(node as usize).copied().unwrap_or(smt),
                smt,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::load_platform;
    use memtamer_core::topology::Topology;

    #[test]
    fn ahn_is_two_nodes_of_one_llc_and_sixteen_smt2_cores() {
        let p = load_platform("ahn", &Default::default()).unwrap();
        let facts = platform_cpu_facts(&p);
        assert_eq!(facts.len(), 64);
        let t = Topology::build(&facts, &[]).unwrap();
        assert_eq!(t.nodes.len(), 2);
        for (i, n) in t.nodes.iter().enumerate() {
            assert_eq!(n.node, i as u32);
            assert_eq!(n.cpus.len(), 32);
            assert_eq!(n.llcs.len(), 1);
            assert_eq!(n.llcs[0].cores.len(), 16);
            assert!(n.llcs[0].cores.iter().all(|c| c.cpus.len() == 2));
        }
        // the engine's numbering: CPU c + 32 is the sibling of c, cores 0..15 on socket 0
        let f = &facts[1];
        assert_eq!(f.smt.iter().collect::<Vec<_>>(), vec![1, 33]);
        assert_eq!(facts[15].node, 0);
        assert_eq!(facts[16].node, 1);
        assert_eq!(facts[47].node, 0);
        assert_eq!(facts[48].node, 1);
    }

    #[test]
    fn a_platform_without_smt_has_one_cpu_per_core() {
        let p = load_platform("pats", &Default::default()).unwrap();
        let mut p = p;
        p.cpu.threads_per_core = 1;
        let facts = platform_cpu_facts(&p);
        let t = Topology::build(&facts, &[]).unwrap();
        assert_eq!(t.nodes.len(), p.cpu.sockets as usize);
        assert!(t.nodes[0].llcs[0].cores.iter().all(|c| c.cpus.len() == 1));
    }
}
