//! `memtamer bench ribbon` as a library function: what Ribbon costs and
//! saves, each measured against its baseline in the same run.
//!
//! * **Persist loop** (issue 19, "overhead when Ribbon is on but M = N"):
//!   N threads each write a 4 KiB block and persist it, eagerly
//!   (`memtamer_pmem::persist` on the thread, libpmem's `pmem_persist`) or
//!   through Ribbon with M = N flushers (`flush` + `fence`). Rounds
//!   alternate the two modes; the report gives the median ns per persist
//!   of each and their ratio.
//! * **Coalescing** (thesis §6.3.3, Listing 6.1): Redis-like inserts of a
//!   24 B key and a 100 B value, flushed separately in two system-allocator
//!   blocks, against one coalesced `ribbon_alloc` block flushed once:
//!   cache lines flushed per insert and time per insert.

use std::fmt;
use std::time::Instant;

use crate::alloc::{Allocator, Kind, DEFAULT_KEY_RESERVE};
use crate::runtime::{Config, Flushers, Ribbon};

/// What to run.
#[derive(Clone, Debug)]
pub struct Opts {
    /// Application threads N (Ribbon runs M = N flushers).
    pub threads: usize,
    /// Persists per thread per round.
    pub iters: usize,
    /// Alternating rounds (each runs both modes once).
    pub rounds: usize,
    /// Bytes per persist (4 KiB in the issue).
    pub block: usize,
    /// Blocks each thread cycles through.
    pub blocks_per_thread: usize,
    /// Key/value inserts for the coalescing part.
    pub inserts: usize,
}

impl Default for Opts {
    fn default() -> Opts {
        Opts {
            threads: 1,
            iters: 20_000,
            rounds: 5,
            block: 4096,
            blocks_per_thread: 256,
            inserts: 100_000,
        }
    }
}

/// Why the benchmark could not run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// Options out of range.
    #[error("bench ribbon: {0}")]
    Opts(String),
    /// Ribbon did not start.
    #[error("bench ribbon: {0}")]
    Ribbon(#[from] crate::RibbonError),
}

/// The measured numbers.
#[derive(Clone, Debug)]
pub struct Report {
    /// The options used.
    pub opts: Opts,
    /// Median ns per persist, eager, over rounds.
    pub eager_ns: f64,
    /// Median ns per persist through Ribbon at M = N.
    pub ribbon_ns: f64,
    /// Per-round ratios ribbon / eager.
    pub round_ratios: Vec<f64>,
    /// Batches the application threads ran themselves in the M = N runs
    /// because no flusher took them in time (share of all persists).
    pub self_drain_share: f64,
    /// Median ns per persist through Ribbon with M = 0 (the application
    /// thread flushes; the layer's own cost without a hand-off).
    pub inline_ns: f64,
    /// Lines flushed per insert, key and value in separate malloc blocks.
    pub separate_lines: f64,
    /// Lines flushed per insert, coalesced block, one flush.
    pub coalesced_lines: f64,
    /// ns per insert (write, flush, fence), separate.
    pub separate_ns: f64,
    /// ns per insert, coalesced.
    pub coalesced_ns: f64,
    /// The flush instruction used.
    pub flush: &'static str,
    /// Hardware threads of this process.
    pub cores: usize,
}

impl Report {
    /// Ribbon's persist time over eager's (1.0 = no overhead).
    pub fn ratio(&self) -> f64 {
        self.ribbon_ns / self.eager_ns
    }

    /// Fraction of flushed lines coalescing saves.
    pub fn line_reduction(&self) -> f64 {
        1.0 - self.coalesced_lines / self.separate_lines
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let o = &self.opts;
        writeln!(
            f,
            "ribbon bench: {} B persists, N = M = {} thread(s), {} per thread x {} alternating rounds, {} hardware threads, flush = {}",
            o.block, o.threads, o.iters, o.rounds, self.cores, self.flush
        )?;
        writeln!(
            f,
            "  eager pmem_persist      {:>9.1} ns/persist (median of rounds)",
            self.eager_ns
        )?;
        writeln!(
            f,
            "  ribbon flush+fence M=N  {:>9.1} ns/persist",
            self.ribbon_ns
        )?;
        let rr: Vec<String> = self
            .round_ratios
            .iter()
            .map(|r| format!("{r:.3}"))
            .collect();
        writeln!(
            f,
            "  ratio ribbon/eager      {:>9.3}   (rounds: {})",
            self.ratio(),
            rr.join(" ")
        )?;
        writeln!(
            f,
            "  fences at M=N where the application ran its own batch (no flusher took it in time): {:.1}%",
            100.0 * self.self_drain_share
        )?;
        writeln!(
            f,
            "  ribbon M=0 (inline)     {:>9.1} ns/persist   ratio {:.3}: the layer without the hand-off to a flusher",
            self.inline_ns,
            self.inline_ns / self.eager_ns
        )?;
        writeln!(
            f,
            "coalescing: {} inserts of a 24 B key + 100 B value (thesis Listing 6.1)",
            o.inserts
        )?;
        writeln!(
            f,
            "  separate malloc blocks, 2 flushes  {:>5.3} lines/insert  {:>8.1} ns/insert",
            self.separate_lines, self.separate_ns
        )?;
        writeln!(
            f,
            "  ribbon_alloc coalesced, 1 flush    {:>5.3} lines/insert  {:>8.1} ns/insert",
            self.coalesced_lines, self.coalesced_ns
        )?;
        write!(
            f,
            "  lines flushed: {:.1}% fewer; time ratio coalesced/separate {:.3}",
            100.0 * self.line_reduction(),
            self.coalesced_ns / self.separate_ns
        )
    }
}

