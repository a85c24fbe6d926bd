#!/usr/bin/env bash
# The CUDA benchmarks of docs/benchmarks.md (issue 3), on the GPU machine:
#   bench/cuda-benchmarks.sh BIN_DIR
#     [kernel|vcycle|cantilever256|cycles256|starts256|cantilever512|bridge|fp16]...
# BIN_DIR holds bench_cuda and the programs (e.g. .gpu/build). Each part
# prints its own table; nothing is written but under $OUT (when set).
set -euo pipefail
bin=$(cd "$1" && pwd)
shift
here=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-/tmp}
for part in "$@"; do
  case $part in
  kernel) "$bin/bench/bench_cuda" kernel 256 128 128 ;;
  vcycle)
    for p in double mixed; do
      "$bin/bench/bench_cuda" vcycle "$here/workflows/cantilever/cantilever.yaml" 256 $p
    done ;;
  cantilever256)
    for p in mixed double; do
      "$bin/bench/bench_cuda" cantilever "$here/workflows/cantilever/cantilever.yaml" 256 ${ITER256:-100} $p
    done ;;
  cycles256) # the default W-cycle against the V-cycle, and CG's scalars on the host
    for env in VOXFE_BENCH_MG_CYCLE=w VOXFE_BENCH_MG_CYCLE=v VOXFE_BENCH_HOST_SCALARS=1; do
      env $env "$bin/bench/bench_cuda" cantilever "$here/workflows/cantilever/cantilever.yaml" \
        256 ${ITER256:-100} mixed
    done ;;
  starts256) # the solves' start history and the kept coarse bounds against the plain setup
    for env in "VOXFE_BENCH_START_HISTORY=0 VOXFE_BENCH_MG_BOUND_REFRESH=1" \
               "VOXFE_BENCH_START_HISTORY=1 VOXFE_BENCH_MG_BOUND_REFRESH=1" \
               "VOXFE_BENCH_START_HISTORY=2 VOXFE_BENCH_MG_BOUND_REFRESH=1" \
               "VOXFE_BENCH_START_HISTORY=0 VOXFE_BENCH_MG_BOUND_REFRESH=4" \
               "VOXFE_BENCH_START_HISTORY=1 VOXFE_BENCH_MG_BOUND_REFRESH=4"; do
      # shellcheck disable=SC2086 # two assignments in one word
      env $env "$bin/bench/bench_cuda" cantilever "$here/workflows/cantilever/cantilever.yaml" \
        256 ${ITER256:-100} mixed
    done ;;
  cantilever512)
    "$bin/bench/bench_cuda" cantilever "$here/workflows/cantilever/cantilever.yaml" 512 ${ITER512:-10} mixed ;;
  bridge)
    d=$(mktemp -d)
    (cd "$here/workflows/bridge" && /usr/bin/time -f "bridge: %e s wall" make \
      VOXFE_BIN="$bin/cli" DEVICE=cuda PRECISION=${PRECISION:-mixed} 2>&1 | tail -3)
    cp "$here/workflows/bridge/design.nc" "$out/bridge-design.nc" 2>/dev/null || true
    rm -rf "$d" ;;
  fp16) # FP16 storage of the smoothed coarse levels (mixed precision) on and off
    for f in 1 0; do
      export VOXFE_CUDA_FP16_STENCILS=$f
      echo "VOXFE_CUDA_FP16_STENCILS=$f"
      "$bin/bench/bench_cuda" vcycle "$here/workflows/cantilever/cantilever.yaml" 256 mixed
      "$bin/bench/bench_cuda" cantilever "$here/workflows/cantilever/cantilever.yaml" 256 \
        ${ITER256:-100} mixed
      "$bin/bench/bench_cell" 128 cuda 0.3 ${ITERCELL:-25}
    done
    unset VOXFE_CUDA_FP16_STENCILS ;;
  *) echo "unknown part $part" >&2; exit 2 ;;
  esac
done
