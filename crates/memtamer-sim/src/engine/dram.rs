//! The DRAM behind one channel as banks with row buffers (issue 24 item 3).
//!
//! A 64 B access to a channel-local address names a column of a row of a
//! bank. The mapping puts a row's columns at consecutive lines (so a
//! sequential stream stays in one open row for `row_bytes`), then the bank,
//! XOR-hashed with the row's low bits (permutation-based page interleaving,
//! Zhang, Zhu and Zhang, MICRO-33, 2000: streams a multiple of banks x row
//! size apart, which would share every bank, go to different banks), then
//! the rank, then the row. A bank serves its accesses
//! in the order they reach it: a hit in the open row issues its column
//! command at once (one per burst), anything else waits for the precharge of
//! the open row (`tRAS` after its activate, `tRTP` after a read, `tWR` after
//! write data), `tRP`, an activate within the rank's four-activate window
//! (`tFAW`) and `tRCD`. Read data is on the bus `tCL` after the column
//! command, write data `tCWL` after it. Nothing here counts threads or
//! streams: hits and conflicts come from the addresses.

use crate::config::{DramBankParams, PagePolicy};
use crate::workload::{Ps, NS};

/// The timings of one channel's DRAM, in ps.
#[derive(Clone, Copy, Debug)]
pub(super) struct DramTiming {
    trcd: Ps,
    trp: Ps,
    tcl: Ps,
    tcwl: Ps,
    tras: Ps,
    tfaw: Ps,
    trtp: Ps,
    twr: Ps,
    burst: Ps,
    /// Idle time after which the close-adaptive policy precharges a row.
    page_close: Ps,
    /// Lines per row.
    cols: u64,
    banks: u64,
    banks_per_rank: u64,
    open_policy: bool,
}

impl DramTiming {
    /// From the platform's `[dram.banks]`; `None` for `page_policy = "flat"`
    /// (every access then costs `dram.access_ns`, as before issue 24).
    pub(super) fn new(p: &DramBankParams, burst: Ps) -> Option<DramTiming> {
        let ps = |ns: f64| (ns * NS as f64).round() as Ps;
        let open_policy = match p.page_policy {
            PagePolicy::Flat => return None,
            PagePolicy::Open => true,
            PagePolicy::CloseAdaptive => false,
        };
        Some(DramTiming {
            trcd: ps(p.trcd_ns),
            trp: ps(p.trp_ns),
            tcl: ps(p.tcl_ns),
            tcwl: ps(p.tcwl_ns),
            tras: ps(p.tras_ns),
            tfaw: ps(p.tfaw_ns),
            trtp: ps(p.trtp_ns),
            twr: ps(p.twr_ns),
            burst,
            page_close: ps(p.page_close_ns),
            cols: (p.row_bytes as u64 / 64).max(1),
            banks: (p.ranks as u64 * p.banks_per_rank as u64).max(1),
            banks_per_rank: (p.banks_per_rank as u64).max(1),
            open_policy,
        })
    }

    /// Bank and row of channel-local address `dev`.
    #[inline]
    fn map(&self, dev: u64) -> (usize, u64) {
        let r = (dev >> 6) / self.cols;
        let row = r / self.banks;
        // bank count is a power of two (validated)
        let bank = (r ^ row) & (self.banks - 1);
        (bank as usize, row)
    }

    /// CAS latency: a read's data is on the bus this long after its column command.
    #[inline]
    pub(super) fn tcl(&self) -> Ps {
        self.tcl
    }

    /// CAS write latency: write data goes this long after its column command.
    #[inline]
    pub(super) fn tcwl(&self) -> Ps {
        self.tcwl
    }
}

const NO_ROW: u64 = u64::MAX;

/// Row-buffer counters of one channel (cumulative).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RowCounters {
    /// Accesses that found their row open.
    pub hits: u64,
    /// Accesses that needed an activate (closed bank or another row open).
    pub misses: u64,
}

