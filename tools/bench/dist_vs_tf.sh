#!/usr/bin/env bash
# The cluster figures side by side with TensorFlow's gRPC runtime, interleaved in one run
# (placeflow, TF, placeflow, TF, ...) so both see the same machine. TensorFlow is a benchmark
# peer only: install it outside the repo first
#   python3 -m venv /opt/tfbench && /opt/tfbench/bin/pip install tensorflow-cpu
# Usage: bash tools/bench/dist_vs_tf.sh [BUILD_DIR] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${1:-build}"
rounds="${2:-3}"
tf_python="${TF_PYTHON:-/opt/tfbench/bin/python}"
for ((i = 1; i <= rounds; i++)); do
  "$build/tools/pf-bench" grpc_recv_bandwidth dist_step_overhead | grep -v '^ready' | sed 's/^/placeflow /'
  if [ -x "$tf_python" ]; then
    "$tf_python" tools/bench/tf_grpc_bench.py 2>/dev/null | grep '^tf '
  else
    echo "tf skipped: no $tf_python (see this script's header)"
  fi
done
