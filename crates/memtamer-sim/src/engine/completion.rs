//! The write-completion point: where a PM write completes for the core.
//!
//! One swappable part, chosen by name from `platform.pm.write_completion`:
//! `wpq` (the iMC's WPQ accepts it: the ADR persistence point, as for DRAM),
//! `ddrt` (its transfer over DDR-T into the DIMM ends) or `xpbuffer` (the
//! DIMM's XPBuffer takes it). The channel asks this part at each stage a
//! write passes and sends the completion where it answers yes; nothing else
//! in the engine looks at the setting.

use crate::config::PmWriteCompletion;

/// The stages a PM write passes on its way into the DIMM, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum WriteStage {
    /// The channel's WPQ accepted it.
    WpqAccept,
    /// Its DDR-T transfer into the DIMM's input queue ended.
    DdrtTransfer,
    /// The DIMM's XPBuffer took it.
    XpBufferAccept,
}

/// The write-completion part of one engine (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct WriteCompletion(PmWriteCompletion);

impl WriteCompletion {
    /// The part named by the platform.
    pub(super) fn new(point: PmWriteCompletion) -> WriteCompletion {
        WriteCompletion(point)
    }

    /// Whether a PM write completes for the core when it passes `stage`
    /// (true for exactly one stage).
    #[inline(always)]
    pub(super) fn completes_at(self, stage: WriteStage) -> bool {
        matches!(
            (self.0, stage),
            (PmWriteCompletion::Wpq, WriteStage::WpqAccept)
                | (PmWriteCompletion::Ddrt, WriteStage::DdrtTransfer)
                | (PmWriteCompletion::Xpbuffer, WriteStage::XpBufferAccept)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_point_completes_a_write_at_exactly_its_stage() {
        let stages = [
            WriteStage::WpqAccept,
            WriteStage::DdrtTransfer,
            WriteStage::XpBufferAccept,
        ];
        let points = [
            PmWriteCompletion::Wpq,
            PmWriteCompletion::Ddrt,
            PmWriteCompletion::Xpbuffer,
        ];
        for (i, p) in points.into_iter().enumerate() {
            let c = WriteCompletion::new(p);
            let yes: Vec<usize> = (0..3).filter(|&k| c.completes_at(stages[k])).collect();
            assert_eq!(yes, vec![i], "{p:?}");
        }
    }
}
