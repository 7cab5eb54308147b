#!/bin/sh
# Runs the CG, FT and MG kernels under the interposer with 1, 2 and 4 ranks
# and checks the verified results, plus the bad-budget errors. Needs Open MPI
# (apt-get install openmpi-bin libopenmpi-dev) or, with MPI_FLAVOR=mpich,
# MPICH (apt-get install mpich libmpich-dev). From the repo root:
#   [MPI_FLAVOR=mpich] crates/memtamer-tier/mpi/run.sh [nx] [rows_per_rank] [iterations]
set -e
cd "$(dirname "$0")/../../.."
crates/memtamer-tier/mpi/build.sh >/dev/null
nice -n 5 cargo build --release -q -p memtamer-cli   # `memtamer tier status`
NX=${1:-1024}; NY=${2:-512}; IT=${3:-40}
if [ "${MPI_FLAVOR:-openmpi}" = mpich ]; then
  MPIRUN="mpirun.mpich"; bin=target/release/mpich
else
  MPIRUN="mpirun --allow-run-as-root --oversubscribe"; bin=target/release
fi
fail=0
for n in 1 2 4; do
  out=$(MEMTAMER_NODE_DRAM=${MEMTAMER_NODE_DRAM:-64M} $MPIRUN -np $n $bin/mt_cg $NX $NY $IT 2>&1) || true
  echo "$out" | grep -E '^(cg|memtamer)'
  echo "$out" | grep -q VERIFIED || { echo "FAIL: $n ranks"; fail=1; }
  [ "$(echo "$out" | grep -c 'memtamer\[')" = "$n" ] || { echo "FAIL: $n ranks, report lines missing"; fail=1; }
  # Every rank gathered the node's CPU masks (MPI_Init's Allgather): the
  # copy rule counts the ranks whose masks meet its own against their union.
  [ "$(echo "$out" | grep -c 'memtamer\[.* cpus_from node')" = "$n" ] || { echo "FAIL: $n ranks: a rank without the node's CPU masks (cpus_from node)"; fail=1; }
done
# One unbound rank on a host with 2+ CPUs: its copy helper has a CPU of its
# own, so copies keep the thesis's overlap.
if [ "$(nproc)" -ge 2 ]; then
  unbound=; [ "${MPI_FLAVOR:-openmpi}" = mpich ] || unbound="--bind-to none"
  out=$(MEMTAMER_NODE_DRAM=16M $MPIRUN $unbound -np 1 $bin/mt_mg 64 8 2>&1) || true
  echo "$out" | grep -q '^mg .* VERIFIED' || { echo "FAIL: one unbound rank: mg not verified"; fail=1; }
  echo "$out" | grep -q "memtamer\[0\]: .*copies_exposed no node_ranks 1 cpus $(nproc) cpus_from node" || { echo "FAIL: one unbound rank: copies not overlapped with $(nproc) CPUs: $(echo "$out" | grep -o 'copies_exposed.*cpus_from [a-z]*')"; fail=1; }
fi
# The access source (MEMTAMER_TIER_PROFILER): every report line says which
# one profiled; `pebs` where PEBS does not open (a VM without a PMU) names
# the variable and the errno on stderr, falls back to the fault sampler and
# still verifies (never an abort).
out=$(MEMTAMER_TIER_PROFILER=pebs MEMTAMER_NODE_DRAM=${MEMTAMER_NODE_DRAM:-64M} $MPIRUN -np 2 $bin/mt_cg $NX $NY $IT 2>&1) || true
echo "$out" | grep -E '^memtamer\[0\]' | sed 's/.* profiler /profiler=pebs asked: profiler /'
echo "$out" | grep -q VERIFIED || { echo "FAIL: cg with MEMTAMER_TIER_PROFILER=pebs"; fail=1; }
[ "$(echo "$out" | grep -c 'memtamer\[.* profiler \(pebs\|faults\) (pebs')" = 2 ] || { echo "FAIL: profiler=pebs: report lines without the access source"; fail=1; }
if ! echo "$out" | grep -q 'memtamer\[.* profiler pebs (pebs)'; then
  [ "$(echo "$out" | grep -c 'MEMTAMER_TIER_PROFILER=pebs but PEBS sampling did not open: .*os error [0-9]')" = 2 ] || { echo "FAIL: profiler=pebs without PEBS: no errno message per rank"; fail=1; }
