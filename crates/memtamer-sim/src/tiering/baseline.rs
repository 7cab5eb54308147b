//! Placements decided before the run and never changed: DRAM-only,
//! slow-only, first-touch, and a static offline-profiled placement in the
//! style of X-Mem (Dulloor et al., EuroSys'16; the thesis's §3.6 baseline:
//! offline Pin profiling, no movement cost, uniform access within an object).

use super::{page_sizes, static_lines, PhaseObs, PhasePolicy, PhaseStart, SpaceView, Tier, PAGE};
use crate::config::phased::PhasedProgram;
use crate::config::Pattern;
use memtamer_core::unimem::knapsack::{granule_for, solve, Item};
use memtamer_core::unimem::model::{benefit_bw, benefit_lat, Platform};

/// A placement fixed at allocation.
#[derive(Clone, Debug, PartialEq)]
pub struct Fixed {
    /// Leading DRAM pages per object.
    dram_pages: Vec<u64>,
    what: String,
}

impl Fixed {
    /// Every object in `tier` (DRAM-only ignores the capacity: it is the
    /// machine with enough DRAM).
    pub fn all(prog: &PhasedProgram, tier: Tier) -> Fixed {
        let dram_pages = match tier {
            Tier::Dram => page_sizes(prog).iter().map(|s| s / PAGE).collect(),
            Tier::Slow => vec![0; prog.objects.len()],
        };
        Fixed {
            dram_pages,
            what: format!("all in {}", tier.name()),
        }
    }

    /// The objects named in `dram` wholly in DRAM, the others in the slow
    /// tier (names not in the program are refused earlier, by
    /// `PlacementSpec::validate_for`).
    pub fn pinned(prog: &PhasedProgram, dram: &[String]) -> Fixed {
        let dram_pages = page_sizes(prog)
            .iter()
            .zip(&prog.objects)
            .map(|(s, o)| if dram.contains(&o.name) { s / PAGE } else { 0 })
            .collect();
        Fixed {
            dram_pages,
            what: format!("pinned DRAM set {{{}}}", dram.join(",")),
        }
    }

    /// Pages in first-touch order fill DRAM until it is full: objects in the
    /// order the first iteration touches them (phase order, then access
    /// order), each object's pages from its start; the object that does not
    /// fit any more gets its leading pages.
    pub fn first_touch(prog: &PhasedProgram, capacity: u64) -> Fixed {
        let mut left = capacity / PAGE;
        let mut dram_pages = vec![0; prog.objects.len()];
        let mut seen = vec![false; prog.objects.len()];
        let sizes = page_sizes(prog);
        for ph in &prog.phases {
            for a in &ph.access {
                if let Some(o) = prog.object_index(&a.object) {
                    if !seen[o] {
                        seen[o] = true;
                        let n = (sizes[o] / PAGE).min(left);
                        dram_pages[o] = n;
                        left -= n;
                    }
                }
            }
        }
        Fixed {
            dram_pages,
            what: format!("first touch, {} KiB in DRAM", (capacity / PAGE - left) * 4),
        }
    }

    /// X-Mem-like: each object's benefit over the whole run from the
    /// offline profile (every access, all iterations), classified by its
    /// pattern (streaming: the bandwidth benefit of Eq. 3.2; random: the
    /// latency one), with no movement cost; a 0/1 knapsack by size under
    /// the capacity. Objects chosen are allocated in DRAM.
    pub fn xmem(prog: &PhasedProgram, capacity: u64, p: &Platform) -> Fixed {
        let sizes = page_sizes(prog);
        let lines = static_lines(prog);
        let items: Vec<Item> = (0..sizes.len())
            .map(|o| {
                let v: f64 = lines
                    .iter()
                    .map(|ph| {
                        let (n, pat) = ph[o];
                        match pat {
                            Pattern::Rand => benefit_lat(n as f64, p),
                            _ => benefit_bw(n as f64, p),
                        }
                    })
                    .sum();
                Item {
                    value: v * prog.iterations as f64,
                    size: sizes[o],
                }
            })
            .collect();
        let chosen = solve(&items, capacity, granule_for(capacity, 4096));
        let mut dram_pages = vec![0; sizes.len()];
        for &o in &chosen {
            dram_pages[o] = sizes[o] / PAGE;
        }
        let names: Vec<&str> = chosen
            .iter()
            .map(|&o| prog.objects[o].name.as_str())
            .collect();
        Fixed {
            dram_pages,
            what: format!("static DRAM set {{{}}}", names.join(",")),
        }
    }
}

impl PhasePolicy for Fixed {
    fn initial(&mut self) -> Vec<u64> {
        self.dram_pages.clone()
    }

    fn phase_start(&mut self, _iter: u32, _phase: usize, _v: &dyn SpaceView) -> PhaseStart {
        PhaseStart::default()
    }

    fn phase_end(&mut self, _iter: u32, _phase: usize, _obs: &PhaseObs, _v: &dyn SpaceView) {}

