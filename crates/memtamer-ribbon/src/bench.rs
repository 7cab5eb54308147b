//! `memtamer bench ribbon` as a library function: what Ribbon costs and
//! saves, each measured against its baseline in the same run.
//!
//! * **Persist loop** (issue 19, "overhead when Ribbon is on but M = N"):
//!   N threads each write a 4 KiB block and persist it, eagerly
//!   (`memtamer_pmem::persist` on the thread, libpmem's `pmem_persist`) or
//!   through Ribbon with M = N flushers (`flush` + `fence`). Rounds
//!   alternate the modes; the report gives the median ns per persist
//!   of each and their ratio. Beside the default M = N (flushes run on
//!   their caller, `Config::inline_when_dedicated`) it runs M = N with the
//!   hand-off forced, its wake-up counts, and [`handoff::measure`]'s
//!   pieces of the hand-off, so the report shows where the hand-off's
//!   cost goes.
//! * **Coalescing** (thesis §6.3.3, Listing 6.1): Redis-like inserts of a
//!   24 B key and a 100 B value, flushed separately in two system-allocator
//!   blocks, against one coalesced `ribbon_alloc` block flushed once:
//!   cache lines flushed per insert and time per insert.

use std::fmt;
use std::time::Instant;

use crate::alloc::{Allocator, Kind, DEFAULT_KEY_RESERVE};
use crate::runtime::{Config, Flushers, Ribbon};

