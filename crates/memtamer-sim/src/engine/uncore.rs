//! The uncore: regions interleaved over channels (routing), the request
//! tables (overflow buffer, head-of-line stall of the ingress), one per
//! memory controller or per socket (`uncore.request_table_scope`), and the
//! NUMA link, with remote requests tracked at home or at the requester
//! (`uncore.remote_tracking`).

use super::fill::{Req, ReqKind};
use super::Engine;
use crate::config::{MemKind, WorkloadSpec, LOCAL_DRAM_INDEX};
use crate::workload::{Ps, REGION_SHIFT};
use std::collections::{HashSet, VecDeque};

/// The uncore's state and parameters: the regions requests are routed
/// over, the request tables (overflow buffer) and the requests stalled at
/// each one's ingress, and the mesh and link latencies (ps).
pub(super) struct Uncore {
    /// Request-table entries in use, per table.
    pub(super) overflow_used: Vec<u32>,
    /// Requests stalled at the ingress, per table, in order.
    pub(super) stalled: Vec<VecDeque<u32>>,
    /// Entries of one request table.
    pub(super) overflow_cap: u32,
    /// Tables per socket: the number of memory controllers of the largest
    /// socket with `uncore.request_table_scope = "imc"`, else 1.
    pub(super) tables_per_socket: u32,
    /// With `uncore.remote_tracker = "cha"`: the index of socket 0's CHA
    /// tracker (socket `s`'s is `cha_base + s`), which remote requests
    /// tracked at home hold and whose fullness stalls the socket's ingress.
    pub(super) cha_base: Option<u32>,
    /// Per channel, its memory controller's index within its socket (0 when
    /// there is one table per socket).
    pub(super) table_of_channel: Vec<u32>,
    /// L2 miss to caching agent.
    pub(super) core_to_uncore: Ps,
    /// Caching agent back to the core.
    pub(super) uncore_to_core: Ps,
    /// Caching agent to memory controller.
    pub(super) cha_to_imc: Ps,
    /// One-way socket link.
    pub(super) link: Ps,
    /// Remote requests are tracked by the request table of their channel's
    /// socket (`uncore.remote_tracking = "home"`), not the issuing one's.
    pub(super) remote_home: bool,
    /// `uncore.directory = "memory"`: reads from another socket make the
    /// home write the line's directory state (engine/directory.rs).
    pub(super) directory: bool,
    /// Lines marked in their in-memory directory as possibly held by
    /// another socket (only with `directory`).
    pub(super) remote_owned: HashSet<u64>,
    /// The caching agents' tables of requests (engine/tor.rs).
    pub(super) tor: super::tor::Tor,
    /// Address regions.
    pub(super) regions: Vec<Region>,
    /// Per socket, the region `local-dram` resolves to (the first DRAM region
    /// whose channels all lie on that socket).
    pub(super) local_dram: Vec<Option<usize>>,
}

/// An address range interleaved over channels. A request is local or remote
/// by the socket of the channel it is routed to (a region may span sockets).
pub(super) struct Region {
    pub(super) kind: MemKind,
    pub(super) targets: Vec<u32>,
    pub(super) gran: u64,
    /// log2 of `gran` (a power of two, validated).
    pub(super) gran_shift: u32,
    /// Divides a chunk number by the number of targets.
    pub(super) per_target: DivBy,
}

/// Division by a fixed `n` as a multiply and shifts (Granlund and
/// Montgomery, PLDI'94, Thm. 4.2), exact for every dividend below
/// 2^[`REGION_SHIFT`] (region offsets). Every request is routed, and a 64-bit
/// `div` costs tens of cycles.
#[derive(Clone, Copy, Debug)]
pub(super) struct DivBy {
    pub(super) n: u64,
    /// floor(2^(REGION_SHIFT + log) / n) + 1 < 2^(REGION_SHIFT + 1)
    pub(super) magic: u64,
    /// ceil(log2 n)
    pub(super) log: u32,
}

impl DivBy {
    pub(super) fn new(n: u64) -> DivBy {
        let n = n.max(1);
        let log = 64 - (n - 1).leading_zeros();
        let magic = ((1u128 << (REGION_SHIFT + log)) / n as u128 + 1) as u64;
        DivBy { n, magic, log }
    }

