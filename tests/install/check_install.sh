#!/usr/bin/env bash
# Installs placeflow from BUILD_DIR into a temporary prefix, then builds and runs a consumer.
set -euo pipefail
build_dir="$1"; src_dir="$2"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build_dir" --prefix "$tmp/prefix" > "$tmp/install.log" || { cat "$tmp/install.log"; exit 1; }
cmake -S "$src_dir/tests/install" -B "$tmp/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$tmp/prefix" > "$tmp/configure.log" ||
  { cat "$tmp/configure.log"; exit 1; }
cmake --build "$tmp/consumer"  # compiler errors are shown
LD_LIBRARY_PATH="$tmp/prefix/lib:${LD_LIBRARY_PATH:-}" "$tmp/consumer/consumer"
