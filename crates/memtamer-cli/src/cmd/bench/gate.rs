//! `memtamer bench gate`: the gate's costs, each as a ratio to a baseline
//! measured in the same run (PATS §V-D reports overhead the same way).
//!
//! * begin+end on an uncontended gate, against a 4 KiB DRAM memcpy;
//! * 4 KiB pmem_memcpy_persist through the libpmem shim, against the same
//!   program without the shim: rounds of two child processes (one with the
//!   shim preloaded, one without, in alternating order), each timing blocks
//!   of copies and reporting its median block; the result is the median of
//!   the per-round ratios, so that a noisy moment on a shared machine moves
//!   one round, not the answer. The shim's child also alternates blocks
//!   through the shim and straight to libpmem, in one process;
//! * the collector thread's CPU time over its wall time, with threads busy.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use memtamer_gate::{Collector, Gate, GateOptions, PolicySpec};

use super::super::gate::shim_path;
use crate::error::CliError;

/// Mean wall-clock ns per call of `f` over `iters` calls.
fn ns_per_op(iters: u64, mut f: impl FnMut()) -> f64 {
    let t0 = Instant::now();
    for _ in 0..iters {
        f();
    }
    t0.elapsed().as_nanos() as f64 / iters as f64
}

fn median(v: Vec<f64>) -> f64 {
    quantile(v, 0.5)
}

/// The `q` quantile of `v` (linear between neighbours); NaN when empty.
fn quantile(mut v: Vec<f64>, q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let pos = q.clamp(0.0, 1.0) * (v.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    v[lo] + (v[hi] - v[lo]) * (pos - lo as f64)
}

/// Removes its files when dropped (also when a benchmark step fails).
struct RemoveOnDrop(Vec<std::path::PathBuf>);
impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        for path in &self.0 {
            let _ = std::fs::remove_file(path);
        }
    }
}

struct TempGate(Arc<Gate>);
impl Drop for TempGate {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(self.0.path());
    }
}

fn temp_gate(tag: &str, limit: u32) -> Result<TempGate, CliError> {
    let options = GateOptions {
        name: format!("bench-{}-{tag}", std::process::id()),
        initial_limit: limit,
        ..GateOptions::default()
    };
    Gate::open(&options)
        .map(TempGate)
        .map_err(CliError::gate("opening the benchmark's gate"))
}

/// Uncontended begin+end, ns, and a 4 KiB memcpy, ns.
fn begin_end() -> Result<(f64, f64), CliError> {
    let gate = temp_gate("begin-end", 4)?;
    let me = gate
        .0
        .register()
        .map_err(CliError::gate("registering with the benchmark's gate"))?;
    let iters = 2_000_000;
    let mut gate_ns = Vec::new();
    let mut copy_ns = Vec::new();
    let src = vec![1u8; 4096];
    let mut dst = vec![0u8; 4096];
    for _ in 0..5 {
        gate_ns.push(ns_per_op(iters, || {
            me.begin(std::hint::black_box(4096), true);
            me.end();
        }));
        copy_ns.push(ns_per_op(iters / 4, || {
            dst.copy_from_slice(std::hint::black_box(&src));
            std::hint::black_box(&dst);
        }));
    }
    Ok((median(gate_ns), median(copy_ns)))
}

/// One call through the process gate the C ABI and the shim use, ns.
fn process_gated() -> f64 {
    let mut v = Vec::new();
    for _ in 0..5 {
        v.push(ns_per_op(2_000_000, || {
            memtamer_gate::process::gated(std::hint::black_box(4096), true, || {
                std::hint::black_box(())
            })
        }));
    }
    median(v)
}

/// The collector's on-CPU share of its wall time while 8 threads issue
/// gated requests (from /proc/self/task/TID/schedstat, nanoseconds).
fn collector_cpu() -> Result<f64, CliError> {
    let gate = temp_gate("collector", 2)?;
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..8)
        .map(|i| {
            let (g, stop) = (Arc::clone(&gate.0), Arc::clone(&stop));
            std::thread::spawn(move || {
                let Ok(me) = g.register() else { return };
                let size = [512u64, 4096, 1024, 256][i % 4];
                while !stop.load(Ordering::Relaxed) {
                    let _p = me.enter(size, i % 3 != 0);
                    std::thread::sleep(Duration::from_micros(200));
                }
            })
        })
        .collect();
    let before: Vec<u32> = task_ids();
    let collector = Collector::spawn(
        Arc::clone(&gate.0),
        PolicySpec::Pats { t_mc: 0.2 }.build(1),
        Duration::from_millis(10),
    )
    .map_err(CliError::io("cannot start the collector thread"))?;
    std::thread::sleep(Duration::from_millis(50));
    let tid = task_ids()
        .into_iter()
        .find(|t| !before.contains(t) && task_name(*t).starts_with("memtamer-collec"))
        .ok_or_else(|| CliError::Bench("collector thread not found".into()))?;
    let cpu0 = on_cpu_ns(tid)?;
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_secs(2));
    let cpu1 = on_cpu_ns(tid)?;
    let wall = t0.elapsed().as_nanos() as f64;
    drop(collector);
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        let _ = w.join();
    }
    Ok((cpu1 - cpu0) as f64 / wall)
}