    /// `(x / n, x % n)` for `x < 2^REGION_SHIFT`.
    #[inline]
    pub(super) fn div_rem(self, x: u64) -> (u64, u64) {
        debug_assert!(x < 1 << REGION_SHIFT);
        // (x * magic) >> (REGION_SHIFT + log), as the high half of a
        // 64 x 64-bit product (x shifted up to 64 bits) shifted by `log`
        let wide = ((x << (64 - REGION_SHIFT)) as u128) * self.magic as u128;
        let q = ((wide >> 64) as u64) >> self.log;
        (q, x - q * self.n)
    }
}

/// The regions `w` names ([`WorkloadSpec::regions`] without their keys).
pub(super) fn workload_regions(w: &WorkloadSpec) -> Vec<String> {
    w.regions().into_iter().map(|(_, n)| n).collect()
}

impl Engine {
    /// Channel, DIMM, device address, PM?, and the channel's socket of a line
    /// issued from socket `src` (which `local-dram` resolves by).
    #[inline(always)]
    pub(super) fn route(&self, addr: u64, src: u32) -> (u32, u32, u64, bool, u32) {
        let mut idx = (addr >> REGION_SHIFT) as usize;
        if idx == LOCAL_DRAM_INDEX as usize {
            // validated at construction: every socket has one
            idx = self
                .uncore
                .local_dram
                .get(src as usize)
                .copied()
                .flatten()
                .unwrap_or(0);
        }
        let r = &self.uncore.regions[if idx < self.uncore.regions.len() {
            idx
        } else {
            0
        }];
        let off = addr & ((1 << REGION_SHIFT) - 1);
        // interleave granularities are powers of two (validated)
        let shift = r.gran_shift;
        let (round, target) = r.per_target.div_rem(off >> shift);
        let (ch, dev) = (
            r.targets[target as usize],
            (round << shift) | (off & (r.gran - 1)),
        );
        let c = &self.channels[ch as usize];
        (
            ch,
            c.dimm.unwrap_or(u32::MAX),
            dev,
            r.kind == MemKind::Pm,
            c.socket,
        )
    }

    /// Whether a request from socket `src` to channel `ch` on `socket` is
    /// remote, and which request table tracks it: that of the issuing
    /// socket, or with `uncore.remote_tracking = "home"` the channel's; within
    /// the socket, the table of the channel's memory controller (or the
    /// socket's single table with `uncore.request_table_scope = "socket"`).
    #[inline]
    pub(super) fn tracking(&self, src: u32, ch: u32, socket: u32) -> (bool, u32) {
        let remote = socket != src;
        let s = if remote && self.uncore.remote_home {
            if let Some(base) = self.uncore.cha_base {
                return (true, base + socket);
            }
            socket
        } else {
            src
        };
        (
            remote,
            s * self.uncore.tables_per_socket + self.uncore.table_of_channel[ch as usize],
        )
    }

    /// A request reached the caching agents of its channel's socket. With
    /// the CHA tracker (`uncore.remote_tracker = "cha"`), a local request
    /// first passes that socket's CHA ingress, which is stalled while the
    /// tracker is full of remote requests (or requests wait there already).
    #[inline]
    pub(super) fn at_imc(&mut self, r: u32) {
        if self.tor_acquire(r) {
            self.at_cha(r);
        }
    }

    /// A request holding its TOR entry (if the TOR is modelled) goes on to
    /// the CHA tracker and its memory controller's table.
    #[inline(always)]
    pub(super) fn at_cha(&mut self, r: u32) {
        if let Some(base) = self.uncore.cha_base {
            let q = &self.reqs[r as usize];
            if !(q.remote && self.uncore.remote_home) {
                let cha = (base + self.channels[q.channel as usize].socket) as usize;
                if !self.uncore.stalled[cha].is_empty()
                    || self.uncore.overflow_used[cha] >= self.uncore.overflow_cap
                {
                    self.uncore.stalled[cha].push_back(r);
                    return;
                }
            }
        }
        self.at_table(r);
    }

    /// A request enters its own request table's ingress: in order behind
    /// the requests stalled there, if any.
    #[inline]
    fn at_table(&mut self, r: u32) {
        let s = self.reqs[r as usize].ts as usize;
        if self.uncore.stalled[s].is_empty() {
            self.try_enter(r);
        } else {
            // head-of-line: the caching agents' ingress is stuck behind a request
            // whose memory queue and the shared overflow buffer are both full
            self.uncore.stalled[s].push_back(r);
        }
    }

