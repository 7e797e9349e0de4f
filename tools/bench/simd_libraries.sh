#!/bin/bash
# Highway (placeflow's kernels) against xsimd and Eigen, per target: builds
# tools/bench/simd_libraries.cc twice (AVX2+FMA, AVX-512) against a placeflow build and runs both.
#   bash tools/bench/simd_libraries.sh [BUILD_DIR]     (default: build)
# Needs Debian's libxsimd-dev and libeigen3-dev (benchmark only: apt-get install them first).
set -euo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
flags=(-O3 -std=c++20 -DNDEBUG -I"$build/include" -I/usr/include/eigen3 -L"$build" -lplaceflow
       -Wl,-rpath,"$(cd "$build" && pwd)")
g++ "$here/simd_libraries.cc" -o "$out/avx2" -mavx2 -mfma "${flags[@]}"
g++ "$here/simd_libraries.cc" -o "$out/avx512" -mavx512f -mavx512dq -mavx512bw -mavx512vl -mfma \
    "${flags[@]}"
grep -m1 "model name" /proc/cpuinfo
"$out/avx2" avx2
if grep -q avx512f /proc/cpuinfo; then "$out/avx512" avx512; fi