fi
# The CG kernel on plain malloc: MEMTAMER_TIER_MALLOC_MIN=1M makes its 8
# arrays tier objects through the interposed malloc; they must be moved and
# the result still verified. Without the variable nothing is placed.
for n in 1 2 4; do
  out=$(MEMTAMER_TIER_MALLOC_MIN=1M MEMTAMER_NODE_DRAM=${MEMTAMER_NODE_DRAM:-64M} $MPIRUN -np $n $bin/mt_cg_malloc $NX $NY $IT 2>&1) || true
  echo "$out" | grep -E '^(cg|memtamer\[0\])' | sed 's/^cg /cg_malloc /'
  echo "$out" | grep -q VERIFIED || { echo "FAIL: cg_malloc $n ranks"; fail=1; }
  [ "$(echo "$out" | grep -c 'memtamer\[.* moves [1-9].* malloc_objects 8 ')" = "$n" ] || { echo "FAIL: cg_malloc $n ranks: arrays not placed and moved on every rank"; fail=1; }
done
out=$(MEMTAMER_NODE_DRAM=${MEMTAMER_NODE_DRAM:-64M} $MPIRUN -np 1 $bin/mt_cg_malloc $NX $NY $IT 2>&1) || true
echo "$out" | grep -q VERIFIED || { echo "FAIL: cg_malloc without interposition"; fail=1; }
{ echo "$out" | grep 'memtamer\[' | grep -q ' moves 0 ' && ! echo "$out" | grep -q ' malloc_objects '; } || { echo "FAIL: cg_malloc without MEMTAMER_TIER_MALLOC_MIN placed something"; fail=1; }
# The interposed allocator's edge cases (calloc zero, realloc in and out of
# the tier, alignment, pre-Init blocks): 6 tier objects on each rank.
out=$(MEMTAMER_TIER_MALLOC_MIN=1M MEMTAMER_NODE_DRAM=${MEMTAMER_NODE_DRAM:-64M} $MPIRUN -np 2 $bin/mt_malloc_test 2>&1) || true
echo "$out" | grep -E '^malloc_test'
echo "$out" | grep -q "malloc_test VERIFIED" || { echo "FAIL: malloc_test"; echo "$out" | grep 'malloc_test:'; fail=1; }
[ "$(echo "$out" | grep -c 'memtamer\[.* malloc_objects 6 ')" = 2 ] || { echo "FAIL: malloc_test: not 6 tier objects per rank"; fail=1; }
# Interposed mmap (MEMTAMER_TIER_MMAP_MIN): 3 tier objects per rank from
# mmap/mremap, moved, data intact, a partial munmap refused. MPICH's UCX
# memory hooks would bypass the interposed mmap: UCX_MEM_EVENTS=no.
out=$(UCX_MEM_EVENTS=no MEMTAMER_TIER_MMAP_MIN=1M MEMTAMER_NODE_DRAM=${MEMTAMER_NODE_DRAM:-64M} $MPIRUN -np 2 $bin/mt_mmap_test 2>&1) || true
echo "$out" | grep -E '^mmap_test'
echo "$out" | grep -q "mmap_test VERIFIED" || { echo "FAIL: mmap_test"; echo "$out" | grep 'mmap_test:'; fail=1; }
# Every rank must register its 3 mmap objects, and the objects must move
# somewhere. Whether a given rank moves any depends on its sampled profile:
# a rank whose first plan keeps its objects where they are makes no move and
# so never recalibrates (seen 1 run in 5 on a loaded host), which is a
# correct decision, not a fault of the interposer.
[ "$(echo "$out" | grep -c 'memtamer\[.* mmap_objects 3 ')" = 2 ] || { echo "FAIL: mmap_test: not 3 mmap objects per rank"; echo "$out" | grep 'memtamer\['; fail=1; }
echo "$out" | grep -q 'memtamer\[.* moves [1-9].* mmap_objects 3 ' || { echo "FAIL: mmap_test: no rank moved an mmap object"; echo "$out" | grep 'memtamer\['; fail=1; }
for n in 1 2 4; do
  out=$(MEMTAMER_NODE_DRAM=${MEMTAMER_NODE_DRAM:-64M} $MPIRUN -np $n $bin/mt_ft 1024 20 2>&1) || true
  echo "$out" | grep -E '^(ft|memtamer\[0\])'
  echo "$out" | grep -q "ft .* VERIFIED" || { echo "FAIL: ft $n ranks"; fail=1; }
