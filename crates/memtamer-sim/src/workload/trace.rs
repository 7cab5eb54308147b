//! Replay of a recorded flush/fence trace (`memtamer-trace v1`, format in
//! docs/simulator.md "Flush/fence traces") as PM requests.
//!
//! A trace is what a persistent-memory library made durable: per thread,
//! `store` (lines written since their last flush), `flush` (clwb of a
//! range), `fence` (sfence / pmem_drain) and `tx` (a transaction boundary).
//! Parsing resolves which flushes write anything, in the file's order (one
//! valid interleaving of the threads): a flushed line is written to PM only
//! if a store to it was recorded since its last flush (clwb of a clean line
//! moves no data). Each such write becomes a 64 B PM write ([`Op::StoreNt`]:
//! the core hands the line to the iMC without a read-for-ownership), a
//! fence becomes [`Op::Drain`] (the thread waits for its outstanding
//! writes) and a `tx` record one work unit. Addresses keep their offsets
//! from the trace's lowest 4 KiB page, so the DIMM's XPBuffer sees the
//! library's real XPLine locality and the media write amplification is the
//! DIMM model's, not the trace's.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};

use super::{addr, OpBatch};
use crate::workload::{Op, Ps, LINE};

/// Thread slot whose address span all trace threads share: a recorded
/// pool is one shared mapping, not a span per thread (slot 4095 keeps clear
/// of every other job's threads).
const TRACE_SLOT: u32 = 4095;

/// Longest range of one record.
const MAX_RANGE: u64 = 1 << 30;
/// Most replay steps a trace may expand to (memory bound: 16 B each).
const MAX_STEPS: usize = 1 << 26;

/// The first line of a trace file.
pub const TRACE_MAGIC: &str = "# memtamer-trace v1";

/// Built-in traces (recorded by `scripts/record-tx-traces`, see docs/tx.md).
const BUILTIN: &[(&str, &str)] = &[
    (
        "archtm-hash",
        include_str!("../../builtin/traces/archtm-hash.trace"),
    ),
    (
        "pmdk-hash",
        include_str!("../../builtin/traces/pmdk-hash.trace"),
    ),
];

/// One replayed step of a thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// 64 B PM write of this line (offset / 64 from the trace's base).
    Write(u64),
    /// Wait for this thread's outstanding writes.
    Fence,
    /// A transaction completed.
    Tx,
}

/// What the trace persists, independent of timing (reported beside the
/// simulated rates).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TraceStats {
    /// Transaction markers.
    pub txs: u64,
    /// Fences.
    pub fences: u64,
    /// Lines named by flush records (dirty or not).
    pub flushed_lines: u64,
    /// Bytes written to PM (dirty lines flushed x 64).
    pub persisted_bytes: u64,
    /// Of those, bytes in contiguous runs of >= 256 B within one fence
    /// epoch of one thread (Optane combines these into full XPLine writes;
    /// the same definition as memtamer-tx's `bytes_in_big_runs`).
    pub big_run_bytes: u64,
    /// Sum of the flush records' lengths (one record = one persist call).
    pub call_bytes: u64,
    /// Of those, the lengths of records of at least 256 B: the thesis's
    /// big writes (§5.2.1, Fig. 5.1b sizes each persist API call by its
    /// start address and size).
    pub call_big_bytes: u64,
    /// Bytes the transactions modified through the library's API (`mod`
    /// records): the denominator of the thesis's write amplification.
    pub modified_bytes: u64,
    /// `mod` records seen.
    pub mod_records: u64,
    /// 256 B per distinct XPLine a fence epoch of a thread wrote: the media
    /// bytes if the on-DIMM buffer wrote every epoch's XPLines through once
    /// (no reuse across epochs), an analytic figure from the trace alone.
    pub epoch_xpline_bytes: u64,
    /// Persisted bytes written to an XPLine the same thread had already
    /// written earlier in the same transaction (in an earlier fence epoch):
    /// the rewrites a write-back XPBuffer can absorb.
    pub xpline_rewrite_bytes: u64,
}

impl TraceStats {
    /// Share of persisted bytes in writes >= 256 B (issue 18's metric).
    pub fn big_write_share(&self) -> f64 {
        self.big_run_bytes as f64 / (self.persisted_bytes.max(1)) as f64
    }