fn task_ids() -> Vec<u32> {
    std::fs::read_dir("/proc/self/task")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

fn task_name(tid: u32) -> String {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

fn on_cpu_ns(tid: u32) -> Result<u64, CliError> {
    let path = format!("/proc/self/task/{tid}/schedstat");
    let text =
        std::fs::read_to_string(&path).map_err(CliError::io(format!("cannot read {path}")))?;
    text.split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| CliError::Bench(format!("{path}: unexpected contents {text:?}")))
}

/// What one run of the shim worker measured.
struct ShimRun {
    /// Median ns per 4 KiB copy through `pmem_memcpy_persist` as the
    /// program resolves it (the shim when preloaded).
    ns: f64,
    /// With the shim: median over block pairs of (through the shim) /
    /// (straight to libpmem) in the same process.
    in_process_ratio: Option<f64>,
    /// The library `pmem_memcpy_persist` resolved to.
    lib: String,
}

/// One timed run of the shim worker, pinned to `cpu`.
fn shim_run(with_shim: bool, file: &str, iters: u64, cpu: usize) -> Result<ShimRun, CliError> {
    let exe = std::env::current_exe().map_err(CliError::io("cannot locate memtamer"))?;
    let mut cmd = Command::new(exe);
    cmd.args([
        "bench",
        "shim-worker",
        "--file",
        file,
        "--iters",
        &iters.to_string(),
        "--cpu",
        &cpu.to_string(),
    ])
    .env("PMEM_IS_PMEM_FORCE", "1")
    .env(
        "MEMTAMER_GATE",
        format!("bench-{}-shim", std::process::id()),
    )
    .env("MEMTAMER_GATE_POLICY", "gate:2")
    .env_remove("LD_PRELOAD");
    if with_shim {
        cmd.arg("--alternate").env("LD_PRELOAD", shim_path()?);
    }
    let out = cmd
        .output()
        .map_err(CliError::io("cannot start the shim worker"))?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    if !out.status.success() {
        return Err(CliError::Bench(format!(
            "shim worker failed: {}{}",
            text,
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    let mut ns = None;
    let mut in_process_ratio = None;
    let mut lib = String::new();
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("ns_per_copy ") {
            ns = v.trim().parse::<f64>().ok();
        }
        if let Some(v) = line.strip_prefix("ratio_to_direct ") {
            in_process_ratio = v.trim().parse::<f64>().ok();
        }
        if let Some(v) = line.strip_prefix("resolved_in ") {
            lib = v.trim().to_string();
        }
    }
    Ok(ShimRun {
        ns: ns.ok_or_else(|| CliError::Bench("shim worker printed no timing".into()))?,
        in_process_ratio,
        lib,
    })
}

/// Copies per timed block in the shim worker: long enough (about 0.5 ms)
/// to dwarf the clock reads, short enough that a preemption spoils few.
const BLOCK: u64 = 1000;

/// `memtamer bench shim-worker`: maps FILE with libpmem and times 4 KiB
/// pmem_memcpy_persist calls, resolving the function the way a program
/// linked with libpmem does (the shim first when preloaded). FILE is
/// created if missing and left in place. Prints the
/// median ns per copy over blocks of [`BLOCK`] copies. With `alternate`,
/// blocks through that function alternate with blocks straight to
/// libpmem's own, and the median per-pair ratio is printed too.
pub fn shim_worker(
    file: &str,
    iters: u64,
    alternate: bool,
    cpu: Option<usize>,
) -> Result<(), CliError> {
    type MapFile = unsafe extern "C" fn(
        *const c_char,
        usize,
        c_int,
        u32,
        *mut usize,
        *mut c_int,
    ) -> *mut c_void;
    type Copy = unsafe extern "C" fn(*mut c_void, *const c_void, usize) -> *mut c_void;
    // SAFETY: loading a system library by its soname.
    let handle =
        unsafe { libc::dlopen(c"libpmem.so.1".as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
    if handle.is_null() {
        return Err(CliError::Bench(
            "libpmem.so.1 not found (apt-get install libpmem1)".into(),
        ));
    }
    // SAFETY: symbol lookups; null is checked.
    let (map, copy, direct) = unsafe {
        (
            libc::dlsym(handle, c"pmem_map_file".as_ptr()),
            libc::dlsym(libc::RTLD_DEFAULT, c"pmem_memcpy_persist".as_ptr()),
            libc::dlsym(handle, c"pmem_memcpy_persist".as_ptr()),
        )
    };
    if map.is_null() || copy.is_null() || direct.is_null() {
        return Err(CliError::Bench(
            "libpmem lacks pmem_map_file or pmem_memcpy_persist".into(),
        ));
    }
    // SAFETY: the symbols have these C signatures (libpmem.h).
    let (map, copy, direct): (MapFile, Copy, Copy) = unsafe {
        (
            std::mem::transmute::<*mut c_void, MapFile>(map),
            std::mem::transmute::<*mut c_void, Copy>(copy),
            std::mem::transmute::<*mut c_void, Copy>(direct),
        )
    };
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr fills `info` for a code address.
    if unsafe { libc::dladdr(copy as *const c_void, &mut info) } != 0 && !info.dli_fname.is_null() {
        // SAFETY: dli_fname is a NUL-terminated string owned by the loader.
        let name = unsafe { CStr::from_ptr(info.dli_fname) };
        println!("resolved_in {}", name.to_string_lossy());
    }
    let region: usize = 64 << 20;
    let path = std::ffi::CString::new(file).map_err(|_| CliError::Usage {
        arg: format!("--file {file:?}"),
        expected: "a path without NUL bytes".into(),
    })?;
    let mut mapped = 0usize;
    let mut is_pmem: c_int = 0;
    // SAFETY: PMEM_FILE_CREATE (1) with a valid path and out-pointers.
    let base = unsafe { map(path.as_ptr(), region, 1, 0o600, &mut mapped, &mut is_pmem) };
    if base.is_null() {
        return Err(CliError::io(format!("pmem_map_file({file}) failed"))(
            std::io::Error::last_os_error(),
        ));
    }
    // fault the pages in first: page faults are not what is measured
    // SAFETY: base..base+mapped is the mapping just created.
    unsafe { std::ptr::write_bytes(base.cast::<u8>(), 0, mapped) };
    let src = vec![7u8; 4096];
    // One untimed copy first: it is where a preloaded shim opens its gate
    // and starts its collector thread, which therefore keeps the CPUs this
    // process started with. Only this (copying) thread is pinned below.
    // SAFETY: 4096 <= mapped.
    unsafe { copy(base, src.as_ptr().cast(), 4096) };
    if let Some(cpu) = cpu {
        pin_to(cpu)?;
    }
    let slots = (mapped / 4096).max(1) as u64;
    let mut next = 0u64;
    // ns per copy of one block of `n` copies through `f`
    let mut block = |f: Copy, n: u64| {
        let t0 = Instant::now();
        for _ in 0..n {
            let off = ((next % slots) * 4096) as usize;
            next += 1;
            // SAFETY: off + 4096 <= mapped.
            unsafe { f(base.cast::<u8>().add(off).cast(), src.as_ptr().cast(), 4096) };
        }
        t0.elapsed().as_nanos() as f64 / n as f64
    };
    let blocks = iters.div_ceil(BLOCK).max(1);
    let n = iters.clamp(1, BLOCK);
    let mut through = Vec::with_capacity(blocks as usize);
    let mut ratios = Vec::new();
    for i in 0..blocks {
        if alternate {
            // alternate which goes first, so drift favours neither
            let (a, b) = if i % 2 == 0 {
                let a = block(copy, n);
                (a, block(direct, n))
            } else {
                let b = block(direct, n);
                (block(copy, n), b)
            };
            through.push(a);
            ratios.push(a / b);
        } else {
            through.push(block(copy, n));
        }
    }
    println!("ns_per_copy {:.1}", median(through));
    if alternate {
        println!("ratio_to_direct {:.5}", median(ratios));
    }
    // the file stays for the next run (same pages: less noise between
    // runs); `run` removes it
    Ok(())
}

/// Pins the calling thread (and threads it starts later) to `cpu`.
fn pin_to(cpu: usize) -> Result<(), CliError> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(CliError::Usage {
            arg: format!("--cpu {cpu}"),
            expected: format!("a CPU number below {}", libc::CPU_SETSIZE),
        });
    }
    // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET is in range.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: pid 0 is the calling thread; `set` is a valid cpu_set_t.
    if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) } != 0 {
        return Err(CliError::io(format!("cannot pin to CPU {cpu}"))(
            std::io::Error::last_os_error(),
        ));
    }
    Ok(())
}

/// The CPUs this process may run on.
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is valid output storage.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: pid 0 is the calling thread; `set` is writable.
    let ok =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) }
            == 0;
    let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
        // SAFETY: reading a bit of a valid set, index in range.
        .filter(|&c| ok && unsafe { libc::CPU_ISSET(c, &set) })
        .collect();
    if cpus.is_empty() {
        vec![0]
    } else {
        cpus
    }
}

