//! The task programs of the Tahoe evaluation (thesis Table 4.4), scaled
//! down so that one run simulates a few million cache lines. Sizes keep
//! the thesis's DRAM : data ratios ([`Bench::dram_ratio`]); the structure
//! (blocks, dependences, task types) follows the OmpSs/OpenMP programs and
//! this repository's clients (`crates/memtamer-tahoe/clients/*.c`).
//!
//! Compute per task is the kernel's floating-point operation count at
//! [`FLOPS_PER_NS`] (the thesis's E5-2630 v3: 2.4 GHz, 4-wide AVX2, one
//! vector op per cycle), spread evenly over the task's line accesses.
//! Memory passes are those of a cache-blocked kernel: every block is read
//! (and written) from main memory once per task unless stated otherwise.
//! These values were fixed before any policy was run; none is fitted.

use crate::workload::taskgraph::{Arg, Block, Free, Mode, Pattern, TaskDef, TaskGraph, IMPLICIT};

/// Double-precision operations per ns (2.4 GHz x 4 doubles per AVX2 op).
pub const FLOPS_PER_NS: f64 = 9.6;

/// A benchmark and the thesis's DRAM : data ratio for it (Table 4.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bench {
    /// Jacobi heat, 2D blocks (1:10): [`HEAT_BLOCKS`] x [`HEAT_BLOCKS`]
    /// blocks, [`HEAT_SWEEPS`] sweeps, from BSC's OmpSs heat.
    Heat,
    /// Recursive Strassen, two levels over 8 x 8 tiles (1:5).
    Strassen,
    /// 2D FFT: row FFTs, blocked transpose, row FFTs, transpose (1:15).
    Fft,
    /// Dense CG, row-blocked matrix-vector product and vector tasks (1:6).
    Cg,
    /// RandomAccess-like table updates (1:9).
    RandomAccess,
}

/// Every benchmark, in report order.
pub const ALL: [Bench; 5] = [
    Bench::Heat,
    Bench::Strassen,
    Bench::Fft,
    Bench::Cg,
    Bench::RandomAccess,
];

impl Bench {
    /// Name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Bench::Heat => "heat",
            Bench::Strassen => "strassen",
            Bench::Fft => "fft",
            Bench::Cg => "cg",
            Bench::RandomAccess => "randomaccess",
        }
    }

    /// Parses a name.
    pub fn parse(s: &str) -> Option<Bench> {
        ALL.into_iter().find(|b| b.name() == s)
    }

    /// Data bytes per DRAM byte (thesis Table 4.4 "size ratio").
    pub fn dram_ratio(self) -> u64 {
        match self {
            Bench::Heat => 10,
            Bench::Strassen => 5,
            Bench::Fft => 15,
            Bench::Cg => 6,
            Bench::RandomAccess => 9,
        }
    }

    /// The task graph.
    pub fn graph(self) -> TaskGraph {
        match self {
            Bench::Heat => heat(HEAT_BLOCKS, 128, HEAT_SWEEPS),
            Bench::Strassen => strassen(2, 8, 64),
            Bench::Fft => fft(1024, 32),
            Bench::Cg => cg(1024, 16, 8),
            Bench::RandomAccess => random_access(4 << 20, 128, 8, 2048),
        }
    }
}

/// Blocks per dimension of heat's grid: BSC's OmpSs heat (the "OmpSs
/// Examples and Exercises", github.com/bsc-pm/ompss-ee at edc3f13,
/// `04-mpi+ompss/heat/solver-mpi-ompss.c` line 4, `#define NB 8`; lines
/// 17-20 `bx = sizex/nbx`) splits the grid into NB x NB blocks whatever
/// its resolution, so at the thesis's 4096 x 4096 input (Table 4.4, also
/// that program's `test.dat` line 2) a block is 512 x 512 doubles (2 MiB).
/// The block size below (128) only scales the data to the simulator's
/// size at Table 4.4's 1:10; the block count is the source's.
pub const HEAT_BLOCKS: usize = 8;

/// Heat's Jacobi sweeps: the same program's input (`04-mpi+ompss/heat/
/// test.dat` line 1, `10 # iterations`, with line 2 `4096 # resolution`
/// and line 3 `0 # Algorithm 0=Jacobi`). The thesis states no count;
/// until 2026-11-26 the scenario ran 6 (docs/notebook/tahoe.md, "Block sizes from
/// the sources").
pub const HEAT_SWEEPS: u32 = 10;

