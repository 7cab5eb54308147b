#!/bin/sh
# Debian's hpcc (apt-get install hpcc; linked with Open MPI) under
# LD_PRELOAD=libmemtamer_mpi.so with 1, 2 and 4 ranks (P=1, Q=ranks, N=1000):
# every rank's report must show phase boundaries, and hpcc's own checks must
# pass (no failed residual check, no RandomAccess errors, "End of Tests.").
set -e
cd "$(dirname "$0")/../../.."
lib="$PWD/target/release/libmemtamer_mpi.so"
[ -f "$lib" ] || crates/memtamer-tier/mpi/build.sh >/dev/null
fail=0
for n in 1 2 4; do
  d=$(mktemp -d)
  sed "11s/.*/1            Ps/; 12s/.*/$n            Qs/" /usr/share/doc/hpcc/examples/_hpccinf.txt > "$d/hpccinf.txt"
  err=$(cd "$d" && LD_PRELOAD="$lib" MEMTAMER_NODE_DRAM=${MEMTAMER_NODE_DRAM:-64M} \
        mpirun --allow-run-as-root --oversubscribe -np $n -x LD_PRELOAD -x MEMTAMER_NODE_DRAM hpcc 2>&1) || { echo "FAIL: hpcc exit, $n ranks"; fail=1; }
  out="$d/hpccoutf.txt"
  lines=$(echo "$err" | grep -c 'memtamer\[.*boundaries [1-9]' || true)
  [ "$lines" = "$n" ] || { echo "FAIL: $n ranks: $lines report lines with boundaries"; fail=1; }
  grep -q "End of Tests." "$out" || { echo "FAIL: $n ranks: hpcc did not finish"; fail=1; }
  if grep -E "^ *[1-9][0-9]* tests completed and failed" "$out" || grep -E "Found [1-9][0-9]* errors" "$out" || grep -q FAILED "$out"; then
    echo "FAIL: $n ranks: hpcc check failed"; fail=1
  fi
  echo "hpcc $n ranks: $(grep -c PASSED "$out") PASSED lines, $(grep HPL_Tflops "$out"); $(echo "$err" | grep 'memtamer\[0\]' | cut -d' ' -f1-3)"
  rm -rf "$d"
done
[ $fail = 0 ] && echo "hpcc checks: all passed"
exit $fail
