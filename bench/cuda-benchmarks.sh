#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The CUDA benchmarks of docs/benchmarks.md, on the GPU machine:
#   bench/cuda-benchmarks.sh BIN_DIR
#     [kernel|vcycle|cantilever256|cycles256|starts256|cantilever512|bridge|fp16|mma]...
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
    for setting in --mg-cycle=w --mg-cycle=v --host-scalars=1; do
      "$bin/bench/bench_cuda" cantilever "$here/workflows/cantilever/cantilever.yaml" \
        256 ${ITER256:-100} mixed $setting
    done ;;
  starts256) # the solves' start history and the kept coarse bounds against the plain setup
    for settings in "--start-history=0 --mg-bound-refresh=1" \
                    "--start-history=1 --mg-bound-refresh=1" \
                    "--start-history=2 --mg-bound-refresh=1" \
                    "--start-history=0 --mg-bound-refresh=4" \
                    "--start-history=1 --mg-bound-refresh=4"; do
      # shellcheck disable=SC2086 # two settings in one word
      "$bin/bench/bench_cuda" cantilever "$here/workflows/cantilever/cantilever.yaml" \
        256 ${ITER256:-100} mixed $settings
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
    for f in on off; do
      echo "--fp16-levels=$f"
      "$bin/bench/bench_cuda" vcycle "$here/workflows/cantilever/cantilever.yaml" 256 mixed \
        --fp16-levels=$f
      "$bin/bench/bench_cuda" cantilever "$here/workflows/cantilever/cantilever.yaml" 256 \
        ${ITER256:-100} mixed --fp16-levels=$f
      "$bin/bench/bench_cell" 128 cuda 0.3 ${ITERCELL:-25} --fp16-levels=$f
    done ;;
  mma) # the MMA update alone, n of the 256 x 128 x 128 cantilever, m = 1 and 3, the
    # subproblems by the primal-dual and by the dual method; each twice: the last design's
    # hash repeats on one device
    for m in 1 3; do
      for run in 1 2; do
        "$bin/bench/bench_cuda" mma 4194304 $m ${ITERMMA:-30} both | grep "per design"
      done
    done ;;
  *) echo "unknown part $part" >&2; exit 2 ;;
  esac
done
