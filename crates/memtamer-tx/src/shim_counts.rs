//! libpmemobj's persistence counts, read from the libpmem shim
//! (`crates/memtamer-pmem-shim`, counting mode) when the process runs
//! under `LD_PRELOAD=libmemtamer_pmem_shim.so`: the bench prints
//! libpmemobj's flushes, fences and big-write share per transaction beside
//! ArchTM's, counted from the calls libpmemobj really makes
//! (`pmem_flush`/`pmem_drain`/`pmem_persist`/the flushing copies) in the
//! same run. [`reexec_under_shim`] starts the bench again under the shim
//! when it finds it beside the executable.

use std::ffi::{c_int, CStr};
use std::path::{Path, PathBuf};

use crate::pool::PoolStats;

/// The shim's counts (one layout with the shim, in memtamer-pmem).
pub use memtamer_pmem::ShimCounts;

const START: &CStr = c"memtamer_pmem_shim_count_start";
const COUNTS: &CStr = c"memtamer_pmem_shim_counts";
/// The shim's file name (cargo's cdylib name).
pub const SHIM_FILE: &str = "libmemtamer_pmem_shim.so";
/// Set in the environment of a re-executed bench (no second re-exec).
pub const ENV_UNDER_SHIM: &str = "MEMTAMER_BENCH_UNDER_SHIM";

fn sym(name: &CStr) -> usize {
    // SAFETY: dlsym with a NUL-terminated name; RTLD_DEFAULT searches the
    // global scope, where an LD_PRELOADed library is.
    unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) as usize }
}

/// Whether the shim is loaded; turns its counting on if so.
pub fn start() -> bool {
    let f = sym(START);
    if f == 0 || sym(COUNTS) == 0 {
        return false;
    }
    // SAFETY: the shim's `extern "C" fn memtamer_pmem_shim_count_start()`.
    unsafe { std::mem::transmute::<usize, extern "C" fn()>(f)() };
    true
}

/// The counts so far (None: the shim is not loaded, counting is off, or
/// its layout differs).
pub fn snapshot() -> Option<ShimCounts> {
    let f = sym(COUNTS);
    if f == 0 {
        return None;
    }
    let mut c = ShimCounts::default();
    // SAFETY: the shim's `unsafe extern "C" fn(*mut ShimCounts) -> c_int`,
    // given a writable ShimCounts of the same layout.
    let rc = unsafe {
        std::mem::transmute::<usize, unsafe extern "C" fn(*mut ShimCounts) -> c_int>(f)(&mut c)
    };
    (rc == 0 && c.size as usize == std::mem::size_of::<ShimCounts>()).then_some(c)
}

/// `b - a` as the bench's per-cell persistence counters (commits = the
/// outermost transactions libpmemobj ended; persisted bytes = flushed
/// lines x 64, as for ArchTM).
pub fn delta(a: &ShimCounts, b: &ShimCounts) -> PoolStats {
    let lines = b.flushed_lines - a.flushed_lines;
    PoolStats {
        commits: b.txs - a.txs,
        ro_commits: 0,
        aborts: 0,
        flushed_lines: lines,
        fences: b.fences - a.fences,
        persisted_bytes: lines * 64,
        bytes_in_big_runs: b.bytes_in_big_runs - a.bytes_in_big_runs,
        flush_calls: b.flush_calls - a.flush_calls,
        call_bytes: b.call_bytes - a.call_bytes,
        call_big_bytes: b.call_big_bytes - a.call_big_bytes,
    }
}

/// The shim beside the running executable or one directory up
/// (`target/release/memtamer`, `target/release/examples/bench_tx`).
pub fn shim_beside_exe() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    let found = [Some(dir), dir.parent()]
        .into_iter()
        .flatten()
        .map(|d: &Path| d.join(SHIM_FILE))
        .find(|p| p.is_file());
    found
}

/// Runs this process's command line again with the shim preloaded (so that
/// libpmemobj's calls are counted), when libpmemobj is linked, the shim is
/// not loaded yet, it is found beside the executable, and this is not
/// already the re-executed process. `Some(exit code)` when it ran; `None`:
/// carry on in this process (counts then print as "-").
pub fn reexec_under_shim() -> Option<i32> {
    if !cfg!(has_pmdk) || sym(COUNTS) != 0 || std::env::var_os(ENV_UNDER_SHIM).is_some() {
        return None;
    }
    let shim = shim_beside_exe()?;
    let exe = std::env::current_exe().ok()?;
    let preload = match std::env::var("LD_PRELOAD") {
        Ok(p) if !p.is_empty() => format!("{}:{p}", shim.display()),
        _ => shim.display().to_string(),
    };
    let mut cmd = std::process::Command::new(exe);
    cmd.args(std::env::args_os().skip(1))
        .env("LD_PRELOAD", preload)
        .env(ENV_UNDER_SHIM, "1");
    if std::env::var_os("MEMTAMER_GATE_BYPASS").is_none() {
        // the shim would also route libpmemobj's large flushes through the
        // PATS gate; the bench measures libpmemobj alone: never gate
        cmd.env("MEMTAMER_GATE_BYPASS", "1073741824");
    }
    let status = cmd.status().ok()?;
    Some(status.code().unwrap_or(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_the_shim_there_are_no_counts() {
        // the test binary does not preload the shim
        assert!(!start());
        assert_eq!(snapshot(), None);
    }

    #[test]
    fn delta_maps_shim_counts_to_pool_stats() {
        let a = ShimCounts {
            size: 64,
            txs: 10,
            flush_calls: 40,
            flushed_lines: 50,
            fences: 30,
            call_bytes: 2000,
            call_big_bytes: 512,
            bytes_in_big_runs: 256,
        };
        let mut b = a;
        b.txs += 2;
        b.flush_calls += 9;
        b.flushed_lines += 12;
        b.fences += 8;
        b.call_bytes += 700;
        b.call_big_bytes += 300;
        b.bytes_in_big_runs += 320;
        let d = delta(&a, &b);
        assert_eq!(d.commits, 2);
        assert_eq!((d.flushed_lines, d.persisted_bytes), (12, 768));
        assert_eq!((d.fences, d.flush_calls), (8, 9));
        assert_eq!((d.call_bytes, d.call_big_bytes), (700, 300));
        assert_eq!(d.bytes_in_big_runs, 320);
    }
}
