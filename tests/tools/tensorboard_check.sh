#!/usr/bin/env bash
# ctest tensorboard_reads_event_files: pf-train writes a logdir; TensorBoard's (or TensorFlow's)
# own Python reader reads it (tools/tensorboard_check.py). The python is $PF_TB_PYTHON, else
# python3 when it can import tensorboard or tensorflow; without one the test is skipped (exit 4,
# a ctest SKIP, never a pass). Usage: tensorboard_check.sh PF_TRAIN SOURCE_DIR
set -euo pipefail
train="$1"
src="$2"
py="${PF_TB_PYTHON:-}"
if [[ -z "$py" ]]; then
  if python3 -c "import tensorboard" 2>/dev/null || python3 -c "import tensorflow" 2>/dev/null; then
    py=python3
  else
    echo "SKIP: no python with tensorboard or tensorflow (set PF_TB_PYTHON; see docs/observability.md)"
    exit 4
  fi
fi
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
CUDA_VISIBLE_DEVICES= "$train" --model mlp_seed000 --steps 12 --batch 200 --cpu-devices 2 \
  --histogram-every 5 --logdir "$dir/logs" >"$dir/train.log" 2>&1 || { cat "$dir/train.log"; exit 1; }
"$py" "$src/tools/tensorboard_check.py" "$dir/logs" --expect-scalars loss,step_time_ms,examples_per_sec \
  --expect-steps 12 --expect-graph-devices 2 --expect-histograms
