#!/usr/bin/env python3
"""Capacity bound of a tiered scenario (docs/notebook/unimem.md, "Why nek, ft, mg stay far
from DRAM-only"): the largest share of a rank's main-memory lines that ANY placement
with the scenario's DRAM can serve from DRAM, by an oracle that re-places every phase
for free and may split any object at any byte (fractional knapsack on lines per byte,
per phase). Also the same oracle with one placement for the whole iteration (static).

If every slow line cost the same, a policy's time normalised to DRAM-only is at least
1 + (1 - share) x (slow-only - 1); `--slow-only S=X,...` prints that floor.

Usage: tier_capacity_bound.py [--slow-only nek=1.736,...] [SCENARIO.toml ...]
(default: every builtin/tiered scenario)."""
import sys, glob, os, tomllib

def bound(path):
    sc = tomllib.load(open(path, "rb"))
    prog = sc["program"]
    size = {o["name"]: o["bytes"] for o in prog["objects"]}
    total = sum(size.values())
    cap = max(int(total * sc["dram_share"]) // 4096, 1) * 4096
    served = lines = 0.0
    whole = {}
    for ph in prog["phases"]:
        acc = {}
        for a in ph.get("access", []):
            acc[a["object"]] = acc.get(a["object"], 0) + a["bytes"] / 64
        for o, l in acc.items():
            whole[o] = whole.get(o, 0) + l
        lines += sum(acc.values())
        left = cap
        for o, l in sorted(acc.items(), key=lambda x: -x[1] / size[x[0]]):
            take = min(left, size[o])
            served += l * take / size[o]
            left -= take
    left, st = cap, 0.0
    for o, l in sorted(whole.items(), key=lambda x: -x[1] / size[x[0]]):
        take = min(left, size[o])
        st += l * take / size[o]
        left -= take
    return sc["name"], cap, total, served / lines, st / lines

def main(argv):
    slow = {}
    files = []
    i = 0
    while i < len(argv):
        if argv[i] == "--slow-only":
            slow = {k: float(v) for k, v in (x.split("=") for x in argv[i + 1].split(","))}
            i += 2
        else:
            files.append(argv[i]); i += 1
    if not files:
        here = os.path.dirname(os.path.abspath(__file__))
        files = sorted(glob.glob(os.path.join(here, "..", "builtin", "tiered", "*.toml")))
        files = [f for f in files if not os.path.basename(f).startswith("emul-")]
    print("scenario   DRAM/footprint  per-phase oracle share  static oracle share  floor (per-phase, static)")
    for f in files:
        n, cap, total, ph, st = bound(f)
        fl = ""
        if n in slow:
            s = slow[n]
            fl = f"{1 + (1 - ph) * (s - 1):.3f}, {1 + (1 - st) * (s - 1):.3f}"
        print(f"{n:10} {cap / total:14.3f}  {ph:22.3f}  {st:19.3f}  {fl}")

if __name__ == "__main__":
    main(sys.argv[1:])