    /// Enters the channel queue, or waits for it in the socket's overflow
    /// buffer, or (when that is full too) stalls the socket's ingress.
    #[inline(always)]
    pub(super) fn try_enter(&mut self, r: u32) {
        let q = self.reqs[r as usize];
        let c = q.channel as usize;
        let s = q.ts as usize;
        if q.remote && !q.holds {
            // a remote request is tracked at home until it completes
            if self.uncore.overflow_used[s] < self.uncore.overflow_cap {
                self.uncore.overflow_used[s] += 1;
                self.reqs[r as usize].holds = true;
            } else {
                self.uncore.stalled[s].push_back(r);
                return;
            }
        }
        let holds = self.reqs[r as usize].holds;
        let ch = &self.channels[c];
        let (used, cap, waiting) = if q.kind == ReqKind::Read {
            (
                ch.rpq_used,
                self.chan_params.rpq_cap,
                !ch.rpq_wait.is_empty(),
            )
        } else {
            (
                ch.wpq_used,
                self.chan_params.wpq_cap,
                !ch.wpq_wait.is_empty(),
            )
        };
        if used < cap && !waiting {
            if q.kind == ReqKind::Read {
                self.admit_read(r);
            } else {
                self.admit_write(r);
            }
        } else if holds || self.uncore.overflow_used[s] < self.uncore.overflow_cap {
            if !holds {
                self.uncore.overflow_used[s] += 1;
            }
            let ch = &mut self.channels[c];
            if q.kind == ReqKind::Read {
                ch.rpq_wait.push_back(r);
            } else {
                ch.wpq_wait.push_back(r);
            }
        } else {
            self.uncore.stalled[s].push_back(r);
        }
    }

    /// A waiter left request table `table`'s overflow buffer: let stalled
    /// requests in.
    #[inline]
    pub(super) fn release_overflow(&mut self, table: u32) {
        let s = table as usize;
        self.uncore.overflow_used[s] -= 1;
        while self.uncore.overflow_used[s] < self.uncore.overflow_cap {
            let Some(r) = self.uncore.stalled[s].pop_front() else {
                break;
            };
            if self.reqs[r as usize].ts == table {
                self.try_enter(r);
            } else {
                // a local request let through the CHA ingress: on to its
                // memory controller's table (it holds no CHA entry)
                self.at_table(r);
            }
        }
    }

