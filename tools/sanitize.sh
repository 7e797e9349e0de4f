#!/usr/bin/env bash
# Sanitizer and fuzzing runs (docs/fuzzing.md), as CI runs them after the test suite:
#
#   bash tools/sanitize.sh asan|tsan|fuzz|all [build-dir]
#
#   asan  clang build with ASan+UBSan (and the fuzzers' coverage: PF_FUZZ=ON), whole ctest suite
#   fuzz  the same build (built if needed), each libFuzzer target for $PF_FUZZ_SECONDS (20) s
#         on the committed corpus
#   tsan  clang build with TSan, the threaded test subset below
#   all   asan, fuzz, tsan
#
# build-dir: default build-asan (asan, fuzz) and build-tsan (tsan). Prints a summary with each
# stage's time; exits 1 when any stage failed. Installs missing Debian packages like build.sh.
set -uo pipefail
cd "$(dirname "$0")/.."
mode="${1:-all}"
dir_arg="${2:-}"
jobs="${PF_JOBS:-$(nproc)}"

# clang-14's runtimes (libclang_rt.{asan,ubsan,tsan,fuzzer}) are in libclang-rt-dev on
# Debian 12; llvm holds llvm-symbolizer, which puts file:line into the reports.
packages=(clang libclang-rt-dev llvm)
source tools/ensure_packages.sh
ensure_packages sanitize.sh "${packages[@]}"

# -O1: ASan's recommendation, and half the compile time of -O3 on CI's two cores.
# -gline-tables-only: file:line in reports without full debug info.
# PF_DOC_SNIPPETS=OFF: the Release build compiles the docs' snippets, which never run.
common=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++
        "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -gline-tables-only -DNDEBUG" -DPF_WITH_CUDA=OFF
        -DPF_DOC_SNIPPETS=OFF)
[[ -n ${CMAKE_CXX_COMPILER_LAUNCHER:-} ]] && common+=("-DCMAKE_CXX_COMPILER_LAUNCHER=$CMAKE_CXX_COMPILER_LAUNCHER")

# A UBSan or ASan report fails the test that caused it, with a stack. allocator_may_return_null:
# a failed allocation is the library's ResourceExhausted error (tested with a 4 EiB tensor), not
# an ASan abort.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:strict_string_checks=1:check_initialization_order=1:allocator_may_return_null=1}"
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$PWD/tools/lsan.supp}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:allocator_may_return_null=1}"

# Left out of the ASan run only (docs/fuzzing.md): the 1,000,000-node chain takes minutes and
# GBs under ASan; the resource tests measure RSS, which ASan's quarantine and shadow inflate;
# the five whole-data-set training runs pass 300 s each (their kernels are tested on their own);
# the suite's reruns under lower ISA caps (simd_cap_*: the same tests at other vector widths;
# this build runs them once, at the CPU's widest) are the Release run's job; so is the
# million-iteration while loop (20 s under ASan; its frames are the 10,000-iteration loops').
asan_exclude='^(A 1,000,000-node chain|A loop of a million iterations|1,000 sessions|10,000 Run calls|lenet learns|mobilenet_v2_small trains|cnn_seed004|mnist_mlp learns|Async ps/worker mnist_mlp|simd_cap_|example seed004_mirrored)'
# The TSan subset: everything threaded in one process (the input pipelines' threads too), less GPU
# cases and the deep chains (time).
# Catch2: a comma is "or", adjacent terms are "and".
# Left out: its one step reads a variable (Mul) and updates it (AssignAdd) with no order between
# them, TensorFlow 1's ref-variable semantics; TSan rightly calls that a race (docs/fuzzing.md).
tsan_exclude="Run takes TensorFlow's mixed list of operations and tensors"
tsan_spec=''
for tag in executor session partition towers collectives rendezvous threads control_flow \
  device_threads device_memory auto_session data; do
  tsan_spec+="${tsan_spec:+,}[$tag]~[gpu]~[deep]~\"$tsan_exclude\""
