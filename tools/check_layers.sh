#!/usr/bin/env bash
# Checks that every #include respects the layer table of docs/architecture.md:
#   - the library's own headers are named from the placeflow/ prefix ("placeflow/core/tensor.h"),
#     so no generic name (core/status.h) reaches a consumer's include path;
#   - a folder includes only itself and the folders its row allows;
#   - CUDA headers appear only in devices/cuda/ and in .cu/.cuh device code, and device code
#     includes only device-safe headers (.cuh and *_launch.h / launch.h: no fmt, no Status).
# Prints each broken include as file:line and exits 1 when there is one. Usage: check_layers.sh [ROOT]
set -euo pipefail
root="${1:-$(dirname "$0")/..}"
cd "$root"

# folder -> the folders (besides itself) it may include
declare -A allowed=(
  [core]=""
  [io]="core"
  [graph]="core io"
  [devices]="core io graph"
  [ops]="core io graph devices"
  [placer]="core io graph devices"
  [executor]="core io graph devices placer"
  [distributed]="core io graph devices placer executor"
  [train]="core io graph devices ops placer executor distributed"
  [data]="core io graph devices ops placer executor"
  [models]="core io graph devices ops placer executor train data"
  [include]="core io graph devices ops placer executor train data models"
  [tools]="core io graph devices ops placer executor distributed train data include models"
  [tests]="core io graph devices ops placer executor distributed train data include models"
  [examples]="core io graph devices ops placer executor distributed train data include models"
)
status=0
fail() {
  echo "$1: $2"
  status=1
}

while IFS= read -r file; do
  top="${file%%/*}"
  [[ -v allowed[$top] ]] || continue
  ok=" $top ${allowed[$top]} "
  while IFS= read -r hit; do
    line="${hit%%:*}"
    inc="$(sed -E 's/^[0-9]+:[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]([^>"]+)[>"].*/\1/' <<<"$hit")"
    where="$file:$line"
    case "$inc" in
      placeflow/placeflow.h) layer=include ;;
      placeflow/*) layer="${inc#placeflow/}"; layer="${layer%%/*}" ;;
      core/* | io/* | graph/* | devices/* | ops/* | placer/* | executor/* | distributed/* | train/* | data/* | models/*)
        fail "$where" "'$inc' must be named from the prefix: placeflow/$inc"
        continue
        ;;
      cuda*.h | cublas*.h | cudnn*.h | nccl.h | curand*.h)
        [[ "$file" == devices/cuda/* || "$file" == *.cu || "$file" == *.cuh ]] ||
          fail "$where" "CUDA header <$inc> outside devices/cuda/ and device code"
        continue
        ;;
      *) continue ;;  # system, third-party, tools/ and tests/ headers
    esac
    if [[ "$ok" != *" $layer "* ]]; then
      fail "$where" "$top/ may not include $inc ($top may include:${allowed[$top]:- nothing else})"
    fi
    if [[ "$file" == *.cu || "$file" == *.cuh ]] && [[ "$inc" != *.cuh && "$inc" != *launch.h ]]; then
      fail "$where" "device code includes $inc (only .cuh and launch headers: nvcc sees no fmt)"
    fi
  done < <(grep -nE '^[[:space:]]*#[[:space:]]*include' "$file" || true)
done < <(find core io graph devices ops placer executor distributed train data models include tools tests -type f \( -name '*.h' -o -name '*.cc' -o -name '*.cu' -o -name '*.cuh' \) | sort)

# The public umbrella header must not reach the runtime's internals, even through other headers.
internals="placeflow/executor/executor.h placeflow/graph/kernel.h placeflow/placer/ placeflow/devices/cuda/ placeflow/devices/gpu_probe.h placeflow/executor/rendezvous.h placeflow/executor/collective.h"
declare -A seen=()
reach() {  # reach HEADER CHAIN: visits every placeflow header HEADER includes
  local h="$1" chain="$2" inc
  [[ -v seen[$h] ]] && return
  seen[$h]=1
  local path="${h#placeflow/}"
  [[ "$h" == placeflow/placeflow.h ]] && path=include/placeflow/placeflow.h
  [[ -f "$path" ]] || return
  for bad in $internals; do
    [[ "$h" == "$bad"* ]] && fail "include/placeflow/placeflow.h" "reaches internal $h via $chain"
  done
  while read -r inc; do
    reach "$inc" "$chain -> $inc"
  done < <(sed -nE 's@^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"](placeflow/[^>"]+)[>"].*@\1@p' "$path")
}
reach placeflow/placeflow.h placeflow.h

if ((status == 0)); then echo "layers: every include respects the table"; fi
exit $status
