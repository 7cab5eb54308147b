//! The channel bus scheduler: whether the next transfer on a channel's data
//! bus is a write ahead of ready reads, and which write.
//!
//! One swappable part, chosen by name from `platform.memory.bus_scheduler`:
//! `watermark` (the default: reads first until the WPQ holds
//! `write_drain_high` entries, then writes until it is down to
//! `write_drain_low`, the write-drain mode of memory controllers) or
//! `read-first` (an ablation: a write goes only when no read is ready, so
//! the WPQ drains only in read gaps and back-pressure reaches the cores
//! sooner) or `drain-blocks-reads` (the watermarks read strictly: during a
//! drain no read command is issued and no read data moves, even while the
//! only writes left wait for a DDR-T credit; Stuecheli et al., ISCA'10,
//! and Chatterjee et al., HPCA'12, describe write drains that reads wait
//! out). All send the oldest write that may go: DRAM writes always, PM
//! writes only while the DIMM has a DDR-T credit.

use crate::config::{BusSchedulerKind, MemoryParams};

/// The bus-scheduler part of one engine (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum BusScheduler {
    /// Write-drain mode between two WPQ watermarks.
    Watermark {
        /// WPQ occupancy at which the channel switches to writes.
        high: u32,
        /// WPQ occupancy at which it returns to reads.
        low: u32,
    },
    /// Reads always first.
    ReadFirst,
    /// `Watermark`, with reads held for the whole drain.
    DrainBlocksReads {
        /// WPQ occupancy at which the channel switches to writes.
        high: u32,
        /// WPQ occupancy at which it returns to reads.
        low: u32,
    },
}

impl BusScheduler {
    /// The part named by the platform.
    pub(super) fn new(p: &MemoryParams) -> BusScheduler {
        match p.bus_scheduler {
            BusSchedulerKind::Watermark => BusScheduler::Watermark {
                high: p.write_drain_high,
                low: p.write_drain_low,
            },
            BusSchedulerKind::ReadFirst => BusScheduler::ReadFirst,
            BusSchedulerKind::DrainBlocksReads => BusScheduler::DrainBlocksReads {
                high: p.write_drain_high,
                low: p.write_drain_low,
            },
        }
    }

    /// Whether reads wait while `write_mode` is on: no read command to a
    /// DIMM, no read data on the bus (only `drain-blocks-reads`).
    #[inline(always)]
    pub(super) fn blocks_reads(self, write_mode: bool) -> bool {
        write_mode && matches!(self, BusScheduler::DrainBlocksReads { .. })
    }

    /// Updates a channel's write mode from its WPQ occupancy and returns
    /// whether writes go ahead of ready reads now.
    #[inline(always)]
    pub(super) fn writes_first(self, write_mode: &mut bool, wpq_used: u32) -> bool {
        match self {
            BusScheduler::Watermark { high, low }
            | BusScheduler::DrainBlocksReads { high, low } => {
                if wpq_used >= high {
                    *write_mode = true;
                } else if wpq_used <= low {
                    *write_mode = false;
                }
                *write_mode
            }
            BusScheduler::ReadFirst => false,
        }
    }

    /// Of the oldest DRAM write and the oldest PM write that may go (their
    /// channel sequence numbers), which goes: `Some(true)` the PM one,
    /// `Some(false)` the DRAM one, `None` neither (none may go).
    #[inline(always)]
    pub(super) fn pick_write(self, dram: Option<u64>, pm: Option<u64>) -> Option<bool> {
        match (dram, pm) {
            (Some(d), Some(p)) => Some(p < d),
            (None, Some(_)) => Some(true),
            (Some(_), None) => Some(false),
            (None, None) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watermark_drains_between_its_marks_and_read_first_never_does() {
        let w = BusScheduler::Watermark { high: 8, low: 2 };
        let mut mode = false;
        let seq: Vec<bool> = [1, 5, 8, 5, 3, 2, 5]
            .into_iter()
            .map(|used| w.writes_first(&mut mode, used))
            .collect();
        assert_eq!(seq, [false, false, true, true, true, false, false]);
        let mut mode = true;
        assert!(!BusScheduler::ReadFirst.writes_first(&mut mode, 64));
        assert!(!BusScheduler::ReadFirst.blocks_reads(true));
        assert!(!w.blocks_reads(true));
    }

    #[test]
    fn a_strict_drain_holds_reads_only_while_it_lasts() {
        let s = BusScheduler::DrainBlocksReads { high: 8, low: 2 };
        let mut mode = false;
        assert!(!s.writes_first(&mut mode, 5));
        assert!(!s.blocks_reads(mode));
        assert!(s.writes_first(&mut mode, 8));
        assert!(s.blocks_reads(mode));
        assert!(s.writes_first(&mut mode, 3));
        assert!(s.blocks_reads(mode));
        assert!(!s.writes_first(&mut mode, 2));
        assert!(!s.blocks_reads(mode));
    }

    #[test]
    fn the_oldest_write_goes() {
        let b = BusScheduler::ReadFirst;
        assert_eq!(b.pick_write(Some(3), Some(7)), Some(false));
        assert_eq!(b.pick_write(Some(9), Some(7)), Some(true));
        assert_eq!(b.pick_write(None, Some(7)), Some(true));
        assert_eq!(b.pick_write(Some(3), None), Some(false));
        assert_eq!(b.pick_write(None, None), None);
    }
}
