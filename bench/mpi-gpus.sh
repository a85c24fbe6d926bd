#!/usr/bin/env bash
# Strong scaling of voxfe-optimize over GPUs (docs/benchmarks.md, "Many GPUs"):
# the cantilever of workflows/cantilever at SIZE voxels, ITS design
# iterations, on one GPU without MPI, then on RANKS ranks of
# `mpirun voxfe-optimize --mpi` (a GPU each; EXCHANGE=auto|nccl|host sets
# --mpi-exchange), with --timings. Run from the checkout's
# root with the programs on PATH (on the GPU machines: source .gpu/env.sh
# and .gpu-mpi/env.sh first, scripts/gpu-bundle-mpi.sh).
#   bench/mpi-gpus.sh [SIZE=512x256x256] [ITS=10] [RANKS=2]
set -euo pipefail
size=${1:-512x256x256}
its=${2:-10}
ranks=${3:-2}
work=${WORK:-/tmp/voxfe-mpi-gpus}
mkdir -p "$work"
export NCCL_NVLS_ENABLE=0 # NVLink multicast stays off (docs/benchmarks.md)
voxfe-voxelize --box "$size" --voxel-size 1 -p workflows/cantilever/cantilever.yaml \
  -o "$work/model.nc" -q
run() { # NAME COMMAND...: its --timings line and the final line
  local name=$1
  shift
  echo "== $name: $*"
  /usr/bin/time -f "$name: %e s wall, %M KB peak host memory a process" "$@" \
    "$work/model.nc" -o "$work/$name.nc" --max-iterations "$its" --timings 2>&1 | tail -4
}
run one voxfe-optimize
extra=()
[ -n "${EXCHANGE:-}" ] && extra=(--mpi-exchange "$EXCHANGE")
run "ranks$ranks" mpirun -np "$ranks" --bind-to none voxfe-optimize --mpi "${extra[@]}"
