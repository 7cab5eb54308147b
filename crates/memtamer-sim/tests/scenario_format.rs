//! Scenario format (issue 24 item 5): shape checks (arg-max, arg-min,
//! knee), platform files named relative to the scenario's folder.

use memtamer_sim::config::CheckKind;
use memtamer_sim::experiment::{self, load_scenario, RunOptions};
use memtamer_sim::{Scenario, SimError};

/// A scenario whose memcpy bandwidth falls as PM writers are added (the
/// PATS collapse): argmin/argmax/knee have known answers in direction.
const SHAPES: &str = r#"
name = "shapes"
title = "shape checks"
platform = "pats"
duration_ms = 0.4
warmup_ms = 0.1

[[job]]
name = "memcpy"
threads = 1
cpus = "0"
workload = { kind = "mbw", mode = "memcpy" }

[[job]]
name = "fio"
threads = 0
cpus = "1-15"
workload = { kind = "pm_stream", rw = "write", request_bytes = 4096 }

[[sweep]]
key = "job.fio.threads"
values = [0, 2, 8]

[[check]]
name = "memcpy is best without writers"
metric = "memcpy.gbps"
kind = "argmax"
max = 0

[[check]]
name = "memcpy is worst with the most writers"
metric = "memcpy.gbps"
kind = "argmin"
min = 8

[[check]]
name = "PM write bandwidth saturates by 8 writers"
metric = "pm.request_write_gbps"
kind = "knee"
fraction = 0.5
min = 2
max = 8

[[check]]
name = "a point check still works"
metric = "memcpy.gbps"
at = 0
min = 0.1

[[check]]
name = "deliberately wrong: the peak is not at 8"
metric = "memcpy.gbps"
kind = "argmax"
min = 8
"#;

#[test]
fn shape_checks_bound_positions_and_can_fail() {
    let s = Scenario::parse("shapes.toml", SHAPES).unwrap();
    assert_eq!(s.check[0].kind, CheckKind::Argmax);
    let r = experiment::run_scenario(&s, &RunOptions::default()).unwrap();
    let got: Vec<(bool, Option<f64>)> = r.checks.iter().map(|c| (c.pass, c.value)).collect();
    assert_eq!(got[0], (true, Some(0.0)), "{got:?}");
    assert_eq!(got[1], (true, Some(8.0)), "{got:?}");
    assert!(got[2].0, "{got:?}");
    assert!(got[3].0, "{got:?}");
    assert_eq!(got[4], (false, Some(0.0)), "{got:?}");
}

#[test]
fn shape_checks_reject_point_keys_and_point_checks_need_at() {
    let bad = [
        ("kind = \"argmax\"\nat = 1", "no `at`"),
        ("kind = \"knee\"\nrelative_to = 1", "no `at`"),
        ("kind = \"argmax\"\nfraction = 0.5", "knee"),
        ("kind = \"knee\"\nfraction = 1.5", "(0, 1]"),
        ("min = 1", "finite `at`"),
    ];
    for (keys, want) in bad {
        let text = format!(
            "{}\n[[check]]\nname = \"c\"\nmetric = \"memcpy.gbps\"\n{keys}\n",
            SHAPES.split("[[check]]").next().unwrap()
        );
        match Scenario::parse("bad.toml", &text) {
            Err(SimError::Invalid { key, message, .. }) => {
                assert_eq!(key, "check[0]");
                assert!(message.contains(want), "{keys}: {message}");
            }
            other => panic!("{keys}: {other:?}"),
        }
    }
}

#[test]
fn shape_checks_survive_overrides() {
    // overrides round-trip the scenario through TOML: kind/fraction must stay
    let s = Scenario::parse("shapes.toml", SHAPES).unwrap();
    let o = s
        .with_overrides(&[("duration_ms".into(), toml::Value::Float(0.2))])
        .unwrap();
    assert_eq!(o.check, s.check);
}

#[test]
fn a_scenario_file_names_its_platform_file_relative_to_its_folder() {
    let dir = std::env::temp_dir().join(format!("memtamer-scen-{}", std::process::id()));
    let sub = dir.join("plats");
    std::fs::create_dir_all(&sub).unwrap();
    let pats = experiment::PLATFORMS
        .iter()
        .find(|(n, _)| *n == "pats")
        .unwrap()
        .1;
    std::fs::write(sub.join("mine.toml"), pats).unwrap();
    let text = SHAPES
        .split("[[check]]")
        .next()
        .unwrap()
        .replace("platform = \"pats\"", "platform = \"plats/mine.toml\"")
        .replace("values = [0, 2, 8]", "values = [0]")
        + "\n[[sweep]]\nkey = \"platform\"\nvalues = [\"pats\", \"plats/mine.toml\"]\n";
    let path = dir.join("s.toml");
    std::fs::write(&path, text).unwrap();
    // loaded from elsewhere (the test's cwd is the crate, not `dir`)
    let s = load_scenario(path.to_str().unwrap()).unwrap();
    assert_eq!(s.platform, sub.join("mine.toml").to_string_lossy());
    let swept: Vec<_> = s.sweep[1]
        .values
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    assert_eq!(swept[0], "pats", "built-in names stay");
    assert_eq!(swept[1], sub.join("mine.toml").to_string_lossy());
    let r = experiment::run_scenario(&s, &RunOptions::default()).unwrap();
    // the file is a copy of the built-in: same result
    let g: Vec<f64> = r.points.iter().map(|p| p.metrics["memcpy.gbps"]).collect();
    assert_eq!(g.len(), 2);
    assert_eq!(g[0], g[1]);
    std::fs::remove_dir_all(&dir).unwrap();
}
