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

/// The shipped example starts without a warning: `--check-config` printed
/// `warning: job[1] ("pm-writers") is selected by comm/exe, which any user
/// chooses` for its own fio job (selected by `comm` with no `[job.require]`),
/// so a user's first start of the daemon began with a security warning
/// (docs/bad-input.md, 2026-11-28).
#[test]
fn the_shipped_config_checks_clean() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let path = root.join("dist/memtamer.toml");
    let c = memtamer_control::config::DaemonConfig::load(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_memtamer"))
        .args(["run", "--check-config", "--config", path.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("warning"), "{err}");
}

/// `systemctl reload` = `--check-config`, then SIGHUP: the daemon undoes,
/// reloads the file and runs again; a broken file keeps the old config.
#[test]
fn sighup_reloads_the_config_and_keeps_the_old_one_when_broken() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = std::env::temp_dir().join(format!("memtamer-reload-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("proc")).unwrap();
    let base = std::fs::read_to_string(root.join("dist/memtamer.toml")).unwrap();
    let config = dir.join("memtamer.toml");
    let text = base.replacen(
        "[daemon]\n",
        &format!(
            "[daemon]\nsocket = {:?}\njournal = {:?}\n",
            dir.join("sock"),
            dir.join("journal")
        ),
        1,
    );
    std::fs::write(&config, &text).unwrap();
    let exe = env!("CARGO_BIN_EXE_memtamer");
    let check = Command::new(exe)
        .args([
            "run",
            "--check-config",
            "--config",
            config.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(check.status.success(), "{check:?}");
    let mut child = Command::new(exe)
        .args(["run", "--no-guard", "--config", config.to_str().unwrap()])
        .arg("--proc-root")
        .arg(dir.join("proc"))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut next_with = |needle: &str| loop {
        let l = lines.next().expect("daemon output").unwrap();
        if l.contains(needle) {
            return l;
        }
    };
    let hup = |pid: u32| unsafe { libc::kill(pid as i32, libc::SIGHUP) };
    next_with("running");
    hup(child.id());
    next_with("SIGHUP: reloaded");
    next_with("running");
    std::fs::write(&config, format!("{text}\nbroken")).unwrap();
    hup(child.id());
    assert!(next_with("SIGHUP:").contains("keeping the previous config"));
    next_with("running");
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// Man pages and completions come from the clap definitions (packaging).
#[test]
fn generated_man_pages_and_completions() {
    let dir = std::env::temp_dir().join(format!("memtamer-assets-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_memtamer"))
        .args(["generate-assets", "--out", dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let page = |name: &str| std::fs::read_to_string(dir.join("man1").join(name));
    assert!(page("memtamer.1").unwrap().contains(".TH memtamer"));
    // every visible subcommand has a page, with the global --format
    let run = page("memtamer-sim-run.1").unwrap();
    assert!(run.contains("\\-\\-format") && run.contains("\\-\\-jobs"));
    assert!(page("memtamer-gate-stats.1").is_ok());
    // hidden and clap's own help commands have none
    assert!(page("memtamer-generate-assets.1").is_err());
    assert!(page("memtamer-help.1").is_err());
    for f in ["memtamer.bash", "_memtamer", "memtamer.fish"] {
        let text = std::fs::read_to_string(dir.join("completions").join(f)).unwrap();
        assert!(text.contains("validate"), "{f} lacks sim validate");
    }
    std::fs::remove_dir_all(dir).unwrap();
}
