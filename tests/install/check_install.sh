#!/usr/bin/env bash
# Installs placeflow from BUILD_DIR into a temporary prefix, then builds and runs the consumers:
# tests/install/consumer.cc and README.md's example program (its first ```cpp block), also
# built by README's own CMakeLists.txt (its first ```cmake block), so the README's instructions
# keep working against the installed package. Also checks that only the
# placeflow/ prefix lands on a consumer's include path.
set -euo pipefail
build_dir="$1"; src_dir="$2"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build_dir" --prefix "$tmp/prefix" > "$tmp/install.log" || { cat "$tmp/install.log"; exit 1; }

entries=$(ls "$tmp/prefix/include")
if [ "$entries" != "placeflow" ]; then
  echo "include/ holds more than placeflow/: $entries"; exit 1
fi
includes=$(grep -h "INTERFACE_INCLUDE_DIRECTORIES" "$tmp"/prefix/lib*/cmake/placeflow/placeflowTargets.cmake)
if [ "$(grep -o '/include[^";]*' <<<"$includes" | sort -u)" != "/include" ]; then
  echo "the exported include path is not just <prefix>/include: $includes"; exit 1
fi

# The installed tools start without LD_LIBRARY_PATH (their RPATH finds the installed library).
if [ -x "$tmp/prefix/bin/pf-train" ]; then
  help=$(env -u LD_LIBRARY_PATH "$tmp/prefix/bin/pf-train" --help 2>&1 || true)
  grep -q "usage: pf-train" <<<"$help" || { echo "installed pf-train does not start: $help"; exit 1; }
fi

# A CUDA build installs its backend beside the core, where the installed core finds it (forced
# here: this machine may have no driver).
if [ -e "$build_dir/libplaceflow_cuda.so.0" ]; then
  backend=$(ls "$tmp"/prefix/lib*/libplaceflow_cuda.so.0 2>/dev/null || true)
  [ -n "$backend" ] || { echo "libplaceflow_cuda.so.0 is not installed"; exit 1; }
  info=$(env -u LD_LIBRARY_PATH PF_CUDA_BACKEND=1 "$tmp/prefix/bin/pf-bench" gpu_info 2>&1 || true)
  grep -qx "gpu_info backend: loaded $backend" <<<"$info" ||
    { echo "the installed backend does not load: $info"; exit 1; }
fi

# A sanitized library (PF_SANITIZE) exports its -fsanitize link option; the consumers must then
# use the library's compiler, whose runtime it was built against.
consumer_flags=()
if grep -q '^PF_SANITIZE:STRING=.' "$build_dir/CMakeCache.txt"; then
  consumer_flags+=("-DCMAKE_CXX_COMPILER=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build_dir/CMakeCache.txt")")
fi

cp -r "$src_dir/tests/install" "$tmp/consumer_src"
awk '/^```cpp/ {on = 1; next} /^```/ {if (on) exit} on' "$src_dir/README.md" > "$tmp/consumer_src/readme_example.cc"
grep -q "placeflow/placeflow.h" "$tmp/consumer_src/readme_example.cc" || { echo "README has no example"; exit 1; }
cmake -S "$tmp/consumer_src" -B "$tmp/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$tmp/prefix" "${consumer_flags[@]}" > "$tmp/configure.log" ||
  { cat "$tmp/configure.log"; exit 1; }
cmake --build "$tmp/consumer"  # compiler errors are shown
# README's "Using the library": its CMakeLists.txt (the first ```cmake block) around its example
# saved as main.cc, as a user would copy them.
mkdir "$tmp/readme_src"
awk '/^```cmake/ {on = 1; next} /^```/ {if (on) exit} on' "$src_dir/README.md" > "$tmp/readme_src/CMakeLists.txt"
grep -q "find_package(placeflow" "$tmp/readme_src/CMakeLists.txt" || { echo "README has no consumer CMakeLists.txt"; exit 1; }
cp "$tmp/consumer_src/readme_example.cc" "$tmp/readme_src/main.cc"
cmake -S "$tmp/readme_src" -B "$tmp/readme_build" -G Ninja -DCMAKE_PREFIX_PATH="$tmp/prefix" "${consumer_flags[@]}" > "$tmp/configure2.log" ||
  { cat "$tmp/configure2.log"; exit 1; }
cmake --build "$tmp/readme_build"
export LD_LIBRARY_PATH="$tmp/prefix/lib:$tmp/prefix/lib64:${LD_LIBRARY_PATH:-}"
"$tmp/consumer/consumer"
"$tmp/consumer/readme_example"
"$tmp/readme_build/my_model"
