//! The exit code of each class of ending, through the built binary: 0 ok,
//! 1 a check failed, 2 usage error, 3 runtime error. Scripts branch on these.

mod common;
use common::*;

#[test]
fn success_is_0() {
    let out = memtamer(&["sim", "list"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("scenarios:"));
    let dir = temp_dir("exit-codes", "ok");
    let journal = dir.join("journal");
    let out = memtamer(&["restore", "--journal", journal.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_failed_check_is_1() {
    // a journal whose one change cannot be undone: the "cgroup file" is a
    // directory, so writing the original value back fails
    let dir = temp_dir("exit-codes", "failed");
    let target = dir.join("not-a-file");
    std::fs::create_dir(&target).unwrap();
    let journal = dir.join("journal");
    std::fs::write(
        &journal,
        format!(
            "{{\"record\":{{\"kind\":\"CgroupValue\",\"file\":{:?},\"original\":\"1\"}}}}\n",
            target.to_str().unwrap()
        ),
    )
    .unwrap();
    let out = memtamer(&["restore", "--journal", journal.to_str().unwrap()]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("1 failed"));
    assert!(
        stderr(&out).contains("could not undo {\"kind\":\"CgroupValue\""),
        "{}",
        stderr(&out)
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn usage_errors_are_2() {
    // clap's own
    let out = memtamer(&["sim", "run", "--no-such-flag"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let out = memtamer(&["no-such-command"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    // parsed by clap, rejected by the command
    let out = memtamer(&["sim", "run", "demo", "--set", "duration_ms"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("expected KEY=VALUE"),
        "{}",
        stderr(&out)
    );
    let out = memtamer(&["sim", "run", "no-such-scenario"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("unknown scenario"),
        "{}",
        stderr(&out)
    );
    let out = memtamer(&["gate", "set-limit", "--dir", "/nonexistent", "many"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let out = memtamer(&["gate", "stats", "--dir", "/nonexistent", "--watch", "0"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
}

#[test]
fn runtime_errors_are_3() {
    let dir = temp_dir("exit-codes", "runtime");
    let d = dir.to_str().unwrap();
    let out = memtamer(&["gate", "stats", "--name", "absent", "--dir", d]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no gate named \"absent\""),
        "{}",
        stderr(&out)
    );
    let config = dir.join("missing.toml");
    let out = memtamer(&["run", "--config", config.to_str().unwrap()]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(stderr(&out).contains("missing.toml"), "{}", stderr(&out));
    let socket = dir.join("control.sock");
    let out = memtamer(&["status", "--socket", socket.to_str().unwrap()]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let report = dir.join("report-is-a-file");
    std::fs::write(&report, "").unwrap();
    let out = memtamer(&[
        "sim",
        "run",
        "demo",
        "--set",
        "duration_ms=1",
        "--report",
        report.to_str().unwrap(),
    ]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(stderr(&out).contains("cannot create"), "{}", stderr(&out));
    std::fs::remove_dir_all(dir).unwrap();
}
