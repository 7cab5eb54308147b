//! `memtamer bench tier`: what Unimem's profiling and decisions cost a
//! running program (issue 20: "runtime overhead of profiling + decisions
//! <= 3%, ratio in one run").
//!
//! The program is the CG kernel of `mpi/cg.c` (5-point Laplacian + 0.5 I in
//! CSR form, b = A·1, thesis Fig. 3.1's loop) written in Rust on eight
//! [`TierRuntime`] objects, one rank, with a phase boundary wherever the MPI
//! version calls `MPI_Allreduce` (that is where the interposer calls
//! [`Driver::boundary`]). Each round runs it twice, alternating the order:
//!
//! * **baseline**: the objects, no [`Driver`] (what `MEMTAMER_UNIMEM=0` runs);
//! * **unimem**: the same objects with the [`Driver`] the C ABI builds
//!   (sampler thread, protection-fault profiling of the first iteration,
//!   the decision, enforcement calls at every boundary).
//!
//! Two placements: `dram` (objects start in DRAM and fit the budget, so the
//! plan moves nothing: the ratio is the profiling + decision overhead the
//! Done-when line asks for) and `slow` (objects start in the slow tier; the
//! plan moves them into DRAM, so the ratio also carries the copies and what
//! they buy; on a host whose slow tier is DRAM, as here, they buy nothing).
//! The median of the per-round ratios is reported, with the solution's
//! residual checked in every run and the two modes' solutions compared bit
//! for bit (placement must never change a result).

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::driver::{Driver, DriverConfig, DriverStats};
use crate::{Tier, TierConfig, TierError, TierRuntime};

/// Knobs of the benchmark.
#[derive(Clone, Debug, PartialEq)]
pub struct TierBenchOptions {
    /// Grid columns (the matrix has `nx * ny` rows).
    pub nx: usize,
    /// Grid rows.
    pub ny: usize,
    /// CG iterations per run.
    pub iters: usize,
    /// Alternating rounds; the median ratio is reported.
    pub rounds: usize,
    /// Sampler period (the C ABI's default `MEMTAMER_TIER_TICK_US` = 1000).
    pub tick: Duration,
    /// Pages armed per object per tick (`MEMTAMER_TIER_PAGES`, 16).
    pub pages_per_tick: usize,
    /// The sampler's clock (`MEMTAMER_TIER_PACE`; [`crate::sampling`]).
    pub pace: crate::sampling::Pace,
}

impl Default for TierBenchOptions {
    fn default() -> Self {
        TierBenchOptions {
            nx: 512,
            ny: 512,
            iters: 200,
            rounds: 7,
            tick: Duration::from_millis(1),
            pages_per_tick: 16,
            pace: crate::sampling::Pace::Cpu,
        }
    }
}

/// One placement's result.
#[derive(Clone, Debug, PartialEq)]
pub struct TierBenchRow {
    /// `dram` or `slow`: where the objects start.
    pub start: &'static str,
    /// Median seconds per run without the driver.
    pub baseline_s: f64,
    /// Median seconds per run with it.
    pub unimem_s: f64,
    /// Median over rounds of unimem / baseline (same round).
    pub ratio: f64,
    /// The driver's own account of its overhead in the median round.
    pub stats: DriverStats,
    /// Bytes the helper moved in the median round.
    pub bytes_moved: u64,
    /// Relative residual of the solution (every run checked).
    pub rel_residual: f64,
}

/// What went wrong.
#[derive(Debug, thiserror::Error)]
pub enum TierBenchError {
    /// The tier runtime refused something.
    #[error(transparent)]
    Tier(#[from] TierError),
    /// Bad options.
    #[error("invalid tier bench options: {0}")]
    Options(String),
    /// A run did not solve the system, or the two modes disagreed.
    #[error("tier bench verification failed: {0}")]
    Verify(String),
}

/// The driver configuration the C ABI uses by default, with the bench's
/// sampler settings and iteration count.
fn driver_config(o: &TierBenchOptions) -> DriverConfig {
    DriverConfig {
        tick: o.tick,
        pages_per_tick: o.pages_per_tick,
        pace: o.pace,
        iterations: o.iters as f64,
        ..DriverConfig::default()
    }
}

/// The eight objects of the kernel (as in `mpi/cg.c`).
struct Objects {
    rt: Arc<TierRuntime>,
    ptrs: Vec<*mut u8>,
    n: usize,
    nnz: usize,
}

impl Objects {
    fn new(rt: Arc<TierRuntime>, nx: usize, ny: usize, tier: Tier) -> Result<Objects, TierError> {
        let n = nx * ny;
        let nnz = 5 * n;
        let sizes = [
            ("a", nnz * 8),
            ("col", nnz * 8),
            ("rowptr", (n + 1) * 8),
            ("x", n * 8),
            ("b", n * 8),
            ("r", n * 8),
            ("p", (n + 2 * nx) * 8),
            ("q", n * 8),
        ];
        let ptrs = rt.alloc_all(&sizes, tier)?;
        Ok(Objects { rt, ptrs, n, nnz })
    }