    /// Share of the flush records' bytes in records of >= 256 B.
    pub fn call_big_write_share(&self) -> f64 {
        self.call_big_bytes as f64 / (self.call_bytes.max(1)) as f64
    }

    fn add(&mut self, s: &TraceStats) {
        self.txs += s.txs;
        self.fences += s.fences;
        self.flushed_lines += s.flushed_lines;
        self.persisted_bytes += s.persisted_bytes;
        self.big_run_bytes += s.big_run_bytes;
        self.call_bytes += s.call_bytes;
        self.call_big_bytes += s.call_big_bytes;
        self.modified_bytes += s.modified_bytes;
        self.mod_records += s.mod_records;
        self.epoch_xpline_bytes += s.epoch_xpline_bytes;
        self.xpline_rewrite_bytes += s.xpline_rewrite_bytes;
    }
}

/// The trace metrics of job `n` (docs/simulator.md "Flush/fence traces"):
/// what the trace persists, and the thesis's write amplification (§5.2.1:
/// NVM write traffic measured by counters / bytes modified by
/// transactions) at two counter levels: `thesis_wa_imc` counts the bytes
/// the DIMMs received (the iMC's PM write counters), `thesis_wa_media` the
/// simulated media writes per transaction (the DIMMs' media counters,
/// `media_write_bytes` over the `units` transactions of the window; only
/// meaningful when this job is the only PM writer).
pub fn metrics(
    n: &str,
    st: &TraceStats,
    units: u64,
    media_write_bytes: u64,
    m: &mut std::collections::BTreeMap<String, f64>,
) {
    let per_tx = |v: u64| v as f64 / st.txs.max(1) as f64;
    m.insert(format!("{n}.trace_big_write_share"), st.big_write_share());
    m.insert(
        format!("{n}.trace_bytes_per_tx"),
        per_tx(st.persisted_bytes),
    );
    m.insert(format!("{n}.trace_fences_per_tx"), per_tx(st.fences));
    m.insert(
        format!("{n}.trace_flushed_lines_per_tx"),
        per_tx(st.flushed_lines),
    );
    m.insert(
        format!("{n}.trace_call_big_write_share"),
        st.call_big_write_share(),
    );
    m.insert(
        format!("{n}.trace_epoch_xpline_bytes_per_tx"),
        per_tx(st.epoch_xpline_bytes),
    );
    m.insert(
        format!("{n}.trace_xpline_rewrite_share"),
        st.xpline_rewrite_bytes as f64 / st.persisted_bytes.max(1) as f64,
    );
    if st.mod_records == 0 || st.modified_bytes == 0 {
        return;
    }
    let modified = per_tx(st.modified_bytes);
    m.insert(format!("{n}.trace_modified_bytes_per_tx"), modified);
    m.insert(
        format!("{n}.thesis_wa_imc"),
        per_tx(st.persisted_bytes) / modified,
    );
    m.insert(
        format!("{n}.thesis_wa_epoch_xpline"),
        per_tx(st.epoch_xpline_bytes) / modified,
    );
    if units > 0 {
        m.insert(
            format!("{n}.thesis_wa_media"),
            media_write_bytes as f64 / units as f64 / modified,
        );
    }
}

/// A parsed trace: per-thread step lists plus its statistics.
#[derive(Debug)]
pub struct Trace {
    threads: Vec<Vec<Step>>,
    /// Whole-trace statistics.
    pub stats: TraceStats,
}

#[derive(Clone, Copy)]
enum Rec {
    Store(u64, u64),
    Flush(u64, u64),
    Fence,
    Tx,
    Mod(u64),
}

