//! Where a task graph's blocks lie in the process's span ([`Layout`]).

use super::super::tiered::{MoveReq, PAGE};
use super::TaskGraph;
use memtamer_core::unimem::Tier;

/// Block layout in the process's span: block `i` starts at `base[i]`
/// (page aligned, back to back, as [`TierSpace::new`] lays objects out).
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    base: Vec<u64>,
    end: u64,
}

impl Layout {
    /// The layout of `g`'s blocks.
    pub fn new(g: &TaskGraph) -> Layout {
        let mut base = Vec::with_capacity(g.blocks.len());
        let mut at = 0;
        for b in &g.blocks {
            base.push(at);
            at += b.bytes.div_ceil(PAGE) * PAGE;
        }
        Layout { base, end: at }
    }

    /// Byte offset of block `b`'s start.
    pub fn base(&self, b: usize) -> u64 {
        self.base.get(b).copied().unwrap_or(self.end)
    }

    /// Global page number of byte `off` of block `b`.
    pub fn page(&self, b: usize, off: u64) -> u64 {
        (self.base(b) + off) / PAGE
    }

    /// (block, page within block) of global page `p`, if inside a block.
    pub fn locate(&self, p: u64) -> Option<(usize, u64)> {
        let a = p * PAGE;
        if a >= self.end {
            return None;
        }
        let i = self.base.partition_point(|&b| b <= a).checked_sub(1)?;
        Some((i, (a - self.base[i]) / PAGE))
    }

    /// The moves of global `pages` to `to`, one request per run of
    /// consecutive pages of one block (what one `move_pages` batch of a
    /// task becomes in the simulator: each request ends with a drain).
    pub fn moves(&self, pages: &[u64], to: Tier) -> Vec<MoveReq> {
        let mut v: Vec<(usize, u64)> = pages.iter().filter_map(|&p| self.locate(p)).collect();
        v.sort_unstable();
        v.dedup();
        let mut out: Vec<MoveReq> = Vec::new();
        for (b, p) in v {
            match out.last_mut() {
                Some(m) if m.obj == b && m.first_page + m.pages == p => m.pages += 1,
                _ => out.push(MoveReq {
                    obj: b,
                    first_page: p,
                    pages: 1,
                    to,
                }),
            }
        }
        out
    }
}
