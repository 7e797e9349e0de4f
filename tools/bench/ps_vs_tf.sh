#!/usr/bin/env bash
# Between-graph ps/worker training of mnist_mlp, placeflow (pf-train --local-cluster) side by
# side with TensorFlow's gRPC runtime (tools/bench/tf_ps_bench.py, tf.compat.v1 graph mode), on
# loopback: 1 ps and 1 or 2 workers, async and sync (SyncReplicasOptimizer / --sync-replicas,
# one gradient per worker per update). Interleaved (placeflow, TF, placeflow, TF, ...) so both
# see the same machine; the table at the end holds the medians over the rounds. TensorFlow is a
# benchmark peer only: install it outside the repo first
#   python3 -m venv /opt/tfbench && /opt/tfbench/bin/pip install tensorflow-cpu
# Usage: bash tools/bench/ps_vs_tf.sh [BUILD_DIR] [ROUNDS]     (defaults: build, 3)
#   env: TF_PYTHON (default /opt/tfbench/bin/python), DATA (MNIST IDX .gz directory)
#
# Matched: model (784-500-10 ReLU MLP, Glorot weights, L2 1e-4, moving averages after each
# step), SGD with lr 0.3 and staircase decay 0.99, batch 100 per worker fed from the host
# (placeholders), its own shuffle per worker, variables on the ps, 300 local steps per worker
# (pf-train: --epochs 1 --train-limit 30000), the same data, one process per task, and the
# figure: examples/s over each worker's steps 21-300, summed over workers. pf-train's own
# figure (all 300 steps, the first 20 included) comes after it in brackets; its steps 21-300
# are worked out from its cumulative "step 20/300" and end-of-epoch lines.
# Not matched: the threads (TF: intra_op 1, inter_op 2 per task; placeflow: its default pool,
# one thread per core), the decay period (TF: 600 steps as for 60000 examples; pf-train: 300,
# its epoch here: same cost, slightly other lr after step 300), batches (pf-train gathers the
# next one in a background thread, TF's loop gathers it in the timed step), how sync ends (TF's
# workers go on untimed until all are done; pf-train's until the global step reaches 300), and
# in sync mode pf-train's figure assumes each worker ran exactly 300 local steps of epoch 1.
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${1:-build}"
rounds="${2:-3}"
tf_python="${TF_PYTHON:-/opt/tfbench/bin/python}"
data="${DATA:-/work/shared/data/mnist}"
[ -d "$data" ] || data=/usr/share/datasets/fashion-mnist
steps=300 warmup=20 batch=100
results=$(mktemp) log=$(mktemp)
trap 'rm -f "$results" "$log"' EXIT

run_placeflow() {  # MODE WORKERS
  local sync=()
  [ "$1" = sync ] && sync=(--sync-replicas)
  if ! "$build/tools/pf-train" --local-cluster "ps=1,worker=$2" --model mnist_mlp --data "$data" \
      --epochs 1 --train-limit $((steps * batch)) --batch $batch --print-every $warmup \
      "${sync[@]}" >"$log" 2>&1; then
    tail -20 "$log"
    return 1
  fi
  # "[worker:0] epoch 1 step 20/300 ... examples/s=R" (cumulative) and
  # "[worker:0] epoch 1 loss=... test_accuracy=A examples/s=R" (all steps of the epoch).
  awk -v mode="$1" -v workers="$2" -v steps=$steps -v warm=$warmup -v batch=$batch '
    $1 ~ /^\[worker:/ && $2 == "epoch" && $3 == "1" {
      rate = $NF; sub(/examples\/s=/, "", rate)
      if ($4 == "step" && $5 == warm "/" steps) t_warm[$1] = warm * batch / rate
      if ($4 ~ /^loss=/) { all[$1] = rate; acc[$1] = $5; sub(/test_accuracy=/, "", acc[$1]) }
    }
    END {
      for (w in all) {
        if (!(w in t_warm)) { print "placeflow: no step " warm " line for " w; exit 1 }
        task = w; gsub(/[^0-9]/, "", task)
        eps = (steps - warm) * batch / (steps * batch / all[w] - t_warm[w])
        printf "placeflow mode=%s workers=%d task=%s examples_per_s=%.1f test_accuracy=%s\n",
               mode, workers, task, eps, acc[w]
        total += eps; total_all += all[w]; n++
      }
      if (n != workers) { print "placeflow: " n " of " workers " workers reported"; exit 1 }
      printf "placeflow mode=%s workers=%d total_examples_per_s=%.1f (all steps: %.0f)\n",
             mode, workers, total, total_all
    }' "$log" | sort | tee -a "$results"
}

run_tf() {  # MODE WORKERS
  if [ ! -x "$tf_python" ]; then
    echo "tf skipped: no $tf_python (see this script's header)"
    return
  fi
  "$tf_python" tools/bench/tf_ps_bench.py --mode "$1" --ps 1 --workers "$2" --steps $steps \
    --warmup $warmup --batch $batch --data "$data" 2>"$log" | grep '^tf ' | tee -a "$results" ||
    { echo "tf failed (mode=$1 workers=$2):"; grep -v oneDNN "$log" | tail -20; }
}

for ((i = 1; i <= rounds; i++)); do
  for mode in async sync; do
    for workers in 1 2; do
      run_placeflow $mode $workers
      run_tf $mode $workers
    done
  done
done

median() {
  sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}
total_of() {  # SIDE MODE WORKERS: that configuration's totals, one per round
  grep "^$1 mode=$2 workers=$3 total_examples_per_s=" "$results" | sed 's/.*total_examples_per_s=\([0-9.]*\).*/\1/'
}
echo
echo "medians over $rounds round(s), examples/s summed over workers (steps $((warmup + 1))-$steps of each), data $data"
printf "%-6s %-7s %12s %12s %16s\n" mode workers placeflow tf placeflow/tf
for mode in async sync; do
  for workers in 1 2; do
    pf=$(total_of placeflow $mode $workers | median)
    tf=$(total_of tf $mode $workers | median)
    ratio=$([ -n "$tf" ] && awk -v a="$pf" -v b="$tf" 'BEGIN { printf "%.2f", a / b }' || echo n/a)
    printf "%-6s %-7s %12s %12s %16s\n" $mode $workers "${pf:-n/a}" "${tf:-n/a}" "$ratio"
  done
done
