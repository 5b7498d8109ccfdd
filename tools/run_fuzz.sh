#!/bin/sh
# Runs each libFuzzer target for a bounded time (what `make fuzz` calls):
#   tools/run_fuzz.sh SECONDS BUILD_DIR BUILD_DIR/fuzz_<name>...
# Each target starts from a fresh scratch copy of tests/fuzz/corpus/<name> (new inputs go there,
# never into tests/) and also replays tests/fuzz/regressions/<name>. A crash, sanitizer report,
# timeout (10 s per input) or out-of-memory (2 GiB RSS) is written to BUILD_DIR/artifacts/<name>/
# and fails the run, after every target has had its turn.
set -u
seconds=$1
build=$2
shift 2
failed=""
for binary in "$@"; do
  name=${binary##*/fuzz_}
  scratch=$build/corpus/$name
  artifacts=$build/artifacts/$name
  rm -rf "$scratch"
  mkdir -p "$scratch" "$artifacts"
  [ -d "tests/fuzz/corpus/$name" ] && cp -R "tests/fuzz/corpus/$name/." "$scratch/"
  dirs="$scratch"
  [ -d "tests/fuzz/regressions/$name" ] && dirs="$dirs tests/fuzz/regressions/$name"
  echo "== fuzz_$name: ${seconds}s"
  start=$(date +%s)
  # shellcheck disable=SC2086  # $dirs is a list of directories
  if "$binary" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
      -artifact_prefix="$artifacts/" $dirs > "$build/fuzz_$name.log" 2>&1; then
    echo "   ok: $(grep -E '^stat::number_of_executed_units' "$build/fuzz_$name.log" | awk '{print $2}') inputs," \
         "$(( $(date +%s) - start ))s"
  else
    echo "   FAILED (log: $build/fuzz_$name.log, input in $artifacts/):"
    grep -E 'ERROR|SUMMARY|runtime error|Test unit written' "$build/fuzz_$name.log" | head -n 5 | sed 's/^/   /'
    failed="$failed $name"
  fi
done
if [ -n "$failed" ]; then
  echo "fuzz: failures in:$failed"
  exit 1
fi
echo "fuzz: all targets ran ${seconds}s without a finding"