/// Builds graphs: arrays of equal blocks, types by name, tasks.
struct Builder {
    g: TaskGraph,
    /// Parent of the tasks created now ([`TaskDef::parent`]).
    parent: u32,
    /// Spawning nodes so far (their ids are 1, 2, ...).
    nodes: u32,
}

impl Builder {
    fn new(name: &str, iterations: u32) -> Builder {
        Builder {
            g: TaskGraph {
                name: name.into(),
                arrays: Vec::new(),
                blocks: Vec::new(),
                types: Vec::new(),
                tasks: Vec::new(),
                iterations,
                task_touched: Vec::new(),
                frees: Vec::new(),
            },
            parent: IMPLICIT,
            nodes: 0,
        }
    }

    /// Enters a new spawning node (a task that creates tasks, e.g. a
    /// recursion step); returns the parent to restore with [`Builder::leave`].
    fn enter(&mut self) -> u32 {
        self.nodes += 1;
        std::mem::replace(&mut self.parent, self.nodes)
    }

    /// Leaves the current spawning node.
    fn leave(&mut self, outer: u32) {
        self.parent = outer;
    }

    /// An array of `n` blocks of `bytes`; returns its first block index.
    fn array(&mut self, name: &str, n: usize, bytes: u64) -> usize {
        let a = self.g.arrays.len();
        self.g.arrays.push(name.into());
        let first = self.g.blocks.len();
        self.g
            .blocks
            .extend((0..n).map(|_| Block { array: a, bytes }));
        first
    }

    fn ty(&mut self, name: &str) -> usize {
        match self.g.types.iter().position(|t| t == name) {
            Some(i) => i,
            None => {
                self.g.types.push(name.into());
                self.g.types.len() - 1
            }
        }
    }

    /// A task of type `ty` with `args` and `flops` of compute in all.
    fn task(&mut self, ty: &str, args: Vec<Arg>, flops: f64) {
        let ty = self.ty(ty);
        let lines: u64 = args.iter().map(|a| self.g.arg_lines(a)).sum();
        self.g.tasks.push(TaskDef {
            ty,
            args,
            compute_ns_per_line: flops / FLOPS_PER_NS / lines.max(1) as f64,
            parent: self.parent,
        });
    }
}

fn seq(block: usize, mode: Mode) -> Arg {
    Arg {
        block,
        mode,
        pattern: Pattern::Seq,
        passes: 1.0,
    }
}

/// Jacobi heat on an `nb` x `nb` grid of `bs` x `bs` double blocks, two
/// grids used alternately, `sweeps` sweeps. A block task reads its block
/// (5-point stencil, one pass), the facing row of its upper and lower
/// neighbours (one row: 1/bs of a pass), the facing column of its left and
/// right neighbours (one element per row: `bs` scattered lines), and
/// writes its block of the other grid. 5 flops per element.
pub fn heat(nb: usize, bs: u64, sweeps: u32) -> TaskGraph {
    let mut b = Builder::new("heat", sweeps);
    let bytes = bs * bs * 8;
    let grid = [
        b.array("grid0", nb * nb, bytes),
        b.array("grid1", nb * nb, bytes),
    ];
    let lines = (bytes / 64) as f64;
    for s in 0..sweeps as usize {
        let (src, dst) = (grid[s % 2], grid[(s + 1) % 2]);
        for i in 0..nb {
            for j in 0..nb {
                let at = |i: usize, j: usize| i * nb + j;
                let mut args = vec![seq(src + at(i, j), Mode::In)];
                let row = |blk| Arg {
                    block: blk,
                    mode: Mode::In,
                    pattern: Pattern::Seq,
                    passes: 1.0 / bs as f64,
                };
                let col = |blk| Arg {
                    block: blk,
                    mode: Mode::In,
                    pattern: Pattern::Rand,
                    passes: bs as f64 / lines,
                };
                if i > 0 {
                    args.push(row(src + at(i - 1, j)));
                }
                if i + 1 < nb {
                    args.push(row(src + at(i + 1, j)));
                }
                if j > 0 {
                    args.push(col(src + at(i, j - 1)));
                }
                if j + 1 < nb {
                    args.push(col(src + at(i, j + 1)));
                }
                args.push(seq(dst + at(i, j), Mode::Out));
                b.task("jacobi", args, 5.0 * (bs * bs) as f64);
            }
        }
    }
    b.g
}