done

summary=()
status=0
# CPU seconds (user + system) of this shell's finished children: unlike wall time, it does not
# grow when other work shares the machine, so a loaded machine still measures CI's cost.
child_cpu_seconds() {
  local s
  read -ra s </proc/$$/stat
  echo $(((s[15] + s[16]) / $(getconf CLK_TCK)))
}
stage() {  # stage NAME COMMAND...: runs, times and records one stage
  local name=$1 start cpu0 rc
  shift
  start=$(date +%s)
  cpu0=$(child_cpu_seconds)
  echo "== $name: $*"
  "$@"
  rc=$?
  local secs=$(($(date +%s) - start)) cpu=$(($(child_cpu_seconds) - cpu0))
  summary+=("$(printf '%-12s %s  %dm%02ds wall, %dm%02ds cpu' "$name" "$([[ $rc -eq 0 ]] && echo ok || echo "FAILED ($rc)")" \
    $((secs / 60)) $((secs % 60)) $((cpu / 60)) $((cpu % 60)))")
  [[ $rc -eq 0 ]] || status=1
  return $rc
}

asan_dir="${dir_arg:-build-asan}"
tsan_dir="${dir_arg:-build-tsan}"
[[ $mode == all && -n $dir_arg ]] && tsan_dir="$dir_arg-tsan"
configure_asan() {
  mkdir -p "$asan_dir"
  cmake -S . -B "$asan_dir" "${common[@]}" -DPF_FUZZ=ON -DPF_WITH_GRPC=ON >"$asan_dir/configure.log" 2>&1 ||
    { cat "$asan_dir/configure.log"; return 1; }
  cmake --build "$asan_dir" -j "$jobs"
}
run_asan() {
  # GPU cases only report themselves skipped in this CUDA-less build.
  ctest --test-dir "$asan_dir" --output-on-failure -j "$jobs" -LE gpu -E "$asan_exclude"
}
configure_tsan() {
  mkdir -p "$tsan_dir"
  # The subset needs no cluster runtime, and only the test files that hold its tags.
  cmake -S . -B "$tsan_dir" "${common[@]}" -DPF_SANITIZE=thread -DPF_WITH_GRPC=OFF \
    "-DPF_TEST_GLOBS=executor/*_test.cc;placer/*_test.cc;train/towers_test.cc;train/layers_test.cc;train/rnn_test.cc;data/dataset_test.cc" >"$tsan_dir/configure.log" 2>&1 ||
    { cat "$tsan_dir/configure.log"; return 1; }
  cmake --build "$tsan_dir" -j "$jobs" --target pf_tests
}
run_tsan() {
  # libgomp (oneDNN's OpenMP) is not built with TSan; only the opt-in PF_CONV_OMP and
  # PF_BATCHNORM_ONEDNN paths start OpenMP threads, and OMP_NUM_THREADS=1 keeps any other out.
  CUDA_VISIBLE_DEVICES= OMP_NUM_THREADS=1 "$tsan_dir/tests/pf_tests" "$tsan_spec"
}
run_fuzz() {
  bash tools/fuzz.sh "${PF_FUZZ_SECONDS:-20}" "$asan_dir"
}

case "$mode" in
  asan) stage asan-build configure_asan && stage asan-test run_asan ;;
  fuzz) stage asan-build configure_asan && stage fuzz run_fuzz ;;
  tsan) stage tsan-build configure_tsan && stage tsan-test run_tsan ;;
  all)
    if stage asan-build configure_asan; then
      stage asan-test run_asan
      stage fuzz run_fuzz
    fi
    stage tsan-build configure_tsan && stage tsan-test run_tsan
    ;;
  *)
    echo "usage: bash tools/sanitize.sh asan|tsan|fuzz|all [build-dir]" >&2
    exit 2
    ;;
esac
echo "== sanitize.sh summary ($mode)"
printf '%s\n' "${summary[@]}"
exit $status
