#!/usr/bin/env bash
# The one script to run the day a GPU is available (docs/gpu.md, "Running on a GPU machine").
#
#   OUT=DIR bash tools/gpu_check.sh                # every step, one call of at most ~9 minutes
#   OUT=DIR bash tools/gpu_check.sh test bench     # only these steps (the build must exist)
#   bash tools/gpu_check.sh --dry-run              # the plan: steps, limits, commands; runs nothing
#
# Steps (default: versions build test sanitize bench), each under its own `timeout`; the limits
# add up to 535 s (PF_CHECK_TOTAL_S, default 540, caps the whole run):
#   versions   20 s  nvidia-smi, nvcc, compute-sanitizer, PyTorch, `pf-bench gpu_info`
#   build     270 s  CUDA build in $PF_BUILD (default build-gpu) through
#                    .gpu/build-with-bundled-deps.sh when that folder exists (the lent machine
#                    has CUDA but none of our Debian packages), else plain CMake
#   test       55 s  ctest -L gpu -j 1
#   sanitize   85 s  compute-sanitizer memcheck over a few short GPU test cases (50 s) and
#                    racecheck over fewer (30 s), not the conformance loop
#   bench     105 s  tools/bench/gpu_side_by_side.py: lenet, mnist_mlp, mlp_seed000 (and
#                    mlp_seed000_step_gpu_graphs when pf-bench has it), cnn_seed004, each beside
#                    PyTorch eager, interleaved, 2 rounds
#   sanitize-full    (not in the default) memcheck and racecheck over [gpu][conformance]
# A step that runs past its limit is recorded as TIMEOUT and the next step starts. Without a GPU
# the GPU steps are SKIPPED, never "ok"; the exit status is 0 only when every step was ok.
#
# Output in $OUT (default gpu-check-out/): summary.txt (one line per step: result, rc, seconds,
# limit, key facts; then the side-by-side table), <step>.log for each step, figures.txt and
# figures.json (the table and every sample), bench-runs.log (each pf command's output).
#
# Environment: OUT, PF_BUILD, PF_JOBS (default all cores), PF_PYTHON (python with PyTorch,
# default python3), PF_GPU_DATA (MNIST IDX folder; default .gpu/data/mnist or ../shared/data/mnist,
# else synthetic images), PF_CHECK_<STEP>_S (a step's limit, e.g. PF_CHECK_BUILD_S=400),
# PF_MEMCHECK_TESTS / PF_RACECHECK_TESTS (Catch2 test specs), PF_MEMCHECK_S / PF_RACECHECK_S,
# PF_SANITIZER_ARGS (extra compute-sanitizer arguments, e.g. a kernel-name filter),
# PF_BENCH_ROUNDS (default 2), PF_BENCH_CONTEXT=1 (also pf-bench gpu_copy_bandwidth and
# gpu_matmul_math), PF_BUILD_WITHOUT_GPU=1 (build even where no GPU is visible).
set -uo pipefail
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
src=$(cd "$(dirname "$0")/.." && pwd)
cd "$src" || exit 2
export PATH="$PATH:${CUDA_HOME:-/usr/local/cuda}/bin"

# ------------------------------------------------------------------------------ settings
export PF_OUT=${PF_OUT:-${OUT:-$src/gpu-check-out}}
export PF_BUILD=${PF_BUILD:-build-gpu}
export PF_JOBS=${PF_JOBS:-$(nproc)}
export PF_PYTHON=${PF_PYTHON:-python3}
export PF_MEMCHECK_TESTS=${PF_MEMCHECK_TESTS:-[gpu]~[conformance]~[large]~[allocator]}
export PF_RACECHECK_TESTS=${PF_RACECHECK_TESTS:-[gpu][towers]}
export PF_MEMCHECK_S=${PF_MEMCHECK_S:-50}
export PF_RACECHECK_S=${PF_RACECHECK_S:-30}
export PF_SANITIZE_FULL_S=${PF_SANITIZE_FULL_S:-280}
export PF_BENCH_ROUNDS=${PF_BENCH_ROUNDS:-2}
export PF_DRY=${PF_DRY:-0}
ALL_STEPS=(versions build test sanitize bench sanitize-full)
DEFAULT_STEPS=(versions build test sanitize bench)

