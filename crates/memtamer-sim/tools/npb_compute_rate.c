/* Compute-only time per operation of the NPB / Nekbone inner loops, with the
 * data cache-resident: the "compute_ns" source of the phased scenarios
 * (crates/memtamer-sim/builtin/tiered/ scenarios, docs/notebook/unimem.md section 5,
 * "Per-phase compute from a source").
 *
 * A phased scenario's compute_ns is the time the core spends on a phase's
 * work when no access misses (the simulator overlaps it with the misses).
 * This program runs each kernel's loop body, written after the NPB 3.3 /
 * Nekbone sources (named at each kernel), on arrays small enough to stay in
 * L1/L2 (every array below is <= 96 KiB), repeats it until the run takes
 * >= 20 ms, keeps the best of 7 runs, and prints ns per counted flop. The
 * flop counts are the ones each source's Mop/s formula counts, or, for a
 * loop the formula only counts as part of a sum, the adds and multiplies of
 * the loop body as written here (given at each kernel).
 *
 *   cc -O3 -march=haswell -o /tmp/npb_compute_rate npb_compute_rate.c -lm
 *   /tmp/npb_compute_rate
 *
 * -march=haswell: the thesis's Platform A is a Xeon E5-2630 (v3: Haswell,
 * 2.4 GHz, AVX2 + FMA); no AVX-512. The time per flop is measured on the
 * host that runs it (docs/notebook/unimem.md records which). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static volatile double sink;

/* Best ns per call of f over 7 runs of >= 20 ms each. */
static double best_ns(void (*f)(void)) {
    long reps = 1;
    for (;;) {
        double t0 = now();
        for (long r = 0; r < reps; r++) f();
        if (now() - t0 >= 0.02) break;
        reps *= 2;
    }
    double best = 1e30;
    for (int k = 0; k < 7; k++) {
        double t0 = now();
        for (long r = 0; r < reps; r++) f();
        double t = (now() - t0) / reps;
        if (t < best) best = t;
    }
    return best * 1e9;
}

/* ---- MG (NPB3.3-MPI MG/mg.f) on an 18^3 block with ghosts (45.6 KiB per array) */
#define M 18
#define I3(a, k, j, i) a[((k) * M + (j)) * M + (i)]
static double mu[M * M * M], mv[M * M * M], mr[M * M * M], mz[10 * 10 * 10];

/* resid: r = v - A u, A with a(1) = 0 (mg.f: "the coefficient a(1) is
 * zero"): per interior point u1 (3 adds), u2 (3 adds), r (9) = 15 flops. */
static void mg_resid(void) {
    const double a0 = -8.0 / 3.0, a2 = 1.0 / 6.0, a3 = 1.0 / 12.0;
    double u1[M], u2[M];
    for (int k = 1; k < M - 1; k++)
        for (int j = 1; j < M - 1; j++) {
            for (int i = 0; i < M; i++) {
                u1[i] = I3(mu, k, j - 1, i) + I3(mu, k, j + 1, i) + I3(mu, k - 1, j, i) + I3(mu, k + 1, j, i);
                u2[i] = I3(mu, k - 1, j - 1, i) + I3(mu, k - 1, j + 1, i) + I3(mu, k + 1, j - 1, i) + I3(mu, k + 1, j + 1, i);
            }
            for (int i = 1; i < M - 1; i++)
                I3(mr, k, j, i) = I3(mv, k, j, i) - a0 * I3(mu, k, j, i) - a2 * (u2[i] + u1[i - 1] + u1[i + 1]) - a3 * (u2[i - 1] + u2[i + 1]);
        }
}

/* psinv: u += S r, c(3) = 0: r1 (3), r2 (3), update (10) = 16 flops. */
static void mg_psinv(void) {
    const double c0 = -3.0 / 8.0, c1 = 1.0 / 32.0, c2 = -1.0 / 64.0;
    double r1[M], r2[M];
    for (int k = 1; k < M - 1; k++)
        for (int j = 1; j < M - 1; j++) {
            for (int i = 0; i < M; i++) {
                r1[i] = I3(mr, k, j - 1, i) + I3(mr, k, j + 1, i) + I3(mr, k - 1, j, i) + I3(mr, k + 1, j, i);
                r2[i] = I3(mr, k - 1, j - 1, i) + I3(mr, k - 1, j + 1, i) + I3(mr, k + 1, j - 1, i) + I3(mr, k + 1, j + 1, i);
            }
            for (int i = 1; i < M - 1; i++)
                I3(mu, k, j, i) = I3(mu, k, j, i) + c0 * I3(mr, k, j, i) + c1 * (I3(mr, k, j, i - 1) + I3(mr, k, j, i + 1) + r1[i]) + c2 * (r2[i] + r1[i - 1] + r1[i + 1]);
        }
}

