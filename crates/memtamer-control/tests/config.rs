//! Config parsing: the example parses, every kind of bad input names
//! FILE:LINE:COL and the key path, and random mutations never panic.

use memtamer_control::config::{
    ConfigError, CpuChoice, DaemonConfig, ErrorKind, IsolationPolicy, PmCpus,
};
use memtamer_core::{CpuSet, JobClass};
use std::path::Path;

const EXAMPLE: &str = include_str!("../testdata/example.toml");

/// A valid config; tests append or substitute lines and check where the
/// error points. Line numbers are noted on the right.
const BASE: &str = r#"[daemon]
period_us = 1000
[isolation]
policy = "dicio"
dram_gbps = [30.0, 15.0, 5.0]
be_cpus = "all"
[core_spec]
pm_cpus = 2
[placement]
enabled = false
[[job]]
name = "lc1"
class = "lc"
cpus = "0-3"
[job.match]
comm = "memcached"
[[job]]
name = "be1"
class = "be"
[job.match]
comm = "fio"
"#;

fn parse(text: &str) -> Result<DaemonConfig, ConfigError> {
    DaemonConfig::parse(text, "t.toml")
}

/// Replaces the first occurrence of `from` (which must exist) in BASE.
fn base_with(from: &str, to: &str) -> String {
    assert!(BASE.contains(from), "{from:?} not in BASE");
    BASE.replacen(from, to, 1)
}

/// Asserts the error is at `line`, names `key`, mentions `needle`, and
/// returns it.
#[track_caller]
fn expect_err(text: &str, line: usize, key: &str, needle: &str) -> ConfigError {
    let err = match parse(text) {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => e,
    };
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!("t.toml:{line}:")),
        "wrong file/line in {msg:?} (want line {line})"
    );
    assert!(
        msg.contains(&format!(": {key}: ")),
        "key {key:?} not in {msg:?}"
    );
    assert!(msg.contains(needle), "{needle:?} not in {msg:?}");
    assert_eq!(err.key(), Some(key));
    assert_eq!(err.position().map(|p| p.0), Some(line));
    err
}

#[test]
fn example_parses() {
    let c = parse(EXAMPLE).unwrap();
    assert_eq!(c.jobs.len(), 3);
    assert_eq!(c.jobs[0].name, "memcached");
    assert_eq!(c.jobs[0].class, JobClass::Lc);
    assert_eq!(c.jobs[0].cpus, Some(CpuSet::parse_list("0-4").unwrap()));
    assert_eq!(c.jobs[1].class, JobClass::Be);
    assert_eq!(c.jobs[1].matcher.pid, vec![4242]);
    assert_eq!(c.jobs[2].class, JobClass::Unmanaged);
    assert_eq!(
        c.jobs[2].matcher.unit.as_deref(),
        Some("prometheus-node-exporter.service")
    );
    assert_eq!(c.isolation.policy, IsolationPolicy::Dicio);
    assert_eq!(c.selectors().len(), 3);
    assert_eq!(c.jobs[1].require.uid, vec![0]);
    assert!(
        c.warnings.is_empty(),
        "the example is not spoofable: {:?}",
        c.warnings
    );
}

#[test]
fn example_loads_from_file() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/example.toml");
    let c = DaemonConfig::load(&path).unwrap();
    assert_eq!(c, parse(EXAMPLE).unwrap());
}

#[test]
fn load_missing_file_names_it() {
    let err = DaemonConfig::load("/nonexistent/memtamer.toml").unwrap_err();
    assert!(matches!(err, ConfigError::Read { .. }));
    assert!(
        err.to_string().starts_with("/nonexistent/memtamer.toml: "),
        "{err}"
    );
    assert_eq!(err.key(), None);
}

#[test]
fn base_parses() {
    let c = parse(BASE).unwrap();
    assert_eq!(c.jobs.len(), 2);
}

