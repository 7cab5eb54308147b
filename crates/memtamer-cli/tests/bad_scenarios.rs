//! Hostile scenario files and sweep flags for `memtamer sim run` (hostile-
//! input sweep of 2026-11-27, docs/bad-input.md): each case once panicked,
//! ran no point (or not the points asked for) with exit 0, or was reported
//! as a command-line override (exit 2) naming neither the file nor its
//! line. Each scenario is tiny (0.5 ms simulated on one job).

mod common;
use common::{code, memtamer, stderr, stdout, temp_dir};

const BASE: &str = r#"name = "h"
title = "t"
platform = "pats"
duration_ms = 0.5
warmup_ms = 0.1

[[job]]
name = "fio"
threads = 1
cpus = "1-2"
workload = { kind = "pm_stream", rw = "write", request_bytes = 4096 }
"#;

/// Runs `memtamer sim run FILE` on `text` (plus `extra` flags); no panic.
fn run(dir: &std::path::Path, name: &str, text: &str, extra: &[&str]) -> (i32, String, String) {
    let f = dir.join(name);
    std::fs::write(&f, text).unwrap();
    let mut args = vec!["sim", "run", f.to_str().unwrap()];
    args.extend_from_slice(extra);
    let out = memtamer(&args);
    let err = stderr(&out);
    assert!(!err.contains("panicked"), "{name}: {err}");
    (code(&out), stdout(&out), err)
}

/// A job name longer than 65535 characters: the table's column width went
/// to `format!`, which panics above that ("Formatting argument out of
/// range", exit 101). CSV and JSON printed it.
#[test]
fn a_job_name_longer_than_format_widths_allow_is_printed() {
    let dir = temp_dir("bad-scenarios", "longname");
    let long = "j".repeat(70_000);
    let text = BASE.replace("name = \"fio\"", &format!("name = \"{long}\""));
    let (rc, out, err) = run(&dir, "long.toml", &text, &[]);
    assert_eq!(rc, 0, "{err}");
    assert!(out.contains(&format!("{long}.gbps")), "{}", &out[..200]);
}

