//! One memory channel: its read and write pending queues shared by DRAM
//! and PM, the data bus driven by the bus scheduler, and the channel's side
//! of its Optane DIMM (DDR-T transfers, media starts, acknowledgements).

use super::completion::WriteStage;
use super::dram::{DramBanks, DramTiming};
use super::{Engine, EvKind};
use crate::pmdimm::NO_REQ;
use crate::workload::Ps;
use std::collections::VecDeque;

#[derive(Clone, Copy)]
pub(super) struct WriteItem {
    pub(super) seq: u64,
    pub(super) req: u32,
    pub(super) pm: bool,
    pub(super) dimm: u32,
    pub(super) dev: u64,
    /// When the WPQ accepted it (the DRAM bank model: from then on its bank
    /// may open its row).
    pub(super) at: Ps,
}

#[derive(Default, Clone, Copy, Debug)]
/// Cumulative counters of one channel (uncore iMC equivalents).
pub struct ChannelCounters {
    /// DRAM CAS reads.
    pub cas_reads: u64,
    /// DRAM CAS writes.
    pub cas_writes: u64,
    /// PM RPQ occupancy summed over iMC cycles.
    pub pmm_rpq_occupancy: u64,
    /// PM RPQ inserts.
    pub pmm_rpq_inserts: u64,
    /// PM WPQ occupancy summed over iMC cycles.
    pub pmm_wpq_occupancy: u64,
    /// PM WPQ inserts.
    pub pmm_wpq_inserts: u64,
}

pub(super) struct Channel {
    pub(super) socket: u32,
    pub(super) rpq_used: u32,
    pub(super) wpq_used: u32,
    pub(super) rpq_wait: VecDeque<u32>,
    pub(super) wpq_wait: VecDeque<u32>,
    pub(super) dram_rq: VecDeque<(Ps, u32)>,
    pub(super) pm_data: VecDeque<u32>,
    /// PM reads in the RPQ whose command waits for a write drain to end
    /// (`drain-blocks-reads` only).
    pub(super) pm_read_hold: VecDeque<u32>,
    pub(super) dram_wq: VecDeque<WriteItem>,
    pub(super) pm_wq: VecDeque<WriteItem>,
    pub(super) write_seq: u64,
    pub(super) pm_in_rpq: u32,
    pub(super) pm_in_wpq: u32,
    pub(super) occ_since: Ps,
    pub(super) occ_rpq_ps: u128,
    pub(super) occ_wpq_ps: u128,
    pub(super) bus_free: Ps,
    pub(super) last_write: bool,
    pub(super) write_mode: bool,
    pub(super) kick_at: Option<Ps>,
    pub(super) dimm: Option<u32>,
    pub(super) counters: ChannelCounters,
    /// The DRAM's banks (empty without a bank model).
    pub(super) banks: DramBanks,
}

/// Channel queue sizes and timing (from `[memory]` and `[dram]`), in ps.
pub(super) struct ChannelParams {
    /// RPQ entries.
    pub(super) rpq_cap: u32,
    /// WPQ entries.
    pub(super) wpq_cap: u32,
    /// One iMC clock cycle (occupancy counters).
    pub(super) imc_cycle_ps: f64,
    /// One 64 B transfer on the data bus.
    pub(super) burst: Ps,
    /// DRAM activate + CAS.
    pub(super) dram_access: Ps,
    /// Read/write bus turnaround.
    pub(super) turnaround: Ps,
    /// DRAM banks and row buffers (`[dram.banks]`); `None`: every access
    /// costs `dram_access`.
    pub(super) dram: Option<DramTiming>,
}

impl Channel {
    /// An empty channel on `socket`, with Optane DIMM `dimm` if it has one.
    pub(super) fn new(socket: u32, dimm: Option<u32>, dram: Option<&DramTiming>) -> Channel {
        Channel {
            socket,
            rpq_used: 0,
            wpq_used: 0,
            rpq_wait: VecDeque::new(),
            wpq_wait: VecDeque::new(),
            dram_rq: VecDeque::new(),
            pm_data: VecDeque::new(),
            pm_read_hold: VecDeque::new(),
            dram_wq: VecDeque::new(),
            pm_wq: VecDeque::new(),
            write_seq: 0,
            pm_in_rpq: 0,
            pm_in_wpq: 0,
            occ_since: 0,
            occ_rpq_ps: 0,
            occ_wpq_ps: 0,
            bus_free: 0,
            last_write: false,
            write_mode: false,
            kick_at: None,
            dimm,
            counters: ChannelCounters::default(),
            banks: dram.map(DramBanks::new).unwrap_or_default(),
        }
    }
}

