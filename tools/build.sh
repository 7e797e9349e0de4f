#!/usr/bin/env bash
# One entry point for a fresh Debian 12 machine:
#   bash tools/build.sh train   # install missing packages, build pf-train (Release), run the main job
#   bash tools/build.sh test    # install missing packages, build everything (Release), run the test suite
# Extra arguments go to pf-train or ctest. BUILD_DIR (default: build) picks the build folder.
# `train` builds only the pf-train target and what it needs (the library, the CUDA backend when
# the toolkit is there), without the test programs, and says what each stage is doing.
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-train}"
shift || true
build_dir="${BUILD_DIR:-build}"

# clang-format: the format check in the test suite. ocl-icd-opencl-dev: only a Recommends of libdnnl-dev, but its CMake config requires OpenCL.
# libisal-dev: CRC32C of TFRecord files (optional: SSE4.2 without it). gRPC and protobuf: the
# cluster runtime (distributed/), protobuf also tf.Example (io/proto). openssl and iproute2: the cluster tests
# (TLS certificates, network namespaces). libcli11-dev: the tools' flag parser (CLI11, header-only;
# tools/flags.cc, docs/flags.md). libhwy-dev: Google Highway, the float kernels' portable SIMD
# with run-time dispatch (ops/simd/, docs/simd.md). libjpeg62-turbo-dev and libpng-dev: the JPEG and
# PNG codecs (io/image_codec.h: the image ops, image-folder datasets; optional).
packages=(g++ cmake ninja-build clang-format libfmt-dev libspdlog-dev catch2 python3 libcli11-dev libdnnl-dev libhwy-dev ocl-icd-opencl-dev zlib1g-dev libisal-dev libjpeg62-turbo-dev libpng-dev dataset-fashion-mnist
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc openssl iproute2)
source tools/ensure_packages.sh

case "$mode" in
  train)
    stage() { echo "==> [$1/4] $2"; }
    stage 1 "packages: checking ${#packages[@]} Debian packages (installing the missing ones)"
    ensure_packages placeflow "${packages[@]}"
    stage 2 "configure: cmake in $build_dir (Release; its full output in $build_dir/configure.log)"
    mkdir -p "$build_dir"
    cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >"$build_dir/configure.log" 2>&1 ||
      { cat "$build_dir/configure.log" >&2; exit 1; }
    grep -E '^-- placeflow:' "$build_dir/configure.log" || true
    # The compile and link steps behind pf-train (the library, the CUDA backend when built);
    # Ninja's [done/to do] counts the ones left as it goes.
    steps=$(ninja -C "$build_dir" -t commands pf-train 2>/dev/null | wc -l || true)
    stage 3 "build: pf-train and the library it needs: ${steps:-?} compile/link steps in all, Ninja counting the out-of-date ones below (no tests)"
    cmake --build "$build_dir" --target pf-train -j "$(nproc)"
    stage 4 "train: $build_dir/tools/pf-train --log-device-placement $*"
    "$build_dir/tools/pf-train" --log-device-placement "$@"
    ;;
  test)
    ensure_packages placeflow "${packages[@]}"
    cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPF_BUILD_TESTS=ON
    cmake --build "$build_dir" -j "$(nproc)"
    ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)" "$@"
    ;;
  *)
    echo "usage: bash tools/build.sh train|test [args]" >&2
    exit 2
    ;;
esac