    #[inline]
    pub(super) fn ack_latency(&self, q: &Req) -> Ps {
        self.uncore.cha_to_imc
            + self.uncore.uncore_to_core
            + if q.remote { self.uncore.link } else { 0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Platform, Scenario};
    use crate::engine::EngineConfig;
    use crate::experiment::load_platform;
    use crate::rng::Rng;
    use crate::workload::addr;

    fn ahn_engine() -> Engine {
        let p = load_platform("ahn", &Default::default()).unwrap();
        let s = Scenario::with_jobs("t", "ahn", vec![]);
        let cfg = EngineConfig::for_tests();
        Engine::new(&p, &s, &cfg).unwrap()
    }

    fn engine_with(platform: &str, overrides: &[(&str, &str)]) -> Engine {
        let o = overrides
            .iter()
            .map(|(k, v)| (k.to_string(), toml::Value::String(v.to_string())))
            .collect();
        let p = load_platform(platform, &o).unwrap();
        let s = Scenario::with_jobs("t", platform, vec![]);
        let cfg = EngineConfig::for_tests();
        Engine::new(&p, &s, &cfg).unwrap()
    }

    #[test]
    fn each_memory_controller_has_its_own_request_table() {
        // (without the CHA trackers the platforms add after the iMCs' tables)
        // pats-dimc: DRAM on A/B/C (iMC 0), PM on D (iMC 1)
        let e = engine_with(
            "pats-dimc",
            &[
                ("uncore.request_table_scope", "imc"),
                ("uncore.remote_tracker", "imc"),
            ],
        );
        let tables: Vec<u32> = (0..4).map(|ch| e.tracking(0, ch, 0).1).collect();
        assert_eq!(tables, vec![0, 0, 0, 1]);
        assert_eq!(e.uncore.overflow_used.len(), 2);
        // the ablation shares one table over the socket
        let e = engine_with(
            "pats-dimc",
            &[
                ("uncore.request_table_scope", "socket"),
                ("uncore.remote_tracker", "imc"),
            ],
        );
        let tables: Vec<u32> = (0..4).map(|ch| e.tracking(0, ch, 0).1).collect();
        assert_eq!(tables, vec![0, 0, 0, 0]);
        assert_eq!(e.uncore.overflow_used.len(), 1);
    }

    #[test]
    fn a_remote_request_uses_its_home_controllers_table() {
        // ahn: 2 sockets x 2 iMCs; channel 9 is on socket 1
        let e = engine_with(
            "ahn",
            &[
                ("uncore.request_table_scope", "imc"),
                ("uncore.remote_tracker", "imc"),
            ],
        );
        let ch = 9;
        let (socket, imc) = (
            e.channels[ch as usize].socket,
            e.uncore.table_of_channel[ch as usize],
        );
        assert_eq!(socket, 1);
        let (remote, t) = e.tracking(0, ch, socket);
        assert!(remote);
        assert_eq!(t, socket * e.uncore.tables_per_socket + imc);
        assert_eq!(e.uncore.tables_per_socket, 2);
    }

    #[test]
    fn a_remote_request_uses_its_home_sockets_cha_tracker() {
        // ahn: 2 sockets x 2 iMCs, plus one CHA tracker per socket
        let e = engine_with(
            "ahn",
            &[
                ("uncore.request_table_scope", "imc"),
                ("uncore.remote_tracker", "cha"),
            ],
        );
        assert_eq!(e.uncore.cha_base, Some(4));
        assert_eq!(e.uncore.overflow_used.len(), 6);
        // channel 9 (D1) is on socket 1, iMC 1: from socket 0 it is remote
        // and tracked by socket 1's CHAs; from socket 1 by its iMC's table
        assert_eq!(e.tracking(0, 9, 1), (true, 5));
        assert_eq!(e.tracking(1, 9, 1), (false, 3));
        // the ablation keeps the home iMC's table
        let e = engine_with("ahn", &[("uncore.remote_tracker", "imc")]);
        assert_eq!(e.uncore.cha_base, None);
    }

    fn region(p: &Platform, name: &str) -> u8 {
        p.regions.iter().position(|r| r.name == name).unwrap() as u8
    }

    #[test]
    fn div_by_matches_integer_division() {
        let mut rng = Rng::new(3, 0);
        for n in (1..=64u64).chain([96, 1000, 4095, 1 << 20, (1 << 32) + 7]) {
            let d = DivBy::new(n);
            let top = (1u64 << REGION_SHIFT) - 1;
            let edges = [0, 1, n - 1, n, n + 1, top, top - 1, top - n, top / n * n];
            for x in edges
                .into_iter()
                .chain((0..2000).map(|_| rng.below(top + 1)))
            {
                assert_eq!(d.div_rem(x), (x / n, x % n), "{x} / {n}");
            }
        }
    }

    #[test]
    fn a_region_over_both_sockets_is_remote_by_the_channel_reached() {
        let e = ahn_engine();
        let p = load_platform("ahn", &Default::default()).unwrap();
        let all = region(&p, "pm-all");
        // 4 KB chunks go round-robin over A0..F0, A1..F1
        for chunk in 0..24u64 {
            let a = addr(all, 0, chunk * 4096 + 64);
            let (ch, _, _, pm, socket) = e.route(a, 0);
            assert!(pm);
            assert_eq!(ch as u64, chunk % 12);
            assert_eq!(socket, if chunk % 12 < 6 { 0 } else { 1 }, "chunk {chunk}");
        }
        // single-socket regions keep their socket
        let pm1 = region(&p, "pm1");
        assert_eq!(e.route(addr(pm1, 0, 0), 0).4, 1);
        let pm = region(&p, "pm");
        assert_eq!(e.route(addr(pm, 0, 0), 1).4, 0);
    }

    #[test]
    fn local_dram_resolves_to_the_issuing_sockets_dram() {
        let e = ahn_engine();
        for src in 0..2u32 {
            for off in [0u64, 256, 4096, 1 << 20] {
                let (ch, dimm, _, pm, socket) = e.route(addr(LOCAL_DRAM_INDEX, 3, off), src);
                assert!(!pm);
                assert_eq!(socket, src);
                assert_eq!(e.channels[ch as usize].socket, src);
                // same channel choice as the socket's own DRAM region
                let own = if src == 0 { 0 } else { 2 };
                assert_eq!((ch, dimm), {
                    let r = e.route(addr(own, 3, off), src);
                    (r.0, r.1)
                });
            }
        }
    }
}
