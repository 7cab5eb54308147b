//! `memtamer gate hostile` (hidden): the gate tortured as a hostile or
//! broken process would (issue 22, `scripts/check-hostile`).
//!
//! PM programs (worker processes doing gated 4 KiB writes) run while
//! * a storm SIGSTOPs and SIGCONTs them at random (holders that stop while
//!   admitted);
//! * processes die while admitted and are never reaped (zombie holders);
//! * every word of the gate file's header and the words of its first 32
//!   slots are overwritten with hostile values, one per trial (0, 1, all
//!   ones, 2^31-1, random, a flipped bit), through the file as any process
//!   that may open it could. The checksum-covered fixed words are put back
//!   after each trial (a bad one makes every later open refuse the gate,
//!   which `tests/hostile_shm.rs` checks); every other word stays broken and
//!   the gate must repair it or route around it.
//!
//! Every 20 trials a probe request from a fresh thread must be answered
//! within the admission bound plus a scheduling slack; workers time every
//! request the same way. Printed: hangs (waits past bound + slack), the
//! longest waits, and how many PM programs finished.

use crate::args::{HostileArgs, HostileRole as Role};
use crate::error::{CliError, Outcome};
use memtamer_gate::{integrity, Gate, GateOptions};
use std::io::{BufRead, Read};
use std::os::unix::fs::FileExt;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// Scheduling slack on top of the admission bound before a wait counts as a
/// hang: the check runs on a loaded 2-core CI machine beside its own storm.
const SLACK: Duration = Duration::from_secs(1);
/// Slots whose words are corrupted: those the workers, probes and dying
/// holders occupy.
const SLOTS_TORTURED: usize = 32;

/// xorshift64*: reproducible choices without a dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Pure: the hostile value of trial `i` for a word that held `old`.
fn hostile_value(i: u32, old: u32, rng: &mut Rng) -> u32 {
    match i % 6 {
        0 => 0,
        1 => 1,
        2 => u32::MAX,
        3 => 0x7fff_ffff,
        4 => rng.next() as u32,
        _ => old ^ (1 << rng.below(32)),
    }
}

/// Pure: the byte offset trial `i` corrupts: even trials walk the header
/// words in order, odd ones pick a word of one of the first slots.
fn trial_offset(i: u32, layout: &integrity::Layout, rng: &mut Rng) -> u64 {
    let header_words = (layout.header_bytes / 4) as u64;
    if i.is_multiple_of(2) {
        (u64::from(i / 2) % header_words) * 4
    } else {
        let slot = u64::from(i / 2) % SLOTS_TORTURED as u64;
        let word = rng.below((layout.slot_bytes / 4) as u64);
        layout.header_bytes as u64 + slot * layout.slot_bytes as u64 + word * 4
    }
}

fn options(a: &HostileArgs) -> GateOptions {
    GateOptions {
        name: a.name.clone(),
        dir: a.dir.clone(),
        initial_limit: 2,
        max_wait: Duration::from_millis(a.max_wait_ms),
        ..GateOptions::default()
    }
}

/// Runs one role.
pub(crate) fn run(a: HostileArgs) -> Result<Outcome, CliError> {
    match a.role {
        Role::Worker => worker(&a),
        Role::DieAdmitted => die_admitted(&a),
        Role::Torture => torture(&a),
    }
}

/// A PM program: prints `requests=N overdue=M hangs=K max_wait_us=X gated=0|1`.
fn worker(a: &HostileArgs) -> Result<Outcome, CliError> {
    let stop = Arc::new(AtomicBool::new(false));
    if a.requests.is_none() {
        let s = Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut sink = Vec::new();
            let _ = std::io::stdin().read_to_end(&mut sink);
            s.store(true, Ordering::Relaxed);
        });
    }
    // a gate refused (corrupt, squatted, a symlink) means running ungated
    let gate = Gate::open(&options(a)).ok();
    let me = gate.as_ref().and_then(|g| g.register().ok());
    let bound = Duration::from_millis(a.max_wait_ms);
    let mut buf = vec![0u8; 4096];
    let (mut n, mut overdue, mut hangs, mut max_wait) = (0u64, 0u64, 0u64, Duration::ZERO);
    while !stop.load(Ordering::Relaxed) && a.requests.is_none_or(|r| n < r) {
        let t = Instant::now();
        let permit = me.as_ref().map(|m| m.enter(4096, true));
        let waited = t.elapsed();
        buf.fill(n as u8);
        std::hint::black_box(&buf);
        let spin = Instant::now();
        while spin.elapsed() < Duration::from_micros(20) {
            std::hint::spin_loop();
        }
        if let Some(p) = &permit {
            if matches!(p.admission, memtamer_gate::Admission::Overdue(_)) {
                overdue += 1;
            }
        }
        drop(permit);
        n += 1;
        max_wait = max_wait.max(waited);
        if waited > bound + SLACK {
            hangs += 1;
        }
    }
    println!(
        "requests={n} overdue={overdue} hangs={hangs} max_wait_us={} gated={}",
        max_wait.as_micros(),
        u8::from(me.is_some())
    );
    Ok(Outcome::Success)
}

