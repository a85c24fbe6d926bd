#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The six fields in half precision on the GPU, in one call: the CUDA tests of
# the periodic operator and the cell CLI, the 25-iteration timing at 128^3,
# Zhang et al. 2023's setup run 300 iterations at 64^3 and 128^3 (to compare with the
# double-field runs of docs/benchmarks.md), and the memory at 256^3 and 512^3
# (CG rtol 1e-2, the cell default).   cell_half_gpu.sh BUILD OUT CLI ROOT [DEADLINE]
BUILD=${1:?build folder}; OUT=${2:?log folder}; CLI=${3:?cli test scripts}; ROOT=${4:?root}
DEADLINE=${5:-150}
B=$BUILD/bench
left() { [ "$SECONDS" -lt "$DEADLINE" ] || { echo "skipped (deadline): $*"; return 1; }; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
{
  timeout 60 $BUILD/tests/gpu/test_cuda_periodic; echo "test_cuda_periodic rc=$?"
  OMP_WAIT_POLICY=PASSIVE timeout 60 bash $CLI/cell_run_cuda.sh $BUILD/cli/voxfe-voxelize \
    $BUILD/cli/voxfe-optimize $BUILD/cli/voxfe-export $ROOT; echo "cell_run_cuda rc=$?"
} > $OUT/tests.log 2>&1
grep -E "half|FAIL|passed|rc=" $OUT/tests.log | head -30
run() { # N ITERATIONS START [SETTING...]: bench_cell at 1e-2, the per-iteration lines thinned
  local n=$1 its=$2 start=$3; shift 3
  left "bench_cell $n $its" || return
  echo "== bench_cell $n cuda 0.3 $its --start=$start --rtol=1e-2 $* (t=$SECONDS)"
  timeout 100 $B/bench_cell $n cuda 0.3 $its --start=$start --rtol=1e-2 "$@" |
    awk '/^  it/ && ($2 % 50 != 0 && $2 != 25 && $2 > 3) {next} {print}'
}
{
  run 128 25 cosine --binary=0
  run 128 300 zhang2023
  run 64 300 zhang2023
  run 256 3 cosine --binary=0
  run 512 2 cosine --binary=0
} > $OUT/half.log 2>&1
cat $OUT/half.log
echo "total $SECONDS s"
