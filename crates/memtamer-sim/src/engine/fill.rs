//! A cache-line request's life on the core side: a fill buffer or L2
//! prefetch slot is taken at issue, the request is routed and sent to its
//! memory controller, and at completion its chain goes on (memcpy's store,
//! a write-back after an RFO) or its buffer is freed.

use super::{Engine, EvKind};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ReqKind {
    Read,
    NtWrite,
    Writeback,
}

/// What happens when a request's current stage completes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Chain {
    /// A load: done (`stream`: it held an L2 prefetch slot, not a fill buffer).
    Load { dep: bool, stream: bool },
    /// A non-temporal store: done at acceptance.
    Nt,
    /// memcpy line: after the load, store `dst` non-temporally.
    CopyNt { dst: u64 },
    /// memcpy line with temporal stores: after the load, RFO `dst`, then write it back.
    CopyTemporal { dst: u64 },
    /// RFO done: write the line back (flush = a clwb the next drain waits for).
    Rfo { flush: bool },
    /// A dirty write-back; `flush` = counted as the thread's outstanding op.
    Wb { flush: bool },
    /// A `clwb` write-back of a dirty line (flush workload): done when the
    /// write completes, like a non-temporal store; the line is clean then.
    Clwb,
    /// The home's write of a line's in-memory directory state after another
    /// socket read it (`uncore.directory = "memory"`, engine/directory.rs):
    /// no core waits for it.
    Directory,
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Req {
    pub(super) tid: u32,
    pub(super) core: u32,
    pub(super) kind: ReqKind,
    pub(super) chain: Chain,
    pub(super) addr: u64,
    pub(super) channel: u32,
    pub(super) dimm: u32,
    pub(super) dev: u64,
    pub(super) pm: bool,
    pub(super) remote: bool,
    pub(super) src_socket: u32,
    /// The request table (overflow buffer and ingress) that tracks it: of
    /// the issuing socket, or for a remote request with
    /// `uncore.remote_tracking = "home"` of the socket of its channel; per
    /// memory controller or per socket (`uncore.request_table_scope`).
    pub(super) ts: u32,
    /// A remote request holds an entry of its tracking socket's request
    /// buffer from reaching the caching agents until its completion comes back.
    pub(super) holds: bool,
    /// Holds an entry of its socket's TOR (engine/tor.rs) until completion.
    pub(super) tor: bool,
    /// Issued outside a PM request (no `PmBegin`/`PmEnd` around it): a PM
    /// line is counted in the thread's PM traffic on its own, at completion.
    pub(super) line_level: bool,
}

/// Whether a request is a prefetched stream load. memcpy lines are not: a
/// copied line holds one fill buffer for its load and then its store, which
/// is what bounds single-thread memcpy (10 x 64 B per ~140 ns, MBW's ~5 GB/s).
pub(super) fn uses_prefetch_slot(chain: Chain) -> bool {
    matches!(chain, Chain::Load { stream: true, .. })
}

impl Engine {
    #[inline]
    pub(super) fn alloc_req(&mut self, r: Req) -> u32 {
        if let Some(i) = self.free_reqs.pop() {
            self.reqs[i as usize] = r;
            i
        } else {
            self.reqs.push(r);
            self.reqs.len() as u32 - 1
        }
    }

    /// Issues a line request. Demand misses need a fill buffer; loads of a
    /// sequential stream (and memcpy sources) are fetched by the L2 streamer
    /// and need a slot in the core's L2 miss queue instead. False if none is free.
    #[inline(always)]
    pub(super) fn issue(&mut self, tid: u32, addr: u64, kind: ReqKind, chain: Chain) -> bool {
        let cpu = self.threads[tid as usize].cpu;
        let core = self.cpus[cpu as usize].core;
        let c = &mut self.cores[core as usize];
        if uses_prefetch_slot(chain) {
            if c.sq_used >= self.cpu_params.prefetch_slots {
                return false;
            }
            c.sq_used += 1;
        } else {
            if c.lfb_used >= self.cpu_params.fill_buffers {
                return false;
            }
            c.lfb_used += 1;
        }
        let th = &mut self.threads[tid as usize];
        th.outstanding += 1;
        if matches!(
            chain,
            Chain::Load { .. } | Chain::CopyNt { .. } | Chain::CopyTemporal { .. }
        ) {
            th.qz.load_issued(self.now);
        }
        let src_socket = self.cores[core as usize].socket;
        let r = self.make_req(tid, core, src_socket, addr, kind, chain);
        self.send(r);
        true
    }

    #[inline(always)]
    pub(super) fn make_req(
        &mut self,
        tid: u32,
        core: u32,
        src_socket: u32,
        addr: u64,
        kind: ReqKind,
        chain: Chain,
    ) -> u32 {
        let (channel, dimm, dev, pm, socket) = self.route(addr, src_socket);
        let line_level = self.threads[tid as usize].pm_req.is_none();
        let (remote, ts) = self.tracking(src_socket, channel, socket);
        self.alloc_req(Req {
            tid,
            core,
            kind,
            chain,
            addr,
            channel,
            dimm,
            dev,
            pm,
            remote,
            src_socket,
            ts,
            holds: false,
            tor: false,
            line_level,
        })
    }

