//! The scheduling-domain tree of this host from sysfs
//! (`/sys/devices/system`): per online CPU its node, its last-level cache's
//! CPUs and its SMT siblings; nodes with memory and no CPU are memory tiers.

use std::path::Path;

use memtamer_core::topology::{CpuFacts, Topology};
use memtamer_core::CpuSet;

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

fn list(path: &Path) -> Result<CpuSet, String> {
    let text = read(path)?;
    CpuSet::parse_list(text.trim()).map_err(|e| format!("{}: {e}", path.display()))
}

/// NUMA nodes with memory and no CPU under `node_root` (normally
/// `/sys/devices/system/node`): PM in KMEM DAX mode or CXL memory onlined as
/// a node, the slow tier that Linux memory tiering also demotes to. A node
/// is memory-only when it is in `has_memory` and its `cpulist` is empty.
/// No `has_memory` file (no NUMA support) means no such node.
pub fn memory_only_nodes(node_root: &Path) -> Result<Vec<u32>, String> {
    let Ok(text) = std::fs::read_to_string(node_root.join("has_memory")) else {
        return Ok(Vec::new());
    };
    let with_memory = CpuSet::parse_list(text.trim())
        .map_err(|e| format!("{}: {e}", node_root.join("has_memory").display()))?;
    let mut out = Vec::new();
    for node in with_memory.iter() {
        if list(&node_root.join(format!("node{node}/cpulist")))?.is_empty() {
            out.push(node as u32);
        }
    }
    Ok(out)
}

/// Reads the tree under `root` (normally `/sys/devices/system`).
pub fn read_topology(root: &Path) -> Result<Topology, String> {
    let online = list(&root.join("cpu/online"))?;
    // node of each CPU, and which nodes have memory
    let mut node_of = vec![None; memtamer_core::cpuset::MAX_CPUS];
    let mut memory_nodes = Vec::new();
    let node_dir = root.join("node");
    if let Ok(entries) = std::fs::read_dir(&node_dir) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            let Some(id) = name
                .strip_prefix("node")
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            for cpu in list(&e.path().join("cpulist"))?.iter() {
                node_of[cpu] = Some(id);
            }
        }
        if let Ok(mem) = list(&node_dir.join("has_memory")) {
            memory_nodes = mem.iter().map(|n| n as u32).collect();
        }
    }
    let mut facts = Vec::new();
    for cpu in online.iter() {
        let dir = root.join(format!("cpu/cpu{cpu}"));
        let smt = list(&dir.join("topology/thread_siblings_list"))?;
        // the highest cache level is the LLC
        let mut llc: Option<(u32, CpuSet)> = None;
        if let Ok(entries) = std::fs::read_dir(dir.join("cache")) {
            for e in entries.flatten() {
                if !e.file_name().to_string_lossy().starts_with("index") {
                    continue;
                }
                let Ok(level) =
                    read(&e.path().join("level")).map(|l| l.trim().parse::<u32>().unwrap_or(0))
                else {
                    continue;
                };
                if llc.as_ref().is_none_or(|(l, _)| level > *l) {
                    if let Ok(shared) = list(&e.path().join("shared_cpu_list")) {
                        llc = Some((level, shared));
                    }
                }
            }
        }
        let node = node_of[cpu].unwrap_or(0);
        let llc = llc.map(|(_, s)| s).unwrap_or(smt);
        facts.push(CpuFacts {
            cpu: cpu as u32,
            node,
            llc,
            smt,
        });
    }
    Topology::build(&facts, &memory_nodes).map_err(|e| e.to_string())
}

