//! `memtamer stat` names the bandwidth signal Ribbon's controller reads on
//! this host (issue 19): the iMC write counters where they open, else
//! Ribbon's own flushed-bytes rate, with the reason.

use std::process::Command;

#[test]
fn stat_names_ribbon_s_bandwidth_signal_and_why() {
    let out = Command::new(env!("CARGO_BIN_EXE_memtamer"))
        .args(["stat", "--count", "1", "--interval-ms", "10"])
        .output()
        .expect("the memtamer binary runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let line = text
        .lines()
        .find(|l| l.starts_with("ribbon bandwidth signal: "))
        .unwrap_or_else(|| panic!("no Ribbon signal line in:\n{text}"));
    let named = [
        memtamer_sense::ribbon::IMC_PM_WRITES,
        memtamer_sense::ribbon::IMC_CAS_WRITES,
        memtamer_ribbon::bandwidth::FLUSHED_BYTES,
    ];
    assert!(named.iter().any(|n| line.contains(n)), "{line}");
    assert!(line.contains('('), "the reason follows the name: {line}");
}
