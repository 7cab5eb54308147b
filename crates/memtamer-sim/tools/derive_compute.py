#!/usr/bin/env python3
"""Per-phase compute_ns of the phased scenarios (builtin/tiered/*.toml), derived,
not fitted: docs/notebook/unimem.md section 5, "Per-phase compute from a source".

compute_ns(phase) = bytes the phase touches in the scenario
                    x arithmetic intensity of the kernel it stands for in the source
                      (flops per distinct byte the kernel touches per point)
                    x measured ns per flop of that kernel, cache-resident
                      (tools/npb_compute_rate.c).

Keeping the source kernel's flops per byte, rather than its flops per grid
point, keeps the share of time a rank can stall on memory what the source's
kernel has: the scenarios' objects are ~200x smaller than Class C and some of
their phases (bt's solves, the Nek phases) touch fewer bytes per point than the
source does, so flops per point would make those phases compute-bound for a
reason that is not in the source.

Usage: python3 derive_compute.py [--check] [scenario.toml ...]   (default: all builtin)
prints, per phase, bytes, kernel, flops/B, ns/flop and the derived compute_ns;
--check instead exits 1 naming every phase whose compute_ns in the file is not
the derived value (rounded to the ns), so the files cannot drift from it.
"""
import pathlib
import sys
import tomllib

# ns per flop, cache-resident, best of 3 runs of `npb_compute_rate` (7 repeats
# of >= 20 ms each), gcc -O3 -march=haswell, on the 2-core AMD EPYC KVM host of
# 2026-11-26 (cpu MHz 2596); docs/notebook/unimem.md lists the runs.
NS_PER_FLOP = {
    "mg_resid": 0.2201,
    "mg_psinv": 0.1628,
    "mg_rprj3": 0.1618,
    "mg_interp": 0.1978,
    "cg_spmv": 0.4067,
    "cg_vec": 0.2156,
    "ft_fft": 0.0998,
    "ft_evolve": 1.0533,
    "bt_solve": 0.2465,
    "nek_ax": 0.0799,
}

# Nekbone CG iteration (nekbone/src/cg.f): ax = (19 + 12 nx1) n with nx1 = 8,
# plus 15 n of vector operations (flop_cg): 130 flops per point; the mix's
# ns per flop weights the two measured rates by their flops.
NEK_FLOPS = 19 + 12 * 8 + 15
NEK_NS = ((19 + 12 * 8) * NS_PER_FLOP["nek_ax"] + 15 * NS_PER_FLOP["cg_vec"]) / NEK_FLOPS

# kernel -> (flops per point, distinct bytes per point in the source, ns/flop, source)
KERNELS = {
    "mg.resid": (15.0, 24.0, NS_PER_FLOP["mg_resid"], "mg.f resid: u1, u2 (3+3 adds), r (9); reads u, v, writes r"),
    "mg.rprj3": (222.0 / 7.0, 72.0, NS_PER_FLOP["mg_rprj3"], "mg.f rprj3: 31.7 flops per coarse point; 8 fine r + 1 coarse s"),
    "mg.psinv": (16.0, 16.0, NS_PER_FLOP["mg_psinv"], "mg.f psinv: r1, r2 (3+3), u update (10); reads r, updates u"),
    "mg.interp": (188.0 / 8.0, 72.0, NS_PER_FLOP["mg_interp"], "mg.f interp: 23.5 flops per coarse point; 1 coarse z + 8 fine u"),
    "cg.spmv": (2.0, 12.0, NS_PER_FLOP["cg_spmv"], "cg.f conj_grad q = A p: 2 flops per nonzero; a (8 B) + colidx (4 B)"),
    "cg.zr": (6.0, 32.0, NS_PER_FLOP["cg_vec"], "cg.f z += alpha p, r -= alpha q, rho = r.r; z, p, r, q"),
    "cg.p": (2.0, 16.0, NS_PER_FLOP["cg_vec"], "cg.f p = r + beta p; r, p"),
    "ft.evolve": (2.0, 40.0, NS_PER_FLOP["ft_evolve"], "ft.f evolve u0 *= ex, u1 = u0; u0 (16 B), ex (8), u1 (16)"),
    "ft.fft": (45.0, 16.0, NS_PER_FLOP["ft_fft"], "ft.f cfftz: 5 log2(512) flops per point and 1-D pass; 16 B complex in place"),
    "bt.rhs": (3478.8 - 3 * 1070.0 - 5.0, 168.0, NS_PER_FLOP["mg_resid"],
               "bt.f Mop/s formula 3478.8 per point per step less 3 solves and add; u, forcing, 6 aux, rhs"),
    "bt.solve": (1070.0, 304.0, NS_PER_FLOP["bt_solve"],
                 "x_solve.f: fjac/njac ~100, lhs 255, matvec 50, matmul 250, binvcrhs 365, back-sub 50; u, qs/square/rho_i, lhsc, rhs"),
    "bt.add": (5.0, 80.0, NS_PER_FLOP["cg_vec"], "add.f u += rhs; u, rhs"),
    "nek.cg": (float(NEK_FLOPS), 96.0, NEK_NS,
               "Nekbone cg.f iteration: ax (19+12*8) + 15 vector flops per point; x, r, z, p, w, c, 6 g"),
}