/// Writes the sysfs files [`read_topology`] and [`memory_only_nodes`] read
/// for a made-up host under `root`: `sockets` sockets of `cores` cores with
/// two SMT threads each, numbered as Linux does (the first thread of every
/// core, socket by socket, then all the siblings), one LLC per socket, and
/// one CPU-less memory node after the socket nodes (PM or CXL as a node).
/// For tests and for reproducing a report from a host one does not have
/// (`memtamer topology --sysfs ROOT`).
pub fn write_fake_host(root: &Path, sockets: usize, cores: usize) -> std::io::Result<()> {
    let write = |rel: &str, text: &str| -> std::io::Result<()> {
        let p = root.join(rel);
        if let Some(dir) = p.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(p, text)
    };
    let threads = sockets * cores;
    write("cpu/online", &format!("0-{}\n", 2 * threads - 1))?;
    let socket_cpus = |s: usize| {
        format!(
            "{}-{},{}-{}\n",
            s * cores,
            (s + 1) * cores - 1,
            threads + s * cores,
            threads + (s + 1) * cores - 1
        )
    };
    for cpu in 0..2 * threads {
        let first = cpu % threads;
        let siblings = format!("{first},{}\n", first + threads);
        let base = format!("cpu/cpu{cpu}");
        write(&format!("{base}/topology/thread_siblings_list"), &siblings)?;
        write(&format!("{base}/cache/index0/level"), "1\n")?;
        write(&format!("{base}/cache/index0/shared_cpu_list"), &siblings)?;
        write(&format!("{base}/cache/index3/level"), "3\n")?;
        write(
            &format!("{base}/cache/index3/shared_cpu_list"),
            &socket_cpus(first / cores),
        )?;
    }
    for s in 0..sockets {
        write(&format!("node/node{s}/cpulist"), &socket_cpus(s))?;
    }
    write(&format!("node/node{sockets}/cpulist"), "\n")?;
    write("node/has_memory", &format!("0-{sockets}\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    }

    #[test]
    fn a_fake_two_socket_smt2_host_with_a_pm_node() {
        let root = std::env::temp_dir().join(format!("mt-topo-{}", std::process::id()));
        write(&root, "cpu/online", "0-7\n");
        for cpu in 0..8u32 {
            let base = format!("cpu/cpu{cpu}");
            write(
                &root,
                &format!("{base}/topology/thread_siblings_list"),
                &format!("{}-{}\n", cpu & !1, cpu | 1),
            );
            write(&root, &format!("{base}/cache/index0/level"), "1\n");
            write(
                &root,
                &format!("{base}/cache/index0/shared_cpu_list"),
                &format!("{}-{}\n", cpu & !1, cpu | 1),
            );
            write(&root, &format!("{base}/cache/index3/level"), "3\n");
            write(
                &root,
                &format!("{base}/cache/index3/shared_cpu_list"),
                if cpu < 4 { "0-3\n" } else { "4-7\n" },
            );
        }
        write(&root, "node/node0/cpulist", "0-3\n");
        write(&root, "node/node1/cpulist", "4-7\n");
        write(&root, "node/node2/cpulist", "\n"); // PM in KMEM DAX mode
        write(&root, "node/has_memory", "0-2\n");
        let t = read_topology(&root).expect("reads");
        assert_eq!(t.nodes.len(), 2);
        assert_eq!(
            t.nodes[1].llcs[0].cpus,
            CpuSet::parse_list("4-7").expect("list")
        );
        assert_eq!(t.nodes[1].llcs[0].cores.len(), 2);
        assert_eq!(t.memory_tiers, vec![2]);
        assert_eq!(memory_only_nodes(&root.join("node")), Ok(vec![2]));
        // a broken file is an error naming it
        write(&root, "cpu/cpu3/topology/thread_siblings_list", "x\n");
        let err = read_topology(&root).expect_err("broken");
        assert!(err.contains("thread_siblings_list"), "{err}");
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn a_fake_384_cpu_two_socket_host_reads_whole() {
        // 2 sockets x 96 cores x SMT2 = 384 logical CPUs; Linux numbers the
        // first thread of every core first (0-191), then the siblings (192-383)
        let root = std::env::temp_dir().join(format!("mt-topo384-{}", std::process::id()));
        write_fake_host(&root, 2, 96).expect("writes");
        let t = read_topology(&root).expect("reads");
        assert_eq!(t.nodes.len(), 2);
        let cpus: usize = t.nodes.iter().map(|n| n.cpus.len()).sum();
        assert_eq!(cpus, 384);
        assert_eq!(t.nodes[1].cpus.iter().last(), Some(383));
        assert_eq!(t.nodes[1].llcs[0].cores.len(), 96);
        assert_eq!(t.memory_tiers, vec![2]);
        assert_eq!(memory_only_nodes(&root.join("node")), Ok(vec![2]));
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn no_numa_directory_means_no_memory_only_node() {
        assert_eq!(memory_only_nodes(Path::new("/nonexistent")), Ok(vec![]));
    }

    #[test]
    fn this_host_reads() {
        let t = read_topology(Path::new("/sys/devices/system")).expect("this host's sysfs");
        assert!(!t.nodes.is_empty());
    }
}
