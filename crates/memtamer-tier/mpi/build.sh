#!/bin/sh
# Builds libmemtamer_mpi.so (PMPI wrappers + the Rust tier runtime as one
# shared library), the CG, FT and MG kernels and the Fortran client.
#   crates/memtamer-tier/mpi/build.sh                    Open MPI (mpicc) -> target/release/
#   MPI_FLAVOR=mpich crates/memtamer-tier/mpi/build.sh   MPICH (mpicc.mpich) -> target/release/mpich/
set -e
cd "$(dirname "$0")/../../.."
nice -n 5 cargo build --release -p memtamer-tier
case "${MPI_FLAVOR:-openmpi}" in
  mpich) CC=mpicc.mpich; FC=mpif90.mpich; out=target/release/mpich ;;
  *) CC=mpicc; FC=mpif90; out=target/release ;;
esac
mkdir -p $out
$CC -O2 -fPIC -shared -o $out/libmemtamer_mpi.so crates/memtamer-tier/mpi/memtamer_mpi.c crates/memtamer-tier/mpi/malloc_hook.c \
  -Wl,--whole-archive target/release/libmemtamer_tier.a -Wl,--no-whole-archive \
  -Wl,--version-script=crates/memtamer-tier/mpi/exports.map -lpthread -ldl -lm
$CC -O2 -o $out/mt_cg crates/memtamer-tier/mpi/cg.c -L$out -lmemtamer_mpi -Wl,-rpath,"$PWD/$out" -lm
# The same CG kernel on plain malloc/free: its arrays become tier objects
# only through the interposer's MEMTAMER_TIER_MALLOC_MIN.
$CC -O2 -DMT_PLAIN_MALLOC -o $out/mt_cg_malloc crates/memtamer-tier/mpi/cg.c -L$out -lmemtamer_mpi -Wl,-rpath,"$PWD/$out" -lm
$CC -O2 -o $out/mt_malloc_test crates/memtamer-tier/mpi/malloc_test.c -L$out -lmemtamer_mpi -Wl,-rpath,"$PWD/$out"
$CC -O2 -o $out/mt_mmap_test crates/memtamer-tier/mpi/mmap_test.c -L$out -lmemtamer_mpi -Wl,-rpath,"$PWD/$out"
$CC -O2 -o $out/mt_ft crates/memtamer-tier/mpi/ft.c -L$out -lmemtamer_mpi -Wl,-rpath,"$PWD/$out"
$CC -O2 -o $out/mt_mg crates/memtamer-tier/mpi/mg.c -L$out -lmemtamer_mpi -Wl,-rpath,"$PWD/$out" -lm
# The MG kernel without memtamer (no interposer, plain malloc): the
# reference run.sh compares mt_mg's checksum with, bit for bit.
$CC -O2 -DMT_NO_TIER -o $out/mt_mg_plain crates/memtamer-tier/mpi/mg.c -lm
if command -v $FC >/dev/null 2>&1; then
  $FC -O2 -o $out/mt_phases_f crates/memtamer-tier/mpi/phases.f90 -L$out -lmemtamer_mpi -Wl,-rpath,"$PWD/$out"
fi
echo "built $out/libmemtamer_mpi.so $out/mt_cg"