#[test]
fn load_error_uses_path_as_file_name() {
    let dir = std::env::temp_dir().join(format!("memtamer-cfg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("memtamer.toml");
    std::fs::write(&path, base_with("class = \"lc\"", "class = \"lx\"")).unwrap();
    let err = DaemonConfig::load(&path).unwrap_err().to_string();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(
        err,
        format!(
            "{}:13:1: job[0].class: unknown class \"lx\", expected one of lc, be, unmanaged",
            path.display()
        )
    );
}

// ----- syntax errors

#[test]
fn syntax_error_in_value() {
    let e = expect_err(
        &base_with("period_us = 1000", "period_us = 10 00"),
        2,
        "daemon.period_us",
        "",
    );
    assert_eq!(e.kind(), Some(ErrorKind::Syntax));
}

#[test]
fn syntax_error_unterminated_string() {
    expect_err(
        &base_with("name = \"be1\"", "name = \"be1"),
        18,
        "job[1].name",
        "",
    );
}

#[test]
fn syntax_error_duplicate_key() {
    let e = expect_err(
        &base_with("period_us = 1000", "period_us = 1000\nperiod_us = 2000"),
        3,
        "daemon.period_us",
        "duplicate",
    );
    assert_eq!(e.kind(), Some(ErrorKind::Syntax));
}

#[test]
fn syntax_error_bad_header() {
    expect_err(&base_with("[placement]", "[placement"), 9, "placement", "");
}

#[test]
fn syntax_error_in_job_match() {
    expect_err(
        &base_with("comm = \"fio\"", "comm = fio"),
        21,
        "job[1].match.comm",
        "",
    );
}

// ----- unknown keys at every level

#[test]
fn unknown_top_level_key() {
    let e = expect_err(
        &format!("colour = 1\n{BASE}"),
        1,
        "colour",
        "unknown field `colour`",
    );
    assert_eq!(e.kind(), Some(ErrorKind::Schema));
}

#[test]
fn unknown_top_level_table() {
    expect_err(
        &format!("{BASE}[extra]\nx = 1\n"),
        22,
        "extra",
        "unknown field `extra`",
    );
}

#[test]
fn unknown_key_in_daemon() {
    expect_err(
        &base_with("period_us = 1000", "period_us = 1000\nperiod_ms = 1"),
        3,
        "daemon.period_ms",
        "unknown field `period_ms`",
    );
}

#[test]
fn unknown_key_in_isolation() {
    expect_err(
        &base_with("policy = \"dicio\"", "policy = \"dicio\"\nmedia_gbps = 1.0"),
        5,
        "isolation.media_gbps",
        "unknown field `media_gbps`",
    );
}

#[test]
fn unknown_key_in_core_spec() {
    expect_err(
        &base_with("pm_cpus = 2", "pm_cpus = 2\nexpiry = 3"),
        9,
        "core_spec.expiry",
        "unknown field `expiry`",
    );
}

#[test]
fn unknown_key_in_placement() {
    expect_err(
        &base_with("enabled = false", "enabled = false\nmode = \"x\""),
        11,
        "placement.mode",
        "unknown field `mode`",
    );
}

#[test]
fn unknown_key_in_job() {
    expect_err(
        &base_with("class = \"be\"", "class = \"be\"\nprio = 3"),
        20,
        "job[1].prio",
        "unknown field `prio`",
    );
}

#[test]
fn unknown_key_in_job_match() {
    expect_err(
        &base_with("comm = \"fio\"", "comm = \"fio\"\nuser = \"root\""),
        22,
        "job[1].match.user",
        "unknown field `user`",
    );
}

#[test]
fn unknown_key_in_inline_match() {
    let text = base_with(
        "[job.match]\ncomm = \"fio\"",
        "match = { comm = \"fio\", uid = 0 }",
    );
    expect_err(&text, 20, "job[1].match.uid", "unknown field `uid`");
}

#[test]
fn unknown_key_as_dotted_subtable() {
    expect_err(
        &base_with("[daemon]", "[daemon.extra]\nx = 1\n[daemon]"),
        1,
        "daemon.extra",
        "unknown field `extra`",
    );
}

// ----- wrong types and missing keys

#[test]
fn wrong_type_integer() {
    expect_err(
        &base_with("period_us = 1000", "period_us = \"1ms\""),
        2,
        "daemon.period_us",
        "invalid type",
    );
}

#[test]
fn wrong_type_negative() {
    expect_err(
        &base_with("period_us = 1000", "period_us = -5"),
        2,
        "daemon.period_us",
        "-5",
    );
}

#[test]
fn wrong_type_float_array_element() {
    expect_err(
        &base_with("[30.0, 15.0, 5.0]", "[30.0, \"x\", 5.0]"),
        5,
        "isolation.dram_gbps[1]",
        "invalid type",
    );
}

#[test]
fn wrong_type_bool() {
    expect_err(
        &base_with("enabled = false", "enabled = 0"),
        10,
        "placement.enabled",
        "invalid type",
    );
}

#[test]
fn wrong_type_pm_cpus() {
    expect_err(
        &base_with("pm_cpus = 2", "pm_cpus = 1.5"),
        8,
        "core_spec.pm_cpus",
        "a CPU count (integer) or a CPU list string",
    );
}

#[test]
fn wrong_type_pid() {
    expect_err(
        &base_with("comm = \"fio\"", "pid = [\"12\"]"),
        21,
        "job[1].match.pid[0]",
        "invalid type",
    );
}

#[test]
fn wrong_type_section() {
    expect_err(
        &format!(
            "placement = 3\n{}",
            BASE.replace("[placement]\nenabled = false\n", "")
        ),
        1,
        "placement",
        "invalid type",
    );
}

#[test]
fn missing_job_name() {
    let e = expect_err(
        &base_with("name = \"be1\"\n", ""),
        17,
        "job[1].name",
        "missing field `name`",
    );
    assert_eq!(e.kind(), Some(ErrorKind::Schema));
}

#[test]
fn missing_job_class() {
    expect_err(
        &base_with("class = \"lc\"\n", ""),
        11,
        "job[0].class",
        "missing field `class`",
    );
}

#[test]
fn missing_job_match() {
    expect_err(
        &base_with("[job.match]\ncomm = \"fio\"\n", ""),
        17,
        "job[1].match",
        "missing field `match`",
    );
}

// ----- values

#[test]
fn unknown_class() {
    let e = expect_err(
        &base_with("class = \"be\"", "class = \"lx\""),
        19,
        "job[1].class",
        "unknown class \"lx\", expected one of lc, be, unmanaged",
    );
    assert_eq!(e.kind(), Some(ErrorKind::Value));
    assert_eq!(e.position(), Some((19, 1)));
}

#[test]
fn unknown_policy() {
    expect_err(
        &base_with("policy = \"dicio\"", "policy = \"caladan\""),
        4,
        "isolation.policy",
        "unknown policy \"caladan\", expected one of dicio, caladan-pm[:PM_GBPS[:DRAM_GBPS]], pm-counter-only, off",
    );
}

#[test]
fn every_policy_parses() {
    for (name, p) in IsolationPolicy::ALL {
        let c = parse(&base_with(
            "policy = \"dicio\"",
            &format!("policy = \"{name}\""),
        ))
        .unwrap();
        assert_eq!(c.isolation.policy, p);
    }
}

#[test]
fn policy_names_come_from_the_registry() {
    // caladan-pm's registry arguments set the thresholds of the core params
    let c = parse(&base_with(
        "policy = \"dicio\"",
        "policy = \"caladan-pm:2.5:25\"",
    ))
    .unwrap();
    assert_eq!(c.isolation.policy, IsolationPolicy::CaladanPm);
    assert_eq!(c.isolation.params.request_write_gbps, 2.5);
    assert_eq!(c.isolation.params.caladan_dram_gbps, Some(25.0));
    // a registry name that is not an isolation policy names the valid ones
    expect_err(
        &base_with("policy = \"dicio\"", "policy = \"pats\""),
        4,
        "isolation.policy",
        "not available in [isolation]; valid there: dicio, caladan-pm",
    );
    expect_err(
        &base_with("policy = \"dicio\"", "policy = \"caladan-pm:0\""),
        4,
        "isolation.policy",
        "thresholds must be GB/s > 0",
    );
    // the same threshold written twice, differently
    expect_err(
        &base_with(
            "policy = \"dicio\"",
            "policy = \"caladan-pm:2.5\"\nrequest_write_gbps = 3.0",
        ),
        5,
        "isolation.request_write_gbps",
        "contradicts policy",
    );
}

#[test]
fn period_too_small() {
    expect_err(
        &base_with("period_us = 1000", "period_us = 9"),
        2,
        "daemon.period_us",
        "between 10 and",
    );
    assert_eq!(
        parse(&base_with("period_us = 1000", "period_us = 10"))
            .unwrap()
            .daemon
            .period_us,
        10
    );
}

/// Issue 22 item 3: an unbounded duration was accepted and then made the
/// daemon sleep for ever (SIGTERM unheeded); every duration key is bounded.
#[test]
fn every_duration_is_bounded() {
    let huge = "9223372036854775807";
    expect_err(
        &base_with("period_us = 1000", &format!("period_us = {huge}")),
        2,
        "daemon.period_us",
        "between 10 and 1000000",
    );
    for (key, path) in [
        ("media_period_ms", "daemon.media_period_ms"),
        ("rescan_ms", "daemon.rescan_ms"),
        ("watchdog_ms", "daemon.watchdog_ms"),
    ] {
        expect_err(
            &base_with("period_us = 1000", &format!("{key} = {huge}")),
            2,
            path,
            "must be between",
        );
    }
    expect_err(
        &base_with("be_cpus = \"all\"", &format!("duty_period_us = {huge}")),
        6,
        "isolation.duty_period_us",
        "must be between",
    );
    for key in ["pm_expiry_ms", "general_expiry_ms"] {
        expect_err(
            &base_with("pm_cpus = 2", &format!("{key} = {huge}")),
            8,
            &format!("core_spec.{key}"),
            "must be between",
        );
    }
    for key in ["period_ms", "min_residency_ms"] {
        expect_err(
            &base_with("enabled = false", &format!("{key} = {huge}")),
            10,
            &format!("placement.{key}"),
            "must be between",
        );
    }
    // the largest accepted values parse
    let c = parse(&base_with(
        "period_us = 1000",
        "period_us = 1000000\nwatchdog_ms = 600000",
    ))
    .unwrap();
    assert_eq!(c.daemon.period_us, 1_000_000);
    assert_eq!(c.daemon.watchdog_ms, 600_000);
}

#[test]
fn the_watchdog_is_longer_than_a_few_periods() {
    assert_eq!(parse(BASE).unwrap().daemon.watchdog_ms, 2000);
    expect_err(
        &base_with("period_us = 1000", "period_us = 100000\nwatchdog_ms = 300"),
        3,
        "daemon.watchdog_ms",
        "shorter than 4 loop periods",
    );
    expect_err(
        &base_with("period_us = 1000", "watchdog_ms = 99"),
        2,
        "daemon.watchdog_ms",
        "between 100 and 600000",
    );
}

#[test]
fn media_period_zero() {
    expect_err(
        &base_with("period_us = 1000", "period_us = 1000\nmedia_period_ms = 0"),
        3,
        "daemon.media_period_ms",
        "between 1 and",
    );
}

#[test]
fn empty_socket_and_journal() {
    expect_err(
        &base_with("period_us = 1000", "socket = \"\""),
        2,
        "daemon.socket",
        "empty",
    );
    expect_err(
        &base_with("period_us = 1000", "journal = \"\""),
        2,
        "daemon.journal",
        "empty",
    );
}

#[test]
fn thresholds_must_be_finite_and_positive() {
    for key in [
        "media_write_gbps",
        "media_read_gbps",
        "wpq_delay_cycles",
        "predict_factor",
        "request_write_gbps",
    ] {
        for bad in ["0.0", "-1.0", "nan", "inf", "-inf", "0"] {
            let text = base_with("policy = \"dicio\"", &format!("{key} = {bad}"));
            expect_err(&text, 4, &format!("isolation.{key}"), "finite number > 0");
        }
        let ok = base_with("policy = \"dicio\"", &format!("{key} = 3"));
        parse(&ok).unwrap();
    }
}

#[test]
fn dram_gbps_needs_three() {
    for bad in ["[]", "[1.0]", "[3.0, 2.0]", "[4.0, 3.0, 2.0, 1.0]"] {
        expect_err(
            &base_with("[30.0, 15.0, 5.0]", bad),
            5,
            "isolation.dram_gbps",
            "expected 3 values",
        );
    }
}

#[test]
fn dram_gbps_non_increasing() {
    expect_err(
        &base_with("[30.0, 15.0, 5.0]", "[30.0, 15.0, 16.0]"),
        5,
        "isolation.dram_gbps[2]",
        "must not increase",
    );
    let c = parse(&base_with("[30.0, 15.0, 5.0]", "[10, 10, 10]")).unwrap();
    assert_eq!(c.isolation.params.dram_gbps, [10.0; 3]);
}

#[test]
fn dram_gbps_positive() {
    expect_err(
        &base_with("[30.0, 15.0, 5.0]", "[30.0, 15.0, 0.0]"),
        5,
        "isolation.dram_gbps[2]",
        "finite number > 0",
    );
}

#[test]
fn dram_gbps_multiline_points_at_element() {
    expect_err(
        &base_with("[30.0, 15.0, 5.0]", "[\n  30.0,\n  -15.0,\n  5.0,\n]"),
        7,
        "isolation.dram_gbps[1]",
        "finite number > 0",
    );
}

#[test]
fn duty_period_too_small() {
    expect_err(
        &base_with("policy = \"dicio\"", "duty_period_us = 0"),
        4,
        "isolation.duty_period_us",
        "between 10 and",
    );
}

#[test]
fn be_cpus_forms() {
    let c = parse(&base_with("be_cpus = \"all\"", "be_cpus = \"4-15\"")).unwrap();
    assert_eq!(
        c.isolation.be_cpus,
        CpuChoice::List(CpuSet::parse_list("4-15").unwrap())
    );
    for bad in ["\"\"", "\"some\"", "\"3-1\"", "\"4096\""] {
        expect_err(
            &base_with("be_cpus = \"all\"", &format!("be_cpus = {bad}")),
            6,
            "isolation.be_cpus",
            "CPU list",
        );
    }
}

#[test]
fn be_cpus_all_reserved_by_lc() {
    expect_err(
        &base_with("be_cpus = \"all\"", "be_cpus = \"0-3\""),
        6,
        "isolation.be_cpus",
        "BE jobs could never run",
    );
}

#[test]
fn be_cpu_pool_excludes_lc() {
    let c = parse(&base_with("be_cpus = \"all\"", "be_cpus = \"2-9\"")).unwrap();
    let online = CpuSet::first_n(8);
    assert_eq!(c.be_cpu_pool(&online).to_string(), "4-7");
    let c = parse(BASE).unwrap();
    assert_eq!(c.be_cpu_pool(&online).to_string(), "4-7");
}

#[test]
fn pm_cpus_forms() {
    let c = parse(&base_with("pm_cpus = 2", "pm_cpus = \"0-1\"")).unwrap();
    assert_eq!(
        c.core_spec.pm_cpus,
        PmCpus::List(CpuSet::parse_list("0-1").unwrap())
    );
    let c = parse(&base_with("pm_cpus = 2", "pm_cpus = 1")).unwrap();
    assert_eq!(c.core_spec.pm_cpus, PmCpus::Count(1));
    for bad in ["0", "-1", "1025", "9223372036854775807"] {
        expect_err(
            &base_with("pm_cpus = 2", &format!("pm_cpus = {bad}")),
            8,
            "core_spec.pm_cpus",
            "between 1 and 1024",
        );
    }
    for bad in ["\"\"", "\"x\""] {
        expect_err(
            &base_with("pm_cpus = 2", &format!("pm_cpus = {bad}")),
            8,
            "core_spec.pm_cpus",
            "CPU list",
        );
    }
}

#[test]
fn expiry_zero() {
    expect_err(
        &base_with("pm_cpus = 2", "pm_expiry_ms = 0"),
        8,
        "core_spec.pm_expiry_ms",
        "between 1 and",
    );
    expect_err(
        &base_with("pm_cpus = 2", "general_expiry_ms = 0"),
        8,
        "core_spec.general_expiry_ms",
        "between 1 and",
    );
}

#[test]
fn no_jobs() {
    let text = BASE.split("[[job]]").next().unwrap().to_string();
    let e = expect_err(&text, 1, "job", "at least one job");
    assert_eq!(e.position(), Some((1, 1)));
    expect_err("job = []\n", 1, "job", "at least one job");
}

#[test]
fn job_names() {
    // `.` and `..` would name the cgroup directory itself or its parent
    for bad in [
        "\"\"",
        "\"mem cached\"",
        "\"a/b\"",
        "\"é\"",
        "\"..\"",
        "\".\"",
    ] {
        expect_err(
            &base_with("name = \"be1\"", &format!("name = {bad}")),
            18,
            "job[1].name",
            "invalid job name",
        );
    }
    parse(&base_with("name = \"be1\"", "name = \"A-z_0.9\"")).unwrap();
}

#[test]
fn duplicate_job_names() {
    expect_err(
        &base_with("name = \"be1\"", "name = \"lc1\""),
        18,
        "job[1].name",
        "duplicate job name \"lc1\"",
    );
}

#[test]
fn job_without_selector() {
    expect_err(
        &base_with("[job.match]\ncomm = \"fio\"\n", "match = {}\n"),
        20,
        "job[1].match",
        "no selector",
    );
    expect_err(
        &base_with("comm = \"fio\"", "pid = []"),
        20,
        "job[1].match",
        "no selector",
    );
}

#[test]
fn job_bad_glob() {
    expect_err(
        &base_with("comm = \"fio\"", "comm = \"fio[\""),
        21,
        "job[1].match.comm",
        "unclosed",
    );
    expect_err(
        &base_with("comm = \"fio\"", "exe = \"\""),
        21,
        "job[1].match.exe",
        "empty glob",
    );
    expect_err(
        &base_with("comm = \"fio\"", "cgroup = \"[z-a]\""),
        21,
        "job[1].match.cgroup",
        "reversed",
    );
    expect_err(
        &base_with("comm = \"fio\"", "unit = \"[\""),
        21,
        "job[1].match.unit",
        "unclosed",
    );
}

#[test]
fn job_bad_pid() {
    for (bad, idx) in [("[0]", 0), ("[1, -4]", 1), ("[1, 2, 4294967296]", 2)] {
        expect_err(
            &base_with("comm = \"fio\"", &format!("pid = {bad}")),
            21,
            &format!("job[1].match.pid[{idx}]"),
            "not a valid pid",
        );
    }
}

#[test]
fn job_bad_cpus() {
    for bad in ["\"\"", "\"0-\"", "\"a\"", "\"4-2\"", "\"4096\""] {
        expect_err(
            &base_with("cpus = \"0-3\"", &format!("cpus = {bad}")),
            14,
            "job[0].cpus",
            "CPU list",
        );
    }
}

#[test]
fn lc_cpus_overlap() {
    let text = format!(
        "{BASE}[[job]]\nname = \"lc2\"\nclass = \"lc\"\ncpus = \"3-5\"\n[job.match]\ncomm = \"redis\"\n"
    );
    expect_err(
        &text,
        25,
        "job[2].cpus",
        "CPUs 3 are also in job[0] (\"lc1\")",
    );
    let ok = text.replace("3-5", "4-5");
    parse(&ok).unwrap();
}

#[test]
fn be_cpus_overlap_lc() {
    expect_err(
        &base_with("class = \"be\"", "class = \"be\"\ncpus = \"2-8\""),
        20,
        "job[1].cpus",
        "BE jobs may not be allowed on an LC job's reserved CPUs",
    );
    parse(&base_with(
        "class = \"be\"",
        "class = \"be\"\ncpus = \"4-8\"",
    ))
    .unwrap();
}

#[test]
fn be_jobs_may_share_cpus() {
    let text = format!(
        "{BASE}[[job]]\nname = \"be2\"\nclass = \"be\"\ncpus = \"4-5\"\n[job.match]\ncomm = \"x\"\n"
    );
    let text = text.replacen("class = \"be\"", "class = \"be\"\ncpus = \"4-9\"", 1);
    parse(&text).unwrap();
}

#[test]
fn unmanaged_with_cpus() {
    expect_err(
        &base_with("class = \"be\"", "class = \"unmanaged\"\ncpus = \"5\""),
        20,
        "job[1].cpus",
        "unmanaged",
    );
}

#[test]
fn error_in_later_job_of_many_points_at_it() {
    let mut text = BASE.to_string();
    for n in 2..6 {
        text.push_str(&format!(
            "[[job]]\nname = \"j{n}\"\nclass = \"be\"\n[job.match]\ncomm = \"c{n}\"\n"
        ));
    }
    let text = text.replace("comm = \"c4\"", "comm = 4");
    let line = text.lines().position(|l| l == "comm = 4").unwrap() + 1;
    expect_err(&text, line, "job[4].match.comm", "invalid type");
}

#[test]
fn column_is_reported() {
    let e = parse(&base_with("period_us = 1000", "period_us = \"x\"")).unwrap_err();
    assert_eq!(e.position(), Some((2, 13)));
}

#[test]
fn empty_and_garbage_input() {
    expect_err("", 1, "job", "at least one job");
    expect_err("\u{0}", 1, "(top level)", "");
    expect_err("[[job]]\n", 1, "job[0].name", "missing field `name`");
    expect_err(
        "[[job]]\nname=\"a\"\nclass=\"lc\"\nmatch=3\n",
        4,
        "job[0].match",
        "invalid type",
    );
}

// ----- fuzz-ish

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn mutate(rng: &mut Rng, text: &str) -> String {
    const ALPHABET: &[char] = &[
        '[', ']', '{', '}', '=', '"', '\'', '.', ',', '#', '\n', ' ', '-', '0', '1', '9', 'a', 'z',
        '_', 'é', '\\', 'e', '+', ':', '\u{0}',
    ];
    const TOKENS: &[&str] = &[
        "[[job]]",
        "[job.match]",
        "[daemon]",
        "period_us = 5",
        "nan",
        "-inf",
        "\"all\"",
        "class = \"lc\"",
        "cpus = \"0-3\"",
        "pid = [1]",
        "1e400",
        "99999999999999999999",
        "\"\"\"",
    ];
    let mut chars: Vec<char> = text.chars().collect();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(chars.len() + 1);
        match rng.below(7) {
            0 if at < chars.len() => {
                chars.remove(at);
            }
            1 => chars.insert(at, ALPHABET[rng.below(ALPHABET.len())]),
            2 if at < chars.len() => chars[at] = ALPHABET[rng.below(ALPHABET.len())],
            3 => {
                let tok = TOKENS[rng.below(TOKENS.len())];
                for (i, c) in tok.chars().enumerate() {
                    chars.insert(at + i, c);
                }
            }
            4 => {
                // delete a run
                let end = (at + rng.below(40)).min(chars.len());
                chars.drain(at.min(end)..end);
            }
            5 => {
                // duplicate a line
                let s: String = chars.iter().collect();
                let lines: Vec<&str> = s.lines().collect();
                if !lines.is_empty() {
                    let l = lines[rng.below(lines.len())].to_string();
                    let mut out: Vec<String> = lines.iter().map(|x| x.to_string()).collect();
                    out.insert(rng.below(out.len() + 1), l);
                    chars = out.join("\n").chars().collect();
                }
            }
            _ => chars.truncate(at),
        }
    }
    chars.into_iter().collect()
}

#[test]
fn random_mutations_never_panic() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let (mut ok, mut bad) = (0, 0);
    // MEMTAMER_FUZZ_ITERS raises the count for a longer local run.
    let iters = std::env::var("MEMTAMER_FUZZ_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4000);
    let show = std::env::var_os("MEMTAMER_FUZZ_SHOW").is_some();
    for _ in 0..iters {
        let text = mutate(&mut rng, EXAMPLE);
        match DaemonConfig::parse(&text, "fuzz.toml") {
            Ok(_) => ok += 1,
            Err(e) => {
                bad += 1;
                let msg = e.to_string();
                if show {
                    println!("{msg}");
                }
                assert!(msg.starts_with("fuzz.toml:"), "{msg}");
                let (line, col) = e.position().unwrap();
                assert!(line >= 1 && col >= 1, "{msg}");
                assert!(line <= text.lines().count() + 1, "{msg}\n---\n{text}");
                assert!(!e.key().unwrap().is_empty(), "{msg}");
                if let ConfigError::Invalid { message, .. } = &e {
                    assert!(!message.trim().is_empty(), "{msg}\n---\n{text:?}");
                }
            }
        }
    }
    assert!(
        ok > 100 && bad > 100,
        "mutations too tame or too wild: {ok} ok, {bad} bad"
    );
}

#[test]
fn actuator_is_affinity_by_default_cgroup_on_request_and_nothing_else() {
    use memtamer_control::config::Actuator;
    assert_eq!(parse(BASE).unwrap().isolation.actuator, Actuator::Affinity);
    let c = parse(&base_with(
        "be_cpus = \"all\"",
        "be_cpus = \"all\"\nactuator = \"cgroup\"",
    ))
    .unwrap();
    assert_eq!(c.isolation.actuator, Actuator::Cgroup);
    expect_err(
        &base_with(
            "be_cpus = \"all\"",
            "be_cpus = \"all\"\nactuator = \"freezer\"",
        ),
        7,
        "isolation.actuator",
        "unknown actuator \"freezer\", expected one of affinity, cgroup",
    );
}

#[test]
fn gate_section_is_validated_by_the_gate_rules_and_names_its_keys() {
    let with = |s: &str| format!("{BASE}\n[gate]\n{s}\n");
    let c = parse(&with("name = \"db\"")).unwrap();
    let g = c.gate.expect("gate");
    assert_eq!(g.name, "db");
    assert_eq!(g.dir, std::path::PathBuf::from("/dev/shm"));
    assert_eq!(g.policy, memtamer_gate::PolicySpec::Pats { t_mc: 0.2 });
    assert_eq!(g.pm_interleave, 1);
    let gate_warnings = |w: &[String]| -> Vec<String> {
        w.iter()
            .filter(|l| l.starts_with("gate"))
            .cloned()
            .collect()
    };
    assert!(gate_warnings(&c.warnings).is_empty());
    assert!(parse(BASE).unwrap().gate.is_none());
    // a deprecated alias parses, with a warning naming the key
    let c = parse(&with(
        "name = \"db\"\npolicy = \"fixed:2\"\npm_interleave = 6",
    ))
    .unwrap();
    let g = c.gate.expect("gate");
    assert_eq!(g.policy, memtamer_gate::PolicySpec::Fixed(2));
    assert_eq!(g.pm_interleave, 6);
    assert_eq!(
        gate_warnings(&c.warnings),
        vec!["gate.policy: policy name `fixed` is deprecated, write `gate`"]
    );
    for (text, key, needle) in [
        ("name = \"../etc\"", "gate.name", "1-64 characters"),
        (
            "name = \"db\"\npolicy = \"dicio\"",
            "gate.policy",
            "not available in the gate",
        ),
        (
            "name = \"db\"\npolicy = \"gate:0\"",
            "gate.policy",
            "N must be a whole number",
        ),
        (
            "name = \"db\"\npm_interleave = 0",
            "gate.pm_interleave",
            "1..=64",
        ),
        (
            "name = \"db\"\ndir = \"/nonexistent-dir\"",
            "gate.dir",
            "an existing directory",
        ),
        (
            "name = \"db\"\npolicy = \"pats-calibrated:/nonexistent/m.toml\"",
            "gate.policy",
            "/nonexistent/m.toml",
        ),
        ("policy = \"pats\"", "gate", "missing field `name`"),
        ("name = \"db\"\nlimit = 3", "gate", "unknown field `limit`"),
    ] {
        let e = parse(&with(text)).expect_err(text).to_string();
        assert!(
            e.contains(&format!(": {key}")) && e.contains(needle),
            "{text}: {e}"
        );
    }
}

/// Issue 22 item 5: `[job.require]` uid and cgroup parse, bad ones name
/// their key, and a job any user could join by naming a process is warned
/// about at load.
#[test]
fn job_requirements_and_the_spoofing_warning() {
    let c = parse(BASE).unwrap();
    assert_eq!(c.warnings.len(), 2, "{:?}", c.warnings);
    assert!(
        c.warnings[0].contains("job[0] (\"lc1\")")
            && c.warnings[0].contains("pinned to CPUs 0-3")
            && c.warnings[0].contains("[job.require]"),
        "{:?}",
        c.warnings
    );
    let text = base_with(
        "[job.match]\ncomm = \"memcached\"\n",
        "[job.match]\ncomm = \"memcached\"\n[job.require]\nuid = [998, 0]\ncgroup = \"/system.slice/*\"\n",
    );
    let c = parse(&text).unwrap();
    assert_eq!(c.jobs[0].require.uid, vec![998, 0]);
    assert_eq!(c.jobs[0].require.cgroup.as_deref(), Some("/system.slice/*"));
    assert_eq!(c.warnings.len(), 1, "only be1 is left: {:?}", c.warnings);
    assert!(c.warnings[0].contains("be1"));
    expect_err(
        &text.replace("[998, 0]", "[998, -1]"),
        18,
        "job[0].require.uid[1]",
        "not a valid uid: -1",
    );
    expect_err(
        &text.replace("/system.slice/*", "[x"),
        19,
        "job[0].require.cgroup",
        "unclosed",
    );
    expect_err(
        &text.replace("uid = [998, 0]", "user = \"memcached\""),
        18,
        "job[0].require.user",
        "unknown field `user`",
    );
}

#[test]
fn pod_selectors_parse_and_the_cgroup_actuator_acts_in_place() {
    let text = r#"
[isolation]
actuator = "affinity"

[[job]]
name = "batch"
class = "be"
[job.match]
pod = "batch/*"
"#;
    let c = parse(text).unwrap();
    assert_eq!(c.jobs[0].matcher.pod.as_deref(), Some("batch/*"));
    // the cgroup actuator changes the pods' own cgroups in place
    let in_place = text.replace("\"affinity\"", "\"cgroup\"");
    assert!(parse(&in_place).is_ok());
    // a job of pods and other processes would need both ways: refused
    let mixed = in_place.replace("pod = \"batch/*\"", "pod = \"batch/*\"\ncomm = \"fio\"");
    expect_err(
        &mixed,
        3,
        "isolation.actuator",
        "selects Kubernetes pods and other processes",
    );
    // a bad glob names the key
    expect_err(
        &text.replace("batch/*", "batch/["),
        9,
        "job[0].match.pod",
        "",
    );
}

#[test]
fn namespace_and_label_selectors_parse_and_bad_labels_name_the_key() {
    let text = r#"
[isolation]
actuator = "affinity"

[[job]]
name = "redis"
class = "lc"
[job.match]
namespace = "prod"
labels = { app = "redis", "app.kubernetes.io/part-of" = "cache" }
"#;
    let c = parse(text).unwrap();
    let m = &c.jobs[0].matcher;
    assert_eq!(m.namespace.as_deref(), Some("prod"));
    assert_eq!(m.labels.get("app").map(String::as_str), Some("redis"));
    assert_eq!(m.labels.len(), 2);
    expect_err(
        &text.replace("\"redis\", \"app", "\"in (redis, x)\", \"app"),
        10,
        "job[0].match.labels.app",
        "set-based selectors",
    );
    expect_err(
        &text.replace("namespace = \"prod\"", "namespace = \"[\""),
        9,
        "job[0].match.namespace",
        "unclosed",
    );
}
