#!/bin/sh
# Installs the Debian packages the build, the tests and the demo need (the demo and some tests
# read Fashion-MNIST from the dataset-fashion-mnist package; the multi-process tests OpenMPI;
# `make fuzz` needs clang and its libFuzzer runtime), only those whose files are missing; with
# --slow also Chromium, which `make test-slow` renders the report page in.
# Usage: tools/install_deps.sh [--quiet] [--slow]
set -eu
quiet=""
slow=""
for option in "$@"; do
  case $option in
    --quiet) quiet=--quiet ;;
    --slow) slow="chromium:/usr/bin/chromium" ;;
    *) echo "usage: tools/install_deps.sh [--quiet] [--slow]" >&2; exit 2 ;;
  esac
done

# package : a file that proves it is installed
missing=""
for pair in $slow \
  libopenblas-openmp-dev:/usr/include/x86_64-linux-gnu/openblas-openmp/cblas.h \
  libdnnl-dev:/usr/include/oneapi/dnnl/dnnl.hpp \
  doctest-dev:/usr/include/doctest/doctest.h \
  libstb-dev:/usr/include/stb/stb_image.h \
  zlib1g-dev:/usr/include/zlib.h \
  nlohmann-json3-dev:/usr/include/nlohmann/json.hpp \
  dataset-fashion-mnist:/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz \
  libopenmpi-dev:/usr/bin/mpicxx.openmpi \
  openmpi-bin:/usr/bin/mpirun.openmpi \
  clang:/usr/bin/clang++ \
  libclang-rt-14-dev:/usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.fuzzer-x86_64.a
do
  package=${pair%%:*}
  file=${pair#*:}
  if [ ! -e "$file" ] && [ ! -e "/usr/include/$(basename "$file")" ]; then
    missing="$missing $package"
  fi
done

if [ -z "$missing" ]; then
  [ "$quiet" = "--quiet" ] || echo "All build dependencies are installed."
  exit 0
fi

echo "Installing missing build dependencies:$missing"
if [ "$(id -u)" -eq 0 ]; then
  sudo=""
elif command -v sudo >/dev/null 2>&1; then
  sudo="sudo"
else
  echo "error: need root (or sudo) to install:$missing" >&2
  echo "Run as root: apt-get update && apt-get install -y$missing" >&2
  exit 1
fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing
