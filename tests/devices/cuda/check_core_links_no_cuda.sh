#!/usr/bin/env bash
# The core library (ARG 1) must list no CUDA library among its DT_NEEDED entries: a program on a
# machine without a GPU never maps cudart, cuBLAS, cuDNN or NCCL. The backend (ARG 2) lists
# them, which shows the pattern matches what readelf prints.
set -euo pipefail
core="$1"; backend="$2"
cuda_libs='lib(cuda|cudart|cublas|cublasLt|cudnn[a-z_]*|nccl|nvrtc|cufft|curand|cusparse)\.so'
needed() { readelf -d "$1" | grep '(NEEDED)' || true; }
core_needed=$(needed "$core"); backend_needed=$(needed "$backend")
[ -n "$core_needed" ] || { echo "readelf -d $core printed no NEEDED entry"; exit 1; }
if grep -E "$cuda_libs" <<<"$core_needed"; then
  echo "$core needs the CUDA libraries above: it must load them only through the backend"; exit 1
fi
grep -qE "$cuda_libs" <<<"$backend_needed" ||
  { echo "$backend needs no CUDA library?"; echo "$backend_needed"; exit 1; }
echo "ok: $(basename "$core") needs no CUDA library; $(basename "$backend") does"