/// 4 KiB pmem_memcpy_persist with the shim against without it: the report
/// lines.
fn shim_overhead(quick: bool) -> Result<String, CliError> {
    let mut out = String::new();
    let file = format!("/dev/shm/memtamer-bench-pmem-{}", std::process::id());
    let cleanup = RemoveOnDrop(vec![
        file.clone().into(),
        format!("/dev/shm/memtamer-gate-bench-{}-shim", std::process::id()).into(),
    ]);
    let iters = if quick { 20_000 } else { 200_000 };
    let rounds = if quick { 3 } else { 21 };
    let cpus = allowed_cpus();
    let mut with = Vec::new();
    let mut without = Vec::new();
    let mut ratios = Vec::new();
    let mut in_process = Vec::new();
    for round in 0..rounds {
        // both runs of a round copy on one CPU (a VM's CPUs differ in
        // speed), A/B then B/A: neither side always runs first
        let cpu = cpus[round % cpus.len()];
        let (w, wo) = if round % 2 == 0 {
            let wo = shim_run(false, &file, iters, cpu)?;
            (shim_run(true, &file, iters, cpu)?, wo)
        } else {
            let w = shim_run(true, &file, iters, cpu)?;
            (w, shim_run(false, &file, iters, cpu)?)
        };
        if !w.lib.contains("memtamer_pmem_shim") {
            return Err(CliError::Bench(format!(
                "the shim run resolved pmem_memcpy_persist in {:?}, not the shim",
                w.lib
            )));
        }
        ratios.push(w.ns / wo.ns);
        in_process.extend(w.in_process_ratio);
        with.push(w.ns);
        without.push(wo.ns);
    }
    drop(cleanup);
    let pct = |r: f64| (r - 1.0) * 100.0;
    let each: Vec<String> = ratios.iter().map(|r| format!("{:+.1}", pct(*r))).collect();
    out += &format!(
        "4 KiB pmem_memcpy_persist     {:>8.1} ns with the shim, {:.1} ns without: {:+.1}% (target within 3%; median of {rounds} per-round ratios, middle half {:+.1}% to {:+.1}%)\n",
        median(with),
        median(without),
        pct(median(ratios.clone())),
        pct(quantile(ratios.clone(), 0.25)),
        pct(quantile(ratios, 0.75)),
    );
    out += &format!("  per round (%)               {}\n", each.join(" "));
    out += &format!(
        "  in one process              {:+.1}% (blocks alternated through the shim and straight to libpmem; median of {} runs)\n",
        pct(median(in_process.clone())),
        in_process.len()
    );
    Ok(out)
}

