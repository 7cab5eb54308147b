//! One Optane DIMM: DDR-T write credits, the XPBuffer (write-combining cache
//! of 256 B XPLines, set-associative LRU), a small read buffer, and the media
//! as a port that starts one XPLine operation per service time (derived from
//! the DIMM's media bandwidth) onto one of `media_partitions` independent
//! partitions, each busy for `media_partitions` service times per operation.
//! Partially written XPLines evicted from the XPBuffer cost a
//! read-modify-write. `pm.xpbuffer_policy` chooses when a written XPLine
//! reaches the media: at eviction (write-back), or once the writes queued
//! for it have been combined (write-through, VANS's RMW buffer). Nothing
//! here knows about thread counts or knees.

use crate::config::{PmParams, RmwRead, XpBufferPolicy};
use crate::workload::{Ps, NS};
use std::collections::VecDeque;

/// XPLine size: the media access granularity (Yang et al., FAST'20).
pub const XPLINE: u64 = 256;

#[derive(Clone, Copy, Debug, Default)]
struct XpEntry {
    valid: bool,
    xpl: u64,
    mask: u8,
    stamp: u64,
    /// Write-through: a media write of this XPLine waits in the media queue
    /// (not started); writes arriving meanwhile combine into it.
    queued: bool,
    /// Write-through: the entry holds the whole XPLine (a media write of it
    /// started, which read it first if it was partial), so a rewrite needs
    /// no media read and reads hit it (VANS `valid_to_read`).
    filled: bool,
    /// Write-through: until then the entry's started partial write is still
    /// reading its XPLine, and writes to it combine into that write (VANS
    /// `patch_rmw`: states `pending_read` / `pending_modify`).
    patch_until: Ps,
}

/// A media operation waiting for the media server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MediaKind {
    Read {
        req: u32,
    },
    Write {
        partial: bool,
    },
    /// Write-through of the XPBuffer entry of `xpl`: whether it is partial
    /// is known only when it starts (writes combine into it until then).
    WriteThrough {
        xpl: u64,
    },
}

/// A queued media operation with its XPLine's partition (computed once at
/// enqueue: the scheduler looks it up for every queued op at every start).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct MediaOp {
    kind: MediaKind,
    part: u32,
}

/// Marks a write whose acceptance nobody waits for: it is not reported in
/// [`PmDimm::accepted`].
pub const NO_REQ: u32 = u32::MAX;

/// What the engine must schedule after the media server started an op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MediaStart {
    /// When the server is free again.
    pub busy_until: Ps,
    /// A read request whose data is ready at the given time.
    pub read_ready: Option<(u32, Ps)>,
}

/// Media and request counters of one DIMM (cumulative).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DimmCounters {
    /// Bytes the DIMM read from media.
    pub media_read_bytes: u64,
    /// Bytes the DIMM wrote to media.
    pub media_write_bytes: u64,
    /// Bytes of read requests received (64 B each).
    pub request_read_bytes: u64,
    /// Bytes of write requests received (64 B each).
    pub request_write_bytes: u64,
    /// XPLines written back partially (read-modify-write).
    pub rmw: u64,
}

/// One Optane DIMM.
#[derive(Clone, Debug)]
pub struct PmDimm {
    /// DDR-T write credits the iMC still has for this DIMM. The DIMM owns
    /// them: a write arriving over DDR-T takes one ([`PmDimm::write_arrive`]),
    /// the XPBuffer accepting it gives it back; the channel only asks
    /// [`PmDimm::has_credit`] before it sends a write.
    credits: u32,
    inq: VecDeque<(u64, u32)>,
    /// Requests accepted into the XPBuffer since the engine last looked.
    pub accepted: Vec<u32>,
    entries: Vec<XpEntry>,
    ways: usize,
    sets: u64,
    /// `sets - 1` when `sets` is a power of two (every platform), else 0.
    set_mask: u64,
    stamp: u64,
    /// The input queue's first write waits for a media write-queue slot:
    /// its set is full without its XPLine and the queue is full. Nothing but
    /// a media write starting changes that, so arrivals do not retry it.
    head_blocked: bool,
    /// Index in `entries` of the XPLine the last write went to.
    last: usize,
    media_writes_pending: u32,
    media_write_queue: u32,
    media_free_at: Ps,
    /// When each media partition can start its next operation.
    partition_free: Vec<Ps>,
    /// log2 of XPLines per AIT block; `None` = no indirection.
    ait_shift: Option<u32>,
    /// Seed of the AIT's block-to-partition hash (run seed and DIMM index).
    ait_seed: u64,
    media_busy: bool,
    media_q: VecDeque<MediaOp>,
    read_buf: Vec<(u64, u64)>,
    read_buf_cap: usize,
    read_service: Ps,
    write_service: Ps,
    media_read_latency: Ps,
    controller: Ps,
    /// Media service of a partial XPLine's write-back (read + write, or
    /// write alone with `pm.rmw_read = "in_write"`).
    rmw_service: Ps,
    /// When written XPLines reach the media.
    policy: XpBufferPolicy,
    /// The time of the latest arrival or media event (write-through's
    /// combining window is timed against it).
    now: Ps,
    /// Cumulative counters.
    pub counters: DimmCounters,
}

