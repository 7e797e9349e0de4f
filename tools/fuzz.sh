#!/usr/bin/env bash
# Runs each libFuzzer target of a PF_FUZZ=ON build for N seconds (docs/fuzzing.md).
#
#   bash tools/fuzz.sh [seconds=30] [build-dir=build-fuzz] [target...]
#
# Each target starts from its committed seeds (tests/fuzz/corpus/<target>/) and grows a scratch
# corpus under $PF_FUZZ_WORK (default <build-dir>/fuzz-work), so the committed seeds stay
# small. Crash, leak and timeout inputs land in $PF_FUZZ_WORK/artifacts/<target>/. Prints one
# line per target (executions, coverage, features) and exits 1 when any target found a bug.
# Targets run $PF_FUZZ_JOBS at a time (default: the number of cores; each libFuzzer process is
# single-threaded), so CI's two cores fuzz two targets at once. Builds nothing: configure the
# build as docs/fuzzing.md says.
set -u
seconds=${1:-30}
build=${2:-build-fuzz}
shift $(($# < 2 ? $# : 2))
root=$(cd "$(dirname "$0")/.." && pwd)
targets=("$@")
[[ ${#targets[@]} -eq 0 ]] && targets=(device_name safetensors idx graph tfrecord image placed_graph raw_message)
work=${PF_FUZZ_WORK:-$build/fuzz-work}
# UBSan reports stop the run (the build also compiles with -fno-sanitize-recover=all).
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export PF_LOG_LEVEL=${PF_LOG_LEVEL:-error}

jobs=${PF_FUZZ_JOBS:-$(nproc)}
for t in "${targets[@]}"; do
  if [[ ! -x $build/tests/fuzz/fuzz_$t ]]; then
    echo "fuzz.sh: $build/tests/fuzz/fuzz_$t not found: configure with -DPF_FUZZ=ON and build it" >&2
    exit 2
  fi
done

# Runs one target; its summary line goes to $work/logs/<target>.line.
fuzz_one() {
  local t=$1 bin=$build/tests/fuzz/fuzz_$1
  local corpus=$work/corpus/$t artifacts=$work/artifacts/$t log=$work/logs/$t.log
  mkdir -p "$corpus" "$artifacts" "$(dirname "$log")"
  echo "== $t: ${seconds}s (log $log)"
  # -timeout: one input running 10 s is a hang; -rss_limit_mb: the default 2 GB.
  "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "$corpus" "$root/tests/fuzz/corpus/$t" >"$log" 2>&1
  local rc=$? execs last cov ft found line
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  found=$(find "$artifacts" -type f | wc -l)
  line="$t: execs=${execs:-?} cov=${cov:-?} ft=${ft:-?} artifacts=$found rc=$rc"
  if [[ $rc -ne 0 ]]; then
    line+="  FAILED"
    grep -E 'ERROR: |runtime error|SUMMARY|Test unit written' "$log" | head -5 | sed 's/^/    /'
  fi
  echo "$line" >"$work/logs/$t.line"
}

mkdir -p "$work/logs"
running=0
for t in "${targets[@]}"; do
  rm -f "$work/logs/$t.line"
  fuzz_one "$t" &
  running=$((running + 1))
  if ((running >= jobs)); then
    wait -n
    running=$((running - 1))
  fi
done
wait
status=0
summary=()
for t in "${targets[@]}"; do
  line=$(cat "$work/logs/$t.line" 2>/dev/null || echo "$t: no result  FAILED")
  [[ $line == *FAILED ]] && status=1
  summary+=("$line")
done
echo "== summary"
printf '%s\n' "${summary[@]}"
exit $status
