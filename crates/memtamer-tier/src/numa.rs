//! Finding the slow tier: a CPU-less NUMA node (Optane in memory mode as a
//! NUMA node, CXL memory) is what Linux memory tiering uses; where the host has
//! none, the slow tier falls back to a file-backed mapping (see `backing`).
//!
//! The decision is a pure function of the sysfs text ([`slow_nodes`]) so it is
//! tested on made-up topologies; [`read_nodes`] is the thin reader.

use std::path::Path;

/// One NUMA node as sysfs describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeInfo {
    /// Node number (`nodeN`).
    pub id: u32,
    /// CPUs of the node; empty for a CPU-less (memory-only) node.
    pub cpus: Vec<u32>,
    /// Total memory of the node in bytes (`meminfo` MemTotal).
    pub mem_bytes: u64,
}

/// Parses a sysfs cpulist such as `0-3,8,10-11` (empty string: no CPUs).
pub fn parse_cpulist(s: &str) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                if b < a {
                    return None;
                }
                out.extend(a..=b);
            }
            None => out.push(part.trim().parse().ok()?),
        }
    }
    Some(out)
}

/// Parses the `MemTotal` line of a node's `meminfo` (`Node 0 MemTotal: 123 kB`).
pub fn parse_node_memtotal(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.contains("MemTotal:"))?;
    let kb: u64 = line.split_whitespace().rev().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Nodes that have memory but no CPU: the slow-tier candidates, as Linux's
/// memory-tiering code classifies them (CPU-less nodes get a lower tier).
pub fn slow_nodes(nodes: &[NodeInfo]) -> Vec<u32> {
    nodes
        .iter()
        .filter(|n| n.cpus.is_empty() && n.mem_bytes > 0)
        .map(|n| n.id)
        .collect()
}

/// Reads every `nodeN` under `root` (normally `/sys/devices/system/node`).
/// A node whose files cannot be read is skipped, never invented.
pub fn read_nodes(root: &Path) -> Vec<NodeInfo> {
    let Ok(dir) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut nodes: Vec<NodeInfo> = dir
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let id: u32 = name.strip_prefix("node")?.parse().ok()?;
            let cpus = parse_cpulist(&std::fs::read_to_string(e.path().join("cpulist")).ok()?)?;
            let mem_bytes =
                parse_node_memtotal(&std::fs::read_to_string(e.path().join("meminfo")).ok()?)?;
            Some(NodeInfo {
                id,
                cpus,
                mem_bytes,
            })
        })
        .collect();
    nodes.sort_by_key(|n| n.id);
    nodes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpulist_forms() {
        assert_eq!(parse_cpulist("0-1"), Some(vec![0, 1]));
        assert_eq!(parse_cpulist("0-2,5,7-8\n"), Some(vec![0, 1, 2, 5, 7, 8]));
        assert_eq!(parse_cpulist("\n"), Some(vec![]));
        assert_eq!(parse_cpulist("3-1"), None);
        assert_eq!(parse_cpulist("x"), None);
    }

    #[test]
    fn memtotal_line() {
        let m = "Node 2 MemTotal:       16384 kB\nNode 2 MemFree: 1 kB\n";
        assert_eq!(parse_node_memtotal(m), Some(16384 * 1024));
        assert_eq!(parse_node_memtotal("nothing"), None);
    }

    #[test]
    fn cpuless_nodes_with_memory_are_slow() {
        let n = |id, cpus: Vec<u32>, mem| NodeInfo {
            id,
            cpus,
            mem_bytes: mem,
        };
        let topo = vec![
            n(0, vec![0, 1], 1 << 30),
            n(1, vec![], 4 << 30),
            n(2, vec![], 0), // memory-less, CPU-less: offline leftover
            n(3, vec![2], 1 << 30),
        ];
        assert_eq!(slow_nodes(&topo), vec![1]);
        assert!(slow_nodes(&topo[..1]).is_empty());
    }

    #[test]
    fn this_host_reads_without_error() {
        // Whatever the host has, every node read has a parseable cpulist;
        // a host with one node has no slow node.
        let nodes = read_nodes(Path::new("/sys/devices/system/node"));
        if nodes.len() == 1 {
            assert!(slow_nodes(&nodes).is_empty() || nodes[0].cpus.is_empty());
        }
        assert!(read_nodes(Path::new("/nonexistent")).is_empty());
    }
}
