//! The test persistence domain and crash-state enumerator.
//!
//! [`Recorder`] is a [`PersistHook`]: at every flush and fence it diffs the
//! mapping against a shadow copy (so it learns every store since the last
//! call, at cache-line granularity), then logs the flush or fence.
//! [`enumerate`] replays the log keeping a *volatile* image (all stores) and
//! a *persisted* one (lines made durable by flush + fence) and, at every
//! fence and at sampled points between, builds post-crash images:
//! persisted data + a random subset of flushed-but-unfenced lines (at their
//! flush-time content) + a random subset of dirty lines evicted early (at
//! their current content). Each distinct image is opened (the checkpoint
//! recovery path when the image's checkpoint is valid, else the full scan;
//! with `compare_full_scan` also the full scan, which must build the same
//! state) and handed to a checker with the number of operations known
//! committed.
//!
//! Granularity: stores between two persistence calls are seen together, so
//! an eviction between two stores of the same line inside one such window
//! is not modelled (the format keeps every multi-field record in one
//! 8-byte word or behind a checksum, so such tears are harmless by design).

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use crate::layout::LINE;
use crate::pool::{Pool, PoolOptions, RecoveryMode};
use crate::region::PersistHook;

#[derive(Clone)]
enum Event {
    Store(u32, Box<[u8; LINE]>),
    Flush(u32),
    Fence,
    Mark(u64),
}

struct Inner {
    base: usize,
    len: usize,
    on: bool,
    shadow: Vec<u8>,
    start: Vec<u8>,
    events: Vec<Event>,
}

/// Records every store (as line diffs), flush and fence of one pool.
pub struct Recorder {
    inner: Mutex<Inner>,
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder {
            inner: Mutex::new(Inner {
                base: 0,
                len: 0,
                on: false,
                shadow: Vec::new(),
                start: Vec::new(),
                events: Vec::new(),
            }),
        }
    }
}

impl Inner {
    fn mapping(&self) -> &[u8] {
        // SAFETY: attach() received the live mapping of the pool that owns
        // this hook; the hook is only called while the pool is alive.
        unsafe { std::slice::from_raw_parts(self.base as *const u8, self.len) }
    }
    fn diff(&mut self) {
        let m = self.mapping().to_vec();
        for (i, (a, b)) in m.chunks(LINE).zip(self.shadow.chunks_mut(LINE)).enumerate() {
            if a != b {
                b.copy_from_slice(a);
                let mut l = Box::new([0u8; LINE]);
                l[..a.len()].copy_from_slice(a);
                self.events.push(Event::Store(i as u32, l));
            }
        }
    }
}

impl Recorder {
    /// Starts recording from the pool's current image, taken as durable
    /// (call it after a clean setup phase).
    pub fn start(&self) {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        g.shadow = g.mapping().to_vec();
        g.start = g.shadow.clone();
        g.events.clear();
        g.on = true;
    }
    /// Notes that operation `k` (1-based) has committed.
    pub fn mark(&self, k: u64) {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if g.on {
            g.diff();
            g.events.push(Event::Mark(k));
        }
    }
    /// Stops recording.
    pub fn stop(&self) {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).on = false;
    }
    /// Events recorded (stores, flushes, fences, marks).
    pub fn events(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .events
            .len()
    }
}

impl PersistHook for Recorder {
    fn attach(&self, base: *const u8, len: usize) {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        g.base = base as usize;
        g.len = len;
        g.shadow = vec![0; len];
    }
    fn flush(&self, off: usize, len: usize) {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if !g.on {
            return;
        }
        g.diff();
        for l in off / LINE..(off + len).div_ceil(LINE) {
            g.events.push(Event::Flush(l as u32));
        }
    }
    fn fence(&self) {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if g.on {
            g.diff();
            g.events.push(Event::Fence);
        }
    }
}

/// How many crash images to build.
#[derive(Clone, Debug)]
pub struct EnumOptions {
    /// Random variants per crash point (besides "nothing unfenced" and
    /// "everything flushed").
    pub variants: usize,
    /// Probability of a crash point at a store/flush event (fences always).
    pub between: f64,
    /// Random seed.
    pub seed: u64,
    /// Also recover every image by the full scan and require the same
    /// lookup table, free list and free ids as the checkpoint path.
    pub compare_full_scan: bool,
}

impl Default for EnumOptions {
    fn default() -> Self {
        EnumOptions {
            variants: 6,
            between: 0.1,
            seed: 1,
            compare_full_scan: false,
        }
    }
}

/// What enumeration found.
#[derive(Clone, Debug, Default)]
pub struct CrashReport {
    /// Crash points visited.
    pub points: u64,
    /// Images built.
    pub images: u64,
    /// Distinct images recovered and checked.
    pub distinct: u64,
    /// Images whose recovery or check failed.
    pub violations: u64,
    /// Distinct images recovered through the checkpoint path.
    pub checkpoint_recoveries: u64,
    /// Images whose checkpoint recovery differed from the full scan
    /// (counted in `violations` too).
    pub mismatches: u64,
    /// The first few failures.
    pub examples: Vec<String>,
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let x = self.0;
        (x ^ (x >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9) >> 11
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 42) as f64
    }
}