    fn summary(&self) -> String {
        self.what.clone()
    }
}

/// Everything that fits promoted at the first phase start, waited for
/// (or, [`Eager::evicting`], everything that fits starts in DRAM and is
/// evicted then): one copy direction timed alone.
#[derive(Clone, Debug, PartialEq)]
pub struct Eager {
    sizes: Vec<u64>,
    capacity: u64,
    started: bool,
    to: Tier,
}

impl Eager {
    /// The policy for `prog` with `capacity` bytes of DRAM.
    pub fn new(prog: &PhasedProgram, capacity: u64) -> Eager {
        Eager {
            sizes: page_sizes(prog),
            capacity,
            started: false,
            to: Tier::Dram,
        }
    }

    /// The eviction counterpart: what fits starts in DRAM and moves to
    /// the slow tier at the first phase start.
    pub fn evicting(prog: &PhasedProgram, capacity: u64) -> Eager {
        Eager {
            to: Tier::Slow,
            ..Eager::new(prog, capacity)
        }
    }

    /// The objects that fit, in object order.
    fn fitting(&self) -> Vec<usize> {
        let mut used = 0;
        let mut out = Vec::new();
        for (o, &s) in self.sizes.iter().enumerate() {
            if used + s <= self.capacity {
                used += s;
                out.push(o);
            }
        }
        out
    }
}

impl PhasePolicy for Eager {
    fn initial(&mut self) -> Vec<u64> {
        let mut out = vec![0; self.sizes.len()];
        if self.to == Tier::Slow {
            for o in self.fitting() {
                out[o] = self.sizes[o] / PAGE;
            }
        }
        out
    }

    fn phase_start(&mut self, _iter: u32, _phase: usize, _v: &dyn SpaceView) -> PhaseStart {
        if std::mem::replace(&mut self.started, true) {
            return PhaseStart::default();
        }
        let mut out = PhaseStart::default();
        for o in self.fitting() {
            out.moves.push(super::MoveReq::whole(o, self.to));
            out.wait.push(o);
        }
        out
    }

    fn phase_end(&mut self, _iter: u32, _phase: usize, _obs: &PhaseObs, _v: &dyn SpaceView) {}

    fn summary(&self) -> String {
        match self.to {
            Tier::Dram => "eager: promote what fits at start".into(),
            Tier::Slow => "eager-evict: evict what was in DRAM at start".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::program;
    use super::*;

    #[test]
    fn first_touch_fills_in_touch_order() {
        // object 2 is touched first, then 0; 1 never
        let prog = program(&[4, 4, 3], &[&[(2, 10, false)], &[(0, 10, false)]]);
        let f = Fixed::first_touch(&prog, 5 * PAGE);
        assert_eq!(f.dram_pages, vec![2, 0, 3]);
        assert_eq!(Fixed::all(&prog, Tier::Dram).dram_pages, vec![4, 4, 3]);
        assert_eq!(Fixed::all(&prog, Tier::Slow).dram_pages, vec![0, 0, 0]);
    }

    #[test]
    fn eager_promotes_what_fits_once() {
        let prog = program(&[4, 4, 3], &[&[(2, 10, false)]]);
        let mut e = Eager::new(&prog, 7 * PAGE);
        let v = super::super::test_support::View::default();
        let s = e.phase_start(0, 0, &v);
        assert_eq!(s.wait, vec![0, 2]);
        assert_eq!(s.moves.len(), 2);
        assert_eq!(e.phase_start(0, 0, &v), PhaseStart::default());
        assert_eq!(e.initial(), vec![0, 0, 0]);
        // the eviction counterpart starts with them in DRAM and evicts them
        let mut e = Eager::evicting(&prog, 7 * PAGE);
        assert_eq!(e.initial(), vec![4, 0, 3]);
        let s = e.phase_start(0, 0, &v);
        assert_eq!(s.wait, vec![0, 2]);
        assert!(s.moves.iter().all(|m| m.to == Tier::Slow), "{s:?}");
        assert_eq!(e.phase_start(0, 0, &v), PhaseStart::default());
    }

    #[test]
    fn xmem_prefers_dense_latency_bound_objects() {
        let p = Platform::emulated(10e9, 100e-9, 2.0, 4.0);
        // o0: 4 pages, 1000 random lines; o1: 4 pages, 1000 streamed lines;
        // o2: 2 pages, 10 streamed lines. DRAM for 4 pages.
        let prog = program(
            &[4, 4, 2],
            &[&[(0, 1000, true), (1, 1000, false)], &[(2, 10, false)]],
        );
        let f = Fixed::xmem(&prog, 4 * PAGE, &p);
        assert_eq!(f.dram_pages, vec![4, 0, 0]);
        // with room for 7 pages the small one joins (the DP's granule
        // rounds sizes up, so 6 pages exactly would not hold both)
        let f = Fixed::xmem(&prog, 7 * PAGE, &p);
        assert_eq!(f.dram_pages, vec![4, 0, 2]);
    }
}