/// A square matrix of tiles inside an array stored row-major `w` tiles
/// wide: the `n` x `n` tiles from (`r0`, `c0`).
#[derive(Clone, Copy, Debug)]
struct View {
    base: usize,
    w: usize,
    r0: usize,
    c0: usize,
    n: usize,
}

impl View {
    fn tile(self, i: usize, j: usize) -> usize {
        self.base + (self.r0 + i) * self.w + self.c0 + j
    }

    /// Quadrant k (0 = 11, 1 = 12, 2 = 21, 3 = 22).
    fn quad(self, k: usize) -> View {
        let h = self.n / 2;
        View {
            r0: self.r0 + (k / 2) * h,
            c0: self.c0 + (k % 2) * h,
            n: h,
            ..self
        }
    }
}

/// Recursive Strassen, as the BSC OmpSs version the thesis ran: C = A B
/// on matrices of `nt` x `nt` tiles of `ts` x `ts` doubles, `levels` levels
/// of recursion, tasks created depth first (each node: 10 sums into its own
/// temporaries S, the 7 products M recursively, then the 4 combines into C;
/// one task per tile). Below the last level a tiled classical product (one
/// task per tile triple, accumulating into the C tile: 2 ts^3 flops, one
/// pass per tile). Temporaries are produced just before they are consumed,
/// which is the program's reuse within a DRAM of a fraction of the data.
/// Array order: A, B, C, then the temporaries in creation order.
///
/// Parents ([`TaskDef::parent`]): every recursion node creates the tasks
/// of its step, and each of its 7 products is the node one level down, as
/// in KASTORS's Strassen with dependences
/// (`UFRGS-PPGC/kastors-benchmark` @ b6a842d,
/// `strassen/src/strassen-task-dep.c`, `OptimizedStrassenMultiply_par`:
/// under `Depth < cutoff_depth` the node creates its 8 sum tasks, 7
/// product tasks that each call the function again one level down, and 4
/// combine tasks; the root is called by the master thread) and BSC's
/// OmpSs-2 version (`rodarima/bench6` @ 4379745, `src/strassen/
/// strassen.c`: the 7 products as `#pragma oss task` calls of itself). So
/// a node's sums, combines and (at the last level) tile products are
/// siblings. The root node has an id of its own here (in KASTORS it is the
/// implicit task): only equality of parents matters.
pub fn strassen(levels: u32, nt: usize, ts: u64) -> TaskGraph {
    let mut b = Builder::new("strassen", 1);
    let bytes = ts * ts * 8;
    let full = |base| View {
        base,
        w: nt,
        r0: 0,
        c0: 0,
        n: nt,
    };
    let a = full(b.array("A", nt * nt, bytes));
    let bm = full(b.array("B", nt * nt, bytes));
    let c = full(b.array("C", nt * nt, bytes));
    strassen_node(&mut b, a, bm, c, levels, bytes, ts);
    b.g.task_touched = (STRASSEN_INITIALISED..b.g.arrays.len()).collect();
    b.g
}

/// Arrays of [`strassen`] the program writes before its tasks: A and B
/// (indices 0 and 1). KASTORS's Strassen (`UFRGS-PPGC/kastors-benchmark`
/// @ 37efadb, `strassen/src/strassen.c`, `run()`) `malloc`s A, B and C
/// and calls `init_matrix` on A and B only; C is first written by the
/// combine tasks, and every node's temporaries are `malloc`ed inside the
/// node (`strassen-task-dep.c` @ b6a842d, `OptimizedStrassenMultiply_par`:
/// `StartHeap = Heap = malloc(QuadrantSizeInBytes * NumberOfVariables)`)
/// and first written by its sum tasks. So under first touch C and the
/// temporaries take whatever DRAM is left when a task first names them
/// ([`TaskGraph::task_touched`]).
pub const STRASSEN_INITIALISED: usize = 2;

fn strassen_node(b: &mut Builder, a: View, bm: View, c: View, level: u32, bytes: u64, ts: u64) {
    let outer = b.enter();
    strassen_step(b, a, bm, c, level, bytes, ts);
    b.leave(outer);
}

