//! `memtamer topology` on a host wider than the old 256-CPU limit, end to
//! end through the built binary: a fake sysfs of a 2-socket, 384-CPU machine
//! with a CPU-less memory node.

use std::process::Command;

#[test]
fn a_384_cpu_two_socket_host_is_read_whole() {
    let root = std::env::temp_dir().join(format!("memtamer-big-host-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    memtamer_sense::topology::write_fake_host(&root, 2, 96).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_memtamer"))
        .args(["topology", "--json", "--sysfs"])
        .arg(&root)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let t: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let nodes = t["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 2);
    let cores: usize = nodes
        .iter()
        .flat_map(|n| n["llcs"].as_array().unwrap())
        .map(|l| l["cores"].as_array().unwrap().len())
        .sum();
    assert_eq!(cores, 192, "2 x 96 cores");
    assert_eq!(t["memory_tiers"], serde_json::json!([2]));

    // the table names the last CPU, far beyond 256
    let out = Command::new(env!("CARGO_BIN_EXE_memtamer"))
        .args(["topology", "--sysfs"])
        .arg(&root)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(text.contains("383"), "{text}");
    let _ = std::fs::remove_dir_all(&root);
}