/* rprj3: fine r (18^3) -> coarse s (8 x 8 x 7). Per coarse line: x1, y1 at
 * 16 fine columns (16 x 6 adds), then per coarse point y2 (3), x2 (3),
 * s (4 mul + 8 add): 96 + 7 x 18 flops per line of 7 coarse points. */
static void mg_rprj3(void) {
    double x1[M], y1[M];
    for (int k3 = 1; k3 < 9; k3++) {
        int i3 = 2 * k3;
        for (int k2 = 1; k2 < 9; k2++) {
            int i2 = 2 * k2;
            for (int i1 = 1; i1 < M - 1; i1++) {
                x1[i1] = I3(mr, i3, i2 - 1, i1) + I3(mr, i3, i2 + 1, i1) + I3(mr, i3 - 1, i2, i1) + I3(mr, i3 + 1, i2, i1);
                y1[i1] = I3(mr, i3 - 1, i2 - 1, i1) + I3(mr, i3 + 1, i2 - 1, i1) + I3(mr, i3 - 1, i2 + 1, i1) + I3(mr, i3 + 1, i2 + 1, i1);
            }
            for (int k1 = 1; k1 < 8; k1++) {
                int i1 = 2 * k1;
                double y2 = I3(mr, i3 - 1, i2 - 1, i1) + I3(mr, i3 + 1, i2 - 1, i1) + I3(mr, i3 - 1, i2 + 1, i1) + I3(mr, i3 + 1, i2 + 1, i1);
                double x2 = I3(mr, i3, i2 - 1, i1) + I3(mr, i3, i2 + 1, i1) + I3(mr, i3 - 1, i2, i1) + I3(mr, i3 + 1, i2, i1);
                mz[(k3 * 10 + k2) * 10 + k1] = 0.5 * I3(mr, i3, i2, i1) + 0.25 * (I3(mr, i3, i2, i1 - 1) + I3(mr, i3, i2, i1 + 1) + x2)
                    + 0.125 * (x1[i1 - 1] + x1[i1 + 1] + y2) + 0.0625 * (y1[i1 - 1] + y1[i1 + 1]);
            }
        }
    }
}

/* interp: coarse z (8^3) -> fine u, as mg.f's interp for even grids: per
 * coarse line z1, z2 (1 add each), z3 (2) at 9 columns, then per coarse
 * point 8 fine updates of 1 + 3 + 2 + 3 + 2 + 3 + 2 + 3 = 19 flops:
 * 9 x 4 + 8 x 19 = 188 flops per line of 8 coarse points (2.9 per fine
 * point). */
static void mg_interp(void) {
    double z1[10], z2[10], z3[10];
    for (int i3 = 0; i3 < 8; i3++)
        for (int i2 = 0; i2 < 8; i2++) {
            for (int i1 = 0; i1 < 9; i1++) {
                z1[i1] = mz[(i3 * 10 + i2 + 1) * 10 + i1] + mz[(i3 * 10 + i2) * 10 + i1];
                z2[i1] = mz[((i3 + 1) * 10 + i2) * 10 + i1] + mz[(i3 * 10 + i2) * 10 + i1];
                z3[i1] = mz[((i3 + 1) * 10 + i2 + 1) * 10 + i1] + mz[((i3 + 1) * 10 + i2) * 10 + i1] + z1[i1];
            }
            for (int i1 = 0; i1 < 8; i1++) {
                double c = mz[(i3 * 10 + i2) * 10 + i1], cn = mz[(i3 * 10 + i2) * 10 + i1 + 1];
                I3(mu, 2 * i3, 2 * i2, 2 * i1) += c;
                I3(mu, 2 * i3, 2 * i2, 2 * i1 + 1) += 0.5 * (cn + c);
                I3(mu, 2 * i3, 2 * i2 + 1, 2 * i1) += 0.5 * z1[i1];
                I3(mu, 2 * i3, 2 * i2 + 1, 2 * i1 + 1) += 0.25 * (z1[i1] + z1[i1 + 1]);
                I3(mu, 2 * i3 + 1, 2 * i2, 2 * i1) += 0.5 * z2[i1];
                I3(mu, 2 * i3 + 1, 2 * i2, 2 * i1 + 1) += 0.25 * (z2[i1] + z2[i1 + 1]);
                I3(mu, 2 * i3 + 1, 2 * i2 + 1, 2 * i1) += 0.25 * z3[i1];
                I3(mu, 2 * i3 + 1, 2 * i2 + 1, 2 * i1 + 1) += 0.125 * (z3[i1] + z3[i1 + 1]);
            }
        }
}

