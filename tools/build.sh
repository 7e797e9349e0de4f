#!/usr/bin/env bash
# One entry point for a fresh Debian 12 machine:
#   bash tools/build.sh train   # install missing packages, build (Release), run the main job
#   bash tools/build.sh test    # install missing packages, build (Release), run the test suite
# Extra arguments go to pf-train or ctest. BUILD_DIR (default: build) picks the build folder.
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-train}"
shift || true
build_dir="${BUILD_DIR:-build}"

# clang-format: the format check in the test suite. ocl-icd-opencl-dev: only a Recommends of libdnnl-dev, but its CMake config requires OpenCL.
# libisal-dev: CRC32C of TFRecord files (optional: SSE4.2 without it). gRPC and protobuf: the
# cluster runtime (distributed/), protobuf also tf.Example (io/proto). openssl and iproute2: the cluster tests
# (TLS certificates, network namespaces). libcli11-dev: the tools' flag parser (CLI11, header-only;
# tools/flags.cc, docs/flags.md).
packages=(g++ cmake ninja-build clang-format libfmt-dev libspdlog-dev catch2 libcli11-dev libdnnl-dev ocl-icd-opencl-dev zlib1g-dev libisal-dev dataset-fashion-mnist
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc openssl iproute2)
source tools/ensure_packages.sh
ensure_packages placeflow "${packages[@]}"

cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$build_dir" -j "$(nproc)"

case "$mode" in
  train)
    "$build_dir/tools/pf-train" --log-device-placement "$@"
    ;;
  test)
    ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)" "$@"
    ;;
  *)
    echo "usage: bash tools/build.sh train|test [args]" >&2
    exit 2
    ;;
esac