impl Engine {
    #[inline]
    pub(super) fn account_occupancy(&mut self, c: usize) {
        let now = self.now;
        let ch = &mut self.channels[c];
        let dt = (now - ch.occ_since) as u128;
        ch.occ_rpq_ps += dt * ch.pm_in_rpq as u128;
        ch.occ_wpq_ps += dt * ch.pm_in_wpq as u128;
        ch.occ_since = now;
    }

    #[inline(always)]
    pub(super) fn admit_write(&mut self, r: u32) {
        let q = &self.reqs[r as usize];
        let (channel, pm, dimm, dev) = (q.channel, q.pm, q.dimm, q.dev);
        let c = channel as usize;
        if pm {
            self.account_occupancy(c);
        }
        if self.uncore.directory {
            self.directory_written(r);
        }
        let ch = &mut self.channels[c];
        ch.wpq_used += 1;
        ch.write_seq += 1;
        let item = WriteItem {
            seq: ch.write_seq,
            req: r,
            pm,
            dimm,
            dev,
            at: self.now,
        };
        if pm {
            ch.pm_wq.push_back(item);
            ch.pm_in_wpq += 1;
            ch.counters.pmm_wpq_inserts += 1;
        } else {
            ch.dram_wq.push_back(item);
        }
        // DRAM: the write completes at WPQ acceptance; PM: where the
        // write-completion part says (WPQ, DDR-T transfer or XPBuffer)
        if !pm || self.pm_completion.completes_at(WriteStage::WpqAccept) {
            let t = self.now + self.ack_latency(&self.reqs[r as usize]);
            self.push(t, EvKind::Complete(r));
        }
        // mostly admitted by the bus scheduler itself, whose transfer just
        // started: then only its end is (re)scheduled, as `kick` would
        let busy_until = self.channels[c].bus_free;
        if busy_until > self.now {
            self.schedule_kick(channel, busy_until);
        } else {
            self.kick(channel);
        }
    }

    #[inline(always)]
    pub(super) fn admit_read(&mut self, r: u32) {
        let q = &self.reqs[r as usize];
        let (channel, pm, dimm, dev) = (q.channel, q.pm, q.dimm, q.dev);
        let c = channel as usize;
        if pm {
            self.account_occupancy(c);
        }
        let ch = &mut self.channels[c];
        ch.rpq_used += 1;
        if pm {
            ch.pm_in_rpq += 1;
            ch.counters.pmm_rpq_inserts += 1;
            if self.bus.blocks_reads(ch.write_mode) {
                ch.pm_read_hold.push_back(r);
            } else {
                self.issue_pm_read(r, dimm, dev);
            }
        } else {
            let ready = match &self.chan_params.dram {
                None => self.now + self.chan_params.dram_access,
                Some(t) => t.tcl() + ch.banks.access(t, self.now, self.now, dev, false),
            };
            // ready-first: the bus takes reads in the order their data is ready
            if ch.dram_rq.back().is_none_or(|&(b, _)| b <= ready) {
                ch.dram_rq.push_back((ready, r));
            } else {
                let at = ch.dram_rq.partition_point(|&(b, _)| b <= ready);
                ch.dram_rq.insert(at, (ready, r));
            }
            self.kick(channel);
        }
    }

    /// Sends PM read `r`'s command to its DIMM: a buffer hit is ready after
    /// the controller, a miss waits for the media.
    #[inline(always)]
    fn issue_pm_read(&mut self, r: u32, dimm: u32, dev: u64) {
        match self.dimms[dimm as usize].read_arrive(self.now, r, dev) {
            Some(t) => self.push(t, EvKind::PmReadReady(r)),
            None => self.start_media(dimm),
        }
    }

    /// Issues the PM reads held during a write drain (out of line: only
    /// `drain-blocks-reads` holds any).
    #[inline(never)]
    fn release_held_reads(&mut self, ci: usize) {
        while let Some(r) = self.channels[ci].pm_read_hold.pop_front() {
            let q = &self.reqs[r as usize];
            let (dimm, dev) = (q.dimm, q.dev);
            self.issue_pm_read(r, dimm, dev);
        }
    }