done
# The MG kernel: 3 objects per grid level (15 at 5 levels), a node DRAM of
# 16M that the fine level's arrays do not fit once split over 2 or 4 ranks.
# Verified (residual and error vs the known solution), objects moved on
# every rank, and the checksum bit-identical to the kernel without memtamer
# (mt_mg_plain) and to a run with Unimem off. The 4-rank run with Unimem
# also writes status files (MEMTAMER_TIER_STATUS_DIR) for the check below.
sd=$(mktemp -d /tmp/memtamer-tier-status.XXXXXX)
for n in 1 2 4; do
  ref=$($MPIRUN -np $n $bin/mt_mg_plain 128 16 2>&1 | sed -n 's/^mg .* checksum \([^ ]*\) VERIFIED$/\1/p')
  [ -n "$ref" ] || { echo "FAIL: mg_plain $n ranks not verified"; fail=1; }
  for unimem in 1 0; do
    status_dir=""; [ $n = 4 ] && [ $unimem = 1 ] && status_dir=$sd
    out=$(MEMTAMER_TIER_STATUS_DIR=$status_dir MEMTAMER_UNIMEM=$unimem MEMTAMER_NODE_DRAM=${MG_NODE_DRAM:-16M} $MPIRUN -np $n $bin/mt_mg 128 16 2>&1) || true
    [ -n "$status_dir" ] && mg4_out=$out
    echo "$out" | grep -E '^(mg|memtamer\[0\])' | sed "s/^mg /mg unimem=$unimem /"
    echo "$out" | grep -q "^mg .* checksum $ref VERIFIED" || { echo "FAIL: mg $n ranks unimem=$unimem: not verified or checksum differs from mt_mg_plain's $ref"; fail=1; }
    if [ $unimem = 1 ]; then
      # Every rank reports with no failed move, and the job moved objects. A rank whose
      # plan matches its initial placement moves nothing, which depends on the profiled
      # times (seen once in a CI run: one of 4 ranks with 0 moves), so "every rank moved"
      # is not required.
      [ "$(echo "$out" | grep -c 'memtamer\[.* moves [0-9]* failed 0 ')" = "$n" ] || { echo "FAIL: mg $n ranks: a rank did not report or a move failed"; fail=1; }
      echo "$out" | grep -q 'memtamer\[.* moves [1-9][0-9]* failed 0 ' || { echo "FAIL: mg $n ranks: no rank moved an object"; fail=1; }
    fi
  done
done
# `memtamer tier status` on the real 4-rank MG job above: every rank's
# final document is there, lists the 15 MG objects, and its moves equal the
# rank's own report line.
out=$mg4_out
st=$(target/release/memtamer tier status --dir "$sd" 2>&1) || { echo "FAIL: tier status exit $?: $st"; fail=1; }
echo "$st" | grep -A1 '^rank 0 of 4'
for r in 0 1 2 3; do
  rep=$(echo "$out" | sed -n "s/^memtamer\[$r\]: .* moves \([0-9]*\) failed [0-9]* bytes_moved \([0-9]*\) .*/\1 \2/p")
  sum=$(echo "$st" | grep -A1 "^rank $r of 4 (.*finished" | sed -n 's/.*; \([0-9]*\) moves (.*/\1/p')
  [ -n "$rep" ] && [ "${rep%% *}" = "$sum" ] || { echo "FAIL: tier status rank $r: moves '$sum' vs the report's '$rep'"; fail=1; }
  # the report's moves per direction add up to its totals (moves, bytes)
  dir=$(echo "$out" | sed -n "s/^memtamer\[$r\]: .* promoted \([0-9]*\) promoted_bytes \([0-9]*\) .* evicted \([0-9]*\) evicted_bytes \([0-9]*\) .*/\1 \2 \3 \4/p")
  tot=$(echo "$dir" | awk 'NF == 4 { printf "%.0f %.0f\n", $1 + $3, $2 + $4 }')
  [ -n "$tot" ] && [ "$tot" = "$rep" ] || { echo "FAIL: rank $r: promoted + evicted '$dir' vs moves and bytes '$rep'"; fail=1; }
  [ "$(echo "$st" | sed -n "/^rank $r of 4/,/^rank /p" | grep -cE '^  [urf][0-9]+ ')" = 15 ] || { echo "FAIL: tier status rank $r: not 15 objects"; fail=1; }