/// A page-aligned buffer of `len` bytes.
struct Buf {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}

impl Buf {
    fn new(len: usize) -> Result<Buf, BenchError> {
        let layout = std::alloc::Layout::from_size_align(len, 4096)
            .map_err(|e| BenchError::Opts(e.to_string()))?;
        // SAFETY: len > 0 (checked by the caller).
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(BenchError::Opts(format!("cannot allocate {len} bytes")));
        }
        Ok(Buf { ptr, layout })
    }
}

impl Drop for Buf {
    fn drop(&mut self) {
        // SAFETY: allocated with this layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) };
    }
}

// SAFETY: each thread writes its own disjoint part.
unsafe impl Sync for Buf {}

/// Runs both parts.
pub fn run(opts: &Opts) -> Result<Report, BenchError> {
    if opts.threads == 0
        || opts.iters == 0
        || opts.rounds == 0
        || opts.block == 0
        || opts.blocks_per_thread == 0
    {
        return Err(BenchError::Opts(format!(
            "every count must be at least 1: {opts:?}"
        )));
    }
    let span = opts.block * opts.blocks_per_thread;
    let buf = Buf::new(span * opts.threads)?;
    let mut cfg = Config::new(opts.threads, 1024);
    cfg.flushers = Flushers::Fixed(opts.threads);
    let ribbon = Ribbon::start(cfg)?;
    let mut inline_cfg = Config::new(opts.threads, 1024);
    inline_cfg.flushers = Flushers::Fixed(0);
    let inline = Ribbon::start(inline_cfg)?;
    let mut inl = Vec::new();
    let mut eager = Vec::new();
    let mut rib = Vec::new();
    let mut ratios = Vec::new();
    for round in 0..opts.rounds {
        // alternate which mode goes first
        let (e, r) = if round % 2 == 0 {
            let e = persist_round(opts, &buf, span, None);
            (e, persist_round(opts, &buf, span, Some(&ribbon)))
        } else {
            let r = persist_round(opts, &buf, span, Some(&ribbon));
            (persist_round(opts, &buf, span, None), r)
        };
        inl.push(persist_round(opts, &buf, span, Some(&inline)));
        eager.push(e);
        rib.push(r);
        ratios.push(r / e);
    }
    let st = ribbon.stats();
    let self_drain_share = st.self_drains as f64 / st.fences.max(1) as f64;
    ribbon.stop();
    inline.stop();
    let (separate_lines, separate_ns) = inserts(opts.inserts, false);
    let (coalesced_lines, coalesced_ns) = inserts(opts.inserts, true);
    Ok(Report {
        opts: opts.clone(),
        eager_ns: median(&mut eager),
        ribbon_ns: median(&mut rib),
        round_ratios: ratios,
        inline_ns: median(&mut inl),
        self_drain_share,
        separate_lines,
        coalesced_lines,
        separate_ns,
        coalesced_ns,
        flush: memtamer_pmem::best_flush().name(),
        cores: crate::hardware_threads(),
    })
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// One round of the persist loop on every thread; mean ns per persist.
fn persist_round(opts: &Opts, buf: &Buf, span: usize, ribbon: Option<&Ribbon>) -> f64 {
    let base = buf.ptr as usize;
    let t0 = Instant::now();
    std::thread::scope(|s| {
        for t in 0..opts.threads {
            s.spawn(move || {
                let mut producer = ribbon.map(Ribbon::producer);
                let mine = base + t * span;
                for i in 0..opts.iters {
                    let p = (mine + (i % opts.blocks_per_thread) * opts.block) as *mut u8;
                    // SAFETY: p..p+block lies in this thread's part of buf.
                    unsafe { std::ptr::write_bytes(p, i as u8, opts.block) };
                    match producer.as_mut() {
                        // SAFETY: buf outlives the round; the fence follows.
                        Some(pr) => unsafe {
                            let _ = pr.flush(p, opts.block);
                            pr.fence();
                        },
                        // SAFETY: mapped.
                        None => unsafe { memtamer_pmem::persist(p, opts.block) },
                    }
                }
            });
        }
    });
    t0.elapsed().as_nanos() as f64 / opts.iters as f64
}

/// `n` Redis-like inserts (Listing 6.1): returns (lines flushed per
/// insert, ns per insert). Separate: value and key from the system
/// allocator, each written, flushed and fenced. Coalesced: one
/// `ribbon_alloc` pair, both written, one flush, one fence.
fn inserts(n: usize, coalesced: bool) -> (f64, f64) {
    const KEY: usize = 24;
    const VALUE: usize = 100;
    let alloc = Allocator::new(DEFAULT_KEY_RESERVE);
    let mut live: Vec<(*mut u8, *mut u8)> = Vec::with_capacity(n);
    let mut lines = 0usize;
    let (kl, vl) = (
        std::alloc::Layout::from_size_align(KEY, 8).ok(),
        std::alloc::Layout::from_size_align(VALUE, 8).ok(),
    );
    let (Some(kl), Some(vl)) = (kl, vl) else {
        return (f64::NAN, f64::NAN);
    };
    let t0 = Instant::now();
    for i in 0..n {
        if coalesced {
            let (Ok(v), Ok(k)) = (alloc.alloc(VALUE, Kind::Value), alloc.alloc(KEY, Kind::Key))
            else {
                break;
            };
            // SAFETY: both blocks were just allocated with these sizes.
            unsafe {
                std::ptr::write_bytes(v, i as u8, VALUE);
                std::ptr::write_bytes(k, i as u8, KEY);
                let span = k as usize + KEY - v as usize;
                memtamer_pmem::persist(v, span);
                lines += memtamer_pmem::lines_covered(v as usize, span);
            }
            live.push((v, k));
        } else {
            // SAFETY: non-zero layouts.
            let (v, k) = unsafe { (std::alloc::alloc(vl), std::alloc::alloc(kl)) };
            if v.is_null() || k.is_null() {
                break;
            }
            // SAFETY: both blocks were just allocated with these sizes.
            unsafe {
                std::ptr::write_bytes(v, i as u8, VALUE);
                memtamer_pmem::persist(v, VALUE);
                std::ptr::write_bytes(k, i as u8, KEY);
                memtamer_pmem::persist(k, KEY);
            }
            lines += memtamer_pmem::lines_covered(v as usize, VALUE)
                + memtamer_pmem::lines_covered(k as usize, KEY);
            live.push((v, k));
        }
    }
    let ns = t0.elapsed().as_nanos() as f64 / n.max(1) as f64;
    for (v, k) in live {
        if coalesced {
            let _ = alloc.free(k);
            let _ = alloc.free(v);
        } else {
            // SAFETY: allocated above with these layouts.
            unsafe {
                std::alloc::dealloc(v, vl);
                std::alloc::dealloc(k, kl);
            }
        }
    }
    (lines as f64 / n.max(1) as f64, ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coalescing_flushes_at_least_30_percent_fewer_lines_per_insert() {
        let (sep, _) = inserts(20_000, false);
        let (coal, _) = inserts(20_000, true);
        assert!(
            (coal - 2.0).abs() < 1e-9,
            "100 B + 24 B in one aligned block is 2 lines, got {coal}"
        );
        assert!(
            sep >= 3.0,
            "two separate malloc blocks cover at least 3 lines, got {sep}"
        );
        assert!(
            1.0 - coal / sep >= 0.30,
            "reduction {:.3} below 30% ({sep} -> {coal})",
            1.0 - coal / sep
        );
    }

    #[test]
    fn a_small_run_reports_both_modes() {
        let opts = Opts {
            threads: 1,
            iters: 200,
            rounds: 2,
            block: 4096,
            blocks_per_thread: 8,
            inserts: 500,
        };
        let r = run(&opts).unwrap();
        assert!(r.eager_ns > 0.0 && r.ribbon_ns > 0.0 && r.round_ratios.len() == 2);
        let text = r.to_string();
        assert!(
            text.contains("ratio ribbon/eager") && text.contains("M=0") && text.contains("fewer"),
            "{text}"
        );
    }

    #[test]
    fn zero_counts_are_refused() {
        let opts = Opts {
            threads: 0,
            ..Opts::default()
        };
        assert!(matches!(run(&opts), Err(BenchError::Opts(_))));
    }
}