/// Enters and exits at once while admitted: its unit is never given back
/// and its parent does not reap it (a zombie holder).
fn die_admitted(a: &HostileArgs) -> Result<Outcome, CliError> {
    if let Ok(g) = Gate::open(&options(a)) {
        if let Ok(me) = g.register() {
            let permit = me.enter(4096, true);
            std::mem::forget(permit);
            std::mem::forget(me);
        }
    }
    // SAFETY: _exit ends the process at once; nothing runs after it.
    unsafe { libc::_exit(0) }
}

/// One gated 4 KiB request from a fresh thread; its wait, or None if it
/// was not answered within `patience`.
fn probe(gate: &Arc<Gate>, patience: Duration) -> Option<Duration> {
    let (tx, rx) = mpsc::channel();
    let g = Arc::clone(gate);
    std::thread::spawn(move || {
        let t = Instant::now();
        if let Ok(me) = g.register() {
            drop(me.enter(4096, true));
        }
        let _ = tx.send(t.elapsed());
    });
    rx.recv_timeout(patience).ok()
}

fn spawn_role(a: &HostileArgs, role: &str, stdin: Stdio, stdout: Stdio) -> std::io::Result<Child> {
    let exe = std::env::current_exe()?;
    Command::new(exe)
        .args(["gate", "hostile", "--role", role, "--name", &a.name])
        .arg("--dir")
        .arg(&a.dir)
        .args(["--max-wait-ms", &a.max_wait_ms.to_string()])
        .stdin(stdin)
        .stdout(stdout)
        .spawn()
}

