//! The multi-socket coherence directory kept in memory
//! (`uncore.directory = "memory"`; `none` turns it off).
//!
//! Intel keeps each line's multi-socket coherence state in the line's own
//! metadata in memory (Intel 64 and IA-32 Architectures Optimization
//! Reference Manual, §2.1.31 as quoted by Stack Overflow question 65316397: "a
//! distributed in-memory directory, with the coherence state of each cache
//! line stored in metadata within the line itself in memory"; with "cores in
//! different processors repeatedly reading the same set of lines in the Intel
//! Optane DC PMM, there will be several writes to the PMM recording the
//! change in the coherence state each time"). A read from another socket
//! that memory serves is granted the line exclusive (an RFO always is), so
//! the home must mark it "may be held by another socket" and, the mark being
//! in the line's metadata, write the whole line back (McCalpin, Intel
//! Community, "SKL - strange memory behavior": "the entire cache line must be
//! written back to DRAM so that the updated memory directory bit is not
//! lost"). A line already marked needs no write; any write of the line's
//! data to memory carries its new state, which clears the mark (the writer
//! owned the line, so no other socket holds it).
//!
//! So a remote RFO to PM (a temporal store from the other socket) costs the
//! home a media read, a directory write of the line and later the line's
//! write-back, where a local one costs the read and the write-back.

use super::fill::{Chain, Req, ReqKind};
use super::{Engine, EvKind};
use crate::workload::Ps;

/// A line's key in the directory: its address without the line offset.
#[inline]
fn line_of(addr: u64) -> u64 {
    addr >> 6
}

impl Engine {
    /// The read `r` got its data from its channel at `at`: if it came from
    /// another socket and the line is not yet marked, the home writes the
    /// line back with the mark (a write of its own, tracked by the home's
    /// request table like any local request).
    #[inline]
    pub(super) fn directory_read_served(&mut self, r: u32, at: Ps) {
        let q = self.reqs[r as usize];
        if !q.remote || q.kind != ReqKind::Read {
            return;
        }
        if !self.uncore.remote_owned.insert(line_of(q.addr)) {
            return;
        }
        let home = self.channels[q.channel as usize].socket;
        let (_, ts) = self.tracking(home, q.channel, home);
        let w = self.alloc_req(Req {
            kind: ReqKind::Writeback,
            chain: Chain::Directory,
            remote: false,
            src_socket: home,
            ts,
            holds: false,
            tor: false,
            line_level: false,
            ..q
        });
        self.push(at, EvKind::AtImc(w));
    }

    /// A write of the line's data reached memory: it carries the line's new
    /// directory state, so the line is no longer marked.
    #[inline]
    pub(super) fn directory_written(&mut self, r: u32) {
        let q = &self.reqs[r as usize];
        if q.chain != Chain::Directory {
            self.uncore.remote_owned.remove(&line_of(q.addr));
        }
    }
}