fn image_hash(b: &[u8]) -> u64 {
    let mut h = 0x9e37_79b9_7f4a_7c15u64;
    for c in b.chunks(8) {
        let mut w = [0u8; 8];
        w[..c.len()].copy_from_slice(c);
        h = (h ^ u64::from_le_bytes(w))
            .wrapping_mul(0x0100_0000_01b3)
            .rotate_left(23);
    }
    h
}

/// Replays the recording and checks every distinct crash image.
/// `check(pool, done)` gets the recovered pool and the number of
/// operations whose commit had returned before the crash.
pub fn enumerate(
    rec: &Recorder,
    o: &EnumOptions,
    check: &mut dyn FnMut(&Pool, u64) -> Result<(), String>,
) -> CrashReport {
    let (start, events) = {
        let g = rec.inner.lock().unwrap_or_else(|p| p.into_inner());
        (g.start.clone(), g.events.clone())
    };
    let mut vol = start.clone();
    let mut pers = start;
    let mut pending: HashMap<u32, Box<[u8; LINE]>> = HashMap::new();
    let mut dirty: HashSet<u32> = HashSet::new();
    let mut seen: HashSet<u64> = HashSet::new();
    let mut rep = CrashReport::default();
    let mut rng = Rng(o.seed);
    let mut done = 0u64;
    let mut pers_hash = image_hash(&pers);
    let line = |img: &mut [u8], l: u32, data: &[u8; LINE]| {
        let off = l as usize * LINE;
        let n = LINE.min(img.len() - off);
        img[off..off + n].copy_from_slice(&data[..n]);
    };
    for ev in &events {
        let point = match ev {
            Event::Fence => true,
            Event::Mark(_) => true,
            _ => rng.unit() < o.between,
        };
        if point {
            rep.points += 1;
            let mut cands: Vec<u32> = pending.keys().chain(dirty.iter()).copied().collect();
            cands.sort_unstable();
            cands.dedup();
            for v in 0..o.variants + 2 {
                // Choose per candidate line: stay, flush-time content, or
                // current (evicted) content; key the image by what differs
                // from the persisted image so duplicates cost no copy.
                let mut chosen: Vec<(u32, &[u8])> = Vec::new();
                for &l in &cands {
                    let pick = match v {
                        0 => 0,
                        1 => 1,
                        _ => rng.next() % 3,
                    };
                    let off = l as usize * LINE;
                    let n = LINE.min(vol.len() - off);
                    let data: Option<&[u8]> = match pick {
                        1 if pending.contains_key(&l) => pending.get(&l).map(|d| &d[..n]),
                        1 | 2 if dirty.contains(&l) => Some(&vol[off..off + n]),
                        _ => None,
                    };
                    if let Some(d) = data {
                        if d != &pers[off..off + n] {
                            chosen.push((l, d));
                        }
                    }
                }
                rep.images += 1;
                let mut key = pers_hash;
                for (l, d) in &chosen {
                    key = (key ^ u64::from(*l))
                        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
                        .rotate_left(29)
                        ^ image_hash(d);
                }
                if !seen.insert(key) {
                    continue;
                }
                let mut img = pers.clone();
                for (l, d) in &chosen {
                    let off = *l as usize * LINE;
                    img[off..off + d.len()].copy_from_slice(d);
                }
                rep.distinct += 1;
                let r = Pool::open_image(&img, &PoolOptions::default())
                    .map_err(|e| format!("recovery failed: {e}"))
                    .and_then(|p| {
                        if p.recovery().checkpoint_epoch > 0 {
                            rep.checkpoint_recoveries += 1;
                        }
                        if o.compare_full_scan {
                            let full = PoolOptions {
                                recovery: RecoveryMode::FullScan,
                                ..PoolOptions::default()
                            };
                            let f = Pool::open_image(&img, &full)
                                .map_err(|e| format!("full-scan recovery failed: {e}"))?;
                            if f.recovered_state() != p.recovered_state() {
                                rep.mismatches += 1;
                                return Err(format!(
                                    "checkpoint recovery (epoch {}, {:?}) differs from the full scan",
                                    p.recovery().checkpoint_epoch,
                                    p.recovery().fallback
                                ));
                            }
                        }
                        check(&p, done)
                    });
                if let Err(e) = r {
                    rep.violations += 1;
                    if rep.examples.len() < 5 {
                        rep.examples
                            .push(format!("event point {} (done {done}): {e}", rep.points));
                    }
                }
            }
        }
        match ev {
            Event::Store(l, data) => {
                line(&mut vol, *l, data);
                dirty.insert(*l);
            }
            Event::Flush(l) => {
                let off = *l as usize * LINE;
                let mut d = Box::new([0u8; LINE]);
                let n = LINE.min(vol.len() - off);
                d[..n].copy_from_slice(&vol[off..off + n]);
                pending.insert(*l, d);
            }
            Event::Fence => {
                for (l, d) in pending.drain() {
                    line(&mut pers, l, &d);
                }
                pers_hash = image_hash(&pers);
                dirty.retain(|l| {
                    let off = *l as usize * LINE;
                    let n = LINE.min(vol.len() - off);
                    vol[off..off + n] != pers[off..off + n]
                });
            }
            Event::Mark(k) => done = *k,
        }
    }
    rep
}