    /// Re-targets a request at a new address and kind and sends it again.
    #[inline(always)]
    pub(super) fn restage(&mut self, r: u32, addr: u64, kind: ReqKind, chain: Chain) {
        let src = self.reqs[r as usize].src_socket;
        let (channel, dimm, dev, pm, socket) = self.route(addr, src);
        let (remote, ts) = self.tracking(src, channel, socket);
        let q = &mut self.reqs[r as usize];
        q.kind = kind;
        q.chain = chain;
        q.addr = addr;
        q.channel = channel;
        q.dimm = dimm;
        q.dev = dev;
        q.pm = pm;
        q.remote = remote;
        q.ts = ts;
        self.send(r);
    }

    /// Sends a request from the core: it reaches its memory controller after
    /// the mesh (and socket link) latency; see [`Engine::at_imc`].
    #[inline(always)]
    pub(super) fn send(&mut self, r: u32) {
        self.requests += 1;
        let q = &self.reqs[r as usize];
        let t = self.now
            + self.uncore.core_to_uncore
            + self.uncore.cha_to_imc
            + if q.remote { self.uncore.link } else { 0 };
        self.push(t, EvKind::AtImc(r));
    }

    /// A response reached the core.
    pub(super) fn complete(&mut self, r: u32) {
        self.tor_release(r);
        if self.reqs[r as usize].holds {
            self.reqs[r as usize].holds = false;
            self.release_overflow(self.reqs[r as usize].ts);
        }
        let q = self.reqs[r as usize];
        let tid = q.tid;
        match q.chain {
            Chain::CopyNt { .. } | Chain::CopyTemporal { .. } => {
                // the copied line's load is done
                self.account(&q, false);
                self.count_load(&q);
                // the same fill buffer now holds the store (write-combining)
                self.store_stage(r);
            }
            Chain::Rfo { flush } => {
                self.account(&q, false);
                // the line is dirty in cache; its write-back needs a buffer
                let core = q.core as usize;
                if self.cores[core].wb_used < self.cpu_params.wb_buffers {
                    self.cores[core].wb_used += 1;
                    self.spawn_writeback(r, flush);
                } else {
                    self.cores[core].wb_waiters.push_back(r);
                }
            }
            Chain::Wb { flush } => {
                self.account(&q, true);
                self.free_reqs.push(r);
                let core = q.core as usize;
                self.cores[core].wb_used -= 1;
                if let Some(w) = self.cores[core].wb_waiters.pop_front() {
                    self.cores[core].wb_used += 1;
                    let flush = matches!(self.reqs[w as usize].chain, Chain::Rfo { flush: true });
                    self.spawn_writeback(w, flush);
                }
                if flush {
                    self.op_done(tid, false);
                }
            }
            Chain::Load { dep, stream } => {
                self.account(&q, false);
                self.count_load(&q);
                self.free_reqs.push(r);
                if stream {
                    self.free_sq(q.core);
                } else {
                    self.free_lfb(q.core);
                }
                self.op_done(tid, dep);
            }
            Chain::Nt => {
                self.account(&q, true);
                self.free_reqs.push(r);
                self.free_lfb(q.core);
                self.op_done(tid, false);
            }
            Chain::Clwb => {
                self.account(&q, true);
                self.free_reqs.push(r);
                self.free_lfb(q.core);
                self.written_back(q.addr);
                self.op_done(tid, false);
            }
            Chain::Directory => self.free_reqs.push(r),
        }
    }

    /// Counts a completed line in its thread's traffic: every DRAM line, and
    /// the PM lines issued outside a PM request (those are counted per
    /// request at `PmEnd`), e.g. the antagonists' 64 B accesses.
    #[inline]
    pub(super) fn account(&mut self, q: &Req, write: bool) {
        let th = &mut self.threads[q.tid as usize];
        if !q.pm {
            th.dram.record(64, write);
        } else if q.line_level {
            th.pm.record(64, write);
        }
    }

    /// A load completed: counted local or remote for the Quartz epoch.
    #[inline]
    pub(super) fn count_load(&mut self, q: &Req) {
        let now = self.now;
        self.threads[q.tid as usize].qz.load_done(now, q.remote);
    }

    /// The RFO `r` finished: its fill buffer is released and the write-back goes out.
    pub(super) fn spawn_writeback(&mut self, r: u32, flush: bool) {
        let q = self.reqs[r as usize];
        self.free_lfb(q.core);
        if !flush {
            self.op_done(q.tid, false);
        }
        self.restage(r, q.addr, ReqKind::Writeback, Chain::Wb { flush });
    }

    /// Second stage of a memcpy line: the store, in the fill buffer it just got.
    #[inline]
    pub(super) fn store_stage(&mut self, r: u32) {
        match self.reqs[r as usize].chain {
            Chain::CopyNt { dst } => self.restage(r, dst, ReqKind::NtWrite, Chain::Nt),
            Chain::CopyTemporal { dst } => {
                self.restage(r, dst, ReqKind::Read, Chain::Rfo { flush: false })
            }
            _ => {}
        }
    }

    #[inline]
    pub(super) fn free_lfb(&mut self, core: u32) {
        let c = &mut self.cores[core as usize];
        c.lfb_used -= 1;
        if let Some(t) = c.lfb_waiters.pop_front() {
            self.wake_stalled(t);
        }
    }

    #[inline]
    pub(super) fn free_sq(&mut self, core: u32) {
        let c = &mut self.cores[core as usize];
        c.sq_used -= 1;
        if let Some(t) = c.lfb_waiters.pop_front() {
            self.wake_stalled(t);
        }
    }
}
