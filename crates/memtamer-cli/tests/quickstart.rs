//! The daemon quick-start in README must be safe to paste (issue 23 item 2):
//! the config it starts is a dry run that selects no process by pid.

use std::path::Path;

/// The `--config FILE` of the `memtamer run` line in README's daemon section.
fn quick_start_config(readme: &str) -> String {
    let section = readme
        .split("## The daemon in one minute")
        .nth(1)
        .expect("README has the daemon quick-start");
    let line = section
        .lines()
        .find(|l| l.contains("memtamer run --config"))
        .expect("the quick-start starts the daemon");
    line.split("--config")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .expect("a config path")
        .to_string()
}

#[test]
fn the_readme_daemon_quick_start_is_a_dry_run_without_pids() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let path = root.join(quick_start_config(&readme));
    let c = memtamer_control::config::DaemonConfig::load(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        c.daemon.dry_run,
        "{} must set dry_run = true",
        path.display()
    );
    assert!(!c.jobs.is_empty());
    for j in &c.jobs {
        assert!(
            j.matcher.pid.is_empty(),
            "job {} selects by pid in {}",
            j.name,
            path.display()
        );
    }
    // the installed example is the same file
    let makefile = std::fs::read_to_string(root.join("Makefile")).unwrap();
    assert!(makefile
        .contains("dist/memtamer.toml $(DESTDIR)$(DATADIR)/memtamer/examples/memtamer.toml"));
}
