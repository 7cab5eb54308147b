//! The daemon owns the PATS gate's limit when `[gate]` names a gate: a
//! decision's `gate_limit` reaches the shared file in /dev/shm, and what
//! the daemon cannot apply is reported, never dropped silently.

use memtamer_control::config::DaemonConfig;
use memtamer_control::daemon::{Daemon, NOT_MANAGED, NO_GATE};
use memtamer_core::{Actuators, Decision, GateLimit, Knob, Migration};
use memtamer_gate::{Gate, GateOptions};
use std::path::{Path, PathBuf};

struct Cleanup(Vec<PathBuf>);
impl Drop for Cleanup {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = std::fs::remove_dir_all(p);
            let _ = std::fs::remove_file(p);
        }
    }
}

/// A daemon that manages nothing (its one job matches no process), with
/// `gate` appended to its config.
fn daemon(tag: &str, gate: &str) -> (Daemon, Cleanup) {
    let dir = std::env::temp_dir().join(format!("memtamer-gate-act-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let text = format!(
        "[daemon]\nsocket = \"{d}/control.sock\"\njournal = \"{d}/journal\"\n\
         [isolation]\npolicy = \"off\"\n{gate}\n\
         [[job]]\nname = \"nobody\"\nclass = \"be\"\nmatch = {{ comm = \"no-such-comm-xyz\" }}\n",
        d = dir.display(),
    );
    let cfg = DaemonConfig::parse(&text, "test.toml").expect("config");
    let sources = memtamer_sense::sources::SourceConfig::default();
    let d = Daemon::start(cfg, Path::new("/proc"), &sources).expect("start");
    (d, Cleanup(vec![dir]))
}

fn gate_name(tag: &str) -> String {
    format!("daemon-test-{}-{tag}", std::process::id())
}

#[test]
fn a_gate_limit_decision_reaches_the_gate_file_in_dev_shm() {
    if !Path::new("/dev/shm").is_dir() {
        eprintln!("skipped: no /dev/shm");
        return;
    }
    let name = gate_name("limit");
    let options = GateOptions {
        name: name.clone(),
        ..GateOptions::default()
    };
    let (mut daemon, mut cleanup) = daemon(
        "limit",
        &format!("[gate]\nname = \"{name}\"\npolicy = \"gate:3\"\n"),
    );
    cleanup.0.push(options.path());
    assert!(options.path().starts_with("/dev/shm"));
    // the config's policy (a fixed gate of 3) through one loop iteration
    daemon.step().expect("step");
    let other = Gate::open(&options).expect("the file the daemon made");
    assert_eq!(other.limit(), Some(3));
    // any decision's gate_limit, through the daemon's Actuators
    let report = daemon.apply(&Decision {
        gate_limit: Some(GateLimit::Limit(7)),
        migrations: vec![Migration {
            tid: u32::MAX - 1,
            to_cpu: 0,
        }],
        ..Default::default()
    });
    assert_eq!(other.limit(), Some(7), "seen by another opener of the file");
    assert_eq!(report.applied_count(Knob::GateLimit), 1);
    // a migration of a thread the daemon does not manage is reported
    assert_eq!(report.ignored_count(Knob::Migrations), 1);
    assert_eq!(report.ignored[0].reason, NOT_MANAGED);
    daemon.apply(&Decision {
        gate_limit: Some(GateLimit::Unlimited),
        ..Default::default()
    });
    assert_eq!(other.limit(), None);
}

#[test]
fn without_a_gate_section_the_limit_is_reported_ignored() {
    let (mut daemon, _cleanup) = daemon("nogate", "");
    let report = daemon.apply(&Decision {
        gate_limit: Some(GateLimit::Limit(2)),
        ..Default::default()
    });
    assert_eq!(report.ignored_count(Knob::GateLimit), 1);
    assert_eq!(report.ignored[0].reason, NO_GATE);
    assert!(!report.is_complete());
}
