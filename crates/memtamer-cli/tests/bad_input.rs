//! Bad input found by the hostile sweep (docs/bad-input.md): each case once
//! panicked, aborted, ran on a silently changed value, or ended with the
//! wrong exit code or a message that did not name what was wrong. Each is
//! now refused before any work starts, with exit 2 (usage) or 3 (a file or
//! option the library rejects) and a message naming the flag, key or type.
//! Where a case used to start a full sweep, an invalid `--bench` beside it
//! makes the old binary stop at once, so this test fails fast before the fix.

mod common;
use common::{code, memtamer, stderr, temp_dir};

/// Runs `args`, expects exit `want` and `needle` in stderr, and no panic.
fn refused(args: &[&str], want: i32, needle: &str) {
    let out = memtamer(args);
    let err = stderr(&out);
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    assert_eq!(code(&out), want, "{args:?}: {err}");
    assert!(
        err.contains(needle),
        "{args:?}: wanted {needle:?} in: {err}"
    );
}

#[test]
fn sim_tahoe_flags_are_checked_when_parsed() {
    let t = |extra: &[&str], needle: &str| {
        let mut a = vec!["sim", "tahoe", "--bench", "no-such-bench"];
        a.extend_from_slice(extra);
        refused(&a, 2, needle);
    };
    // was ignored without --out-no-copy (the sweep ran), exit 3 with it
    t(&["--out-fault-ns", "nan"], "--out-fault-ns");
    t(&["--out-fault-ns", "inf"], "--out-fault-ns");
    t(&["--out-no-copy", "--out-fault-ns=-1"], "--out-fault-ns");
    // was exit 3 "command line:0"
    t(&["--partial-form", "nope"], "--partial-form");
    t(&["--model", "nope"], "--model");
    t(&["--tahoe-touch", "nope"], "--tahoe-touch");
    t(&["--frees", "nope"], "--frees");
    // was "<tahoe heat>:6:8: number too large to fit in target type"
    t(&["--seed", "18446744073709551615"], "--seed");
    // 0 was taken as 1 without a word
    t(&["--shrink", "0"], "--shrink");
    t(&["--reuse", "0"], "--reuse");
    t(&["--ratio", "0"], "--ratio");
    // was "cannot read : No such file or directory"
    t(&["--recorded", ""], "--recorded");
}

