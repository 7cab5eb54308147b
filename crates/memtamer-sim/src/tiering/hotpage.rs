//! A hot-page policy in the style of Linux memory tiering with TPP (Maruf
//! et al., ASPLOS'23): phase-oblivious, time-driven, per page. Every scan
//! period it looks at which pages were touched (NUMA hinting faults see a
//! page's first touch in a period); a slow-tier page touched in two
//! consecutive periods is "active" and promoted (TPP's two-touch filter),
//! hottest first; when DRAM has no room, DRAM pages untouched in the period
//! (inactive) are demoted first (TPP's proactive demotion). At most
//! `max_pages` move per scan (the kernel's promotion rate limit), and a new
//! batch waits until the previous one is done. Starts from first-touch
//! (Linux's default allocation), as TPP does.

use super::baseline::Fixed;
use super::{MoveReq, PhaseObs, PhasePolicy, PhaseStart, SpaceView, Tier, PAGE};
use crate::config::phased::PhasedProgram;

/// One rank's hot-page policy.
#[derive(Clone, Debug)]
pub struct HotPage {
    first_touch: Fixed,
    scan: f64,
    max_pages: u64,
    next_scan: f64,
    /// Pages touched in the previous period.
    prev: Vec<Vec<bool>>,
    promoted: u64,
    demoted: u64,
}

impl HotPage {
    /// A policy scanning every `scan` seconds.
    pub fn new(prog: &PhasedProgram, capacity: u64, scan: f64, max_pages: u64) -> HotPage {
        HotPage {
            first_touch: Fixed::first_touch(prog, capacity),
            scan,
            max_pages,
            next_scan: scan,
            prev: Vec::new(),
            promoted: 0,
            demoted: 0,
        }
    }

    /// One scan: the moves for the heat seen since the last one.
    fn scan_moves(&mut self, heat: &[Vec<u32>], v: &dyn SpaceView) -> Vec<MoveReq> {
        let mut hot: Vec<(u32, usize, u64)> = Vec::new();
        let mut cold: Vec<(usize, u64)> = Vec::new();
        for (o, pages) in heat.iter().enumerate() {
            for (p, &h) in pages.iter().enumerate() {
                let p64 = p as u64;
                let was = self
                    .prev
                    .get(o)
                    .and_then(|v| v.get(p))
                    .copied()
                    .unwrap_or(false);
                match v.page_tier(o, p64) {
                    Tier::Slow if h > 0 && was => hot.push((h, o, p64)),
                    Tier::Dram if h == 0 => cold.push((o, p64)),
                    _ => {}
                }
            }
        }
        hot.sort_by_key(|&(h, o, p)| (std::cmp::Reverse(h), o, p));
        let mut free = v.capacity().saturating_sub(v.dram_bytes()) / PAGE;
        let mut demote = Vec::new();
        let mut promote = Vec::new();
        let mut cold = cold.into_iter();
        for (_, o, p) in hot {
            if (promote.len() + demote.len()) as u64 >= self.max_pages {
                break;
            }
            if free == 0 {
                match cold.next() {
                    Some((co, cp)) => {
                        demote.push(MoveReq {
                            obj: co,
                            first_page: cp,
                            pages: 1,
                            to: Tier::Slow,
                        });
                        free += 1;
                    }
                    None => break,
                }
            }
            free -= 1;
            promote.push(MoveReq {
                obj: o,
                first_page: p,
                pages: 1,
                to: Tier::Dram,
            });
        }
        self.promoted += promote.len() as u64;
        self.demoted += demote.len() as u64;
        // demotions first: the helper's FIFO frees DRAM before filling it
        demote.extend(promote);
        demote
    }
}

impl PhasePolicy for HotPage {
    fn initial(&mut self) -> Vec<u64> {
        self.first_touch.initial()
    }

    fn phase_start(&mut self, _iter: u32, _phase: usize, _v: &dyn SpaceView) -> PhaseStart {
        PhaseStart::default()
    }

    fn phase_end(&mut self, _iter: u32, _phase: usize, _obs: &PhaseObs, _v: &dyn SpaceView) {}

    fn tick(&mut self, now: f64, heat: &mut [Vec<u32>], v: &dyn SpaceView) -> Vec<MoveReq> {
        if now < self.next_scan {
            return Vec::new();
        }
        self.next_scan = now + self.scan;
        let moves = if v.idle() {
            self.scan_moves(heat, v)
        } else {
            Vec::new()
        };
        self.prev = heat
            .iter()
            .map(|p| p.iter().map(|&h| h > 0).collect())
            .collect();
        for p in heat.iter_mut() {
            p.iter_mut().for_each(|h| *h = 0);
        }
        moves
    }

    fn wants_heat(&self) -> bool {
        true
    }

    fn summary(&self) -> String {
        format!(
            "hot-page: {} pages promoted, {} demoted",
            self.promoted, self.demoted
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{program, View};
    use super::*;

    #[test]
    fn two_touch_promotion_with_demotion_of_cold_pages() {
        let prog = program(&[2, 2], &[&[(0, 10, false), (1, 10, false)]]);
        let mut pol = HotPage::new(&prog, 2 * PAGE, 1e-3, 8);
        assert_eq!(pol.initial(), vec![2, 0]);
        let v = View {
            pages: vec![vec![Tier::Dram; 2], vec![Tier::Slow; 2]],
            capacity: 2 * PAGE,
            busy: false,
        };
        // period 1: object 1's pages touched once: not yet promoted
        let mut heat = vec![vec![5, 5], vec![3, 0]];
        assert!(pol.tick(0.5e-3, &mut heat, &v).is_empty()); // before the first scan
        assert!(pol.tick(1e-3, &mut heat, &v).is_empty());
        assert_eq!(heat, vec![vec![0, 0], vec![0, 0]]);
        // period 2: object 1 page 0 again (two touches); object 0 page 1 cold
        let mut heat = vec![vec![5, 0], vec![4, 9]];
        let m = pol.tick(2.1e-3, &mut heat, &v);
        assert_eq!(
            m,
            vec![
                MoveReq {
                    obj: 0,
                    first_page: 1,
                    pages: 1,
                    to: Tier::Slow
                },
                MoveReq {
                    obj: 1,
                    first_page: 0,
                    pages: 1,
                    to: Tier::Dram
                }
            ]
        );
        // a busy helper: no new batch
        let busy = View { busy: true, ..v };
        let mut heat = vec![vec![5, 0], vec![4, 9]];
        assert!(pol.tick(5e-3, &mut heat, &busy).is_empty());
    }
}