fn parse_line(line: &str, n: usize) -> Result<Option<(usize, Rec)>, String> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return Ok(None);
    }
    let mut f = line.split_ascii_whitespace();
    let bad = |why: &str| format!("line {n}: {why}: `{line}`");
    let thread: usize = f
        .next()
        .and_then(|t| t.parse().ok())
        .ok_or_else(|| bad("expected a thread number"))?;
    if thread > 4096 {
        return Err(bad("thread number above 4096"));
    }
    let op = f.next().ok_or_else(|| bad("missing op"))?;
    let range = |f: &mut std::str::SplitAsciiWhitespace| -> Result<(u64, u64), String> {
        let a = f
            .next()
            .and_then(|a| u64::from_str_radix(a.trim_start_matches("0x"), 16).ok())
            .ok_or_else(|| bad("expected a hex address"))?;
        let l: u64 = f
            .next()
            .and_then(|l| l.parse().ok())
            .ok_or_else(|| bad("expected a decimal length"))?;
        if l == 0 || l > MAX_RANGE {
            return Err(bad("length must be in 1..=1 GiB"));
        }
        if a.checked_add(l).is_none() {
            return Err(bad("address + length overflows"));
        }
        Ok((a, l))
    };
    let rec = match op {
        "store" => {
            let (a, l) = range(&mut f)?;
            Rec::Store(a, l)
        }
        "flush" => {
            let (a, l) = range(&mut f)?;
            Rec::Flush(a, l)
        }
        "fence" => Rec::Fence,
        "tx" => Rec::Tx,
        "mod" => Rec::Mod(
            f.next()
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| bad("expected a decimal byte count"))?,
        ),
        _ => return Err(bad("op must be store, flush, fence, tx or mod")),
    };
    if f.next().is_some() {
        return Err(bad("trailing fields"));
    }
    Ok(Some((thread, rec)))
}

fn lines_of(a: u64, l: u64) -> std::ops::Range<u64> {
    a / LINE..(a + l).div_ceil(LINE)
}

/// Closes a fence epoch: adds the bytes of its contiguous runs >= 256 B.
fn close_epoch(epoch: &mut Vec<u64>) -> u64 {
    epoch.sort_unstable();
    epoch.dedup();
    let mut big = 0;
    let mut i = 0;
    while i < epoch.len() {
        let mut j = i + 1;
        while j < epoch.len() && epoch[j] == epoch[j - 1] + 1 {
            j += 1;
        }
        let bytes = (j - i) as u64 * LINE;
        if bytes >= 256 {
            big += bytes;
        }
        i = j;
    }
    epoch.clear();
    big
}

impl Trace {
    /// Parses a trace; errors name the line.
    pub fn parse(text: &str) -> Result<Trace, String> {
        let mut lines = text.lines();
        match lines.next() {
            Some(l) if l.trim() == TRACE_MAGIC => {}
            _ => return Err(format!("line 1: expected `{TRACE_MAGIC}`")),
        }
        let mut recs = Vec::new();
        for (i, l) in lines.enumerate() {
            if let Some(r) = parse_line(l, i + 2)? {
                recs.push(r);
            }
        }
        let base = recs
            .iter()
            .filter_map(|(_, r)| match r {
                Rec::Store(a, _) | Rec::Flush(a, _) => Some(*a),
                _ => None,
            })
            .min()
            .unwrap_or(0)
            & !4095;
        let nthreads = recs.iter().map(|(t, _)| t + 1).max().unwrap_or(0);
        let mut threads = vec![Vec::new(); nthreads];
        let mut epochs = vec![Vec::new(); nthreads];
        // XPLines (256 B) written in the current fence epoch / in earlier
        // epochs of the current transaction, per thread
        let mut epoch_x: Vec<HashSet<u64>> = vec![HashSet::new(); nthreads];
        let mut tx_x: Vec<HashSet<u64>> = vec![HashSet::new(); nthreads];
        const LINES_PER_XPLINE: u64 = 256 / LINE;
        let mut dirty: HashSet<u64> = HashSet::new();
        let mut sts = vec![TraceStats::default(); nthreads];
        let mut steps = 0usize;
        for (t, r) in recs {
            match r {
                Rec::Store(a, l) => dirty.extend(lines_of(a - base, l)),
                Rec::Flush(a, l) => {
                    steps += lines_of(a - base, l).count();
                    if steps > MAX_STEPS {
                        return Err(format!("the trace expands to more than {MAX_STEPS} steps"));
                    }
                    let st = &mut sts[t];
                    st.call_bytes += l;
                    if l >= 256 {
                        st.call_big_bytes += l;
                    }
                    for line in lines_of(a - base, l) {
                        st.flushed_lines += 1;
                        if dirty.remove(&line) {
                            st.persisted_bytes += LINE;
                            threads[t].push(Step::Write(line));
                            epochs[t].push(line);
                            let xpl = line / LINES_PER_XPLINE;
                            if tx_x[t].contains(&xpl) {
                                st.xpline_rewrite_bytes += LINE;
                            }
                            epoch_x[t].insert(xpl);
                        }
                    }
                }
                Rec::Fence => {
                    sts[t].fences += 1;
                    sts[t].big_run_bytes += close_epoch(&mut epochs[t]);
                    sts[t].epoch_xpline_bytes += epoch_x[t].len() as u64 * 256;
                    let done: Vec<u64> = epoch_x[t].drain().collect();
                    tx_x[t].extend(done);
                    threads[t].push(Step::Fence);
                }
                Rec::Tx => {
                    sts[t].txs += 1;
                    tx_x[t].clear();
                    threads[t].push(Step::Tx);
                }
                Rec::Mod(n) => {
                    sts[t].modified_bytes += n;
                    sts[t].mod_records += 1;
                }
            }
        }
        for (e, st) in epochs.iter_mut().zip(sts.iter_mut()) {
            st.big_run_bytes += close_epoch(e);
        }
        for (x, st) in epoch_x.iter().zip(sts.iter_mut()) {
            st.epoch_xpline_bytes += x.len() as u64 * 256;
        }
        // Replay (and report) the threads that ran transactions: a thread
        // without any `tx` record (the main thread opening a libpmemobj
        // pool, say) did set-up work, not the measured transactions. With
        // no `tx` record at all, every thread that persisted anything.
        let any_tx = sts.iter().any(|s| s.txs > 0);
        let keep: Vec<usize> = (0..nthreads)
            .filter(|&t| {
                if any_tx {
                    sts[t].txs > 0
                } else {
                    !threads[t].is_empty()
                }
            })
            .collect();
        if keep.is_empty() {
            return Err("the trace has no records".into());
        }
        let mut st = TraceStats::default();
        for &t in &keep {
            st.add(&sts[t]);
        }
        let threads = keep
            .into_iter()
            .map(|t| std::mem::take(&mut threads[t]))
            .collect();
        Ok(Trace { threads, stats: st })
    }

