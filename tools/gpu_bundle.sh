#!/bin/sh
# Packs what tools/gpu_check.sh runs on a GPU machine that has CUDA, cuDNN and PyTorch but no
# compiler toolchain for this project and no OpenBLAS: the stripped GPU binaries built here
# (make all with nvcc) and the shared libraries they need beyond the CUDA ones, into
# .gpu/bundle.tar.xz (about 19 MB). Keep .gpu/ out of git (.git/info/exclude) and carry it. The MPI
# plugin links the machine's own libmpi.so.40 (OpenMPI 4.x there too).
set -eu
cd "$(dirname "$0")/.."
# The GPU suite runs the tools too (mcdl_train, mcdl_features, mcdl_predict, mcdl_convert, mcdl_eval).
BINARIES="build/mcdl_tests_gpu build/bench_gpu build/bench_step mcdl_train mcdl_features mcdl_predict mcdl_convert mcdl_eval
  libmcdl_mpi.so"
for binary in $BINARIES; do
  [ -x "$binary" ] || { echo "gpu_bundle: $binary is missing; run make first (nvcc must be installed)" >&2; exit 1; }
done
staging=$(mktemp -d)
trap 'rm -rf "$staging"' EXIT
mkdir -p "$staging/build" "$staging/lib"
for binary in $BINARIES; do
  mkdir -p "$staging/$(dirname "$binary")"
  strip -o "$staging/$binary" "$binary"
done
# OpenBLAS (OpenMP build) and its Fortran runtime, oneDNN (the host's bf16 products) and the
# OpenCL loader it links; libgomp in case the machine lacks GCC's.
for library in libopenblas.so.0 libgfortran.so.5 libquadmath.so.0 libdnnl.so.2 libOpenCL.so.1 libgomp.so.1; do
  path=$(ldconfig -p | awk -v name="$library" '$1 == name && /x86-64/ {print $NF; exit}')
  [ -n "$path" ] || path=$(find /usr/lib/x86_64-linux-gnu -name "$library" | head -1)
  [ -n "$path" ] || { echo "gpu_bundle: $library not found" >&2; exit 1; }
  cp -L "$path" "$staging/lib/$library"
done
mkdir -p .gpu
# One xz stream with a dictionary larger than a binary: the binaries share most of their bytes
# (the same kernels, the same static CUDA runtime), which xz then stores once. The device tool
# carries at most 64 MiB with the working tree: the default dictionary made 33 MB, which with
# Fashion-MNIST's files did not fit.
tar -C "$staging" -cf - . | xz -T1 --lzma2=preset=6,dict=192MiB > .gpu/bundle.tar.xz
ls -l .gpu/bundle.tar.xz