/* ---- CG (NPB3.3-MPI CG/cg.f conj_grad): CSR SpMV, 2 flops per nonzero;
 * the vector loops, 2 flops per element each (cg.f's Mop/s formula:
 * 2 * na * (nonzer*(nonzer+1) + 5) per inner iteration, i.e. 2 per
 * nonzero and 10 per row for its five vector operations). */
#define NROW 2048
#define NNZR 16
static double ca[NROW * NNZR], cp[NROW], cq[NROW], cz[NROW], cr[NROW];
static int ccol[NROW * NNZR], crow[NROW + 1];
static void cg_spmv(void) {
    for (int j = 0; j < NROW; j++) {
        double s = 0.0;
        for (int k = crow[j]; k < crow[j + 1]; k++) s += ca[k] * cp[ccol[k]];
        cq[j] = s;
    }
}
/* zr-update: z += alpha p, r -= alpha q, rho = r.r: 6 flops per element. */
static void cg_vec(void) {
    const double alpha = 0.37;
    double rho = 0.0;
    for (int j = 0; j < NROW; j++) {
        cz[j] += alpha * cp[j];
        cr[j] -= alpha * cq[j];
        rho += cr[j] * cr[j];
    }
    sink = rho;
}

/* ---- FT (NPB3.3-MPI FT/ft.f): cfftz, radix-2 Stockham over fftblock = 16
 * independent lines at once (ft.f's cffts1 copies 16 lines into y and
 * transforms them together), 5 n log2 n flops per line (ft.f's Mop/s
 * formula: 7.21113 ln N = 5.0 log2 N per point per iteration for the 3-D FFT).
 * n = 256, 16 lines: 64 KiB per buffer. evolve: u0 *= ex (real), u1 = u0:
 * 2 flops per complex point. */
#define FN 256
#define FB 16
static double fxr[FN][FB], fxi[FN][FB], fyr[FN][FB], fyi[FN][FB], fwr[FN], fwi[FN];
static void ft_fft(void) {
    double (*ar)[FB] = fxr, (*ai)[FB] = fxi, (*br)[FB] = fyr, (*bi)[FB] = fyi;
    for (int l = 1; l < FN; l *= 2) { /* Stockham: half = FN/2 butterflies per stage */
        int m = FN / (2 * l);
        for (int j = 0; j < l; j++) {
            double wr = fwr[j * m], wi = fwi[j * m];
            for (int k = 0; k < m; k++) {
                int i0 = j * m + k, i1 = i0 + FN / 2, o0 = 2 * j * m + k, o1 = o0 + m;
                for (int b = 0; b < FB; b++) {
                    double xr = ar[i0][b], xi = ai[i0][b], yr = ar[i1][b], yi = ai[i1][b];
                    br[o0][b] = xr + yr;
                    bi[o0][b] = xi + yi;
                    double dr = xr - yr, di = xi - yi;
                    br[o1][b] = wr * dr - wi * di;
                    bi[o1][b] = wr * di + wi * dr;
                }
            }
        }
        double (*t)[FB] = ar; ar = br; br = t;
        t = ai; ai = bi; bi = t;
    }
    sink = ar[1][1];
}
static void ft_evolve(void) {
    for (int i = 0; i < FN; i++)
        for (int b = 0; b < FB; b++) {
            double e = fwr[i] * 0.5;
            fxr[i][b] *= e;
            fxi[i][b] *= e;
            fyr[i][b] = fxr[i][b];
            fyi[i][b] = fxi[i][b];
        }
}