limit_of() {  # the step's limit in seconds: PF_CHECK_<STEP>_S or the default
  local v d
  v="PF_CHECK_$(echo "$1" | tr 'a-z-' 'A-Z_')_S"
  case $1 in
    versions) d=20 ;; build) d=270 ;; test) d=55 ;; sanitize) d=85 ;; bench) d=105 ;;
    sanitize-full) d=$((2 * PF_SANITIZE_FULL_S + 20)) ;; *) d=60 ;;
  esac
  echo "${!v:-$d}"
}

# ------------------------------------------------------------------- helpers for the steps
out=$PF_OUT
build=$PF_BUILD
note() {                                           # the step's one line in summary.txt
  [ "$PF_DRY" = 1 ] || echo "$*" >"$out/$step.note"
}
cmd() {                                            # runs a command, or shows it (--dry-run)
  if [ "$PF_DRY" = 1 ]; then echo "  + $(printf '%q ' "$@")"; return 0; fi
  "$@"
}
gpu_count() {  # GPUs nvidia-smi sees (0 without a driver); dry runs pretend one
  if [ "$PF_DRY" = 1 ]; then echo 1; return; fi
  nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true
}
need_build() {  # the binaries a step needs; else the step is skipped (rc 3)
  local f
  [ "$PF_DRY" = 1 ] && return 0
  for f in "$@"; do
    if [ ! -x "$build/$f" ]; then
      note "no build: $build/$f is missing"; echo "SKIPPED: $build/$f is missing"; return 3
    fi
  done
}
need_gpu() {
  if [ "$(gpu_count)" -eq 0 ]; then
    note "no GPU (nvidia-smi -L lists none)"; echo "SKIPPED: no GPU visible"; return 3
  fi
}

# ---------------------------------------------------------------------------------- steps
step_versions() {
  local gpu drv nvccv san torchv info
  cmd nvidia-smi || echo "nvidia-smi: not found"
  cmd nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv || true
  cmd nvcc --version || echo "nvcc: not found"
  command -v compute-sanitizer || echo "compute-sanitizer: not found"
  cmd timeout 12 "$PF_PYTHON" -c \
    'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available())' ||
    echo "PyTorch: not importable with $PF_PYTHON"
  [ -x "$build/tools/pf-bench" ] && cmd timeout 10 "$build/tools/pf-bench" gpu_info
  [ "$PF_DRY" = 1 ] && return 0
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1)
  drv=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n1)
  nvccv=$(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p')
  san=$(command -v compute-sanitizer >/dev/null && echo yes || echo no)
  torchv=$(grep -m1 '^torch ' "$out/versions.log" | cut -d' ' -f2,4 | sed 's/ / cuda=/')
  info="${gpu:-no GPU}${drv:+, driver $drv}, nvcc ${nvccv:-none}, compute-sanitizer $san"
  note "$info, torch ${torchv:-none}"
  [ -n "$gpu" ] || { echo "no GPU"; return 3; }
}

step_build() {
  if [ "$(gpu_count)" -eq 0 ] && [ "${PF_BUILD_WITHOUT_GPU:-0}" != 1 ]; then
    note "no GPU visible (PF_BUILD_WITHOUT_GPU=1 builds anyway)"; return 3
  fi
  local how rc
  if [ -f .gpu/build-with-bundled-deps.sh ]; then
    how="bundled deps (.gpu/)"
    # Builds, then runs ctest with these arguments: the fast CPU-free check that the build works.
    cmd bash .gpu/build-with-bundled-deps.sh -R test_names_are_listable  # PF_BUILD, PF_JOBS
  else
    how="system packages"
    cmd cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DPF_WITH_CUDA=ON &&
      cmd cmake --build "$build" -j "$PF_JOBS"
  fi
  rc=$?
  [ "$PF_DRY" = 1 ] && return 0
  [ $rc -eq 0 ] && timeout 20 "$build/tools/pf-bench" gpu_info
  note "$build, $PF_JOBS jobs, $how$([ $rc -ne 0 ] && echo ": build failed, see build.log")"
  return $rc
}