impl PmDimm {
    /// A DIMM with the platform's parameters; `seed` (the run seed mixed
    /// with the DIMM's index) draws its AIT's block placement.
    pub fn new(p: &PmParams, seed: u64) -> PmDimm {
        let block_lines = (p.ait_block_bytes as u64 / XPLINE).max(1);
        let lines = (p.xpbuffer_bytes as u64 / XPLINE).max(1);
        let ways = p.xpbuffer_ways.max(1) as usize;
        let sets = (lines / ways as u64).max(1);
        // service time of one XPLine = 256 B / bandwidth (GB/s = B/ns)
        let read_service = ((XPLINE as f64 / p.media_read_gbps) * NS as f64) as Ps;
        let write_service = ((XPLINE as f64 / p.media_write_gbps) * NS as f64) as Ps;
        PmDimm {
            credits: p.ddrt_write_credits,
            inq: VecDeque::new(),
            accepted: Vec::new(),
            entries: vec![XpEntry::default(); lines as usize],
            ways,
            sets,
            set_mask: if sets.is_power_of_two() { sets - 1 } else { 0 },
            stamp: 0,
            head_blocked: false,
            last: 0,
            media_writes_pending: 0,
            media_write_queue: p.media_write_queue,
            media_free_at: 0,
            partition_free: vec![0; p.media_partitions.max(1) as usize],
            ait_shift: (p.ait_block_bytes > 0).then(|| block_lines.ilog2()),
            ait_seed: seed,
            media_busy: false,
            media_q: VecDeque::new(),
            read_buf: Vec::new(),
            read_buf_cap: p.read_buffer_lines as usize,
            read_service,
            write_service,
            rmw_service: match p.rmw_read {
                RmwRead::Media => read_service + write_service,
                RmwRead::InWrite => write_service,
            },
            media_read_latency: (p.media_read_ns * NS as f64) as Ps,
            controller: (p.controller_ns * NS as f64) as Ps,
            policy: p.xpbuffer_policy,
            now: 0,
            counters: DimmCounters::default(),
        }
    }

    /// Whether the iMC holds a DDR-T write credit for this DIMM, i.e. may
    /// send it a write.
    #[inline]
    pub fn has_credit(&self) -> bool {
        self.credits > 0
    }

    /// DDR-T write credits the iMC holds for this DIMM.
    pub fn credits(&self) -> u32 {
        self.credits
    }

    /// A 64 B write arrives over DDR-T and takes one credit (the caller
    /// checked [`PmDimm::has_credit`]) at time `now`; `req` is the engine's request id,
    /// reported in [`PmDimm::accepted`] once the XPBuffer takes it (that is
    /// when the DIMM acknowledges the write). Returns how many credits were
    /// returned to the iMC by accepting queued writes.
    pub fn write_arrive(&mut self, now: Ps, dev_addr: u64, req: u32) -> u32 {
        self.now = self.now.max(now);
        debug_assert!(self.credits > 0, "a DDR-T write without a credit");
        self.credits = self.credits.saturating_sub(1);
        self.counters.request_write_bytes += 64;
        if self.inq.is_empty() {
            // nothing queued ahead (so nothing blocked): try it at once
            if self.take(dev_addr) {
                if req != NO_REQ {
                    self.accepted.push(req);
                }
                self.credits += 1;
                return 1;
            }
            self.inq.push_back((dev_addr, req));
            return 0;
        }
        self.inq.push_back((dev_addr, req));
        self.accept_writes()
    }

