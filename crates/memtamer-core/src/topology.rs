//! The scheduling-domain tree Ahn et al. place tasks in: NUMA node -> LLC
//! group -> SMT core -> logical CPU. Built from per-CPU facts (sysfs on a
//! host, the platform file in the simulator); NUMA nodes without CPUs (PM
//! or CXL memory as a node) are memory tiers, not scheduling groups.

use serde::Serialize;

use crate::CpuSet;

/// What the OS says about one logical CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuFacts {
    /// Logical CPU.
    pub cpu: u32,
    /// NUMA node.
    pub node: u32,
    /// CPUs sharing its last-level cache (itself included).
    pub llc: CpuSet,
    /// Its SMT siblings (itself included).
    pub smt: CpuSet,
}

/// An SMT core: its logical CPUs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CoreDomain {
    /// Sibling logical CPUs.
    pub cpus: CpuSet,
}

/// A last-level-cache group.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LlcDomain {
    /// Its CPUs.
    pub cpus: CpuSet,
    /// Its cores.
    pub cores: Vec<CoreDomain>,
}

/// A NUMA node with CPUs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NodeDomain {
    /// Node id.
    pub node: u32,
    /// Its CPUs.
    pub cpus: CpuSet,
    /// Its LLC groups.
    pub llcs: Vec<LlcDomain>,
}

/// The whole tree.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Topology {
    /// Scheduling domains, by node id.
    pub nodes: Vec<NodeDomain>,
    /// Nodes with memory but no CPU: memory tiers.
    pub memory_tiers: Vec<u32>,
}

/// Facts that do not form a tree.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TopologyError {
    /// A CPU was described twice.
    #[error("CPU {0} is listed twice")]
    Duplicate(u32),
    /// A CPU's sibling or cache set does not contain it, or crosses a level.
    #[error("CPU {cpu}: {what}")]
    Inconsistent {
        /// The CPU.
        cpu: u32,
        /// What does not fit.
        what: &'static str,
    },
    /// No CPU at all.
    #[error("no CPU described")]
    Empty,
}

impl Topology {
    /// Builds the tree. Each CPU's SMT set must lie in its LLC set and its
    /// LLC set in its node; a node listed in `memory_nodes` without CPUs is
    /// a memory tier.
    pub fn build(cpus: &[CpuFacts], memory_nodes: &[u32]) -> Result<Topology, TopologyError> {
        if cpus.is_empty() {
            return Err(TopologyError::Empty);
        }
        let mut seen = CpuSet::default();
        for f in cpus {
            if seen.contains(f.cpu as usize) {
                return Err(TopologyError::Duplicate(f.cpu));
            }
            seen.insert(f.cpu as usize);
        }
        let node_cpus = |node: u32| {
            let mut set = CpuSet::default();
            for f in cpus.iter().filter(|f| f.node == node) {
                set.insert(f.cpu as usize);
            }
            set
        };
        let mut node_ids: Vec<u32> = cpus.iter().map(|f| f.node).collect();
        node_ids.sort_unstable();
        node_ids.dedup();
        let mut nodes = Vec::new();
        for node in node_ids {
            let ncpus = node_cpus(node);
            let mut llcs: Vec<LlcDomain> = Vec::new();
            for f in cpus.iter().filter(|f| f.node == node) {
                let inconsistent = |what| TopologyError::Inconsistent { cpu: f.cpu, what };
                if !f.smt.contains(f.cpu as usize) || !f.llc.contains(f.cpu as usize) {
                    return Err(inconsistent("its own SMT or LLC set does not contain it"));
                }
                if f.smt.intersect(&f.llc) != f.smt {
                    return Err(inconsistent("SMT siblings outside its LLC"));
                }
                // an LLC may list CPUs that are offline: keep the online ones
                let llc = f.llc.intersect(&ncpus);
                let smt = f.smt.intersect(&ncpus);
                let group = match llcs.iter_mut().find(|l| l.cpus == llc) {
                    Some(g) => g,
                    None => {
                        if llcs.iter().any(|l| !l.cpus.intersect(&llc).is_empty()) {
                            return Err(inconsistent("LLC groups overlap"));
                        }
                        llcs.push(LlcDomain {
                            cpus: llc,
                            cores: Vec::new(),
                        });
                        llcs.last_mut().ok_or(TopologyError::Empty)?
                    }
                };
                if !group.cores.iter().any(|c| c.cpus == smt) {
                    if group
                        .cores
                        .iter()
                        .any(|c| !c.cpus.intersect(&smt).is_empty())
                    {
                        return Err(inconsistent("SMT sets overlap"));
                    }
                    group.cores.push(CoreDomain { cpus: smt });
                }
            }
            nodes.push(NodeDomain {
                node,
                cpus: ncpus,
                llcs,
            });
        }
        let mut memory_tiers: Vec<u32> = memory_nodes
            .iter()
            .copied()
            .filter(|n| !nodes.iter().any(|d| d.node == *n))
            .collect();
        memory_tiers.sort_unstable();
        memory_tiers.dedup();
        Ok(Topology {
            nodes,
            memory_tiers,
        })
    }