    /// Object `i` as a slice of `len` elements.
    ///
    /// # Safety
    /// `i`'s object holds at least `len` `T`s and no other live slice of
    /// it is used while this one is.
    #[allow(clippy::mut_from_ref)]
    unsafe fn slice<T>(&self, i: usize, len: usize) -> &mut [T] {
        std::slice::from_raw_parts_mut(self.ptrs[i] as *mut T, len)
    }
}

impl Drop for Objects {
    fn drop(&mut self) {
        for p in &self.ptrs {
            let _ = self.rt.free(*p);
        }
    }
}

/// One CG solve; returns (seconds, relative residual, x).
fn solve(
    o: &Objects,
    nx: usize,
    iters: usize,
    mut drv: Option<&mut Driver>,
) -> (f64, f64, Vec<f64>) {
    let (n, nnz) = (o.n, o.nnz);
    // SAFETY: sizes as allocated in Objects::new; each object is one slice.
    let (a, col, rowptr, x, b, r, p, q) = unsafe {
        (
            o.slice::<f64>(0, nnz),
            o.slice::<usize>(1, nnz),
            o.slice::<usize>(2, n + 1),
            o.slice::<f64>(3, n),
            o.slice::<f64>(4, n),
            o.slice::<f64>(5, n),
            o.slice::<f64>(6, n + 2 * nx),
            o.slice::<f64>(7, n),
        )
    };
    // p has nx ghost entries on each side (the halo of the MPI version):
    // column j of the matrix refers to p[j + nx]
    let t0 = Instant::now();
    let mut k = 0;
    for (i, start) in rowptr.iter_mut().take(n).enumerate() {
        *start = k;
        let (gx, gy) = (i % nx, i / nx);
        let mut diag = 0.5;
        for (dx, dy) in [(0i64, -1i64), (-1, 0), (1, 0), (0, 1)] {
            let (xx, yy) = (gx as i64 + dx, gy as i64 + dy);
            diag += 1.0;
            if xx < 0 || xx >= nx as i64 || yy < 0 || yy >= (n / nx) as i64 {
                continue; // Dirichlet boundary: no neighbour entry
            }
            a[k] = -1.0;
            col[k] = (yy as usize) * nx + xx as usize + nx;
            k += 1;
        }
        a[k] = diag;
        col[k] = i + nx;
        k += 1;
    }
    rowptr[n] = k;
    // b = A·1
    for (i, bi) in b.iter_mut().enumerate() {
        *bi = a[rowptr[i]..rowptr[i + 1]].iter().sum();
    }
    x.fill(0.0);
    r.copy_from_slice(b);
    p.fill(0.0);
    p[nx..nx + n].copy_from_slice(&r[..n]);
    let mut rr: f64 = r.iter().map(|v| v * v).sum();
    let rr0 = rr;
    for _ in 0..iters {
        if let Some(d) = drv.as_deref_mut() {
            d.iteration();
        }
        let mut pq = 0.0;
        for i in 0..n {
            let mut s = 0.0;
            for j in rowptr[i]..rowptr[i + 1] {
                s += a[j] * p[col[j]];
            }
            q[i] = s;
            pq += p[i + nx] * s;
        }
        if let Some(d) = drv.as_deref_mut() {
            d.boundary(); // MPI_Allreduce(pq)
        }
        let alpha = rr / pq;
        let mut rr_new = 0.0;
        for i in 0..n {
            x[i] += alpha * p[i + nx];
            r[i] -= alpha * q[i];
            rr_new += r[i] * r[i];
        }
        if let Some(d) = drv.as_deref_mut() {
            d.boundary(); // MPI_Allreduce(rr)
        }
        let beta = rr_new / rr;
        rr = rr_new;
        for i in 0..n {
            p[i + nx] = r[i] + beta * p[i + nx];
        }
    }
    if let Some(d) = drv {
        d.finish();
    }
    let secs = t0.elapsed().as_secs_f64();
    (secs, (rr / rr0).sqrt(), x.to_vec())
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Twice the bytes of the eight objects of an `nx` x `ny` grid (the DRAM
/// budget of one run), or None when it overflows a `usize`.
fn footprint(nx: usize, ny: usize) -> Option<usize> {
    let n = nx.checked_mul(ny)?;
    // a, col (5 n each, 8 B) + rowptr (n + 1) + x, b, r, q (n) + p (n + 2 nx)
    let elems = n
        .checked_mul(10)?
        .checked_add(n.checked_add(1)?)?
        .checked_add(n.checked_mul(5)?)?
        .checked_add(nx.checked_mul(2)?)?;
    elems.checked_mul(8)?.checked_mul(2)
}

/// One run: a fresh runtime (its own helper thread), the objects in
/// `start`, the solve with or without the driver.
fn run_once(
    o: &TierBenchOptions,
    start: Tier,
    with_driver: bool,
) -> Result<(f64, f64, Vec<f64>, DriverStats, u64), TierBenchError> {
    let bytes = footprint(o.nx, o.ny)
        .ok_or_else(|| TierBenchError::Options(format!("{}x{} grid too large", o.nx, o.ny)))?;
    let rt = Arc::new(TierRuntime::new(TierConfig::detect(bytes)?)?);
    let objs = Objects::new(rt.clone(), o.nx, o.ny, start)?;
    let mut drv = with_driver.then(|| Driver::new(rt.clone(), driver_config(o)));
    let (secs, res, x) = solve(&objs, o.nx, o.iters, drv.as_mut());
    let stats = drv.map(|d| d.stats()).unwrap_or_default();
    let moved = rt.stats().bytes_moved;
    drop(objs);
    Ok((secs, res, x, stats, moved))
}

/// Runs both placements; `rounds` alternating pairs each.
pub fn run(o: &TierBenchOptions) -> Result<Vec<TierBenchRow>, TierBenchError> {
    if o.nx < 4 || o.ny < 4 || o.iters == 0 || o.rounds == 0 {
        return Err(TierBenchError::Options(format!(
            "need nx, ny >= 4, iters >= 1, rounds >= 1 (got {}x{}, {} iterations, {} rounds)",
            o.nx, o.ny, o.iters, o.rounds
        )));
    }
    // nx * ny and the objects' bytes wrapped silently in release builds:
    // `--nx 1024 --ny 18014398509481985` ran a 1024-point grid under the
    // name of a huge one
    if footprint(o.nx, o.ny).is_none() {
        return Err(TierBenchError::Options(format!(
            "a {}x{} grid's objects do not fit in the address space",
            o.nx, o.ny
        )));
    }
    let mut rows = Vec::new();
    for (name, tier) in [("dram", Tier::Dram), ("slow", Tier::Slow)] {
        let (mut base, mut uni, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        let mut per_round = Vec::new();
        let mut worst_res: f64 = 0.0;
        for round in 0..o.rounds {
            // alternate the order so that neither mode always runs on a
            // warmer machine
            let order = if round % 2 == 0 {
                [false, true]
            } else {
                [true, false]
            };
            let mut got = [None, None];
            for with in order {
                got[usize::from(with)] = Some(run_once(o, tier, with)?);
            }
            let (Some(b), Some(u)) = (got[0].take(), got[1].take()) else {
                return Err(TierBenchError::Verify("a run produced nothing".into()));
            };
            for (mode, res) in [("baseline", b.1), ("unimem", u.1)] {
                if !res.is_finite() || res > 1e-3 {
                    return Err(TierBenchError::Verify(format!(
                        "{name}/{mode}: relative residual {res:e} after {} iterations",
                        o.iters
                    )));
                }
            }
            if b.2 != u.2 {
                return Err(TierBenchError::Verify(format!(
                    "{name}: the solution with the driver differs from the one without"
                )));
            }
            worst_res = worst_res.max(b.1).max(u.1);
            base.push(b.0);
            uni.push(u.0);
            ratios.push(u.0 / b.0);
            per_round.push((u.0 / b.0, u.3, u.4));
        }
        let ratio = median(&mut ratios);
        let (_, stats, moved) = per_round
            .iter()
            .min_by(|x, y| (x.0 - ratio).abs().total_cmp(&(y.0 - ratio).abs()))
            .cloned()
            .unwrap_or((ratio, DriverStats::default(), 0));
        rows.push(TierBenchRow {
            start: name,
            baseline_s: median(&mut base),
            unimem_s: median(&mut uni),
            ratio,
            stats,
            bytes_moved: moved,
            rel_residual: worst_res,
        });
    }
    Ok(rows)
}

/// The table `memtamer bench tier` prints.
pub fn render(o: &TierBenchOptions, rows: &[TierBenchRow]) -> String {
    let mut s = format!(
        "memtamer-tier bench: CG ({}x{} grid, {} iterations, 8 objects, {} alternating rounds; sampler {} us, {} pages/object/tick)\n",
        o.nx, o.ny, o.iters, o.rounds, o.tick.as_micros(), o.pages_per_tick
    );
    s.push_str("start  baseline s  unimem s   ratio  overhead s  boundaries  phases  decisions  moves  MB moved  residual\n");
    for r in rows {
        s.push_str(&format!(
            "{:<5} {:>11.4} {:>9.4} {:>7.4} {:>11.4} {:>11} {:>7} {:>10} {:>6} {:>9.1} {:>9.1e}\n",
            r.start,
            r.baseline_s,
            r.unimem_s,
            r.ratio,
            r.stats.overhead_s,
            r.stats.boundaries,
            r.stats.phases,
            r.stats.decisions,
            r.stats.moves_requested,
            r.bytes_moved as f64 / 1e6,
            r.rel_residual
        ));
    }
    s.push_str("ratio: median over rounds of unimem/baseline seconds in the same round (dram: objects start in DRAM and fit the budget, so the ratio is profiling + decisions + enforcement calls; slow: they start in the slow tier and are moved, copies included)\n");
    s.push_str("overhead s: the driver's own account (profiling, decisions, enforcement on the application thread, waits excluded) in the median round; every run's solution is checked and the two modes' solutions are equal bit for bit\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_run_verifies_and_reports_both_placements() {
        let o = TierBenchOptions {
            nx: 32,
            ny: 32,
            iters: 30,
            rounds: 1,
            ..TierBenchOptions::default()
        };
        let rows = run(&o).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].start, "dram");
        for r in &rows {
            assert!(r.rel_residual < 1e-3, "{r:?}");
            assert!(r.ratio > 0.0 && r.ratio.is_finite());
            // one boundary per Allreduce (2 per iteration)
            assert_eq!(r.stats.boundaries, 2 * o.iters as u64);
            // decided: a run this short (30 iterations of microseconds)
            // may end before the decision thread does
            assert!(r.stats.decisions + r.stats.decisions_dropped >= 1, "{r:?}");
        }
        let t = render(&o, &rows);
        assert!(t.contains("dram") && t.contains("slow"), "{t}");
    }

    #[test]
    fn bad_options_are_refused() {
        let o = TierBenchOptions {
            rounds: 0,
            ..TierBenchOptions::default()
        };
        assert!(matches!(run(&o), Err(TierBenchError::Options(_))));
    }

    /// `--nx 1024 --ny 18014398509481985`: nx * ny wraps to 1024 in a
    /// release build, so the old check passed and a 1024-point grid ran
    /// (failing its residual check) under the huge grid's name.
    #[test]
    fn a_grid_whose_size_overflows_is_refused() {
        let o = TierBenchOptions {
            nx: 1024,
            ny: (usize::MAX / 1024) + 2,
            iters: 1,
            rounds: 1,
            ..TierBenchOptions::default()
        };
        assert_eq!(o.nx.wrapping_mul(o.ny), 1024);
        match run(&o) {
            Err(TierBenchError::Options(m)) => assert!(m.contains("address space"), "{m}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(footprint(4, 4), Some((10 * 16 + 17 + 5 * 16 + 8) * 16));
        assert_eq!(footprint(usize::MAX, 2), None);
    }
}