    /// Sends completions for the writes DIMM `d` accepted.
    #[inline(always)]
    pub(super) fn dimm_accepted(&mut self, d: u32) {
        let d = d as usize;
        if self.dimms[d].accepted.is_empty() {
            return;
        }
        for i in 0..self.dimms[d].accepted.len() {
            let r = self.dimms[d].accepted[i];
            let t = self.now + self.ack_latency(&self.reqs[r as usize]);
            self.push(t, EvKind::Complete(r));
        }
        self.dimms[d].accepted.clear();
    }

    #[inline(always)]
    pub(super) fn start_media(&mut self, d: u32) {
        if self.dimms[d as usize].media_busy() {
            return;
        }
        if let Some(s) = self.dimms[d as usize].try_start_media(self.now) {
            self.push(s.busy_until, EvKind::MediaDone(d));
            if let Some((r, t)) = s.read_ready {
                self.push(t, EvKind::PmReadReady(r));
            }
        }
    }

    #[inline(always)]
    pub(super) fn schedule_kick(&mut self, c: u32, t: Ps) {
        let ch = &mut self.channels[c as usize];
        if ch.kick_at.is_some_and(|k| k <= t) {
            return;
        }
        ch.kick_at = Some(t);
        self.push(t, EvKind::ChannelKick(c));
    }

    /// Drives the channel's data bus: one 64 B transfer at a time. Whether a
    /// write goes ahead of ready reads, and which write, is the bus
    /// scheduler's choice ([`BusScheduler`](super::bus::BusScheduler), `memory.bus_scheduler`).
    pub(super) fn kick(&mut self, c: u32) {
        let now = self.now;
        let ci = c as usize;
        if self.channels[ci].bus_free > now {
            let t = self.channels[ci].bus_free;
            self.schedule_kick(c, t);
            return;
        }
        let ch = &mut self.channels[ci];
        let writes_first = self.bus.writes_first(&mut ch.write_mode, ch.wpq_used);
        let reads_held = self.bus.blocks_reads(ch.write_mode);
        if !reads_held && !ch.pm_read_hold.is_empty() {
            self.release_held_reads(ci);
        }
        let ch = &mut self.channels[ci];
        let dram_ready = ch.dram_rq.front().map(|&(t, _)| t);
        let pm_ready = !ch.pm_data.is_empty();
        let read_now = !reads_held && (pm_ready || dram_ready.is_some_and(|t| t <= now));
        // the write that can go: DRAM always, PM only with a DDR-T credit
        // (only looked for when a write may go)
        let pick_pm = if writes_first || !read_now {
            let dram_w = ch.dram_wq.front().map(|w| w.seq);
            let pm_w = ch
                .pm_wq
                .front()
                .filter(|w| self.dimms[w.dimm as usize].has_credit())
                .map(|w| w.seq);
            self.bus.pick_write(dram_w, pm_w)
        } else {
            None
        };
        if pick_pm.is_some() {
            let w = if pick_pm == Some(true) {
                ch.pm_wq.pop_front()
            } else if let Some(t) = &self.chan_params.dram {
                // first-ready: the oldest DRAM write that hits an open row,
                // else the oldest (FR-FCFS write drain)
                let banks = &ch.banks;
                let i = ch
                    .dram_wq
                    .iter()
                    .position(|w| banks.would_hit(t, w.at, w.dev))
                    .unwrap_or(0);
                ch.dram_wq.remove(i)
            } else {
                ch.dram_wq.pop_front()
            };
            let Some(w) = w else { return };
            let turn = if ch.last_write {
                0
            } else {
                self.chan_params.turnaround
            };
            ch.last_write = true;
            let mut start = now + turn;
            if let (false, Some(t)) = (w.pm, &self.chan_params.dram) {
                // the column command goes tCWL ahead of the data; a miss's
                // activate may have started once the write was queued; a
                // write whose bank is not ready holds the bus until it is
                let cas = ch
                    .banks
                    .access(t, w.at, start.saturating_sub(t.tcwl()), w.dev, true);
                start = start.max(cas + t.tcwl());
            }
            let end = start + self.chan_params.burst;
            ch.bus_free = end;
            if w.pm {
                self.account_occupancy(ci);
                let ch = &mut self.channels[ci];
                ch.pm_in_wpq -= 1;
                ch.wpq_used -= 1;
                // the DIMM takes a DDR-T credit and reports the request back
                // once its XPBuffer accepts it, if the write completes there
                let at_xpbuffer = self.pm_completion.completes_at(WriteStage::XpBufferAccept);
                self.dimms[w.dimm as usize].write_arrive(
                    end,
                    w.dev,
                    if at_xpbuffer { w.req } else { NO_REQ },
                );
                if self.pm_completion.completes_at(WriteStage::DdrtTransfer) {
                    let t = end + self.ack_latency(&self.reqs[w.req as usize]);
                    self.push(t, EvKind::Complete(w.req));
                }
                self.dimm_accepted(w.dimm);
                self.start_media(w.dimm);
            } else {
                let ch = &mut self.channels[ci];
                ch.wpq_used -= 1;
                ch.counters.cas_writes += 1;
            }
            self.admit_waiters(ci, false);
            if self.channel_has_work(ci) {
                self.schedule_kick(c, end);
            }
            return;
        }
        if read_now {
            let turn = if ch.last_write {
                self.chan_params.turnaround
            } else {
                0
            };
            ch.last_write = false;
            let end = now + turn + self.chan_params.burst;
            ch.bus_free = end;
            let r = if pm_ready {
                let r = ch.pm_data.pop_front().unwrap_or(0);
                self.account_occupancy(ci);
                self.channels[ci].pm_in_rpq -= 1;
                r
            } else {
                let (_, r) = ch.dram_rq.pop_front().unwrap_or((0, 0));
                ch.counters.cas_reads += 1;
                r
            };
            self.channels[ci].rpq_used -= 1;
            let back = self.ack_latency(&self.reqs[r as usize]);
            self.push(end + back, EvKind::Complete(r));
            if self.uncore.directory {
                self.directory_read_served(r, end);
            }
            self.admit_waiters(ci, true);
            if self.channel_has_work(ci) {
                self.schedule_kick(c, end);
            }
            return;
        }
        // nothing to do now: wake up when the next DRAM read is ready (a
        // drain that holds reads is woken by a DDR-T credit instead)
        if reads_held {
            return;
        }
        if let Some(t) = dram_ready {
            self.schedule_kick(c, t.max(now + 1));
        }
    }

