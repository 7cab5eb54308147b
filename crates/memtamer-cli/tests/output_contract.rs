//! The command-line contract scripts rely on (issue 23 item 2), through the
//! built binary: one `--format` flag that is either honoured or refused with a
//! usage error, `sim validate` failing on a FAIL line, `--jobs` not changing
//! results, no progress lines when stderr is not a terminal, GB/s headers and
//! one spelling of "unlimited".

use std::path::PathBuf;
mod common;
use common::*;

/// A tiny scenario (one point per policy, 0.2 simulated ms) with one check
/// that `expect_pass` decides.
fn scenario_file(dir: &std::path::Path, expect_pass: bool) -> PathBuf {
    let bound = if expect_pass {
        "min = 0.0"
    } else {
        "min = 1e9"
    };
    let text = format!(
        r#"name = "contract"
title = "contract test"
platform = "pats"
duration_ms = 0.2
warmup_ms = 0.05

[[job]]
name = "memcpy"
threads = 1
cpus = "0"
workload = {{ kind = "mbw", mode = "memcpy" }}

[[sweep]]
key = "job.memcpy.threads"
values = [1]

[[sweep]]
key = "policy"
values = ["baseline", "pats"]

[[check]]
name = "memcpy moves data"
metric = "memcpy.gbps"
at = 1
{bound}
with = {{ "policy" = "baseline" }}
"#
    );
    let path = dir.join(format!("contract-{expect_pass}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn validate_exits_1_on_a_fail_and_0_when_every_check_holds() {
    let dir = temp_dir("output-contract", "validate");
    let fail = scenario_file(&dir, false);
    let out = memtamer(&["sim", "validate", fail.to_str().unwrap()]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(stdout(&out).contains("FAIL"), "{}", stdout(&out));
    assert!(stderr(&out).contains("1 check(s) FAILED: contract: memcpy moves data"));
    let pass = scenario_file(&dir, true);
    let out = memtamer(&["sim", "validate", pass.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn every_format_is_honoured_or_refused_with_a_usage_error() {
    let dir = temp_dir("output-contract", "formats");
    let s = scenario_file(&dir, true);
    let s = s.to_str().unwrap();
    // honoured: parseable output of the asked kind
    let out = memtamer(&["sim", "run", s, "--format", "json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["scenario"], "contract");
    let out = memtamer(&["sim", "run", s, "--format", "csv"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let csv = stdout(&out);
    let width = csv.lines().next().unwrap().split(',').count();
    assert!(width > 2 && csv.lines().all(|l| l.split(',').count() == width));
    // the flag may come before the subcommand too (it is global)
    let out = memtamer(&["--format", "json", "sim", "list"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let list: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(list.as_array().unwrap().iter().any(|e| e["name"] == "demo"));
    let out = memtamer(&["sim", "validate", s, "--format", "json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["scenarios"][0]["checks"][0]["pass"], true);
    // refused, with the formats the command does print, before any work
    for (args, supported) in [
        (
            vec!["sim", "run", s, "--format", "prometheus"],
            "table, json, csv",
        ),
        (
            vec!["sim", "validate", s, "--format", "csv"],
            "table, markdown, json",
        ),
        (vec!["top", "--once", "--format", "json"], "table"),
        (vec!["bench", "sim", "--format", "csv"], "table"),
        (vec!["sim", "sampler", "--format", "json"], "table"),
        (
            vec!["restore", "--journal", "/nonexistent", "--format", "json"],
            "none",
        ),
        (vec!["gate", "set-limit", "4", "--format", "json"], "none"),
        (vec!["topology", "--format", "csv"], "table, json"),
    ] {
        let out = memtamer(&args);
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        let e = stderr(&out);
        assert!(
            e.contains("cannot print --format") && e.contains(&format!("it prints: {supported}")),
            "{args:?}: {e}"
        );
        assert!(stdout(&out).is_empty(), "{args:?} printed data");
    }
    // an unknown format is clap's usage error
    let out = memtamer(&["sim", "list", "--format", "xml"]);
    assert_eq!(code(&out), 2);
    // the old --json spellings still work and mean --format json
    let out = memtamer(&[
        "topology",
        "--sysfs",
        "/nonexistent",
        "--json",
        "--format",
        "csv",
    ]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn jobs_do_not_change_results_and_progress_stays_off_pipes() {
    let dir = temp_dir("output-contract", "jobs");
    let s = scenario_file(&dir, true);
    let s = s.to_str().unwrap();
    let one = memtamer(&["sim", "run", s, "--format", "json", "--jobs", "1"]);
    let two = memtamer(&["sim", "run", s, "--format", "json", "--jobs", "2"]);
    assert_eq!(code(&one), 0, "{}", stderr(&one));
    assert_eq!(stdout(&one), stdout(&two));
    // stderr is a pipe here: no progress lines (they name points done)
    assert!(
        stderr(&one).is_empty(),
        "progress on a pipe: {}",
        stderr(&one)
    );
    let v1 = memtamer(&["sim", "validate", s, "--jobs", "1"]);
    let v2 = memtamer(&["sim", "validate", s, "--jobs", "2"]);
    assert_eq!(code(&v1), 0, "{}", stderr(&v1));
    assert_eq!(stdout(&v1), stdout(&v2));
    assert!(stderr(&v1).is_empty(), "{}", stderr(&v1));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn units_are_decimal_gb_per_s_and_stated() {
    let out = memtamer(&[
        "sim",
        "run",
        "demo",
        "--set",
        "duration_ms=0.2",
        "--set",
        "warmup_ms=0.05",
        "--sweep",
        "job.fio.threads=0",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let t = stdout(&out);
    assert!(
        !t.contains("MB/s") && !t.contains("GiB/s") && !t.contains("MiB/s"),
        "{t}"
    );
    let out = memtamer(&["demo"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let t = stdout(&out);
    assert!(t.contains("GB/s"), "the demo table states its unit: {t}");
    assert!(!t.contains("MB/s") && !t.contains("GiB/s"), "{t}");
}

#[test]
fn set_limit_takes_only_the_one_spelling_of_unlimited() {
    let dir = temp_dir("output-contract", "unlimited");
    let d = dir.to_str().unwrap();
    for bad in ["inf", "none", "max", "0"] {
        let out = memtamer(&["gate", "set-limit", "--dir", d, bad]);
        assert_eq!(code(&out), 2, "{bad}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("`unlimited`"),
            "{bad}: {}",
            stderr(&out)
        );
    }
    std::fs::remove_dir_all(dir).unwrap();
}
