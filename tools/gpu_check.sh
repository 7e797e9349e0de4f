#!/usr/bin/env bash
# The one script to run the day a GPU is available (docs/gpu.md, "Running on a GPU machine").
#
#   bash tools/gpu_check.sh [step...]     # steps: versions build test sanitize bench (default all)
#
# Environment: OUT (where logs and summary.txt go; default gpu-check-out/), PF_BUILD (build
# directory, default build-gpu), PF_JOBS (default: all cores). Builds with CUDA through
# .gpu/build-with-bundled-deps.sh when that folder exists (the lent GPU machine has none of our
# Debian packages; copy ../shared/gpu/ there), otherwise with plain CMake. Each step logs to
# $OUT/<step>.log and appends its result to $OUT/summary.txt; a failing step does not stop the
# others, and the script's exit code is 1 when any step failed. The steps are separate so that
# each fits a 10-minute command limit: `gpu_check.sh versions build`, then `test`, ...
set -uo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
cd "$src"
out=${OUT:-$src/gpu-check-out}
build=${PF_BUILD:-build-gpu}
jobs=${PF_JOBS:-$(nproc)}
mkdir -p "$out"
summary=$out/summary.txt
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(versions build test sanitize bench)
failed=0
cuda_bin=${CUDA_HOME:-/usr/local/cuda}/bin
export PATH="$PATH:$cuda_bin"

run_step() {  # name, command...: logs, records rc and the log's last lines in the summary
  local name=$1; shift
  echo "== $name: $*"
  "$@" >"$out/$name.log" 2>&1
  local rc=$?
  [ $rc -eq 0 ] || failed=1
  { echo "## $name: rc=$rc ($(date -u +%FT%TZ))"; tail -n "${TAIL:-15}" "$out/$name.log"; echo; } >>"$summary"
  echo "   rc=$rc (log: $out/$name.log)"
}

versions() {
  nvidia-smi || echo "nvidia-smi: not found"
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv || true
  nvcc --version || echo "nvcc: not found"
  command -v compute-sanitizer || echo "compute-sanitizer: not found"
  [ -x "$build/tools/pf-bench" ] && "$build/tools/pf-bench" gpu_info
  return 0
}

build_cuda() {
  if [ -f .gpu/build-with-bundled-deps.sh ]; then
    # Builds, then runs ctest with these arguments: the fast CPU-free check that the build works.
    PF_BUILD=$build PF_JOBS=$jobs bash .gpu/build-with-bundled-deps.sh -R test_names_are_listable
  else
    cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DPF_WITH_CUDA=ON &&
      cmake --build "$build" -j "$jobs"
  fi && "$build/tools/pf-bench" gpu_info
}

gpu_tests() {
  "$build/tools/pf-bench" gpu_info
  # One at a time (the tests also hold RESOURCE_LOCK gpu); a skipped test here is a failure of
  # the machine: the summary greps for it.
  (cd "$build" && ctest -L gpu -j 1 --output-on-failure --timeout 600)
  local rc=$?
  grep -E "tests passed|Skipped|Failed|\*\*\*" "$out/test.log" | tail -n 40 >"$out/test-summary.txt" || true
  if grep -q "\*\*\*Skipped" "$out/test.log"; then
    echo "FAILED: GPU tests were skipped on a machine that should have a GPU"
    return 1
  fi
  return $rc
}

sanitize() {
  if ! command -v compute-sanitizer >/dev/null; then
    echo "compute-sanitizer not found: skipped"
    return 1
  fi
  local rc=0 tool
  for tool in memcheck racecheck; do
    echo "--- compute-sanitizer --tool $tool over the conformance tests"
    timeout 1500 compute-sanitizer --tool "$tool" --error-exitcode 99 --print-limit 20 \
      "$build/tests/pf_tests" "[gpu][conformance]" || rc=1
  done
  return $rc
}

bench() {
  "$build/tools/pf-bench" gpu_info mlp_seed000_step_gpu gpu_copy_bandwidth gpu_matmul_math || return 1
  python3 tools/bench/compare_torch_gpu.py "$build/tools/pf-bench"
  if "$build/tools/pf-bench" gpu_info | grep -q "count=0"; then
    echo "FAILED: no usable GPU, so every GPU figure above is skipped"
    return 1
  fi
}

for s in "${steps[@]}"; do
  case $s in
    versions) run_step versions versions ;;
    build) run_step build build_cuda ;;
    test) run_step test gpu_tests ;;
    sanitize) run_step sanitize sanitize ;;
    bench) run_step bench bench ;;
    *) echo "gpu_check.sh: unknown step '$s' (versions build test sanitize bench)"; exit 2 ;;
  esac
done
echo "summary: $summary"
exit $failed