/// Runs the benchmarks and returns the report.
pub fn run(quick: bool) -> Result<String, CliError> {
    let mut out =
        String::from("memtamer bench gate (ratios against baselines measured in this run)\n\n");
    let (gate_ns, copy_ns) = begin_end()?;
    out += &format!(
        "begin+end, uncontended        {gate_ns:>8.1} ns   ({:.2}x a 4 KiB DRAM memcpy of {copy_ns:.1} ns; target <= 100 ns)\n",
        gate_ns / copy_ns
    );
    // before `process_gated`, whose process gate starts a collector thread
    // in this process that would then run beside the shim's workers
    let shim = shim_overhead(quick)?;
    std::env::set_var(
        "MEMTAMER_GATE",
        format!("bench-{}-process", std::process::id()),
    );
    std::env::set_var("MEMTAMER_GATE_POLICY", "gate:4");
    let p_ns = process_gated();
    let _ = std::fs::remove_file(format!(
        "/dev/shm/memtamer-gate-bench-{}-process",
        std::process::id()
    ));
    out += &format!("process gate (C ABI, shim path) {p_ns:>6.1} ns per gated call\n");
    out += &shim;
    let cpu = collector_cpu()?;
    out += &format!(
        "collector CPU                 {:>8.3} % of one core (10 ms window, 8 busy threads; target < 1%)\n",
        cpu * 100.0
    );
    Ok(out)
}