step_test() {
  need_gpu || return 3
  need_build tests/pf_tests || return 3
  cmd timeout 20 "$build/tools/pf-bench" gpu_info
  # One at a time (the tests also hold RESOURCE_LOCK gpu).
  if [ "$PF_DRY" = 1 ]; then
    echo "  + (cd $build && ctest -L gpu -j 1 --output-on-failure --timeout 45)"
  else
    (cd "$build" && ctest -L gpu -j 1 --output-on-failure --timeout 45)
  fi
  local rc=$? summary failed
  [ "$PF_DRY" = 1 ] && return 0
  summary=$(grep -E "tests passed(, [0-9]+ tests? failed)? out of" "$out/test.log" | tail -n1)
  # "\t405 - GPU caching allocator: stress, ... (Failed) gpu" -> "405 GPU caching ... (Failed)"
  failed=$(sed -n '/The following tests FAILED:/,$p' "$out/test.log" | grep -E '^\s+[0-9]+ - ' |
    sed -E 's/^\s+([0-9]+) - (.*\S)\s*\(([^()]*)\)[^()]*$/\1 \2 (\3)/' |
    sed -E 's/^([0-9]+) (.{40}).{4,}( \([^()]*\))$/\1 \2...\3/' | paste -sd';' - | sed 's/;/; /g')
  if grep -qE "\*\*\*Skipped|Not Run" "$out/test.log"; then
    note "GPU tests were skipped on a machine with a GPU; ${summary:-no ctest summary}"
    return 1
  fi
  note "${summary:-no ctest summary (rc $rc)}${failed:+; failed: $failed}"
  return $rc
}

# One compute-sanitizer run: tool, seconds, Catch2 test spec. Appends "tool spec: result" to
# $san_notes; returns 0 only when the sanitizer found nothing and the tests passed.
sanitize_run() {
  local tool=$1 secs=$2 spec=$3 rc start log=$out/sanitize-$1.log errs res
  echo "--- compute-sanitizer --tool $tool over '$spec' (limit ${secs}s; log $log)"
  start=$SECONDS
  # shellcheck disable=SC2206  # PF_SANITIZER_ARGS is a list of words
  local run=(timeout -k 5 "$secs" compute-sanitizer --tool "$tool" --error-exitcode 99
             --print-limit 20 ${PF_SANITIZER_ARGS:-} "$build/tests/pf_tests" "$spec")
  if [ "$PF_DRY" = 1 ]; then
    echo "  + PF_GPU_TEST_SKIP_CODE=1 $(printf '%q ' "${run[@]}")"
    return 0
  fi
  PF_GPU_TEST_SKIP_CODE=1 "${run[@]}" >"$log" 2>&1
  rc=$?
  tail -n 25 "$log"
  errs=$(grep -oE "(ERROR SUMMARY: [0-9]+ errors?|RACECHECK SUMMARY: [0-9]+ hazards? displayed \
\([0-9]+ errors?, [0-9]+ warnings?\))" "$log" | tail -n1)
  case $rc in
    0) res="ok, ${errs:-clean}" ;;
    99) res="SANITIZER ERRORS: ${errs:-see log}" ;;
    124|137) res="TIMEOUT after ${secs}s${errs:+ ($errs)}" ;;
    4) res="SKIPPED (the tests saw no GPU)" ;;
    *) res="${errs:-no sanitizer summary}, but pf_tests failed (rc $rc)" ;;
  esac
  san_notes+="${san_notes:+; }$tool $spec: $res, $((SECONDS - start))s"
  note "$san_notes"  # so far: a timeout of the whole step keeps what finished
  [ $rc -eq 0 ]
}

step_sanitize() {
  need_gpu || return 3
  need_build tests/pf_tests || return 3
  if [ "$PF_DRY" != 1 ] && ! command -v compute-sanitizer >/dev/null; then
    note "compute-sanitizer not found (CUDA_HOME/bin)"; return 1
  fi
  local rc=0
  san_notes=""
  sanitize_run memcheck "$PF_MEMCHECK_S" "$PF_MEMCHECK_TESTS" || rc=1
  sanitize_run racecheck "$PF_RACECHECK_S" "$PF_RACECHECK_TESTS" || rc=1
  return $rc
}

