//! `memtamer tier calibrate` on this host's real tier backings: the
//! calibration objects are allocated and timed in both tiers, both factors
//! come out finite, and the printed export line carries them; bad sizes and
//! model parameters are usage errors naming the flag.

mod common;
use common::{code, memtamer, stderr, stdout};

#[test]
fn calibrates_on_the_real_backings_and_prints_the_factors() {
    let out = memtamer(&[
        "tier",
        "calibrate",
        "--dram-budget",
        "4M",
        "--format",
        "json",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for r in runs {
        assert!(r["dram_s"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["slow_s"].as_f64().unwrap() > 0.0, "{r}");
    }
    for k in ["cf_bw", "cf_lat"] {
        let x = v[k]["value"].as_f64().unwrap();
        assert!(x.is_finite() && x >= 0.0, "{k} = {x}");
    }
    // the copy bandwidth per direction, timed on real moves
    for k in ["copy_bw", "evict_bw"] {
        let x = v[k].as_f64().unwrap_or(-1.0);
        assert!(x.is_finite() && x > 0.0, "{k} = {}", v[k]);
    }
    let out = memtamer(&["tier", "calibrate", "--dram-budget", "4M"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("export MEMTAMER_CF_BW="), "{text}");
    assert!(text.contains("MEMTAMER_CF_LAT="), "{text}");
    assert!(text.contains("to DRAM (copy_bw) "), "{text}");
    assert!(text.contains("to the slow tier (evict_bw) "), "{text}");
}

#[test]
fn bad_sizes_and_parameters_are_usage_errors() {
    for (args, flag) in [
        (&["--dram-budget", "0"][..], "--dram-budget"),
        (&["--dram-budget", "lots"][..], "--dram-budget"),
        (&["--slow-lat-mul", "0"][..], "--slow-lat-mul"),
        (&["--dram-bw", "inf"][..], "--dram-bw"),
    ] {
        let mut a = vec!["tier", "calibrate"];
        a.extend_from_slice(args);
        let out = memtamer(&a);
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(flag), "{args:?}: {}", stderr(&out));
    }
}