/// The tasks one recursion node of [`strassen`] creates.
fn strassen_step(b: &mut Builder, a: View, bm: View, c: View, level: u32, bytes: u64, ts: u64) {
    let elems = (ts * ts) as f64;
    if level == 0 || a.n < 2 {
        for i in 0..a.n {
            for j in 0..a.n {
                for x in 0..a.n {
                    let args = vec![
                        seq(a.tile(i, x), Mode::In),
                        seq(bm.tile(x, j), Mode::In),
                        seq(c.tile(i, j), Mode::InOut),
                    ];
                    b.task("mul", args, 2.0 * (ts * ts * ts) as f64);
                }
            }
        }
        return;
    }
    let h = a.n / 2;
    let node = b.g.arrays.len();
    let first_task = b.g.tasks.len();
    let temps = |b: &mut Builder, name: &str, k: usize| -> Vec<View> {
        let first = b.array(&format!("{name}{node}"), k * h * h, bytes);
        (0..k)
            .map(|i| View {
                base: first + i * h * h,
                w: h,
                r0: 0,
                c0: 0,
                n: h,
            })
            .collect()
    };
    let s = temps(b, "S", 10);
    let m = temps(b, "M", 7);
    // S1 = A11 + A22, S2 = B11 + B22, S3 = A21 + A22, S4 = B12 - B22,
    // S5 = B21 - B11, S6 = A11 + A12, S7 = A21 - A11, S8 = B11 + B12,
    // S9 = A12 - A22, S10 = B21 + B22
    let sums = [
        (a, 0, a, 3),
        (bm, 0, bm, 3),
        (a, 2, a, 3),
        (bm, 1, bm, 3),
        (bm, 2, bm, 0),
        (a, 0, a, 1),
        (a, 2, a, 0),
        (bm, 0, bm, 1),
        (a, 1, a, 3),
        (bm, 2, bm, 3),
    ];
    for (k, &(x, xq, y, yq)) in sums.iter().enumerate() {
        let (x, y) = (x.quad(xq), y.quad(yq));
        for i in 0..h {
            for j in 0..h {
                let args = vec![
                    seq(x.tile(i, j), Mode::In),
                    seq(y.tile(i, j), Mode::In),
                    seq(s[k].tile(i, j), Mode::Out),
                ];
                b.task("add", args, elems);
            }
        }
    }
    // M1 = S1 S2, M2 = S3 B11, M3 = A11 S4, M4 = A22 S5, M5 = S6 B22,
    // M6 = S7 S8, M7 = S9 S10
    let prods = [
        (s[0], s[1]),
        (s[2], bm.quad(0)),
        (a.quad(0), s[3]),
        (a.quad(3), s[4]),
        (s[5], bm.quad(3)),
        (s[6], s[7]),
        (s[8], s[9]),
    ];
    for (k, &(l, r)) in prods.iter().enumerate() {
        strassen_node(b, l, r, m[k], level - 1, bytes, ts);
    }
    // C11 = M1 + M4 - M5 + M7, C12 = M3 + M5, C21 = M2 + M4,
    // C22 = M1 - M2 + M3 + M6
    let combos: [&[usize]; 4] = [&[0, 3, 4, 6], &[2, 4], &[1, 3], &[0, 1, 2, 5]];
    for (k, ms) in combos.iter().enumerate() {
        let ty = if ms.len() == 4 {
            "combine4"
        } else {
            "combine2"
        };
        let cq = c.quad(k);
        for i in 0..h {
            for j in 0..h {
                let mut args: Vec<Arg> = ms
                    .iter()
                    .map(|&mk| seq(m[mk].tile(i, j), Mode::In))
                    .collect();
                args.push(seq(cq.tile(i, j), Mode::Out));
                b.task(ty, args, (ms.len() - 1) as f64 * elems);
            }
        }
    }
    // `#pragma omp taskwait` then `free(StartHeap)`: the node's
    // temporaries die once every task it created (its sub-nodes' included)
    // has completed (KASTORS `strassen-task-dep.c` @ b6a842d)
    b.g.frees.push(Free {
        arrays: vec![node, node + 1],
        after: (first_task..b.g.tasks.len()).collect(),
    });
}

