//! Flush/fence trace recorder: a [`PersistHook`] that writes what an ArchTM
//! run makes durable in the `memtamer-trace v1` text format (documented in
//! docs/simulator.md "Flush/fence traces"), which `memtamer-sim`'s `trace`
//! workload replays on simulated Optane (issue 18 item 5).
//!
//! Records: `THREAD store OFF LEN` (lines written since their last flush),
//! `THREAD flush OFF LEN`, `THREAD fence`, `THREAD tx`, `THREAD mod BYTES`
//! (bytes the transaction modified; addresses are pool offsets, in hex). Stores are learnt the way the crash [`Recorder`]
//! learns them, but only for the flushed lines: at each flush the lines of
//! the range are compared with a shadow copy taken at their previous flush
//! (or at [`TraceRecorder::start`]); the changed ones are emitted as
//! `store` records just before the `flush`. A store that rewrote a line
//! with equal bytes is therefore invisible (the replay then counts no PM
//! write for that line; real hardware would write it back).
//!
//! [`Recorder`]: crate::crash::Recorder

use std::collections::HashMap;
use std::io::Write;
use std::sync::Mutex;
use std::thread::ThreadId;

use crate::layout::LINE;
use crate::region::PersistHook;

/// The first line of a trace file (shared with memtamer-sim's parser).
pub const TRACE_MAGIC: &str = "# memtamer-trace v1";

struct Inner {
    base: usize,
    len: usize,
    on: bool,
    shadow: Vec<u8>,
    threads: HashMap<ThreadId, u32>,
    out: String,
    records: u64,
}

/// Records flushes, fences, transaction ends and the stores behind the
/// flushes of one pool, per thread.
pub struct TraceRecorder {
    inner: Mutex<Inner>,
}

impl Default for TraceRecorder {
    fn default() -> Self {
        TraceRecorder {
            inner: Mutex::new(Inner {
                base: 0,
                len: 0,
                on: false,
                shadow: Vec::new(),
                threads: HashMap::new(),
                out: String::new(),
                records: 0,
            }),
        }
    }
}

impl Inner {
    fn tid(&mut self) -> u32 {
        let n = self.threads.len() as u32;
        *self.threads.entry(std::thread::current().id()).or_insert(n)
    }

    /// The current bytes of line `l` (read word by word with volatile
    /// loads: other threads may be storing to the pool meanwhile).
    fn line_now(&self, l: usize) -> [u8; LINE] {
        let mut b = [0u8; LINE];
        let start = l * LINE;
        let end = (start + LINE).min(self.len);
        for (i, o) in (start..end).step_by(8).enumerate() {
            let n = (end - o).min(8);
            let mut w = [0u8; 8];
            for (k, x) in w.iter_mut().enumerate().take(n) {
                // SAFETY: attach() received the live mapping of the pool
                // that owns this hook, and o + k < len.
                *x = unsafe { std::ptr::read_volatile((self.base + o + k) as *const u8) };
            }
            b[i * 8..i * 8 + n].copy_from_slice(&w[..n]);
        }
        b
    }

    fn push(&mut self, rec: std::fmt::Arguments<'_>) {
        use std::fmt::Write as _;
        let _ = self.out.write_fmt(rec);
        self.out.push('\n');
        self.records += 1;
    }
}

impl TraceRecorder {
    /// Starts recording; the pool's current image counts as flushed.
    pub fn start(&self) {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let lines = g.len.div_ceil(LINE);
        let mut shadow = vec![0u8; g.len];
        for l in 0..lines {
            let b = g.line_now(l);
            let e = ((l + 1) * LINE).min(g.len);
            shadow[l * LINE..e].copy_from_slice(&b[..e - l * LINE]);
        }
        g.shadow = shadow;
        g.out.clear();
        g.records = 0;
        g.on = true;
    }

    /// Stops recording (records stay until written).
    pub fn stop(&self) {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).on = false;
    }

    /// The calling thread's transaction just committed (a `tx` record).
    pub fn mark_tx(&self) {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if g.on {
            let t = g.tid();
            g.push(format_args!("{t} tx"));
        }
    }

    /// The calling thread's transaction just committed having modified
    /// `bytes` bytes through the API (a `mod` record: the denominator of the
    /// thesis's write amplification, §5.2.1: NVM write traffic / bytes
    /// modified by transactions).
    pub fn mark_modified(&self, bytes: u64) {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if g.on {
            let t = g.tid();
            g.push(format_args!("{t} mod {bytes}"));
        }
    }

    /// Records so far.
    pub fn records(&self) -> u64 {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).records
    }

    /// Writes the trace (header, `comment` lines, records) to `w`.
    pub fn write_to(&self, w: &mut dyn Write, comment: &str) -> std::io::Result<()> {
        let g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        writeln!(w, "{TRACE_MAGIC}")?;
        for c in comment.lines() {
            writeln!(w, "# {c}")?;
        }
        writeln!(w, "# threads={} records={}", g.threads.len(), g.records)?;
        w.write_all(g.out.as_bytes())
    }
}

