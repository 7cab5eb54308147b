//! The daemon against real processes: a panic in the control loop restores
//! every change; a process no job selects is never touched.

use memtamer_control::config::DaemonConfig;
use memtamer_control::daemon::Daemon;
use memtamer_core::compose::Composite;
use memtamer_core::{CpuSet, Decision, Observation, Policy};
use std::process::{Child, Command};

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn cpus_allowed(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap_or("")
        .trim()
        .to_string()
}

struct Kill(Child);
impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Pins every thread it sees to CPU 0, then panics after `calls` windows.
struct PinThenPanic {
    calls: u32,
}

impl Policy for PinThenPanic {
    fn name(&self) -> &str {
        "pin-then-panic"
    }
    fn decide(&mut self, obs: &Observation) -> Decision {
        self.calls = self.calls.saturating_sub(1);
        if self.calls == 0 {
            panic!("injected failure");
        }
        Decision {
            thread_cpus: obs
                .threads
                .iter()
                .map(|t| (t.tid, CpuSet::parse_list("0").expect("cpu 0")))
                .collect(),
            ..Default::default()
        }
    }
}

#[test]
fn a_panic_in_the_loop_restores_every_change_and_bystanders_are_never_touched() {
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    if !is_root() || online.trim() == "0" {
        eprintln!("skipped: needs root and at least 2 CPUs");
        return;
    }
    let managed = Kill(Command::new("sleep").arg("30").spawn().expect("sleep"));
    let bystander = Kill(Command::new("sleep").arg("31").spawn().expect("sleep"));
    let before = cpus_allowed(managed.0.id());
    let bystander_before = cpus_allowed(bystander.0.id());
    assert_ne!(
        before, "0",
        "the test needs a managed process not already on CPU 0"
    );
    let dir = std::env::temp_dir().join(format!("memtamer-daemon-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let text = format!(
        "[daemon]\nperiod_us = 1000\nrescan_ms = 10\nsocket = \"{d}/control.sock\"\njournal = \"{d}/journal\"\n\
         [isolation]\npolicy = \"off\"\n\
         [[job]]\nname = \"victim\"\nclass = \"be\"\nmatch = {{ pid = [{pid}] }}\n",
        d = dir.display(),
        pid = managed.0.id()
    );
    let cfg = DaemonConfig::parse(&text, "test.toml").expect("config");
    let sources = memtamer_sense::sources::SourceConfig::default();
    let mut daemon = Daemon::start(cfg, std::path::Path::new("/proc"), &sources).expect("start");
    daemon.set_policy(Composite::new(
        None,
        Some(Box::new(PinThenPanic { calls: 50 })),
        None,
        None,
    ));
    // watch the managed process while the daemon runs
    let pid = managed.0.id();
    let watcher = std::thread::spawn(move || {
        let mut pinned = false;
        for _ in 0..400 {
            if cpus_allowed(pid) == "0" {
                pinned = true;
                break;
            }
            std::thread::sleep(std::time::Duration::from_micros(250));
        }
        pinned
    });
    let result = daemon.run(Some(1000));
    let pinned = watcher.join().expect("watcher");
    let err = result.expect_err("the injected panic must surface as an error");
    assert!(err.to_string().contains("panicked"), "{err}");
    assert!(pinned, "the daemon never pinned the managed process");
    assert_eq!(
        cpus_allowed(managed.0.id()),
        before,
        "not restored after the panic"
    );
    assert_eq!(
        cpus_allowed(bystander.0.id()),
        bystander_before,
        "a bystander was touched"
    );
    let journal = std::fs::read_to_string(dir.join("journal")).unwrap_or_default();
    assert!(journal.trim().is_empty(), "journal left: {journal}");
    let _ = std::fs::remove_dir_all(&dir);
}
