//! `memtamer tier status` on the status file of a real tier runtime: this
//! test process is the program (it uses the C ABI as a C program does, with
//! MEMTAMER_TIER_STATUS_DIR set), then runs the CLI on the directory and
//! checks it shows what the runtime itself reports at its finish. A
//! truncated file beside it is named, exit 3, and the good rank still shown.

mod common;
use common::{code, memtamer, stderr, stdout, temp_dir};
use memtamer_tier::capi::{
    mt_tier_finish, mt_tier_free, mt_tier_iteration, mt_tier_malloc, mt_tier_phase_boundary,
    mt_tier_set_rank,
};
use std::ffi::{c_char, c_void};

const MB: usize = 1 << 20;

fn sweep(p: *mut c_void, n: usize, times: usize) {
    let p = p as *mut u8;
    for _ in 0..times {
        for i in (0..n).step_by(64) {
            unsafe { std::ptr::write_volatile(p.add(i), std::ptr::read_volatile(p.add(i)) ^ 1) };
        }
    }
}

fn field(line: &str, key: &str) -> u64 {
    let mut it = line.split_whitespace();
    while let Some(w) = it.next() {
        if w == key {
            return it.next().unwrap().parse().unwrap();
        }
    }
    panic!("{key} not in {line}");
}

#[test]
fn status_of_a_real_runtime_and_a_broken_file() {
    let dir = temp_dir("tier-status", "run");
    std::env::set_var("MEMTAMER_TIER_STATUS_DIR", &dir);
    std::env::set_var("MEMTAMER_DRAM_BUDGET", "3M");
    // the decision on the application thread: the plan is in force from
    // iteration 2 however slowly a loaded host runs a decision thread
    std::env::set_var("MEMTAMER_DECIDE_THREAD", "0");
    mt_tier_set_rank(0, 2);
    let a = unsafe { mt_tier_malloc(2 * MB, c"hot".as_ptr()) };
    let b = unsafe { mt_tier_malloc(2 * MB, c"cold".as_ptr()) };
    assert!(!a.is_null() && !b.is_null());
    for _ in 0..12 {
        mt_tier_iteration();
        sweep(a, 2 * MB, 20);
        mt_tier_phase_boundary();
        sweep(b, 2 * MB, 1);
        mt_tier_phase_boundary();
    }
    // while running: one document, state running
    let out = memtamer(&["tier", "status", "--dir", dir.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("rank 0 of 2 ("),
        "{}",
        stdout(&out)
    );
    assert!(stdout(&out).contains("running"), "{}", stdout(&out));
    let mut buf = [0 as c_char; 1024];
    let n = unsafe { mt_tier_finish(buf.as_mut_ptr(), buf.len()) };
    assert!(n > 0);
    let report = unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    let (moves, bytes) = (field(&report, "moves"), field(&report, "bytes_moved"));

    let out = memtamer(&[
        "tier",
        "status",
        "--dir",
        dir.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let s = &v["ranks"][0]["status"];
    assert_eq!(v["ranks"].as_array().unwrap().len(), 1);
    assert_eq!(s["state"], "finished");
    assert_eq!(
        (s["rank"].as_u64(), s["ranks"].as_u64()),
        (Some(0), Some(2))
    );
    assert_eq!(s["pid"].as_u64(), Some(u64::from(std::process::id())));
    assert_eq!(s["dram_budget"].as_u64(), Some(3 * MB as u64));
    assert_eq!(
        (s["moves"].as_u64(), s["bytes_moved"].as_u64()),
        (Some(moves), Some(bytes))
    );
    assert_eq!(s["iterations"].as_u64(), Some(12));
    assert!(s["decisions"].as_u64().unwrap() >= 1, "{s}");
    let objs = s["objects"].as_array().unwrap();
    let mut names: Vec<&str> = objs.iter().map(|o| o["name"].as_str().unwrap()).collect();
    names.sort();
    assert_eq!(names, ["cold", "hot"]);
    // per direction, as the report line counts them, adding up to the totals
    let (up, down) = (&s["to_dram"], &s["to_slow"]);
    assert_eq!(
        (up["moves"].as_u64(), up["bytes"].as_u64()),
        (
            Some(field(&report, "promoted")),
            Some(field(&report, "promoted_bytes"))
        ),
        "{report}"
    );
    assert_eq!(
        (down["moves"].as_u64(), down["bytes"].as_u64()),
        (
            Some(field(&report, "evicted")),
            Some(field(&report, "evicted_bytes"))
        ),
        "{report}"
    );
    assert_eq!(
        field(&report, "promoted") + field(&report, "evicted"),
        moves
    );
    // per-object moves add up to the rank's
    let per: u64 = objs.iter().map(|o| o["moves"].as_u64().unwrap()).sum();
    assert_eq!(per, moves);
    // DRAM holds at most one of the two 2 MiB objects
    let in_dram = objs.iter().filter(|o| o["tier"] == "dram").count();
    assert!(in_dram <= 1, "{s}");

    let out = memtamer(&["tier", "status", "--dir", dir.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let t = stdout(&out);
    assert!(
        t.contains("finished") && t.contains("DRAM ") && t.contains(" of 3.0 MiB"),
        "{t}"
    );
    assert!(t.lines().any(|l| l.trim_start().starts_with("hot ")), "{t}");
    assert!(
        t.lines()
            .any(|l| l.starts_with("  to DRAM ") && l.contains("; to slow ")),
        "{t}"
    );

    // a truncated document of another rank: named, exit 3, rank 0 still shown
    let text = std::fs::read_to_string(dir.join("rank0.json")).unwrap();
    std::fs::write(dir.join("rank1.json"), &text[..text.len() / 3]).unwrap();
    let out = memtamer(&["tier", "status", "--dir", dir.to_str().unwrap()]);
    assert_eq!(code(&out), 3);
    assert!(stdout(&out).starts_with("rank 0 of 2"), "{}", stdout(&out));
    let e = stderr(&out);
    assert!(e.contains("rank1.json: not a tier status file"), "{e}");
    assert!(!e.contains("panicked"), "{e}");

    // an empty or missing directory, and no directory at all
    let empty = temp_dir("tier-status", "empty");
    let out = memtamer(&["tier", "status", "--dir", empty.to_str().unwrap()]);
    assert_eq!(code(&out), 3);
    assert!(
        stderr(&out).contains("no tier status files"),
        "{}",
        stderr(&out)
    );
    let out = memtamer(&["tier", "status", "--dir", "/nonexistent/memtamer-tier"]);
    assert_eq!(code(&out), 3);
    assert!(
        stderr(&out).contains("/nonexistent/memtamer-tier"),
        "{}",
        stderr(&out)
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_memtamer"))
        .args(["tier", "status"])
        .env_remove("MEMTAMER_TIER_STATUS_DIR")
        .output()
        .unwrap();
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("MEMTAMER_TIER_STATUS_DIR"),
        "{}",
        stderr(&out)
    );
    let out = memtamer(&[
        "tier",
        "status",
        "--dir",
        empty.to_str().unwrap(),
        "--format",
        "csv",
    ]);
    assert_eq!(code(&out), 2);

    assert_eq!(mt_tier_free(a), 0);
    assert_eq!(mt_tier_free(b), 0);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&empty);
}