step_sanitize_full() {
  need_gpu || return 3
  need_build tests/pf_tests || return 3
  local rc=0
  san_notes=""
  sanitize_run memcheck "$PF_SANITIZE_FULL_S" "[gpu][conformance]" || rc=1
  sanitize_run racecheck "$PF_SANITIZE_FULL_S" "[gpu][conformance]" || rc=1
  return $rc
}

step_bench() {
  need_gpu || return 3
  need_build tools/pf-bench tools/pf-train || return 3
  local limit rc budget met total sbs notorch
  limit=${PF_CHECK_LIMIT_NOW:-$(limit_of bench)}
  budget=$((limit > 60 ? limit - 15 : limit * 3 / 4))  # it starts no run after that
  if [ "${PF_BENCH_CONTEXT:-0}" = 1 ]; then
    cmd timeout 30 "$build/tools/pf-bench" gpu_copy_bandwidth gpu_matmul_math
    budget=$((budget - 30))
  fi
  sbs=("$PF_PYTHON" tools/bench/gpu_side_by_side.py --build "$build" --rounds "$PF_BENCH_ROUNDS"
       --budget "$budget" --table "$out/figures.txt" --json "$out/figures.json"
       --log "$out/bench-runs.log")
  if [ "$PF_DRY" = 1 ]; then  # the script's own dry run shows every command it would run
    cmd "${sbs[@]}"
    "${sbs[@]}" --dry-run | sed 's/^/    /'
    return 0
  fi
  "${sbs[@]}"
  rc=$?
  met=$(grep -cE '  yes$' "$out/figures.txt" 2>/dev/null)
  total=$(grep -cE '  (yes|no)$' "$out/figures.txt" 2>/dev/null)
  case $rc in
    0) note "every figure measured on both sides; goals met: ${met:-0} of ${total:-0}" ;;
    3) note "nothing measured (no GPU for placeflow); see figures.txt" ;;
    *) grep -q '^# PyTorch: SKIPPED' "$out/figures.txt" 2>/dev/null &&
         notorch="; PyTorch side skipped (no CUDA PyTorch)"
       note "rc $rc: some figure failed or lacks a side; goals met: ${met:-0} of ${total:-0}\
${notorch:-}; see figures.txt" ;;
  esac
  return $rc
}

# --------------------------------------------------------------------- inner: one step
if [ "${1:-}" = "--inner" ]; then
  step=$2
  echo $$ >"$out/.$step.sid"  # this step's session: what it leaves running is ended after it
  echo "== $step ($(date -u +%FT%TZ), limit $(limit_of "$step")s)"
  "step_${step//-/_}"
  exit $?
fi

# ---------------------------------------------------------------------- outer: the run
steps=()
for a in "$@"; do
  case $a in
    --dry-run|-n) export PF_DRY=1 ;;
    -h|--help) sed -n '2,/^set -uo/p' "$self" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "gpu_check.sh: unknown option '$a' (--dry-run, --help)" >&2; exit 2 ;;
    *)
      if [[ " ${ALL_STEPS[*]} " != *" $a "* ]]; then
        echo "gpu_check.sh: unknown step '$a' (${ALL_STEPS[*]})" >&2; exit 2
      fi
      steps+=("$a") ;;
  esac