impl PersistHook for TraceRecorder {
    fn attach(&self, base: *const u8, len: usize) {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        g.base = base as usize;
        g.len = len;
    }

    fn flush(&self, off: usize, len: usize) {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if !g.on || len == 0 || off >= g.len {
            return;
        }
        let t = g.tid();
        let first = off / LINE;
        let last = (off + len).min(g.len).div_ceil(LINE);
        let mut run: Option<(usize, usize)> = None;
        for l in first..last {
            let now = g.line_now(l);
            let e = ((l + 1) * LINE).min(g.len);
            let changed = g.shadow[l * LINE..e] != now[..e - l * LINE];
            if changed {
                g.shadow[l * LINE..e].copy_from_slice(&now[..e - l * LINE]);
            }
            run = match (run, changed) {
                (Some((s, _)), true) => Some((s, l + 1)),
                (None, true) => Some((l, l + 1)),
                (Some((s, e)), false) => {
                    g.push(format_args!("{t} store {:x} {}", s * LINE, (e - s) * LINE));
                    None
                }
                (None, false) => None,
            };
        }
        if let Some((s, e)) = run {
            g.push(format_args!("{t} store {:x} {}", s * LINE, (e - s) * LINE));
        }
        g.push(format_args!("{t} flush {off:x} {len}"));
    }

    fn fence(&self) {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if g.on {
            let t = g.tid();
            g.push(format_args!("{t} fence"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pool::{Pool, PoolOptions};
    use std::sync::Arc;

    #[test]
    fn records_only_changed_lines_as_stores() {
        let rec = Arc::new(TraceRecorder::default());
        let pool = Pool::create_in_memory(&PoolOptions {
            size: 4 << 20,
            hook: Some(rec.clone()),
            ..PoolOptions::default()
        })
        .unwrap();
        let root = pool.root_id();
        rec.start();
        for i in 0..10u64 {
            pool.transaction(|tx| tx.write_at(root, 0, &i.to_le_bytes()))
                .unwrap();
            rec.mark_tx();
        }
        rec.stop();
        let mut out = Vec::new();
        rec.write_to(&mut out, "test").unwrap();
        let text = String::from_utf8(out).unwrap();
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some(TRACE_MAGIC));
        let body: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(body.iter().filter(|l| l.ends_with(" tx")).count(), 10);
        let stores = body.iter().filter(|l| l.contains(" store ")).count();
        let flushes = body.iter().filter(|l| l.contains(" flush ")).count();
        let fences = body.iter().filter(|l| l.ends_with(" fence")).count();
        assert!(stores > 0 && flushes >= stores && fences >= 10, "{text}");
        // every record is well-formed: thread, op, and for ranges hex + len
        for l in &body {
            let f: Vec<&str> = l.split(' ').collect();
            assert_eq!(f[0], "0");
            match f[1] {
                "store" | "flush" => {
                    assert!(u64::from_str_radix(f[2], 16).is_ok());
                    assert!(f[3].parse::<u64>().unwrap() > 0);
                }
                "fence" | "tx" => assert_eq!(f.len(), 2),
                o => panic!("op {o}"),
            }
        }
    }

    #[test]
    fn a_second_flush_of_an_unchanged_line_has_no_store() {
        let rec = TraceRecorder::default();
        let mut mem = vec![0u8; 256];
        let p = mem.as_mut_ptr();
        rec.attach(p, mem.len());
        rec.start();
        rec.flush(0, 64);
        rec.fence();
        // SAFETY: in bounds of mem, which outlives the recorder's use.
        unsafe { *p.add(70) = 1 };
        rec.flush(0, 128);
        rec.flush(0, 128);
        let mut out = Vec::new();
        rec.write_to(&mut out, "").unwrap();
        let text = String::from_utf8(out).unwrap();
        let body: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(
            body,
            vec![
                "0 flush 0 64",
                "0 fence",
                "0 store 40 64",
                "0 flush 0 128",
                "0 flush 0 128"
            ]
        );
        drop(mem);
    }
}