done
rm -rf "$sd"
if [ -x $bin/mt_phases_f ]; then
  out=$($MPIRUN -np 2 $bin/mt_phases_f 2>&1) || true
  echo "$out" | grep -E '^(fortran|memtamer)'
  echo "$out" | grep -q "fortran VERIFIED" || { echo "FAIL: fortran result"; fail=1; }
  [ "$(echo "$out" | grep -c 'phases 3 ')" = 2 ] || { echo "FAIL: fortran phases not seen by the interposer"; fail=1; }
fi
# The launcher may tear the job down before it forwards a failing rank's stderr (seen once
# in four MPICH runs under load 15), so the message gets three tries; every try must fail.
seen=0
for try in 1 2 3; do
  out=$(MEMTAMER_NODE_DRAM=0 $MPIRUN -np 2 $bin/mt_cg 64 64 2 2>&1) && { echo "FAIL: budget 0 accepted"; fail=1; }
  if echo "$out" | grep -q "DRAM budget of 0 B"; then seen=1; break; fi
done
[ $seen = 1 ] || { echo "FAIL: no clear message for budget 0"; fail=1; }
out=$(MEMTAMER_DRAM_BUDGET=999999G $MPIRUN -np 1 $bin/mt_cg 64 64 2 2>&1) && { echo "FAIL: huge budget accepted"; fail=1; }
echo "$out" | grep -q "DRAM budget .* is invalid" || { echo "FAIL: no clear message for a huge budget"; fail=1; }
# A rank killed mid-migration (right after the second iteration queued the
# decided moves): the job must end, not hang, with the launcher naming the
# signal, and the killed rank's slow-tier files (O_TMPFILE in a private
# MEMTAMER_TIER_DIR) must be gone with it.
# Its status file (MEMTAMER_TIER_STATUS_DIR) must be reported stale by
# `memtamer tier status` (exit 3, the file named).
kd=$(mktemp -d /dev/shm/memtamer-tier-kill.XXXXXX)
ksd=$(mktemp -d /tmp/memtamer-tier-kill-status.XXXXXX)
rc=0
out=$(MEMTAMER_TIER_STATUS_DIR=$ksd MEMTAMER_TIER_DIR=$kd MT_CG_KILL_RANK=1 MEMTAMER_NODE_DRAM=${MEMTAMER_NODE_DRAM:-64M} \
      timeout 120 $MPIRUN -np 2 $bin/mt_cg $NX $NY $IT 2>&1) || rc=$?
st=$(target/release/memtamer tier status --dir "$ksd" 2>&1) && src=0 || src=$?
[ $src = 3 ] && echo "$st" | grep -q "rank1.json: stale: process [0-9]* on .* is gone" || { echo "FAIL: rank death: tier status exit $src, rank1.json not reported stale: $st"; fail=1; }
echo "rank death: tier status says: $(echo "$st" | grep -o 'rank1.json: stale: process [0-9]*')"
rm -rf "$ksd"
if [ $rc = 0 ] || [ $rc = 124 ]; then echo "FAIL: rank death: exit $rc (0: not noticed, 124: hung)"; fail=1; fi
echo "$out" | grep -qiE "signal 9|SIGNAL: 9|killed" || { echo "FAIL: rank death: no message naming the signal"; fail=1; }
echo "$out" | grep -q VERIFIED && { echo "FAIL: rank death: a result was reported"; fail=1; }
[ -z "$(ls -A "$kd")" ] || { echo "FAIL: rank death: files left in $kd"; fail=1; }
rmdir "$kd"
pgrep -f "$bin/mt_cg" >/dev/null && { echo "FAIL: rank death: mt_cg processes left"; fail=1; }
echo "rank death: exit $rc, launcher says: $(echo "$out" | grep -iE 'signal 9|SIGNAL: 9|killed' | head -1)"
[ $fail = 0 ] && echo "mpi checks: all passed"
exit $fail
