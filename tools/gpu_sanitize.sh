#!/bin/bash
# One compute-sanitizer tool over the native GPU test binary; any error the tool reports fails
# the run (--error-exitcode), whatever the tests' own result. Used by `make test-gpu-sanitize`
# (every tool, the whole suite) and by tools/gpu_check.sh (time-bounded subsets).
#
#   tools/gpu_sanitize.sh [-t SECONDS] BINARY TOOL [TEST ARGUMENTS...]
#
# TOOL: memcheck (with --leak-check full), racecheck, initcheck or synccheck. The test arguments
# go to the binary (doctest filters such as -tc="cuda reduce*"). -t stops the run after SECONDS:
# exit 124 and a line saying the run did not finish (no verdict on the cases it did not reach).
# Without a usable GPU the binary says so; the tool is then skipped with exit 0. compute-sanitizer
# is $COMPUTE_SANITIZER, else the one on PATH, else $CUDA_HOME/bin's (default /usr/local/cuda).
set -u
limit=0
if [ "${1:-}" = -t ]; then
  limit=${2:?-t needs a number of seconds}
  shift 2
fi
if [ $# -lt 2 ]; then
  echo "usage: tools/gpu_sanitize.sh [-t SECONDS] BINARY memcheck|racecheck|initcheck|synccheck [TEST ARGUMENTS...]" >&2
  exit 2
fi
binary=$1 tool=$2
shift 2
case $tool in
  memcheck) options=(--tool memcheck --leak-check full) ;;
  racecheck | initcheck | synccheck) options=(--tool "$tool") ;;
  *) echo "gpu_sanitize: unknown tool '$tool' (memcheck, racecheck, initcheck or synccheck)" >&2; exit 2 ;;
esac
[ -x "$binary" ] || { echo "gpu_sanitize: $binary is missing (make builds it where nvcc is installed)" >&2; exit 2; }

# The binary decides whether a GPU is usable: "running on <device>", or why not and exit 0.
probe=$("$binary" --no-run 2>&1)
if ! grep -q "running on" <<< "$probe"; then
  echo "$probe"
  echo "gpu_sanitize: no usable GPU here: $tool skipped"
  exit 0
fi

sanitizer=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer")}
if [ ! -x "$sanitizer" ]; then
  echo "gpu_sanitize: compute-sanitizer not found (not on PATH nor in ${CUDA_HOME:-/usr/local/cuda}/bin);" \
    "install the CUDA toolkit's or set COMPUTE_SANITIZER" >&2
  exit 1
fi

command=("$sanitizer" "${options[@]}" --error-exitcode 1 "$binary" "$@")
echo "gpu_sanitize: ${command[*]}"
if [ "$limit" -gt 0 ]; then
  timeout --kill-after=20 "$limit" "${command[@]}"
else
  "${command[@]}"
fi
status=$?
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
  echo "gpu_sanitize: $tool stopped after $limit s before the end: no error found so far, no verdict on the rest"
  exit 124
fi
[ "$status" -eq 0 ] && echo "gpu_sanitize: $tool: no errors" || echo "gpu_sanitize: $tool: FAILED (exit $status)"
exit "$status"