fn torture(a: &HostileArgs) -> Result<Outcome, CliError> {
    let opts = options(a);
    let path = opts.path();
    let _ = std::fs::remove_file(&path);
    let gate = Gate::open(&opts).map_err(|source| CliError::Gate {
        context: format!("creating {}", path.display()),
        source: Box::new(source),
    })?;
    let bound = opts.max_wait;
    let mut workers = Vec::new();
    for _ in 0..a.workers {
        workers.push(
            spawn_role(a, "worker", Stdio::piped(), Stdio::piped())
                .map_err(CliError::io("starting a worker"))?,
        );
    }
    let pids: Vec<i32> = workers.iter().map(|w| w.id() as i32).collect();
    let done = Arc::new(AtomicBool::new(false));
    let stops = Arc::new(AtomicU64::new(0));
    // the SIGSTOP/SIGCONT storm
    let storm = {
        let (done, stops, pids) = (Arc::clone(&done), Arc::clone(&stops), pids.clone());
        let mut rng = Rng(a.seed ^ 0x5157);
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                let pid = pids[rng.below(pids.len() as u64) as usize];
                // SAFETY: signals to our own children, still unreaped.
                unsafe { libc::kill(pid, libc::SIGSTOP) };
                std::thread::sleep(Duration::from_micros(rng.below(3000)));
                // SAFETY: as above.
                unsafe { libc::kill(pid, libc::SIGCONT) };
                stops.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(1));
            }
            for &pid in &pids {
                // SAFETY: as above.
                unsafe { libc::kill(pid, libc::SIGCONT) };
            }
        })
    };
    // holders that die admitted, left unreaped (zombies) until the end
    let dying = {
        let done = Arc::clone(&done);
        let args = HostileArgs {
            name: a.name.clone(),
            dir: a.dir.clone(),
            role: Role::DieAdmitted,
            requests: None,
            ..*a
        };
        std::thread::spawn(move || {
            let mut zombies = Vec::new();
            while !done.load(Ordering::Relaxed) && zombies.len() < 20 {
                if let Ok(c) = spawn_role(&args, "die-admitted", Stdio::null(), Stdio::null()) {
                    zombies.push(c);
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            zombies
        })
    };
    // the corruption trials
    let layout = integrity::layout();
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .map_err(CliError::io(format!("opening {}", path.display())))?;
    let mut rng = Rng(a.seed.max(1));
    let (mut probes, mut hangs, mut longest_probe) = (0u32, 0u32, Duration::ZERO);
    for i in 0..a.trials {
        let offset = trial_offset(i, &layout, &mut rng);
        let mut old = [0u8; 4];
        file.read_exact_at(&mut old, offset)
            .map_err(CliError::io("reading the gate file"))?;
        let value = hostile_value(i, u32::from_ne_bytes(old), &mut rng);
        file.write_all_at(&value.to_ne_bytes(), offset)
            .map_err(CliError::io("writing the gate file"))?;
        std::thread::sleep(Duration::from_millis(3));
        if offset < layout.fixed_bytes as u64 {
            file.write_all_at(&old, offset)
                .map_err(CliError::io("writing the gate file"))?;
        }
        if i % 20 == 19 {
            probes += 1;
            match probe(&gate, bound + SLACK) {
                Some(w) => longest_probe = longest_probe.max(w),
                None => hangs += 1,
            }
        }
    }
    done.store(true, Ordering::Relaxed);
    let _ = storm.join();
    let mut zombies = dying.join().unwrap_or_default();
    // end the PM programs: close their stdin, wait up to 30 s
    let mut finished = 0u32;
    let (mut requests, mut worker_hangs, mut overdue, mut longest) = (0u64, 0u64, 0u64, 0u64);
    for w in &mut workers {
        drop(w.stdin.take());
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    for w in &mut workers {
        let status = loop {
            match w.try_wait() {
                Ok(Some(s)) => break Some(s),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                _ => break None,
            }
        };
        let Some(status) = status else {
            let _ = w.kill();
            let _ = w.wait();
            continue;
        };
        let mut line = String::new();
        if let Some(out) = w.stdout.take() {
            let _ = std::io::BufReader::new(out).read_line(&mut line);
        }
        let field = |k: &str| -> u64 {
            line.split_whitespace()
                .find_map(|f| f.strip_prefix(k)?.strip_prefix('='))
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        };
        if status.success() && !line.is_empty() {
            finished += 1;
        }
        requests += field("requests");
        overdue += field("overdue");
        worker_hangs += field("hangs");
        longest = longest.max(field("max_wait_us"));
    }
    for z in &mut zombies {
        let _ = z.wait();
    }
    let left = integrity::check(&opts).map(|v| v.len()).unwrap_or(0);
    let _ = integrity::repair(&opts);
    drop(gate);
    let _ = std::fs::remove_file(&path);
    let total_hangs = u64::from(hangs) + worker_hangs;
    println!(
        "hostile: {} corruption trials ({} on the {} header words, {} on words of slots 0..{}), \
         {} PM programs under {} SIGSTOP/SIGCONT, {} holders died admitted (zombies until the end)",
        a.trials,
        a.trials.div_ceil(2),
        layout.header_bytes / 4,
        a.trials / 2,
        SLOTS_TORTURED,
        a.workers,
        stops.load(Ordering::Relaxed),
        zombies.len()
    );
    println!(
        "hostile: hangs longer than the admission bound ({} ms + {} ms slack): {total_hangs} \
         (probes: {probes}, longest {:.1} ms; PM requests: {requests}, longest wait {:.1} ms, \
         {overdue} proceeded past the bound)",
        bound.as_millis(),
        SLACK.as_millis(),
        longest_probe.as_secs_f64() * 1e3,
        longest as f64 / 1e3
    );
    println!(
        "hostile: PM programs finished: {finished} of {}; problems `gate check` still saw at the end: {left} (repaired)",
        a.workers
    );
    Ok(Outcome::check(total_hangs == 0 && finished == a.workers))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trials_cover_every_header_word_and_stay_in_the_tortured_slots() {
        let layout = integrity::layout();
        let mut rng = Rng(7);
        let header_words = layout.header_bytes / 4;
        let mut seen = vec![false; header_words];
        for i in 0..(2 * header_words as u32) {
            let off = trial_offset(i, &layout, &mut rng) as usize;
            if i.is_multiple_of(2) {
                seen[off / 4] = true;
            } else {
                assert!(off >= layout.header_bytes);
                assert!(off < layout.header_bytes + SLOTS_TORTURED * layout.slot_bytes);
                assert_eq!(off % 4, 0);
            }
        }
        assert!(seen.iter().all(|s| *s));
        let v: Vec<u32> = (0..4).map(|i| hostile_value(i, 5, &mut rng)).collect();
        assert_eq!(v, vec![0, 1, u32::MAX, 0x7fff_ffff]);
        assert_ne!(hostile_value(5, 5, &mut rng), 5, "a flipped bit");
    }
}