/// Bank state of one channel.
#[derive(Clone, Debug, Default)]
pub(super) struct DramBanks {
    open_row: Vec<u64>,
    /// Time of each bank's last column command.
    last_cas: Vec<Ps>,
    /// Earliest time each bank's open row may be precharged.
    pre_ok: Vec<Ps>,
    /// The last four activates of each rank (ring, time + 1; 0 = none), for `tFAW`.
    acts: Vec<[Ps; 4]>,
    act_idx: Vec<u8>,
    /// Row hits and misses.
    pub(super) counters: RowCounters,
}

impl DramBanks {
    /// Every bank precharged (no row open).
    pub(super) fn new(t: &DramTiming) -> DramBanks {
        let banks = t.banks as usize;
        let ranks = (t.banks / t.banks_per_rank).max(1) as usize;
        DramBanks {
            open_row: vec![NO_ROW; banks],
            last_cas: vec![0; banks],
            pre_ok: vec![0; banks],
            acts: vec![[0; 4]; ranks],
            act_idx: vec![0; ranks],
            counters: RowCounters::default(),
        }
    }

    /// Whether an access to `dev` that reached the controller at `arrived`
    /// would find its row open now.
    #[inline]
    pub(super) fn would_hit(&self, t: &DramTiming, arrived: Ps, dev: u64) -> bool {
        let (b, row) = t.map(dev);
        self.open_row[b] == row && (t.open_policy || arrived <= self.last_cas[b] + t.page_close)
    }