#[path = "bench_handoff.rs"]
pub mod handoff;

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
            iters: 2_000,
            rounds: 41,
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
    /// Median ns per persist through Ribbon at M = N (default: flushes
    /// run on their caller, `Config::inline_when_dedicated`).
    pub ribbon_ns: f64,
    /// Per-round ratios ribbon / eager (the headline is their median:
    /// short alternating rounds keep a loaded machine's swings out of it).
    pub round_ratios: Vec<f64>,
    /// Share of the M = N requests that ran on their caller.
    pub dedicated_share: f64,
    /// Median ns per persist at M = N with the hand-off forced.
    pub handoff_ns: f64,
    /// Per-round ratios forced hand-off / eager.
    pub handoff_ratios: Vec<f64>,
    /// Batches the application threads ran themselves in the forced
    /// hand-off runs because no flusher took them in time (share of fences).
    pub self_drain_share: f64,
    /// Futex wakes of a sleeping flusher per persist (forced hand-off).
    pub wakeups_per_persist: f64,
    /// Times a flusher went to sleep per persist (forced hand-off).
    pub parks_per_persist: f64,
    /// The hand-off's pieces measured alone (one thread).
    pub pieces: handoff::Pieces,
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
    /// Ribbon's persist time over eager's (1.0 = no overhead): the median
    /// of the per-round ratios (each round's pair ran back to back).
    pub fn ratio(&self) -> f64 {
        median(&mut self.round_ratios.clone())
    }

    /// The forced hand-off's time over eager's, the same way.
    pub fn handoff_ratio(&self) -> f64 {
        median(&mut self.handoff_ratios.clone())
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
            "  ribbon flush+fence M=N  {:>9.1} ns/persist   ({:.1}% of requests run on their caller: each queue has its own flusher)",
            self.ribbon_ns,
            100.0 * self.dedicated_share
        )?;
        writeln!(
            f,
            "  ratio ribbon/eager      {:>9.3}   (median of per-round ratios; rounds min/q1/q3/max {})",
            self.ratio(),
            spread(&self.round_ratios)
        )?;
        writeln!(
            f,
            "  M=N, hand-off forced    {:>9.1} ns/persist   ratio {:.3} (rounds min/q1/q3/max {})",
            self.handoff_ns,
            self.handoff_ratio(),
            spread(&self.handoff_ratios)
        )?;
        writeln!(
            f,
            "    per persist: {:.2} futex wakes, {:.2} flusher sleeps; fences where the application ran its own batch (no flusher took it in time): {:.1}%",
            self.wakeups_per_persist,
            self.parks_per_persist,
            100.0 * self.self_drain_share
        )?;
        writeln!(
            f,
            "  ribbon M=0 (inline)     {:>9.1} ns/persist   ratio {:.3}: the layer without the hand-off to a flusher",
            self.inline_ns,
            self.inline_ns / self.eager_ns
        )?;
        let p = &self.pieces;
        writeln!(
            f,
            "hand-off pieces, one thread, ns/persist: local write+flush+fence {:.1} (flush+fence {:.1}) · through a ring on the same thread {:.1} · to a spinning helper thread {:.1} (its flush+fence of lines dirty in the writer's cache {:.1})",
            p.local_total, p.local_flush, p.ring_total, p.spin_total, p.spin_flush
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
    // checked: `--threads 18446744073709551615` wrapped the product and
    // surfaced as "invalid parameters to Layout::from_size_align"
    let len = opts
        .block
        .checked_mul(opts.blocks_per_thread)
        .and_then(|span| span.checked_mul(opts.threads))
        .ok_or_else(|| {
            BenchError::Opts(format!(
                "threads {} x {} blocks of {} bytes overflow the address space",
                opts.threads, opts.blocks_per_thread, opts.block
            ))
        })?;
    let span = opts.block * opts.blocks_per_thread;
    let buf = Buf::new(len)?;
    let mut cfg = Config::new(opts.threads, 1024);
    cfg.flushers = Flushers::Fixed(opts.threads);
    let ribbon = Ribbon::start(cfg)?;
    let mut handoff_cfg = Config::new(opts.threads, 1024);
    handoff_cfg.flushers = Flushers::Fixed(opts.threads);
    handoff_cfg.inline_when_dedicated = false;
    let handoff = Ribbon::start(handoff_cfg)?;
    let mut inline_cfg = Config::new(opts.threads, 1024);
    inline_cfg.flushers = Flushers::Fixed(0);
    let inline = Ribbon::start(inline_cfg)?;
    let mut inl = Vec::new();
    let mut eager = Vec::new();
    let mut rib = Vec::new();
    let mut ratios = Vec::new();
    let mut hand = Vec::new();
    let mut hand_ratios = Vec::new();
    let mut pieces = Vec::new();
    for round in 0..opts.rounds {
        // eager, M = N and M = 0 interleave chunk by chunk (rotating which
        // goes first); the forced hand-off runs beside eager in its own
        // phase, because its flusher spins on after each chunk and would
        // slow whichever chunk follows it.
        let order = [None, Some(&ribbon), Some(&inline)];
        let k = round % 3;
        let rotated: Vec<Option<&Ribbon>> = (0..3).map(|i| order[(i + k) % 3]).collect();
        let t = persist_round(opts, &buf, span, &rotated);
        let (e, r, i) = (t[(3 - k) % 3], t[(4 - k) % 3], t[(5 - k) % 3]);
        inl.push(i);
        let th = persist_round(opts, &buf, span, &[None, Some(&handoff)]);
        hand.push(th[1]);
        hand_ratios.push(th[1] / th[0]);
        pieces.push(handoff::measure(
            buf.ptr as usize,
            opts.block,
            opts.blocks_per_thread,
            opts.iters,
        ));
        eager.push(e);
        rib.push(r);
        ratios.push(r / e);
    }
    let st = ribbon.stats();
    let dedicated_share = st.dedicated_requests as f64 / st.requests.max(1) as f64;
    let hs = handoff.stats();
    let persists = hs.fences.max(1) as f64;
    ribbon.stop();
    handoff.stop();
    inline.stop();
    let pieces = handoff::Pieces::median(&pieces);
    let (separate_lines, separate_ns) = inserts(opts.inserts, false);
    let (coalesced_lines, coalesced_ns) = inserts(opts.inserts, true);
    Ok(Report {
        opts: opts.clone(),
        eager_ns: median(&mut eager),
        ribbon_ns: median(&mut rib),
        round_ratios: ratios,
        dedicated_share,
        handoff_ns: median(&mut hand),
        handoff_ratios: hand_ratios,
        self_drain_share: hs.self_drains as f64 / persists,
        wakeups_per_persist: hs.wakeups as f64 / persists,
        parks_per_persist: hs.parks as f64 / persists,
        pieces,
        inline_ns: median(&mut inl),
        separate_lines,
        coalesced_lines,
        separate_ns,
        coalesced_ns,
        flush: memtamer_pmem::best_flush().name(),
        cores: crate::hardware_threads(),
    })
}