done
[ ${#steps[@]} -eq 0 ] && steps=("${DEFAULT_STEPS[@]}")
total_limit=${PF_CHECK_TOTAL_S:-540}
start_all=$SECONDS

if [ "$PF_DRY" = 1 ]; then
  planned=0
  for s in "${steps[@]}"; do planned=$((planned + $(limit_of "$s"))); done
  echo "gpu_check.sh --dry-run: steps ${steps[*]}; limits add up to ${planned}s" \
    "(cap ${total_limit}s); OUT=$out"
  for s in "${steps[@]}"; do
    echo "step $s: timeout $(limit_of "$s")s, log $out/$s.log"
    ( step=$s; "step_${s//-/_}" ) 2>&1 | sed 's/^/  /'
  done
  echo "summary would be written to $out/summary.txt"
  exit 0
fi

mkdir -p "$out"
rm -f "$out"/*.note "$out/steps.tsv" "$out/figures.txt" "$out/figures.json" "$out/bench-runs.log"
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
[ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] &&
  commit="$commit+local changes"
started=$(date -u +%FT%TZ)

write_summary() {  # summary.txt from steps.tsv, the notes and figures.txt
  local s res rc secs lim overall failed="" skipped="" timedout=""
  {
    echo "placeflow GPU check: $started, commit $commit, host $(hostname), OUT=$out"
    printf '%-13s %-8s %4s %7s %6s  %s\n' step result rc seconds limit note
    while IFS=$'\t' read -r s res rc secs lim; do
      printf '%-13s %-8s %4s %7s %6s  %s\n' "$s" "$res" "$rc" "$secs" "$lim" \
        "$(cat "$out/$s.note" 2>/dev/null || echo "see $s.log")"
      case $res in
        FAILED) failed+=" $s" ;; SKIPPED) skipped+=" $s" ;; TIMEOUT) timedout+=" $s" ;;
      esac
    done <"$out/steps.tsv"
    if [ -n "$failed$timedout" ]; then
      overall="FAILED (${failed:+failed:$failed}${failed:+${timedout:+; }}"
      overall+="${timedout:+timed out:$timedout})${skipped:+; skipped:$skipped}"
    elif [ -n "$skipped" ]; then
      overall="SKIPPED (not checked:$skipped)"
    else
      overall="ok"
    fi
    echo "total $((SECONDS - start_all)) s of ${total_limit} s; RESULT: $overall"
    if [ -s "$out/figures.txt" ]; then echo; cat "$out/figures.txt"; fi
  } >"$out/summary.txt"
  echo "$overall" >"$out/.result"
}

setsid=$(command -v setsid || true)
reap() {  # $1: a step's session id file; ends every process still in that session
  local sid pids
  sid=$(cat "$1" 2>/dev/null) || return 0
  rm -f "$1"
  [ -n "$setsid" ] && [ -n "$sid" ] || return 0
  pids=$(ps -eo pid=,sid= | awk -v s="$sid" '$2 == s {print $1}')
  [ -n "$pids" ] || return 0
  echo "== killing what the step left running: $(echo "$pids" | tr '\n' ' ')"
  # shellcheck disable=SC2086  # a list of process ids
  kill -KILL $pids 2>/dev/null || true
}

: >"$out/steps.tsv"
for s in "${steps[@]}"; do
  lim=$(limit_of "$s")
  left=$((total_limit - (SECONDS - start_all)))
  if [ "$left" -lt 5 ]; then
    echo "out of time" >"$out/$s.note"
    printf '%s\t%s\t%s\t%s\t%s\n' "$s" SKIPPED - 0 "$lim" >>"$out/steps.tsv"
    write_summary
    continue
  fi
  [ "$lim" -gt "$left" ] && lim=$left
  echo "== $s (limit ${lim}s; log $out/$s.log)"
  t0=$SECONDS
  # The step runs in a session of its own (setsid): the sanitizer's and tests' own `timeout`s
  # start process groups that a timeout of the whole step would not reach; reap() ends them.
  # shellcheck disable=SC2086  # $setsid is empty where setsid is missing
  PF_CHECK_LIMIT_NOW=$lim timeout -k 10 "$lim" $setsid bash "$self" --inner "$s" >"$out/$s.log" 2>&1
  rc=$?
  reap "$out/.$s.sid" >>"$out/$s.log" 2>&1
  secs=$((SECONDS - t0))
  case $rc in
    0) res=ok ;;
    3) res=SKIPPED ;;
    124|137) res=TIMEOUT
             [ -s "$out/$s.note" ] || echo "see $s.log" >"$out/$s.note"
             sed -i "1s/^/TIMEOUT after ${lim}s: /" "$out/$s.note" ;;
    *) res=FAILED ;;
  esac
  printf '%s\t%s\t%s\t%s\t%s\n' "$s" "$res" "$rc" "$secs" "$lim" >>"$out/steps.tsv"
  echo "   $res (rc=$rc, ${secs}s): $(cat "$out/$s.note" 2>/dev/null)"
  write_summary
done
echo
cat "$out/summary.txt"
[ "$(cat "$out/.result")" = ok ]