    /// Moves queued writes into the XPBuffer while possible; returns credits freed.
    fn accept_writes(&mut self) -> u32 {
        if self.head_blocked {
            return 0;
        }
        let mut freed = 0;
        while let Some(&(a, req)) = self.inq.front() {
            if !self.take(a) {
                break;
            }
            self.inq.pop_front();
            if req != NO_REQ {
                self.accepted.push(req);
            }
            freed += 1;
        }
        self.credits += freed;
        freed
    }

    /// Takes the 64 B write to `a` into the XPBuffer (combining it into its
    /// XPLine's entry, a free way, or the least recently used way, whose
    /// XPLine goes to the media write queue). False, with the write not
    /// taken and the head marked blocked, when that needs a victim and the
    /// media write queue is full.
    #[inline]
    fn take(&mut self, a: u64) -> bool {
        if self.policy == XpBufferPolicy::WriteThrough {
            return self.take_through(a);
        }
        let xpl = a / XPLINE;
        let bit = 1u8 << ((a % XPLINE) / 64);
        self.stamp += 1;
        let stamp = self.stamp;
        let base = self.set_of(xpl) * self.ways;
        let i = if let Some(i) = self.resident(base, xpl) {
            let e = &mut self.entries[i];
            e.mask |= bit;
            e.stamp = stamp;
            i
        } else {
            let i = if let Some(w) = self.entries[base..base + self.ways]
                .iter()
                .position(|e| !e.valid)
            {
                base + w
            } else {
                if self.media_writes_pending >= self.media_write_queue {
                    // back-pressure: the DDR-T credits stay consumed
                    self.head_blocked = true;
                    return false;
                }
                // unreachable None: the set is full, so every way is a candidate
                let i = self.lru_way(base, |_| true).unwrap_or(base);
                let victim = self.entries[i];
                self.queue_media_write(
                    MediaKind::Write {
                        partial: victim.mask != 0b1111,
                    },
                    victim.xpl,
                );
                i
            };
            self.entries[i] = XpEntry {
                valid: true,
                xpl,
                mask: bit,
                stamp,
                ..XpEntry::default()
            };
            i
        };
        self.last = i;
        true
    }

    /// The index in `entries` of `xpl`'s entry, if resident in the set that
    /// starts at `base`. Sequential writes mostly go to the entry the last
    /// one went to, so that one is tried first.
    #[inline]
    fn resident(&self, base: usize, xpl: u64) -> Option<usize> {
        let last = &self.entries[self.last];
        if last.valid && last.xpl == xpl {
            return Some(self.last);
        }
        self.entries[base..base + self.ways]
            .iter()
            .position(|e| e.valid && e.xpl == xpl)
            .map(|w| base + w)
    }

    /// The index in `entries` of the least recently used entry of the set
    /// that starts at `base` among those `evictable` allows (stamps are
    /// unique, so ties cannot occur).
    #[inline]
    fn lru_way(&self, base: usize, evictable: impl Fn(&XpEntry) -> bool) -> Option<usize> {
        self.entries[base..base + self.ways]
            .iter()
            .enumerate()
            .filter(|(_, e)| evictable(e))
            .min_by_key(|(_, e)| e.stamp)
            .map(|(w, _)| base + w)
    }

    /// Queues a media write of XPLine `xpl` (one slot of the media write
    /// queue until it starts) on `xpl`'s partition.
    #[inline]
    fn queue_media_write(&mut self, kind: MediaKind, xpl: u64) {
        self.media_writes_pending += 1;
        let part = self.partition_of(xpl);
        self.media_q.push_back(MediaOp { kind, part });
    }

