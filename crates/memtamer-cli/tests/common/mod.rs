//! What the CLI integration tests share: run the built binary and read what
//! it did. Each test crate uses only part of it.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};

/// Runs the built `memtamer` with `args` and waits for it.
pub fn memtamer(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_memtamer"))
        .args(args)
        .output()
        .expect("the memtamer binary runs")
}

/// The exit code (the tests never expect a signal).
pub fn code(out: &Output) -> i32 {
    out.status.code().expect("exited, not killed by a signal")
}

/// Standard output as text.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Standard error as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A fresh directory of this test process, named after the test file
/// (`suite`) and the test (`tag`).
pub fn temp_dir(suite: &str, tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("memtamer-{suite}-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
