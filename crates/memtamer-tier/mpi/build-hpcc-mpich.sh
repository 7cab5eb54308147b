#!/bin/sh
# Builds hpcc 1.5.0 (with its bundled HPL) against MPICH into
# target/release/mpich/hpcc, so mpi/hpcc.sh can run hpcc on MPICH too (Debian
# ships hpcc linked with Open MPI only).
# Source: the upstream tarball hpcc_1.5.0.orig.tar.gz from the Debian archive,
# fetched with apt-get source through a private deb-src list under
# target/aptsrc/ (the system's apt configuration is not touched). The Debian
# packaging tarball is not needed: the upstream source builds as is.
# Needs mpicc.mpich (apt-get install mpich libmpich-dev) and a BLAS
# (libblas3, which Debian's hpcc already pulls in).
set -e
cd "$(dirname "$0")/../../.."
root=$PWD
src=target/aptsrc
tarball=$src/hpcc_1.5.0.orig.tar.gz
if [ ! -f "$tarball" ]; then
  mkdir -p $src/lists/partial $src/archives/partial
  echo "deb-src http://deb.debian.org/debian bookworm main" > $src/sources.list
  opts="-o Dir::Etc::SourceList=$root/$src/sources.list -o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists=$root/$src/lists -o Dir::Cache::Archives=$root/$src/archives"
  apt-get $opts update >/dev/null
  # The .debian.tar.xz may be gone from the mirror (404); the orig tarball is all we use.
  (cd $src && apt-get $opts source --download-only hpcc >/dev/null 2>&1) || true
fi
[ -f "$tarball" ] || { echo "build-hpcc-mpich: could not fetch $tarball (apt-get source hpcc with a deb-src line)" >&2; exit 1; }
blas=$(ls /usr/lib/x86_64-linux-gnu/libblas.so /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null | head -1)
[ -n "$blas" ] || { echo "build-hpcc-mpich: no libblas.so(.3) (apt-get install libblas3)" >&2; exit 1; }
out=$root/target/release/mpich
b=$out/hpcc-build
rm -rf "$b"; mkdir -p "$b"
tar xzf "$tarball" -C "$b"
top=$b/hpcc-1.5.0
sed -e "s|^ARCH .*|ARCH         = mpich|" \
    -e "s|^TOPdir .*|TOPdir       = $top/hpl|" \
    -e "s|^MPdir .*|MPdir        =|" -e "s|^MPinc .*|MPinc        =|" -e "s|^MPlib .*|MPlib        =|" \
    -e "s|^LAdir .*|LAdir        =|" -e "s|^LAinc .*|LAinc        =|" -e "s|^LAlib .*|LAlib        = $blas|" \
    -e "s|^CC .*|CC           = mpicc.mpich|" \
    -e "s|^CCFLAGS .*|CCFLAGS      = \$(HPL_DEFS) -O2 -fcommon -w|" \
    -e "s|^LINKER .*|LINKER       = mpicc.mpich|" \
    -e "s|^LINKFLAGS .*|LINKFLAGS    = -O2|" \
    "$top/hpl/setup/Make.Linux_PII_FBLAS" > "$top/hpl/Make.mpich"
# LINKER links with -lm too (HPL's libraries use sqrt, exp).
sed -i "s|^LAlib .*|LAlib        = $blas -lm|" "$top/hpl/Make.mpich"
(cd "$top" && nice -n 5 make arch=mpich -j2 >"$b/make.log" 2>&1) || { tail -20 "$b/make.log" >&2; exit 1; }
cp "$top/hpcc" "$out/hpcc"
echo "built $out/hpcc"