/// 2D FFT of an `n` x `n` complex-double matrix stored as `ts` x `ts`
/// tiles: row FFTs on each block of `ts` rows (every tile of the block,
/// read and written once: a 16 n-byte row fits the cache; 5 n log2 n flops
/// per row), a tiled transpose into the second matrix (one task per tile),
/// row FFTs there, and the transpose back.
pub fn fft(n: usize, ts: usize) -> TaskGraph {
    let mut b = Builder::new("fft", 1);
    let nt = n / ts;
    let bytes = (ts * ts * 16) as u64;
    let x = b.array("X", nt * nt, bytes);
    let y = b.array("Y", nt * nt, bytes);
    let row_flops = 5.0 * n as f64 * (n as f64).log2();
    let rows = |b: &mut Builder, m: usize| {
        for r in 0..nt {
            let args = (0..nt).map(|c| seq(m + r * nt + c, Mode::InOut)).collect();
            b.task("fft_rows", args, row_flops * ts as f64);
        }
    };
    let transpose = |b: &mut Builder, from: usize, to: usize| {
        for i in 0..nt {
            for j in 0..nt {
                let args = vec![
                    seq(from + i * nt + j, Mode::In),
                    seq(to + j * nt + i, Mode::Out),
                ];
                b.task("transpose", args, 0.0);
            }
        }
    };
    rows(&mut b, x);
    transpose(&mut b, x, y);
    rows(&mut b, y);
    transpose(&mut b, y, x);
    b.g
}

/// Dense CG on an `n` x `n` matrix in `nb` row blocks, `iters` iterations.
/// Per iteration and block: q_i = A_i p (reads its row block once and all
/// of p), the partial dot p_i.q_i, x_i += alpha p_i and r_i -= alpha q_i
/// (alpha from all partials), the partial dot r_i.r_i, p_i = r_i + beta p_i.
pub fn cg(n: usize, nb: usize, iters: u32) -> TaskGraph {
    let mut b = Builder::new("cg", iters);
    let rows = n / nb;
    let am = b.array("A", nb, (rows * n * 8) as u64);
    let vb = (rows * 8) as u64;
    let x = b.array("x", nb, vb);
    let r = b.array("r", nb, vb);
    let p = b.array("p", nb, vb);
    let q = b.array("q", nb, vb);
    let dpq = b.array("dot_pq", nb, 8);
    let drr = b.array("dot_rr", nb, 8);
    let vflops = rows as f64 * 2.0;
    for _ in 0..iters {
        for i in 0..nb {
            let mut args = vec![seq(am + i, Mode::In)];
            args.extend((0..nb).map(|k| seq(p + k, Mode::In)));
            args.push(seq(q + i, Mode::Out));
            b.task("matvec", args, 2.0 * (rows * n) as f64);
        }
        for i in 0..nb {
            let args = vec![
                seq(p + i, Mode::In),
                seq(q + i, Mode::In),
                seq(dpq + i, Mode::Out),
            ];
            b.task("dot_pq", args, vflops);
        }
        for (v, w, ty) in [(x, p, "axpy_x"), (r, q, "axpy_r")] {
            for i in 0..nb {
                let mut args = vec![seq(v + i, Mode::InOut), seq(w + i, Mode::In)];
                args.extend((0..nb).map(|k| seq(dpq + k, Mode::In)));
                b.task(ty, args, vflops);
            }
        }
        for i in 0..nb {
            let args = vec![seq(r + i, Mode::In), seq(drr + i, Mode::Out)];
            b.task("dot_rr", args, vflops);
        }
        for i in 0..nb {
            let mut args = vec![seq(p + i, Mode::InOut), seq(r + i, Mode::In)];
            args.extend((0..nb).map(|k| seq(drr + k, Mode::In)));
            b.task("update_p", args, vflops);
        }
    }
    b.g
}

