#!/bin/sh
# Builds target/release/libmemtamer_mpi.so (PMPI wrappers + the Rust tier
# runtime as one shared library) and the CG kernel. Needs mpicc (Open MPI or
# MPICH). usage: crates/memtamer-tier/mpi/build.sh   (from the repo root)
set -e
cd "$(dirname "$0")/../../.."
nice -n 5 cargo build --release -p memtamer-tier
out=target/release
mpicc -O2 -fPIC -shared -o $out/libmemtamer_mpi.so crates/memtamer-tier/mpi/memtamer_mpi.c \
  -Wl,--whole-archive $out/libmemtamer_tier.a -Wl,--no-whole-archive \
  -Wl,--version-script=crates/memtamer-tier/mpi/exports.map -lpthread -ldl -lm
mpicc -O2 -o $out/mt_cg crates/memtamer-tier/mpi/cg.c -L$out -lmemtamer_mpi -Wl,-rpath,"$PWD/$out" -lm
if command -v mpif90 >/dev/null 2>&1; then
  mpif90 -O2 -o $out/mt_phases_f crates/memtamer-tier/mpi/phases.f90 -L$out -lmemtamer_mpi -Wl,-rpath,"$PWD/$out"
fi
echo "built $out/libmemtamer_mpi.so $out/mt_cg"