/* ---- BT (NPB3.3-MPI BT/x_solve.f, solve_subs.f): per grid point of a line,
 * the forward sweep of the block-tridiagonal solve: lhs blocks built from
 * fjac and njac (3 blocks x 25 entries: 4, 6, 4 flops = 350), matvec_sub
 * (50), matmul_sub (250), binvcrhs (Gauss-Jordan on b with c and r: for
 * pivot p = 0..4: 1 division, (4-p) + 5 + 1 scalings, 4 row eliminations
 * of 2 x ((4-p) + 5 + 1) flops: 91 + 82 + 73 + 64 + 55 = 365), and the
 * back substitution (matvec, 50). The assembly as written here costs
 * 25 x (5 + 8 + 5) = 450 flops per point (x_solve.f's skips the dx terms
 * off the diagonal: 255), so this loop is 1165 flops per point. */
#define BL 64
static double bfj[BL][5][5], bnj[BL][5][5], blhs[BL][3][5][5], brhs[BL][5];
static void bt_line(void) {
    const double t1 = 0.13, t2 = 0.21, dx1 = 0.75, dx2 = 0.75;
    for (int i = 0; i < BL; i++) /* lhs assembly: aa = -t2 fjac(i-1) - t1 njac(i-1) - t1 dx, etc. */
        for (int m = 0; m < 5; m++)
            for (int n = 0; n < 5; n++) {
                int im = i > 0 ? i - 1 : 0, ip = i < BL - 1 ? i + 1 : BL - 1;
                double d = m == n ? dx1 : 0.0;
                blhs[i][0][m][n] = -t2 * bfj[im][m][n] - t1 * bnj[im][m][n] - t1 * d;
                blhs[i][1][m][n] = 1.0 + t1 * 2.0 * bnj[i][m][n] + t1 * 2.0 * d * dx2 + (m == n);
                blhs[i][2][m][n] = t2 * bfj[ip][m][n] - t1 * bnj[ip][m][n] - t1 * d;
            }
    for (int i = 1; i < BL; i++) {
        double (*a)[5] = blhs[i][0], (*b)[5] = blhs[i][1], (*cprev)[5] = blhs[i - 1][2], *rp = brhs[i - 1], *r = brhs[i];
        for (int m = 0; m < 5; m++) /* matvec_sub: r -= a rprev */
            for (int n = 0; n < 5; n++) r[m] -= a[m][n] * rp[n];
        for (int m = 0; m < 5; m++) /* matmul_sub: b -= a cprev */
            for (int n = 0; n < 5; n++) {
                double s = b[m][n];
                for (int k = 0; k < 5; k++) s -= a[m][k] * cprev[k][n];
                b[m][n] = s;
            }
        double (*c)[5] = blhs[i][2];
        for (int p = 0; p < 5; p++) { /* binvcrhs */
            double piv = 1.0 / b[p][p];
            for (int n = p + 1; n < 5; n++) b[p][n] *= piv;
            for (int n = 0; n < 5; n++) c[p][n] *= piv;
            r[p] *= piv;
            for (int q = 0; q < 5; q++) {
                if (q == p) continue;
                double coeff = b[q][p];
                for (int n = p + 1; n < 5; n++) b[q][n] -= coeff * b[p][n];
                for (int n = 0; n < 5; n++) c[q][n] -= coeff * c[p][n];
                r[q] -= coeff * r[p];
            }
        }
    }
    for (int i = BL - 2; i >= 0; i--) /* back substitution: r -= c r(i+1) */
        for (int m = 0; m < 5; m++)
            for (int n = 0; n < 5; n++) brhs[i][m] -= blhs[i][2][m][n] * brhs[i + 1][n];
}

/* ---- Nek5000 / Nekbone (nekbone/src/cg.f ax, ax_e): w = A u on one
 * spectral element of N^3 points, N = 8 (lx1 = 8): local_grad3 (3 mxm),
 * the geometric factors (6 per point, 15 flops), local_grad3_t (3 mxm and
 * 2 adds), add2s2 (2): Nekbone's count is (19 + 12 N) N^3 per element. */