# scenario -> phase -> kernel (None: no flops in the source, compute stays 0)
PHASES = {
    "mg": {"resid": "mg.resid", "comm3-r": None, "rprj3": "mg.rprj3", "psinv": "mg.psinv",
           "comm3-u": None, "interp": "mg.interp"},
    "cg": {"spmv": "cg.spmv", "allreduce-pq": None, "zr-update": "cg.zr", "allreduce-rr": None,
           "p-update": "cg.p"},
    "ft": {"evolve": "ft.evolve", "fft-xy": "ft.fft", "transpose": None, "fft-z": "ft.fft",
           "checksum": None},
    "bt": {"copy_faces": None, "compute_rhs": "bt.rhs", "x_solve": "bt.solve", "y_solve": "bt.solve",
           "z_solve": "bt.solve", "add": "bt.add"},
    "nek": {p: "nek.cg" for p in ("advection", "pressure", "viscous", "filter")},
    "nek-eddy": {p: "nek.cg" for p in ("convect", "pressure", "helmholtz", "project")},
}


def derive(path):
    sc = tomllib.loads(pathlib.Path(path).read_text())
    name = sc["name"]
    out = []
    for ph in sc["program"]["phases"]:
        kernel = PHASES[name][ph["name"]]
        nbytes = sum(a["bytes"] for a in ph.get("access", []))
        if kernel is None:
            out.append((ph["name"], nbytes, "-", 0.0, 0.0, 0.0))
            continue
        flops_pt, bytes_pt, ns, _ = KERNELS[kernel]
        intensity = flops_pt / bytes_pt
        out.append((ph["name"], nbytes, kernel, intensity, ns, nbytes * intensity * ns))
    return name, out


def check(paths):
    bad = 0
    for p in paths:
        sc = tomllib.loads(pathlib.Path(p).read_text())
        _, rows = derive(p)
        for ph, row in zip(sc["program"]["phases"], rows):
            have = ph.get("compute_ns", 0.0)
            if have != round(row[5]):
                print(f"{p}: phase {ph['name']}: compute_ns = {have}, derived {round(row[5])}")
                bad += 1
    print(f"derive_compute --check: {len(paths)} scenarios, {bad} phases differ")
    return 1 if bad else 0


def main():
    here = pathlib.Path(__file__).resolve().parent.parent / "builtin" / "tiered"
    args = sys.argv[1:]
    want_check = "--check" in args
    args = [a for a in args if a != "--check"]
    paths = args or [here / f"{n}.toml" for n in PHASES]
    if want_check:
        sys.exit(check(paths))
    for p in paths:
        name, rows = derive(p)
        total = sum(r[5] for r in rows)
        print(f"{name}: compute per iteration {total / 1000:.1f} us")
        for ph, nbytes, kernel, inten, ns, c in rows:
            print(f"  {ph:14s} {nbytes:9d} B  {kernel:10s} {inten:6.3f} flop/B  {ns:6.4f} ns/flop  compute_ns = {c:.0f}")


if __name__ == "__main__":
    main()
