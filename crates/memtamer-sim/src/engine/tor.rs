//! The caching agents' tables of requests (TOR), modelled as one pool per
//! socket (`uncore.tor_entries_per_cha` x `cpu.cores_per_socket` entries;
//! 0, every built-in platform's setting, leaves the model without it).
//!
//! Intel's uncore manuals (Xeon E5-2600 327043-001 and E5 v2 329468-002,
//! Cbo chapter, TOR_OCCUPANCY "Max. Inc/Cyc: 20" and TOR_INSERTS.ALL "it is
//! possible that a given request type be blocked with an occupancy that is
//! less than 20 ... requests will not be able to arbitrate into the TOR
//! pipeline if there are no available TOR slots") give each LLC slice's
//! caching agent a table that tracks every request it sends to memory until
//! it completes; on Skylake-SP/Cascade Lake the CHA keeps the TOR (336274,
//! CHA chapter: TOR_INSERTS / TOR_OCCUPANCY), one CHA per core, and the
//! addresses of the whole socket are hashed over them. Requests to either
//! memory controller therefore share it: this is the socket-wide structure
//! that local PM reads can fill (PATS D-iMC, docs/notebook/simulator.md "The CHAs'
//! table of requests"). Skylake-SP's entry count is not published, hence the
//! key defaults to off.
//!
//! Model: a request takes an entry of its issuing socket's pool when it
//! reaches the caching agents and frees it when its completion reaches the
//! core. With no entry free it waits in order (the CHA ingress does not let
//! later requests pass). The pool idealises the address hash as perfect
//! balance over the slices; directory write-backs the home issues itself
//! take no entry.

use super::fill::Chain;
use super::Engine;
use std::collections::VecDeque;

/// Per socket: entries in use and the requests waiting for one.
pub(super) struct Tor {
    /// Entries per socket; 0 = not modelled.
    pub(super) cap: u32,
    used: Vec<u32>,
    waiting: Vec<VecDeque<u32>>,
}

impl Tor {
    /// `entries_per_cha` x `chas` entries on each of `sockets` sockets.
    pub(super) fn new(entries_per_cha: u32, chas: u32, sockets: u32) -> Tor {
        let n = if entries_per_cha == 0 {
            0
        } else {
            sockets as usize
        };
        Tor {
            cap: entries_per_cha.saturating_mul(chas),
            used: vec![0; n],
            waiting: vec![VecDeque::new(); n],
        }
    }
}

impl Engine {
    /// Takes a TOR entry for `r` at its arrival at the caching agents. False
    /// when it must wait (it goes on in [`Engine::tor_release`]). Without a
    /// TOR (the platforms' setting) one predictable test per request.
    #[inline(always)]
    pub(super) fn tor_acquire(&mut self, r: u32) -> bool {
        self.uncore.tor.cap == 0 || self.tor_take(r)
    }

    #[inline(never)]
    fn tor_take(&mut self, r: u32) -> bool {
        let q = &self.reqs[r as usize];
        if q.tor || q.chain == Chain::Directory {
            return true;
        }
        let s = q.src_socket as usize;
        let t = &mut self.uncore.tor;
        if t.used[s] < t.cap && t.waiting[s].is_empty() {
            t.used[s] += 1;
            self.reqs[r as usize].tor = true;
            true
        } else {
            t.waiting[s].push_back(r);
            false
        }
    }

    /// `r` completed: its entry goes to the oldest waiting request, which
    /// goes on to its memory controller.
    #[inline(always)]
    pub(super) fn tor_release(&mut self, r: u32) {
        if self.reqs[r as usize].tor {
            self.tor_free(r);
        }
    }

    #[inline(never)]
    fn tor_free(&mut self, r: u32) {
        self.reqs[r as usize].tor = false;
        let s = self.reqs[r as usize].src_socket as usize;
        self.uncore.tor.used[s] -= 1;
        while self.uncore.tor.used[s] < self.uncore.tor.cap {
            let Some(w) = self.uncore.tor.waiting[s].pop_front() else {
                break;
            };
            self.uncore.tor.used[s] += 1;
            self.reqs[w as usize].tor = true;
            self.at_cha(w);
        }
    }
}