    /// An indented text view of the tree.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for n in &self.nodes {
            out += &format!("node {} (CPUs {})\n", n.node, n.cpus);
            for l in &n.llcs {
                out += &format!("  LLC {}\n", l.cpus);
                for c in &l.cores {
                    out += &format!("    core {}\n", c.cpus);
                }
            }
        }
        for t in &self.memory_tiers {
            out += &format!("node {t}: memory tier (no CPUs)\n");
        }
        out
    }
}

/// The order in which to hand BE jobs CPUs from `pool`, SMT-aware: whole
/// physical cores, siblings adjacent (a BE job that gets two CPUs gets one
/// core rather than halves of two), node by node and LLC by LLC; cores that
/// share a physical core with an LC CPU come last, because a BE thread on an
/// LC core's sibling competes for its issue slots and L1/L2.
pub fn be_pool_order(topology: &Topology, pool: &CpuSet, lc: &CpuSet) -> Vec<u32> {
    let mut clean = Vec::new();
    let mut shared = Vec::new();
    for node in &topology.nodes {
        for llc in &node.llcs {
            for core in &llc.cores {
                let cpus: Vec<u32> = core
                    .cpus
                    .iter()
                    .filter(|&c| pool.contains(c) && !lc.contains(c))
                    .map(|c| c as u32)
                    .collect();
                if core.cpus.intersect(lc).is_empty() {
                    clean.extend(cpus);
                } else {
                    shared.extend(cpus);
                }
            }
        }
    }
    // CPUs of the pool the topology does not know (offline since) go last
    let known: CpuSet = {
        let mut s = CpuSet::empty();
        for &c in clean.iter().chain(shared.iter()) {
            s.insert(c as usize);
        }
        s
    };
    clean.extend(shared);
    clean.extend(
        pool.iter()
            .filter(|&c| !known.contains(c) && !lc.contains(c))
            .map(|c| c as u32),
    );
    clean
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(list: &str) -> CpuSet {
        CpuSet::parse_list(list).expect("list")
    }

    /// Ahn's machine in small: 2 sockets, one LLC each, SMT2.
    fn two_socket_smt2() -> Vec<CpuFacts> {
        (0..8)
            .map(|cpu| CpuFacts {
                cpu,
                node: cpu / 4,
                llc: if cpu < 4 { set("0-3") } else { set("4-7") },
                smt: set(&format!("{}-{}", cpu & !1, cpu | 1)),
            })
            .collect()
    }

    #[test]
    fn builds_nodes_llcs_and_smt_cores_and_keeps_cpu_less_nodes_as_tiers() {
        let t = Topology::build(&two_socket_smt2(), &[0, 1, 2]).expect("builds");
        assert_eq!(t.nodes.len(), 2);
        assert_eq!(t.nodes[1].cpus, set("4-7"));
        assert_eq!(t.nodes[0].llcs.len(), 1);
        assert_eq!(t.nodes[0].llcs[0].cores.len(), 2);
        assert_eq!(t.nodes[0].llcs[0].cores[1].cpus, set("2-3"));
        assert_eq!(t.memory_tiers, vec![2]);
        assert!(t.render().contains("node 2: memory tier"));
    }

    #[test]
    fn be_pool_gives_whole_cores_and_lc_siblings_last() {
        let t = Topology::build(&two_socket_smt2(), &[]).expect("builds");
        // LC on CPU 2: its sibling 3 goes last, 2 never
        let order = be_pool_order(&t, &set("0-7"), &set("2"));
        assert_eq!(order, vec![0, 1, 4, 5, 6, 7, 3]);
        // only the pool's CPUs, and unknown ones at the end
        let order = be_pool_order(&t, &set("1,4-5,9"), &CpuSet::empty());
        assert_eq!(order, vec![1, 4, 5, 9]);
    }

    #[test]
    fn inconsistent_facts_are_errors_not_trees() {
        let mut f = two_socket_smt2();
        f[1].smt = set("1,4"); // a sibling in the other socket's LLC
        assert!(matches!(
            Topology::build(&f, &[]),
            Err(TopologyError::Inconsistent { cpu: 1, .. })
        ));
        let mut f = two_socket_smt2();
        f.push(f[0]);
        assert_eq!(Topology::build(&f, &[]), Err(TopologyError::Duplicate(0)));
        assert_eq!(Topology::build(&[], &[]), Err(TopologyError::Empty));
        let mut f = two_socket_smt2();
        f[2].llc = set("1-3"); // overlaps the group of CPU 0
        assert!(Topology::build(&f, &[]).is_err());
    }
}