#define NX 8
#define NXYZ (NX * NX * NX)
static double nu[NXYZ], nw[NXYZ], ng[6][NXYZ], nur[NXYZ], nus[NXYZ], nut[NXYZ], nd[NX][NX], ndt[NX][NX];
static void nek_ax(void) {
    for (int k = 0; k < NX; k++) /* ur = D u (along i), us (along j), ut (along k) */
        for (int j = 0; j < NX; j++)
            for (int i = 0; i < NX; i++) {
                double sr = 0, ss = 0, st = 0;
                for (int l = 0; l < NX; l++) {
                    sr += nd[i][l] * nu[(k * NX + j) * NX + l];
                    ss += nd[j][l] * nu[(k * NX + l) * NX + i];
                    st += nd[k][l] * nu[(l * NX + j) * NX + i];
                }
                nur[(k * NX + j) * NX + i] = sr;
                nus[(k * NX + j) * NX + i] = ss;
                nut[(k * NX + j) * NX + i] = st;
            }
    for (int p = 0; p < NXYZ; p++) {
        double r = nur[p], s = nus[p], t = nut[p];
        nur[p] = ng[0][p] * r + ng[1][p] * s + ng[2][p] * t;
        nus[p] = ng[1][p] * r + ng[3][p] * s + ng[4][p] * t;
        nut[p] = ng[2][p] * r + ng[4][p] * s + ng[5][p] * t;
    }
    for (int k = 0; k < NX; k++)
        for (int j = 0; j < NX; j++)
            for (int i = 0; i < NX; i++) {
                double s = 0;
                for (int l = 0; l < NX; l++)
                    s += ndt[i][l] * nur[(k * NX + j) * NX + l] + ndt[j][l] * nus[(k * NX + l) * NX + i] + ndt[k][l] * nut[(l * NX + j) * NX + i];
                nw[(k * NX + j) * NX + i] = s + 0.1 * nu[(k * NX + j) * NX + i];
            }
}

int main(void) {
    srand(1);
    for (int i = 0; i < M * M * M; i++) { mu[i] = rand() / (double)RAND_MAX; mv[i] = rand() / (double)RAND_MAX; mr[i] = mu[i] - mv[i]; }
    for (int j = 0; j <= NROW; j++) crow[j] = j * NNZR;
    for (int k = 0; k < NROW * NNZR; k++) { ca[k] = 1e-3 * (k % 7); ccol[k] = rand() % NROW; }
    for (int j = 0; j < NROW; j++) { cp[j] = 1.0; cz[j] = 0; cr[j] = 1.0; }
    for (int i = 0; i < FN; i++) { fwr[i] = cos(2 * M_PI * i / FN); fwi[i] = -sin(2 * M_PI * i / FN); for (int b = 0; b < FB; b++) { fxr[i][b] = i + b; fxi[i][b] = 0; } }
    for (int i = 0; i < BL; i++) for (int m = 0; m < 5; m++) { brhs[i][m] = 1; for (int n = 0; n < 5; n++) { bfj[i][m][n] = 0.01 * (m + n); bnj[i][m][n] = 0.02 * (m == n); } }
    for (int i = 0; i < NX; i++) for (int l = 0; l < NX; l++) { nd[i][l] = (i == l) ? 0 : 1.0 / (i - l); ndt[l][i] = nd[i][l]; }
    for (int p = 0; p < NXYZ; p++) { nu[p] = p * 1e-3; for (int g = 0; g < 6; g++) ng[g][p] = (g == 0 || g == 3 || g == 5) ? 1.0 : 0.1; }

    const double inner = (M - 2.0) * (M - 2.0) * (M - 2.0);
    struct { const char *name; void (*f)(void); double flops; } k[] = {
        {"mg_resid", mg_resid, 15.0 * inner},
        {"mg_psinv", mg_psinv, 16.0 * inner},
        {"mg_rprj3", mg_rprj3, 8.0 * 8 * (16 * 6 + 7 * 18)},
        {"mg_interp", mg_interp, 8.0 * 8 * (9 * 4 + 8 * 19)},
        {"cg_spmv", cg_spmv, 2.0 * NROW * NNZR},
        {"cg_vec", cg_vec, 6.0 * NROW},
        {"ft_fft", ft_fft, 5.0 * FN * 8 * FB},
        {"ft_evolve", ft_evolve, 2.0 * FN * FB},
        {"bt_solve", bt_line, 450.0 * BL + (50.0 + 250 + 365) * (BL - 1) + 50.0 * (BL - 1)},
        {"nek_ax", nek_ax, (19.0 + 12.0 * NX) * NXYZ},
    };
    printf("kernel      ns/call     flops/call  ns/flop  Gflop/s\n");
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        double ns = best_ns(k[i].f);
        printf("%-10s %10.1f %12.0f %8.4f %8.2f\n", k[i].name, ns, k[i].flops, ns / k[i].flops, k[i].flops / ns);
    }
    sink = mu[100] + mr[200] + cq[3] + fyr[2][2] + brhs[3][3] + nw[5] + mz[123];
    return 0;
}