/// "min q1 q3 max" of `v`, 3 decimals.
fn spread(v: &[f64]) -> String {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    if v.is_empty() {
        return "-".into();
    }
    format!(
        "{:.3}/{:.3}/{:.3}/{:.3}",
        at(0.0),
        at(0.25),
        at(0.75),
        at(1.0)
    )
}

pub(crate) fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Persists per timed chunk: one `Instant` pair per chunk keeps the
/// timer's cost out of the numbers, and chunks of different modes
/// alternate so a loaded machine's swings hit every mode alike.
const CHUNK: usize = 50;

/// One round of the persist loop on every thread, the `modes` (None =
/// eager, Some = through that Ribbon) alternating chunk by chunk,
/// `opts.iters` persists per mode and thread. Returns ns per persist per
/// mode: the median chunk, averaged over threads.
fn persist_round(opts: &Opts, buf: &Buf, span: usize, modes: &[Option<&Ribbon>]) -> Vec<f64> {
    let base = buf.ptr as usize;
    let chunks = opts.iters.div_ceil(CHUNK);
    // Every thread registers its queues first, so timing starts with all
    // N queues known (M = N from the first persist) and excludes thread start.
    let ready = std::sync::Barrier::new(opts.threads);
    let per_thread: Vec<Vec<f64>> = std::thread::scope(|s| {
        let ready = &ready;
        let workers: Vec<_> = (0..opts.threads)
            .map(|t| {
                s.spawn(move || {
                    let mut producers: Vec<_> =
                        modes.iter().map(|m| m.map(Ribbon::producer)).collect();
                    let mut times = vec![Vec::with_capacity(chunks); modes.len()];
                    let mine = base + t * span;
                    let mut i = 0usize;
                    ready.wait();
                    for _ in 0..chunks {
                        for (mode, producer) in producers.iter_mut().enumerate() {
                            let t0 = Instant::now();
                            for _ in 0..CHUNK {
                                let p =
                                    (mine + (i % opts.blocks_per_thread) * opts.block) as *mut u8;
                                i += 1;
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
                            times[mode].push(t0.elapsed().as_nanos() as f64 / CHUNK as f64);
                        }
                    }
                    // No queue unregisters (N dropping below M) while
                    // another thread is still timing.
                    ready.wait();
                    drop(producers);
                    times.iter_mut().map(|v| median(v)).collect::<Vec<f64>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().unwrap_or_default())
            .collect()
    });
    (0..modes.len())
        .map(|m| per_thread.iter().filter_map(|v| v.get(m)).sum::<f64>() / opts.threads as f64)
        .collect()
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
        assert!(r.handoff_ns > 0.0 && r.handoff_ratios.len() == 2);
        assert_eq!(
            r.dedicated_share, 1.0,
            "M = N = 1: every request on its caller"
        );
        let text = r.to_string();
        assert!(
            text.contains("ratio ribbon/eager")
                && text.contains("M=0")
                && text.contains("hand-off forced")
                && text.contains("fewer"),
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

    /// A thread count whose buffer overflows a usize is refused by name
    /// (it was a bare "invalid parameters to Layout::from_size_align").
    #[test]
    fn a_thread_count_whose_buffer_overflows_is_named() {
        let opts = Opts {
            threads: usize::MAX,
            ..Opts::default()
        };
        match run(&opts) {
            Err(BenchError::Opts(m)) => {
                assert!(m.contains(&format!("threads {}", usize::MAX)), "{m}")
            }
            other => panic!("{:?}", other.err()),
        }
    }
}
