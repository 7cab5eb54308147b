#!/bin/sh
# hpcc under LD_PRELOAD=libmemtamer_mpi.so with 1, 2 and 4 ranks (P=1,
# Q=ranks, N=1000), with large-allocation interposition on
# (MEMTAMER_TIER_MALLOC_MIN=1M: hpcc's arrays become tier objects;
# MEMTAMER_TIER_ITER_EVERY=500: an iteration mark every 500 MPI boundaries, so
# Unimem profiles, decides and moves them). Every rank's report must show
# phase boundaries and placed objects, and hpcc's own checks must pass (no
# failed residual check, no RandomAccess errors, PASSED on PTRANS's 5 WALL
# lines and HPL's residual (11 PASSED lines in all when every CPU line is
# printed), "End of Tests.").
#   crates/memtamer-tier/mpi/hpcc.sh                    Debian's hpcc (Open MPI)
#   MPI_FLAVOR=mpich crates/memtamer-tier/mpi/hpcc.sh   target/release/mpich/hpcc
#     (built by mpi/build-hpcc-mpich.sh; skipped with a message if absent)
set -e
cd "$(dirname "$0")/../../.."
if [ "${MPI_FLAVOR:-openmpi}" = mpich ]; then
  lib="$PWD/target/release/mpich/libmemtamer_mpi.so"; hpcc="$PWD/target/release/mpich/hpcc"
  [ -x "$hpcc" ] || crates/memtamer-tier/mpi/build-hpcc-mpich.sh >/dev/null 2>&1 || true
  if [ ! -x "$hpcc" ]; then echo "hpcc (MPICH): SKIPPED, $hpcc not built (crates/memtamer-tier/mpi/build-hpcc-mpich.sh needs the hpcc 1.5.0 source)"; exit 0; fi
  run() { mpirun.mpich -np "$1" "$hpcc"; }
else
  lib="$PWD/target/release/libmemtamer_mpi.so"; hpcc=hpcc
  run() { mpirun --allow-run-as-root --oversubscribe -np "$1" -x LD_PRELOAD -x MEMTAMER_NODE_DRAM \
          -x MEMTAMER_TIER_MALLOC_MIN -x MEMTAMER_TIER_ITER_EVERY hpcc; }
fi
MPI_FLAVOR=${MPI_FLAVOR:-openmpi} crates/memtamer-tier/mpi/build.sh >/dev/null 2>&1 || { echo "FAIL: mpi/build.sh (MPI_FLAVOR=${MPI_FLAVOR:-openmpi})"; exit 1; }
export MEMTAMER_NODE_DRAM=${MEMTAMER_NODE_DRAM:-64M}
export MEMTAMER_TIER_MALLOC_MIN=${MEMTAMER_TIER_MALLOC_MIN-1M}
export MEMTAMER_TIER_ITER_EVERY=${MEMTAMER_TIER_ITER_EVERY-500}
fail=0
for n in 1 2 4; do
  d=$(mktemp -d)
  sed "11s/.*/1            Ps/; 12s/.*/$n            Qs/" /usr/share/doc/hpcc/examples/_hpccinf.txt > "$d/hpccinf.txt"
  err=$(cd "$d" && LD_PRELOAD="$lib" run $n 2>&1) || { echo "FAIL: hpcc exit, $n ranks"; fail=1; }
  out="$d/hpccoutf.txt"
  lines=$(echo "$err" | grep -c 'memtamer\[.*boundaries [1-9]' || true)
  [ "$lines" = "$n" ] || { echo "FAIL: $n ranks: $lines report lines with boundaries"; fail=1; }
  if [ -n "$MEMTAMER_TIER_MALLOC_MIN" ]; then
    placed=$(echo "$err" | grep -c 'memtamer\[.*malloc_objects [1-9]' || true)
    [ "$placed" = "$n" ] || { echo "FAIL: $n ranks: $placed of $n ranks placed interposed objects"; fail=1; }
  fi
  grep -q "End of Tests." "$out" || { echo "FAIL: $n ranks: hpcc did not finish"; fail=1; }
  # PTRANS prints a CPU line only when its CPU timer measured more than 0
  # (getrusage; a few-ms transpose can read 0), so its 5 CPU lines are not
  # counted; its 5 WALL verdicts and HPL's residual check must all pass.
  passed=$(grep PASSED "$out" | grep -vc '^CPU ' || true)
  [ "$passed" = 6 ] || { echo "FAIL: $n ranks: $passed PASSED lines besides PTRANS's CPU lines, not 6 (5 WALL + HPL)"; fail=1; }
  if grep -E "^ *[1-9][0-9]* tests completed and failed" "$out" || grep -E "Found [1-9][0-9]* errors" "$out" || grep -q FAILED "$out"; then
    echo "FAIL: $n ranks: hpcc check failed"; fail=1
  fi
  # Summed over the ranks' report lines.
  sum=$(echo "$err" | grep 'memtamer\[' | awk '{for (i = 2; i < NF; i++) if ($i ~ /^(boundaries|iterations|moves|failed|bytes_moved|malloc_objects|malloc_bytes)$/) t[$i] += $(i + 1)}
    END {printf "boundaries %d iterations %d moves %d failed %d bytes_moved %d malloc_objects %d malloc_bytes %d", t["boundaries"], t["iterations"], t["moves"], t["failed"], t["bytes_moved"], t["malloc_objects"], t["malloc_bytes"]}')
  echo "hpcc ${MPI_FLAVOR:-openmpi} $n ranks: $(grep -c PASSED "$out") PASSED lines, $(grep HPL_Tflops "$out"); all ranks: $sum"
  rm -rf "$d"
done
[ $fail = 0 ] && echo "hpcc checks: all passed"
exit $fail