#[test]
fn absurd_tahoe_recordings_are_refused_not_aborted() {
    let dir = temp_dir("bad-input", "recording");
    for (name, text, needle) in [
        // both aborted the process (rc 134) on a failed allocation
        (
            "inst.csv",
            "f(1),18446744073709551615,2,3\n",
            "type f(1): more than",
        ),
        ("pages.csv", "f(1),10,2,1e30\n", "pages per task"),
        // was taken as one page
        ("neg.csv", "f(1),10,2,-3\n", "pages -3 must be >= 0"),
    ] {
        let f = dir.join(name);
        std::fs::write(&f, text).unwrap();
        let args = [
            "sim",
            "tahoe",
            "--bench",
            "heat",
            "--platforms",
            "tahoe-quarter-bw",
            "--recorded",
            f.to_str().unwrap(),
        ];
        refused(&args, 3, needle);
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn bench_tier_refuses_a_grid_whose_size_wraps() {
    // 1024 * (2^54 + 1) wraps to 1024: a 1024-point grid ran under the name
    refused(
        &[
            "bench",
            "tier",
            "--nx",
            "1024",
            "--ny",
            "18014398509481985",
            "--iters",
            "1",
            "--rounds",
            "1",
        ],
        3,
        "1024x18014398509481985 grid's objects do not fit",
    );
}

#[test]
fn durations_too_large_for_a_duration_are_usage_errors() {
    // panicked in Duration::from_secs_f64 (exit 101): 1e300 is finite
    refused(
        &[
            "gate",
            "stats",
            "--dir",
            "/nonexistent",
            "--name",
            "x",
            "--watch",
            "1e300",
        ],
        2,
        "--watch 1e300",
    );
    // nan ran no iteration and printed ratios of nothing (exit 0); inf
    // looped forever
    refused(&["bench", "daemon", "--seconds", "nan"], 2, "--seconds");
    refused(&["bench", "daemon", "--seconds", "inf"], 2, "--seconds");
    // --threads 0 ran 1 thread and --period-us 9 ran at 10 µs, silently;
    // the `--seconds nan` after them stops the old binary at once
    for (flag, v, range) in [
        ("--threads", "0", "1..=4096"),
        ("--period-us", "9", "10..=1000000"),
    ] {
        refused(
            &["bench", "daemon", flag, v, "--seconds", "nan"],
            2,
            &format!("'{v}' for '{flag}"),
        );
        refused(&["bench", "daemon", flag, v], 2, range);
    }
}

#[test]
fn restore_names_corrupt_journal_lines_and_fails() {
    // printed "restored 0 changes (0 already gone, 0 failed)", exit 0, and
    // said nothing of the lines it could not read
    let dir = temp_dir("bad-input", "journal");
    let journal = dir.join("journal");
    std::fs::write(&journal, "garbage\n{\"record\":1}\n").unwrap();
    refused(
        &["restore", "--journal", journal.to_str().unwrap()],
        1,
        "ignored corrupt journal line 1",
    );
    // a torn final line (a crash mid-write) warns but is not a failure
    std::fs::write(&journal, "{\"record\":{\"kind\":\"Cgr").unwrap();
    let out = memtamer(&["restore", "--journal", journal.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("torn final journal line 1"),
        "{}",
        stderr(&out)
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn gate_names_that_leave_the_gate_directory_are_refused() {
    // were joined into DIR/memtamer-gate-NAME as given (exit 3 "no gate
    // named"; with a directory planted there, `gate remove` unlinked a
    // file outside DIR); the library refused them in MEMTAMER_GATE already
    for name in ["x/../../etc/passwd", "a/b", ".hidden", ""] {
        refused(
            &["gate", "remove", "--dir", "/tmp", "--name", name],
            2,
            "--name",
        );
    }
    // the sensing commands read the gate's file by the same name (exit 0
    // with "no gate /dev/shm/memtamer-gate-../../etc/x")
    refused(
        &["stat", "--gate", "../../etc/x", "--count", "1"],
        2,
        "--gate",
    );
    refused(&["top", "--gate", "a/b", "--once"], 2, "--gate");
}

#[test]
fn host_calibration_points_are_bounded() {
    // 0 was taken as 1 ms and calibrated (exit 0); 2^64-1 measured forever
    for ms in ["0", "18446744073709551615"] {
        refused(&["calibrate", "--host", "--point-ms", ms], 2, "--point-ms");
    }
}

#[test]
fn zero_intervals_and_sampling_periods_are_refused() {
    // 0 ms was accepted: the sensors were read with no real pause
    refused(
        &["stat", "--interval-ms", "0", "--count", "1"],
        2,
        "for '--interval-ms",
    );
    refused(
        &["top", "--interval-ms", "0", "--once"],
        2,
        "for '--interval-ms",
    );
    refused(
        &["serve-metrics", "--interval-ms", "0", "--listen", "nope"],
        2,
        "for '--interval-ms",
    );
    refused(
        &["stat", "--interval-ms", "3600001", "--count", "1"],
        2,
        "3600001 is not in 1..=3600000",
    );
    // period 0 was accepted (and sampled every event; the old binary runs
    // its sweep, then exits 0)
    refused(
        &["sim", "sampler", "--periods", "2503,0"],
        2,
        "for '--periods",
    );
}

#[test]
fn calibrate_checks_its_out_file_before_calibrating() {
    let dir = temp_dir("bad-input", "calibrate-out");
    let path = |p: &std::path::Path| p.to_str().unwrap().to_string();
    // the old binary calibrated first (minutes) and failed to write at the
    // end; an unknown platform makes it stop at once, without naming --out
    let bad = dir.join("no-such-dir").join("m.toml");
    let run = |out: &str| memtamer(&["calibrate", "--platform", "no-such-platform", "--out", out]);
    let out = run(&path(&bad));
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("cannot write {}", path(&bad))),
        "{}",
        stderr(&out)
    );
    let out = run(&path(&dir));
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(stderr(&out).contains("cannot write"), "{}", stderr(&out));
    // a run that fails later leaves no new file behind, an old one as it was
    let new = dir.join("new.toml");
    let out = run(&path(&new));
    assert_ne!(code(&out), 0);
    assert!(
        stderr(&out).contains("no-such-platform"),
        "{}",
        stderr(&out)
    );
    assert!(!new.exists());
    let old = dir.join("old.toml");
    std::fs::write(&old, "keep").unwrap();
    assert_ne!(code(&run(&path(&old))), 0);
    assert_eq!(std::fs::read_to_string(&old).unwrap(), "keep");
    let _ = std::fs::remove_dir_all(&dir);
}
