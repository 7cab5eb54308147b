//! `memtamer gate ...`: inspect and steer the system-wide PATS gate, run
//! programs under the libpmem shim, and benchmark the gate.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use memtamer_gate::{Gate, GateConfig, GateOptions, GateSnapshot, ThreadState};

/// Opens an existing gate (never creates one: a typo must not make a new gate).
pub fn open_existing(name: &str, dir: &Path) -> Result<std::sync::Arc<Gate>, String> {
    let options = GateOptions {
        name: name.to_string(),
        dir: dir.to_path_buf(),
        ..GateOptions::default()
    };
    let path = options.path();
    if !path.exists() {
        return Err(format!(
            "no gate named {name:?}: {} does not exist (it is created by the first PA-thread that uses it)",
            path.display()
        ));
    }
    Gate::open(&options).map_err(|e| e.to_string())
}

fn human_bytes(b: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", units[u])
    }
}

/// The human view of a snapshot.
pub fn table(s: &GateSnapshot) -> String {
    let total = s.total();
    let limit = s.limit.map_or("unlimited".to_string(), |n| n.to_string());
    let mut out = format!(
        "gate {}\n  limit T_S {limit}   serving {}   waiting {}   peak {} (limit then {})\n",
        s.path,
        s.serving,
        s.waiting,
        s.peak_serving,
        s.limit_at_peak
            .map_or("unlimited".to_string(), |n| n.to_string()),
    );
    out += &format!(
        "  admitted {} ({} after waiting)   bypassed {}   reclaimed from dead threads {}   lock repairs {}\n",
        s.admissions, s.contended_admissions, total.bypassed, s.reclaimed, s.lock_repairs
    );
    let mix = match (s.last_avg_request_bytes, s.last_write_ratio) {
        (Some(b), Some(w)) => format!("S = {b:.0} B, Wr = {w:.2}"),
        _ => "no traffic yet".into(),
    };
    out += &format!(
        "  collector pid {}   last window {mix}   limit changes {}\n",
        s.collector_pid.map_or("-".to_string(), |p| p.to_string()),
        s.limit_changes
    );
    out += &format!(
        "  total: read {}  written {}  waited {:.3} s\n\n",
        human_bytes(total.read_bytes),
        human_bytes(total.write_bytes),
        total.wait_ns_total as f64 / 1e9
    );
    out += "   pid    tid  state    req B    read   written  <256B 256B-1K 1K-4K  >=4K  waited  wait ms  max wait us\n";
    for t in &s.threads {
        let st = &t.stats;
        let by = |i: usize| st.reads_by_size[i] + st.writes_by_size[i];
        out += &format!(
            "{:>6} {:>6}  {:<7} {:>6} {:>9} {:>9} {:>6} {:>6} {:>6} {:>6} {:>7} {:>8.1} {:>12.1}\n",
            t.pid,
            t.tid,
            match t.state {
                ThreadState::Idle => "idle",
                ThreadState::Waiting => "waiting",
                ThreadState::Running => "running",
                ThreadState::Holding => "holding",
            },
            t.request_bytes,
            human_bytes(st.read_bytes),
            human_bytes(st.write_bytes),
            by(0),
            by(1),
            by(2),
            by(3),
            st.waited,
            st.wait_ns_total as f64 / 1e6,
            st.wait_ns_max as f64 / 1e3,
        );
    }
    if s.threads.is_empty() {
        out += "   (no registered threads)\n";
    }
    out
}

/// Where the shim library is: next to the memtamer binary (cargo's target dir).
pub fn shim_path() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot locate memtamer: {e}"))?;
    let dir = exe.parent().ok_or("memtamer has no parent directory")?;
    for candidate in [
        dir.join("libmemtamer_pmem_shim.so"),
        dir.join("../lib/libmemtamer_pmem_shim.so"),
    ] {
        if candidate.exists() {
            return Ok(candidate);
        }
    }
    Err(format!(
        "libmemtamer_pmem_shim.so is not next to {} (build it: cargo build --release -p memtamer-pmem-shim)",
        exe.display()
    ))
}

/// `memtamer gate exec`: runs a program with the shim preloaded.
pub fn exec(env: &[(String, String)], cmd: &[String]) -> Result<ExitCode, String> {
    let (program, args) = cmd.split_first().ok_or("no command given after --")?;
    let shim = shim_path()?;
    let preload = match std::env::var("LD_PRELOAD") {
        Ok(old) if !old.is_empty() => format!("{}:{old}", shim.display()),
        _ => shim.display().to_string(),
    };
    // check the settings here, where the error can name them
    let lookup = |k: &str| {
        env.iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
            .or_else(|| std::env::var(k).ok())
    };
    GateConfig::from_lookup(lookup).map_err(|e| e.to_string())?;
    let status = std::process::Command::new(program)
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("LD_PRELOAD", preload)
        .status()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    Ok(ExitCode::from(
        status.code().unwrap_or(1).clamp(0, 255) as u8
    ))
}

/// `memtamer gate stats --watch`: redraws every `every` until interrupted.
pub fn watch(gate: &Gate, every: Duration) -> ! {
    loop {
        print!("\x1b[H\x1b[2J{}", table(&gate.snapshot()));
        std::thread::sleep(every);
    }
}

/// Removes a gate file, refusing while live threads use it.
pub fn remove(name: &str, dir: &Path) -> Result<(), String> {
    let gate = open_existing(name, dir)?;
    gate.reap(true);
    let live = gate.snapshot().threads.len();
    if live > 0 {
        return Err(format!(
            "{live} live threads use gate {name:?}; stop them first"
        ));
    }
    std::fs::remove_file(gate.path()).map_err(|e| format!("{}: {e}", gate.path().display()))
}

/// Wall-clock timer helper for the benchmark.
pub fn ns_per_op(iters: u64, f: impl FnMut()) -> f64 {
    let mut f = f;
    let t0 = Instant::now();
    for _ in 0..iters {
        f();
    }
    t0.elapsed().as_nanos() as f64 / iters as f64
}
