//! `MEMTAMER_RIBBON_P1` above the hardware threads, through the C ABI:
//! `ribbon_start` succeeds (the setting is right on a larger host) and
//! says on stderr that P1 is capped, naming the variable, the value and
//! the cap; before, the cap was silent. The test runs itself again as a
//! child process to read that child's stderr.

use memtamer_ribbon::capi::{ribbon_start, ribbon_stop};
use std::process::Command;

const CHILD: &str = "MEMTAMER_TEST_P1_CHILD";
const NAME: &str = "ribbon_start_says_on_stderr_when_p1_is_capped";

#[test]
fn ribbon_start_says_on_stderr_when_p1_is_capped() {
    if std::env::var_os(CHILD).is_some() {
        assert_eq!(ribbon_start(1, 8), 0);
        assert_eq!(ribbon_stop(), 0);
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let run = |p1: &str| {
        let out = Command::new(&exe)
            .args(["--exact", NAME, "--nocapture", "--test-threads=1"])
            .env(CHILD, "1")
            .env("MEMTAMER_RIBBON_P1", p1)
            .env("MEMTAMER_RIBBON_FLUSHERS", "auto")
            .env_remove("MEMTAMER_RIBBON_SHARED")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "P1={p1}: {err}");
        err
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let err = run("100000");
    let line = format!(
        "memtamer ribbon: MEMTAMER_RIBBON_P1=100000 is above the {cores} hardware threads \
         this process may use; P1 is capped at {cores}"
    );
    assert!(err.contains(&line), "{err}");
    assert!(!run("1").contains("MEMTAMER_RIBBON_P1"), "no note in range");
}