    /// Write-through take (VANS `rmw_controller::tick_lsq_write`): a write
    /// to an XPLine whose media write still waits combines into it; a write
    /// to a resident idle XPLine (VANS `write_patch`) or to a new one queues
    /// another media write. A new XPLine takes a free way or evicts the least
    /// recently used entry with no write waiting (clean: nothing to write;
    /// VANS `check_and_evict` evicts only idle entries). False, with the
    /// head marked blocked, while the media write queue is full; false while
    /// every way of the set has a write waiting or reading.
    fn take_through(&mut self, a: u64) -> bool {
        let xpl = a / XPLINE;
        let bit = 1u8 << ((a % XPLINE) / 64);
        self.stamp += 1;
        let stamp = self.stamp;
        let base = self.set_of(xpl) * self.ways;
        let hit = self.resident(base, xpl);
        if let Some(i) = hit {
            let e = &self.entries[i];
            if e.queued || self.now < e.patch_until {
                let e = &mut self.entries[i];
                e.mask |= bit;
                e.stamp = stamp;
                self.last = i;
                return true;
            }
        }
        if self.media_writes_pending >= self.media_write_queue {
            self.head_blocked = true;
            return false;
        }
        let i = match hit {
            Some(i) => i,
            None => {
                let now = self.now;
                let free = self.entries[base..base + self.ways]
                    .iter()
                    .position(|e| !e.valid)
                    .map(|w| base + w);
                let Some(i) =
                    free.or_else(|| self.lru_way(base, |e| !e.queued && e.patch_until <= now))
                else {
                    // every way's media write waits or is still reading:
                    // not marked blocked, since a read ending (time, not a
                    // media start) can free a way; the media finishing its
                    // op (after every read window) retries it
                    return false;
                };
                self.entries[i] = XpEntry {
                    valid: true,
                    xpl,
                    ..XpEntry::default()
                };
                i
            }
        };
        let e = &mut self.entries[i];
        e.mask = bit;
        e.stamp = stamp;
        e.queued = true;
        self.last = i;
        self.queue_media_write(MediaKind::WriteThrough { xpl }, xpl);
        true
    }

    /// Starts the write-through of `xpl`'s entry: returns whether it is
    /// partial (needs the media read first) and marks the entry filled and
    /// no longer waiting, so later writes to it queue a new media write.
    fn start_write_through(&mut self, start: Ps, xpl: u64) -> bool {
        // the XPLine is being read until the media read's latency is over
        // (VANS: pending_ait_r + pending_read, then pending_modify), but no
        // longer than the op holds the media: the media finishing it is what
        // retries a write that waits for a way (VANS retries every tick)
        let read = self.media_read_latency.min(self.rmw_service);
        let base = self.set_of(xpl) * self.ways;
        match self.entries[base..base + self.ways]
            .iter_mut()
            .find(|e| e.valid && e.xpl == xpl && e.queued)
        {
            Some(e) => {
                let partial = !e.filled && e.mask != 0b1111;
                e.queued = false;
                e.filled = true;
                if partial {
                    e.patch_until = start + read;
                }
                partial
            }
            // unreachable: an entry with a write waiting is never evicted;
            // count it as a partial write if the invariant ever breaks
            None => true,
        }
    }

    /// A 64 B read arrives. Returns `Some(ready_time)` on a buffer hit; on a
    /// miss the read waits for the media (see [`PmDimm::try_start_media`]).
    pub fn read_arrive(&mut self, now: Ps, req: u32, dev_addr: u64) -> Option<Ps> {
        self.counters.request_read_bytes += 64;
        let xpl = dev_addr / XPLINE;
        self.stamp += 1;
        if let Some(e) = self.read_buf.iter_mut().find(|e| e.0 == xpl) {
            e.1 = self.stamp;
            return Some(now + self.controller);
        }
        let set = self.set_of(xpl);
        if self.entries[set * self.ways..(set + 1) * self.ways]
            .iter()
            .any(|e| e.valid && e.xpl == xpl && (e.mask == 0b1111 || e.filled))
        {
            return Some(now + self.controller);
        }
        // The XPLine is fetched into the read buffer when the read is issued,
        // so later reads of the same XPLine hit (sequential read combining).
        if self.read_buf.len() < self.read_buf_cap {
            self.read_buf.push((xpl, self.stamp));
        } else if let Some(e) = self.read_buf.iter_mut().min_by_key(|e| e.1) {
            *e = (xpl, self.stamp);
        }
        let part = self.partition_of(xpl);
        self.media_q.push_back(MediaOp {
            kind: MediaKind::Read { req },
            part,
        });
        None
    }