    /// Threads recorded.
    pub fn threads(&self) -> usize {
        self.threads.len()
    }
}

type Cache = Mutex<HashMap<String, Arc<Trace>>>;

fn cache() -> &'static Cache {
    static C: OnceLock<Cache> = OnceLock::new();
    C.get_or_init(Default::default)
}

/// Loads a trace by built-in name or file path (parsed once per process;
/// a file is re-read when its size or modification time changed).
pub fn load(name: &str) -> Result<Arc<Trace>, String> {
    let (key, text) = match BUILTIN.iter().find(|(n, _)| *n == name) {
        Some((n, t)) => (format!("builtin:{n}"), Some(t.to_string())),
        None => {
            let meta = std::fs::metadata(name).map_err(|e| {
                format!(
                    "trace `{name}`: {e} (built-in traces: {})",
                    BUILTIN.iter().map(|b| b.0).collect::<Vec<_>>().join(", ")
                )
            })?;
            (
                format!("{name}:{}:{:?}", meta.len(), meta.modified().ok()),
                None,
            )
        }
    };
    let mut c = cache().lock().unwrap_or_else(|p| p.into_inner());
    if let Some(t) = c.get(&key) {
        return Ok(t.clone());
    }
    let text = match text {
        Some(t) => t,
        None => std::fs::read_to_string(name).map_err(|e| format!("trace `{name}`: {e}"))?,
    };
    let t = Arc::new(Trace::parse(&text).map_err(|e| format!("trace `{name}`: {e}"))?);
    c.insert(key, t.clone());
    Ok(t)
}

/// One thread replaying stream `slot mod threads` of a trace, cyclically.
#[derive(Clone, Debug)]
pub(super) struct TraceReplay {
    trace: Arc<Trace>,
    stream: usize,
    pos: usize,
    region: u8,
    tx_compute: Ps,
}

impl TraceReplay {
    /// `tx_compute`: software time per transaction (0: the PM-bound ceiling).
    pub(super) fn new(trace: Arc<Trace>, slot: u32, region: u8, tx_compute: Ps) -> TraceReplay {
        // the first non-empty stream at or after slot mod threads
        let n = trace.threads.len().max(1);
        let stream = (0..n)
            .map(|k| (slot as usize + k) % n)
            .find(|&s| !trace.threads[s].is_empty())
            .unwrap_or(0);
        TraceReplay {
            trace,
            stream,
            pos: 0,
            region,
            tx_compute,
        }
    }