    /// Whether the channel has anything its bus could move (if not, the next
    /// admission or DIMM credit kicks it).
    #[inline]
    pub(super) fn channel_has_work(&self, ci: usize) -> bool {
        let ch = &self.channels[ci];
        !ch.dram_rq.is_empty()
            || !ch.pm_data.is_empty()
            || !ch.pm_read_hold.is_empty()
            || !ch.dram_wq.is_empty()
            || ch
                .pm_wq
                .front()
                .is_some_and(|w| self.dimms[w.dimm as usize].has_credit())
    }

    /// Admits requests waiting for the channel's WPQ (or RPQ) while it has room.
    #[inline]
    pub(super) fn admit_waiters(&mut self, ci: usize, reads: bool) {
        let ch = &self.channels[ci];
        let waiting = if reads { &ch.rpq_wait } else { &ch.wpq_wait };
        if !waiting.is_empty() {
            self.admit_waiting(ci, reads);
        }
    }

    /// [`Engine::admit_waiters`] once some wait (out of line: mostly none do).
    pub(super) fn admit_waiting(&mut self, ci: usize, reads: bool) {
        loop {
            let ch = &mut self.channels[ci];
            let (used, cap, wait) = if reads {
                (ch.rpq_used, self.chan_params.rpq_cap, &mut ch.rpq_wait)
            } else {
                (ch.wpq_used, self.chan_params.wpq_cap, &mut ch.wpq_wait)
            };
            if used >= cap {
                break;
            }
            let Some(r) = wait.pop_front() else {
                break;
            };
            if reads {
                self.admit_read(r);
            } else {
                self.admit_write(r);
            }
            let q = &self.reqs[r as usize];
            if !q.holds {
                self.release_overflow(q.ts);
            }
        }
    }

    #[inline(never)] // cold: keeps the event loop's frame small
    pub(super) fn channel_counters_now(&mut self) -> Vec<ChannelCounters> {
        for c in 0..self.channels.len() {
            self.account_occupancy(c);
        }
        let cyc = self.chan_params.imc_cycle_ps;
        self.channels
            .iter()
            .map(|c| {
                let mut k = c.counters;
                k.pmm_rpq_occupancy = (c.occ_rpq_ps as f64 / cyc) as u64;
                k.pmm_wpq_occupancy = (c.occ_wpq_ps as f64 / cyc) as u64;
                k
            })
            .collect()
    }
}