    /// Starts a queued media op if the media port is idle: among the ops
    /// whose partition frees first, the oldest read, else the oldest write
    /// (a ready-first, read-first scheduler over the DIMM's queue). The port
    /// waits for that partition when every queued op's partition is busy.
    pub fn try_start_media(&mut self, now: Ps) -> Option<MediaStart> {
        self.now = self.now.max(now);
        if self.media_busy {
            return None;
        }
        let partitions = self.partition_free.len() as u64;
        let pick = if partitions == 1 {
            0
        } else {
            let free = &self.partition_free;
            let earliest = self
                .media_q
                .iter()
                .map(|op| free[op.part as usize])
                .min()?
                .max(now);
            let ready = |op: &MediaOp| free[op.part as usize] <= earliest;
            self.media_q
                .iter()
                .position(|op| ready(op) && matches!(op.kind, MediaKind::Read { .. }))
                .or_else(|| self.media_q.iter().position(ready))
                .unwrap_or(0)
        };
        let op = self.media_q.remove(pick)?;
        let part = op.part as usize;
        let start = now.max(self.media_free_at).max(self.partition_free[part]);
        let (service, read_ready) = match op.kind {
            MediaKind::Read { req } => {
                self.counters.media_read_bytes += XPLINE;
                (
                    self.read_service,
                    Some((req, start + self.media_read_latency + self.controller)),
                )
            }
            MediaKind::Write { partial } => (self.start_write(partial), None),
            MediaKind::WriteThrough { xpl } => {
                let partial = self.start_write_through(start, xpl);
                (self.start_write(partial), None)
            }
        };
        self.media_busy = true;
        self.media_free_at = start + service;
        // each partition delivers 1/partitions of the DIMM's bandwidth
        self.partition_free[part] = start + service * partitions;
        Some(MediaStart {
            busy_until: self.media_free_at,
            read_ready,
        })
    }

    /// Counts a media write starting (with its read when `partial`) and
    /// returns its service time.
    #[inline]
    fn start_write(&mut self, partial: bool) -> Ps {
        self.counters.media_write_bytes += XPLINE;
        self.media_writes_pending -= 1;
        self.head_blocked = false;
        if partial {
            self.counters.rmw += 1;
            self.counters.media_read_bytes += XPLINE;
            self.rmw_service
        } else {
            self.write_service
        }
    }

    /// Whether the media port is busy with an op ([`PmDimm::try_start_media`]
    /// then starts nothing).
    #[inline]
    pub fn media_busy(&self) -> bool {
        self.media_busy
    }

    /// The media finished its op at `now`: returns credits freed by
    /// accepting queued writes.
    pub fn media_done(&mut self, now: Ps) -> u32 {
        self.now = self.now.max(now);
        self.media_busy = false;
        self.accept_writes()
    }

    /// Writes waiting in the DIMM's input queue (credits in use).
    pub fn queued_writes(&self) -> usize {
        self.inq.len()
    }

    /// The XPBuffer set of XPLine `xpl`. Set counts are powers of two on
    /// every platform, where a mask spares a 64-bit division per access.
    #[inline]
    fn set_of(&self, xpl: u64) -> usize {
        if self.set_mask != 0 || self.sets == 1 {
            (xpl & self.set_mask) as usize
        } else {
            (xpl % self.sets) as usize
        }
    }

    /// The media partition of XPLine `xpl`.
    #[inline]
    fn partition_of(&self, xpl: u64) -> u32 {
        let parts = self.partition_free.len() as u64;
        match self.ait_shift {
            None => (xpl % parts) as u32,
            // the AIT places each block at a media block of its choice, so
            // the block's first XPLine lands on a hashed partition and the
            // rest follow it in rotation (Yang et al. §3.1; LENS's 4 KB)
            Some(shift) => {
                let start = mix64(self.ait_seed ^ (xpl >> shift));
                ((xpl.wrapping_add(start)) % parts) as u32
            }
        }
    }
}

/// SplitMix64's finaliser: a fixed, well-mixed hash of `x`.
#[inline]
fn mix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
#[path = "pmdimm_tests.rs"]
mod tests;