    /// Schedules the column command of an access to `dev` that reached the
    /// controller at `arrived` (its activate may start then) and whose column
    /// command may not issue before `earliest`; returns its time. With the close-adaptive policy the row is still open only
    /// for an access that arrives within `page_close_ns` of the bank's
    /// previous column command; otherwise the row was precharged then.
    pub(super) fn access(
        &mut self,
        t: &DramTiming,
        arrived: Ps,
        earliest: Ps,
        dev: u64,
        write: bool,
    ) -> Ps {
        let (b, row) = t.map(dev);
        let open = self.open_row[b];
        let timer = self.last_cas[b] + t.page_close;
        let closed_idle = !t.open_policy && arrived > timer;
        let hit = open == row && !closed_idle;
        let cas = if hit {
            self.counters.hits += 1;
            earliest.max(self.last_cas[b] + t.burst)
        } else {
            self.counters.misses += 1;
            let mut act = arrived;
            if open != NO_ROW {
                // idle: precharged when its timer ran out; else now (conflict)
                let pre = if closed_idle {
                    self.pre_ok[b].max(timer)
                } else {
                    self.pre_ok[b]
                };
                act = act.max(pre + t.trp);
            }
            let rank = b / t.banks_per_rank as usize;
            let i = self.act_idx[rank] as usize;
            // the fourth activate back must be tFAW before this one
            let fourth = self.acts[rank][i];
            if fourth != 0 {
                act = act.max(fourth - 1 + t.tfaw);
            }
            self.acts[rank][i] = act + 1;
            self.act_idx[rank] = ((i + 1) % 4) as u8;
            self.open_row[b] = row;
            self.pre_ok[b] = act + t.tras;
            (act + t.trcd).max(earliest)
        };
        self.last_cas[b] = cas;
        let after = if write {
            cas + t.tcwl + t.burst + t.twr
        } else {
            cas + t.trtp
        };
        self.pre_ok[b] = self.pre_ok[b].max(after);
        cas
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// DDR4-2666 (DRAMsim3 DDR4_8Gb_x8_2666), 2 ranks of 16 banks, 8 KB rows.
    fn params(policy: PagePolicy) -> DramBankParams {
        DramBankParams {
            ranks: 2,
            banks_per_rank: 16,
            row_bytes: 8192,
            trcd_ns: 14.25,
            trp_ns: 14.25,
            tcl_ns: 14.25,
            tcwl_ns: 10.5,
            tras_ns: 32.25,
            tfaw_ns: 21.0,
            trtp_ns: 7.5,
            twr_ns: 15.0,
            page_close_ns: 0.0,
            page_policy: policy,
        }
    }

    fn timing(policy: PagePolicy) -> DramTiming {
        DramTiming::new(&params(policy), 3 * NS).unwrap()
    }

    #[test]
    fn a_queued_stream_hits_its_open_row_and_a_lone_access_finds_the_bank_closed() {
        let t = timing(PagePolicy::CloseAdaptive);
        let mut b = DramBanks::new(&t);
        // 8 lines of one row, all queued at time 0: one activate, then hits
        let cas: Vec<Ps> = (0..8).map(|i| b.access(&t, 0, 0, i * 64, false)).collect();
        assert_eq!(cas[0], t.trcd);
        for w in cas.windows(2) {
            assert_eq!(w[1] - w[0], t.burst);
        }
        assert_eq!(b.counters, RowCounters { hits: 7, misses: 1 });
        // long after, the same row: closed meanwhile, so an activate (no tRP wait)
        let late = 1000 * NS;
        assert_eq!(b.access(&t, late, late, 8 * 64, false), late + t.trcd);
        // the open policy would have hit
        let to = timing(PagePolicy::Open);
        let mut o = DramBanks::new(&to);
        o.access(&to, 0, 0, 0, false);
        assert_eq!(o.access(&to, late, late, 64, false), late);
    }

    #[test]
    fn the_idle_timer_keeps_a_row_open_for_a_stream_spaced_in_time() {
        let mut p = params(PagePolicy::CloseAdaptive);
        p.page_close_ns = 100.0;
        let t = DramTiming::new(&p, 3 * NS).unwrap();
        let mut b = DramBanks::new(&t);
        let first = b.access(&t, 0, 0, 0, false);
        // 50 ns after that column command: still open, a hit at once
        let at = first + 50 * NS;
        assert_eq!(b.access(&t, at, at, 64, false), at);
        // 150 ns after the last one: precharged by the timer, an activate
        let late = at + 150 * NS;
        assert_eq!(b.access(&t, late, late, 128, false), late + t.trcd);
        assert_eq!(b.counters, RowCounters { hits: 1, misses: 2 });
    }

    #[test]
    fn a_row_conflict_pays_precharge_and_activate() {
        let t = timing(PagePolicy::Open);
        let mut b = DramBanks::new(&t);
        let (bank, row) = t.map(0);
        // another row of the same bank: one row further, bank hash undone
        let other = (0..1u64 << 20)
            .map(|i| i * 8192)
            .find(|&a| {
                let (bb, rr) = t.map(a);
                bb == bank && rr != row
            })
            .unwrap();
        let first = b.access(&t, 0, 0, 0, false);
        let second = b.access(&t, 0, 0, other, false);
        // precharge waits for tRAS after the first activate, then tRP + tRCD
        assert_eq!(second, t.tras + t.trp + t.trcd);
        assert!(second > first);
    }

    #[test]
    fn streams_one_bank_stride_apart_use_different_banks() {
        let t = timing(PagePolicy::CloseAdaptive);
        // 32 banks x 8 KB rows: without the hash the same bank, another row
        let base = 32 * 8192;
        let (b0, _) = t.map(0);
        let (b1, _) = t.map(base);
        assert_ne!(b0, b1);
    }

    #[test]
    fn four_activates_per_window_per_rank() {
        let t = timing(PagePolicy::CloseAdaptive);
        let mut b = DramBanks::new(&t);
        // five different banks of rank 0 (consecutive rows of row 0's banks)
        let acts: Vec<Ps> = (0..5u64)
            .map(|i| b.access(&t, 0, 0, i * 8192, false) - t.trcd)
            .collect();
        assert_eq!(&acts[..4], &[0, 0, 0, 0]);
        assert_eq!(acts[4], t.tfaw);
    }

    #[test]
    fn flat_policy_has_no_bank_model() {
        assert!(DramTiming::new(&params(PagePolicy::Flat), 3 * NS).is_none());
    }
}