/// RandomAccess-like: a `bytes` table in `nb` blocks, `rounds` rounds of
/// one task per block doing `updates` random read-modify-writes of 64-bit
/// words in its block (one line each; a few integer ops per update,
/// counted as 4 flops).
///
/// [`Bench::graph`]'s sizes follow HPCC's rule, which the real client
/// (`clients/randomaccess.c`: 2^18 updates per task on 2^16-line blocks)
/// also follows: 4 updates per table word over the run, i.e. 4 per line
/// per task with 8 rounds; and about the thesis's "1000 tasks" (Table
/// 4.4): 128 blocks x 8 rounds. The 4 MiB table keeps the run at about
/// 2 M updates.
pub fn random_access(bytes: u64, nb: usize, rounds: u32, updates: u64) -> TaskGraph {
    let mut b = Builder::new("randomaccess", rounds);
    let bb = bytes / nb as u64;
    let t = b.array("table", nb, bb);
    let passes = updates as f64 / (bb / 64) as f64;
    for _ in 0..rounds {
        for i in 0..nb {
            let args = vec![Arg {
                block: t + i,
                mode: Mode::InOut,
                pattern: Pattern::Rand,
                passes,
            }];
            b.task("update", args, 4.0 * updates as f64);
        }
    }
    b.g
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_benchmark_is_valid_and_has_parallelism() {
        for bench in ALL {
            let g = bench.graph();
            g.validate().unwrap();
            let preds = g.predecessors();
            let roots = preds.iter().filter(|p| p.is_empty()).count();
            assert!(roots >= 8, "{}: {roots} root tasks", bench.name());
            assert_eq!(Bench::parse(bench.name()), Some(bench));
        }
    }

    #[test]
    fn strassen_recurses_depth_first_and_chains_products() {
        // one level over 2 x 2 tiles: 10 sums, 7 leaf products of 1 tile
        // triple each, 4 combines
        let g = strassen(1, 2, 8);
        assert_eq!(g.tasks.len(), 10 + 7 + 4);
        let preds = g.predecessors();
        // M1 = S1 S2 follows the sums S1 (task 0) and S2 (task 1)
        assert_eq!(preds[10], vec![0, 1]);
        // C11 needs M1, M4, M5, M7 (tasks 10, 13, 14, 16)
        assert_eq!(preds[17], vec![10, 13, 14, 16]);
        // two levels: each of the 7 products is a node of its own, whose
        // sums read the parent's temporaries before the next node starts
        let g2 = strassen(2, 4, 8);
        let per_node = 10 + 7 + 4;
        assert_eq!(g2.tasks.len(), 10 * 4 + 7 * per_node + 4 * 4);
        let p2 = g2.predecessors();
        // the first task of the first child (its S1 sum) reads S1 and S2
        // of the root, written by root tasks 0..4 and 4..8
        assert!(p2[40].iter().all(|&q| q < 8));
        // a 2 x 2-tile leaf product: 8 tile triples accumulate on 4 tiles
        let leaf = strassen(0, 2, 8);
        assert_eq!(leaf.tasks.len(), 8);
        assert_eq!(leaf.predecessors()[1], vec![0]);
    }

    #[test]
    fn strassen_nodes_parent_their_tasks_and_flat_programs_have_one_parent() {
        // one level over 2 x 2 tiles: the root node (1) creates its sums,
        // combines and 7 product nodes (2..=8), each with one leaf product
        let g = strassen(1, 2, 8);
        let par: Vec<u32> = g.tasks.iter().map(|t| t.parent).collect();
        assert!(par[..10].iter().chain(&par[17..]).all(|&p| p == 1));
        assert_eq!(par[10..17], [2, 3, 4, 5, 6, 7, 8]);
        // two levels over 4 x 4 tiles: 1 + 7 + 49 nodes; after the root's
        // 40 sums, the first level-1 node's 10 sums, then its first leaf
        let g2 = strassen(2, 4, 8);
        let mut nodes: Vec<u32> = g2.tasks.iter().map(|t| t.parent).collect();
        assert!(g2.tasks[40..50].iter().all(|t| t.parent == 2));
        assert_eq!(g2.tasks[50].parent, 3);
        nodes.sort_unstable();
        nodes.dedup();
        assert_eq!(nodes.len(), 1 + 7 + 49);
        assert!(!nodes.contains(&IMPLICIT));
        for b in [Bench::Heat, Bench::Fft, Bench::Cg, Bench::RandomAccess] {
            assert!(b.graph().tasks.iter().all(|t| t.parent == IMPLICIT));
        }
    }

    #[test]
    fn heat_sweeps_depend_on_the_previous_sweep() {
        let g = heat(4, 16, 2);
        let preds = g.predecessors();
        // sweep 1, block (1,1) reads blocks (1,1),(0,1),(2,1),(1,0),(1,2) of sweep 0
        let t = 16 + 5;
        assert_eq!(preds[t], vec![1, 4, 5, 6, 9]);
        // interior tasks have 6 arguments, corners 4
        assert_eq!(g.tasks[5].args.len(), 6);
        assert_eq!(g.tasks[0].args.len(), 4);
    }
}