    /// One fence epoch (or one transaction marker) per refill.
    pub(super) fn refill(&mut self, q: &mut OpBatch) {
        let steps = &self.trace.threads[self.stream];
        if steps.is_empty() {
            q.push_back(Op::Compute(super::NS));
            return;
        }
        let mut bytes = 0;
        for _ in 0..steps.len() {
            let s = steps[self.pos];
            self.pos = (self.pos + 1) % steps.len();
            match s {
                Step::Write(line) => {
                    q.push_back(Op::StoreNt {
                        addr: addr(self.region, TRACE_SLOT, line * LINE),
                    });
                    bytes += LINE;
                }
                Step::Fence => {
                    q.push_back(Op::Drain);
                    break;
                }
                Step::Tx => {
                    if self.tx_compute > 0 {
                        q.push_back(Op::Compute(self.tx_compute));
                    }
                    q.push_back(Op::Done { units: 1, bytes });
                    return;
                }
            }
        }
        q.push_back(Op::Done { units: 0, bytes });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: &str = "# memtamer-trace v1
# two threads
0 store 1000 256
0 flush 1000 256
0 fence
0 tx
1 store 2040 8
1 flush 2040 8
1 flush 2040 8
1 fence
1 flush 2040 64
1 fence
1 tx
";

    #[test]
    fn flushes_of_clean_lines_write_nothing() {
        let t = Trace::parse(T).unwrap();
        assert_eq!(t.threads(), 2);
        let s = t.stats;
        assert_eq!(s.txs, 2);
        assert_eq!(s.fences, 3);
        // 4 lines + 1 line flushed twice + once more
        assert_eq!(s.flushed_lines, 7);
        assert_eq!(s.persisted_bytes, 5 * 64);
        assert_eq!(s.big_run_bytes, 256);
        assert!((s.big_write_share() - 0.8).abs() < 1e-12);
        // base 0x1000: thread 0 writes lines 0..4, thread 1 line (0x2040-0x1000)/64
        assert_eq!(
            t.threads[0],
            vec![
                Step::Write(0),
                Step::Write(1),
                Step::Write(2),
                Step::Write(3),
                Step::Fence,
                Step::Tx
            ]
        );
        assert_eq!(
            t.threads[1],
            vec![Step::Write(65), Step::Fence, Step::Fence, Step::Tx]
        );
    }

    #[test]
    fn call_sizes_modified_bytes_and_xpline_epochs() {
        // one transaction: a 320 B flush (5 dirty lines, XPLines 0-1) and
        // a 64 B flush, fence; then a rewrite of line 1 (XPLine 0 again)
        let text = "# memtamer-trace v1
0 store 0 320
0 flush 0 320
0 store 1000 64
0 flush 1000 64
0 fence
0 store 40 64
0 flush 40 8
0 fence
0 mod 24
0 tx
0 store 40 64
0 flush 40 8
0 fence
0 mod 8
0 tx
";
        let s = Trace::parse(text).unwrap().stats;
        assert_eq!(s.txs, 2);
        assert_eq!((s.call_bytes, s.call_big_bytes), (320 + 64 + 8 + 8, 320));
        assert!((s.call_big_write_share() - 320.0 / 400.0).abs() < 1e-12);
        assert_eq!((s.modified_bytes, s.mod_records), (32, 2));
        // epochs: {0, 1, 16} + {0} + {0} XPLines
        assert_eq!(s.epoch_xpline_bytes, 5 * 256);
        // only the first rewrite of line 1 is in the same transaction
        assert_eq!(s.xpline_rewrite_bytes, 64);
        let mut m = std::collections::BTreeMap::new();
        metrics("j", &s, 2, 2 * 512, &mut m);
        assert_eq!(m["j.trace_modified_bytes_per_tx"], 16.0);
        assert_eq!(m["j.thesis_wa_imc"], (8.0 * 64.0 / 2.0) / 16.0);
        assert_eq!(m["j.thesis_wa_media"], 512.0 / 16.0);
        assert_eq!(m["j.thesis_wa_epoch_xpline"], (5.0 * 256.0 / 2.0) / 16.0);
        // without mod records: no thesis WA
        let s = Trace::parse(T).unwrap().stats;
        let mut m = std::collections::BTreeMap::new();
        metrics("j", &s, 2, 1024, &mut m);
        assert!(!m.contains_key("j.thesis_wa_media"));
        assert!(m.contains_key("j.trace_call_big_write_share"));
    }

    #[test]
    fn threads_without_transactions_are_left_out() {
        // thread 0 opens the pool (no tx); threads 1 and 2 run transactions
        let text = "# memtamer-trace v1
0 store 0 64
0 flush 0 64
0 fence
1 store 1000 64
1 flush 1000 64
1 fence
1 tx
2 store 2000 128
2 flush 2000 128
2 fence
2 tx
";
        let t = Trace::parse(text).unwrap();
        assert_eq!(t.threads(), 2);
        assert_eq!(t.stats.txs, 2);
        assert_eq!(t.stats.fences, 2);
        assert_eq!(t.stats.persisted_bytes, 3 * 64);
        // without any tx record every thread that persisted counts
        let t = Trace::parse("# memtamer-trace v1\n0 store 0 64\n0 flush 0 64\n3 fence\n").unwrap();
        assert_eq!(t.threads(), 2);
    }

    #[test]
    fn replay_emits_writes_drains_and_units_cyclically() {
        let t = Arc::new(Trace::parse(T).unwrap());
        let mut g = TraceReplay::new(t, 0, 1, 0);
        let mut q = OpBatch::default();
        for _ in 0..4 {
            g.refill(&mut q);
        }
        let ops: Vec<Op> = std::iter::from_fn(|| q.pop_front()).collect();
        let writes = ops
            .iter()
            .filter(|o| matches!(o, Op::StoreNt { .. }))
            .count();
        let units: u64 = ops
            .iter()
            .map(|o| match o {
                Op::Done { units, .. } => *units,
                _ => 0,
            })
            .sum();
        assert_eq!(writes, 8);
        assert_eq!(units, 2);
        assert_eq!(ops.iter().filter(|o| **o == Op::Drain).count(), 2);
        // consecutive lines of one XPLine
        if let (Op::StoreNt { addr: a }, Op::StoreNt { addr: b }) = (ops[0], ops[1]) {
            assert_eq!(b - a, 64);
            assert_eq!(a >> super::super::REGION_SHIFT, 1);
        }
    }

    #[test]
    fn builtin_traces_parse_and_persist_something() {
        for name in ["archtm-hash", "pmdk-hash"] {
            let t = load(name).unwrap();
            assert_eq!(t.threads(), 2, "{name}");
            assert_eq!(t.stats.txs, 2000, "{name}");
            assert!(t.stats.persisted_bytes > 0, "{name}");
            assert!(t.stats.flushed_lines * LINE >= t.stats.persisted_bytes);
        }
    }

    /// Mutated traces give Ok or a clear error, never a panic.
    #[test]
    fn parser_never_panics_on_mutated_input() {
        let base = T.as_bytes();
        let alphabet = b"0123456789abcdefx \n#storeflushfencetx-";
        let mut x = 7u64;
        let mut next = |n: usize| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) as usize % n
        };
        for _ in 0..5000 {
            let mut b = base.to_vec();
            for _ in 0..1 + next(5) {
                let pos = next(b.len());
                match next(3) {
                    0 => {
                        b.remove(pos);
                    }
                    1 => b.insert(pos, alphabet[next(alphabet.len())]),
                    _ => b[pos] = alphabet[next(alphabet.len())],
                }
            }
            let _ = Trace::parse(&String::from_utf8_lossy(&b));
        }
        let e = Trace::parse("# memtamer-trace v1\n0 flush ffffffffffffffff 64\n").unwrap_err();
        assert!(e.contains("overflows"), "{e}");
        let e = Trace::parse("# memtamer-trace v1\n0 flush 0 9999999999\n").unwrap_err();
        assert!(e.contains("1 GiB"), "{e}");
    }

    #[test]
    fn bad_lines_are_named() {
        let e = Trace::parse("# memtamer-trace v1\n0 flush zz 64\n").unwrap_err();
        assert!(e.contains("line 2"), "{e}");
        let e = Trace::parse("# memtamer-trace v1\n0 clwb 10 64\n").unwrap_err();
        assert!(e.contains("op must be"), "{e}");
        let e = Trace::parse("0 fence\n").unwrap_err();
        assert!(e.contains("line 1"), "{e}");
        assert!(Trace::parse("# memtamer-trace v1\n# nothing\n").is_err());
        assert!(load("/nonexistent/trace")
            .unwrap_err()
            .contains("archtm-hash"));
    }
}