/// The file's `[[sweep]]` tables are checked where they are written, with
/// exit 3 (a bad file) and `FILE:LINE: key `sweep[I]``.
#[test]
fn sweeps_in_a_scenario_file_are_checked_where_written() {
    let dir = temp_dir("bad-scenarios", "sweeps");
    let sweep = |body: &str| format!("{BASE}\n[[sweep]]\n{body}\n");
    // line 14 is the first sweep's `key` (BASE is 11 lines, a blank, the header)
    for (name, text, needle) in [
        // ran no point, exit 0
        (
            "empty.toml",
            sweep("key = \"job.fio.threads\"\nvalues = []"),
            "empty.toml:14: key `sweep[0]`: sweep `job.fio.threads` has no values",
        ),
        // ran the later sweep's values only, exit 0
        (
            "twice.toml",
            sweep("key = \"job.fio.threads\"\nvalues = [1]\n\n[[sweep]]\nkey = \"job.fio.threads\"\nvalues = [2]"),
            "twice.toml:18: key `sweep[1]`: `job.fio.threads` is swept twice",
        ),
        // exit 2 "override `job.nope.threads=1`: no job named `nope`"
        (
            "nojob.toml",
            sweep("key = \"job.nope.threads\"\nvalues = [1, 2]"),
            "nojob.toml:14: key `sweep[0]`: sweep `job.nope.threads`, value 1: no job named `nope`",
        ),
        (
            "nokey.toml",
            sweep("key = \"nope\"\nvalues = [1]"),
            "nokey.toml:14: key `sweep[0]`: sweep `nope`, value 1: unknown field `nope`",
        ),
        (
            "type.toml",
            sweep("key = \"job.fio.threads\"\nvalues = [1, \"two\"]"),
            "type.toml:14: key `sweep[0]`: sweep `job.fio.threads`, value \"two\": invalid type",
        ),
        (
            "emptykey.toml",
            sweep("key = \"\"\nvalues = [1]"),
            "emptykey.toml:14: key `sweep[0]`: a sweep needs a `key`",
        ),
    ] {
        let (rc, _, err) = run(&dir, name, &text, &[]);
        assert_eq!(rc, 3, "{name}: {err}");
        assert!(err.contains(needle), "{name}: wanted {needle:?} in: {err}");
    }
    // `sim validate FILE` reads the file the same way (it passed, exit 0)
    let f = dir.join("empty.toml");
    let out = memtamer(&["sim", "validate", f.to_str().unwrap()]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(stderr(&out).contains("has no values"), "{}", stderr(&out));
}

/// `--sweep` of one key twice ran the later values only (exit 0); a point
/// outside a key's range was reported as `<overrides>:0`, not the point.
#[test]
fn sweep_flags_name_the_repeated_key_and_the_failing_point() {
    let dir = temp_dir("bad-scenarios", "flags");
    let (rc, _, err) = run(
        &dir,
        "base.toml",
        BASE,
        &[
            "--sweep",
            "job.fio.threads=1",
            "--sweep",
            "job.fio.threads=2",
        ],
    );
    assert_eq!(rc, 2, "{err}");
    assert!(err.contains("`job.fio.threads` is already swept"), "{err}");
    // then exit 3 `<sweep point duration_ms=nan>:0`: a command-line error
    let (rc, _, err) = run(&dir, "base.toml", BASE, &["--sweep", "duration_ms=0.5,nan"]);
    assert_eq!(rc, 2, "{err}");
    assert!(
        err.contains("--sweep point duration_ms=nan: key `duration_ms`: must be in (0, 60000]"),
        "{err}"
    );
}

/// Every error a `--set` or `--sweep` causes is a usage error (exit 2) that
/// names the argument. Before (2026-11-27 evening): a range error exited 3
/// as `<overrides>:0`, a platform key's error exited 3 as `<builtin platform
/// pats>:32` or `:0:0: after overrides`, naming no `--set`; an unknown key
/// exited 2 as `override `k=v``.
#[test]
fn set_and_sweep_errors_are_usage_errors_naming_the_argument() {
    let dir = temp_dir("bad-scenarios", "sets");
    for (args, needle) in [
        (
            ["--set", "duration_ms=-1"],
            "--set duration_ms=-1: key `duration_ms`: must be in (0, 60000]",
        ),
        (
            ["--set", "platform.memory.wpq_entries=0"],
            "--set platform.memory.wpq_entries=0: key `memory.wpq_entries`: must be > 0",
        ),
        (
            ["--set", "platform.nope.x=1"],
            "--set platform.nope.x=1: unknown field `nope`",
        ),
        (
            ["--set", "job.nope.threads=1"],
            "--set job.nope.threads=1: no job named `nope`",
        ),
        (
            ["--set", "platform=nope"],
            "--set platform=\"nope\": unknown platform `nope`",
        ),
        (
            ["--sweep", "platform.memory.wpq_entries=0"],
            "--sweep point platform.memory.wpq_entries=0: key `memory.",
        ),
    ] {
        let (rc, _, err) = run(&dir, "base.toml", BASE, &args);
        assert_eq!(rc, 2, "{args:?}: {err}");
        assert!(
            err.contains(needle),
            "{args:?}: wanted {needle:?} in: {err}"
        );
        assert!(
            !err.contains("<overrides>") && !err.contains("<builtin"),
            "{err}"
        );
    }
}

/// Errors in a scenario file keep exit 3 and their FILE:LINE. Before: an
/// unknown `platform` name exited 2 (as if typed on the command line) with
/// no file or line, and a `[[check]]` error said line 0.
#[test]
fn platform_and_check_errors_in_a_file_name_their_line() {
    let dir = temp_dir("bad-scenarios", "fileline");
    let text = BASE.replace("platform = \"pats\"", "platform = \"nope\"");
    let (rc, _, err) = run(&dir, "plat.toml", &text, &[]);
    assert_eq!(rc, 3, "{err}");
    assert!(
        err.contains("plat.toml:3: key `platform`: unknown platform `nope`"),
        "{err}"
    );
    // line 13 is the `[[check]]` header (BASE is 11 lines, then a blank)
    let text = format!(
        "{BASE}\n[[check]]\nname = \"c\"\nmetric = \"fio.gbps\"\nkind = \"argmax\"\nat = 1.0\n"
    );
    let (rc, _, err) = run(&dir, "check.toml", &text, &[]);
    assert_eq!(rc, 3, "{err}");
    assert!(
        err.contains("check.toml:13: key `check[0]`: check `c`: kind = \"argmax\""),
        "{err}"
    );
}

/// Every string key that names something is checked before a point runs
/// (docs/bad-input.md, 2026-11-28): in a file, exit 3 at the value's line;
/// from `--set` / `--sweep`, exit 2 naming the argument. Before: a file's
/// `policy = "nope"` (also swept, or in a variant) exited 3 naming no file
/// or line; a `[[sweep]]` over an unknown platform exited 2 naming no file;
/// an unknown region, a missing trace or a `start_cpus` outside `cpus`
/// exited 3 as `h:0: key `job`` from the file and from `--set` alike; and
/// `sim run demo --set policy=nope` exited 0 (every demo point sets its
/// own policy, so the `--set` never reached one).
#[test]
fn names_are_refused_at_their_line_or_argument() {
    let dir = temp_dir("bad-scenarios", "names");
    let sweep = |key: &str, values: &str| {
        format!("{BASE}\n[[sweep]]\nkey = \"{key}\"\nvalues = {values}\n")
    };
    // BASE: line 6 follows warmup_ms, line 10 is `cpus`, 11 the workload;
    // a sweep's `key` is line 14, a table after a blank line starts at 13
    for (name, text, needle) in [
        (
            "policy.toml",
            BASE.replace("warmup_ms = 0.1\n", "warmup_ms = 0.1\npolicy = \"nope\"\n"),
            "policy.toml:6: key `policy`: unknown policy `nope`",
        ),
        (
            "swpolicy.toml",
            sweep("policy", "[\"baseline\", \"nope\"]"),
            "swpolicy.toml:14: key `sweep[0]`: sweep `policy`, value \"nope\": unknown policy `nope`",
        ),
        (
            "swplatform.toml",
            sweep("platform", "[\"pats\", \"nope\"]"),
            "swplatform.toml:14: key `sweep[0]`: sweep `platform`, value \"nope\": unknown platform `nope`",
        ),
        (
            "variant.toml",
            format!("{BASE}\n[variant.place.a]\npolicy = \"pats:nan\"\n"),
            "variant.toml:13: key `variant.place.a`: policy `pats:nan`",
        ),
        (
            "region.toml",
            BASE.replace("4096 }", "4096, region = \"nope\" }"),
            "region.toml:11: key `job.fio.workload.region`: job fio: platform pats has no region `nope`",
        ),
        (
            "swregion.toml",
            sweep("job.fio.workload.region", "[\"pm\", \"nope\"]"),
            "swregion.toml:14: key `sweep[0]`: sweep `job.fio.workload.region`, value \"nope\": job fio: platform pats has no region `nope`",
        ),
        (
            "start.toml",
            BASE.replace("cpus = \"1-2\"\n", "cpus = \"1-2\"\nstart_cpus = \"5\"\n"),
            "start.toml:11: key `job.fio.start_cpus`: job fio: start_cpus 5: must be a non-empty subset of its cpus",
        ),
        (
            "trace.toml",
            format!("{BASE}\n[[job]]\nname = \"t\"\nthreads = 1\nworkload = {{ kind = \"trace\", trace = \"/nonexistent.trace\" }}\n"),
            "trace.toml:16: key `job.t.workload.trace`: job t: trace `/nonexistent.trace`",
        ),
    ] {
        let (rc, _, err) = run(&dir, name, &text, &[]);
        assert_eq!(rc, 3, "{name}: {err}");
        assert!(err.contains(needle), "{name}: wanted {needle:?} in: {err}");
    }
    for (args, needle) in [
        (
            ["--set", "job.fio.workload.region=nope"],
            "--set job.fio.workload.region=\"nope\": key `job.fio.workload.region`: job fio: platform pats has no region `nope`",
        ),
        (
            ["--sweep", "job.fio.workload.region=pm,nope"],
            "--sweep point job.fio.workload.region=\"nope\": key `job.fio.workload.region`",
        ),
        (
            ["--set", "job.fio.start_cpus=\"5\""],
            "--set job.fio.start_cpus=\"5\": key `job.fio.start_cpus`: job fio: start_cpus 5",
        ),
        (
            ["--set", "policy=nope"],
            "--set policy=\"nope\": key `policy`: unknown policy `nope`",
        ),
    ] {
        let (rc, _, err) = run(&dir, "base.toml", BASE, &args);
        assert_eq!(rc, 2, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: wanted {needle:?} in: {err}");
        assert!(!err.contains(":0:"), "{err}");
    }
    // a built-in whose sweep sets the policy of every point
    let out = memtamer(&["sim", "run", "demo", "--set", "policy=nope"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--set policy=\"nope\": key `policy`: unknown policy `nope`"),
        "{}",
        stderr(&out)
    );
}
